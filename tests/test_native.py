"""The native tier (compiler/native/: numba, installed where it has wheels) against tier 0.

The switch, the hot-swap logic and the generated source are checked everywhere; compiled
kernels, threefry bits and the disk cache need numba and skip without it, naming the extra.
Floats agree with tier 0 to JAX-COMPAT §10 (exact ops bit for bit, transcendentals to 8 ulp),
integers, booleans and PRNG bits exactly.
"""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import jaxlite
from conftest import x64
from jaxlite import lax
from jaxlite._src.rng import prng, prng_threefry
from jaxlite._src.compiler import backend, fusion, numpy_codegen, passes, tiled_executor
from jaxlite._src.compiler import native
from jaxlite._src.compiler.native import backend as native_backend
from jaxlite._src.compiler.native import codegen

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (a default dependency where numba has "
                           "wheels; elsewhere pip install 'jaxlite[native]')")

TIER0, NATIVE = numpy_codegen.NUMPY, native_backend.NATIVE
SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
  monkeypatch.setenv("JAXLITE_NATIVE_CACHE", str(tmp_path / "native"))
  return tmp_path / "native"


def _python(code: str, **env) -> str:
  full = {**os.environ, "PYTHONPATH": SRC, **env}
  return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                        check=True, timeout=300).stdout.strip()


# --- the switch ----------------------------------------------------------------------------------

def test_import_never_loads_numba():
  out = _python("import sys, jaxlite, jaxlite.numpy as jnp\n"
                "f = jaxlite.jit(lambda x: jnp.tanh(x) * 2)\n"
                "f(jnp.ones((512, 512)))\n"
                "from jaxlite._src.compiler import backend\n"
                "print(backend.get_backend().name, 'numba' in sys.modules)", JAXLITE_TIER="1")
  want = "numpy-native" if HAVE_NUMBA else "numpy-tiled"
  assert out == f"{want} False"


@pytest.mark.parametrize("env, want", [({"JAXLITE_NATIVE": "0"}, "numpy-tiled"),
                                       ({"JAXLITE_NATIVE": "1"}, None),
                                       ({"JAXLITE_TIER": "0"}, "numpy")])
def test_env_selects_backend(env, want):
  if want is None:
    want = "numpy-native" if HAVE_NUMBA else "numpy-tiled"
  out = _python("import jaxlite\nfrom jaxlite._src.compiler import backend\n"
                "print(backend.get_backend().name)", **{"JAXLITE_TIER": "1", **env})
  assert out == want


def test_flag_switches_backend():
  prev, tier = backend.get_backend(), jaxlite.config.jax_jaxlite_tier
  try:
    jaxlite.config.update("jax_jaxlite_tier", 1)
    jaxlite.config.update("jax_jaxlite_native", False)
    assert backend.get_backend().name == "numpy-tiled"
    jaxlite.config.update("jax_jaxlite_native", True)
    assert backend.get_backend().name == ("numpy-native" if HAVE_NUMBA else "numpy-tiled")
    jaxlite.config.update("jax_jaxlite_tier", 0)
    assert backend.get_backend().name == "numpy"
  finally:  # the flags as they were, and the backend they had installed
    jaxlite.config.update("jax_jaxlite_native", True)
    jaxlite.config.update("jax_jaxlite_tier", tier)
    backend.install_backend(prev)


# --- hot swapping (no numba needed) --------------------------------------------------------------

def test_hot_swap_compiles_once_hot_and_swaps(monkeypatch):
  monkeypatch.setattr(native, "HOT_CALLS", 3)
  built = []

  def build():
    built.append(1)
    return lambda x: ("native", x)
  h = native.HotSwap(lambda x: ("fallback", x), build, "k")
  assert [h(1), h(2)] == [("fallback", 1), ("fallback", 2)]
  assert native.wait(5) and not built  # not hot yet: nothing submitted
  assert h(3) == ("fallback", 3)  # the hot call itself still runs at once
  assert native.wait(60)
  assert built == [1] and h(4) == ("native", 4)
  h(5)
  assert built == [1]


def test_hot_swap_flag_off_uses_fallback(monkeypatch):
  monkeypatch.setattr(native, "HOT_CALLS", 1)
  h = native.HotSwap(lambda: "fallback", lambda: (lambda: "native"), "k")
  h()
  assert native.wait(60) and h() == "native"
  try:
    jaxlite.config.update("jax_jaxlite_native", False)
    assert h() == "fallback"
    h2 = native.HotSwap(lambda: "fallback", lambda: (lambda: "native"), "k2")
    h2(), h2()
    assert native.wait(60) and h2.native is None  # off: never compiled
  finally:
    jaxlite.config.update("jax_jaxlite_native", True)
  assert h() == "native"


@pytest.mark.parametrize("native_delay, fallback_delay, kept", [
    (0.0, 0.02, True), (0.02, 0.0, False),
    (0.018, 0.02, False)])  # 10% faster: under KEEP_RATIO's margin, tier 1 stays
def test_hot_swap_keeps_the_faster(native_delay, fallback_delay, kept, monkeypatch):
  import time
  monkeypatch.setattr(native, "HOT_CALLS", 2)
  monkeypatch.setattr(native, "TRIALS", 2)

  def timed(label, delay):
    def fn():
      time.sleep(delay)
      return label
    return fn
  h = native.HotSwap(timed("fallback", fallback_delay),
                     lambda: timed("native", native_delay), "k")
  h(), h()
  assert native.wait(60)
  assert [h(), h()] == ["native", "native"]  # the trials return their results
  assert h.rejected is not kept
  assert h() == ("native" if kept else "fallback")


def test_hot_swap_trials_wait_for_the_compiler(monkeypatch):
  """Calls while other kernels still compile run the native callable untimed: compiling holds
  the GIL, and trials timed then read slow (kernels were rejected for the compiler's sake)."""
  monkeypatch.setattr(native, "HOT_CALLS", 1)
  monkeypatch.setattr(native, "TRIALS", 2)
  h = native.HotSwap(lambda: "fallback", lambda: (lambda: "native"), "k")
  h()
  assert native.wait(60) and h.native is not None
  monkeypatch.setattr(native.COMPILER, "pending", 1)
  assert [h(), h(), h()] == ["native"] * 3 and h.trials == 0
  monkeypatch.setattr(native.COMPILER, "pending", 0)
  h(), h()
  assert h.trials == 2


def test_hot_swap_failed_build_keeps_fallback(monkeypatch):
  monkeypatch.setattr(native, "HOT_CALLS", 1)

  def build():
    raise RuntimeError("no compiler here")
  h = native.HotSwap(lambda: "fallback", build, "broken")
  h()
  assert native.wait(60)
  assert h() == "fallback" and isinstance(h.error, RuntimeError)


# --- generated source (no numba needed) ----------------------------------------------------------

