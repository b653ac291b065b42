"""`jax.ops` segment reductions: scatter each row of `data` into its segment's output row.

Out-of-range segment ids (negative ones included) are dropped by default, as JAX's
FILL_OR_DROP scatter does; `bucket_size` reduces buckets separately and then combines them.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core, dtypes


def _lax():
  from jaxlite._src.lax import namespace as lax
  return lax


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _identity(kind: str, dtype):
  """The value a segment with no rows holds: the reduction's identity in `dtype`."""
  if kind == "add":
    return 0
  if kind == "mul":
    return 1
  if dtype == np.bool_:
    return kind == "min"
  if dtypes.issubdtype(dtype, np.integer):
    info = dtypes.iinfo(dtype)
    return info.max if kind == "min" else info.min
  return float("inf") if kind == "min" else -float("inf")


def _scatter(kind: str, operand, index_cols, updates, n_index_dims, indices_are_sorted,
             unique_indices, mode):
  """Scatter `updates` at the integer coordinates stacked in `index_cols` (leading dims)."""
  lax, jnp = _lax(), _jnp()
  indices = jnp.stack(index_cols, axis=-1)
  batch_ndim = indices.ndim - 1
  dnums = lax.ScatterDimensionNumbers(
      update_window_dims=tuple(range(batch_ndim, updates.ndim)),
      inserted_window_dims=tuple(range(n_index_dims)),
      scatter_dims_to_operand_dims=tuple(range(n_index_dims)))
  fn = getattr(lax, f"scatter_{kind}")
  return fn(operand, indices, updates, dnums, indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices, mode=mode)


def _num_segments(name: str, segment_ids, num_segments) -> int:
  if num_segments is None:
    ids = core.concrete_or_error(np.asarray, segment_ids,
                                 f"{name}() `num_segments` argument.")
    num_segments = int(np.max(ids)) + 1 if ids.size else 0
  if isinstance(num_segments, (float, np.floating)):  # JAX: operator.index refuses it
    raise TypeError(f"{name}: num_segments must be an integer, got {num_segments!r}")
  num_segments = core.concrete_or_error(int, num_segments, f"{name}() `num_segments` argument.")
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  return num_segments


def _broadcasts(shape, target) -> bool:
  try:
    return np.broadcast_shapes(shape, target) == tuple(target)
  except ValueError:
    return False


def _segment_update(name, kind, reducer, data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode):
  jnp, lax = _jnp(), _lax()
  for i, arg in enumerate((data, segment_ids)):
    if not (isinstance(arg, (core.Array, np.ndarray, np.generic, int, float, complex, bool))
            or isinstance(arg, core.Tracer)):
      raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(arg)} at "
                      f"position {i}.")
  mode = lax.GatherScatterMode.FILL_OR_DROP if mode is None else mode
  data, segment_ids = jnp.asarray(data), jnp.asarray(segment_ids)
  target = segment_ids.shape + data.shape[segment_ids.ndim:]
  if data.shape != target and _broadcasts(data.shape, target):
    # a scalar (jraph's `segment_sum(1, ids)` counts) or size-1 rows: one update per id, as
    # JAX's scatter broadcasts them
    data = jnp.broadcast_to(data, target)
  if data.shape[:segment_ids.ndim] != segment_ids.shape:  # not NumPy's broadcast message
    raise ValueError(f"{name}: segment_ids of shape {segment_ids.shape} must match the leading "
                     f"dimensions of data, of shape {data.shape}")
  n = _num_segments(name, segment_ids, num_segments)
  dtype = data.dtype
  if bucket_size is None:
    out = jnp.full((n,) + data.shape[segment_ids.ndim:], _identity(kind, dtype), dtype=dtype)
    return _scatter(kind, out, [segment_ids], data, 1, indices_are_sorted, unique_indices, mode)
  # buckets of consecutive rows reduce separately, then combine: steadier sums and products
  num_buckets = math.ceil(segment_ids.size / bucket_size)
  out = jnp.full((num_buckets, n) + data.shape[1:], _identity(kind, dtype), dtype=dtype)
  buckets = jnp.arange(segment_ids.shape[0]) // bucket_size
  out = _scatter(kind, out, [buckets, segment_ids], data, 2, indices_are_sorted,
                 unique_indices, mode)
  return reducer(out, axis=0).astype(dtype)


def _segment_op(name: str, kind: str, reducer_name: str, summary: str):
  def op(data, segment_ids, num_segments=None, indices_are_sorted=False, unique_indices=False,
         bucket_size=None, mode=None):
    return _segment_update(name, kind, getattr(_jnp(), reducer_name), data, segment_ids,
                           num_segments, indices_are_sorted, unique_indices, bucket_size, mode)
  op.__name__ = op.__qualname__ = name
  op.__doc__ = (f"{summary} of the rows of `data` sharing each id in `segment_ids`.\n\n"
                "Output row k reduces the rows i with segment_ids[i] == k; empty segments hold "
                "the reduction's identity; ids outside [0, num_segments) are dropped (`mode`).")
  return op


segment_sum = _segment_op("segment_sum", "add", "sum", "Sum")
segment_prod = _segment_op("segment_prod", "mul", "prod", "Product")
segment_max = _segment_op("segment_max", "max", "max", "Maximum")
segment_min = _segment_op("segment_min", "min", "min", "Minimum")
