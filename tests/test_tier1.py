"""Tier 1 (fused kernels run over row tiles on a thread pool) against tier 0, the NumPy backend.

Every case compiles one jaxpr with both backends and compares outputs bit for bit (NaN payloads
aside): tiling only splits the leading axis, so each element sees the same NumPy calls.
"""
import contextlib

import ml_dtypes
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from conftest import x64
from jaxlite import lax
from jaxlite._src.compiler import backend, numpy_codegen, tier1_backend, tiled_executor
from jaxlite.scipy.special import logsumexp

# Where NumPy warns (inf * 0 in bfloat16, say) both tiers warn alike; only values are compared.
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.numpy_backend("tier 1 against tier 0: the NumPy backend's tiers")]

TIER0, TIER1 = numpy_codegen.NUMPY, tier1_backend.TIER1
BF16 = np.dtype(ml_dtypes.bfloat16)


@contextlib.contextmanager
def force_tiles(tile_bytes: int = 64):
  """Every kernel tiled (no small-array fallback), tiles of a few rows."""
  old = tiled_executor.SMALL_ELEMENTS, tiled_executor.TILE_BYTES
  tiled_executor.SMALL_ELEMENTS, tiled_executor.TILE_BYTES = 1, tile_bytes
  try:
    yield
  finally:
    tiled_executor.SMALL_ELEMENTS, tiled_executor.TILE_BYTES = old


_FLOAT_EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.25, 1e-3, 3.0, 0.5, -7.0, 65000.0,
                -0.75, 2.0, 1e-8, 0.25, -1.0]
_INT_EDGES = [0, 1, -1, 7, -8, 3, 100, -100, 2, 5, 127, -128, 31, 9]


def values(shape, dtype, offset=0):
  """Edge values (NaN, +-inf, -0, extremes) cycled over `shape` (offset shifts the cycle)."""
  dtype = np.dtype(dtype)
  n = int(np.prod(shape))
  if dtype == np.bool_:
    flat = (np.arange(n) + offset) % 3 == 0
  elif dtype.kind == "f" or dtype == BF16:
    flat = np.array([_FLOAT_EDGES[(i + offset) % len(_FLOAT_EDGES)] for i in range(n)])
  elif dtype.kind == "u":
    flat = np.array([abs(_INT_EDGES[(i + offset) % len(_INT_EDGES)]) for i in range(n)])
  else:
    flat = np.array([_INT_EDGES[(i + offset) % len(_INT_EDGES)] for i in range(n)])
  return flat.astype(dtype).reshape(shape)


def run_both(f, *args):
  """f's jaxpr compiled by tier 0 and by tier 1 (with every kernel tiled), run on `args`."""
  closed = jaxlite.make_jaxpr(f)(*args)
  outs0 = TIER0.compile(closed)(*args)
  with force_tiles():
    exe = TIER1.compile(closed)
  outs1 = exe(*args)
  every_mode(closed, outs1, *args)
  return outs0, outs1, exe


def every_mode(closed, outs1, *args):
  """A kernel's first calls try each way to run it (pooled tiles, wide pooled tiles, tiles on
  one thread, one call over all rows; tiled_executor.ADAPTIVE): every way gives the same
  results. (A second executable, so that the caller's saw one call.)"""
  with force_tiles():
    again = TIER1.compile(closed)
  for _ in range(4):
    assert_same(outs1, again(*args))


def assert_same(outs0, outs1):
  assert len(outs0) == len(outs1)
  for a, b in zip(outs0, outs1):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "f" or a.dtype == BF16:
      a32, b32 = a.astype(np.float32), b.astype(np.float32)
      np.testing.assert_array_equal(np.isnan(a32), np.isnan(b32))
      ok = ~np.isnan(a32)
      np.testing.assert_array_equal(a32[ok], b32[ok])
      np.testing.assert_array_equal(np.signbit(a32[ok]), np.signbit(b32[ok]))  # -0 stays -0
    else:
      np.testing.assert_array_equal(a, b)


