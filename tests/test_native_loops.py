"""The native tier's whole-scan loops (compiler/native/loops.py) against tier 0's scan loop.

The source planning runs everywhere; compiled loops need numba and skip without it (the extra
jaxlite[native]). Integers agree exactly; floats to JAX-COMPAT §10's tolerance (a matrix
product's sums may be ordered differently by numba's BLAS call than by NumPy's).
"""
import importlib.util

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite import nn as jax_nn
from jaxlite._src.base import core
from jaxlite._src.compiler import numpy_codegen
from jaxlite._src.compiler import native
from jaxlite._src.compiler.native import backend as native_backend
from jaxlite._src.compiler.native import codegen, loops

# numba compiles np.dot (the loops' matmuls) through SciPy's BLAS bindings: without SciPy it
# refuses, and the loop stays on tier 1 (the oracle step, with SciPy, runs these).
needs_scipy = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                 reason="numba's np.dot needs SciPy, not installed")

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (a default dependency where numba has "
                           "wheels; elsewhere pip install 'jaxlite[native]')")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
  monkeypatch.setenv("JAXLITE_NATIVE_CACHE", str(tmp_path / "native"))
  return tmp_path / "native"


def _scan_eqn(f, *args):
  """(body ClosedJaxpr, num_consts, num_carry, reverse, eqn, the scan's operand values) of the
  one scan in f's jaxpr (its operands are f's arguments or captured constants)."""
  closed = jaxlite.make_jaxpr(f)(*args)
  eqns = closed.jaxpr.eqns
  (at,) = [i for i, e in enumerate(eqns) if e.primitive.name == "scan"]
  eqn = eqns[at]
  # the scan's operands: the jaxpr's eqns before it, evaluated with its operands as results
  before = core.Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars,
                      [v for v in eqn.invars], eqns[:at])
  ins = core.eval_jaxpr(before, closed.consts, *args)
  p = eqn.params
  return p["jaxpr"], p["num_consts"], p["num_carry"], p["reverse"], eqn, \
      [np.asarray(v, var.aval.dtype) for v, var in zip(ins, eqn.invars)]


def _loop_args(f, *args):
  """The scan loop's arguments (consts, carry, xs), preallocated ys and length for f(*args)."""
  body, nc, ncar, rev, eqn, ins = _scan_eqn(f, *args)
  length = eqn.params["length"]
  ys = [np.empty((length, *v.aval.shape), v.aval.dtype) for v in body.jaxpr.outvars[ncar:]]
  return body, nc, ncar, rev, ins, ys, length


def _run(loop, ins, ys, length):
  ys = [np.empty_like(y) for y in ys]
  carry = loop(*ins, *ys, length)
  return [np.asarray(c) for c in carry], ys


def _native_loop(body, nc, ncar, rev):
  source, consts = loops.scan_source(body, nc, ncar, rev)
  fallback = numpy_codegen.NUMPY.compile_scan(body, nc, ncar, rev)
  from jaxlite._src.compiler.native import cache
  fn, _ = cache.load(source)
  return loops.NativeScan(fn, consts, body, nc, ncar, fallback), fallback


W = (np.random.default_rng(0).standard_normal((16, 16)) / 4).astype(np.float32)
U = (np.random.default_rng(1).standard_normal((16, 16)) / 4).astype(np.float32)
B = np.linspace(-1, 1, 16).astype(np.float32)


def rnn(h0, xs):
  def step(h, x):
    h = jnp.tanh(h @ W + x @ U + B)
    return h, h * 2 - 1
  return lax.scan(step, h0, xs)


def rnn_reverse(h0, xs):
  def step(h, x):
    h = jnp.maximum(h @ W + x, 0.0) * 0.5 + jnp.exp(-jnp.abs(x))
    return h, h
  return lax.scan(step, h0, xs, reverse=True)


