"""The native tier's fused scan step (compiler/native/fused_scan.py) against tier 0's scan loop.

The fused loop runs tier 1's hoisted scan with the rest of each step compiled: products through
NumPy's own BLAS (the CBLAS gemm NumPy's matmul calls), elementwise ops as `codegen.RULES`'
scalar statements in one loop over the step's elements. The primitive table of
tests/test_native.py runs through a scan step here; integers and booleans agree exactly,
floats as that table allows (exact where both sides round correctly, a few ulps for
transcendentals); whole recurrences to JAX-COMPAT §10's float tolerance. Source planning runs
everywhere; compiled loops need numba and skip without it. None of this needs SciPy.
"""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.compiler import blas, numpy_codegen, passes, scan_hoist
from jaxlite._src.compiler import native
from jaxlite._src.compiler.native import backend as native_backend
from jaxlite._src.compiler.native import codegen, loops
from conftest import x64
from test_native import _CASES, _check, edge_values
from test_native_loops import (HOISTED_CASES, U, W, _loop_args, _run, _scan_eqn, _tier,
                               needs_numba, rnn)

fused_scan = pytest.importorskip("jaxlite._src.compiler.native.fused_scan")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
  monkeypatch.setenv("JAXLITE_NATIVE_CACHE", str(tmp_path / "native"))
  return tmp_path / "native"


@pytest.fixture
def fused_only(monkeypatch):
  # the fused loop on, the generic compiled body (loops.HOISTED) off: a HotSwap's native side
  # can then only be the fused loop
  monkeypatch.setattr(fused_scan, "ENABLED", True)
  monkeypatch.setattr(loops, "HOISTED", False)


def _source(f, *args):
  body, nc, ncar, rev, _, _ = _scan_eqn(f, *args)
  jaxpr, consts = passes.optimize(body)
  invariant, _ = passes.split_invariant(jaxpr.eqns, list(jaxpr.constvars)
                                        + list(jaxpr.invars[:nc]))
  p = scan_hoist.plan(jaxpr, invariant, nc, ncar)
  assert p is not None, "the body has a stacked product"
  return fused_scan.scan_source(jaxpr, consts, nc, ncar, rev, p)


def _fused(body, nc, ncar, rev):
  swap = native_backend.NATIVE.compile_scan(body, nc, ncar, rev)
  assert isinstance(swap, native.HotSwap), "a hoistable body gets a hot-swappable loop"
  loop = swap.build()
  assert isinstance(loop, fused_scan.AdaptiveFused)
  assert isinstance(loop.hoisted, loops.HoistedScan) and isinstance(loop.plain, loops.NativeScan)
  return loop


def _no_fallback(loop):
  """Makes tier 1's loop behind `loop` (both ways) fail if called: every step runs compiled."""
  def no_fallback(*args):
    raise AssertionError("the fused loop handed this call to tier 1")
  tier1 = loop.hoisted.fallback
  assert loop.plain.fallback is tier1
  tier1.plain = tier1.hoisted = no_fallback


def _both_ways(loop, run):
  """`run()` once per call until both of the loop's ways ran (hoisted, plain); their modes."""
  from jaxlite._src.compiler import adaptive
  modes = []
  for _ in range(2 * adaptive.PROBES):
    run()
    modes.append(loop.last_mode)
  assert set(modes) == {True, False}, modes
  return modes


def test_source_calls_numpys_gemm_and_fuses_the_step():
  if blas.cblas_gemm("float32") is None:
    pytest.skip("NumPy's BLAS is not an OpenBLAS this process can find")
  h0, xs = HOISTED_CASES[0][2]()
  source, consts = _source(rnn, h0, xs)
  # one gemm call per step into a buffer allocated once, the adds and tanh one element loop
  # writing the ys row; the gemm's address is the last body const
  assert source.count("_s.cblas_gemm(") == 1 and "np.dot" not in source
  assert source.count("for _e in range(") == 1  # the tanh chain and `h * 2 - 1` together
  assert "_s.tanh_f32(" in source and "np.empty(" in source.split("for _t in")[0]
  assert "np.empty(" not in source.split("for _t in")[1]
  assert consts[-1].dtype == np.int64 and consts[-1][0] == blas.cblas_gemm("float32")[0]


