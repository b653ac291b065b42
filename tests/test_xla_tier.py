"""The background XLA tier (compiler/xla_tier.py) against tier 0.

Each case jits a function with the tier on and its thresholds at zero (every program hot on its
first call, XLA kept whatever the trials measure), waits for the background build, runs the
trials, and compares the swapped-in XLA program's results with tier 0's on the primitive table
of tests/test_tier1.py: integers, booleans and PRNG bits exactly, floats to JAX-COMPAT §10
(XLA's transcendentals within a few ulp, FMA contraction, denormals flushed to zero).
Needs jaxlib (the `xla` extra); skips naming it where it is not installed.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("jaxlib", reason="jaxlib is not installed (pip install 'jaxlite[xla]')")

import jaxlite  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from conftest import configured  # noqa: E402
from jaxlite import lax  # noqa: E402
from jaxlite._src.compiler.xla import lowering as hlo  # noqa: E402
from jaxlite._src.base import core  # noqa: E402
from jaxlite._src.compiler import xla_tier  # noqa: E402
from test_tier1 import (BINARY_FLOAT, INT_CASES, REDUCE_FLOAT, UNARY_FLOAT,  # noqa: E402
                        values)

# The tier runs NumPy-backend programs on XLA: its tests run on the NumPy backend whatever
# JAXLITE_BACKEND says (on the xla backend every program is XLA's already).
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("on_numpy")]

SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src")


@pytest.fixture
def eager_tier(monkeypatch):
  """The tier on, every program hot at once and XLA kept whatever it measures."""
  monkeypatch.setattr(xla_tier, "HOT_CALLS", 1)
  monkeypatch.setattr(xla_tier, "HOT_SECONDS", 0.0)
  monkeypatch.setattr(xla_tier, "MIN_CALL_S", 0.0)
  monkeypatch.setattr(xla_tier, "MIN_WORK", 0)
  monkeypatch.setattr(xla_tier, "KEEP_RATIO", float("inf"))
  with configured(jax_jaxlite_xla_tier=True):
    yield


def _swap_of(jitted, *args):
  exe = jitted.lower(*args).compile()._entry.executable
  return exe if isinstance(exe, xla_tier.XlaSwap) else None


def on_xla_tier(f, *args, tier=1):
  """f's results from its XLA program, swapped in by the tier (on top of `tier`)."""
  with configured(jax_jaxlite_tier=tier):
    jf = jaxlite.jit(f)
    jf(*args)  # hot: the build is submitted, this call ran on the tier
    assert xla_tier.wait(600)
    swap = _swap_of(jf, *args)
    assert swap is not None, "the program was not wrapped"
    assert swap.program.error is None, swap.program.error
    for _ in range(2 * xla_tier.TRIALS):
      jf(*args)
    for _ in range(4 * xla_tier.TRIALS):  # trials pause while another tier's compile runs
      if swap.settled is not None:
        break
      assert xla_tier.wait(600)
      jf(*args)
    assert swap.on_xla
    return jf(*args)


def on_tier0(f, *args):
  with configured(jax_jaxlite_tier=0, jax_jaxlite_xla_tier=False):
    # its own function: jit's trace cache is per function, and an entry keeps its executable
    return jaxlite.jit(lambda *a: f(*a))(*args)


def _leaves(x):
  return [np.asarray(jaxlite.random.key_data(a) if hasattr(a.dtype, "_is_extended") else a)
          for a in jaxlite.tree.leaves(x)]


def assert_close(want, got, ulps=False):
  """Integers and booleans equal; floats: NaN where tier 0 has NaN, infinities equal, finite
  values within rtol (1e-5 f32 and f64: JAX-COMPAT §10's reductions and transcendentals; 2e-3
  f16, one ulp of the half result XLA computes in f32) of the result's scale (§10: relative to
  the sum of absolute terms; values near zero made by cancellation, x - mean(x) or lgamma
  near its roots, are compared at the scale of their terms: 1e-6 of the largest |result|, at
  least 1e-6), or below the normal range (XLA flushes denormals to zero)."""
  for a, b in zip(_leaves(want), _leaves(got), strict=True):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype.kind not in "fc":
      np.testing.assert_array_equal(a, b)
      continue
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.isinf(a) & (a > 0), np.isinf(b) & (b > 0))
    ok = np.isfinite(a) & np.isfinite(b)
    rtol = 2e-3 if a.dtype == np.float16 else 1e-5
    scale = float(np.max(np.abs(a[ok]), initial=1.0))
    atol = max(np.finfo(a.dtype).tiny * 4, (rtol / 10) * scale)
    np.testing.assert_allclose(b[ok], a[ok], rtol=rtol, atol=atol)