def int_hash(c, xs):
  def step(c, x):
    c = (c * jnp.int32(1103515245) + x) ^ (c + jnp.int32(12345))
    return c, jnp.where(c > 0, c, -c)
  return lax.scan(step, c, xs)


def with_consts(w, h0, xs):
  def step(h, x):
    h = jnp.sin(h * w) + x
    return h, h
  return lax.scan(step, h0, xs)


def fori_counter(v, xs):
  # fori_loop with static bounds is a scan with a 0-d int32 counter in its carry; the counter
  # scales an array, a 0-d float accumulates, an int32 scalar wraps around
  def body(i, carry):
    v, acc, h = carry
    v = jnp.tanh(v * 0.9 + i.astype(jnp.float32) * 0.01)
    return v, acc + jnp.float32(0.5) * i.astype(jnp.float32), h * jnp.int32(65599) + i
  return lax.fori_loop(0, xs.shape[0], body, (v, jnp.float32(0), jnp.int32(7)))


def scalar_xs(c, xs):
  # 0-d slices of xs and 0-d per-step results (ys of shape (length,))
  def step(c, x):
    c = jnp.where(x > 0, c * x, c - x) + jnp.float32(1)
    return c, (c * 2, x > 0)
  return lax.scan(step, c, xs)


def transcendentals(h0, xs):
  # the float32 unary ops support.py has libm-free versions of, over arrays (mapped by a
  # generated helper) and 0-d values (called directly), on edge values: +-inf, nan, +-0, past
  # exp's overflow and underflow
  def step(h, x):
    a = jnp.tanh(x) + jnp.exp(x) * 1e-3 + jnp.log(jnp.abs(x)) + jnp.log1p(jnp.abs(x))
    a = a + jnp.expm1(x * 0.5) * 1e-3 + jax_nn.sigmoid(x) + h
    s = jnp.tanh(x[0]) + jnp.exp(x[1]) + jnp.log(x[2]) + jnp.expm1(x[3]) + jax_nn.sigmoid(x[4])
    return a * 0.5, (a, s)
  return lax.scan(step, h0, xs)


def division_by_zero(c, xs):
  # division by zero gives inf or nan as in NumPy, for 0-d values and arrays (numba's default
  # error model raises ZeroDivisionError on a scalar)
  def step(c, x):
    return c / x[0] + jnp.float32(1), x / x[1]
  return lax.scan(step, c, xs)


_EDGES = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 100.0, -100.0, 89.0, -104.0, 1e-30,
                   0.3, -0.7, 0.625, -0.625, 44.5, 3.0], np.float32)
_F32 = np.random.default_rng(2).standard_normal
CASES = [
    ("rnn", rnn, lambda: (_F32((4, 16)).astype(np.float32), _F32((12, 4, 16)).astype(np.float32))),
    ("reverse", rnn_reverse,
     lambda: (_F32((3, 16)).astype(np.float32), _F32((9, 3, 16)).astype(np.float32))),
    ("int32 wraparound", int_hash,
     lambda: (np.arange(-8, 8, dtype=np.int32).reshape(2, 8) * 977,
              (np.arange(5 * 16, dtype=np.int32).reshape(5, 2, 8) * 40503) - 2**20)),
    ("fori_loop 0-d counter", fori_counter,
     lambda: (_F32(8).astype(np.float32), np.zeros((30, 1), np.float32))),
    ("0-d xs and ys", scalar_xs,
     lambda: (np.float32(0.25), _F32(11).astype(np.float32))),
    ("float32 transcendentals", transcendentals,
     lambda: (np.zeros(16, np.float32),
              np.stack([_EDGES, _EDGES[::-1], -_EDGES, _F32(16).astype(np.float32) * 30]))),
    ("division by zero", division_by_zero,
     lambda: (np.float32(2), np.array([[0, 1, 2, 0], [-0.0, 3, 0, 5], [4, 0, 0, 1]],
                                      np.float32))),
    ("traced consts", with_consts,
     lambda: (np.linspace(-2, 2, 8, dtype=np.float32), np.zeros(8, np.float32),
              _F32((7, 8)).astype(np.float32))),
]


