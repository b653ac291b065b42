"""jnp sorting and comparison helpers: sort, argsort, lexsort, searchsorted, partition, clip,
isclose, allclose, array_equal, array_equiv, on the lax sort primitive and elementwise ops.

Functions that JAX stages as named jit eqns (sort, argsort, clip, isclose…) use internal_jit
under the same names so printed jaxprs match.
"""
from __future__ import annotations

import inspect
import operator
import warnings

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import reductions as red
from jaxlite._src.lax import sort as lax_sort
from jaxlite._src.lax.creation import iota_p
from jaxlite._src.numpy import ufuncs
from jaxlite._src.numpy.elementwise_extra import iscomplexobj
from jaxlite._src.numpy.where_reshape import reshape
from jaxlite._src.numpy.util import (canonicalize_axis, check_arraylike, convert, dtype_weak,
                                     promote_dtypes, promote_dtypes_inexact, shape_of)


def _array(name, a):
  check_arraylike(name, a)
  if isinstance(a, core.Array):  # arrays, tracers and typed PRNG key arrays
    return a
  from jaxlite._src.numpy.creation import asarray
  return asarray(a)


def _rev(x, axis):
  from jaxlite._src.lax import shape as lax_shape
  return lax_shape.rev_p.bind(x, dimensions=(axis,))


# --- sort, argsort, lexsort --------------------------------------------------------------------

@internal_jit(static_argnames=("axis", "stable", "descending"), name="sort")
def _sort(a, axis=-1, stable=True, descending=False):
  if axis is None:
    a, axis = reshape(a, (-1,)), 0
  dim = canonicalize_axis(axis, len(shape_of(a)))
  out = lax_sort.sort_p.bind(a, dimension=dim, is_stable=stable, num_keys=1)[0]
  return _rev(out, dim) if descending else out


def _check_sort_args(name, kind, order):
  if kind is not None:
    raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                    "stable=False to specify sort stability.")
  if order is not None:
    raise TypeError(f"'order' argument to {name} is not supported.")


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
  """jnp.sort: a sorted copy along `axis` (flattened when None); NaNs go last."""
  a = _array("sort", a)
  _check_sort_args("sort", kind, order)
  return _sort(a, axis=axis if axis is None else operator.index(axis), stable=bool(stable),
               descending=bool(descending))


@internal_jit(static_argnames=("axis", "stable", "descending", "dtype"), name="argsort")
def _argsort(a, axis=-1, stable=True, descending=False, dtype=None):
  if axis is None:
    a, axis = reshape(a, (-1,)), 0
  shape = tuple(shape_of(a))
  dim = canonicalize_axis(axis, len(shape))
  index = iota_p.bind(dtype=dtype or dtypes.default_int_dtype(), shape=shape, dimension=dim,
                      sharding=None)
  if descending and stable:
    # A stable ascending sort of the reversed array, reversed back: ties keep index order.
    a, index = _rev(a, dim), _rev(index, dim)
  _, perm = lax_sort.sort_p.bind(a, index, dimension=dim, is_stable=stable, num_keys=1)
  return _rev(perm, dim) if descending else perm


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
  """jnp.argsort: the indices that sort `a` along `axis` (stable unless `stable=False`)."""
  a = _array("argsort", a)
  _check_sort_args("argsort", kind, order)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "argsort")
  return _argsort(a, axis=axis if axis is None else operator.index(axis), stable=bool(stable),
                  descending=bool(descending), dtype=dtype)


@internal_jit(static_argnames=("axis",), name="lexsort")
def _lexsort(keys, axis=-1):
  shape = tuple(shape_of(keys[0]))
  dim = canonicalize_axis(axis, len(shape))
  index = iota_p.bind(dtype=dtypes.default_int_dtype(), shape=shape, dimension=dim,
                      sharding=None)
  outs = lax_sort.sort_p.bind(*keys[::-1], index, dimension=dim, is_stable=True,
                              num_keys=len(keys))
  return outs[-1]