# Where XLA's CPU kernels differ from NumPy's beyond the float tolerance at the edge values the
# table cycles through (each checked against real JAX, which gives XLA's answer).
_EDGE_DIFFERENCES = {
    "lgamma", "digamma",      # poles at 0 and negative integers: XLA gives inf/nan there
    "erf_inv",                # +-1 -> +-inf vs NumPy's; both are JAX's on some backend
    "nextafter",              # XLA flushes the denormal step
    "reduce_precision",
    "tan", "acosh", "atanh", "asinh", "cosh", "sinh", "rem", "pow", "atan2", "sign",
}


@pytest.mark.parametrize("dtype", (np.float32,), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,fn", UNARY_FLOAT, ids=[c[0] for c in UNARY_FLOAT])
def test_unary_float(eager_tier, name, fn, dtype):
  rng = np.random.default_rng(0)
  x = (rng.normal(size=(37, 5)) * 0.8).astype(dtype)
  if name in ("acosh",):
    x = np.abs(x) + 1
  if name in ("log", "log1p", "sqrt", "rsqrt", "lgamma", "digamma"):
    x = np.abs(x) + 0.1
  if name in ("asin", "acos", "atanh", "erf_inv"):
    x = np.clip(x, -0.9, 0.9)
  assert_close(on_tier0(fn, x), on_xla_tier(fn, x))
  if name not in _EDGE_DIFFERENCES:
    e = values((37, 5), dtype)
    assert_close(on_tier0(fn, e), on_xla_tier(fn, e))


@pytest.mark.parametrize("name,fn", BINARY_FLOAT, ids=[c[0] for c in BINARY_FLOAT])
def test_binary_float(eager_tier, name, fn):
  rng = np.random.default_rng(1)
  x = rng.normal(size=(11, 2, 3)).astype(np.float32)
  y = rng.normal(size=(11, 2, 3)).astype(np.float32)
  if name == "pow":
    x = np.abs(x) + 0.1
  if name == "rem":
    y = np.where(np.abs(y) < 0.1, 1.0, y).astype(np.float32)
  assert_close(on_tier0(fn, x, y), on_xla_tier(fn, x, y))
  if name not in _EDGE_DIFFERENCES:
    a, b = values((37, 5), np.float32), values((37, 5), np.float32, offset=5)
    assert_close(on_tier0(fn, a, b), on_xla_tier(fn, a, b))


@pytest.mark.parametrize("name,fn,dtype", INT_CASES,
                         ids=[f"{c[0]}-{np.dtype(c[2]).name}" for c in INT_CASES])
def test_integer(eager_tier, name, fn, dtype):
  x = values((37, 5), dtype)
  assert_close(on_tier0(fn, x), on_xla_tier(fn, x))


@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,fn", REDUCE_FLOAT, ids=[c[0] for c in REDUCE_FLOAT])
def test_row_reductions(eager_tier, name, fn, dtype):
  with configured(jax_enable_x64=dtype == np.float64):
    x = np.random.default_rng(0).normal(size=(50, 300)).astype(dtype)
    assert_close(on_tier0(fn, x), on_xla_tier(fn, x))


def test_bool_and_select(eager_tier):
  p = values((37, 5), np.bool_)
  f = lambda p: (p ^ p[::-1], jnp.any(p, axis=1), lax.select(p, p[::-1], p))  # noqa: E731
  assert_close(on_tier0(f, p), on_xla_tier(f, p))


def test_threefry_bits_keys_and_samplers_exact(eager_tier):
  key = jaxlite.random.key(42)
  f = lambda k: (jaxlite.random.bits(k, (1000,)),  # noqa: E731
                 jaxlite.random.uniform(k, (500,)),
                 jaxlite.random.split(k, 7),
                 jaxlite.random.randint(k, (300,), -5, 9))
  want, got = on_tier0(f, key), on_xla_tier(f, key)
  for a, b in zip(_leaves(want), _leaves(got)):
    np.testing.assert_array_equal(a, b)  # bits, uniform floats, keys, integers: all exact
  n = lambda k: jaxlite.random.normal(k, (4096,))  # noqa: E731
  a, b = np.asarray(on_tier0(n, key)), np.asarray(on_xla_tier(n, key))
  np.testing.assert_allclose(b, a, rtol=0, atol=5e-6)  # JAX-COMPAT §10: <= 4 ulp of ~4


def test_scan_rnn_on_tier0_and_tier1(eager_tier):
  rng = np.random.default_rng(3)
  w = (rng.normal(size=(16, 16)) / 4).astype(np.float32)
  xs = rng.normal(size=(40, 8, 16)).astype(np.float32)

  def rnn(h0, xs):
    def step(h, x):
      h = jnp.tanh(h @ w + x @ w.T)
      return h, h
    return lax.scan(step, h0, xs)
  h0 = np.zeros((8, 16), np.float32)
  want = on_tier0(rnn, h0, xs)
  for tier in (0, 1):
    assert_close(want, on_xla_tier(rnn, h0, xs, tier=tier))


def test_results_are_numpy_backed(eager_tier):
  x = np.arange(6000, dtype=np.float32).reshape(60, 100)
  out = on_xla_tier(lambda x: jnp.exp(x / 6000) * 2, x)
  assert type(out) is core.array_type and type(out._value) is np.ndarray
  again = jaxlite.jit(lambda y: y + 1)(out)  # an XLA result read by a NumPy-tier program
  np.testing.assert_allclose(np.asarray(again), np.exp(x / 6000) * 2 + 1, rtol=1e-6)


def test_donation(eager_tier):
  f = jaxlite.jit(lambda x, y: x * 2 + y, donate_argnums=0)
  y = np.ones((40, 50), np.float32)
  for i in range(2 + 2 * xla_tier.TRIALS):
    x = jnp.asarray(np.full((40, 50), i, np.float32))
    out = f(x, y)
    np.testing.assert_array_equal(np.asarray(out), np.full((40, 50), 2 * i + 1, np.float32))
    assert x.is_deleted()
    if i == 0:
      assert xla_tier.wait(600)
  assert any(s.on_xla for s in list(xla_tier._swaps))


def test_hot_call_never_waits_for_the_build(eager_tier, monkeypatch):
  release, started = threading.Event(), threading.Event()
  build = xla_tier._Program.build

  def slow_build(self):
    started.set()
    release.wait(60)
    build(self)
  monkeypatch.setattr(xla_tier._Program, "build", slow_build)
  f = jaxlite.jit(lambda x: jnp.sin(x) * 3)
  x = np.linspace(0, 1, 1000, dtype=np.float32)
  try:
    np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) * 3, rtol=1e-6)  # hot: submits
    assert started.wait(60)
    for _ in range(3):  # the build is still blocked: the tier answers
      np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) * 3, rtol=1e-6)
    assert not _swap_of(f, x).program.done
  finally:
    release.set()
  assert xla_tier.wait(600) and _swap_of(f, x).program.runner is not None


