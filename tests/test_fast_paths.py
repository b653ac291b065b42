"""Fast paths of the hot code (eager shortcuts, cached plans, tier-0 lowerings): each one must
give exactly what the general path gives (values bit for bit, dtypes, weak types, errors)."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.compiler import numpy_codegen

RNG = np.random.default_rng(0)


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
  f = lambda x, y: lax.dot_general(x, y, dims)  # noqa: E731
  np.testing.assert_array_equal(np.asarray(jax.jit(f)(a, b)), np.asarray(got))
  inlined = "np.matmul(" in _source(f, a, b)
  assert inlined == (lowered and dtype != np.float16)


def test_dot_general_lowering_needs_equal_dtypes_and_no_widening():
  a, b = _data((3, 4), np.float32), _data((4, 5), np.int32)
  f = lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())))  # noqa: E731
  assert "np.matmul(" not in _source(f, a, b)
  np.testing.assert_allclose(np.asarray(jax.jit(f)(a, b)), a @ b.astype(np.float32), rtol=1e-6)
  g = lambda x, y: lax.dot(x, y, preferred_element_type=np.float32)  # noqa: E731
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
        _same(jax.jit(lambda v: fn(v, **kw))(raw), general)


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
    with pytest.raises(type(e), match="mismatch|Incompatible|incompatible"):
      jnp.asarray(a) @ jnp.asarray(b)
    return
  _same(jnp.asarray(a) @ jnp.asarray(b), general)
  _same(jax.jit(jnp.matmul)(a, b), general)


def test_matmul_of_weak_arrays_stays_strong_like_jax():
  weak = lax.broadcast_in_dim(1.0, (2, 2), ())
  assert weak.weak_type
  out = weak @ weak
  assert not out.weak_type and out.dtype == np.float32
  np.testing.assert_array_equal(np.asarray(out), np.full((2, 2), 2, np.float32))


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