def lexsort(keys, axis=-1):
  """jnp.lexsort: indices sorting by the last key first, then the ones before it."""
  keys = tuple(_array("lexsort", k) for k in keys)
  if not keys:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  if len({tuple(shape_of(k)) for k in keys}) != 1:
    raise ValueError("all keys need to be the same shape")
  if not shape_of(keys[0]):
    raise TypeError("lexsort keys must be at least 1-dimensional")
  return _lexsort(keys, axis=operator.index(axis))


# --- searchsorted ------------------------------------------------------------------------------

def _sort_key(x):
  """x with -0 made 0 and every NaN one NaN: the comparison key of JAX's sort comparators."""
  from jaxlite._src.lax.convenience import full_like
  zero = ew.eq_p.bind(x, _zero_like_scalar(x))
  key = ew.select_n_p.bind(zero, x, full_like(x, 0))
  return ew.select_n_p.bind(ew.ne_p.bind(x, x), key, full_like(key, np.nan))


def _zero_like_scalar(x):
  return dtypes.TypedFloat(0.0, dtype_weak(x)[0]) if dtypes.is_inexact(dtype_weak(x)[0]) \
      else dtype_weak(x)[0].type(0)


def _sort_keys(x):
  d = dtype_weak(x)[0]
  if d.kind == "c":
    return [_sort_key(ew.real_p.bind(x)), _sort_key(ew.imag_p.bind(x))]
  return [_sort_key(x)] if d.kind == "f" or dtypes.is_inexact(d) else [x]


def _sort_compare(x, y, or_equal):
  """x < y (or x <= y) in sort order (-0 == 0, NaN last), lexicographic over complex parts."""
  from jaxlite._src.lax.identity_ops import eq_to_p, le_to_p, lt_to_p
  p = None
  for xk, yk in zip(_sort_keys(x)[::-1], _sort_keys(y)[::-1]):
    p = ((le_to_p if or_equal else lt_to_p).bind(xk, yk) if p is None else
         ew.or_p.bind(lt_to_p.bind(xk, yk), ew.and_p.bind(eq_to_p.bind(xk, yk), p)))
  return p


@internal_jit(static_argnames=("side", "dtype"), name="_searchsorted_scan_impl")
def _searchsorted_scan(a, v, side, dtype):
  """Binary search of the sorted 1-D `a` for each query, a scan of ceil(log2(n + 1)) halvings
  of [low, high) in unsigned integers (vmapped over the query's axes), as JAX's default."""
  from jaxlite._src.lax import convenience
  from jaxlite._src.transforms.vmap_api import vmap
  n = shape_of(a)[0]
  if n == 0:
    return convenience.full(shape_of(v), 0, dtype)
  if shape_of(v):
    return vmap(lambda a_, v_: _searchsorted_scan(a_, v_, side=side, dtype=dtype),
                in_axes=(None, 0))(a, v)
  from jaxlite._src.lax.control_flow.loops import scan
  unsigned = np.dtype(np.uint64 if dtype.itemsize == 8 else np.uint32)

  def halve(state, _):
    low, high = state
    mid = low + (high - low) // 2  # this form cannot overflow
    go_left = _sort_compare(v, a[mid], or_equal=side == "left")
    return (ew.select_n_p.bind(go_left, mid, low), ew.select_n_p.bind(go_left, high, mid)), ()
  levels = int(np.ceil(np.log2(n + 1)))
  (_, high), _ = scan(halve, (unsigned.type(0), unsigned.type(n)), (), length=levels)
  return high.astype(dtype)


@internal_jit(static_argnames=("side", "method"), name="searchsorted")
def _searchsorted(a, v, sorter=None, side="left", method="scan"):
  from jaxlite._src.numpy.creation import asarray
  # Arrays, also on the eager path that runs this body on NumPy values: the scan body indexes
  # `a` with a traced position
  a, v = promote_dtypes(asarray(a), asarray(v))
  if sorter is not None:
    a = a[sorter]
  # The index dtype fits the length of `a` (JAX's int_dtype_for_dim): int32 even under x64.
  n = shape_of(a)[0]
  dtype = np.dtype(np.int64 if n > np.iinfo(np.int32).max else np.int32)
  if method == "scan":
    return _searchsorted_scan(a, v, side=side, dtype=dtype)
  return _searchsorted_compare_all(a, v, side=side, dtype=dtype)