@pytest.mark.parametrize("f, why", [
    (lambda h, xs: lax.scan(lambda h, x: (jnp.tanh(h @ W + x @ U) + jnp.sum(h), h), h, xs),
     "reduce_sum"),
    (lambda h, xs: lax.scan(lambda c, x: ((c[0] + 1, jnp.tanh(c[1] @ W + x @ U)), c[1]),
                            (jnp.int32(0), h), xs), "0-d carry"),
])
def test_unsupported_steps_raise(f, why):
  h0, xs = HOISTED_CASES[0][2]()
  with pytest.raises(codegen.Unsupported):
    _source(f, h0, xs)


def test_no_blas_found_stays_on_tier1(monkeypatch, fused_only):
  monkeypatch.setattr(blas, "cblas_gemm", lambda dtype: None)
  h0, xs = HOISTED_CASES[0][2]()
  with pytest.raises(codegen.Unsupported):
    _source(rnn, h0, xs)
  body, nc, ncar, rev, _, _ = _scan_eqn(rnn, h0, xs)
  assert not isinstance(native_backend.NATIVE.compile_scan(body, nc, ncar, rev), native.HotSwap)


def test_switched_off_is_tier1s_loop(monkeypatch, fused_only):
  h0, xs = HOISTED_CASES[0][2]()
  body, nc, ncar, rev, _, _ = _scan_eqn(rnn, h0, xs)
  monkeypatch.setattr(fused_scan, "ENABLED", False)
  assert not isinstance(native_backend.NATIVE.compile_scan(body, nc, ncar, rev), native.HotSwap)


@needs_numba
@pytest.mark.parametrize("pipeline", [False, True], ids=["one chunk", "pipelined"])
@pytest.mark.parametrize("name, f, make", HOISTED_CASES, ids=[c[0] for c in HOISTED_CASES])
def test_fused_loop_gives_tier0s_results(name, f, make, pipeline, cache_dir, monkeypatch,
                                         fused_only):
  if blas.cblas_gemm("float32") is None:
    pytest.skip("NumPy's BLAS is not an OpenBLAS this process can find")
  if not pipeline:
    monkeypatch.setattr(scan_hoist, "PIPELINE_MIN", 1 << 30)
  body, nc, ncar, rev, ins, ys, length = _loop_args(f, *make())
  loop = _fused(body, nc, ncar, rev)
  _no_fallback(loop)
  want_c, want_y = _run(numpy_codegen.NUMPY.compile_scan(body, nc, ncar, rev), ins, ys, length)

  def check():
    got_c, got_y = _run(loop, ins, ys, length)
    for g, w in zip(got_c + got_y, want_c + want_y):
      np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
  _both_ways(loop, check)


def relu_rnn(h0, xs, w, u):
  # exact ops only (products, adds, max, a multiply by 0.5): every bit as tier 1 computes it
  def step(h, x):
    p = h @ w
    h = jnp.maximum(p + x @ u, 0.0) * 0.5
    return h, (h, p)
  return lax.scan(step, h0, xs)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_are_numpys_bits(dtype, cache_dir, fused_only):
  # the gemm NumPy's matmul calls, with its arguments: the fused loop's results are, bit for
  # bit, tier 1's loop's where it hoists the stacked product, tier 0's where it does not
  # (float64: dgemm)
  with x64(dtype == np.float64):
    if blas.cblas_gemm(np.dtype(dtype).name) is None:
      pytest.skip("NumPy's BLAS is not an OpenBLAS this process can find")
    rng = np.random.default_rng(5)
    h0 = rng.standard_normal((5, 16)).astype(dtype)
    xs = rng.standard_normal((40, 5, 16)).astype(dtype)
    body, nc, ncar, rev, ins, ys, length = _loop_args(
        lambda h, x: relu_rnn(h, x, W.astype(dtype), U.astype(dtype)), h0, xs)
    loop = _fused(body, nc, ncar, rev)
    # hoisted: tier 1's loop's stacked product; plain: tier 0's per-step products
    want = {True: _run(loop.hoisted.fallback, ins, ys, length),
            False: _run(numpy_codegen.NUMPY.compile_scan(body, nc, ncar, rev), ins, ys,
                        length)}
    _no_fallback(loop)

    def check():
      got_c, got_y = _run(loop, ins, ys, length)
      want_c, want_y = want[loop.last_mode]
      for g, w in zip(got_c + got_y, want_c + want_y):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, w)
    _both_ways(loop, check)