def _kernels(f, *args):
  jaxpr, _ = passes.optimize(jaxlite.make_jaxpr(f)(*args))
  return [it for it in fusion.plan(jaxpr)[0] if isinstance(it, fusion.Kernel)]


def test_source_of_elementwise_chain():
  x = np.ones((64, 64), np.float32)
  (k,) = _kernels(lambda x: lax.tanh(x) * lax.exp(x) + lax.sin(x), x)
  src = codegen.plan(k, NATIVE.tables).source()
  assert "parallel=True, cache=True" in src and "for _i in prange(_n):" in src
  for call in ("_s.tanh_f32(x0)", "_s.exp_f32(x0)", "math.sin(x0)"):
    assert call in src
  assert src.count("o0[_i]") == 1
  with x64(True):
    (k64,) = _kernels(lambda x: lax.exp(x) + lax.tanh(x), x.astype(np.float64))
    src64 = codegen.plan(k64, NATIVE.tables).source()
    assert "_s.exp_f64(x0)" in src64 and "math.tanh(x0)" in src64  # no float64 tanh of ours


def test_row_reduction_source_is_a_row_loop():
  from jaxlite.scipy.special import logsumexp
  x = np.ones((64, 32), np.float32)
  (k,) = _kernels(lambda x: logsumexp(x, axis=1), x)
  src = codegen.plan(k, NATIVE.tables).source()
  assert src.count("for _j in range(32):") == 2  # the max, then the sum of exps
  assert "_acc = np.float32(-np.inf)" in src and "o0[_i] = " in src
  # vectorizable: NaN-propagating llvm.maximum, a sum whose adds may be reassociated, exp
  # without libm, unsigned element indices (no wraparound select)
  for part in ("_s.fmaximum(_acc, x0)", "_bacc = _s.radd(_bacc, ", "_s.exp_f32(",
               "_e = np.uint64(_i) * np.uint64(32) + np.uint64(_j)"):
    assert part in src


def test_long_row_sum_is_blocked():
  jnp = jaxlite.numpy
  x = np.ones((8, 1000), np.float32)
  (k,) = _kernels(lambda x: jnp.sum(x * x, axis=1), x)
  src = codegen.plan(k, NATIVE.tables).source()
  # float32 partial sums of 256 elements added into a float64 accumulator
  assert "for _b in range(0, 1000, 256):" in src
  assert "for _j in range(_b, min(_b + 256, 1000)):" in src
  assert "_acc = _acc + np.float64(_bacc)" in src


def test_kernel_of_three_element_counts_stays_on_tier1():
  x = np.ones((40, 30), np.float32)
  jnp = jaxlite.numpy
  (k,) = _kernels(lambda x: jnp.sum(x[:, :, None] * x[:, None, :3], axis=(1, 2)), x)
  with pytest.raises(codegen.Unsupported, match="neither"):
    codegen.plan(k, NATIVE.tables)


def test_rules_follow_the_registered_operation_not_the_name():
  # The code-text tables are keyed by primitive_kinds.operation: a primitive that only shares
  # lax.tanh's name is no tanh to the native backend, and lax.tanh prints as tanh.
  from jaxlite._src.base import core
  from jaxlite._src.base import primitive_kinds as pk
  twin = core.Primitive("tanh")
  with pytest.raises(codegen.Unsupported, match="tanh on float32"):
    codegen.statement(twin, "v0", ["x0"], [np.float32], np.float32, {})
  assert pk.operation[lax.tanh_p] == "tanh"
  assert codegen.statement(lax.tanh_p, "v0", ["x0"], [np.float32], np.float32, {}) == \
      ["v0 = np.float32(_s.tanh_f32(x0))"]


@pytest.mark.parametrize("value, dtype, want", [
    (np.nan, np.float32, "np.float32(np.nan)"), (-np.inf, np.float64, "np.float64(-np.inf)"),
    (0.1, np.float32, "np.float32(0.10000000149011612)"), (-0.0, np.float32, "np.float32(-0.0)"),
    (2**32 - 1, np.uint32, "np.uint32(4294967295)"), (True, np.bool_, "True")])
def test_literals_are_exact(value, dtype, want):
  assert codegen.literal(value, dtype) == want


# --- compiled kernels against tier 0 -------------------------------------------------------------

F_EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997,
           1e-8, -3e-3, 0.999, -0.9999, 3.0, -7.25, 1e10, -1e10, 65000.0, 1e-40, 88.5, -104.0]
I_EDGES = [0, 1, -1, 2, -2, 5, -5, 7, 31, 32, 33, 63, 64, 100, -100, 127, -128]


def edge_values(shape, dtype, offset=0):
  dtype = np.dtype(dtype)
  n = int(np.prod(shape))
  if dtype == np.bool_:
    return ((np.arange(n) + offset) % 3 == 0).reshape(shape)
  if dtype.kind == "f":
    flat = np.array([F_EDGES[(i * 7 + offset) % len(F_EDGES)] for i in range(n)])
    return flat.astype(dtype).reshape(shape)
  info = np.iinfo(dtype)
  edges = I_EDGES + [int(info.min), int(info.max), int(info.max) - 1]
  flat = [edges[(i * 5 + offset) % len(edges)] for i in range(n)]
  return np.array(flat, np.int64).astype(dtype).reshape(shape)  # wraps into unsigned


def _float_ops(x, y, dtype):
  bits = np.dtype(f"i{np.dtype(dtype).itemsize}")
  wide = jaxlite.config.jax_enable_x64  # 64-bit targets only where they exist
  outs = [lax.neg(x), lax.sign(x), lax.floor(x), lax.ceil(x), lax.round(x),
          lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), lax.is_finite(x), lax.abs(x),
          lax.square(x), lax.integer_pow(x, 3), lax.integer_pow(x, -2), lax.sqrt(x),
          lax.rsqrt(x), lax.exp(x), lax.exp2(x), lax.log(x), lax.log1p(x), lax.expm1(x),
          lax.tanh(x), lax.logistic(x), lax.sin(x), lax.cos(x), lax.tan(x), lax.asin(x),
          lax.acos(x), lax.atan(x), lax.sinh(x), lax.cosh(x), lax.asinh(x), lax.acosh(x),
          lax.atanh(x), lax.erf(x), lax.erfc(x),
          lax.add(x, y), lax.sub(x, y), lax.mul(x, y), lax.div(x, y), lax.rem(x, y),
          lax.pow(x, y), lax.max(x, y), lax.min(x, y), lax.atan2(x, y), lax.eq(x, y),
          lax.ne(x, y), lax.lt(x, y), lax.le(x, y), lax.gt(x, y), lax.ge(x, y),
          lax.select_n(lax.lt(x, y), x, y), lax.clamp(np.array(-1, dtype), x, np.array(2, dtype)),
          lax.convert_element_type(x, np.int32), lax.convert_element_type(x, np.uint8),
          lax.convert_element_type(x, np.int64 if wide else np.int16),
          lax.convert_element_type(x, np.bool_),
          lax.convert_element_type(x, np.float64 if wide and dtype == np.float32 else
                                   np.float32 if wide else np.uint16),
          lax.bitcast_convert_type(x, bits), lax.mul(x, np.array(3, dtype))]
  if dtype == np.float32:
    outs.append(lax.erf_inv(lax.mul(x, np.array(1e-10, dtype))))
    outs.append(lax.erf_inv(lax.clamp(np.array(-1, dtype), x, np.array(1, dtype))))
  return outs