@internal_jit(static_argnames=("side", "dtype"), name="_searchsorted_compare_all_impl")
def _searchsorted_compare_all(a, v, side, dtype):
  """Every (a[i], v) comparison in sort order, a's axis first, counted (method='compare_all')."""
  from jaxlite._src.transforms.vmap_api import vmap
  before = vmap(lambda ai, v_: _sort_compare(ai, v_, or_equal=side != "left"),
                in_axes=(0, None))(a, v)
  return red.reduce_sum_p.bind(convert(before, dtype, False), axes=(0,), out_sharding=None)


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """jnp.searchsorted: where `v` would be inserted into the sorted 1-D `a`."""
  arrays = (a, v) if sorter is None else (a, v, sorter)
  check_arraylike("searchsorted", *arrays)
  if len(np.shape(a)) != 1:
    raise ValueError("a should be 1-dimensional")
  if side not in ("left", "right"):
    raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                     "['left', 'right'].")
  if method not in ("scan", "scan_unrolled", "compare_all", "sort"):
    raise ValueError(f"invalid argument method={method!r}, expected one of "
                     "['compare_all', 'scan', 'scan_unrolled', 'sort']")
  method = "scan" if method in ("scan_unrolled",) else method
  method = "compare_all" if method == "sort" else method  # same answer; JAX cosorts
  given = {} if sorter is None else {"sorter": sorter}
  return _searchsorted(a, v, side=side, method=method, **given)


# --- partition ---------------------------------------------------------------------------------

def partition(a, kth, axis=-1):
  """jnp.partition: the k smallest first (sorted, as JAX returns them), then the rest."""
  a = _array("partition", a)
  nd = len(shape_of(a))
  axis = canonicalize_axis(axis, nd)
  kth = operator.index(kth)
  n = shape_of(a)[axis]
  kth = kth + n if kth < 0 else kth
  out = sort(a, axis=axis)
  return out if kth < n else out


def argpartition(a, kth, axis=-1):
  """jnp.argpartition: indices that partition `a` around `kth` (a full stable argsort)."""
  a = _array("argpartition", a)
  return argsort(a, axis=axis)


# --- clip and closeness ------------------------------------------------------------------------

_CLIP_COMPLEX = ("Clip received a complex value either through the input or the min/max "
                 "keywords. Complex values have no ordering and cannot be clipped. Please "
                 "convert to a real value or array by taking the real or imaginary "
                 "components via jax.numpy.real/imag respectively.")


@internal_jit(name="clip")
def _clip(arr, min=None, max=None):  # noqa: A002 - jnp's argument names
  # The bounds promote with the array as jnp.maximum/minimum promote (an int array clipped
  # with float bounds is float, as JAX's), never cast down to the array's dtype.
  if any(iscomplexobj(b) for b in (min, max)):  # JAX's check, inside its jit: asarray's errors
    raise ValueError(_CLIP_COMPLEX)
  if min is not None:
    arr = ufuncs.maximum(min, arr)
  if max is not None:
    arr = ufuncs.minimum(max, arr)
  return arr


