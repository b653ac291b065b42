"""`x.at[idx]`: the functional updates `set`, `add`, `multiply`, `min`, `max`, `apply`... of an
indexed array (JAX's `_IndexUpdateHelper` / `_IndexUpdateRef`), each one scatter built from the
index as `x[idx]`'s gather is (indexing.py), or computed by NumPy directly for a concrete array.
"""
from __future__ import annotations

import warnings

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core, dtypes, fp_quiet
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as lax_shape
from jaxlite._src.lax import slicing
from jaxlite._src.lax import slicing_primitives
from jaxlite._src.lax.elementwise_functions import _convert_element_type
from jaxlite._src.numpy.creation import reject_none
from jaxlite._src.numpy import where_reshape as lax_numpy
from jaxlite._src.numpy.indexing import canonical_index, getitem, index_to_gather, is_static_slice
from jaxlite._src.numpy.util import dtype_weak, promote_dtypes, shape_of


def _scatter_update(x, idx, y, scatter_fn, indices_are_sorted, unique_indices, mode,
                    wrap_negative=True):
  """`x` with `x[idx]` combined with `y` by `scatter_fn` (a lax.scatter* function)."""
  x_dtype, x_weak = dtype_weak(x)
  y = _as_update(y)  # converted first, as JAX's jnp.asarray(y): its errors before any index's
  if isinstance(y, int) and np.issubdtype(x_dtype, np.integer) \
      and np.iinfo(x_dtype).min <= y <= np.iinfo(x_dtype).max:
    # JAX takes a Python int that fits as a strong value of x's dtype, so a weak x is made
    # strong for the scatter (a convert_element_type eqn) and weak again after it
    y = np.asarray(y, x_dtype)[()]
  if type(x) is core.array_type and core._state.trace is core.eval_trace and wrap_negative \
      and scatter_fn in _EAGER_UFUNCS and not array_lib.is_sharded(x) \
      and array_lib.numpy_eager(x) and (type(y) is not core.array_type
                                        or array_lib.numpy_eager(y)):
    out = _eager_scatter(x, idx, y, _EAGER_UFUNCS[scatter_fn], mode)
    if out is not None:
      return out
  x, idx, split = canonical_index(x, idx)
  indexer = index_to_gather(x.shape, idx, split, wrap_negative)
  if 0 in indexer.slice_shape:
    return x
  _warn_unsafe_cast(x_dtype, x_weak, y)
  x, y = promote_dtypes(x, y)
  y = lax_numpy._broadcast_to_shape(y, indexer.slice_shape)
  if indexer.newaxis_dims:
    y = lax_shape.squeeze(y, indexer.newaxis_dims)
  if indexer.reversed_y_dims:
    y = lax_shape.rev(y, indexer.reversed_y_dims)
  dn = indexer.dnums
  dnums = slicing.ScatterDimensionNumbers(
      update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
      scatter_dims_to_operand_dims=dn.start_index_map)
  out = scatter_fn(x, indexer.gather_indices, y, dnums,
                   indices_are_sorted=indices_are_sorted or indexer.unique_and_sorted,
                   unique_indices=unique_indices or indexer.unique_and_sorted, mode=mode)
  return _convert_element_type(out, x_dtype, weak_type=x_weak)


# the eager path's arithmetic combiners, by the scatter JAX would run (its dtype check)
_ARITHMETIC = {np.add: "scatter-add", np.subtract: "scatter-sub", np.multiply: "scatter-mul"}
_EAGER_UFUNCS = {slicing.scatter: None, slicing.scatter_add: np.add,
                 slicing.scatter_sub: np.subtract, slicing.scatter_mul: np.multiply,
                 slicing.scatter_min: np.minimum, slicing.scatter_max: np.maximum}