def _int_ops(x, y, dtype):
  dtype = np.dtype(dtype)
  w = dtype.itemsize * 8
  shift = lax.rem(y, np.array(w + 3, dtype)) if dtype.kind == "u" else y
  mag = x if dtype.kind == "u" else lax.abs(x)
  outs = [lax.neg(x), lax.sign(x), mag, lax.bitwise_not(x), lax.square(x),
          lax.integer_pow(x, 3), lax.add(x, y), lax.sub(x, y), lax.mul(x, y), lax.div(x, y),
          lax.rem(x, y), lax.max(x, y), lax.min(x, y), lax.bitwise_and(x, y),
          lax.bitwise_or(x, y), lax.bitwise_xor(x, y), lax.eq(x, y), lax.lt(x, y),
          lax.ge(x, y), lax.shift_left(x, shift), lax.shift_right_arithmetic(x, shift),
          lax.shift_right_logical(x, shift), lax.convert_element_type(x, np.float32),
          lax.convert_element_type(x, np.int8), lax.convert_element_type(x, np.uint32),
          lax.convert_element_type(x, np.bool_),
          lax.clamp(np.array(0 if dtype.kind == "u" else -3, dtype), x, np.array(40, dtype)),
          lax.select_n(lax.convert_element_type(lax.rem(mag, np.array(3, dtype)),
                                                np.int32), x, y, lax.add(x, y))]
  if dtype.itemsize == 4:
    outs.append(lax.bitcast_convert_type(x, np.float32))
  return outs


def _bool_ops(x, y, dtype):
  return [lax.bitwise_not(x), lax.bitwise_and(x, y), lax.bitwise_or(x, y),
          lax.bitwise_xor(x, y), lax.eq(x, y), lax.ne(x, y), lax.select_n(x, y, lax.bitwise_not(y)),
          lax.convert_element_type(x, np.int32), lax.convert_element_type(x, np.float32)]


_EXACT_FLOAT = {"neg", "sign", "floor", "ceil", "round", "abs", "square", "add", "sub", "mul",
                "div", "rem", "max", "min", "select_n", "clamp", "convert_element_type", "sqrt"}


def _ulps(a, b):
  bits = np.dtype(f"i{a.dtype.itemsize}")
  ia, ib = a.view(bits).astype(np.int64), b.view(bits).astype(np.int64)
  # Map the sign-magnitude bit patterns onto one ordered integer line.
  top = np.int64(1) << (a.dtype.itemsize * 8 - 1)
  ia = np.where(ia < 0, -(ia + top), ia)
  ib = np.where(ib < 0, -(ib + top), ib)
  return np.abs(ia - ib)


def _check(name, got, want):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, name
  if want.dtype.kind != "f":
    np.testing.assert_array_equal(got, want, err_msg=name)
    return
  nan = np.isnan(want)
  np.testing.assert_array_equal(np.isnan(got), nan, err_msg=name)
  g, w = got[~nan], want[~nan]
  if name in _EXACT_FLOAT:  # correctly rounded in both: the same bits, signs of zero included
    np.testing.assert_array_equal(g.view(f"u{g.dtype.itemsize}"), w.view(f"u{w.dtype.itemsize}"),
                                  err_msg=name)
  else:
    assert _ulps(g, w).max(initial=0) <= 8, (name, g[_ulps(g, w) > 8], w[_ulps(g, w) > 8])


def _compile_both(f, *args):
  closed = jaxlite.make_jaxpr(f)(*args)
  return closed, TIER0.compile(closed), NATIVE.compile(closed)


def _run_native(f, args, monkeypatch):
  """Tier 0's outputs, the native executable's (every kernel compiled first), and the names of
  the primitives whose outputs these are."""
  monkeypatch.setattr(native, "HOT_CALLS", 1)
  monkeypatch.setattr(tiled_executor, "SMALL_ELEMENTS", 0)
  closed, exe0, exe = _compile_both(f, *args)
  kernels = exe.__jaxlite_kernels__
  assert kernels and all(isinstance(k, native.HotSwap) for k in kernels), \
      [codegen.plan(k, NATIVE.tables) for k in _kernels(f, *args)]
  exe(*args)
  assert native.wait(600)
  assert all(k.native is not None for k in kernels), [k.error for k in kernels]
  by_var = {e.outvars[0]: e.primitive.name for e in closed.jaxpr.eqns}
  names = [by_var.get(v, "input") for v in closed.jaxpr.outvars]
  return exe0(*args), exe(*args), names


_CASES = [(np.float32, _float_ops, "same"), (np.float32, _float_ops, "zero-size"),
          (np.float32, _float_ops, "broadcast"), (np.float64, _float_ops, "same"),
          (np.int32, _int_ops, "same"), (np.int32, _int_ops, "broadcast"),
          (np.int8, _int_ops, "same"), (np.int64, _int_ops, "same"),
          (np.uint8, _int_ops, "same"), (np.uint32, _int_ops, "same"),
          (np.uint64, _int_ops, "same"), (np.bool_, _bool_ops, "same"),
          (np.bool_, _bool_ops, "zero-size")]


@pytest.fixture(scope="module")
def table_cache(tmp_path_factory):
  # One cache for the table: a zero-size case has its same-shape case's source (the element
  # count is an argument), so it loads that kernel instead of compiling it again.
  return tmp_path_factory.mktemp("native-table")


@needs_numba
@pytest.mark.parametrize("dtype, ops, layout", _CASES,
                         ids=[f"{np.dtype(d).name}-{lay}" for d, _, lay in _CASES])
