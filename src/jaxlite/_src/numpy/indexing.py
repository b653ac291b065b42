"""NumPy indexing on jaxlite arrays: `x[idx]`, `take`, `take_along_axis` (the `x.at[idx]` updates,
which build their scatters from the same index analysis, are index_update.py).

Static basic indices lower to slice/rev/squeeze/broadcast_in_dim, scalar traced indices to one
dynamic_slice, everything else to one gather (or scatter) built from the index, as JAX does.
"""
from __future__ import annotations

import itertools
import operator
from typing import NamedTuple

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core, devices, dtypes, errors
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import shape as lax_shape
from jaxlite._src.lax import slicing
from jaxlite._src.lax.elementwise_functions import _convert_element_type, asarg
from jaxlite._src.numpy import where_reshape as lax_numpy
from jaxlite._src.numpy.util import canonicalize_axis, check_arraylike, dtype_weak, shape_of

_INDEX_DTYPE = np.dtype(np.int32)
_NON_TUPLE_MSG = (
    "Using a non-tuple sequence for multidimensional indexing is not allowed; use "
    "`arr[array(seq)]` instead of `arr[seq]`. See https://github.com/jax-ml/jax/issues/4564 for "
    "more information.")


# --- classifying index entries --------------------------------------------------------------------

def _is_static_int(e) -> bool:
  return isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_))


def _is_array(e) -> bool:
  return isinstance(e, (core.Array, np.ndarray))


def _is_scalar_int_array(e) -> bool:
  """A 0-d integer array or tracer: a scalar index whose value may be traced."""
  return isinstance(e, core.Array) and e.ndim == 0 and dtype_weak(e)[0].kind in "iu"


def _is_scalar_int(e) -> bool:
  return _is_static_int(e) or _is_scalar_int_array(e)


def _is_advanced(e) -> bool:
  if isinstance(e, core.Array):
    return e.ndim > 0
  return isinstance(e, np.ndarray) and e.ndim > 0


# --- canonical index tuples -----------------------------------------------------------------------

def _index_tuple(idx) -> tuple:
  if isinstance(idx, tuple):
    return idx
  if isinstance(idx, list):
    raise TypeError(_NON_TUPLE_MSG)
  return (idx,)


def _as_index_entry(e, pos):
  """An index entry as None, Ellipsis, a slice of static ints, an int, or an integer array."""
  if e is None or e is Ellipsis:
    return e
  if isinstance(e, slice):
    return slice(*(_static_slice_part(v, e, pos) for v in (e.start, e.stop, e.step)))
  if isinstance(e, str):
    raise TypeError(f"JAX does not support string indexing; got idx={e!r}")
  if isinstance(e, (list, tuple)):
    e = np.asarray(e) if len(e) else np.zeros((0,), _INDEX_DTYPE)
  if isinstance(e, (bool, np.bool_)):
    return np.asarray(e)
  if _is_static_int(e):
    return e
  if isinstance(e, (np.ndarray, np.generic)):
    e = np.asarray(e)
    if e.dtype.kind not in "iub":
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                      f"{e.dtype.name}")
    return e if e.dtype.kind == "b" else e.astype(dtypes.canonicalize_dtype(e.dtype), copy=False)
  if isinstance(e, core.Array) or hasattr(e, "__jax_array__"):
    e = e.__jax_array__() if not isinstance(e, core.Array) else e
    if dtype_weak(e)[0].kind not in "iub":
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                      f"{dtypes.dtype_name(dtype_weak(e)[0])}")
    return e
  if isinstance(e, float):
    raise TypeError("Indexer must have integer or boolean type, got indexer with type float64")
  raise TypeError(f"Indexing mode not yet supported. Got unsupported indexer at position {pos}: "
                  f"{e!r}")


def _static_slice_part(v, s, pos):
  if v is None or _is_static_int(v):
    return v
  if isinstance(v, core.Tracer) and v.to_concrete_value() is None:
    raise IndexError(f"Slice entries must be static integers. Got {s} at position {pos}")
  return operator.index(v)


