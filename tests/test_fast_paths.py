"""Fast paths of the hot code (eager shortcuts, cached plans, tier-0 lowerings): each one must
give exactly what the general path gives (values bit for bit, dtypes, weak types, errors)."""
import numpy as np
import pytest
from conftest import x64

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.compiler import numpy_codegen

RNG = np.random.default_rng(0)
# The file's subject is the NumPy backend's hot code (its generated source, its eager shortcuts
# bit for bit against its general path); on the xla backend XLA computes both paths.
pytestmark = pytest.mark.numpy_backend("the NumPy backend's fast paths and generated code")


def _data(shape, dtype):
  if np.dtype(dtype) == np.bool_:
    return RNG.random(shape) > 0.5
  if np.dtype(dtype).kind in "iu":
    return RNG.integers(-4, 5, shape).astype(dtype)
  if np.dtype(dtype).kind == "c":
    return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(dtype)
  return RNG.normal(size=shape).astype(dtype)


def _source(f, *args):
  return numpy_codegen.compile_jaxpr(jax.make_jaxpr(f)(*args)).__jaxlite_source__


# --- dot_general: layout plans and the np.matmul lowering -------------------------------------

DOTS = [  # (lhs shape, rhs shape, dimension numbers, einsum, lowered to one np.matmul)
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), "ij,jk->ik", True),
    ((3, 4), (4,), (((1,), (0,)), ((), ())), "ij,j->i", True),
    ((4,), (4, 5), (((0,), (0,)), ((), ())), "j,jk->k", True),
    ((4,), (4,), (((0,), (0,)), ((), ())), "i,i->", True),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik", True),
    ((2, 2, 3, 4), (2, 2, 4, 5), (((3,), (2,)), ((0, 1), (0, 1))), "abij,abjk->abik", True),
    ((3, 4), (5, 4), (((1,), (1,)), ((), ())), "ij,kj->ik", True),
    ((4, 3), (4, 5), (((0,), (0,)), ((), ())), "ji,jk->ik", True),
    ((4, 3), (5, 4), (((0,), (1,)), ((), ())), "ji,kj->ik", True),
    ((2, 3, 4), (4, 5), (((2,), (0,)), ((), ())), "abj,jk->abk", True),
    ((2, 3, 4), (4,), (((2,), (0,)), ((), ())), "abj,j->ab", True),
    ((2, 0, 4), (4, 5), (((2,), (0,)), ((), ())), "abj,jk->abk", True),
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,))), "ibj,jkb->bik", False),
    ((2, 4, 3), (2, 4, 5), (((1,), (1,)), ((0,), (0,))), "bji,bjk->bik", False),
    ((3, 4), (5,), (((), ()), ((), ())), "ij,k->ijk", False),
    ((6,), (6, 7), (((), ()), ((0,), (0,))), "b,bk->bk", False),
    ((3, 4), (3, 5), (((), ()), ((0,), (0,))), "bi,bk->bik", False),
    ((4, 3), (3, 5), (((), ()), ((1,), (0,))), "ib,bk->bik", False),
    ((2, 3, 4, 5), (4, 3, 6), (((1, 2), (1, 0)), ((), ())), "aijb,jic->abc", False),
]


@pytest.mark.parametrize("ls,rs,dims,spec,lowered", DOTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_, np.complex64,
                                   np.float16])
def test_dot_general_paths_match_einsum_and_jit(ls, rs, dims, spec, lowered, dtype):
  a, b = _data(ls, dtype), _data(rs, dtype)
  got = lax.dot_general(a, b, dims)
  want_dtype = jnp.asarray(a).dtype  # canonical (float64 -> float32 without x64)
  assert got.dtype == want_dtype and not got.weak_type
  ref = np.einsum(spec, a.astype(np.complex128), b.astype(np.complex128))
  if dtype == np.bool_:
    ref = ref != 0
  tol = 1e-2 if dtype == np.float16 else 1e-5
  np.testing.assert_allclose(np.asarray(got).astype(np.complex128), ref, rtol=tol, atol=tol)
  f = lambda x, y: lax.dot_general(x, y, dims)
  np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, b)), np.asarray(got))
  inlined = "np.matmul(" in _source(f, a, b)
  assert inlined == (lowered and dtype != np.float16)


@pytest.mark.parametrize("ls,rs,dims,rewritten", [
    ((6,), (6, 7), (((), ()), ((0,), (0,))), True),      # vmap(grad) of a linear model
    ((3, 4), (3, 5), (((), ()), ((0,), (0,))), True),
    ((3, 4), (5,), (((), ()), ((), ())), True),
    ((5,), (5,), (((), ()), ((), ())), True),             # an outer product (x, x below)
    ((4, 3), (3, 5), (((), ()), ((1,), (0,))), False),   # batch dim not leading
    ((3, 4), (4,), (((1,), (0,)), ((), ())), False),     # contracts: BLAS
])
def test_outer_products_compile_to_broadcast_multiply(ls, rs, dims, rewritten):
  # Nothing contracted: each element is one product, so the compiled code multiplies
  # broadcasts (tier 1 then fuses it) and the values equal the product's bit for bit.
  a, b = _data(ls, np.float32), _data(rs, np.float32)
  f = lambda x, y: lax.dot_general(x, y, dims)
  src = _source(f, a, b)
  assert ("_dot_general" not in src and "np.matmul" not in src) == rewritten, src
  want = np.asarray(lax.dot_general(a, b, dims))
  np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, b)), want)
  from jaxlite._src.compiler import tier1_backend
  np.testing.assert_array_equal(
      tier1_backend.TIER1.compile(jax.make_jaxpr(f)(a, b))(a, b)[0], want)
  if ls == rs:  # one operand on both sides: spread along two different dims
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: f(x, x))(a)),
                                  np.asarray(lax.dot_general(a, a, dims)))