def test_primitive_table_matches_tier0(dtype, ops, layout, table_cache, monkeypatch):
  monkeypatch.setenv("JAXLITE_NATIVE_CACHE", str(table_cache))
  # float32-same compiles as in production (threaded); the others test the same scalar
  # statements in a serial loop, which compiles three times faster.
  monkeypatch.setattr(codegen, "PARALLEL", dtype == np.float32 and layout == "same")
  shape = (3, 0) if layout == "zero-size" else (6, 25)
  with x64(np.dtype(dtype).itemsize == 8):
    x = edge_values(shape, dtype)
    if layout == "broadcast":  # a row broadcast against every row (through broadcast_in_dim)
      row = edge_values((1, shape[1]), dtype, offset=3)

      def f(x, row):
        return ops(x, lax.broadcast_in_dim(row, shape, (0, 1)), dtype)
      args = (x, row)
    else:
      def f(x, y):
        return ops(x, y, dtype)
      args = (x, edge_values(shape, dtype, offset=11))
    want, got, names = _run_native(f, args, monkeypatch)
  assert len(want) == len(got) and len(want) > 5
  for name, g, w in zip(names, got, want):
    _check(name, g, w)


def _reductions(x):
  from jaxlite.scipy.special import logsumexp
  jnp = jaxlite.numpy
  if x.dtype == np.bool_:
    return [jnp.all(x, axis=1), jnp.any(x, axis=1)]
  outs = [jnp.sum(x * x, axis=1), jnp.max(x, axis=1), jnp.min(x, axis=1),
          jnp.prod(x, axis=1), x - jnp.max(x, axis=1, keepdims=True)]
  if x.dtype.kind == "f":
    outs += [logsumexp(x, axis=1), jaxlite.nn.softmax(x, axis=-1)]
  return outs


def _reductions_3d(x):
  # Over two trailing axes; one kernel has one element count, so this is a jaxpr of its own.
  jnp = jaxlite.numpy
  x3 = x.reshape(x.shape[0], 5, -1)
  if x.dtype == np.bool_:
    return [jnp.all(x3, axis=(1, 2))]
  return [jnp.sum(x3 * x3, axis=(1, 2))]


_RED_CASES = [np.float32, np.int32, np.uint8, np.bool_]


@needs_numba
@pytest.mark.parametrize("dtype", _RED_CASES, ids=[np.dtype(d).name for d in _RED_CASES])
def test_row_reductions_match_tier0(dtype, table_cache, monkeypatch):
  monkeypatch.setenv("JAXLITE_NATIVE_CACHE", str(table_cache))
  monkeypatch.setattr(codegen, "PARALLEL", False)
  rng = np.random.default_rng(0)
  if dtype == np.bool_:
    x = rng.random((40, 30)) < 0.9
  elif np.dtype(dtype).kind == "f":
    x = rng.standard_normal((40, 30)).astype(dtype)
    x[0, 3], x[1, 4], x[2, 5], x[3, :] = np.nan, np.inf, -np.inf, 0.0
  else:
    x = rng.integers(0, 40, (40, 30)).astype(dtype)
  want, got, names = _run_native(_reductions, (x,), monkeypatch)
  want3, got3, names3 = _run_native(_reductions_3d, (x,), monkeypatch)
  for name, g, w in zip(names + names3, got + got3, want + want3):
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype and g.shape == w.shape, name
    if w.dtype.kind == "f":
      np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
    else:
      np.testing.assert_array_equal(g, w, err_msg=name)


# --- vectorizable float32 transcendentals (support.py) -------------------------------------------

_VECTOR_F32 = ("exp", "log", "log1p", "expm1", "tanh")


def _sweep_values():
  """Random bit patterns (every class: subnormals, NaNs, infinities), a dense band of the
  float32s around each function's thresholds and special points, and the edge values."""
  rng = np.random.default_rng(15)
  bits = rng.integers(0, 1 << 32, 1 << 21, dtype=np.uint64).astype(np.uint32)
  bands = [np.arange(a, b, dtype=np.uint32) for a, b in (
      (0, 1 << 16),                              # +0 and the smallest subnormals
      (0x007F0000, 0x00810000),                  # subnormal / normal boundary
      (0x3F700000, 0x3F880000),                  # around 1 (log's and log1p's small results)
      (0x33000000, 0x33100000), (0xB3000000, 0xB3100000),  # |x| ~ 2**-25 (log1p, exp ~ 1)
      (0xBF7F0000, 0xBF800001),                  # x -> -1 (log1p -> -inf)
      (0x42B00000, 0x42B20000),                  # 88 .. 89: exp overflow
      (0x3F1E0000, 0x3F220000), (0xBF1E0000, 0xBF220000),  # |x| ~ 0.625: tanh's two forms
      (0x3F7F0000, 0x3F810000), (0xBF7F0000, 0xBF810000),  # |x| ~ 1: expm1's two forms
      (0xC2AE0000, 0xC2D00000))]                 # -87 .. -104: exp's subnormal results
  edges = np.array(F_EDGES + [88.72283, 88.72284, -87.33654, -103.972, -103.973, 3.4028235e38,
                              -3.4028235e38, 1e-45, -1e-45, 1.1754942e-38, -1.0, -0.99999994],
                   np.float32)
  return np.concatenate([bits.view(np.float32)] + [b.view(np.float32) for b in bands] + [edges])


@pytest.fixture(scope="module", params=[True, False], ids=["fma", "no-fma"])
def vector_f32(request):
  """Serial numba loops over support's exp_f32, log_f32, log1p_f32, expm1_f32, tanh_f32, with
  fused multiply-adds (where the CPU has them) and without (CPUs without FMA)."""
  pytest.importorskip("numba", reason="numba is not installed (no wheel for this platform)")
  from numba import njit
  from jaxlite._src.compiler.native import support
  if request.param and not support._HAS_FMA:
    pytest.skip("this CPU has no FMA")
  mp = pytest.MonkeyPatch()
  request.addfinalizer(mp.undo)
  # read when a loop below compiles (the helpers are inlined into it, `inline="always"`)
  mp.setattr(support, "_HAS_FMA", request.param)

  def compile_loop(fn):
    @njit("void(float32[::1], float32[::1])", error_model="numpy")
    def loop(a, o):
      for i in range(a.size):
        o[i] = fn(a[i])
    return loop
  loops = {name: compile_loop(getattr(support, f"{name}_f32")) for name in _VECTOR_F32}
  loops["fused"] = request.param
  return loops


@needs_numba
@pytest.mark.parametrize("name", _VECTOR_F32)
def test_vector_f32_transcendentals_match_numpy(name, vector_f32):
  x = _sweep_values()
  got = np.empty_like(x)
  vector_f32[name](x, got)
  with np.errstate(all="ignore"):
    want = getattr(np, name)(x)  # tier 0
    exact = getattr(np, name)(x.astype(np.float64)).astype(np.float32)  # correctly rounded
  nan = np.isnan(want)
  np.testing.assert_array_equal(np.isnan(got), nan)
  g, w, e = got[~nan], want[~nan], exact[~nan]
  limit = 2 if name == "expm1" else 1  # expm1 = exp - 1 just above |x| = 1: 2 ulp
  assert _ulps(g, e).max() <= limit, (x[~nan][_ulps(g, e) > limit], g[_ulps(g, e) > limit])
  assert _ulps(g, w).max() <= 4  # JAX-COMPAT allows 8
  # infinities and zeros exactly, signs included (-0.0 -> -0.0, exp(-inf) = +0, log(0) = -inf)
  special = ~np.isfinite(w) | (w == 0)
  np.testing.assert_array_equal(g[special].view(np.uint32), w[special].view(np.uint32))