def _expand_bool_scalars(x, idx):
  """`x[True]`/`x[False]` add an axis of size 1 or 0: expand x, index the new axis by array."""
  out, x_dim = [], 0
  for e in idx:
    if _is_bool_scalar(e):
      x = lax_shape.expand_dims(x, (x_dim,))
      out.append(np.flatnonzero(np.asarray([bool(e)])).astype(_INDEX_DTYPE))
      x_dim += 1
    else:
      out.append(e)
      x_dim += 0 if e is None or e is Ellipsis else _consumed(e)
  return x, tuple(out)


def _is_bool_scalar(e) -> bool:
  """A concrete 0-d boolean index (NumPy's or a concrete Array): it adds an axis of size 1/0."""
  if isinstance(e, np.ndarray) or type(e) is core.array_type:
    return e.ndim == 0 and e.dtype == np.bool_
  return False


def _consumed(e) -> int:
  """How many dims of the indexed array an entry consumes (a boolean mask: its rank)."""
  if _is_mask(e):
    return np.ndim(e) if not isinstance(e, core.Array) else e.ndim
  return 1


def _is_mask(e) -> bool:
  return _is_array(e) and dtype_weak(e)[0] == np.bool_


def _expand_masks(shape, idx):
  """Boolean masks become the integer arrays of their nonzero positions (they must be concrete)."""
  out, x_dim = [], 0
  for pos, e in enumerate(idx):
    if _is_mask(e):
      mask = _concrete_mask(e)
      expected = list(shape[x_dim:x_dim + mask.ndim])
      # As in JAX, a mask axis of size 0 matches any axis (it selects nothing there).
      if len(mask.shape) != len(expected) or \
          not all(m in (0, s) for m, s in zip(mask.shape, expected)):
        raise IndexError("boolean index did not match shape of indexed array in index "
                         f"{pos}: got {mask.shape}, expected {expected}")
      out.extend(n.astype(_INDEX_DTYPE) for n in np.nonzero(mask))
      x_dim += mask.ndim
    else:
      out.append(e)
      x_dim += 0 if e is None or e is Ellipsis else 1
  return tuple(out)


def _concrete_mask(e):
  if isinstance(e, np.ndarray):
    return e
  if isinstance(e, core.Tracer):
    val = e.to_concrete_value()
    if val is None:
      raise errors.NonConcreteBooleanIndexError(e)
    return np.asarray(val)
  return np.asarray(e._host_value())


def _ellipsis_position(idx):
  positions = [i for i, e in enumerate(idx) if e is Ellipsis]
  if len(positions) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  return positions[0] if positions else None


def _expand_ellipsis(ndim, idx):
  """Replaces `...` by full slices and pads with trailing full slices up to `ndim`."""
  i = _ellipsis_position(idx)
  used = sum(1 for e in idx if e is not None and e is not Ellipsis)
  if used > ndim:
    raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {used} were indexed")
  fill = (slice(None),) * (ndim - used)
  return idx + fill if i is None else idx[:i] + fill + idx[i + 1:]


def canonical_index(x, idx):
  """(array, index tuple with no Ellipsis, no masks and one entry per array dim or None, and
  whether an Ellipsis separates advanced entries: NumPy then puts their dims first)."""
  idx = tuple(_as_index_entry(e, i) for i, e in enumerate(_index_tuple(idx)))
  if any(_is_bool_scalar(e) for e in idx):
    x, idx = _expand_bool_scalars(x, idx)
  if any(_is_mask(e) for e in idx):
    idx = _expand_masks(x.shape, _expand_ellipsis_for_masks(x.ndim, idx))
  idx = tuple(int(e) if isinstance(e, np.ndarray) and e.ndim == 0 else e for e in idx)
  return x, _expand_ellipsis(x.ndim, idx), _advanced_split(idx)


def _advanced_split(idx) -> bool:
  positions = [pos for _, pos, _ in _advanced_entries(idx)]
  return any(b - a != 1 for a, b in itertools.pairwise(positions))