def clip(arr=None, /, *bounds, a=None, a_min=None, a_max=None, **named):
  """jnp.clip(arr, /, min=None, max=None): values limited to [min, max] (either may be None).

  Bounds reach the jitted `clip` as they were passed: JAX's jnp.clip is a jit, so keyword
  bounds are its kwargs and its jaxpr takes them sorted by name (`max` before `min`)."""
  if len(bounds) > 2:
    raise TypeError(f"clip() takes from 0 to 3 positional arguments but {len(bounds) + 1} were "
                    "given")
  for k in named:
    if k not in ("min", "max"):
      raise TypeError(f"clip() got an unexpected keyword argument '{k}'")
    if ("min", "max").index(k) < len(bounds):
      raise TypeError(f"clip() got multiple values for argument '{k}'")
  if a is not None:
    warnings.warn("Passing `a` to jnp.clip is deprecated; pass the array positionally.",
                  DeprecationWarning, stacklevel=2)
    arr = a if arr is None else arr
  if a_min is not None or a_max is not None:
    warnings.warn("The a_min and a_max arguments to jnp.clip are deprecated; use min and max.",
                  DeprecationWarning, stacklevel=2)
    given = dict(zip(("min", "max"), bounds), **named)
    bounds, named = (), {"min": a_min if given.get("min") is None else given["min"],
                         "max": a_max if given.get("max") is None else given["max"]}
  if arr is None:
    raise ValueError("No input was provided to the clip function.")
  arr = _array("clip", arr)
  if dtype_weak(arr)[0].kind == "c":
    raise ValueError(_CLIP_COMPLEX)
  return _clip(arr, *bounds, **named)


clip.__signature__ = inspect.Signature([
    inspect.Parameter("arr", inspect.Parameter.POSITIONAL_ONLY, default=None),
    inspect.Parameter("min", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
    inspect.Parameter("max", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)])


_RTOL, _ATOL = 1e-05, 1e-08


def _tolerances(rtol, atol) -> dict:
  """The tolerances the caller passed: a default (the very default object) stays out of the jit
  call, as in JAX, where it is a constant of the traced body, not an argument."""
  return {k: v for k, v, d in (("rtol", rtol, _RTOL), ("atol", atol, _ATOL)) if v is not d}


@internal_jit(static_argnames=("equal_nan",), name="isclose")
def _isclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=False):
  # JAX's order: the common dtype, then equal ranks (size-1 axes stay: the lax ops broadcast
  # them), then integers as the default float (2**31 - 1 and 2**31 - 2 are close in f32), then
  # the tolerances in that float type.
  a, b = _same_rank(*promote_dtypes(a, b))
  a, b = promote_dtypes_inexact(a, b)
  dtype = dtype_weak(a)[0]
  rtol, atol = convert(rtol, _real(dtype), False), convert(atol, _real(dtype), False)
  # jnp's logical ufuncs, as JAX's: weakly typed booleans (from a weak operand) are made strong
  both_nan = ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b))
  finite_b = ufuncs.isfinite(b)
  diff = ew.abs_p.bind(ew.sub_p.bind(a, b))
  tol = ew.add_p.bind(atol, ew.mul_p.bind(rtol, ew.abs_p.bind(b)))
  close = ew.le_p.bind(diff, tol)
  out = ufuncs.logical_or(ew.eq_p.bind(a, b), ufuncs.logical_and(finite_b, close))
  return ufuncs.logical_or(out, both_nan) if equal_nan else out


def _real(dtype):
  return np.dtype(np.float32 if dtype == np.complex64 else np.float64) if dtype.kind == "c" \
      else dtype


def _same_rank(a, b):
  """Equal ranks only (incompatible sizes meet in the first lax op: its TypeError, as JAX's)."""
  from jaxlite._src.numpy.util import promote_shapes
  return promote_shapes("isclose", a, b)


def _same_shape(a, b):
  from jaxlite._src.numpy.util import promote_shapes
  from jaxlite._src.numpy.where_reshape import broadcast_arrays
  a, b = promote_shapes("isclose", a, b)
  if tuple(shape_of(a)) != tuple(shape_of(b)) and shape_of(a) and shape_of(b):
    try:
      a, b = broadcast_arrays(a, b)
    except ValueError:  # JAX's arguments meet in a lax op first: its TypeError
      raise TypeError(f"isclose got incompatible shapes for broadcasting: "
                      f"{tuple(shape_of(a))}, {tuple(shape_of(b))}.") from None
  return a, b


def _is_key(x) -> bool:
  dt = getattr(x, "dtype", None)
  return dt is not None and dtypes.issubdtype(dt, dtypes.extended)


