"""The XLA backend's per-platform lowering: modules lowered for the TPU (host callbacks as
send/recv host transfers; linalg as XLA's ops and custom calls) checked on the CPU client.

The CPU client cannot run send/recv ("HLO opcode `send` is not supported by XLA:CPU"), so the
TPU's callbacks are checked as far as the CPU allows: the module parses, its transfers chain
through one token on fresh channels, jaxlib makes its send/recv callback objects, and the host
side of each callback (what the program sends in, what it receives back) gives the right
values. XLA's CPU compiler expands the TPU's linalg ops and custom calls (`stablehlo.cholesky`,
`Qr`, `ProductOfElementaryHouseholderReflectors`, `Eigh`) as the TPU's does, so the TPU table
runs here against NumPy; only `LuDecomposition` is the TPU's own, and the table under test takes
the CPU's lu in its place. benchmarks/tpu_check_callbacks_linalg.py runs both on the TPU.
"""
import contextlib
import io
import re

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.experimental import io_callback

pytest.importorskip("jaxlib", reason="the xla backend needs jaxlib")

from jaxlite._src.compiler.xla import backend as xla_backend  # noqa: E402
from jaxlite._src.compiler.xla import client as client_lib  # noqa: E402
from jaxlite._src.compiler.xla import compile_cache  # noqa: E402
from jaxlite._src.compiler.xla import lowering  # noqa: E402
from jaxlite._src.lax import linalg as lax_linalg  # noqa: E402
from jaxlite._src.lax import linalg_lowering  # noqa: E402


def _tpu_text(f, *args):
  return lowering.lower_closed_jaxpr(jaxlite.make_jaxpr(f)(*args), platform="tpu")


# --- host callbacks as host transfers ------------------------------------------------------------

def _callbacks_program(log):
  def f(x, flags):
    jaxlite.debug.print("x={}", x)
    y = jaxlite.pure_callback(lambda v: np.asarray(v) * 2,
                              jaxlite.ShapeDtypeStruct((3,), np.float32), x)
    seven = jaxlite.pure_callback(lambda: np.float32(7), jaxlite.ShapeDtypeStruct((), np.float32))
    empty, picked = jaxlite.pure_callback(
        lambda b: (np.zeros((0, 2), np.float32), ~np.asarray(b)),
        (jaxlite.ShapeDtypeStruct((0, 2), np.float32),
         jaxlite.ShapeDtypeStruct((2,), np.bool_)), flags)
    io_callback(lambda v: log.append(float(v)), None, seven, ordered=True)
    return y, empty, picked
  return f


def test_tpu_callbacks_lower_to_chained_host_transfers_that_parse():
  log = []
  text = _tpu_text(_callbacks_program(log), np.arange(3, dtype=np.float32),
                   np.array([True, False]))
  assert "xla_ffi_python" not in text
  ops = re.findall(r'"stablehlo\.(send|recv|after_all)"\(([^)]*)\)', text)
  # one fresh token, then every transfer takes the token the previous one gave
  assert [o for o, _ in ops].count("after_all") == 1
  channels = [int(c) for c in re.findall(r"channel_handle<handle = (\d+)", text)]
  assert channels == list(range(2, 2 + len(channels)))  # fresh ids after the collectives' 1
  kinds = re.findall(r"channel_handle<handle = \d+, type = (\d)>", text)
  assert kinds == ["2", "3"] * 5  # print, y, seven, (empty, picked), io: one send, one recv
  assert text.count("_xla_host_transfer_handler_name = \"pjrt_rendezvous\"") == 10
  # booleans travel as bytes; the empty result is made on the device, not received
  assert "(tensor<2xui8>, !stablehlo.token) -> !stablehlo.token" in text
  assert "-> (tensor<0x2xf32>, !stablehlo.token)" not in text
  client_lib.parse_module(text)  # jaxlib's MLIR accepts the module
  cbs = text.host_callbacks
  assert [(c.send_channels, c.recv_channels) for c in cbs] == [
      ((2,), (3,)), ((4,), (5,)), ((6,), (7,)), ((8,), (9,)), ((10,), (11,))]


def test_tpu_callbacks_host_side_values():
  log = []
  text = _tpu_text(_callbacks_program(log), np.arange(3, dtype=np.float32),
                   np.array([True, False]))
  printed, double, seven, pick, record = text.host_callbacks
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    out = printed.fn(np.arange(3, dtype=np.float32))
  assert buf.getvalue() == "x=[0. 1. 2.]\n"
  # a callback of no results answers one dummy float so the program waits for it
  assert [a.shape for a in printed.result_avals] == [()] and out[0] == 0
  np.testing.assert_array_equal(double.fn(np.arange(3, dtype=np.float32))[0], [0, 2, 4])
  # no operands: the program sends a dummy float the callback never sees
  assert [a.shape for a in seven.operand_avals] == [(1,)]
  assert seven.fn(np.zeros(1, np.float32)) == (np.float32(7),)
  # the empty result is dropped; the bool result goes back as uint8
  (picked,) = pick.fn(np.array([1, 0], np.uint8))
  assert picked.dtype == np.uint8 and picked.tolist() == [0, 1]
  assert [a.shape for a in record.operand_avals] == [()]
  record.fn(np.float32(7))
  assert log == [7.0]