# --- the primitive table of tests/test_native.py, as a scan step's elementwise work ----------

def _table_scan(ops, dtype, broadcast_row=None):
  """A scan whose step runs `ops(x, y)` on the step's rows of two scanned values of `dtype`
  (or of x and a loop-invariant row broadcast to it), beside a float32 recurrence with a
  stacked product (what makes the scan hoistable, hence fused); every op's result is a ys."""
  w = W[:8, :8]
  u = U[:8, :8]

  def f(h0, hx, xs, ys_in, *row):
    def step(h, xy):
      x, y, xh = xy
      h = jnp.tanh(h @ w + xh @ u)
      if row:
        y = lax.broadcast_in_dim(row[0], x.shape, (0, 1))
      return h, (h, *ops(x, y, dtype))
    return lax.scan(step, h0, (xs, ys_in, hx))
  return f


@needs_numba
@pytest.mark.parametrize("dtype, ops, layout", [c for c in _CASES if c[2] != "zero-size"],
                         ids=[f"{np.dtype(d).name}-{lay}" for d, _, lay in _CASES
                              if lay != "zero-size"])
def test_primitive_table_through_the_fused_step(dtype, ops, layout, cache_dir, monkeypatch,
                                                fused_only):
  if blas.cblas_gemm("float32") is None:
    pytest.skip("NumPy's BLAS is not an OpenBLAS this process can find")
  monkeypatch.setattr(scan_hoist, "PIPELINE_MIN", 1 << 30)
  steps, shape = 5, (6, 25)  # (scan_hoist.MIN_LENGTH steps or more are hoisted)
  with x64(np.dtype(dtype).itemsize == 8):
    # offsets 5k: the integer edges test_native's table uses (abs(INT_MIN) % 3 would be an
    # invalid select_n case, on tier 0 as anywhere), in other places each step
    xs = np.stack([edge_values(shape, dtype, offset=5 * k) for k in range(steps)])
    ys_in = np.stack([edge_values(shape, dtype, offset=11 + 5 * k) for k in range(steps)])
    h0 = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    hx = np.random.default_rng(3).standard_normal((steps, 2, 8)).astype(np.float32)
    args = (h0, hx, xs, ys_in)
    if layout == "broadcast":
      args += (edge_values((1, shape[1]), dtype, offset=3),)
    f = _table_scan(ops, dtype)
    source, _ = _source(f, *args)  # fused (raises Unsupported otherwise)
    body, nc, ncar, rev, ins, ys, length = _loop_args(f, *args)
    loop = _fused(body, nc, ncar, rev)
    _no_fallback(loop)
    want_c, want_y = _run(numpy_codegen.NUMPY.compile_scan(body, nc, ncar, rev), ins, ys,
                          length)
    got = []
    _both_ways(loop, lambda: got.append(_run(loop, ins, ys, length)))
    # each ys after the recurrence's: one op's results (the scan forwards ys that are an xs
    # as it is, so the body may have fewer than `ops` returns)
    by_var = {e.outvars[0]: e.primitive.name for e in body.jaxpr.eqns}
    names = [by_var.get(v, "input") for v in body.jaxpr.outvars[ncar + 1:]]
  for got_c, got_y in got:  # each call, hoisted or plain
    assert len(got_y) == len(names) + 1 and len(names) > 5
    np.testing.assert_allclose(got_y[0], want_y[0], rtol=2e-6, atol=2e-6)  # the recurrence
    for name, g, w in zip(names, got_y[1:], want_y[1:]):
      _check(name, g, w)


@needs_numba
def test_jitted_rnn_through_the_hot_swap(cache_dir, fused_only):
  # jit under the native tier (the default): tier 1's loop first, the fused one once hot
  # (kept or rejected by its trials); every call gives tier 0's values
  h0, xs = HOISTED_CASES[0][2]()
  with _tier(0):
    w_c, w_y = (np.asarray(a) for a in jaxlite.jit(rnn)(h0, xs))
  f = jaxlite.jit(rnn)
  for i in range(native.HOT_CALLS + native.TRIALS + 2):
    c, y = f(h0, xs)
    if i == native.HOT_CALLS:
      assert native.wait(timeout=300)
    np.testing.assert_allclose(np.asarray(c), w_c, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(np.asarray(y), w_y, rtol=2e-6, atol=2e-6)