@needs_numba
def test_vector_f32_transcendentals_vectorize(vector_f32):
  import platform
  import re
  if platform.machine() not in ("x86_64", "AMD64"):
    pytest.skip("checks x86 packed instructions")
  for name in _VECTOR_F32:
    asm = "\n".join(vector_f32[name].inspect_asm().values())
    # packed single-precision multiplies (SSE mulps, AVX vmulps): the loop runs several lanes
    assert re.search(r"\bv?mulps\b", asm), name
    assert not re.search(r"call\w*\s+\S*(exp|log|tanh)", asm), name  # no libm call left
    assert bool(re.search(r"\bvfn?madd\w*ps\b", asm)) == vector_f32["fused"], name


@needs_numba
def test_row_kernels_vectorize(cache_dir, monkeypatch):
  """logsumexp's row kernel: the max and the sum of exps run packed (lanes of float32
  maxima, float32 exps and partial sums)."""
  import platform
  import re
  if platform.machine() not in ("x86_64", "AMD64"):
    pytest.skip("checks x86 packed instructions")
  from jaxlite.scipy.special import logsumexp
  x = np.ones((64, 512), np.float32)
  (k,) = _kernels(lambda x: logsumexp(x, axis=1), x)
  kernel = native_backend.build_kernel(k, NATIVE.tables)
  asm = "\n".join(kernel.fn.inspect_asm().values())
  for op in ("maxps", "addps", "mulps"):
    assert re.search(rf"\bv?{op}\b", asm), op


_VECTOR_F64 = ("exp", "log", "log1p")


@needs_numba
@pytest.mark.parametrize("name", _VECTOR_F64)
def test_vector_f64_transcendentals_match_numpy(name):
  from numba import njit
  from jaxlite._src.compiler.native import support
  fn = getattr(support, f"{name}_f64")

  @njit("void(float64[::1], float64[::1])", error_model="numpy")
  def loop(a, o):
    for i in range(a.size):
      o[i] = fn(a[i])
  rng = np.random.default_rng(64)
  n = 1 << 20
  x = np.concatenate([
      rng.integers(0, 1 << 64, n, dtype=np.uint64).view(np.float64),  # every class
      rng.uniform(-750, 720, n),  # exp's whole range, overflow and subnormal results included
      rng.uniform(-1, 3, n), np.exp(rng.uniform(-745, 709, n)),
      np.array(F_EDGES + [709.78, 709.79, -745.1, -745.2, 5e-324, 2.2250738585072014e-308,
                          1.7976931348623157e308, -1 + 2.0**-53, 2.0**-60, -2.0**-60])])
  got = np.empty_like(x)
  loop(x, got)
  with np.errstate(all="ignore"):
    want = getattr(np, name)(x)
  nan = np.isnan(want)
  np.testing.assert_array_equal(np.isnan(got), nan)
  g, w = got[~nan], want[~nan]
  assert _ulps(g, w).max() <= 2, (x[~nan][_ulps(g, w) > 2], g[_ulps(g, w) > 2])
  special = ~np.isfinite(w) | (w == 0)
  np.testing.assert_array_equal(g[special].view(np.uint64), w[special].view(np.uint64))


def _fma_operands(dtype, rng):
  dtype = np.dtype(dtype)
  info = np.finfo(dtype)
  n = 1 << 16
  a, b, c = (rng.standard_normal(n).astype(dtype) * dtype.type(3) for _ in range(3))
  edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, float(info.max),
                    float(info.tiny), float(info.smallest_subnormal), 1e-30, -1e30], dtype)
  k = len(edges)
  # every pair of edges in a and c, huge and tiny products (overflow, subnormal results)
  a[:k * k], c[:k * k] = np.repeat(edges, k), np.tile(edges, k)
  a[k * k:2 * k * k] = np.repeat(edges, k) * dtype.type(1e3)
  c[k * k:2 * k * k] = -np.tile(edges, k)
  return a, b, c


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_matches_tier0_bits(dtype):
  """support.fma_f32/f64 against random.fused_multiply_add (tier 0's fma kernel), bit for bit,
  on spans that are not powers of two (the emulated fma) and that are (a * b + c)."""
  from numba import njit
  from jaxlite._src.rng import random as random_lib
  from jaxlite._src.compiler.native import support
  fn = support.fma_f32 if dtype == np.float32 else support.fma_f64
  sig = "void({0}[::1], {0}[::1], {0}[::1], {0}[::1])".format(np.dtype(dtype).name)

  @njit(sig, error_model="numpy")
  def loop(a, b, c, o):
    for i in range(a.size):
      o[i] = fn(a[i], b[i], c[i])
  rng = np.random.default_rng(7)
  a, b, c = _fma_operands(dtype, rng)
  k = 12
  b[:4 * k * k] = np.resize(np.array([1.1, -3.7, 1e-3, np.inf, -np.nan, 1e30], dtype), 4 * k * k)
  pow2 = np.ldexp(np.ones(b.size, dtype), rng.integers(-20, 20, b.size)).astype(dtype)
  pow2[:3] = [0.0, -0.0, np.finfo(dtype).smallest_subnormal]
  for span in (b, pow2 * np.where(rng.random(b.size) < 0.5, -1, 1).astype(dtype)):
    with np.errstate(all="ignore"):
      want = random_lib.fused_multiply_add(a, span, c)
    got = np.empty_like(a)
    loop(a, span, c, got)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bits = f"u{np.dtype(dtype).itemsize}"
    np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits))


def test_thread_count_adapts():
  t = codegen._Threads(2)
  picks = [t.pick() for _ in range(6)]
  assert picks == [2, 1, 2, 1, 2, 1]
  for m, sec in zip(picks, (5.0, 1.0, 4.0, 2.0, 6.0, 3.0)):
    t.record(m, sec)
  assert t.pick() == 1  # the faster
  t.record(1, 1.0)
  for k in range(1, 100):  # steady: the other count is tried REPROBE calls after the choice
    m = t.pick()
    if m == 2:
      break
    t.record(1, 1.0)
  assert k == t.REPROBE
  t.record(2, 0.5)  # faster than one thread's latest call: switch
  assert t.current == 2 and t.pick() == 2
  # the current count slows down (a starved second thread): the other is tried within 4 calls
  t.record(2, 8.0)
  tried = []
  for _ in range(4):
    m = t.pick()
    tried.append(m)
    t.record(m, 8.0 if m == 2 else 1.0)
  assert 1 in tried and t.current == 1
  assert codegen._Threads(1).modes == (1,)
  # one slow call of the current count (a hiccup) does not hand the kernel to the slower count:
  # the try is compared with the median of its latest three calls
  t = codegen._Threads(2)
  for m, sec in zip([t.pick() for _ in range(6)], (1.0, 5.0) * 3):
    t.record(m, sec)
  assert t.pick() == 2
  t.record(2, 1.0)
  for k in range(200):
    m = t.pick()
    t.record(m, 5.0 if m == 1 else 8.0 if k == 30 else 1.0)  # call 30: a hiccup
    assert t.current == 2
  assert t.wait > t.REPROBE  # its tries lost, each doubling the wait
  one = codegen._Threads(1)
  assert [one.pick() for _ in range(40)] == [1] * 40