def test_dot_general_lowering_needs_equal_dtypes_and_no_widening():
  a, b = _data((3, 4), np.float32), _data((4, 5), np.int32)
  f = lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())))
  assert "np.matmul(" not in _source(f, a, b)
  np.testing.assert_allclose(np.asarray(jax.jit(f)(a, b)), a @ b.astype(np.float32), rtol=1e-6)
  g = lambda x, y: lax.dot(x, y, preferred_element_type=np.float32)
  i = _data((3, 4), np.int32)
  assert "np.matmul(" not in _source(g, i, i.T)
  out = jax.jit(g)(i, i.T)
  assert out.dtype == np.float32
  np.testing.assert_array_equal(np.asarray(out), (i @ i.T).astype(np.float32))


def test_dot_general_plan_cache_keeps_raising_errors():
  for _ in range(2):  # a failed validation is never cached as a plan
    with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
      lax.dot_general(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32),
                      (((1,), (0,)), ((), ())))
  out = lax.dot_general(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32),
                        (((1,), (0,)), ((), ())))
  np.testing.assert_array_equal(np.asarray(out), np.full((2, 2), 3, np.float32))


def test_dot_general_weak_scalars_and_reverse_mode():
  assert lax.dot_general(2.0, 3.0, (((), ()), ((), ()))).weak_type
  x, w = _data((5, 3), np.float32), _data((3, 2), np.float32)
  gw = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
  ref = x.T @ (1 - np.tanh(x @ w) ** 2)
  np.testing.assert_allclose(np.asarray(gw), ref, rtol=1e-5)
  gw_jit = jax.jit(jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w))))(w)
  np.testing.assert_allclose(np.asarray(gw_jit), np.asarray(gw), rtol=1e-6)


# --- eager jnp shortcuts: the same results as the general path --------------------------------

def _same(fast, general):
  assert fast.dtype == general.dtype and fast.weak_type == general.weak_type
  assert np.shape(fast) == np.shape(general)
  np.testing.assert_array_equal(np.asarray(fast), np.asarray(general))


REDUCERS = [  # (name, extra kwargs, dtypes)
    ("sum", {}, [np.float32, np.int32, np.uint32, np.complex64, np.int8, np.bool_, np.float16]),
    ("prod", {}, [np.float32, np.int32, np.int16]),
    ("mean", {}, [np.float32, np.complex64, np.int32, np.float16]),
    ("max", {}, [np.float32, np.int32, np.bool_]),
    ("min", {}, [np.float32, np.uint8]),
    ("all", {}, [np.bool_, np.float32]),
    ("any", {}, [np.bool_, np.int32]),
    ("argmax", {}, [np.float32, np.int32]),
    ("argmin", {}, [np.float32]),
    ("sum", {"promote_integers": False}, [np.int8, np.int32]),
]


@pytest.mark.parametrize("name,kwargs,dts", REDUCERS, ids=lambda v: str(v))
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_reductions_fast_path_matches_general_path(name, kwargs, dts, shape):
  fn = getattr(jnp, name)
  axes = [None, 0, -1] if shape else [None]
  if len(shape) == 3:
    axes.append((0, 2))
  for dt in dts:
    raw = _data(shape, dt)
    for axis in axes:
      if name.startswith("arg") and isinstance(axis, tuple):
        continue
      for keepdims in (False, True):
        kw = dict(kwargs, axis=axis, keepdims=keepdims)
        fast = fn(jnp.asarray(raw), **kw)  # a strong ArrayImpl takes the shortcut
        general = fn(raw, **kw)  # a NumPy array goes through argument handling
        _same(fast, general)
        _same(jax.jit(lambda v, kw=kw: fn(v, **kw))(raw), general)


def test_reductions_fast_path_leaves_weak_and_special_arguments_to_general_path():
  w = lax.broadcast_in_dim(1.0, (3,), ())
  assert w.weak_type
  x = jnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
  _same(jnp.sum(x, where=x > 1), jnp.sum(np.asarray(x), where=np.asarray(x) > 1))
  _same(jnp.max(x, initial=10.0), jnp.asarray(np.float32(10)))
  assert jnp.sum(x, dtype=np.int32).dtype == np.int32
  assert not jnp.sum(w).weak_type and jnp.sum(w).dtype == np.float32
  with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
    jnp.max(jnp.zeros((0, 3)))
  with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
    jnp.argmax(jnp.zeros((0,)))
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.sum(x, axis=2)
  with pytest.raises(NotImplementedError):
    jnp.sum(x, out=x)


def test_array_methods_call_jnp():
  x = jnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
  _same(x.sum(axis=1), jnp.sum(x, axis=1))
  _same(x.mean(), jnp.mean(x))
  _same(x.argmax(), jnp.argmax(x))