no_rule_p = core.Primitive("xla_tier_test_no_rule")  # a primitive XLA cannot lower
no_rule_p.def_impl(lambda x: np.asarray(x) * 2)
no_rule_p.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype))


def _failing_rule(ctx, x):
  # (with no rule at all, a primitive defined outside jaxlite would run its impl through a host
  # callback: lowering.impl_on_host_rule)
  raise hlo.LoweringError("MLIR translation rule for primitive 'xla_tier_test_no_rule' not "
                          "found for the xla backend")


hlo.register(no_rule_p, _failing_rule)


def test_lowering_error_stays_on_the_tier_and_is_remembered(eager_tier):
  f = jaxlite.jit(lambda x: no_rule_p.bind(jnp.sin(x)))
  x = np.linspace(0, 1, 300, dtype=np.float32)
  f(x)
  assert xla_tier.wait(600)
  swap = _swap_of(f, x)
  assert "LoweringError" in swap.program.error and "xla_tier_test_no_rule" in swap.program.error
  for _ in range(3):
    np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) * 2, rtol=1e-6)
  assert swap.settled is swap.fallback and not swap.on_xla


def test_effects_callbacks_and_small_programs_are_not_wrapped(eager_tier, monkeypatch):
  x = np.ones(500, np.float32)

  def printing(x):
    jaxlite.debug.print("{}", x[0])
    return x * 2

  def pure_cb(x):
    return jaxlite.pure_callback(lambda v: np.asarray(v) * 2,
                                 jaxlite.ShapeDtypeStruct(x.shape, x.dtype), x)
  for f in (printing, pure_cb):
    assert _swap_of(jaxlite.jit(f), x) is None
  bf16 = jnp.ones(500, jnp.bfloat16)
  assert _swap_of(jaxlite.jit(lambda v: v * 2), bf16) is None  # no bfloat16 export
  monkeypatch.setattr(xla_tier, "MIN_WORK", 1 << 16)
  assert _swap_of(jaxlite.jit(lambda v: v * 2 + 1), np.ones(100, np.float32)) is None
  assert _swap_of(jaxlite.jit(lambda v: v * 2 + 1), np.ones(1 << 16, np.float32)) is not None