FLOATS = (np.float32, np.float16, BF16)
UNARY_FLOAT = [
    ("neg", lax.neg), ("sign", lax.sign), ("floor", lax.floor), ("ceil", lax.ceil),
    ("round", lax.round), ("is_finite", lax.is_finite), ("exp", lax.exp), ("exp2", lax.exp2),
    ("log", lax.log), ("log1p", lax.log1p), ("expm1", lax.expm1), ("tanh", lax.tanh),
    ("logistic", lax.logistic), ("sin", lax.sin), ("cos", lax.cos), ("tan", lax.tan),
    ("asin", lax.asin), ("acos", lax.acos), ("atan", lax.atan), ("sinh", lax.sinh),
    ("cosh", lax.cosh), ("asinh", lax.asinh), ("acosh", lax.acosh), ("atanh", lax.atanh),
    ("sqrt", lax.sqrt), ("rsqrt", lax.rsqrt), ("cbrt", lax.cbrt), ("abs", lax.abs),
    ("square", lax.square), ("integer_pow3", lambda x: lax.integer_pow(x, 3)),
    ("integer_pow-2", lambda x: lax.integer_pow(x, -2)), ("erf", lax.erf), ("erfc", lax.erfc),
    ("erf_inv", lax.erf_inv), ("lgamma", lax.lgamma), ("digamma", lax.digamma),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 5, 10)),
    ("to_int32", lambda x: lax.convert_element_type(x, np.int32)),
    ("to_bool", lambda x: lax.convert_element_type(x, np.bool_)),
]
BINARY_FLOAT = [
    ("add", lax.add), ("sub", lax.sub), ("mul", lax.mul), ("div", lax.div), ("rem", lax.rem),
    ("pow", lax.pow), ("max", lax.max), ("min", lax.min), ("atan2", lax.atan2),
    ("nextafter", lax.nextafter), ("eq", lax.eq), ("ne", lax.ne), ("lt", lax.lt),
    ("le", lax.le), ("gt", lax.gt), ("ge", lax.ge),
]
def _nonzero(x):
  return lax.max(x if x.dtype.kind == "u" else lax.abs(x), jnp.ones_like(x))


INT_OPS = [
    ("neg", lax.neg), ("sign", lax.sign), ("abs", lax.abs), ("not", lax.bitwise_not),
    ("population_count", lax.population_count), ("clz", lax.clz),
    ("add", lambda x: lax.add(x, x)), ("mul", lambda x: lax.mul(x, x[::-1])),
    ("div", lambda x: lax.div(x, _nonzero(x))), ("rem", lambda x: lax.rem(x, _nonzero(x))),
    ("and", lambda x: lax.bitwise_and(x, x[::-1])), ("or", lambda x: lax.bitwise_or(x, x[::-1])),
    ("xor", lambda x: lax.bitwise_xor(x, x[::-1])),
    ("shift_left", lambda x: lax.shift_left(x, jnp.full_like(x, 3))),
    ("shift_right_arithmetic", lambda x: lax.shift_right_arithmetic(x, jnp.full_like(x, 2))),
    ("shift_right_logical", lambda x: lax.shift_right_logical(x, jnp.full_like(x, 2))),
    ("max", lambda x: lax.max(x, x[::-1])), ("lt", lambda x: lax.lt(x, x[::-1])),
    ("to_float32", lambda x: lax.convert_element_type(x, np.float32)),
    ("bitcast", lambda x: lax.bitcast_convert_type(x, np.float32)
     if x.dtype == np.int32 else x),
    ("clamp", lambda x: lax.clamp(np.array(-3 if x.dtype.kind == "i" else 2, x.dtype), x,
                                  np.array(50, x.dtype))),
    ("row_sum", lambda x: lax.reduce_sum(x, (1,))), ("row_max", lambda x: lax.reduce_max(x, (1,))),
    ("row_min", lambda x: lax.reduce_min(x, (1,))),
    ("row_prod", lambda x: lax.reduce_prod(x, (1,))),
]
REDUCE_FLOAT = [
    ("row_sum", lambda x: jnp.sum(x, axis=1)), ("row_max", lambda x: jnp.max(x, axis=1)),
    ("row_min", lambda x: jnp.min(x, axis=1)), ("row_prod", lambda x: jnp.prod(x, axis=1)),
    ("row_mean", lambda x: jnp.mean(x, axis=-1)),
    ("softmax", lambda x: jaxlite.nn.softmax(x, axis=-1)),
    ("logsumexp", lambda x: logsumexp(x, axis=1)),
    ("normalise", lambda x: (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1)),
]
SHAPES = [(37, 5), (2, 3), (1, 4), (0, 3), (9, 1)]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,fn", UNARY_FLOAT, ids=[c[0] for c in UNARY_FLOAT])
def test_unary_float(name, fn, dtype):
  for shape in SHAPES:
    x = values(shape, dtype)
    assert_same(*run_both(lambda x: fn(fn(x) * x) if name in ("neg", "abs") else fn(x), x)[:2])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,fn", BINARY_FLOAT, ids=[c[0] for c in BINARY_FLOAT])
def test_binary_float(name, fn, dtype):
  for shape in SHAPES + [(5,), (11, 2, 3)]:
    x, y = values(shape, dtype), values(shape, dtype, offset=5)
    assert_same(*run_both(fn, x, y)[:2])
    # with a scalar operand (lax broadcasting of rank 0) and a row broadcast
    assert_same(*run_both(lambda x: fn(x, np.array(1.5, dtype)), x)[:2])
    if len(shape) == 2:
      row = values(shape[1:], dtype, offset=3)
      assert_same(*run_both(lambda x, r: fn(x, jnp.broadcast_to(r, x.shape)), x, row)[:2])


