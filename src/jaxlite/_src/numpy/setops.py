"""Data-dependent-size jnp functions: nonzero/argwhere/flatnonzero, unique and the 1-D set ops.

Their output sizes depend on values, so under tracing they need a static `size=` (JAX's rule);
results are padded with `fill_value`. Concrete inputs work without it, as in JAX.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.numpy import indexing, where_reshape as lax_numpy, shape_ops
from jaxlite._src.numpy.util import dtype_weak

_INT = np.dtype(np.int32)


def _asarray(a):
  if isinstance(a, core.Array):
    return a
  from jaxlite._src.numpy.creation import asarray
  return asarray(a)


def _static_size(x, what: str) -> int:
  """A count computed from `x` (an int array), which must be concrete when no size is given."""
  if isinstance(x, core.Tracer):
    x = core.concrete_or_error(None, x, what)
  elif isinstance(x, core.Array):
    x = x._host_value()
  return int(x)


def _arange(n):
  from jaxlite._src.numpy.creation import arange
  return arange(n)


# --- nonzero and friends --------------------------------------------------------------------------

def nonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements, one array per dimension (padded to `size`)."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.reductions import cumsum
  from jaxlite._src.numpy.reductions import sum as _sum
  arr = _asarray(a)
  if arr.ndim == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                     "jnp.atleast_1d(scalar).nonzero() instead.")
  mask = arr if dtype_weak(arr)[0] == np.bool_ else ufuncs.not_equal(arr, 0)
  if size is None:
    size = _static_size(_sum(mask), "The size argument of jnp.nonzero must be statically "
                        "specified to use jnp.nonzero within JAX transformations.")
  size = int(size)
  index_dtype = dtypes.default_int_dtype()  # JAX's indices: int64 under x64, else int32
  if size == 0 or arr.size == 0:
    from jaxlite._src.numpy.creation import zeros
    return tuple(zeros(size, index_dtype) for _ in arr.shape)
  flat = lax_numpy.ravel(mask)
  # The k-th output is the number of positions whose running count of hits is <= k.
  bins = _bincount(cumsum(flat), size, index_dtype)
  flat_indices = cumsum(bins)
  # Python ints (weak): no promotion against the indices, strict promotion included
  strides = [int(s) for s in np.cumprod(arr.shape[::-1])[::-1] // arr.shape]
  out = tuple(ufuncs.remainder(ufuncs.floor_divide(flat_indices, stride), n)
              for stride, n in zip(strides, arr.shape))
  if fill_value is not None:
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * arr.ndim
    if len(fills) != arr.ndim or any(np.shape(f) != () for f in fills):
      raise ValueError(f"fill_value must be a scalar or a tuple of length {arr.ndim}; "
                       f"got {fill_value}")
    past_end = ufuncs.greater_equal(_arange(size), _sum(mask))
    out = tuple(lax_numpy.where(past_end, f, o) for f, o in zip(fills, out))
  return out


def _bincount(x, length, dtype=_INT):
  from jaxlite._src.numpy.creation import zeros
  from jaxlite._src.numpy.sorting import clip
  bins = zeros(length, dtype)
  return bins.at[clip(x, 0)].add(1)


def flatnonzero(a, *, size=None, fill_value=None):
  return nonzero(lax_numpy.ravel(_asarray(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """The (N, ndim) array of indices of the nonzero elements."""
  a = _asarray(a)
  result = lax_numpy.transpose(shape_ops.vstack(
      nonzero(shape_ops.atleast_1d(a), size=size, fill_value=fill_value)))
  if a.ndim == 0:
    return lax_numpy.reshape(indexing.getitem(result, slice(0, 0)), (result.shape[0], 0))
  return lax_numpy.reshape(result, (result.shape[0], a.ndim))


# --- unique ---------------------------------------------------------------------------------------

class _UniqueAllResult(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


class _UniqueCountsResult(NamedTuple):
  values: object
  counts: object


class _UniqueInverseResult(NamedTuple):
  values: object
  inverse_indices: object


def _sorted_with_mask(arr, equal_nan):
  """(permutation, sorted values, mask of first occurrences) of a 1-D array."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.sorting import argsort
  perm = argsort(arr)
  aux = indexing.getitem(arr, perm)
  differs = ufuncs.not_equal(aux[1:], aux[:-1])
  if equal_nan and dtypes.is_inexact(aux.dtype):
    both_nan = ufuncs.logical_and(ufuncs.isnan(aux[1:]), ufuncs.isnan(aux[:-1]))
    differs = ufuncs.logical_and(differs, ufuncs.logical_not(both_nan))
  true = np.ones((1,), bool)
  return perm, aux, shape_ops.concatenate([true, differs])


