"""The lax slicing functions (slice, dynamic_slice, dynamic_update_slice and their _in_dim forms,
gather, the scatters) over the primitives of `slicing_primitives.py`.
"""
from __future__ import annotations

import operator

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.lax.gather_dnums import GatherScatterMode, _default_fill, _int_tuples
# linalg, sort, windowed and numpy.indexing read these as `slicing.<name>`.
from jaxlite._src.lax.gather_dnums import (  # noqa: F401
    GatherDimensionNumbers, ScatterDimensionNumbers)
from jaxlite._src.lax.slicing_primitives import (
    _trace_scalar_fn, dynamic_slice_p, dynamic_update_slice_p, gather_p, reduction_jaxpr,
    scatter_add_p, scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p, scatter_sub_p, slice_p)

# --- public functions --------------------------------------------------------------------------

def slice(operand, start_indices, limit_indices, strides=None):  # lax's name
  """`operand[start:limit:stride]` per dimension, with static bounds."""
  start = tuple(operator.index(i) for i in start_indices)
  limit = tuple(operator.index(i) for i in limit_indices)
  strides = None if strides is None else tuple(operator.index(i) for i in strides)
  return slice_p.bind(asarg(operand), start_indices=start, limit_indices=limit, strides=strides)


def _shape(x) -> tuple:
  return tuple(x.shape) if isinstance(x, core.Array) else np.shape(x)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
  shape = _shape(operand)
  axis = operator.index(axis)
  size = shape[axis]
  start = 0 if start_index is None else operator.index(start_index)
  limit = size if limit_index is None else operator.index(limit_index)
  start, limit = start + size if start < 0 else start, limit + size if limit < 0 else limit
  starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
  starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
  return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
  index = core.concrete_or_error(int, index, "The index argument of index_in_dim.")
  axis = operator.index(axis)
  size = _shape(operand)[axis]
  wrapped = index + size if index < 0 else index
  if not 0 <= wrapped < size:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
  out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return out if keepdims else shape_prims.squeeze(out, (axis,))


def _is_static_int(i) -> bool:
  return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _static_index(i, size, allow_negative):
  i_val = int(i) + size if allow_negative and int(i) < 0 else int(i)
  if type(i) is int or type(i) in dtypes.typed_scalar_types:
    return asarg(i_val)
  return np.asarray(i_val, dtypes.canonicalize_dtype(np.asarray(i).dtype))[()]


def _normalized_index(i, size, allow_negative):
  """`i + size` where `i < 0`, staged as lt/add/select_n for non-static indices (as JAX)."""
  if _is_static_int(i):
    return _static_index(i, size, allow_negative)
  i = asarg(i)
  dtype = dtypes.dtype_and_weak(i)[0]
  if not allow_negative or dtype.kind == "u":  # an unsigned index is never negative
    return i
  size = np.asarray(size, dtype)[()]
  # Operators promote like jnp: a weak index is cast before the add, as in JAX's printouts.
  return ew.select_n_p.bind(asarg(i < 0), i, asarg(i + size))


def _start_indices(operand, start_indices, allow_negative_indices):
  if isinstance(start_indices, (np.ndarray, core.Array)):
    if np.ndim(start_indices) != 1:
      raise ValueError(f"Slice indices must be a 1D sequence, got {_shape(start_indices)}")
    start_indices = list(start_indices)
  shape = _shape(operand)
  if len(start_indices) != len(shape):
    raise ValueError("Length of slice indices must match number of operand dimensions "
                     f"({len(start_indices)} vs {shape})")
  allow = allow_negative_indices
  allow = [allow] * len(shape) if isinstance(allow, (bool, np.bool_)) else list(allow)
  return [_normalized_index(i, d, a) for i, d, a in zip(start_indices, shape, allow)]


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  """A window of `slice_sizes` at traced `start_indices` (clamped to stay in bounds)."""
  operand = asarg(operand)
  starts = _start_indices(operand, start_indices, allow_negative_indices)
  sizes = core.canonicalize_shape(slice_sizes)
  return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