MATMULS = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
           ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((1, 3, 4), (2, 4, 5)),
           ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (5, 4))]


@pytest.mark.parametrize("ls,rs", MATMULS)
@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int32, np.int32),
                                    (np.float32, np.int32), (np.float16, np.float16)])
def test_matmul_fast_path_matches_general_path(ls, rs, dtypes):
  a, b = _data(ls, dtypes[0]), _data(rs, dtypes[1])
  try:
    general = jnp.matmul(a, b)  # NumPy operands: the general path
  except (ValueError, TypeError) as e:
    with pytest.raises(type(e), match="mismatch|Incompatible|incompatible|same shape"):
      jnp.asarray(a) @ jnp.asarray(b)
    return
  _same(jnp.asarray(a) @ jnp.asarray(b), general)
  _same(jax.jit(jnp.matmul)(a, b), general)


def test_matmul_of_weak_arrays_is_weak_like_jax():
  # JAX 0.10.2's products end with a cast to the promoted type and its weak flag (checked:
  # weak @ weak, matmul, dot, inner and tensordot of weak operands are all weak there).
  weak = lax.broadcast_in_dim(1.0, (2, 2), ())
  assert weak.weak_type
  out = weak @ weak
  assert out.weak_type and out.dtype == np.float32
  np.testing.assert_array_equal(np.asarray(out), np.full((2, 2), 2, np.float32))
  strong = jnp.ones((2, 2), np.float32)
  assert not (strong @ weak).weak_type


@pytest.mark.parametrize("name", ["dot", "matmul", "inner", "tensordot", "vdot", "vecdot"])
def test_products_of_types_meeting_at_a_weak_type_are_weak(name):
  # Fuzz campaign 8 (seed 1102003384): uint64 with int16 promotes to weak float64 in JAX
  # 0.10.2 (its lattice joins them at f*): the product is weak though neither operand is.
  f = {"dot": jnp.dot, "matmul": jnp.matmul, "inner": lambda a, b: jnp.inner(a, b.T),
       "tensordot": lambda a, b: jnp.tensordot(a, b, 1),
       "vdot": lambda a, b: jnp.vdot(a[0], b[:, 0]),
       "vecdot": lambda a, b: jnp.vecdot(a[:, :3], b[:, :3])}[name]
  with x64():
    a, b = jnp.ones((3, 3), np.uint64), jnp.ones((3, 4), np.int16)
    for got in (f(a, b), jax.jit(f)(a, b)):
      assert got.dtype == np.float64 and got.weak_type
    a, b = jnp.ones((3, 3), np.int32), jnp.ones((3, 4), np.int16)  # strong: int32
    assert not f(a, b).weak_type and f(a, b).dtype == np.int32


@pytest.mark.parametrize("case", ["same", "scalar", "broadcast", "int_mask", "mixed"])
def test_where_fast_path_matches_general_path(case):
  c = _data((3, 4), np.bool_)
  x, y = _data((3, 4), np.float32), _data((3, 4), np.float32)
  args = {"same": (c, x, y), "scalar": (c, x, 0.0), "broadcast": (c[0], x, y),
          "int_mask": (c.astype(np.int32), x, y), "mixed": (c, x, y.astype(np.int32))}[case]
  general = jnp.where(*args)
  fast = jnp.where(*(jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args))
  _same(fast, general)
  np.testing.assert_array_equal(np.asarray(general), np.where(*args).astype(general.dtype))
  jaxpr = jax.make_jaxpr(jnp.where)(*(jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                       for a in args))
  assert [e.primitive.name for e in jaxpr.eqns] == ["jit"]  # still staged as `_where`
  with pytest.raises(TypeError, match="select_n requires all cases to have the same dtype"):
    lax.select_n(c, x, y.astype(np.int32))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.int64,
                                   np.float16, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "broadcast_case", "zero_false",
                                    "zero_true", "negative_zero"])
