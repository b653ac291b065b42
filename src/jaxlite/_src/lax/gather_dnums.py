"""Gather and scatter dimension numbers, their out-of-bounds modes, and the vectorised index
arithmetic (window starts, bounds masks, index grids) both primitives share.
"""
from __future__ import annotations

import enum
import operator
from typing import NamedTuple

import numpy as np

from jaxlite._src.base import dtypes


# --- dimension numbers and modes -----------------------------------------------------------------

class GatherDimensionNumbers(NamedTuple):
  """How a gather maps index vectors to operand windows (XLA's GatherDimensionNumbers)."""
  offset_dims: tuple
  collapsed_slice_dims: tuple
  start_index_map: tuple
  operand_batching_dims: tuple = ()
  start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
  """How a scatter maps index vectors and update windows to the operand."""
  update_window_dims: tuple
  inserted_window_dims: tuple
  scatter_dims_to_operand_dims: tuple
  operand_batching_dims: tuple = ()
  scatter_indices_batching_dims: tuple = ()


def _int_tuples(dn):
  return type(dn)(*(tuple(operator.index(i) for i in f) for f in dn))


class GatherScatterMode(enum.Enum):
  """What gathers and scatters do with out-of-bounds indices."""
  CLIP = 1
  FILL_OR_DROP = 2
  PROMISE_IN_BOUNDS = 3
  ONE_HOT = 4

  @staticmethod
  def from_any(s) -> GatherScatterMode:
    if isinstance(s, GatherScatterMode):
      return s
    if s is None or s in ("fill", "drop"):
      return GatherScatterMode.FILL_OR_DROP
    named = {"clip": GatherScatterMode.CLIP,
             "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
             "one_hot": GatherScatterMode.ONE_HOT}
    if s in named:
      return named[s]
    raise ValueError(f'Unknown gather mode "{s}"')


# --- index arithmetic shared by gather and scatter ------------------------------------------------

def _window_starts(indices, operand_shape, index_map, operand_bdims, index_bdims):
  """(batch_shape, starts): one operand start vector per index vector, shape (n, rank)."""
  indices = np.asarray(indices)
  batch_shape = indices.shape[:-1]
  n = int(np.prod(batch_shape, dtype=np.int64))
  starts = np.zeros((n, len(operand_shape)), np.int64)
  if index_map:
    starts[:, list(index_map)] = indices.reshape(n, len(index_map))
  if operand_bdims:
    coords = np.indices(batch_shape).reshape(len(batch_shape), n)
    for od, idim in zip(operand_bdims, index_bdims):
      starts[:, od] = coords[idim]
  return batch_shape, starts


def _in_bounds(starts, upper, dims):
  """Rows whose whole window fits in the operand along `dims`."""
  dims = list(dims)
  if not dims:
    return np.ones(len(starts), bool)
  s = starts[:, dims]
  return np.all((s >= 0) & (s <= np.asarray(upper)[dims]), axis=1)


def _window_grids(starts, window):
  """Broadcastable operand index arrays of shape (n, *window) for windows at `starts`."""
  rank = len(window)
  n = starts.shape[0]
  grids = []
  for d, w in enumerate(window):
    shape = [1] * rank
    shape[d] = w
    grids.append(starts[:, d].reshape((n,) + (1,) * rank) + np.arange(w).reshape([1] + shape))
  return tuple(grids)


def _output_perm(n_batch, offset_dims):
  """Permutation from (batch dims, offset dims) layout to gather output dims."""
  rank = n_batch + len(offset_dims)
  batch_pos = [i for i in range(rank) if i not in offset_dims]
  src = [0] * rank
  for j, p in enumerate(batch_pos):
    src[p] = j
  for j, p in enumerate(offset_dims):
    src[p] = n_batch + j
  return src


def _default_fill(dtype):
  if dtypes.is_inexact(dtype):
    return float("nan") if dtype.kind != "c" else complex("nan")
  if dtype == np.bool_:
    return True
  info = np.iinfo(dtype)
  return int(info.min if dtype.kind == "i" else info.max)