def _expand_ellipsis_for_masks(ndim, idx):
  """Masks consume several dims: expand `...` counting them before converting the masks."""
  i = _ellipsis_position(idx)
  if i is None:
    return idx
  used = sum(_consumed(e) for e in idx if e is not None and e is not Ellipsis)
  return idx[:i] + (slice(None),) * max(ndim - used, 0) + idx[i + 1:]


# --- getitem -------------------------------------------------------------------------------------

def getitem(x, idx, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None, wrap_negative_indices=True):
  """`x[idx]` with NumPy semantics; out-of-bounds integer indices are clamped (as in JAX).

  With `wrap_negative_indices=False` a negative index is out of bounds (clamped, filled or
  promised away by `mode`) rather than counted from the end."""
  if idx is Ellipsis or (type(idx) is tuple and not idx):
    return x
  if type(x) is core.array_type and mode is None and fill_value is None \
      and wrap_negative_indices \
      and core._state.trace is core.eval_trace and not array_lib.is_sharded(x) \
      and array_lib.numpy_eager(x) and not array_lib.off_context_mesh(x):
    value = x._host_value()
    np_idx = _eager_numpy_index(value.shape, idx)
    if np_idx is not None:
      out = array_lib.like(x, value[np_idx], x.weak_type)
      if devices.context_meshes and all(type(e) is slice or e is Ellipsis for e in (
          idx if type(idx) is tuple else (idx,))):
        # under set_mesh, slices alone leave the mesh out of the type, as JAX's slice: P()
        array_lib.replicate_off_mesh([out], [False])
      return out
  x, idx, split = canonical_index(x, idx)
  if mode is None and fill_value is None and wrap_negative_indices:
    out = _slice_path(x, idx)
    if out is not None:
      return out
  indexer = index_to_gather(x.shape, idx, split, wrap_negative_indices)
  return _gather(x, indexer, indices_are_sorted, unique_indices, mode, fill_value)


def _eager_numpy_index(shape, idx):
  """A NumPy index equal to `idx` under JAX's rules (integers clamped), or None if unsure.

  Eager indexing of a concrete array runs NumPy's own indexing on it: its semantics (axis
  placement, masks) are JAX's once out-of-bounds integers are clamped like JAX clamps them.
  """
  entries = idx if type(idx) is tuple else (idx,)
  kinds = [_eager_kind(e) for e in entries]
  if None in kinds or kinds.count("...") > 1:
    return None
  used = sum(k if type(k) is int else k[1] if type(k) is tuple else 0 for k in kinds)
  if used > len(shape):
    return None
  out, dim = [], 0
  for e, k in zip(entries, kinds):
    if k == "...":
      dim += len(shape) - used
      out.append(e)
    elif k == 0:
      out.append(e)
    elif k == 1:
      if shape[dim] == 0 and type(e) is not int:
        return None  # JAX's gather rejects an index array on an empty axis (TypeError)
      out.append(_clamped_np_index(e, shape[dim]))
      dim += 1
    else:
      mask, k = e._host_value() if type(e) is core.array_type else e, k[1]
      if mask.shape != shape[dim:dim + k]:
        return None
      out.append(mask)
      dim += k
  return tuple(out)


def _eager_kind(e):
  """Dims an entry consumes (0 for None; a mask's rank), "..." or None when not eager-safe."""
  t = type(e)
  if t is int or t is slice:
    return 1 if t is int or is_static_slice(e) else None
  if e is None:
    return 0
  if e is Ellipsis:
    return "..."
  if t is core.array_type:
    e = e._host_value()
  elif t in (list, tuple) or not isinstance(e, (np.ndarray, np.integer, np.bool_)):
    return None
  kind = e.dtype.kind
  if kind == "b":
    return ("mask", e.ndim) if e.ndim else None
  return 1 if kind in "iu" else None


def is_static_slice(s) -> bool:
  return all(v is None or type(v) is int for v in (s.start, s.stop, s.step))


def _clamped_np_index(e, size):
  if type(e) is slice:
    return e
  if type(e) is core.array_type:
    e = e._host_value()
  if size == 0:
    raise IndexError("index is out of bounds for axis 0 with size 0")
  if type(e) is int:
    return min(max(e + size if e < 0 else e, 0), size - 1)
  if e.dtype.kind == "i":
    e = np.where(e < 0, e + size, e)
  return np.clip(e, 0, size - 1)