def test_big_select_is_bit_for_bit_np_where(dtype, layout):
  # Big selects go through the operands' bits (no per-element branch): every bit pattern,
  # NaN payloads and signed zeros included, must come out as np.where's.
  from jaxlite._src.lax.select import _BITWISE_SELECT_MIN
  shape = (64, 2 * _BITWISE_SELECT_MIN // 64)
  raw = RNG.integers(0, 256, (2, *shape, np.dtype(dtype).itemsize), dtype=np.uint8)
  on_false, on_true = (r.view(dtype).reshape(shape) for r in raw) if dtype != np.bool_ else \
      (raw[0, ..., 0] > 127, raw[1, ..., 0] > 127)
  which = RNG.random(shape) > 0.5
  if layout == "transposed":
    which, on_false, on_true = which.T, on_false.T, on_true.T
  elif layout == "broadcast_case":
    on_false = np.broadcast_to(on_false[:1], shape)
  elif layout in ("zero_false", "zero_true", "negative_zero"):  # a broadcast literal case
    zero = np.zeros((), dtype)
    if layout == "negative_zero" and np.dtype(dtype).kind in "fc":
      zero = np.array(-0.0, dtype)  # bits not all zero: the general path
    spread = np.broadcast_to(zero, shape)
    if layout == "zero_true":
      on_true = spread
    else:
      on_false = spread
  want = np.where(which, on_true, on_false)
  with x64(np.dtype(dtype).itemsize == 8 and np.dtype(dtype).kind != "c"):
    for select in (lax.select_n, jax.jit(lax.select_n)):
      got = select(which, on_false, on_true)
      assert got.dtype == want.dtype
      np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                    np.ascontiguousarray(want).view(np.uint8))


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.float64])
@pytest.mark.parametrize("zero", ["false", "true", "negative"])
def test_tile_select_of_a_size_one_zero_is_bitwise(dtype, zero):
  # In a tier-1 tile a broadcast literal case is a size-1 array (a lazy reshape): a zero
  # still selects through the bits (np.where mispredicted a branch per element: 250 against
  # 30 us at 128x512), and anything else gives np.where's result.
  from jaxlite._src.lax import select
  shape = (64, 2 * select._BITWISE_SELECT_MIN // 64)
  which = RNG.random(shape) > 0.5
  full = RNG.integers(-100, 100, shape).astype(dtype)
  one = np.array([[-0.0 if zero == "negative" and np.dtype(dtype).kind == "f" else 0]], dtype)
  cases = (full, one) if zero == "true" else (one, full)
  got = select._select_n_impl(which, *cases)
  want = np.where(which, cases[1], cases[0])
  assert got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
  bitwise = zero != "negative" or np.dtype(dtype).kind != "f"
  assert (select._select_bits(which, *cases) is not None) == bitwise


# --- erf_inv float32: blocked, in place, bit for bit the plain vectorized formula --------------

def _erf_inv_f32_reference(x):
  """Giles' float32 erf_inv written plainly: every step fused in float64, both branches."""
  from jaxlite._src.lax.special import _GILES_CENTRAL, _GILES_TAIL

  def horner(coefs, w):
    w64, p = w.astype(np.float64), np.full(w.shape, np.float32(coefs[0]))
    for c in coefs[1:]:
      p = (p.astype(np.float64) * w64 + np.float64(np.float32(c))).astype(np.float32)
    return p
  x = np.asarray(x, np.float32)
  with np.errstate(all="ignore"):
    w = -np.log1p(-x * x)
    central = horner(_GILES_CENTRAL, w - np.float32(2.5))
    tail = horner(_GILES_TAIL, np.sqrt(w) - np.float32(3))
    out = np.where(w < np.float32(5), central, tail) * x
    return np.where(np.abs(x) == 1, x * np.float32(np.inf), out)


def _erf_inv_inputs():
  specials = np.array([0, -0.0, 1, -1, np.nan, np.inf, -np.inf, 1.0000001, -1.5, 1e-45, -1e-45,
                       0.5, 0.9966, -0.9967, np.nextafter(np.float32(1), np.float32(0))],
                      np.float32)
  pattern = np.arange(0, 2**32, 2**32 // 40_000, dtype=np.uint64).astype(np.uint32)
  near_one = np.float32(1) - np.arange(1, 3000, dtype=np.float32) * np.float32(6e-8)
  return np.concatenate([specials, pattern.view(np.float32), RNG.uniform(-1, 1, 50_000)
                         .astype(np.float32), near_one, -near_one])


def test_erf_inv_f32_bit_identical_to_plain_formula():
  from jaxlite._src.lax import special
  x = _erf_inv_inputs()
  want = _erf_inv_f32_reference(x)
  assert x.size > 3 * special._ERF_INV_BLOCK  # several blocks, tails in most of them
  got = np.asarray(lax.erf_inv(x))
  np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
  for n in (1, 2, 3, 4, 5, 9):  # the Python-float Horner below 5 elements, arrays above
    for start in range(0, 400, 7):
      part = x[start:start + n]
      np.testing.assert_array_equal(np.asarray(lax.erf_inv(part)).view(np.uint32),
                                    _erf_inv_f32_reference(part).view(np.uint32))
  grid = x[:24].reshape(2, 3, 4)
  np.testing.assert_array_equal(np.asarray(lax.erf_inv(grid)).view(np.uint32),
                                _erf_inv_f32_reference(grid).view(np.uint32))
  scalar = lax.erf_inv(np.float32(0.25))
  assert scalar.shape == () and scalar.dtype == np.float32
  assert float(scalar) == float(_erf_inv_f32_reference(np.float32(0.25)))
  half = x[:500].astype(np.float16)
  np.testing.assert_array_equal(np.asarray(lax.erf_inv(half)),
                                _erf_inv_f32_reference(half).astype(np.float16))
  np.testing.assert_array_equal(np.asarray(jax.jit(lax.erf_inv)(x[:1000])).view(np.uint32),
                                want[:1000].view(np.uint32))


# --- shifts: a scalar amount in range skips the masking ----------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("op", [lax.shift_left, lax.shift_right_logical,
                                lax.shift_right_arithmetic], ids=lambda f: f.__name__)