# --- threefry ------------------------------------------------------------------------------------

@needs_numba
@pytest.mark.parametrize("key, n", [((0, 0), 1 << 16), ((0x12345678, 0xDEADBEEF), 100003),
                                    ((2**32 - 1, 7), 3)])
def test_threefry_bits_equal_tier0(key, n, table_cache, monkeypatch):
  monkeypatch.setenv("JAXLITE_NATIVE_CACHE", str(table_cache))  # compiled once for the three
  bits = native_backend._build_threefry()
  np.testing.assert_array_equal(bits(*key, n), prng_threefry._bits_partitionable(*key, 32, (n,)))


@needs_numba
def test_random_normal_native_matches_tier0(cache_dir, monkeypatch):
  monkeypatch.setattr(native, "HOT_CALLS", 1)
  monkeypatch.setattr(native_backend, "THREEFRY_BITS32", native.HotSwap(
      native_backend.THREEFRY_BITS32.fallback, native_backend._build_threefry, "threefry",
      measure=False))
  key = jaxlite.random.key(42)
  f = lambda k: jaxlite.random.normal(k, (300, 1000))  # noqa: E731
  closed = jaxlite.make_jaxpr(f)(key)
  keys = prng._as_keys(key)
  want = TIER0.compile(closed)(keys)[0]
  exe = NATIVE.compile(closed)
  exe(keys)
  assert native.wait(600)
  assert native_backend.THREEFRY_BITS32.native is not None
  swapped = [k for k in exe.__jaxlite_kernels__ if isinstance(k, native.HotSwap)]
  assert swapped and all(k.native is not None for k in swapped), [k.error for k in swapped]
  # the sampler (shift, or, bitcast, sub, fma, max, erf_inv, mul) is one native kernel
  assert any("_s.fma_f32(" in k.native.source and "_s.erf_inv_f32(" in k.native.source
             for k in swapped)
  got = exe(keys)[0]
  # Not bit for bit: tier 0's float32 log1p is NumPy's (SIMD) one, the kernel's is support's;
  # both within an ulp of the correctly rounded log1p, not always the same ulp. JAX-COMPAT
  # §10 allows random.normal 4 ulp (JAX's own is 3 from tier 0's).
  assert _ulps(got, want).max() <= 4
  bits = jaxlite.make_jaxpr(lambda k: jaxlite.random.bits(k, (300, 1000)))(key)
  np.testing.assert_array_equal(NATIVE.compile(bits)(keys)[0], TIER0.compile(bits)(keys)[0])


# --- the disk cache ------------------------------------------------------------------------------

_SMALL_KERNEL = """from numba import njit

@njit('void(uint32[::1], uint32[::1])', cache=True)
def kernel(a, o):
  for i in range(a.size):
    o[i] = a[i] * a[i] + 7
"""


@needs_numba
def test_cache_reuses_and_rejects_tampered_entry(cache_dir):
  from jaxlite._src.compiler.native import cache
  source = _SMALL_KERNEL
  fn, hit = cache.load(source)
  assert not hit
  entry = cache_dir / cache.key(source)
  assert cache.verify(str(entry))
  fn, hit = cache.load(source)
  assert hit  # loaded, not compiled
  a = np.arange(1000, dtype=np.uint32)
  want = a * a + np.uint32(7)
  for victim in sorted(p for p in entry.rglob("*") if p.is_file() and p.name != cache.MANIFEST):
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one changed byte
    victim.write_bytes(bytes(data))
    assert not cache.verify(str(entry))
    fn, hit = cache.load(source)
    assert not hit, f"tampered {victim.name} was loaded"
    assert cache.verify(str(entry))
    out = np.empty(1000, np.uint32)
    fn(a, out)
    np.testing.assert_array_equal(out, want)
  (entry / "extra.bin").write_bytes(b"x")  # a file the manifest does not list
  assert not cache.verify(str(entry))


@needs_numba
def test_cache_key_covers_source_and_versions(cache_dir):
  from jaxlite._src.compiler.native import cache
  a, b = native_backend.threefry_source(), native_backend.threefry_source() + "\n"
  assert cache.key(a) != cache.key(b) and cache.key(a) == cache.key(a)
  versions = cache._versions()
  import numba
  assert numba.__version__ in versions and np.__version__ in versions
  assert jaxlite.__version__ in versions


@needs_numba
def test_jit_end_to_end_swaps_in(cache_dir, monkeypatch):
  monkeypatch.setattr(native, "HOT_CALLS", 2)
  calls = []
  build = native_backend.build_kernel

  def counting_build(k, tables, reuse=None):
    kernel = build(k, tables, reuse)
    return lambda *a: (calls.append(1), kernel(*a))[1]
  monkeypatch.setattr(native_backend, "build_kernel", counting_build)
  prev = backend.install_backend(NATIVE)
  try:
    jnp = jaxlite.numpy
    f = jaxlite.jit(lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x))
    x = np.linspace(-3, 3, 1 << 18, dtype=np.float32).reshape(512, 512)
    first = np.asarray(f(x))
    f(x)  # hot: compiled in the background, this call still runs on tier 1
    assert native.wait(600) and not calls
    again = np.asarray(f(x))
    assert calls == [1]
    assert _ulps(again, first).max() <= 8
  finally:
    backend.install_backend(prev)