def test_jaxlib_makes_the_send_recv_callback_objects():
  text = _tpu_text(_callbacks_program([]), np.arange(3, dtype=np.float32),
                   np.array([True, False]))
  client = client_lib.get_client("cpu")
  for cb in text.host_callbacks:
    obj = compile_cache.host_transfer_callback(client, cb)
    assert type(obj).__name__ == "PyCapsule"


def test_callbacks_in_regions_start_their_own_token():
  def f(x):
    def body(i, c):
      jaxlite.debug.callback(lambda a: None, c)
      return c + 1
    jaxlite.debug.callback(lambda a: None, x)
    return jaxlite.lax.fori_loop(0, 3, body, x)
  text = _tpu_text(f, np.float32(0))
  assert text.count('"stablehlo.after_all"') == 2  # main's chain and the loop body's
  client_lib.parse_module(text)


def test_cpu_modules_keep_the_ffi_callback():
  text = lowering.lower_closed_jaxpr(
      jaxlite.make_jaxpr(lambda x: jaxlite.pure_callback(
          lambda v: v, jaxlite.ShapeDtypeStruct((), np.float32), x))(np.float32(1)))
  assert '"xla_ffi_python_cpu_callback"' in text and "stablehlo.send" not in text
  assert callable(text.host_callbacks[0])


def test_eager_callbacks_run_on_the_host_at_once(on_xla):
  x = jnp.arange(3.0)
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    jaxlite.debug.print("eager {}", x)
    mid = buf.getvalue()
  assert mid == "eager [0. 1. 2.]\n"


def test_programs_with_callbacks_finish_before_the_call_returns(on_xla):
  seen = []
  f = jaxlite.jit(lambda x: jaxlite.debug.callback(lambda v: seen.append(float(v)), x))
  f(2.0)
  assert seen == [2.0]


# --- the platform table --------------------------------------------------------------------------

def test_platform_rules_override_and_remove_the_default():
  assert lowering.rule_for(lax_linalg.cholesky_p, "cpu") is linalg_lowering.cholesky_rule
  assert lowering.rule_for(lax_linalg.cholesky_p, "tpu") is linalg_lowering.cholesky_xla_rule
  assert lowering.rule_for(lax_linalg.cholesky_p, "cuda") is linalg_lowering.cholesky_rule
  assert lowering.rule_for(lax_linalg.eig_p, "tpu") is None
  with pytest.raises(lowering.LoweringError,
                     match="MLIR translation rule for primitive 'eig' not found for platform tpu"):
    _tpu_text(jnp.linalg.eigvals, np.eye(3, dtype=np.float32))


@pytest.fixture
def tpu_table_on_cpu():
  """The TPU's rules with the CPU's lu (LuDecomposition is the TPU compiler's own)."""
  lowering.platform_rules["tpu_table_on_cpu"] = {**lowering.platform_rules["tpu"],
                                                 lax_linalg.lu_p: linalg_lowering.lu_rule}
  yield "tpu_table_on_cpu"
  del lowering.platform_rules["tpu_table_on_cpu"]


def _run_on_cpu(platform, f, *args):
  closed = jaxlite.make_jaxpr(f)(*args)
  text = lowering.lower_closed_jaxpr(closed, platform=platform)
  backend = xla_backend.get_xla_backend("cpu")
  device = backend.default_device()
  exe = xla_backend.XlaExecutable(backend.compile_text(text, device), backend, device,
                                  closed.in_avals, closed.out_avals, text)
  return [np.asarray(o.host()) for o in exe(*[np.asarray(a) for a in args])]


RNG = np.random.default_rng(1)
A = RNG.standard_normal((5, 5)).astype(np.float32)
SPD = (A @ A.T + 5 * np.eye(5)).astype(np.float32)
TALL = RNG.standard_normal((6, 4)).astype(np.float32)


def test_tpu_table_cholesky_qr_eigh(tpu_table_on_cpu):
  (chol,) = _run_on_cpu(tpu_table_on_cpu, jnp.linalg.cholesky, SPD)
  np.testing.assert_allclose(chol, np.linalg.cholesky(SPD), rtol=1e-5, atol=1e-5)
  assert "stablehlo.cholesky" in lowering.lower_closed_jaxpr(
      jaxlite.make_jaxpr(jnp.linalg.cholesky)(SPD), platform="tpu")
  q, r = _run_on_cpu(tpu_table_on_cpu, lambda x: jnp.linalg.qr(x, mode="complete"), TALL)
  np.testing.assert_allclose(q @ r, TALL, atol=1e-5)
  np.testing.assert_allclose(q.T @ q, np.eye(6), atol=1e-5)
  np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(TALL, mode="complete")[1]),
                             atol=1e-5)
  w, v = _run_on_cpu(tpu_table_on_cpu, jnp.linalg.eigh, SPD)
  np.testing.assert_allclose(w, np.linalg.eigvalsh(SPD), rtol=1e-5)
  np.testing.assert_allclose((v * w) @ v.T, SPD, atol=1e-4)