def _slice_path(x, idx):
  """Lowers indices made of ints, slices and None to slice or dynamic_slice (None if it can't)."""
  if not all(e is None or isinstance(e, slice) or _is_scalar_int(e) for e in idx):
    return None
  dims = [e for e in idx if e is not None]
  shape = x.shape
  for axis, (e, d) in enumerate(zip(dims, shape)):
    if d == 0 and not isinstance(e, slice):  # no element to index, static or traced (as JAX)
      raise IndexError(f"index is out of bounds for axis {axis} with size 0")
  dynamic = any(not _is_static_int(e) or not -d <= e < d for e, d in zip(dims, shape)
                if not isinstance(e, slice))
  if dynamic and any(isinstance(e, slice) and e.step not in (None, 1, -1) for e in dims):
    return None
  windows = [_slice_window(e, d) if isinstance(e, slice) else None for e, d in zip(dims, shape)]
  y = _dynamic_window(x, dims, windows) if dynamic else _static_window(x, dims, windows)
  reversed_dims = tuple(i for i, w in enumerate(windows) if w is not None and w[3])
  if reversed_dims:
    y = lax_shape.rev(y, reversed_dims)
  int_dims = tuple(i for i, w in enumerate(windows) if w is None)
  if int_dims:
    y = lax_shape.squeeze(y, int_dims)
  return _insert_newaxes(y, idx)


def _slice_window(s, size):
  """(lo, hi, stride, reversed) of an ascending strided slice covering `s`'s elements."""
  start, stop, step = s.indices(size)
  n = len(range(start, stop, step))
  if step > 0:
    return start, max(start, stop), step, False
  if n:
    return start + (n - 1) * step, start + 1, -step, True
  lo = min(max(stop + 1, 0), size)
  return lo, max(lo, start + 1), -step, True


def _static_window(x, dims, windows):
  starts, limits, strides = [], [], []
  for e, w, d in zip(dims, windows, x.shape):
    if w is None:
      i = operator.index(e) + (d if e < 0 else 0)
      starts.append(i), limits.append(i + 1), strides.append(1)
    else:
      starts.append(w[0]), limits.append(w[1]), strides.append(w[2])
  if starts == [0] * len(starts) and limits == list(x.shape) and all(s == 1 for s in strides):
    return x
  return slicing.slice(x, starts, limits, strides if any(s != 1 for s in strides) else None)


def _dynamic_window(x, dims, windows):
  if len(dims) == 1 and windows[0] is None:
    # One index: JAX hands it to dynamic_slice as jnp.asarray makes it (a traced index as it is,
    # a static int in the default int dtype: i64 under x64); several are first made one dtype.
    e = dims[0]
    if _is_static_int(e):
      e = core.array_from_numpy(np.asarray(int(e), dtypes.default_int_dtype()), False)
    return slicing.dynamic_slice(x, [e], [1])
  starts, sizes = [], []
  for e, w in zip(dims, windows):
    if w is None:
      starts.append(_index_scalar(e)), sizes.append(1)
    else:
      starts.append(_index_scalar(w[0])), sizes.append(len(range(w[0], w[1])))
  return slicing.dynamic_slice(x, starts, sizes)


def _index_scalar(e):
  """An int32 index scalar as an array, so that dynamic_slice normalizes it like JAX does."""
  if _is_static_int(e):
    return core.array_from_numpy(np.asarray(int(e), _INDEX_DTYPE), False)
  return _convert_element_type(e, _INDEX_DTYPE, weak_type=False)


def _insert_newaxes(y, idx):
  positions, out_dim = [], 0
  for e in idx:
    if e is None:
      positions.append(out_dim)
    if e is None or isinstance(e, slice):
      out_dim += 1
  return lax_shape.expand_dims(y, positions) if positions else y


# --- the general case: one gather -----------------------------------------------------------------