SIGNED_ONLY = ("neg", "sign", "abs", "shift_right_arithmetic")  # lax rejects unsigned operands
INT_CASES = [(name, fn, dt) for name, fn in INT_OPS for dt in (np.int32, np.int8, np.uint8,
                                                                np.uint32)
             if not (name in SIGNED_ONLY and np.dtype(dt).kind == "u")]


@pytest.mark.parametrize("name,fn,dtype", INT_CASES,
                         ids=[f"{c[0]}-{np.dtype(c[2]).name}" for c in INT_CASES])
def test_integer(name, fn, dtype):
  for shape in ((37, 5), (4, 3), (0, 2), (13, 7)):
    assert_same(*run_both(fn, values(shape, dtype))[:2])


@pytest.mark.parametrize("name,fn", [
    ("not", lax.bitwise_not), ("and", lambda x: x & x[::-1]), ("or", lambda x: x | x[::-1]),
    ("xor", lambda x: x ^ x[::-1]), ("eq", lambda x: x == x[::-1]),
    ("select", lambda x: lax.select(x, x[::-1], x)),
    ("to_f16", lambda x: x.astype(np.float16) * 2),
    ("all", lambda x: jnp.all(x, axis=1)), ("any", lambda x: jnp.any(x, axis=1)),
    ("row_max", lambda x: lax.reduce_max(x, (1,))),
])
def test_bool(name, fn):
  for shape in ((37, 5), (2, 2), (0, 4)):
    assert_same(*run_both(fn, values(shape, np.bool_))[:2])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,fn", REDUCE_FLOAT, ids=[c[0] for c in REDUCE_FLOAT])
def test_row_reductions(name, fn, dtype):
  # Exact: a tile is whole rows, and NumPy reduces each row of a tile exactly as it reduces that
  # row of the whole array (same contiguous layout along the reduced axis).
  for shape in ((37, 5), (64, 33), (3, 200), (0, 4), (5, 0)):
    if shape == (5, 0) and name in ("row_max", "row_min", "logsumexp", "softmax"):
      continue  # no identity: jnp raises for an empty max/min (as JAX does)
    assert_same(*run_both(fn, values(shape, dtype))[:2])
  x = np.random.default_rng(0).normal(size=(50, 300)).astype(dtype)
  assert_same(*run_both(fn, x)[:2])


@pytest.mark.parametrize("name,fn", [
    ("select_n3", lambda p, x: lax.select_n(p, x, x * 2, -x)),
    ("clamp_rows", lambda p, x: lax.clamp(jnp.zeros_like(x), x, jnp.ones_like(x))),
    ("where_chain", lambda p, x: jnp.where(p > 0, jnp.tanh(x) * jnp.exp(x), jnp.sin(x) + 1)),
    ("col_bcast", lambda p, x: x * p[:, :1].astype(x.dtype) + x.sum(-1, keepdims=True)),
    ("scalar_bcast", lambda p, x: x + x.max()),  # the whole-array max is not a row op
    ("reshape_rows", lambda p, x: (x.reshape(x.shape[0], -1, 1) * 2).sum(axis=(1, 2))),
    ("3d_rows", lambda p, x: jnp.exp(x[:, :, None] - x[:, None, :]).sum(-1)),
    ("two_outputs", lambda p, x: (jnp.exp(x), jnp.exp(x).sum(-1), x * 3)),
])
def test_mixed_kernels(name, fn):
  p = values((23, 6), np.int32) % 3
  x = np.random.default_rng(1).normal(size=(23, 6)).astype(np.float32)
  x[2, 3], x[5, 0], x[7, 1] = np.nan, -np.inf, -0.0
  outs0, outs1, exe = run_both(fn, p, x)
  assert_same(outs0, outs1)
  assert exe.__jaxlite_kernels__, "expected at least one tiled kernel"


def test_scalars_and_1d():
  for dtype in (np.float32, np.int32, BF16):
    s = values((), dtype)
    assert_same(*run_both(lambda s: s * s + s, s)[:2])
    v = values((1001,), dtype)
    outs0, outs1, exe = run_both(lambda v: v * v + v - v[::-1], v)
    assert_same(outs0, outs1)
    assert exe.__jaxlite_kernels__[0].last_tiles > 1