def _eager_scatter(x, idx, y, ufunc, mode):
  """The update of a concrete array computed by NumPy directly, for the common index forms.

  Handles static ints/slices/None/Ellipsis, or one integer array among slices; returns None
  for anything else. Out-of-bounds windows are dropped (or clamped with mode='clip').
  """
  clip = mode == "clip" or mode == slicing.GatherScatterMode.CLIP
  plan = _eager_scatter_plan(x.shape, idx, clip)
  if plan is None:
    return None
  y = _as_update(y)
  x_dtype, x_weak = x.dtype, x.weak_type
  dtype = dtypes.promote_signature(((x_dtype, x_weak), dtype_weak(y)))[0]
  if dtype != x_dtype:
    _warn_unsafe_cast(x_dtype, x_weak, y, stacklevel=6)
  if plan is _DROP_ALL:
    slicing_primitives.check_scatter_operand_dtype(_ARITHMETIC.get(ufunc), dtype)
    return x
  index, adv = plan
  # np.array, not .astype: a 0-d result of a compiled program may be held as a NumPy scalar,
  # whose astype is a scalar again, with no item to assign
  out = np.array(x._host_value(), dtype=dtype)
  y_val = np.asarray(y._host_value() if type(y) is core.array_type else y)
  y_val = y_val.astype(dtype) if y_val.dtype != dtype else y_val
  target = out[index] if adv is None else None
  try:
    y_b = np.broadcast_to(y_val, target.shape if adv is None else
                          _adv_target_shape(out.shape, index, adv[0], adv[1].shape))
  except ValueError:
    return None  # the general path raises JAX's error
  if out.size == 0 and adv is not None and y_b.size:
    # an array index is a scatter in JAX, whose bool combiner is rejected when it lowers, with
    # nothing to update too (fuzz seed 1003); an empty window (x[idx] of size 0) stages none
    # (campaign 13, seed 2070)
    slicing_primitives.check_scatter_operand_dtype(_ARITHMETIC.get(ufunc), dtype)
  if out.size == 0:  # no position to update (even clip mode has none on a size-0 axis)
    return x
  if adv is None and target.size == 0:  # an empty static window: JAX stages no scatter (its
    return x                            # dtype check included: bool `.at[1:].multiply`)
  slicing_primitives.check_scatter_operand_dtype(_ARITHMETIC.get(ufunc), dtype)
  if adv is not None:
    pos, arr, valid = adv
    if valid is not None:  # out-of-bounds updates are dropped
      flat = y_b.reshape(y_b.shape[:pos] + (-1,) + y_b.shape[pos + arr.ndim:])
      y_b = np.compress(valid.reshape(-1), flat, axis=pos)
      arr = arr.reshape(-1)[valid.reshape(-1)]
    index = index[:pos] + (arr,) + index[pos + 1:]
  token = fp_quiet.quiet()  # an eager kernel of its own: no NumPy warning, as XLA shows none
  try:
    if ufunc is None:
      out[index] = y_b
    elif adv is None:
      out[index] = ufunc(target, y_b)
    else:
      ufunc.at(out, index, y_b)
  finally:
    fp_quiet.loud(token)
  if dtype != x_dtype:
    out = casts.convert_value(out, x_dtype)
  return array_lib.from_host(out, x_weak, array_lib.committed_device((x, y)))


_DROP_ALL = object()


def _adv_target_shape(shape, index, pos, arr_shape):
  """Shape of `x[index]` with one index array at `pos` among slices (NumPy keeps it in place)."""
  def lengths(slices, dims):
    return tuple(len(range(*s.indices(d))) for s, d in zip(slices, dims))
  return lengths(index[:pos], shape[:pos]) + tuple(arr_shape) + \
      lengths(index[pos + 1:], shape[pos + 1:])


def _eager_scatter_plan(shape, idx, clip):
  """(NumPy index, None or (position, index array, valid mask)), _DROP_ALL, or None."""
  if type(idx) is list:
    return None
  entries = idx if type(idx) is tuple else (idx,)
  arrays = [i for i, e in enumerate(entries) if _is_int_array(e)]
  simple = all(type(e) is slice and is_static_slice(e) or e is Ellipsis or
               (not arrays and (type(e) is int or e is None)) or i in arrays
               for i, e in enumerate(entries))
  used = sum(1 for e in entries if e is not None and e is not Ellipsis)
  if not simple or len(arrays) > 1 or used > len(shape) \
      or sum(e is Ellipsis for e in entries) > 1:
    return None
  out, dim, adv = [], 0, None
  for e in entries:
    if e is Ellipsis:
      out += [slice(None)] * (len(shape) - used)
      dim += len(shape) - used
    elif e is None or type(e) is slice:
      out.append(e)
      dim += e is not None
    elif type(e) is int:
      size = shape[dim]
      if size == 0:  # a static int on an empty axis is an error in every mode, as in JAX
        raise IndexError(f"index is out of bounds for axis {dim} with size 0")
      e = e + size if e < 0 else e
      if not 0 <= e < size:
        if not clip:
          return _DROP_ALL
        e = min(max(e, 0), size - 1)
      out.append(e)
      dim += 1
    else:
      adv = _eager_index_array(e, shape[dim], len(out), clip)
      out.append(adv[1])
      dim += 1
  return tuple(out) + (slice(None),) * (len(shape) - dim), adv