class _Indexer(NamedTuple):
  """What a gather (or the matching scatter) needs to compute `x[idx]`."""
  gather_indices: object
  dnums: slicing.GatherDimensionNumbers
  gather_slice_shape: tuple
  slice_shape: tuple
  newaxis_dims: tuple
  reversed_y_dims: tuple
  unique_and_sorted: bool


class _GatherBuilder:
  """Walks a canonical index tuple, collecting gather index pieces and dimension numbers."""

  def __init__(self, x_shape):
    self.x_shape = x_shape
    self.pieces = []           # (index array, first batch dim it spans)
    self.indices_shape = []    # the gather's batch shape
    self.slice_shape = []      # shape of x[idx] before squeezing newaxes
    self.gather_slice_shape = []
    self.offset_dims, self.collapsed, self.start_index_map = [], [], []
    self.newaxis_dims, self.reversed_y_dims = [], []
    self.x_axis = self.y_axis = self.collapsed_y_axis = 0

  def add_advanced(self, arrays, x_axes):
    shape = _broadcast_shape([shape_of(a) for a in arrays])
    start = len(self.indices_shape)
    for a in arrays:
      a = _broadcast_index(a, shape)
      self.pieces.append((_convert_element_type(a, _INDEX_DTYPE, weak_type=False), start))
    self.indices_shape += shape
    self.start_index_map += x_axes
    self.collapsed += x_axes
    self.slice_shape += shape
    self.y_axis += len(shape)
    self.collapsed_y_axis += len(shape)

  def skip_advanced_axis(self):
    self.x_axis += 1
    self.gather_slice_shape.append(1)

  def add_int(self, i):
    if self.x_shape[self.x_axis] == 0:
      raise IndexError(f"index is out of bounds for axis {self.x_axis} with size 0")
    if _is_static_int(i):
      i = np.asarray(int(i), _INDEX_DTYPE)[()]
    self.pieces.append((_convert_element_type(i, _INDEX_DTYPE, weak_type=False),
                        len(self.indices_shape)))
    self.collapsed.append(self.x_axis)
    self.gather_slice_shape.append(1)
    self.start_index_map.append(self.x_axis)
    self.x_axis += 1

  def add_newaxis(self):
    self.slice_shape.append(1)
    self.newaxis_dims.append(self.y_axis)
    self.y_axis += 1

  def add_slice(self, s):
    size = self.x_shape[self.x_axis]
    start, stop, step = s.indices(size)
    n = len(range(start, stop, step))
    self.slice_shape.append(n)
    if step == 1:
      if n != size:
        self.pieces.append((np.asarray(start, _INDEX_DTYPE)[()], len(self.indices_shape)))
        self.start_index_map.append(self.x_axis)
      self.gather_slice_shape.append(n)
      self.offset_dims.append(self.collapsed_y_axis)
    else:
      self.pieces.append((_strided_positions(start, step, n), len(self.indices_shape)))
      if step < 0:
        self.reversed_y_dims.append(self.collapsed_y_axis)
      self.gather_slice_shape.append(1)
      self.start_index_map.append(self.x_axis)
      self.indices_shape.append(n)
      self.collapsed.append(self.x_axis)
    self.collapsed_y_axis += 1
    self.y_axis += 1
    self.x_axis += 1

  def gather_indices(self):
    if not self.pieces:
      return np.zeros((0,), _INDEX_DTYPE)
    if len(self.pieces) == 1:
      g = self.pieces[0][0]
      return lax_shape.expand_dims(g, (np.ndim(g) if not isinstance(g, core.Array)
                                       else g.ndim,))
    shape = tuple(self.indices_shape) + (1,)
    parts = [lax_shape.broadcast_in_dim_p.bind(
        asarg(g), shape=shape, sharding=None,
        broadcast_dimensions=tuple(range(i, i + len(shape_of(g))))) for g, i in self.pieces]
    return lax_shape.concatenate(parts, len(shape) - 1)


def _strided_positions(start, step, n):
  """`start + step * iota(n)`, ascending (reversed when step < 0), as JAX stages it."""
  from jaxlite._src.lax.creation import iota
  pos = ew.add_p.bind(np.asarray(start, _INDEX_DTYPE)[()],
                      ew.mul_p.bind(np.asarray(step, _INDEX_DTYPE)[()], iota(_INDEX_DTYPE, n)))
  return lax_shape.rev(pos, (0,)) if step < 0 else pos