def _keys_equal(fun_name, a, b):
  """Elementwise equality of two PRNG key arrays (JAX compares keys by equality in isclose,
  allclose and array_equal): the `eq` primitive on the keys themselves, as JAX stages it."""
  if not (_is_key(a) and _is_key(b)) or a.dtype != b.dtype:
    raise TypeError(f"{fun_name}: a PRNG key array can only be compared with a key array of the "
                    f"same implementation, got {getattr(a, 'dtype', type(a))} and "
                    f"{getattr(b, 'dtype', type(b))}")
  return ew.eq_p.bind(*_broadcast_pair(a, b))


def _broadcast_pair(x, y):
  from jaxlite._src.numpy.where_reshape import broadcast_arrays
  return broadcast_arrays(x, y)


def isclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=False):
  """jnp.isclose: |a - b| <= atol + rtol * |b|, elementwise."""
  if _is_key(a) or _is_key(b):
    return _keys_equal("isclose", a, b)
  a, b = _array("isclose", a), _array("isclose", b)
  return _isclose(a, b, equal_nan=bool(equal_nan), **_tolerances(rtol, atol))


@internal_jit(static_argnames=("equal_nan",), name="allclose")
def _allclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=False):
  close = _isclose(a, b, rtol, atol, equal_nan=equal_nan)  # JAX passes both on, defaults too
  return red.reduce_and_p.bind(close, axes=tuple(range(len(shape_of(close)))))


def allclose(a, b, rtol=_RTOL, atol=_ATOL, equal_nan=False):
  """jnp.allclose: whether isclose holds everywhere."""
  if _is_key(a) or _is_key(b):
    eq = _keys_equal("allclose", a, b)
    return red.reduce_and_p.bind(eq, axes=tuple(range(len(shape_of(eq)))))
  a, b = _array("allclose", a), _array("allclose", b)
  return _allclose(a, b, equal_nan=bool(equal_nan), **_tolerances(rtol, atol))


def array_equal(a1, a2, equal_nan=False):
  """jnp.array_equal: same shape and equal elements (NaNs equal when `equal_nan`)."""
  if _is_key(a1) or _is_key(a2):
    if _is_key(a1) and _is_key(a2) and tuple(a1.shape) != tuple(a2.shape):
      from jaxlite._src.numpy.creation import array
      return array(False)
    eq = _keys_equal("array_equal", a1, a2)
    return red.reduce_and_p.bind(eq, axes=tuple(range(len(shape_of(eq)))))
  a1, a2 = _array("array_equal", a1), _array("array_equal", a2)
  if tuple(shape_of(a1)) != tuple(shape_of(a2)):
    from jaxlite._src.numpy.creation import array
    return array(False)
  return _all_equal(a1, a2, equal_nan)


def array_equiv(a1, a2):
  """jnp.array_equiv: equal after broadcasting to a common shape."""
  a1, a2 = _array("array_equiv", a1), _array("array_equiv", a2)
  try:
    np.broadcast_shapes(tuple(shape_of(a1)), tuple(shape_of(a2)))
  except ValueError:
    from jaxlite._src.numpy.creation import array
    return array(False)
  return _all_equal(a1, a2, False)


def _all_equal(a1, a2, equal_nan):
  a1, a2 = promote_dtypes(a1, a2)
  a1, a2 = _same_shape(a1, a2)
  eq = ew.eq_p.bind(a1, a2)
  if equal_nan and dtypes.is_inexact(dtype_weak(a1)[0]):
    eq = ew.or_p.bind(eq, ew.and_p.bind(ew.ne_p.bind(a1, a1), ew.ne_p.bind(a2, a2)))
  if dtype_weak(eq)[1]:  # JAX's answer is a strong bool even from weak operands
    eq = casts.convert_element_type_p.bind(eq, new_dtype=np.dtype(bool), weak_type=False)
  return red.reduce_and_p.bind(eq, axes=tuple(range(len(shape_of(eq)))))