def test_tiles_not_dividing_rows():
  x = np.random.default_rng(2).normal(size=(1000, 7)).astype(np.float32)
  closed = jaxlite.make_jaxpr(lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x))(x)
  rows = []
  for tile_bytes in (28, 100, 1000, 9999):
    with force_tiles(tile_bytes):
      exe = TIER1.compile(closed)
    (k,) = exe.__jaxlite_kernels__
    rows.append(k.rows)
    assert_same(TIER0.compile(closed)(x), exe(x))
    assert k.last_tiles == -(-1000 // k.rows)
  assert any(1000 % r for r in rows)  # a short last tile was exercised


def test_as_text_shows_kernels():
  x = np.ones((4096, 1024), np.float32)
  with backend.using_backend(TIER1):
    f = jaxlite.jit(lambda x: logsumexp(x, axis=1) + 1)
    text = f.lower(x).compile().as_text()
  assert "# kernel 0 (tiled:" in text and "def _k0_tile(_lo, _n" in text
  assert "reduce_max" in text and "reduce_sum" in text and "exp" in text
  # a small kernel next to a big one keeps tier 0's lines, and says why
  with backend.using_backend(TIER1):
    both = jaxlite.jit(lambda x, y: jnp.exp(y * (jnp.exp(x) * 2)[0, :8]) * 3)
    text = both.lower(x, np.ones(8, np.float32)).compile().as_text()
  assert "(tiled:" in text and "(untiled: 8 elements" in text
  assert text.count("_tile(_lo, _n") == 1


def test_dead_tile_buffers_are_written_again():
  # tanh(x) * exp(x) + sin(x): exp's buffer is dead once multiplied, sin writes into it (one
  # temporary per tile, not two); where the dtype differs (a bool) no buffer is shared.
  f = lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x)  # noqa: E731
  x = values((64, 3), np.float32)
  with backend.using_backend(TIER1), force_tiles():
    text = jaxlite.jit(f).lower(x).compile().as_text()
  tile = text.split("def _jaxpr_fn")[0]
  exp_name = tile.split(" = np.exp(")[0].split()[-1]
  assert f"np.sin(v0, out={exp_name})" in tile, tile
  outs0, outs1, _ = run_both(f, x)
  assert_same(outs0, outs1)
  g = lambda x: jnp.where(jnp.exp(x) > 1, jnp.sin(x), jnp.cos(x)) * 2  # noqa: E731
  outs0, outs1, _ = run_both(g, x)
  assert_same(outs0, outs1)


def test_small_jaxprs_compile_to_tier0_code():
  # No value can reach the tiled size: no fusion pass, tier 0's source exactly (first calls and
  # the cached call cost what they cost in tier 0).
  f = lambda x: jnp.tanh(x * 2 + 1).sum(-1)  # noqa: E731
  closed = jaxlite.make_jaxpr(f)(np.ones((64, 8), np.float32))
  exe1, exe0 = TIER1.compile(closed), TIER0.compile(closed)
  strip = lambda src: src.split("\n", 1)[1]  # noqa: E731  (the function names differ)
  assert strip(exe1.__jaxlite_source__) == strip(exe0.__jaxlite_source__)
  assert exe1.__jaxlite_kernels__ == [] and "kernel" not in exe1.__jaxlite_source__
  x = values((64, 8), np.float32)
  assert_same(exe0(x), exe1(x))


def test_matmul_stays_out_and_epilogue_fuses():
  w = np.random.default_rng(3).normal(size=(64, 32)).astype(np.float32)
  b = np.random.default_rng(4).normal(size=(32,)).astype(np.float32)
  x = np.random.default_rng(5).normal(size=(200, 64)).astype(np.float32)
  f = lambda x, w, b: jnp.tanh(x @ w + b).sum(-1)  # noqa: E731
  outs0, outs1, exe = run_both(f, x, w, b)
  np.testing.assert_array_equal(outs0[0], outs1[0])
  src = exe.__jaxlite_source__
  kernel_src = src[src.index("def _k0_tile"):src.index("def _jaxpr_fn")]
  assert "matmul" not in kernel_src and "np.tanh" in kernel_src
  main = src[src.index("def _jaxpr_fn"):]
  assert "np.matmul(" in main and "_k0(" in main


def test_threads_used_for_large_inputs():
  x = np.random.default_rng(6).normal(size=(2000, 1000)).astype(np.float32)
  closed = jaxlite.make_jaxpr(lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x))(x)
  exe = TIER1.compile(closed)  # default thresholds: 2M elements is far above the small path
  (k,) = exe.__jaxlite_kernels__
  assert_same(TIER0.compile(closed)(x), exe(x))
  _, workers = tiled_executor.POOL.get()
  assert k.last_tiles > 1
  # Tiles are claimed dynamically: a worker that gets no core leaves its share to the caller,
  # so how many threads ran tiles depends on the machine's load (test_tier1_runtime.py checks
  # that workers do take tiles, deterministically).
  assert 1 <= k.last_threads <= min(workers, k.last_tiles)