def test_scalar_shifts_match_elementwise_shifts(dtype, op):
  info, width = np.iinfo(dtype), np.dtype(dtype).itemsize * 8
  x = RNG.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
  amounts = [0, 1, width // 2, width - 1, width] + ([-1] if info.min < 0 else [])
  with x64(width == 64):
    for y in amounts:
      scalar = op(x, np.asarray(y, dtype))  # the shortcut for amounts in [0, width)
      general = op(x, np.full(x.shape, y, dtype))  # per-element amounts: the masked path
      assert scalar.dtype == general.dtype == np.dtype(dtype)
      np.testing.assert_array_equal(np.asarray(scalar), np.asarray(general))


# --- random.normal: eager calls run the cached executable, with the same bits ------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 5), (40_000,)])
def test_normal_eager_executable_matches_op_by_op(dtype, shape):
  from jaxlite import random
  key = random.key(7)
  eager = random.normal(key, shape, dtype)
  with jax.disable_jit():
    op_by_op = random.normal(key, shape, dtype)
  jitted = jax.jit(lambda k: random.normal(k, shape, dtype))(key)
  for other in (op_by_op, jitted):
    assert other.dtype == eager.dtype and other.shape == eager.shape
    np.testing.assert_array_equal(np.asarray(other), np.asarray(eager))
  legacy = random.normal(random.PRNGKey(3), shape, dtype)
  with jax.disable_jit():
    np.testing.assert_array_equal(np.asarray(random.normal(random.PRNGKey(3), shape, dtype)),
                                  np.asarray(legacy))


def test_normal_float64_eager_executable_matches_op_by_op():
  from jaxlite import random
  with x64():
    key = random.key(11)
    eager = random.normal(key, (1000,), np.float64)
    with jax.disable_jit():
      op_by_op = random.normal(key, (1000,), np.float64)
    assert eager.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(op_by_op))


# --- scan: the whole loop as generated code, invariants hoisted --------------------------------

def _python_scan(f, init, xs, length=None, reverse=False):
  """lax.scan's meaning as a plain eager loop (the reference)."""
  n = length if xs is None else len(xs)
  carry, ys = init, [None] * n
  for i in (range(n - 1, -1, -1) if reverse else range(n)):
    carry, ys[i] = f(carry, None if xs is None else xs[i])
  return carry, ys


def _assert_tree_equal(a, b):
  la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    assert jnp.asarray(x).dtype == jnp.asarray(y).dtype
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


W = RNG.normal(size=(4, 4)).astype(np.float32)
B = RNG.normal(size=(4,)).astype(np.float32)
SCANS = {  # name -> (body, init, xs, length)
    "rnn": (lambda h, x: (jnp.tanh(h @ W + x + B),) * 2, np.zeros((3, 4), np.float32),
            RNG.normal(size=(6, 3, 4)).astype(np.float32), None),
    "swap_carries": (lambda c, x: ((c[1], c[0] + x), c[0]), (np.float32(1), np.float32(2)),
                     np.arange(5, dtype=np.float32), None),
    "old_carry_as_y": (lambda c, x: (c * 2 + x, c), np.ones(3, np.int32),
                       np.arange(12, dtype=np.int32).reshape(4, 3), None),
    "const_and_literal_ys": (lambda c, x: (c + 1.0, (B * 2, 3.0)), np.float32(0), None, 4),
    "no_ys": (lambda c, x: (c * x, None), np.ones(2, np.float32),
              RNG.normal(size=(5, 2)).astype(np.float32), None),
    "no_carry": (lambda c, x: (c, jnp.sin(x) * W[0, 0]), (),
                 RNG.normal(size=(5, 2)).astype(np.float32), None),
    "empty": (lambda c, x: (c, None), np.float32(1), None, 3),
    "zero_length": (lambda c, x: (c + x, x * 2), np.zeros(2, np.float32),
                    np.zeros((0, 2), np.float32), None),
}


@pytest.mark.parametrize("name", list(SCANS))
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_loop_matches_python_loop(name, reverse):
  body, init, xs, length = SCANS[name]
  want = _python_scan(body, init, xs, length, reverse)
  want = (want[0], jax.tree_util.tree_map(lambda *y: jnp.stack(y), *want[1])
          if want[1] and want[1][0] is not None else None)
  run = lambda i, x: lax.scan(body, i, x, length=length, reverse=reverse)
  for got in (run(init, xs), jax.jit(run)(init, xs)):
    _assert_tree_equal(got[0], want[0])
    if want[1] is not None:
      _assert_tree_equal(got[1], want[1])


def test_scan_loop_hoists_invariants_and_reuses_buffers():
  from jaxlite._src.compiler import numpy_codegen as cg
  xs = RNG.normal(size=(6, 3, 4)).astype(np.float32)
  body = lambda h, x: (jnp.tanh(h @ W + x + B),) * 2
  closed = jax.make_jaxpr(lambda h, x: lax.scan(body, h, x))(np.zeros((3, 4), np.float32), xs)
  (eqn,) = closed.eqns
  loop = cg.compile_scan(eqn.params["jaxpr"], eqn.params["num_consts"],
                         eqn.params["num_carry"], False)
  src = loop.__jaxlite_source__
  head, _, body_src = src.partition("for _i in range(_length):")
  assert "broadcast_in_dim" in head and "broadcast_in_dim" not in body_src  # B's broadcast
  assert body_src.count("np.matmul(") == 1 and "out=" in body_src
  assert loop is cg.compile_scan(eqn.params["jaxpr"], eqn.params["num_consts"],
                                 eqn.params["num_carry"], False)  # cached on the jaxpr