def _eager_index_array(e, size, pos, clip):
  arr = e._host_value() if type(e) is core.array_type else e
  if arr.dtype.kind == "i":
    arr = np.where(arr < 0, arr + size, arr)
  if clip:
    return pos, np.clip(arr, 0, max(size - 1, 0)), None
  valid = (arr >= 0) & (arr < size)
  return pos, arr, None if valid.all() else valid


def _is_int_array(e) -> bool:
  if type(e) is core.array_type:
    return e.ndim > 0 and e.dtype.kind in "iu"
  return isinstance(e, np.ndarray) and e.ndim > 0 and e.dtype.kind in "iu"


def _as_update(y):
  # JAX's jnp.asarray(y) for anything but scalars and arrays: lists, strings, dicts, objects
  # (their errors come before any index's, even on an empty array)
  if not isinstance(y, (bool, int, float, complex, np.generic, np.ndarray, core.Array)) \
      or (isinstance(y, np.ndarray) and y.ndim):
    from jaxlite._src.numpy.creation import asarray
    return asarray(y)
  return y


def _warn_unsafe_cast(x_dtype, x_weak, y, stacklevel=5):
  y_dtype, y_weak = dtype_weak(y)
  if dtypes.promote_signature(((x_dtype, x_weak), (y_dtype, y_weak)))[0] != x_dtype:
    warnings.warn(
        "scatter inputs have incompatible types: cannot safely cast value from dtype="
        f"{dtypes.dtype_name(y_dtype)} to dtype={dtypes.dtype_name(x_dtype)} with "
        "jax_numpy_dtype_promotion=standard. In future JAX releases this will result in an "
        "error.", FutureWarning, stacklevel=stacklevel)


def _apply_scatter(func):
  def scatter_fn(x, indices, y, dnums, *, indices_are_sorted, unique_indices, mode):
    return slicing.scatter_apply(x, indices, func, dnums, update_shape=shape_of(y),
                                 indices_are_sorted=indices_are_sorted,
                                 unique_indices=unique_indices, mode=mode)
  return scatter_fn


class _IndexUpdateHelper:
  """`x.at`: indexing it gives a reference whose methods return updated copies of `x`."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
  """`x.at[idx]`: functional versions of `x[idx] = y`, `x[idx] += y`, ... and `x[idx]`."""
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array = array
    self.index = index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None,
          out_sharding=None, wrap_negative_indices=True):
    return getitem(self.array, self.index, indices_are_sorted=indices_are_sorted,
                   unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                   wrap_negative_indices=wrap_negative_indices)

  def _update(self, values, scatter_fn, indices_are_sorted, unique_indices, mode, wrap=True):
    if mode is not None:  # JAX's 'Unknown gather mode' ValueError before any work
      slicing.GatherScatterMode.from_any(mode)
    reject_none(values)  # JAX converts the values with jnp.asarray: its ValueError
    return _scatter_update(self.array, self.index, values, scatter_fn, indices_are_sorted,
                           unique_indices, mode, wrap)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    return self._update(values, slicing.scatter, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    return self._update(values, slicing.scatter_add, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True):
    return self._update(values, slicing.scatter_sub, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True):
    return self._update(values, slicing.scatter_mul, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  mul = multiply

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    return self._update(values, slicing.scatter_min, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    return self._update(values, slicing.scatter_max, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    from jaxlite._src.numpy import ufuncs
    return ufuncs.divide(self.array, self._ones_scaled(values, indices_are_sorted,
                                                       unique_indices, mode))

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    from jaxlite._src.numpy import ufuncs
    return ufuncs.power(self.array, self._ones_scaled(values, indices_are_sorted,
                                                      unique_indices, mode))

  def _ones_scaled(self, values, indices_are_sorted, unique_indices, mode):
    from jaxlite._src.numpy.creation import full_like
    ones = full_like(self.array, 1)
    return _scatter_update(ones, self.index, values, slicing.scatter_mul, indices_are_sorted,
                           unique_indices, mode)

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
    dtype, weak = dtype_weak(self.array)
    zero = _convert_element_type(np.zeros((), dtype)[()], dtype, weak_type=weak)
    return _scatter_update(self.array, self.index, zero, _apply_scatter(func),
                           indices_are_sorted, unique_indices, mode)