def _zero_like_index(i):
  """A static zero index of `i`'s dtype, for the dimensions an *_in_dim function leaves at 0."""
  dtype = dtypes.default_int_dtype() if type(i) is int else dtypes.dtype_and_weak(asarg(i))[0]
  return np.zeros((), dtype)[()]


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
  shape = _shape(operand)
  axis = operator.index(axis)
  starts = [_zero_like_index(start_index)] * len(shape)
  sizes = list(shape)
  starts[axis], sizes[axis] = start_index, operator.index(slice_size)
  return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def _dynamic_index_in_dim(operand, index, axis=0, keepdims=True, allow_negative_indices=True):
  out = dynamic_slice_in_dim(operand, index, 1, axis,
                             allow_negative_indices=allow_negative_indices)
  return out if keepdims else shape_prims.squeeze(out, (axis,))


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
  return _dynamic_index_in_dim_jit(operand, index, operator.index(axis), bool(keepdims),
                                   allow_negative_indices)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
  operand, update = asarg(operand), asarg(update)
  starts = _start_indices(operand, start_indices, allow_negative_indices)
  return dynamic_update_slice_p.bind(operand, update, *starts)


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
  axis = operator.index(axis)
  starts = [_zero_like_index(start_index)] * len(_shape(operand))
  starts[axis] = start_index
  return dynamic_update_slice(operand, update, starts,
                              allow_negative_indices=allow_negative_indices)


def _dynamic_update_index_in_dim(operand, update, index, axis, allow_negative_indices=True):
  if len(_shape(update)) != len(_shape(operand)):
    update = shape_prims.expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
  return _dynamic_update_index_in_dim_jit(operand, update, index, operator.index(axis),
                                          allow_negative_indices)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
  """XLA's gather: one window of `slice_sizes` per index vector (the last axis of indices)."""
  operand = asarg(operand)
  parsed = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else \
      GatherScatterMode.from_any(mode)
  dtype = dtypes.dtype_and_weak(operand)[0]
  if parsed == GatherScatterMode.FILL_OR_DROP:
    # A Python scalar stays the user's value in the params (make_jaxpr prints fill_value=-1 for
    # a float or unsigned operand, as JAX); gather's impl converts it to the operand dtype.
    fill_value = _default_fill(dtype) if fill_value is None else fill_value \
        if type(fill_value) in (bool, int, float) else np.asarray(fill_value).astype(dtype).item()
  else:
    fill_value = None
  return gather_p.bind(operand, asarg(start_indices),
                       dimension_numbers=_int_tuples(dimension_numbers),
                       slice_sizes=core.canonicalize_shape(slice_sizes),
                       indices_are_sorted=bool(indices_are_sorted),
                       unique_indices=bool(unique_indices), mode=parsed, fill_value=fill_value)


def _scatter_with(prim, combiner):
  def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
         unique_indices=False, mode=None):
    operand = asarg(operand)
    jaxpr = None if combiner is None else \
        reduction_jaxpr(combiner, dtypes.dtype_and_weak(operand)[0])
    return prim.bind(operand, asarg(scatter_indices), asarg(updates),
                     dimension_numbers=_int_tuples(dimension_numbers),
                     indices_are_sorted=bool(indices_are_sorted),
                     unique_indices=bool(unique_indices),
                     mode=GatherScatterMode.from_any(mode), update_jaxpr=jaxpr, update_consts=())
  fn.__name__ = prim.name.replace("-", "_")
  return fn


scatter = _scatter_with(scatter_p, None)
scatter_add = _scatter_with(scatter_add_p, ew.add_p)
scatter_mul = _scatter_with(scatter_mul_p, ew.mul_p)
scatter_min = _scatter_with(scatter_min_p, ew.min_p)
scatter_max = _scatter_with(scatter_max_p, ew.max_p)
scatter_sub = _scatter_with(scatter_sub_p, ew.sub_p)


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
  """Applies `func` to the operand elements the scatter windows cover."""
  operand = asarg(operand)
  dtype = dtypes.dtype_and_weak(operand)[0]
  update_shape = core.canonicalize_shape(update_shape)
  unused = np.zeros((), dtype)[()]
  if update_shape:
    unused = shape_prims.broadcast_in_dim_p.bind(unused, shape=update_shape,
                                                 broadcast_dimensions=(), sharding=None)
  jaxpr = _trace_scalar_fn(lambda x, _: func(x), dtype)
  return scatter_p.bind(operand, asarg(scatter_indices), unused,
                        dimension_numbers=_int_tuples(dimension_numbers),
                        indices_are_sorted=bool(indices_are_sorted),
                        unique_indices=bool(unique_indices),
                        mode=GatherScatterMode.from_any(mode), update_jaxpr=jaxpr,
                        update_consts=())


def _make_dynamic_index_in_dim_jit():
  # JAX stages these two as named nested jits; internal_jit runs them directly when eager.
  return (internal_jit(_dynamic_index_in_dim, static_argnums=(2, 3, 4),
                       name="dynamic_index_in_dim"),
          internal_jit(_dynamic_update_index_in_dim, static_argnums=(3, 4),
                       name="dynamic_update_index_in_dim"))


_dynamic_index_in_dim_jit, _dynamic_update_index_in_dim_jit = _make_dynamic_index_in_dim_jit()


core.register(index_in_dim=index_in_dim)