@needs_numba
@pytest.mark.parametrize("case", ["elementwise", "rows"])
def test_outputs_go_into_dying_operands_as_tier1s(cache_dir, case):
  """A native kernel writes an output into the operand buffer tier 1's kernel would (a dying
  buffer the program owns: an SGD update `w - lr * g` into g) when the loop reads that operand
  element by element; values equal tier 1's, and a spread operand is never written into."""
  from jaxlite.scipy.special import logsumexp
  g = np.linspace(-3, 3, 64 * 48, dtype=np.float32).reshape(64, 48)
  w = np.cos(g)
  if case == "elementwise":
    f, args = (lambda w, g: w - 0.1 * lax.exp(g)), (w, g)
  else:
    f, args = (lambda w, g: (g - logsumexp(g, axis=1, keepdims=True)) * w), (w, g)
  jaxpr, _ = passes.optimize(jaxlite.make_jaxpr(f)(*args))
  (k,) = [it for it in fusion.plan(jaxpr)[0] if isinstance(it, fusion.Kernel)]
  value_of = {v: a for v, a in zip(jaxpr.invars, args)}
  operand_of_g = next(j for j, (v, _) in enumerate(k.inputs) if v is jaxpr.invars[1])
  kernel = native_backend.build_kernel(k, NATIVE.tables, reuse=(operand_of_g,))
  assert kernel.reuse == (operand_of_g,)
  # one argument loaded and stored in place (a separate output argument aliasing it would fail
  # LLVM's overlap check at run time and run the scalar loop)
  (s,) = [s for s, spec in enumerate(kernel.specs) if spec[0] == operand_of_g]
  assert f"a{s}[_e] = " in kernel.source or f"a{s}[_i] = " in kernel.source
  assert ", o0)" not in kernel.source
  operands = [np.array(value_of[v]) for v, _ in k.inputs]
  donor = operands[operand_of_g]
  (out,) = kernel(*operands)
  assert np.shares_memory(out, donor)
  want = np.asarray(jaxlite.jit(f)(w, g))
  np.testing.assert_allclose(out, want, rtol=4e-7, atol=1e-7)
  # an operand read spread over the rows (w of shape (48,) broadcast) is not a donor
  spread = np.cos(g[0])
  (k2,) = _kernels(lambda w, g: g * w, spread, g)
  j_spread = next(j for j, (v, _) in enumerate(k2.inputs) if v.aval.shape == (1, 48))
  k2_native = native_backend.build_kernel(k2, NATIVE.tables, reuse=(j_spread,))
  assert k2_native.reuse == (-1,)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_spread_operands_are_read_where_they_are(dtype, cache_dir, monkeypatch):
  """An operand spread over the rows (a bias of shape (1, m), or broadcast_in_dim of an (m,)
  row) or over a row (one value per row, (n, 1)) is read in place by a loop over rows and one
  over the row, never copied out to the kernel's size; values equal tier 0's."""
  monkeypatch.setattr(codegen, "PARALLEL", False)
  rng = np.random.default_rng(3)
  x = (rng.standard_normal((24, 40)) * 8).astype(dtype)
  bias = (rng.standard_normal((1, 40)) * 8).astype(dtype)
  row = (rng.standard_normal(40) * 8).astype(dtype)
  per_row = (rng.standard_normal((24, 1)) * 8).astype(dtype)

  def f(x, bias, row, per_row):
    h = lax.max(x + bias, lax.broadcast_in_dim(row, x.shape, (1,)))
    return h * per_row - bias, h > per_row
  (k,) = _kernels(f, x, bias, row, per_row)
  plan = codegen.plan(k, NATIVE.tables)
  assert all(kind == "flat" for _, kind, _, _ in plan.specs)
  src = plan.source()
  assert "for _j in range(40):" in src and "[_j]" in src
  want, got, _ = _run_native(f, (x, bias, row, per_row), monkeypatch)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(g, w)


@needs_numba
def test_small_kernels_go_native(cache_dir, monkeypatch):
  """Under tier 1's tiling size a fused kernel of 3+ eqns (or 16K+ elements) is a native
  kernel too, on one thread (tier 1 runs it as tier 0's lines): the MLP step's bias + relu +
  mask and its softmax. Values equal tier 0's."""
  monkeypatch.setattr(native, "HOT_CALLS", 1)
  rng = np.random.default_rng(0)
  big = rng.standard_normal((512, 512)).astype(np.float32)  # the program has a big value
  x = rng.standard_normal((128, 100)).astype(np.float32)
  w = rng.standard_normal((100, 10)).astype(np.float32)
  b = rng.standard_normal(10).astype(np.float32)

  def f(big, x, w, b):
    logits = jaxlite.nn.relu(x @ w + b)
    return jaxlite.nn.log_softmax(logits), big * 2.0 + 1.0, logits > 0
  closed, exe0, exe = _compile_both(f, big, x, w, b)
  small = [k for k in exe.__jaxlite_kernels__ if isinstance(k, native.HotSwap)
           and k.fallback.n == 128]
  assert small, exe.__jaxlite_source__
  exe(big, x, w, b)
  assert native.wait(600)
  assert all(k.native is not None and k.native.threads.modes == (1,) for k in small), \
      [k.error for k in small]
  assert "parallel=False" in small[0].native.source
  monkeypatch.setattr(native, "TRIALS", 0)  # the native kernels, kept or not
  want, got = exe0(big, x, w, b), exe(big, x, w, b)
  assert all(k.native is not None for k in small)
  np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=2e-6)
  for g, w_ in zip(got[1:], want[1:]):
    np.testing.assert_array_equal(g, w_)


@needs_numba
def test_kernels_split_by_size_for_native_loops(cache_dir, monkeypatch):
  """An SGD update of two weights with 512 rows is one tier-1 kernel (values of two sizes, as
  the MLP step's 512x512 and 512x10 layers); the native backend plans a kernel per size, so
  each update can be a native loop."""
  rng = np.random.default_rng(1)
  w, gw = (rng.standard_normal((512, 300)).astype(np.float32) for _ in range(2))
  b, gb = (rng.standard_normal((512, 10)).astype(np.float32) for _ in range(2))

  def f(w, b, gw, gb):
    return w - 0.01 * gw, b - 0.01 * gb
  jaxpr, _ = passes.optimize(jaxlite.make_jaxpr(f)(w, b, gw, gb))
  (whole,) = [it for it in fusion.plan(jaxpr)[0] if isinstance(it, fusion.Kernel)]
  with pytest.raises(codegen.Unsupported):
    codegen.plan(whole, NATIVE.tables)
  parts = [it for it in fusion.plan(jaxpr, split_sizes=True)[0]
           if isinstance(it, fusion.Kernel)]
  assert sorted(k.elements for k in parts) == [512 * 10, 512 * 300]
  codegen.plan(max(parts, key=lambda k: k.elements), NATIVE.tables)
  monkeypatch.setattr(native, "HOT_CALLS", 1)
  closed, exe0, exe = _compile_both(f, w, b, gw, gb)
  exe(w, b, gw, gb)
  assert native.wait(600)
  monkeypatch.setattr(native, "TRIALS", 0)
  for g, want in zip(exe(w, b, gw, gb), exe0(w, b, gw, gb)):
    np.testing.assert_array_equal(g, want)