@pytest.mark.parametrize("name, f, make", CASES, ids=[c[0] for c in CASES])
def test_scan_source_plans(name, f, make):
  body, nc, ncar, rev, eqn, _ = _scan_eqn(f, *make())
  source, _ = loops.scan_source(body, nc, ncar, rev)
  assert "def kernel(" in source and "for _t in range(length):" in source
  assert ("length - 1 - _t" in source) == rev


def test_float32_transcendentals_map_libm_free_versions():
  # arrays map support.py's functions through generated helpers (a loop that vectorizes; numba's
  # np.tanh over an array is a scalar libm call per element), 0-d values call them directly
  (case,) = [c for c in CASES if c[0] == "float32 transcendentals"]
  body, nc, ncar, rev, _, _ = _scan_eqn(case[1], *case[2]())
  source, _ = loops.scan_source(body, nc, ncar, rev)
  for fn in ("tanh", "exp", "log", "log1p", "expm1"):
    assert f"def _map_{fn}_f32(a):" in source and f"_map_{fn}_f32(v" in source
    assert f"np.{fn}(" not in source
  assert "(_s.tanh_f32(" in source and "(_s.exp_f32(" in source  # the 0-d ones
  assert source.count("error_model='numpy'") == 1  # the kernel: x / 0 is inf, never raises