def test_one_thread_when_threads_unavailable(monkeypatch):
  pool = tiled_executor._Pool()
  pool.workers = 1  # what _Pool.get settles on where threads cannot start (Pyodide)
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  x = np.random.default_rng(7).normal(size=(300, 9)).astype(np.float32)
  outs0, outs1, exe = run_both(lambda x: jnp.exp(x - x.max(-1, keepdims=True)), x)
  assert_same(outs0, outs1)
  (k,) = exe.__jaxlite_kernels__
  assert k.last_tiles > 1 and k.last_threads == 1


def test_tier1_is_the_default():
  # Unset JAXLITE_TIER: tier 1; JAXLITE_TIER=0: tier 0 (a fresh interpreter reads the env).
  import os
  import subprocess
  import sys
  script = ("import jaxlite; from jaxlite._src.compiler import backend; "
            "print(jaxlite.config.jax_jaxlite_tier, backend.get_backend().name)")
  # The native tier (where numba is installed) is tier 1 with native kernels: off here, and
  # its own selection is test_native's.
  for env_tier, want in ((None, "1 numpy-tiled"), ("0", "0 numpy")):
    # (the NumPy backend's tiers: JAXLITE_BACKEND=xla, the suite's, left out)
    env = {k: v for k, v in os.environ.items() if k not in ("JAXLITE_TIER", "JAXLITE_BACKEND")}
    env["JAXLITE_NATIVE"] = "0"
    if env_tier is not None:
      env["JAXLITE_TIER"] = env_tier
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.stdout.strip() == want, out.stderr


def test_config_flag_selects_tier():
  prev, prev_tier = backend.get_backend(), jaxlite.config.jax_jaxlite_tier
  prev_native = jaxlite.config.jax_jaxlite_native
  try:
    jaxlite.config.update("jax_jaxlite_native", False)  # tier 1 itself, not its native variant
    jaxlite.config.update("jax_jaxlite_tier", 1)
    assert backend.get_backend() is TIER1
    x = np.ones((1024, 512), np.float32)
    text = jaxlite.jit(lambda x: jnp.exp(x) + 1).lower(x).compile().as_text()
    assert "_k0_tile" in text
    jaxlite.config.update("jax_jaxlite_tier", 0)
    assert backend.get_backend() is TIER0
    with pytest.raises(ValueError, match="jax_jaxlite_tier must be 0 or 1, got 2"):
      jaxlite.config.update("jax_jaxlite_tier", 2)
  finally:
    jaxlite.config.update("jax_jaxlite_native", prev_native)
    jaxlite.config.update("jax_jaxlite_tier", prev_tier)
    backend.install_backend(prev)


def test_tier_is_part_of_the_jit_cache_key():
  # One jitted function, called under each tier, keeps an executable per tier.
  f = jaxlite.jit(lambda x: jnp.tanh(x) * 3)
  x = np.random.default_rng(10).normal(size=(1024, 256)).astype(np.float32)
  prev_tier = jaxlite.config.jax_jaxlite_tier
  try:
    texts = []
    for tier in (0, 1):
      jaxlite.config.update("jax_jaxlite_tier", tier)
      np.testing.assert_array_equal(np.asarray(f(x)), np.tanh(x) * np.float32(3))
      texts.append(f.lower(x).compile().as_text())
  finally:
    jaxlite.config.update("jax_jaxlite_tier", prev_tier)
  assert "_k0_tile" not in texts[0] and "_k0_tile" in texts[1]


def test_jit_end_to_end_under_tier1():
  x = np.random.default_rng(8).normal(size=(512, 300)).astype(np.float32)
  with backend.using_backend(TIER1):
    got = jaxlite.jit(lambda x: jaxlite.nn.softmax(x * 2, axis=-1))(x)
  with backend.using_backend(TIER0):
    want = jaxlite.jit(lambda x: jaxlite.nn.softmax(x * 2, axis=-1))(x)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_independent_eqns_move_above_the_kernel():
  # random.normal: the uniform's (1,)-shaped bounds arithmetic sits between its bit twiddling
  # and erf_inv; it reads nothing of the kernel, so one kernel covers the whole chain.
  key = jaxlite.random.key(0)
  closed = jaxlite.make_jaxpr(lambda k: jaxlite.random.normal(k, (3000,)))(key)
  with force_tiles(4096):
    exe = TIER1.compile(closed)
  (k,) = exe.__jaxlite_kernels__
  src = exe.__jaxlite_source__
  assert "erf_inv" in src[src.index("def _k0_tile"):src.index("def _jaxpr_fn")]
  assert "shift_right_logical" in src[src.index("def _k0_tile"):src.index("def _jaxpr_fn")]
  assert_same(TIER0.compile(closed)(key._value), exe(key._value))


@pytest.mark.parametrize("n,row_bytes,workers", [(256, 8200, 2), (1000, 1 << 12, 2),
                                                  (7, 1 << 20, 2), (4096, 4096, 3),
                                                  (5, 8, 1), (1, 8, 2)])