def _sorted_rows_with_mask(arr):
  """The same for the rows of a 2-D array (lexicographic order)."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.reductions import any as _any
  from jaxlite._src.numpy.sorting import lexsort
  keys = [arr[:, j] for j in range(arr.shape[1] - 1, -1, -1)]
  perm = lexsort(keys) if keys else _arange(arr.shape[0])
  aux = indexing.getitem(arr, perm)
  differs = _any(ufuncs.not_equal(aux[1:], aux[:-1]), axis=1)
  return perm, aux, shape_ops.concatenate([np.ones((1,), bool), differs])


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
  """Sorted unique elements (or slices along `axis`), with NumPy's optional outputs."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.reductions import cumsum
  from jaxlite._src.numpy.reductions import sum as _sum
  arr = _asarray(ar)
  if arr.size == 0:
    return _empty_unique(arr, axis, return_index, return_inverse, return_counts, size,
                         fill_value)
  if axis is None:
    perm, aux, mask = _sorted_with_mask(lax_numpy.ravel(arr), equal_nan)
    moved = None
  else:
    ax = shape_ops.canonicalize_axis(axis, arr.ndim)
    moved = shape_ops.moveaxis(arr, ax, 0)
    perm, aux, mask = _sorted_rows_with_mask(
        lax_numpy.reshape(moved, (moved.shape[0], -1)))
  n = perm.shape[0]
  count = _sum(mask)
  if size is None:
    size = _static_size(count, "The size argument of jnp.unique must be statically "
                        "specified to use jnp.unique within JAX transformations.")
  # bounds[k]: where the k-th distinct value begins in sorted order (n past the end).
  bounds = nonzero(mask, size=size + 1, fill_value=n)[0]
  starts = bounds[:size]
  valid = ufuncs.less(_arange(size), count)
  values = indexing.getitem(aux, starts, mode="clip")
  pad = values[0] if fill_value is None else fill_value
  values = lax_numpy.where(valid if values.ndim == 1 else valid[:, None], values, pad)
  if moved is not None:
    values = shape_ops.moveaxis(
        lax_numpy.reshape(values, (values.shape[0],) + moved.shape[1:]), 0, ax)
  outs = [values]
  if return_index:
    idx = indexing.getitem(perm, starts, mode="clip")
    outs.append(lax_numpy.where(valid, idx, idx[0]))
  if return_inverse:
    from jaxlite._src.numpy.creation import zeros
    inverse = zeros(n, _INT).at[perm].set(cumsum(mask) - 1)
    outs.append(lax_numpy.reshape(inverse, arr.shape) if axis is None else inverse)
  if return_counts:
    outs.append(lax_numpy.where(valid, ufuncs.subtract(bounds[1:], starts), 0))
  return outs[0] if len(outs) == 1 else tuple(outs)


def _empty_unique(arr, axis, return_index, return_inverse, return_counts, size, fill_value):
  from jaxlite._src.numpy.creation import full, zeros
  if size:
    if fill_value is None:
      raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                       "fill_value must be specified")
    values = full((size,), fill_value, arr.dtype)
  else:
    values = lax_numpy.ravel(arr) if axis is None else arr
  n = size or 0
  outs = [values]
  if return_index:
    outs.append(zeros(n, _INT))
  if return_inverse:
    outs.append(zeros(arr.shape if axis is None else (0,), _INT))
  if return_counts:
    outs.append(zeros(n, _INT))
  return outs[0] if len(outs) == 1 else tuple(outs)