@needs_scipy
@needs_numba
@pytest.mark.parametrize("name, f, make", CASES, ids=[c[0] for c in CASES])
def test_native_scan_equals_tier0(cache_dir, name, f, make):
  body, nc, ncar, rev, ins, ys, length = _loop_args(f, *make())
  loop, tier0 = _native_loop(body, nc, ncar, rev)

  def no_fallback(*args):
    raise AssertionError("the native loop handed this call to tier 1")
  loop.fallback = no_fallback
  got_c, got_y = _run(loop, ins, ys, length)
  want_c, want_y = _run(tier0, ins, ys, length)
  for g, w in zip(got_c + got_y, want_c + want_y):
    assert g.dtype == w.dtype and g.shape == w.shape
    if g.dtype.kind in "iub":
      np.testing.assert_array_equal(g, w)
    else:
      np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("f", [
    # a reduction, integer division, a float->int convert
    lambda h, xs: lax.scan(lambda h, x: (h + jnp.sum(x), x), h, xs),
    lambda h, xs: lax.scan(lambda c, x: (c // 3, x * 2), jnp.arange(4, dtype=jnp.int32), xs),
    lambda h, xs: lax.scan(lambda h, x: (h, x.astype(jnp.int32)), h, xs),
])
def test_unsupported_bodies_stay_on_tier1(f):
  h, xs = np.zeros(4, np.float32), np.ones((3, 4), np.float32)
  body, nc, ncar, rev, _, _ = _scan_eqn(f, h, xs)
  with pytest.raises(codegen.Unsupported):
    loops.scan_source(body, nc, ncar, rev)
  # the native backend then hands out tier 1's own loop, unwrapped
  old = loops.ENABLED
  loops.ENABLED = True
  try:
    loop = native_backend.NATIVE.compile_scan(body, nc, ncar, rev)
  finally:
    loops.ENABLED = old
  assert not isinstance(loop, native.HotSwap)


@needs_scipy
@needs_numba
def test_hot_scan_swaps_in_only_when_faster(cache_dir, monkeypatch):
  # Through the backend: tier 1's loop first, the background compile once hot, then the
  # measured choice; whichever runs, the results are tier 0's.
  monkeypatch.setattr(loops, "ENABLED", True)
  body, nc, ncar, rev, ins, ys, length = _loop_args(rnn, *CASES[0][2]())
  swap = native_backend.NATIVE.compile_scan(body, nc, ncar, rev)
  assert isinstance(swap, native.HotSwap)
  want_c, want_y = _run(numpy_codegen.NUMPY.compile_scan(body, nc, ncar, rev), ins, ys, length)
  for _ in range(native.HOT_CALLS):
    _run(swap, ins, ys, length)
  assert native.wait(timeout=300)
  assert swap.error is None and (swap.native is not None)
  for _ in range(native.TRIALS + 1):
    got_c, got_y = _run(swap, ins, ys, length)
    for g, w in zip(got_c + got_y, want_c + want_y):
      np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
  assert swap.rejected == (swap.native is None)
  assert swap.best_native < float("inf") and swap.best_fallback < float("inf")


# --- while_loop -----------------------------------------------------------------------------------

def _while_eqn(f, *args):
  closed = jaxlite.make_jaxpr(f)(*args)
  eqns = closed.jaxpr.eqns
  (at,) = [i for i, e in enumerate(eqns) if e.primitive.name == "while"]
  eqn = eqns[at]
  before = core.Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars, list(eqn.invars), eqns[:at])
  ins = core.eval_jaxpr(before, closed.consts, *args)
  return eqn.params, [np.asarray(v, var.aval.dtype) for v, var in zip(ins, eqn.invars)]


def while_tanh(x):
  return lax.while_loop(lambda c: c[0] < 37,
                        lambda c: (c[0] + 1, jnp.tanh(c[1] @ W * 1.1) + c[0].astype(jnp.float32)
                                   * 0.01), (jnp.int32(0), x))


def while_int(h):
  def body(c):
    i, h, s = c
    h = (h * jnp.int32(1103515245) + i) ^ jnp.int32(0x5bd1e995)
    return i + 1, h, s + jnp.where(h[0] > 0, jnp.int32(1), jnp.int32(-1))
  return lax.while_loop(lambda c: (c[0] < 25) & (c[2] > -1000), body,
                        (jnp.int32(0), h, jnp.int32(0)))


WHILE_CASES = [
    ("tanh matmul, 0-d counter", while_tanh, lambda: (_F32((4, 16)).astype(np.float32),)),
    ("int32 wraparound", while_int, lambda: (np.arange(-6, 6, dtype=np.int32) * 104729,)),
]


@needs_scipy
@needs_numba
@pytest.mark.parametrize("name, f, make", WHILE_CASES, ids=[c[0] for c in WHILE_CASES])
def test_native_while_equals_tier0(cache_dir, name, f, make):
  from jaxlite._src.compiler.native import cache
  from jaxlite._src.lax.control_flow import loops as lax_loops
  p, ins = _while_eqn(f, *make())
  source, cconsts, bconsts = loops.while_source(p["cond_jaxpr"], p["body_jaxpr"],
                                                p["cond_nconsts"], p["body_nconsts"])
  fn, _ = cache.load(source)

  def no_fallback(*args):
    raise AssertionError("the native loop handed this call to Python's")
  loop = loops.NativeWhile(fn, cconsts, bconsts, p["body_jaxpr"], p["body_nconsts"],
                           no_fallback)
  got = loop(*ins)
  with jaxlite._src.compiler.backend.using_backend(numpy_codegen.NUMPY):
    want = lax_loops.while_python(*ins, **p)
  for g, w in zip(got, want):
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype and g.shape == w.shape
    if g.dtype.kind in "iub":
      np.testing.assert_array_equal(g, w)
    else:
      np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


def test_batched_while_stays_in_python():
  f = jaxlite.vmap(lambda n: lax.while_loop(lambda c: c < n, lambda c: c + 1.0, 0.0))
  p, _ = _while_eqn(f, np.array([1.0, 3.0], np.float32))
  with pytest.raises(codegen.Unsupported):
    loops.while_source(p["cond_jaxpr"], p["body_jaxpr"], p["cond_nconsts"], p["body_nconsts"])


@needs_scipy
@needs_numba
def test_jitted_while_through_the_native_backend(cache_dir, monkeypatch):
  monkeypatch.setattr(loops, "ENABLED", True)
  x = _F32((4, 16)).astype(np.float32)
  with jaxlite._src.compiler.backend.using_backend(numpy_codegen.NUMPY):
    want = jaxlite.jit(while_tanh)(x)
  with jaxlite._src.compiler.backend.using_backend(native_backend.NATIVE):
    f = jaxlite.jit(while_tanh)
    for _ in range(native.HOT_CALLS + 1):
      f(x)
    assert native.wait(timeout=300)
    swaps = [v[1] for per in native_backend.NATIVE._while_loops.values()
             for v in per.values() if isinstance(v[1], native.HotSwap)]
    assert swaps and all(s.error is None for s in swaps)
    for _ in range(native.TRIALS + 1):
      got = f(x)
      for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=2e-6)