# (each case compiles QDWH's loop: ~15 s here; tall with full U, and a batch of wide ones,
# cover the three paths: QR first, adjoint first, square)
@pytest.mark.parametrize("shape,full", [((6, 4), True), ((2, 3, 4), False)])
def test_tpu_table_svd_by_polar_decomposition(tpu_table_on_cpu, shape, full):
  x = RNG.standard_normal(shape).astype(np.float32)
  u, s, vh = _run_on_cpu(tpu_table_on_cpu, lambda a: jnp.linalg.svd(a, full_matrices=full), x)
  u_np, s_np, vh_np = np.linalg.svd(x, full_matrices=full)
  assert u.shape == u_np.shape and vh.shape == vh_np.shape
  np.testing.assert_allclose(s, s_np, rtol=1e-5, atol=1e-5)
  k = s.shape[-1]
  np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x, atol=1e-5)
  eye = np.eye(u.shape[-1])
  np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(eye, u.shape[:-2] +
                                                                         eye.shape), atol=1e-5)
  if not full:
    (s_only,) = _run_on_cpu(tpu_table_on_cpu, lambda a: jnp.linalg.svd(a, compute_uv=False), x)
    np.testing.assert_allclose(s_only, s_np, rtol=1e-5, atol=1e-5)


def test_tpu_table_tridiagonal_solve_and_householder(tpu_table_on_cpu):
  dl = np.r_[0, RNG.standard_normal(4)].astype(np.float32)
  d = (4 + RNG.random(5)).astype(np.float32)
  du = np.r_[RNG.standard_normal(4), 0].astype(np.float32)
  b = RNG.standard_normal((2, 5, 3)).astype(np.float32)
  batch = lambda v: np.stack([v, 2 * v])  # noqa: E731
  (x,) = _run_on_cpu(tpu_table_on_cpu, jaxlite.lax.linalg.tridiagonal_solve, batch(dl),
                     batch(d), batch(du), b)
  for i in range(2):
    m = np.diag(batch(d)[i]) + np.diag(batch(dl)[i][1:], -1) + np.diag(batch(du)[i][:-1], 1)
    np.testing.assert_allclose(m @ x[i], b[i], atol=1e-5)
  taus = np.linspace(0.1, 0.4, 4).astype(np.float32)
  (h,) = _run_on_cpu(tpu_table_on_cpu, jaxlite.lax.linalg.householder_product, TALL, taus)
  want = jaxlite.lax.linalg.householder_product(TALL, taus)  # the NumPy backend's
  np.testing.assert_allclose(h, np.asarray(want), atol=1e-5)


def test_geqrf_lowers_its_jnp_program():
  """lax.linalg.geqrf (a jnp program in jaxlite; JAX exports no geqrf to compare with) on the
  xla backend gives the NumPy backend's packed QR, whose R and reflectors rebuild the input."""
  from jaxlite._src.lax.linalg_more import geqrf
  a, taus = _run_on_cpu("cpu", geqrf, TALL)
  want_a, want_taus = geqrf(TALL)  # the NumPy backend's
  np.testing.assert_allclose(a, np.asarray(want_a), atol=1e-5)
  np.testing.assert_allclose(taus, np.asarray(want_taus), atol=1e-5)
  q = np.asarray(jaxlite.lax.linalg.householder_product(a, taus))
  np.testing.assert_allclose(q @ np.triu(a)[:4], TALL, atol=1e-5)


def test_a_failing_tpu_callback_answers_zeros_then_the_call_raises():
  """The device waits for an answer on every receive channel: a callback that raises answers
  zeros, and the executable raises the failure once the program has ended."""
  def boom(v):
    raise ValueError("no good")
  text = _tpu_text(lambda x: jaxlite.pure_callback(
      boom, jaxlite.ShapeDtypeStruct((2,), np.float32), x), np.ones(2, np.float32))
  (cb,) = text.host_callbacks
  with contextlib.redirect_stderr(io.StringIO()):
    out = cb.fn(np.ones(2, np.float32))
  np.testing.assert_array_equal(out[0], np.zeros(2, np.float32))
  from jaxlite._src.base.errors import JaxRuntimeError
  # the callback's error is JAX's runtime error holding the Python traceback's text
  assert [type(e) for e in cb.failures] == [JaxRuntimeError]
  with pytest.raises(JaxRuntimeError, match="(?s)CpuCallback error calling callback: .*"
                                            "ValueError: no good"):
    xla_backend.raise_callback_failures(text.host_callbacks)
  assert cb.failures == []
  xla_backend.raise_callback_failures(text.host_callbacks)  # reported once