def _broadcast_shape(shapes):
  try:
    return list(np.broadcast_shapes(*shapes))
  except ValueError:
    raise IndexError("shape mismatch: indexing arrays could not be broadcast together with "
                     f"shapes {' '.join(str(tuple(s)) for s in shapes)}") from None


def _broadcast_index(a, shape):
  a_shape = shape_of(a)
  if tuple(a_shape) == tuple(shape):
    return a
  nd = len(shape)
  return lax_shape.broadcast_in_dim_p.bind(
      asarg(a), shape=tuple(shape), sharding=None,
      broadcast_dimensions=tuple(range(nd - len(a_shape), nd)))


def _normalize_index(i, size):
  """`i + size` where `i < 0` (unsigned indices are left alone), staged as JAX stages it."""
  if _is_static_int(i):
    return int(i) + size if i < 0 else int(i)
  dtype = dtype_weak(i)[0]
  if dtype.kind == "u":
    return i
  # 0 is a weak literal (JAX compares with `index < 0`); the size is lax._const(index, size):
  # weak for a weak 0-d index, which stays weak, else a strong NumPy scalar of its dtype, so a
  # weak index array comes out strong (and needs no conversion to the index dtype after)
  weak_scalar = dtype_weak(i)[1] and not shape_of(i)
  zero = dtypes.TypedInt(0, dtype)
  n = dtypes.TypedInt(size, dtype) if weak_scalar else np.asarray(size, dtype)[()]
  negative = (i < 0) if isinstance(i, np.ndarray) else ew.lt_p.bind(i, zero)
  return ew.select_n_p.bind(asarg(negative), asarg(i), ew.add_p.bind(asarg(i), n))


def _advanced_entries(idx):
  """[(entry, position in idx, x axis)] of advanced entries, or [] if there are none."""
  if not any(e is not None and not isinstance(e, slice) and _is_advanced(e) for e in idx):
    return []
  out, x_axis = [], 0
  for pos, e in enumerate(idx):
    if e is None or e is Ellipsis:
      continue
    if not isinstance(e, slice):
      out.append((e, pos, x_axis))
    x_axis += 1
  return out


def index_to_gather(x_shape, idx, split=False, wrap_negative=True) -> _Indexer:
  """The gather computing `x[idx]` for a canonical index tuple (NumPy's axis placement);
  negative integer indices count from the end unless `wrap_negative` is False."""
  normalize = _normalize_index if wrap_negative else (lambda i, size: i)
  advanced = _advanced_entries(idx)
  advanced = [(normalize(e, x_shape[ax]), pos, ax) for e, pos, ax in advanced]
  ints = {pos: normalize(e, x_shape[_x_axis_of(idx, pos)])
          for pos, e in enumerate(idx) if not advanced and e is not None
          and not isinstance(e, slice)}
  adv_positions = [pos for _, pos, _ in advanced]
  contiguous = not split and all(b - a == 1 for a, b in itertools.pairwise(adv_positions))
  insert_at = (adv_positions[0] if contiguous else 0) if advanced else None
  b = _GatherBuilder(x_shape)
  for pos, e in enumerate(idx):
    if pos == insert_at:
      b.add_advanced([a for a, _, _ in advanced], [ax for _, _, ax in advanced])
    if pos in adv_positions:
      b.skip_advanced_axis()
    elif e is None:
      b.add_newaxis()
    elif isinstance(e, slice):
      b.add_slice(e)
    else:
      b.add_int(ints[pos])
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=tuple(b.offset_dims), collapsed_slice_dims=tuple(sorted(b.collapsed)),
      start_index_map=tuple(b.start_index_map))
  return _Indexer(b.gather_indices(), dnums, tuple(b.gather_slice_shape), tuple(b.slice_shape),
                  tuple(b.newaxis_dims), tuple(b.reversed_y_dims), not advanced)


def _x_axis_of(idx, pos) -> int:
  return sum(1 for e in idx[:pos] if e is not None)