@needs_numba
def test_values_of_one_per_row_plan_a_row_loop(cache_dir, monkeypatch):
  """Per-example grads' kernel makes one residual per example and spreads it over the
  example's row: a loop over rows (the residual computed once per row) with an inner loop,
  values equal tier 0's (was tier 1 only: two element counts)."""
  monkeypatch.setattr(codegen, "PARALLEL", False)
  rng = np.random.default_rng(2)
  w, x = rng.standard_normal(64).astype(np.float32), rng.standard_normal((32, 64)).astype(
      np.float32)
  y = rng.standard_normal(32).astype(np.float32)

  def f(w, b, x, y):
    r = 2.0 * (x @ w + b - y)
    return r[:, None] * x, r
  (k,) = _kernels(f, w, np.float32(0.5), x, y)
  src = codegen.plan(k, NATIVE.tables).source()
  assert "for _j in range(64):" in src
  want, got, _ = _run_native(f, (w, np.float32(0.5), x, y), monkeypatch)
  for g, w_ in zip(got, want):
    np.testing.assert_array_equal(g, w_)


@needs_numba
def test_native_kernels_take_their_share_while_programs_share_the_cores(monkeypatch):
  # While CPU devices run programs at once (machine.sharing), a native kernel's "all threads"
  # and the native threefry run on this program's share of numba's threads, with the same bits;
  # numba's count is set back after each call.
  import numba
  from jaxlite._src.base import machine
  seen = []
  real = numba.set_num_threads
  monkeypatch.setattr(numba, "set_num_threads", lambda n: (seen.append(n), real(n))[1])
  f = jaxlite.jit(lambda k: jaxlite.random.normal(k, (1 << 20,)))
  g = jaxlite.jit(lambda x: jaxlite.nn.softmax(x, axis=-1))
  x = np.random.default_rng(0).normal(size=(1024, 1024)).astype(np.float32)
  key = jaxlite.random.key(5)
  for _ in range(native.HOT_CALLS + 1):
    f(key), g(x)
  assert native.wait(600)
  for _ in range(native.TRIALS + 2):
    want_f, want_g = np.asarray(f(key)), np.asarray(g(x))
  total = numba.get_num_threads()
  seen.clear()
  with machine.sharing(total + 1):  # more programs than threads: one thread each
    np.testing.assert_array_equal(np.asarray(f(key)), want_f)
    if total > 1:  # the threefry and the sampler's kernel, each set to one thread and back
      assert seen and seen == [1, total] * (len(seen) // 2)
    np.testing.assert_array_equal(np.asarray(g(x)), want_g)
  assert numba.get_num_threads() == total


# --- float32 tanh in tier 1's scan loops (native_backend._loop_tanh) -----------------------------

@pytest.fixture
def native_loop_tanh(monkeypatch, cache_dir):
  """The loops' float32 tanh on its native loop whatever this machine's timing says."""
  monkeypatch.setattr(native_backend, "TANH_KEEP_RATIO", float("inf"))
  monkeypatch.setattr(native_backend, "_numpy_tanh_kept", False)
  fn = native_backend._build_tanh_f32()
  assert fn is not native_backend._numpy_tanh
  monkeypatch.setattr(native_backend, "TANH_F32", fn)
  monkeypatch.setattr(native_backend, "_numpy_tanh_kept", False)
  return fn


@needs_numba
def test_loop_tanh_matches_numpy(native_loop_tanh):
  special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-45, 0.625,
                      -0.625, 9.0, 44.0, 89.0, -100.0], np.float32)
  x = np.concatenate([special, np.linspace(-12, 12, 4096, dtype=np.float32),
                      np.geomspace(1e-8, 20, 2048, dtype=np.float32)])
  want = np.tanh(x)
  got = native_backend._loop_tanh(x)
  assert got.dtype == np.float32 and _ulps(got, want).max() <= 2
  # (the values of its own loop, support.tanh_f32, called directly)
  direct = np.empty_like(x)
  native_loop_tanh(x, direct)
  np.testing.assert_array_equal(got, direct)
  assert np.array_equal(np.signbit(got[:2]), [False, True])  # -0.0 keeps its sign
  ro = x.copy()
  ro.flags.writeable = False  # jaxlite's buffers are read-only
  out = np.empty_like(x)
  assert native_backend._loop_tanh(ro, out=out) is out
  np.testing.assert_array_equal(out, got)
  y = x.copy()
  assert native_backend._loop_tanh(y, out=y) is y  # in place, as the loop's `out=` reuse
  np.testing.assert_array_equal(y, got)
  # the others are NumPy's, bit for bit: small, strided, float64
  for arg in (x[:100], x[::2], x.astype(np.float64)):
    np.testing.assert_array_equal(native_backend._loop_tanh(arg), np.tanh(arg))


@needs_numba
def test_scan_loop_with_native_tanh_matches_tier0(native_loop_tanh):
  rng = np.random.default_rng(3)
  w, u = (rng.normal(size=(64, 64)).astype(np.float32) / 8 for _ in range(2))
  xs = rng.normal(size=(40, 16, 64)).astype(np.float32)

  def run(h0, xs):
    def step(h, x):
      h = jaxlite.numpy.tanh(h @ w + x @ u + 0.5)
      return h, h
    return lax.scan(step, h0, xs)
  h0 = np.zeros((16, 64), np.float32)
  prev = (jaxlite.config.jax_jaxlite_tier, jaxlite.config.jax_jaxlite_native)
  try:
    jaxlite.config.update("jax_jaxlite_tier", 1)
    jaxlite.config.update("jax_jaxlite_native", True)
    assert backend.get_backend() is NATIVE
    got = jaxlite.jit(run)(h0, xs)
    jaxlite.config.update("jax_jaxlite_tier", 0)
    want = jaxlite.jit(run)(h0, xs)
  finally:
    jaxlite.config.update("jax_jaxlite_tier", prev[0])
    jaxlite.config.update("jax_jaxlite_native", prev[1])
  for g, t in zip(got, want):
    np.testing.assert_allclose(np.asarray(g), np.asarray(t), rtol=1e-5, atol=2e-6)
  import gc
  from jaxlite._src.compiler import scan_hoist
  sources = [o.__jaxlite_source__ for o in gc.get_objects() if type(o) is scan_hoist.AdaptiveLoop]
  # the step's tanh is the table's kernel, computed into its row of ys
  assert any("= _tanh" in s and "out=_ys0[_i])" in s for s in sources), sources


@needs_numba
def test_loop_tanh_keeps_numpys_where_it_is_faster(monkeypatch, cache_dir):
  monkeypatch.setattr(native_backend, "TANH_KEEP_RATIO", 0.0)  # nothing beats NumPy's
  monkeypatch.setattr(native_backend, "_numpy_tanh_kept", False)
  assert native_backend._build_tanh_f32() is native_backend._numpy_tanh
  assert native_backend._numpy_tanh_kept
  x = np.linspace(-3, 3, 2048, dtype=np.float32)
  np.testing.assert_array_equal(native_backend._loop_tanh(x), np.tanh(x))