def test_tiles_are_even_and_a_multiple_of_the_workers(n, row_bytes, workers):
  rows = tiled_executor.tile_rows(n, row_bytes, workers)
  tiles = -(-n // rows)
  assert rows * row_bytes <= max(tiled_executor.TILE_BYTES, row_bytes)
  assert tiles % workers == 0 or tiles == n  # (fewer rows than workers: one row a tile)
  assert tiles * rows - n < tiles  # the last tile is at most one row short of the others


def test_moved_eqns_form_kernels_of_their_own():
  # An SGD step over two parameters of different row counts: the first update cannot join the
  # second's kernel and moves above it, where it is a kernel of its own, not loose eqns.
  w0, w1 = values((40, 6), np.float32), values((24, 6), np.float32, 3)
  g0, g1 = values((40, 6), np.float32, 5), values((24, 6), np.float32, 7)

  def step(w0, w1, g0, g1):
    return w1 - 0.5 * g1, w0 - 0.25 * g0

  closed = jaxlite.make_jaxpr(step)(w0, w1, g0, g1)
  with force_tiles():
    exe = TIER1.compile(closed)
  assert sorted(k.n for k in exe.__jaxlite_kernels__) == [24, 40]
  assert_same(TIER0.compile(closed)(w0, w1, g0, g1), exe(w0, w1, g0, g1))


def test_effects_keep_their_place():
  seen = []

  def f(x):
    y = jnp.exp(x) * 2
    jaxlite.debug.callback(lambda v: seen.append(np.asarray(v).copy()), x[:, 0])
    return jnp.sin(y) + x
  x = np.random.default_rng(9).normal(size=(40, 8)).astype(np.float32)
  outs0, outs1, exe = run_both(f, x)
  assert_same(outs0, outs1)
  assert len(seen) == 6  # once per call: tier 0, tier 1, then tier 1 in each mode (every_mode)
  for s in seen:
    np.testing.assert_array_equal(s, x[:, 0])
  src = exe.__jaxlite_source__
  main = src[src.index("def _jaxpr_fn"):]
  assert main.index("_k0(") < main.index("callback") < main.index("_k1(")


def test_key_arrays_stay_out_of_kernels():
  # select_n over PRNG key arrays (from vmap of a key choice) runs as tier 0's line.
  keys = jaxlite.random.split(jaxlite.random.key(1), 64)
  pred = np.arange(64) % 2 == 0
  f = lambda p, k: jaxlite.random.key_data(lax.select(p, k, k[::-1]))  # noqa: E731
  closed = jaxlite.make_jaxpr(f)(pred, keys)
  with force_tiles():
    exe = TIER1.compile(closed)
  assert_same(TIER0.compile(closed)(pred, keys._value), exe(pred, keys._value))
  src = exe.__jaxlite_source__
  body = src[src.index("def _jaxpr_fn"):]
  # tier 0's line: np.where for a select below the bitwise select's size (64 keys)
  assert "= np.where(v0, v1, v2)" in body and "_k0" not in body


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_forked_child_gets_its_own_pool():
  import os
  x = np.random.default_rng(11).normal(size=(2000, 1000)).astype(np.float32)
  closed = jaxlite.make_jaxpr(lambda x: jnp.exp(x) * 2)(x)
  exe = TIER1.compile(closed)
  want = np.exp(x) * np.float32(2)
  np.testing.assert_array_equal(exe(x)[0], want)  # the parent's pool exists now
  r, w = os.pipe()
  pid = os.fork()
  if pid == 0:  # child: the kernel must finish (the inherited pool has no threads)
    __import__("signal").alarm(20)  # a hang kills the child: the parent sees no b"1"
    ok = np.array_equal(exe(x)[0], want)
    os.write(w, b"1" if ok else b"0")
    os._exit(0)
  os.close(w)
  _, status = os.waitpid(pid, 0)
  assert os.read(r, 1) == b"1" and status == 0


# --- random_bits as a kernel source --------------------------------------------------------------

def run_both_keys(f, keys):
  """run_both for a function of a key array: traced with the keys, run on their buffer."""
  closed = jaxlite.make_jaxpr(f)(keys)
  outs0 = TIER0.compile(closed)(keys._value)
  with force_tiles():
    exe = TIER1.compile(closed)
  outs1 = exe(keys._value)
  every_mode(closed, outs1, keys._value)
  return outs0, outs1, exe


BITS_SHAPES = [(0,), (1,), (3,), (17,), (1001,), (37, 5), (4, 3, 7), (2, 0), (5, 1)]


@pytest.mark.parametrize("bits", (8, 16, 32, 64))
def test_random_bits_tiles_match_the_whole_draw(bits):
  # Each tile hashes its own rows' counters: bit-identical to tier 0's one pass over 0..n-1.
  key = jaxlite.random.key(42)
  dtype = np.dtype(f"uint{bits}")
  with x64(bits == 64):
    for shape in BITS_SHAPES:
      outs0, outs1, exe = run_both_keys(lambda k: jaxlite.random.bits(k, shape, dtype), key)
      assert outs1[0].dtype == dtype and outs1[0].shape == shape
      assert_same(outs0, outs1)
      if shape[0] > 1 and 0 not in shape:
        (k,) = exe.__jaxlite_kernels__
        assert k.last_tiles > 1, shape


def test_random_bits_per_key_rows():
  # vmap over keys: keys with n rows are read tile by tile, each row its own key's draw.
  keys = jaxlite.random.split(jaxlite.random.key(7), 29)
  f = jaxlite.vmap(lambda k: jaxlite.random.bits(k, (3, 5)))
  outs0, outs1, exe = run_both_keys(f, keys)
  assert_same(outs0, outs1)
  assert exe.__jaxlite_kernels__[0].last_tiles > 1
  np.testing.assert_array_equal(outs1[0][4], np.asarray(jaxlite.random.bits(keys[4], (3, 5))))


def test_normal_fuses_bits_and_transform_into_one_kernel():
  key = jaxlite.random.key(0)
  for n in (3000, 4097, 1):
    closed = jaxlite.make_jaxpr(lambda k: jaxlite.random.normal(k, (n,)))(key)
    with force_tiles(4096):
      exe = TIER1.compile(closed)
    assert_same(TIER0.compile(closed)(key._value), exe(key._value))
    if n > 1:
      src = exe.__jaxlite_source__
      (k,) = exe.__jaxlite_kernels__
      tile = src[src.index("def _k0_tile"):src.index("def _jaxpr_fn")]
      assert "_bits_rows(" in tile and "erf_inv" in tile and k.last_tiles > 1


def test_random_bits_counters_cross_the_32_bit_boundary():
  # Rows far into a draw: counters above 2**32 split into (hi, lo) words exactly as one block
  # of the reference hash on Python ints does.
  from jaxlite._src.rng import prng, prng_threefry
  keys = prng.seed_keys(np.array(5, np.uint32))
  row = 1 << 16
  lo_row = (1 << 32) // row - 2  # rows that straddle counter 2**32
  got = prng.bits_rows(keys, 32, (1 << 17, row), lo_row, 3)
  assert got.shape == (3, row)
  k0, k1 = int(keys["k0"]), int(keys["k1"])
  first = lo_row * row
  for c in (first, (1 << 32) - 2, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, first + 3 * row - 1):
    y0, y1 = prng_threefry._hash_python(k0, k1, c >> 32, c & 0xFFFFFFFF)
    assert got.reshape(-1)[c - first] == y0 ^ y1, c


def test_random_bits_stay_out_when_not_partitionable():
  key = jaxlite.random.key(1)
  f = lambda k: jaxlite.random.uniform(k, (301,))  # noqa: E731
  with jaxlite.threefry_partitionable(False):
    closed = jaxlite.make_jaxpr(f)(key)
    with force_tiles():
      exe = TIER1.compile(closed)
    assert_same(TIER0.compile(closed)(key._value), exe(key._value))
  src = exe.__jaxlite_source__
  assert "_bits_rows" not in src and "_random_bits" in src[src.index("def _jaxpr_fn"):]


def test_broadcast_literals_are_made_again_for_each_kernel():
  """relu's gradient masks of two layers read one zeros broadcast; each kernel gets its own
  (a literal it reads in place, not an array another kernel made), values unchanged."""
  from jaxlite._src.compiler import fusion, passes
  from jaxlite._src.base.core import Literal
  rng = np.random.default_rng(0)
  a, b, g, w = (rng.standard_normal((512, 512)).astype(np.float32) for _ in range(4))

  def f(a, b, g, w):
    zeros = lax.broadcast_in_dim(np.float32(0), a.shape, ())
    first = lax.select(a > 0, g, zeros)
    return first, lax.select(b > 0, first @ w, zeros)
  jaxpr, _ = passes.optimize(jaxlite.make_jaxpr(f)(a, b, g, w))
  literal_broadcasts = {e.outvars[0] for e in jaxpr.eqns
                        if e.primitive.name == "broadcast_in_dim"
                        and type(e.invars[0]) is Literal}
  assert len(literal_broadcasts) == 1  # one zeros array in the program
  kernels = [it for it in fusion.plan(jaxpr)[0] if isinstance(it, fusion.Kernel)]
  with_select = [k for k in kernels if any(e.primitive.name == "select_n" for e in k.eqns)]
  assert len(with_select) == 2
  for k in with_select:  # each makes its own, and reads no other's
    assert any(e.primitive.name == "broadcast_in_dim" for e in k.eqns)
    assert not literal_broadcasts & {v for v, _ in k.inputs}
  outs0, outs1, _ = run_both(f, a, b, g, w)
  assert_same(outs0, outs1)


# --- each execution mode on a pool of two threads, whatever the machine has --------------------

@pytest.fixture(autouse=True)
def two_workers(monkeypatch):
  """tiled_executor.POOL with two workers (the caller and one thread), on any machine: every
  case of this file then runs its kernels pooled, wide-pooled, tiled and whole (every_mode),
  also on a one-core CI runner."""
  from concurrent.futures import ThreadPoolExecutor
  pool = tiled_executor._Pool()
  pool.executor, pool.workers = ThreadPoolExecutor(1), 2
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  yield pool
  pool.executor.shutdown()


def _each_mode(exe, args):
  """exe's outputs with every kernel forced into each of its modes in turn: {mode: outputs}."""
  kernels = exe.__jaxlite_kernels__
  assert kernels
  exe(*args)  # settles each kernel's candidate modes (and WIDE's tiles)
  out = {}
  for mode in (tiled_executor.POOLED, tiled_executor.WIDE, tiled_executor.TILES,
               tiled_executor.WHOLE):
    saved = [k.modes for k in kernels]
    if not all(mode in m for m in saved):
      continue
    for k in kernels:
      k.modes = (mode,)
    out[mode] = exe(*args)
    assert all(k.last_mode == mode for k in kernels)
    for k, m in zip(kernels, saved):
      k.modes = m
  return out


ROW_REDUCTIONS = [
    ("logsumexp", lambda x: logsumexp(x, axis=-1)),
    ("softmax", lambda x: jaxlite.nn.softmax(x, axis=-1)),
    ("normalise", lambda x: (x - x.mean(-1, keepdims=True))
     * lax.rsqrt(((x - x.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + 1e-5)),
    ("max-min", lambda x: x.max(-1) - x.min(-1)),
    ("chain", lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x)),
]


@pytest.mark.parametrize("name, f", ROW_REDUCTIONS, ids=[r[0] for r in ROW_REDUCTIONS])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_every_mode_on_two_threads_gives_tier0(two_workers, name, f, dtype):
  # Pooled tiles (L2-sized and wide) on two threads, tiles on one, one call over all rows: each
  # gives tier 0's bits, edge values (NaN, inf, -0) included.
  x = values((96, 24), dtype)
  closed = jaxlite.make_jaxpr(f)(x)
  want = TIER0.compile(closed)(x)
  with force_tiles(tile_bytes=8 * 24 * np.dtype(dtype).itemsize):
    exe = TIER1.compile(closed)
  got = _each_mode(exe, (x,))
  assert tiled_executor.POOLED in got and tiled_executor.WIDE in got
  for outs in got.values():
    assert_same(want, outs)


def test_every_mode_on_two_threads_gives_tier0_threefry_bits(two_workers):
  # random_bits sources its kernel: each tile hashes its own rows' counters (_CHUNK-sized
  # blocks), in every mode bit-identical to tier 0's whole draw.
  from jaxlite._src.rng import prng_threefry
  f = lambda k: jaxlite.random.normal(k, (300, 7))  # noqa: E731
  key = jaxlite.random.key(3)
  closed = jaxlite.make_jaxpr(f)(key)
  want = TIER0.compile(closed)(key)
  old = prng_threefry._CHUNK
  prng_threefry._CHUNK = 64  # several blocks in a tile
  try:
    with force_tiles(tile_bytes=16 * 7 * 4 * 8):
      exe = TIER1.compile(closed)
    got = _each_mode(exe, (key,))
  finally:
    prng_threefry._CHUNK = old
  assert tiled_executor.POOLED in got and tiled_executor.WIDE in got
  for outs in got.values():
    np.testing.assert_array_equal(np.asarray(want[0]), np.asarray(outs[0]))


def test_programs_sharing_the_cores_split_the_pool(two_workers):
  # While two programs run at once (the SPMD runtime's CPU devices), each pooled call takes its
  # share of the workers: one thread here, none left over for the other program's tiles.
  from jaxlite._src.base import machine
  x = values((96, 24), np.float32)
  closed = jaxlite.make_jaxpr(lambda x: jnp.exp(x - x.max(-1, keepdims=True)))(x)
  with force_tiles(tile_bytes=8 * 24 * 4):
    exe = TIER1.compile(closed)
  (k,) = exe.__jaxlite_kernels__
  exe(x)
  k.modes, k.chooser = (tiled_executor.POOLED,), None
  with machine.sharing(2):
    assert machine.programs() == 2 and machine.share(2) == 1
    assert_same(TIER0.compile(closed)(x), exe(x))
    assert k.last_threads == 1 and k.last_tiles > 1
  assert machine.programs() == 1