# --- tier 1's hoisted loop with the rest of the step compiled (loops.HoistedScan) ---------------

def rnn_stacked_ys(h0, xs):
  # a stacked value (x @ U) is itself a ys output and read by the step
  def step(h, x):
    xu = x @ U
    h = jnp.tanh(h @ W + xu + B)
    return h, (h, xu)
  return lax.scan(step, h0, xs)


def rnn_reverse_hoisted(h0, xs):
  def step(h, x):
    h = jnp.maximum(h @ W + (x * 2.0) @ U, 0.0) * 0.5 + jnp.exp(-jnp.abs(x))
    return h, h
  return lax.scan(step, h0, xs, reverse=True)


HOISTED_CASES = [
    ("rnn", rnn, lambda: (_F32((4, 16)).astype(np.float32),
                          _F32((70, 4, 16)).astype(np.float32))),
    ("stacked ys", rnn_stacked_ys, lambda: (_F32((4, 16)).astype(np.float32),
                                            _F32((9, 4, 16)).astype(np.float32))),
    ("reverse, chunked", rnn_reverse_hoisted,
     lambda: (_F32((3, 16)).astype(np.float32), _F32((130, 3, 16)).astype(np.float32))),
]


@pytest.fixture
def hoisted_on(monkeypatch):
  # the generic compiled body (numba's np.dot), the fused step (fused_scan, tested in
  # test_native_fused_scan.py) off
  from jaxlite._src.compiler.native import fused_scan
  monkeypatch.setattr(loops, "HOISTED", True)
  monkeypatch.setattr(fused_scan, "ENABLED", False)


def _hoisted(body, nc, ncar, rev):
  """The native backend's scan loop (a HotSwap of tier 1's AdaptiveLoop and HoistedScan), its
  native side built at once."""
  swap = native_backend.NATIVE.compile_scan(body, nc, ncar, rev)
  assert isinstance(swap, native.HotSwap), "a hoistable body gets a hot-swappable loop"
  loop = swap.build()
  assert isinstance(loop, loops.HoistedScan)
  return loop, swap


@needs_scipy
@needs_numba
@pytest.mark.parametrize("pipeline", [False, True], ids=["one chunk", "pipelined"])
@pytest.mark.parametrize("name, f, make", HOISTED_CASES, ids=[c[0] for c in HOISTED_CASES])
def test_hoisted_native_loop_gives_tier0s_results(name, f, make, pipeline, cache_dir,
                                                  monkeypatch, hoisted_on):
  from jaxlite._src.compiler import scan_hoist
  if not pipeline:
    monkeypatch.setattr(scan_hoist, "PIPELINE_MIN", 1 << 30)
  body, nc, ncar, rev, ins, ys, length = _loop_args(f, *make())
  loop, _ = _hoisted(body, nc, ncar, rev)
  want_c, want_y = _run(numpy_codegen.NUMPY.compile_scan(body, nc, ncar, rev), ins, ys, length)
  for _ in range(2):
    got_c, got_y = _run(loop, ins, ys, length)
    for g, w in zip(got_c + got_y, want_c + want_y):
      # the stacked products are one BLAS call where tier 0 made one per step (scan_hoist)
      np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
  if pipeline and loop.batched.can_pipeline(length):  # a free pool worker: several chunks,
    # the loop compiled once, called per chunk with the carry passed on
    hoist_in = [{"c": ins[:nc], "x": ins[nc + ncar:], "k": loop.body_consts}[kind][k]
                for kind, k in loop.inputs]
    run = loop.batched.start(length, *hoist_in)
    run.close()
    assert len(run.chunks) > 1 or length < scan_hoist.PIPELINE_MIN