def _gather(x, indexer, indices_are_sorted, unique_indices, mode, fill_value):
  if 0 in indexer.slice_shape:
    return _zeros(dtype_weak(x), indexer.slice_shape)
  idx = indexer.gather_indices
  if 0 in shape_of(idx) and tuple(indexer.gather_slice_shape) == tuple(shape_of(x)):
    y = x  # whole-array slices only: JAX stages no gather (and no empty index constant)
  else:
    y = slicing.gather(x, idx, indexer.dnums, indexer.gather_slice_shape,
                       unique_indices=unique_indices or indexer.unique_and_sorted,
                       indices_are_sorted=indices_are_sorted or indexer.unique_and_sorted,
                       mode=mode, fill_value=fill_value)
  if indexer.reversed_y_dims:
    y = lax_shape.rev(y, indexer.reversed_y_dims)
  if indexer.newaxis_dims:
    y = lax_shape.expand_dims(y, indexer.newaxis_dims)
  return y


def _zeros(dtype_and_weak, shape):
  dtype, weak = dtype_and_weak
  if core.current_trace() is core.eval_trace:
    return core.array_from_numpy(np.zeros(shape, dtype), weak)
  zero = core.array_from_numpy(np.zeros((), dtype), weak) if weak else np.zeros((), dtype)[()]
  return lax_shape.broadcast_in_dim_p.bind(zero, shape=tuple(shape), broadcast_dimensions=(),
                                           sharding=None)


# --- take and take_along_axis ---------------------------------------------------------------------