def test_scan_loop_keeps_hoisted_values_intact():
  # The hoisted `B * 2` is read every iteration: no ufunc in the loop may write into it.
  def body(carry, x):
    k = jnp.asarray(B) * 2.0
    return carry + k, k + x
  xs = RNG.normal(size=(4, 4)).astype(np.float32)
  carry, ys = jax.jit(lambda c, x: lax.scan(body, c, x))(np.zeros(4, np.float32), xs)
  np.testing.assert_array_equal(np.asarray(ys), B * 2 + xs)
  want = np.zeros(4, np.float32)
  for _ in range(4):
    want = want + B * np.float32(2)
  np.testing.assert_array_equal(np.asarray(carry), want)


# --- import: optional modules load on first use ------------------------------------------------

def test_import_leaves_optional_modules_unloaded_until_used():
  import subprocess
  import sys
  code = """
import sys, jaxlite
lazy = ("jaxlite._src.lax.control_flow", "jaxlite._src.lax.linalg", "jaxlite._src.lax.fft",
        "jaxlite._src.numpy.linalg", "jaxlite._src.numpy.fft", "jaxlite.random", "jaxlite.nn",
        "jaxlite.scipy")
print(sorted(m for m in lazy if m in sys.modules))
from jaxlite import lax
import jaxlite.numpy as jnp
print(lax.scan.__name__, lax.cond_p.name, lax.FftType.__name__, lax.linalg.__name__,
      jnp.linalg.__name__, jnp.fft.__name__)
print(all(n in lax.__all__ for n in ("scan", "fori_loop", "fft", "linalg")),
      all(n in jnp.__all__ for n in ("fft", "linalg")), "scan" in dir(lax))
"""
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, env={**__import__("os").environ,
                                        "PYTHONPATH": jax.__path__[0].rsplit("/", 1)[0]})
  lines = out.stdout.splitlines()
  assert lines == ["[]", ("scan cond FftType jaxlite.lax.linalg jaxlite.numpy.linalg "
                         "jaxlite.numpy.fft"), "True True True"]
  from jaxlite.lax import fori_loop, scan  # noqa: F401 - `from` imports see lazy names too


# --- transposes folded into the products that feed them ----------------------------------------

def test_reverse_mode_products_come_out_untransposed():
  x, w = _data((8, 5), np.float32), _data((5, 3), np.float32)
  loss = lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)
  closed = jax.make_jaxpr(jax.grad(loss))(w, x)
  assert "transpose" in [e.primitive.name for e in closed.eqns]  # printed like JAX
  src = numpy_codegen.compile_jaxpr(closed).__jaxlite_source__
  assert "np.transpose" not in src and "np.matmul(v" in src
  np.testing.assert_array_equal(np.asarray(jax.jit(jax.grad(loss))(w, x)),
                                np.asarray(jax.grad(loss)(w, x)))


@pytest.mark.parametrize("case", ["folded", "two_uses", "batched", "output"])
def test_fold_transposes_only_where_it_is_safe(case):
  from jaxlite._src.compiler import passes
  a, b = _data((4, 3), np.float32), _data((4, 5), np.float32)
  dims = (((0,), (0,)), ((), ()))
  if case == "folded":
    f = lambda a, b: lax.dot_general(a, b, dims).T * 2
  elif case == "two_uses":
    def f(a, b):
      d = lax.dot_general(a, b, dims)
      return d.T, d + 1
  elif case == "batched":
    a, b = _data((2, 4, 3), np.float32), _data((2, 4, 5), np.float32)
    f = lambda a, b: jnp.transpose(
        lax.dot_general(a, b, (((1,), (1,)), ((0,), (0,)))), (0, 2, 1))
  else:
    def f(a, b):
      d = lax.dot_general(a, b, dims)
      return d, d.T
  closed = jax.make_jaxpr(f)(a, b)
  jaxpr, _ = passes.optimize(closed)
  names = [e.primitive.name for e in jaxpr.eqns]
  assert ("transpose" in names) == (case != "folded")
  want = jax.tree_util.tree_leaves(f(a, b))
  got = jax.tree_util.tree_leaves(jax.jit(f)(a, b))
  for g, w in zip(got, want):
    assert g.shape == w.shape
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


# --- eager `+ - *` on Arrays (numpy/array_methods._eager_arith) -------------------------------

_ARITH = [("add", lambda a, b: a + b, lax.add), ("sub", lambda a, b: a - b, lax.sub),
          ("mul", lambda a, b: a * b, lax.mul)]
_ARITH_DTYPES = ["float32", "float16", "bfloat16", "int8", "int32", "uint8", "uint32",
                 "complex64", "bool"]
_PARTNERS = ["same", "weak_same", "int", "float", "big_int", "reflected_int",
             "reflected_float", "other_shape"]