def unique_values(x, /, *, size=None, fill_value=None):
  return unique(x, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
  values, counts = unique(x, return_counts=True, size=size, fill_value=fill_value)
  return _UniqueCountsResult(values, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
  values, inverse = unique(x, return_inverse=True, size=size, fill_value=fill_value)
  return _UniqueInverseResult(values, inverse)


def unique_all(x, /, *, size=None, fill_value=None):
  values, index, inverse, counts = unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, size=size,
                                          fill_value=fill_value)
  return _UniqueAllResult(values, index, inverse, counts)


# --- set operations on 1-D arrays -----------------------------------------------------------------

def _in1d_impl(ar1, ar2, invert, method):
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.reductions import all as _all
  from jaxlite._src.numpy.reductions import any as _any
  a = lax_numpy.ravel(ar1)
  b = lax_numpy.ravel(ar2)
  if method == "compare_all" or (method == "auto" and a.size * b.size <= (1 << 16)):
    a_col, b_row = lax_numpy.expand_dims(a, 1), lax_numpy.expand_dims(b, 0)
    if invert:
      return _all(ufuncs.not_equal(a_col, b_row), axis=1)
    return _any(ufuncs.equal(a_col, b_row), axis=1)
  return _in1d_sorted(a, b, invert)


def _in1d_sorted(a, b, invert):
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.sorting import searchsorted, sort
  if b.shape[0] == 0:
    from jaxlite._src.numpy.creation import full
    return full(a.shape, bool(invert))
  s = sort(b)
  pos = searchsorted(s, a)
  found = ufuncs.equal(indexing.getitem(s, pos, mode="clip"), a)
  return ufuncs.logical_not(found) if invert else found


_in1d = internal_jit(_in1d_impl, static_argnums=(2, 3), name="_in1d")


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Elementwise membership of `element` in `test_elements`."""
  element = _asarray(element)
  result = _in1d(element, _asarray(test_elements), bool(invert), method)
  return lax_numpy.reshape(result, element.shape)


def _pad_to_size(values, count, size, fill_value):
  """`values[:count]` padded to `size` entries with `fill_value` (default: the first value)."""
  from jaxlite._src.numpy import ufuncs
  if values.shape[0] < size:
    extra = lax_numpy.broadcast_to(values[:1], (size - values.shape[0],)) \
        if values.shape[0] else None
    values = shape_ops.concatenate([values, extra]) if extra is not None else values
  values = values[:size]
  pad = values[0] if fill_value is None else fill_value
  return lax_numpy.where(ufuncs.less(_arange(size), count), values, pad)


def _masked(values, mask, size, fill_value):
  """`values[mask]`, or its first `size` entries padded with `fill_value`."""
  from jaxlite._src.numpy.reductions import sum as _sum
  if size is None:
    return indexing.getitem(values, mask)
  idx = nonzero(mask, size=size, fill_value=values.shape[0])[0]
  picked = indexing.getitem(values, idx, mode="clip") if values.shape[0] else \
      lax_numpy.broadcast_to(np.zeros((), values.dtype)[()], (size,))
  return _pad_to_size(picked, _sum(mask), size, fill_value)


def union1d(ar1, ar2, *, size=None, fill_value=None):
  arr = shape_ops.concatenate([lax_numpy.ravel(_asarray(ar1)), lax_numpy.ravel(_asarray(ar2))])
  return unique(arr, size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """Sorted unique values of `ar1` that are not in `ar2`."""
  a = lax_numpy.ravel(_asarray(ar1))
  if not assume_unique and a.shape[0]:
    a = unique(a) if size is None else unique(a, size=a.shape[0])
  mask = isin(a, _asarray(ar2), invert=True)
  if size is not None and not assume_unique:
    mask = _and_first_occurrence(a, mask)
  return _masked(a, mask, size, 0 if fill_value is None else fill_value)


def _and_first_occurrence(a, mask):
  """Drops the padding repeats unique(size=) added (equal to their predecessor)."""
  from jaxlite._src.numpy import ufuncs
  if a.shape[0] < 2:
    return mask
  fresh = shape_ops.concatenate([np.ones((1,), bool), ufuncs.not_equal(a[1:], a[:-1])])
  return ufuncs.logical_and(mask, fresh)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """Sorted unique values in exactly one of the inputs."""
  from jaxlite._src.numpy import ufuncs
  a, b = lax_numpy.ravel(_asarray(ar1)), lax_numpy.ravel(_asarray(ar2))
  if not assume_unique:
    a, b = unique(a), unique(b)
  aux = shape_ops.concatenate([a, b])
  from jaxlite._src.numpy.sorting import sort
  aux = sort(aux)
  if aux.shape[0] == 0:
    return aux
  edge = np.ones((1,), bool)
  flag = shape_ops.concatenate([edge, ufuncs.not_equal(aux[1:], aux[:-1]), edge])
  keep = ufuncs.logical_and(flag[1:], flag[:-1])
  return _masked(aux, keep, size, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """Sorted values in both inputs (and where they first occur in each, if asked)."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.reductions import sum as _sum
  from jaxlite._src.numpy.sorting import argsort
  a, b = lax_numpy.ravel(_asarray(ar1)), lax_numpy.ravel(_asarray(ar2))
  n1, n2 = a.shape[0], b.shape[0]
  a_idx = b_idx = None
  if not assume_unique:
    if return_indices:
      a, a_idx = unique(a, return_index=True)
      b, b_idx = unique(b, return_index=True)
    else:
      a, b = unique(a), unique(b)
  aux = shape_ops.concatenate([a, b])
  if aux.shape[0] < 2:
    empty = aux[:0]
    return (empty, empty.astype(_INT), empty.astype(_INT)) if return_indices else empty
  order = argsort(aux)
  aux = indexing.getitem(aux, order)
  mask = ufuncs.equal(aux[1:], aux[:-1])
  values = _masked(aux[:-1], mask, size, fill_value)
  if not return_indices:
    return values
  i1 = _masked(order[:-1], mask, size, 0)
  i2 = ufuncs.subtract(_masked(order[1:], mask, size, a.shape[0]), a.shape[0])
  if a_idx is not None:
    i1 = indexing.getitem(a_idx, i1, mode="clip")
    i2 = indexing.getitem(b_idx, i2, mode="clip")
  if size is not None:
    valid = ufuncs.less(_arange(size), _sum(mask))
    i1, i2 = lax_numpy.where(valid, i1, n1), lax_numpy.where(valid, i2, n2)
  return values, i1, i2


def _sort(x):
  from jaxlite._src.numpy.sorting import sort
  return sort(x)


_ = ew


lax_numpy.register_above(nonzero=nonzero)