def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """`a` gathered at `indices` along `axis` (flattened when None); mode fill (default) or clip."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
  check_arraylike("take", a, indices)
  indices = _asarray(indices)
  if not dtypes.issubdtype(indices.dtype, np.integer):
    raise ValueError(f"jnp.take: indices must have an integer type, got {indices.dtype}")
  return _take(_asarray(a), indices, axis, mode, unique_indices, indices_are_sorted,
               fill_value)


def _asarray(a):
  from jaxlite._src.numpy.creation import asarray
  return a if isinstance(a, core.Array) else asarray(a)


def _take_impl(a, indices, axis, mode, unique_indices, indices_are_sorted, fill_value):
  if axis is None:
    a = lax_numpy.ravel(a)
    axis = 0
  axis = canonicalize_axis(axis, a.ndim)
  gather_mode = _take_mode(mode)
  if mode in (None, "fill"):
    indices = lax_numpy.where(indices < 0, indices + a.shape[axis], indices)
  elif mode == "wrap":
    from jaxlite._src.numpy import ufuncs
    indices = ufuncs.remainder(indices, np.asarray(a.shape[axis], indices.dtype)[()])
  if a.shape[axis] == 0:
    if indices.size:
      raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    return a
  out_shape = a.shape[:axis] + tuple(indices.shape) + a.shape[axis + 1:]
  if indices.size == 0:
    return _zeros(dtype_weak(a), out_shape)
  nd = indices.ndim
  sizes = list(a.shape)
  sizes[axis] = 1
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=tuple(range(axis)) + tuple(range(axis + nd, a.ndim + nd - 1)),
      collapsed_slice_dims=(axis,), start_index_map=(axis,))
  return slicing.gather(a, getitem(indices, (Ellipsis, None)), dnums, tuple(sizes),
                        mode=gather_mode, fill_value=fill_value, unique_indices=unique_indices,
                        indices_are_sorted=indices_are_sorted)


def _take_mode(mode):
  if mode is None or mode == "fill":
    return slicing.GatherScatterMode.FILL_OR_DROP
  if mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
  if mode == "wrap":
    return slicing.GatherScatterMode.PROMISE_IN_BOUNDS
  if mode == "clip":
    return slicing.GatherScatterMode.CLIP
  raise ValueError(f"Invalid mode '{mode}' for np.take")


_take = internal_jit(_take_impl, static_argnums=(2, 3, 4, 5, 6), name="_take")


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
  """`arr` gathered along `axis` at `indices` of matching rank (other axes broadcast)."""
  check_arraylike("take_along_axis", arr, indices)
  return _take_along_axis(_asarray(arr), _asarray(indices), axis, mode, fill_value)


def _take_along_axis_impl(arr, indices, axis, mode, fill_value):
  if axis is None:
    if indices.ndim != 1:
      raise ValueError(f"when axis=None, `indices` must have a single dimension. Got "
                       f"{indices.shape=}")
    arr, axis = lax_numpy.ravel(arr), 0
  if indices.ndim != arr.ndim:
    raise ValueError("indices and arr must have the same number of dimensions; "
                     f"{indices.ndim} vs. {arr.ndim}")
  if dtype_weak(indices)[0].kind not in "iu":
    raise TypeError("take_along_axis indices must be of integer type, got "
                    f"{dtypes.dtype_name(dtype_weak(indices)[0])}")
  axis = canonicalize_axis(axis, arr.ndim)
  arr_shape = arr.shape[:axis] + (1,) + arr.shape[axis + 1:]
  out_shape = tuple(np.broadcast_shapes(indices.shape, arr_shape))
  if arr.shape[axis] == 0:
    return _zeros(dtype_weak(arr), out_shape)
  plan = _TakeAlongPlan(arr.shape, indices.shape, out_shape, axis)
  if mode != "promise_in_bounds":
    # JAX's index_dtype_for_axis_size: wrapped indices are first made a signed type that holds
    # the axis size (int8 -1 + 200 must not overflow; uint8 is wrapped as int32 too)
    size = arr.shape[axis]
    wide = np.dtype(np.int64 if size > np.iinfo(np.int32).max else np.int32)
    indices = _normalize_index(_convert_element_type(indices, wide, weak_type=False), size)
  gather_indices = plan.gather_indices(indices)
  gather_mode = "fill" if mode is None else mode
  return slicing.gather(arr, gather_indices, plan.dnums(), tuple(plan.slice_sizes),
                        mode=gather_mode, fill_value=fill_value)


class _TakeAlongPlan:
  """Per axis of `arr`: the indexed axis, a whole-extent window, a broadcast or a batch axis."""

  def __init__(self, arr_shape, idx_shape, out_shape, axis):
    self.axis = axis
    self.index_dims = [i for i, d in enumerate(idx_shape) if i == axis or d != 1]
    self.index_shape = tuple(out_shape[i] for i in self.index_dims) + (1,)
    self.slice_sizes, self.offset_dims = [], []
    self.start_index_map, self.collapsed, self.operand_bdims, self.index_bdims = [], [], [], []
    self.kinds = []
    j = 0
    for i in range(len(arr_shape)):
      if i == axis or (idx_shape[i] != 1 and arr_shape[i] == 1):
        self.kinds.append("index" if i == axis else "zeros")
        self.slice_sizes.append(1)
        self.start_index_map.append(i)
        self.collapsed.append(i)
        j += 1
      elif idx_shape[i] == 1:
        self.offset_dims.append(i)
        self.slice_sizes.append(arr_shape[i])
      else:
        self.slice_sizes.append(0 if arr_shape[i] == 0 else 1)
        self.operand_bdims.append(i)
        self.index_bdims.append(j)
        j += 1

  def gather_indices(self, indices):
    pieces = []
    for kind in self.kinds:
      if kind == "index":
        pieces.append(lax_shape.reshape(indices, self.index_shape))
      else:
        pieces.append(_zeros((_INDEX_DTYPE, False), self.index_shape))
    return lax_shape.concatenate(pieces, len(self.index_shape) - 1)

  def dnums(self):
    return slicing.GatherDimensionNumbers(
        offset_dims=tuple(self.offset_dims), collapsed_slice_dims=tuple(self.collapsed),
        start_index_map=tuple(self.start_index_map),
        operand_batching_dims=tuple(self.operand_bdims),
        start_indices_batching_dims=tuple(self.index_bdims))


_take_along_axis = internal_jit(_take_along_axis_impl, static_argnums=(2, 3, 4),
                                name="take_along_axis")
lax_shape.register_above(take_along_axis=take_along_axis)  # approx_top_k's JVP gathers with it