@pytest.mark.parametrize("op", _ARITH, ids=[o[0] for o in _ARITH])
@pytest.mark.parametrize("dtype", _ARITH_DTYPES)
@pytest.mark.parametrize("partner", _PARTNERS)
def test_eager_arith_matches_general_path(op, dtype, partner):
  _, fast, prim = op
  def data(shape):
    if dtype == "bfloat16":
      return jnp.asarray(_data(shape, np.float32)).astype(jnp.bfloat16)
    return jnp.asarray(_data(shape, dtype))
  x = data((3, 4))
  y = {"same": lambda: data((3, 4)),
       "weak_same": lambda: x,
       "int": lambda: 3, "float": lambda: 1.5, "big_int": lambda: 300,
       "reflected_int": lambda: 2, "reflected_float": lambda: -0.5,
       "other_shape": lambda: data((4,))}[partner]()
  args = (y, x) if partner.startswith("reflected") else (x, y)
  if partner == "weak_same":  # two weakly typed arrays (float32 / int32) or x with itself
    scalar = {"float32": 2.0, "int32": 2}.get(dtype)
    if scalar is not None:
      w = jax.jit(lambda: lax.broadcast(scalar, (3, 4)))()
      assert w.weak_type
      args = (w, w)

  def general(a, b):
    # jnp's function is the general path: promotion, primitive bind, impl
    name = {"add": "add", "sub": "subtract", "mul": "multiply"}[op[0]]
    return getattr(jnp, name)(a, b)
  try:
    want = general(*args)
  except Exception as e:  # the fast path must raise the same
    with pytest.raises(type(e)):
      fast(*args)
    return
  got = fast(*args)
  assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  del prim


@pytest.mark.parametrize("scalar_type", [int, float])
def test_eager_scalar_ways_depend_on_x64_only_where_it_decides(scalar_type):
  # array_methods caches how a Python number meets each dtype by the dtype alone
  # (_SCALAR_WAYS), except where _x64_decides (by x64 too): the rule it caches
  # (_scalar_partner, keyed by x64) must say the same with x64 on and off everywhere else.
  from jaxlite._src.numpy import array_methods
  from jaxlite._src.numpy.util import _scalar_partner
  dts = [np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                               "uint32", "uint64", "float16", "float32", "float64",
                               "complex64", "complex128")] + [np.dtype(jnp.bfloat16)]

  def outcome(conv, value):
    if conv is None:
      return None
    try:
      with np.errstate(all="ignore"):  # (float16 of 2**40 overflows: to inf in both modes)
        return repr(conv(value))
    except Exception as e:  # noqa: BLE001 - an out-of-range int must fail alike too
      return type(e).__name__
  values = [scalar_type(v) for v in (0, 1, -1, 127, 300, 2**31 - 1, 2**40, -(2**63))]
  seen = {}
  for enabled in (False, True):
    with x64(enabled):
      for dt in dts:
        conv = _scalar_partner(scalar_type, dt, False)
        seen.setdefault(dt, []).append([outcome(conv, v) for v in values])
  differ = {dt for dt, (off, on) in seen.items() if off != on}
  assert all(array_methods._x64_decides(scalar_type, dt) for dt in differ), differ
  assert differ  # int64 meets a number differently: the x64 tables are needed
  assert not array_methods._x64_decides(scalar_type, np.dtype("float32"))  # x + 1: by dtype


def test_eager_arith_on_a_64_bit_array_follows_x64():
  # An int64 / float64 array made under x64 meets a Python number as the general path says in
  # either mode (without x64 the number is 32-bit and the result promotes as jnp.add's), and
  # an int8 array a Python int past int32's range (wraps with x64, OverflowError without).
  small = jnp.arange(3, dtype=jnp.int8)
  for enabled in (True, False, True):
    with x64(enabled):
      try:
        want = np.asarray(jnp.add(small, 2**40))
      except OverflowError:
        with pytest.raises(OverflowError):
          small + 2**40
      else:
        np.testing.assert_array_equal(np.asarray(small + 2**40), want)
  with x64(True):
    xi, xf = jnp.arange(3, dtype=jnp.int64), jnp.arange(3, dtype=jnp.float64)
    for x in (xi, xf):
      got, want = x + 1, jnp.add(x, 1)
      assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type) == (x.dtype, False)
  for x in (xi, xf):
    for _ in range(2):  # the second time from the cache
      got, want = x + 1, jnp.add(x, 1)
      assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
      np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_eager_arith_respects_debug_nans_and_jit_tracing():
  x = jnp.array([1.0, 0.0])
  with jax.debug_nans(True):
    with pytest.raises(FloatingPointError):
      x * float("nan")
  assert np.isnan(np.asarray(x * float("nan"))).all()
  # Under a trace the concrete Array's `+` is staged into the jaxpr, not computed.
  jaxpr = jax.make_jaxpr(lambda: x + 1.0)()
  assert "add" in str(jaxpr)


# --- the cached eager jit call's fast runner (jit_cache.CacheEntry.fast_runner) -----------

@pytest.mark.parametrize("fun,args", [
    (lambda v: v * 2 + 1, (np.ones(5, np.float32),)),
    (lambda v: v.astype(jnp.int8), (np.arange(4.0, dtype=np.float32),)),
    (lambda v: v.sum(), (np.arange(4, dtype=np.int32),)),
    (lambda v, w: (v + w, v * w), (np.ones(3, np.float32), np.arange(3.0, dtype=np.float32))),
    (lambda v: {"a": v}, (np.ones(2, np.float32),)),
    (lambda v: v > 1, (np.arange(3.0, dtype=np.float32),)),
    (lambda v: 2.0, (np.ones(1, np.float32),)),
])
def test_cached_jit_call_matches_first_call(fun, args):
  f = jax.jit(fun)
  arrays = [jnp.asarray(a) for a in args]
  first, second = f(*arrays), f(*arrays)  # trace and run; then the per-wrapper fast runner
  want = fun(*arrays)
  for got in (first, second):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
      g, w = jnp.asarray(g), jnp.asarray(w)
      assert (g.dtype, g.weak_type, g.shape) == (w.dtype, w.weak_type, w.shape)
      np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert jax.tree.structure(got) == jax.tree.structure(want)