@needs_scipy
@needs_numba
def test_hoisted_native_loop_refuses_strided_buffers(cache_dir, hoisted_on):
  # ys that are not C-contiguous: tier 1's loop runs the whole call (same values)
  body, nc, ncar, rev, ins, ys, length = _loop_args(rnn, *HOISTED_CASES[0][2]())
  loop, _ = _hoisted(body, nc, ncar, rev)
  want_c, want_y = _run(numpy_codegen.NUMPY.compile_scan(body, nc, ncar, rev), ins, ys, length)
  strided = [np.empty((length, *y.shape[1:], 2), y.dtype)[..., 0] for y in ys]
  carry = loop(*ins, *strided, length)
  for g, w in zip([np.asarray(c) for c in carry] + strided, want_c + want_y):
    np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
  # a scan longer than tier 1 hoists (stacked values past scan_hoist.MAX_BYTES): tier 1's loop
  starts = []
  start = loop.batched.start
  loop.batched.start = lambda *a: starts.append(a) or start(*a)
  loop.fallback.max_length = length - 1
  got_c, got_y = _run(loop, ins, ys, length)
  assert not starts
  for g, w in zip(got_c + got_y, want_c + want_y):
    np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


def test_hoisted_loop_off_or_nothing_hoisted_is_tier1s_loop(monkeypatch, hoisted_on):
  # nothing to hoist (no product of a scanned value): tier 1's loop as it is
  body, nc, ncar, rev, _, _ = _scan_eqn(with_consts, *CASES[-1][2]())
  assert not isinstance(native_backend.NATIVE.compile_scan(body, nc, ncar, rev), native.HotSwap)
  # switched off: tier 1's loop too
  monkeypatch.setattr(loops, "HOISTED", False)
  body, nc, ncar, rev, _, _ = _scan_eqn(rnn, *HOISTED_CASES[0][2]())
  assert not isinstance(native_backend.NATIVE.compile_scan(body, nc, ncar, rev), native.HotSwap)


@needs_scipy
@needs_numba
def test_jitted_rnn_through_the_hot_swap(cache_dir, hoisted_on):
  # jit under the native tier: tier 1's loop first, the compiled one once hot (kept or
  # rejected by its trials); every call gives tier 0's values
  h0, xs = HOISTED_CASES[0][2]()
  want = jaxlite.jit(rnn)
  with _tier(0):
    w_c, w_y = (np.asarray(a) for a in want(h0, xs))
  f = jaxlite.jit(rnn)
  for _ in range(native.HOT_CALLS + native.TRIALS + 2):
    c, y = f(h0, xs)
    if _ == native.HOT_CALLS:
      assert native.wait(timeout=300)
    np.testing.assert_allclose(np.asarray(c), w_c, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(np.asarray(y), w_y, rtol=2e-6, atol=2e-6)


class _tier:
  def __init__(self, t):
    self.t = t

  def __enter__(self):
    self.old = jaxlite.config.jax_jaxlite_tier
    jaxlite.config.update("jax_jaxlite_tier", self.t)

  def __exit__(self, *exc):
    jaxlite.config.update("jax_jaxlite_tier", self.old)