def test_flag_off_wraps_nothing_and_runs_the_tier(eager_tier):
  x = np.ones(500, np.float32)
  with configured(jax_jaxlite_xla_tier=False):
    assert _swap_of(jaxlite.jit(lambda v: v * 3), x) is None
  f = jaxlite.jit(lambda v: jnp.cos(v) * 3)
  on_xla_tier(lambda v: jnp.cos(v) * 3, x)
  with configured(jax_jaxlite_xla_tier=False):  # a swapped program goes back to its tier
    np.testing.assert_allclose(np.asarray(f(x)), np.cos(x) * 3, rtol=1e-6)


def test_work_estimate_counts_products_and_loops():
  x = np.ones((64, 32), np.float32)
  dot = jaxlite.make_jaxpr(lambda a, b: a @ b)(x, x.T)
  assert xla_tier.estimated_work(dot.jaxpr) == 64 * 64 * 32
  scan = jaxlite.make_jaxpr(lambda c, xs: lax.scan(lambda c, v: (c + v, c * 2), c, xs))(
      np.ones(8, np.float32), np.ones((100, 8), np.float32))
  assert xla_tier.estimated_work(scan.jaxpr) == 100 * (8 + 8)


def test_exit_while_a_build_runs_is_clean():
  code = ("import numpy as np, jaxlite, jaxlite.numpy as jnp\n"
          "from jaxlite._src.compiler import xla_tier\n"
          "xla_tier.HOT_CALLS, xla_tier.HOT_SECONDS, xla_tier.MIN_CALL_S = 1, 0.0, 0.0\n"
          "f = jaxlite.jit(lambda x: jnp.tanh(x) @ x.T)\n"
          "f(np.ones((300, 300), np.float32))\n"
          "print('exiting')\n")
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                     env={**os.environ, "PYTHONPATH": SRC, "JAXLITE_XLA_TIER": "1"})
  assert r.returncode == 0 and r.stdout.strip() == "exiting", r.stderr[-2000:]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_runs_the_tier(eager_tier):
  x = np.linspace(0, 1, 2000, dtype=np.float32)
  f = jaxlite.jit(lambda v: jnp.exp(v) * 2)
  on_xla_tier(lambda v: jnp.exp(v) * 2, x)  # the parent has an XLA client now
  f(x)
  assert xla_tier.wait(600)
  for _ in range(2 * xla_tier.TRIALS):
    f(x)
  assert _swap_of(f, x).on_xla
  r, w = os.pipe()
  pid = os.fork()
  if pid == 0:  # the child: XLA's client is unusable here, the tier answers
    try:
      ok = np.allclose(np.asarray(f(x)), np.exp(x) * 2, rtol=1e-6) and \
          not _swap_of(f, x).on_xla
      os.write(w, b"1" if ok else b"0")
    finally:
      os._exit(0)
  os.close(w)
  try:
    assert os.read(r, 1) == b"1"
  finally:
    os.close(r)
    os.waitpid(pid, 0)


def test_a_runtime_error_in_the_trials_keeps_the_tier(eager_tier, monkeypatch):
  f = jaxlite.jit(lambda v: jnp.cos(v) + 1)
  x = np.linspace(0, 1, 700, dtype=np.float32)
  f(x)
  assert xla_tier.wait(600)
  swap = _swap_of(f, x)

  def refuse(*args):
    raise RuntimeError("XLA refused")
  monkeypatch.setattr(swap.program, "runner", refuse)
  for _ in range(3):
    np.testing.assert_allclose(np.asarray(f(x)), np.cos(x) + 1, rtol=1e-6)
  assert swap.rejected and "XLA refused" in swap.program.error and not swap.on_xla