def test_cached_jit_call_with_parameter_tuples():
  # `f(params, x)` with params a tuple or list of Arrays takes the fast path too: the cache key
  # tells tuples from lists and from flat arguments, and shapes/weak types inside them.
  f = jax.jit(lambda p, x: (p, p[0] * x + p[1]))
  a, b, x = jnp.ones(3), jnp.arange(3.0), jnp.full(3, 2.0)
  calls = [((a, b), x), ([a, b], x), ((a, b), x), ((jnp.ones(4), jnp.ones(4)), jnp.ones(4)),
           ((a, b), 2.0), ((jnp.ones(3, np.int32), b), x), ([a, b], x)]
  for args in calls:
    for _ in range(2):  # the first call traces, the second runs the fast runner
      got = f(*args)
      want = (args[0], args[0][0] * args[1] + args[0][1])
      assert jax.tree.structure(got) == jax.tree.structure(want)
      for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert (g.dtype, g.weak_type, g.shape) == (w.dtype, w.weak_type, w.shape)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  # 2 argument structures x 4 leaf signatures (the Python scalar call is not a fast one)
  assert len(f._fast_cache) == 4
  with pytest.raises(RuntimeError, match="deleted"):  # JAX: RuntimeError, warm or not
    gone = jnp.ones(3)
    gone.delete()
    f((a, gone), x)


def test_cached_jit_call_with_numpy_arguments():
  # NumPy arrays and scalars take the fast path as they are when no x64 setting changes their
  # dtype; float64 ones go the general way (canonicalized to float32 without x64).
  f = jax.jit(lambda p, x: (p[0] * x + p[1], x))
  w, b = np.arange(3, dtype=np.float32), np.float32(0.5)
  calls = [((w, b), np.ones(3, np.float32)), ((w, b), np.ones(3, np.float64)),
           ((w.astype(np.int32), np.int32(2)), np.ones(3, np.int32)), ((w, b), jnp.ones(3)),
           ([w, b], np.ones(3, np.float16))]
  for (p, x) in calls:
    for _ in range(2):
      got, x_in = f(p, x)
      assert x_in.dtype == jnp.asarray(x).dtype
      want = jnp.asarray(p[0]) * jnp.asarray(x) + jnp.asarray(p[1])
      assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape)
      np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert not any(isinstance(k, tuple) and any(
      isinstance(s, tuple) and np.dtype(np.float64) in s for s in k[0]) for k in f._fast_cache)
  with x64():
    got, _ = f((w.astype(np.float64), np.float64(1)), np.ones(3, np.float64))
    got, _ = f((w.astype(np.float64), np.float64(1)), np.ones(3, np.float64))
    assert got.dtype == np.float64


def test_cached_jit_call_checks_nans_when_asked():
  f = jax.jit(lambda v: v * np.float32(np.nan))
  x = jnp.ones(2)
  f(x), f(x)
  with jax.debug_nans(True):
    with pytest.raises(FloatingPointError):
      f(x)
  assert np.isnan(np.asarray(f(x))).all()


@pytest.mark.parametrize("fun", [
    lambda a, b: jnp.sin(a) * b,  # one result: the one-result runner
    lambda a, b: (a.sum(), -b, a * b),  # a tuple: names a mesh (a * b) or not (sum, neg)
])
def test_cached_jit_call_under_set_mesh_looks_its_entry_up_once(fun, monkeypatch):
  # Arguments on no mesh, called under `jax.set_mesh`: the results are placed by which of them
  # name the context mesh (the traced jaxpr decides). The fast path keeps that beside its
  # runner; it used to look the cache entry up again on every call (pytree flattening and
  # all), the eager slow path's work on a hot call.
  looked_up = []
  get_entry = type(jax.jit(fun))._get_entry

  def counting(self, *args, **kwargs):
    looked_up.append(self)
    return get_entry(self, *args, **kwargs)
  monkeypatch.setattr(type(jax.jit(fun)), "_get_entry", counting)
  f = jax.jit(fun)
  a, b = jnp.arange(6.0).reshape(2, 3), jnp.full((2, 3), 3.0)
  mesh = jax.make_mesh((1,), ("x",))
  with jax.sharding.set_mesh(mesh):
    first = f(a, b)
    n_first = len(looked_up)
    for _ in range(5):
      again = f(a, b)
      for g, w in zip(jax.tree.leaves(again), jax.tree.leaves(first)):
        assert g.sharding == w.sharding
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  assert 1 <= n_first <= 2 and len(looked_up) == n_first  # the repeat calls looked up none
  for g, w in zip(jax.tree.leaves(first), jax.tree.leaves(fun(a, b))):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
