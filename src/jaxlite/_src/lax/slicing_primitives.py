"""Slicing primitives: slice, dynamic_slice, dynamic_update_slice, gather and the scatters.

Gather and scatter follow XLA's general semantics (dimension numbers, out-of-bounds modes) in
NumPy with vectorised index arithmetic, plus fast paths for the shapes jnp indexing produces.
"""
from __future__ import annotations

import builtins
import functools
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import dtypes
from jaxlite._src.compiler import backend
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import families
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax import slicing_lowering
from jaxlite._src.lax.families import numpy_templates
from jaxlite._src.lax.gather_dnums import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, _default_fill, _in_bounds,
    _output_perm, _window_grids, _window_starts)


_slice = builtins.slice


_prim = families.primitive


def _all_weak(args, params) -> bool:
  return all(getattr(a, "weak_type", False) for a in args)


def _is_int(dtype) -> bool:
  return dtype.kind in "iu"


# --- slice -------------------------------------------------------------------------------------

def _slice_abstract(x, start_indices, limit_indices, strides):
  _check_slice_args(x.shape, start_indices, limit_indices, strides)
  if strides is None:
    shape = tuple(int(hi - lo) for lo, hi in zip(start_indices, limit_indices))
  else:
    shape = tuple(int((hi - lo + st - 1) // st) if hi > lo else 0
                  for lo, hi, st in zip(start_indices, limit_indices, strides))
  return x.update(shape=shape)


def _check_slice_args(shape, start, limit, strides):
  for name, v in (("start_indices", start), ("limit_indices", limit)):
    if len(v) != len(shape):
      raise TypeError(f"slice {name} must have length equal to the number of dimensions of the "
                      f"operand, got indices {tuple(v)} for operand shape {shape}.")
  if strides is not None and len(strides) != len(shape):
    raise TypeError("slice strides must have length equal to the number of dimensions of the "
                    f"operand, got strides {tuple(strides)} for operand shape {shape}.")
  sizes = tuple(np.int64(hi - lo) for lo, hi in zip(start, limit))
  if any(s > d for s, d in zip(sizes, shape)):
    raise TypeError("slice slice_sizes must be less than or equal to operand shape, got "
                    f"slice_sizes {sizes} for operand shape {shape}.")
  if any(hi > d for hi, d in zip(limit, shape)):
    raise TypeError("slice limit_indices must be less than or equal to operand shape, got "
                    f"limit_indices {tuple(limit)} for operand shape {shape}.")
  if any(s < 0 for s in sizes):
    raise TypeError("slice slice_sizes must be greater than or equal to zero, got slice_sizes "
                    f"of {tuple(int(s) for s in sizes)}.")
  if any(lo < 0 for lo in start):
    raise TypeError("slice start_indices must be greater than or equal to zero, got "
                    f"start_indices {tuple(start)}.")
  if strides is not None:
    if any(s < 0 for s in strides):
      raise TypeError(f"slice strides must have every element be nonnegative, got "
                      f"{tuple(strides)}.")
    if any(s == 0 for s in strides):
      raise ZeroDivisionError("integer division or modulo by zero")


def _slice_index(start_indices, limit_indices, strides):
  steps = strides if strides is not None else (None,) * len(start_indices)
  return tuple(_slice(lo, hi, st) for lo, hi, st in zip(start_indices, limit_indices, steps))


def _slice_impl(x, start_indices, limit_indices, strides):
  return x[_slice_index(start_indices, limit_indices, strides)]


def _slice_template(start_indices, limit_indices, strides):
  def part(s):
    step = "" if s.step in (None, 1) else f":{s.step}"
    return f"{s.start}:{s.stop}{step}"
  parts = [part(s) for s in _slice_index(start_indices, limit_indices, strides)]
  return "{0}[" + ", ".join(parts) + ("," if len(parts) == 1 else "") + "]" if parts else "{0}"


slice_p = _prim("slice", _slice_impl, _slice_abstract)
numpy_templates[slice_p] = _slice_template


def _slice_batcher(vals, dims, *, start_indices, limit_indices, strides):
  (x,), (bdim,) = vals, dims
  starts, limits = list(start_indices), list(limit_indices)
  starts.insert(bdim, 0)
  limits.insert(bdim, batching.shape_of(x)[bdim])
  if strides is not None:
    strides = list(strides)
    strides.insert(bdim, 1)
    strides = tuple(strides)
  return slice_p.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                      strides=strides), bdim


batching.primitive_batchers[slice_p] = _slice_batcher


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
  # The cotangent is padded back out with zeros; NumPy ints stay in the config as in JAX.
  shape = x.aval.shape
  if strides is None or all(st == 1 for st in strides):
    config = zip(start_indices, np.subtract(shape, limit_indices), (0,) * len(shape))
  else:
    ct_shape = np.array(core.get_aval(ct).shape)
    real_limits = np.add(start_indices, np.where(ct_shape == 0, 0,
                                                 np.add(1, np.multiply(ct_shape - 1, strides))))
    config = zip(start_indices, np.subtract(shape, real_limits), np.subtract(strides, 1))
  zero = np.zeros((), x.aval.dtype)[()]
  return [shape_prims.pad_p.bind(ct, zero, padding_config=tuple(config))]


ad.deflinear(slice_p, _slice_transpose)


# --- dynamic_slice -----------------------------------------------------------------------------

def _check_index_avals(name, idx_avals, sep=":"):
  if any(a.ndim for a in idx_avals):
    raise TypeError(f"start_indices arguments to {name} must be scalars,  got indices "
                    f"({', '.join(repr(a) for a in idx_avals)})")
  dts = [a.dtype for a in idx_avals]
  if any(not _is_int(d) for d in dts) or len(set(dts)) > 1:
    raise TypeError(f"index arguments to {name} must be integers of the same type, got{sep} "
                    + ", ".join(dtypes.dtype_name(d) for d in dts))


def _dynamic_slice_abstract(x, *starts, slice_sizes):
  if len(starts) != x.ndim:
    raise TypeError(f"dynamic_slice start_indices must have length equal to the number of "
                    f"dimensions of the operand, got {len(starts)} for operand shape {x.shape}.")
  if len(slice_sizes) != x.ndim:
    raise TypeError("dynamic_slice slice_sizes must have the same length as the operand "
                    f"dimensions, got slice_sizes {tuple(slice_sizes)} for operand shape "
                    f"{x.shape}.")
  _check_index_avals("dynamic_slice", starts)
  if any(s > d for s, d in zip(slice_sizes, x.shape)):
    raise TypeError("slice slice_sizes must be less than or equal to operand shape, got "
                    f"slice_sizes {tuple(np.int64(s) for s in slice_sizes)} for operand shape "
                    f"{x.shape}.")
  if any(s < 0 for s in slice_sizes):
    raise TypeError("slice slice_sizes must be greater than or equal to zero, got slice_sizes "
                    f"of {tuple(slice_sizes)}.")
  return x.update(shape=tuple(slice_sizes))


def clamped_starts(starts, shape, sizes) -> list:
  """XLA's rule: each start index is clamped so that the whole window is in bounds."""
  return [min(max(int(s), 0), d - n) for s, d, n in zip(starts, shape, sizes)]


def _dynamic_slice_impl(x, *starts, slice_sizes):
  lo = clamped_starts(starts, x.shape, slice_sizes)
  return x[tuple(_slice(s, s + n) for s, n in zip(lo, slice_sizes))]


dynamic_slice_p = _prim("dynamic_slice", _dynamic_slice_impl, _dynamic_slice_abstract)


def _dynamic_slice_batcher(vals, dims, *, slice_sizes):
  # As JAX does: a gather of one window per example, indexed by the stacked start indices.
  (x, *starts), (x_dim, *start_dims) = vals, dims
  nd = len(slice_sizes)
  index, index_dim = _stacked_starts(starts, start_dims, batching.mapped_size(vals, dims))
  dn = GatherDimensionNumbers(offset_dims=tuple(range(nd)), collapsed_slice_dims=(),
                              start_index_map=tuple(range(nd)))
  return _gather_batcher((x, index), (x_dim, index_dim), dimension_numbers=dn,
                         slice_sizes=tuple(slice_sizes), indices_are_sorted=True,
                         unique_indices=True, mode=GatherScatterMode.CLIP, fill_value=None)


def _stacked_starts(starts, dims, size):
  """The scalar start indices as one index vector, with a leading batch axis if any is batched."""
  batched = any(d is not None for d in dims)
  shape = (size, 1) if batched else (1,)
  cols = [shape_prims.broadcast_in_dim_p.bind(
      s, shape=shape, broadcast_dimensions=() if d is None else (0,), sharding=None)
      for s, d in zip(starts, dims)]
  index = cols[0] if len(cols) == 1 else shape_prims.concatenate_p.bind(
      *cols, dimension=len(shape) - 1)
  return index, 0 if batched else None


batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batcher


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
  x, *starts = primals
  out = dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes)


def _strong_zeros(aval):
  # JAX fills the operand's cotangent with `lax.full` of its dtype: a strong zero, so the
  # gradient of a weak input read through gather or dynamic_slice comes back strong.
  return ad.zeros_like_aval(aval.update(weak_type=False))


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
  if any(ad.is_undefined_primal(i) for i in starts):
    raise NotImplementedError("dynamic_slice is not linear in its start indices")
  zeros = _strong_zeros(x.aval)
  return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


ad.jvp_rules[dynamic_slice_p] = _dynamic_slice_jvp
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose


# --- dynamic_update_slice ----------------------------------------------------------------------

def _dynamic_update_slice_abstract(x, update, *starts):
  if update.ndim != x.ndim:
    raise TypeError("dynamic_update_slice update must have the same rank as operand, got update "
                    f"shape {update.shape} for operand shape {x.shape}.")
  if any(u > d for u, d in zip(update.shape, x.shape)):
    raise TypeError("dynamic_update_slice update shape must be smaller than operand shape, got "
                    f"update shape {update.shape} for operand shape {x.shape}.")
  if x.dtype != update.dtype:
    raise TypeError("lax.dynamic_update_slice requires arguments to have the same dtypes, got "
                    f"{dtypes.dtype_name(x.dtype)}, {dtypes.dtype_name(update.dtype)}.")
  if len(starts) != x.ndim:
    raise TypeError("dynamic_update_slice start_indices must have length equal to the rank of "
                    f"operand, got {len(starts)} for operand shape {x.shape}.")
  _check_index_avals("dynamic_update_slice", starts, sep="")
  return x.update(weak_type=x.weak_type and update.weak_type
                  and all(s.weak_type for s in starts))


def _dynamic_update_slice_impl(x, update, *starts, _inplace=False):
  lo = clamped_starts(starts, x.shape, update.shape)
  out = x if _inplace else np.array(x, copy=True)
  out[tuple(_slice(s, s + n) for s, n in zip(lo, update.shape))] = update
  return out


dynamic_update_slice_p = _prim("dynamic_update_slice", _dynamic_update_slice_impl,
                               _dynamic_update_slice_abstract, weak=_all_weak)
# Compiled code whose operand dies here (a donated state, a fresh result) updates it in place.
families.numpy_codegen.TABLES.inplace[dynamic_update_slice_p] = functools.partial(
    _dynamic_update_slice_impl, _inplace=True)


def _dynamic_update_slice_batcher(vals, dims):
  # As JAX does: a scatter of one window per example at the stacked start indices.
  (x, update, *starts), (x_dim, u_dim, *start_dims) = vals, dims
  nd = len(starts)
  index, index_dim = _stacked_starts(starts, start_dims, batching.mapped_size(vals, dims))
  dn = ScatterDimensionNumbers(update_window_dims=tuple(range(nd)), inserted_window_dims=(),
                               scatter_dims_to_operand_dims=tuple(range(nd)))
  return _scatter_batcher(scatter_p, (x, index, update), (x_dim, index_dim, u_dim),
                          dimension_numbers=dn, indices_are_sorted=True, unique_indices=True,
                          mode=GatherScatterMode.CLIP, update_jaxpr=None, update_consts=())


batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batcher


def _dynamic_update_slice_jvp(primals, tangents):
  x, update, *starts = primals
  out = dynamic_update_slice_p.bind(x, update, *starts)
  t_x, t_u = tangents[:2]
  if type(t_x) is ad.Zero and type(t_u) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, dynamic_update_slice_p.bind(ad.instantiate_zeros(t_x), ad.instantiate_zeros(t_u),
                                          *starts)


def _dynamic_update_slice_transpose(ct, x, update, *starts):
  if any(ad.is_undefined_primal(i) for i in starts):
    raise NotImplementedError("dynamic_update_slice is not linear in its start indices")
  u_aval = ad.aval_of(update)
  t_x = dynamic_update_slice_p.bind(ct, ad.zeros_like_aval(u_aval), *starts) \
      if ad.is_undefined_primal(x) else None
  t_u = dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape) \
      if ad.is_undefined_primal(update) else None
  return [t_x, t_u] + [None] * len(starts)


ad.deflinear(dynamic_update_slice_p, _dynamic_update_slice_transpose)  # linear in the operand(s)
ad.jvp_rules[dynamic_update_slice_p] = _dynamic_update_slice_jvp


# --- gather ------------------------------------------------------------------------------------

def _gather_abstract(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                     unique_indices, mode, fill_value):
  dn = dimension_numbers
  if not _is_int(indices.dtype):
    raise TypeError(f"indices must have an integer type, got {dtypes.dtype_name(indices.dtype)}")
  if indices.ndim < 1:
    raise TypeError(f"Gather indices must have rank >= 1, got shape {indices.shape}")
  if len(slice_sizes) != operand.ndim:
    raise TypeError("Gather op must have one slice size for every input dimension; got: "
                    f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim}")
  if indices.shape[-1] != len(dn.start_index_map):
    raise TypeError("Gather op has start_index_map of size "
                    f"{len(dn.start_index_map)} but the index vector dimension of indices "
                    f"has size {indices.shape[-1]}.")
  for d, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
    if 0 not in indices.shape and not 0 <= s <= n:  # no starts: no slice to fit (JAX's rule)
      raise TypeError(f"Slice size at index {d} in gather op is out of range, must be within "
                      f"[0, {n} + 1), got {s}.")
  for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
    if slice_sizes[d] > 1:
      collapsed = list(dn.collapsed_slice_dims)
      position = collapsed.index(d) if d in collapsed else 0
      raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound is "
                      f"{slice_sizes[d]} for index {d} at position {position}.")
  offsets = _offset_sizes(operand.ndim, slice_sizes, dn)
  if len(offsets) != len(dn.offset_dims):
    raise TypeError(f"All components of the offset index in a gather op must either be a offset "
                    f"dimension or explicitly collapsed/batching; got len(slice_sizes)="
                    f"{len(slice_sizes)}, output_slice_sizes={tuple(offsets)}, "
                    f"collapsed_slice_dims={dn.collapsed_slice_dims}, operand_batching_dims="
                    f"{dn.operand_batching_dims}.")
  batch = list(indices.shape[:-1])
  rank = len(batch) + len(offsets)
  shape, it_b, it_o = [], iter(batch), iter(offsets)
  for i in range(rank):
    shape.append(next(it_o) if i in dn.offset_dims else next(it_b))
  return operand.update(shape=tuple(shape))


def _offset_sizes(rank, slice_sizes, dn):
  skip = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  return [slice_sizes[d] for d in range(rank) if d not in skip]


def _gather_impl(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                 unique_indices, mode, fill_value):
  dn = dimension_numbers
  operand = np.asarray(operand)
  indices = np.asarray(indices)
  # Typed PRNG keys (structured values) have no fill value: out-of-bounds indices clamp, as JAX's
  # key gathers do in every mode.
  keys = operand.dtype.names is not None  # structured; bfloat16 is kind "V" too, not a key
  if keys:
    fill = None
  elif fill_value is None:
    fill = _default_fill(operand.dtype)
  else:  # the user's Python scalar, converted as lax.full_like would (-1 wraps for uint16)
    with np.errstate(invalid="ignore", over="ignore"):
      fill = np.asarray(fill_value).astype(operand.dtype)[()]
  drop = mode == GatherScatterMode.FILL_OR_DROP and not keys
  if _is_point_gather(operand.shape, dn, slice_sizes):
    out = _point_gather(operand, indices, dn.start_index_map, drop, fill)
  else:
    out = _general_gather(operand, indices, dn, slice_sizes, drop, fill)
  perm = _output_perm(indices.ndim - 1, dn.offset_dims)
  return out if perm == sorted(perm) else out.transpose(perm)


def _is_point_gather(shape, dn, slice_sizes) -> bool:
  """Each index vector picks single elements along its dims and whole extents elsewhere."""
  mapped = set(dn.start_index_map)
  return (not dn.operand_batching_dims and mapped == set(dn.collapsed_slice_dims)
          and len(mapped) == len(dn.start_index_map)
          and all(slice_sizes[d] == (1 if d in mapped else shape[d]) for d in range(len(shape)))
          and all(shape[d] > 0 for d in mapped))


def _point_gather(operand, indices, index_map, drop, fill):
  k = len(index_map)
  moved = np.moveaxis(operand, index_map, range(k)) if list(index_map) != list(range(k)) \
      else operand
  cols = [indices[..., j] for j in range(k)]
  if k == 1 and not drop:
    return np.take(moved, cols[0], axis=0, mode="clip")
  clipped = tuple(np.clip(c, 0, moved.shape[j] - 1) for j, c in enumerate(cols))
  out = moved[clipped]
  if drop:
    bad = np.zeros(indices.shape[:-1], bool)
    for j, c in enumerate(cols):
      bad |= (c < 0) | (c >= moved.shape[j])
    if bad.any():
      bad = bad.reshape(bad.shape + (1,) * (np.ndim(out) - bad.ndim))
      out = np.where(bad, np.asarray(fill, operand.dtype), out)
  return out


def _general_gather(operand, indices, dn, slice_sizes, drop, fill):
  batch_shape, starts = _window_starts(indices, operand.shape, dn.start_index_map,
                                       dn.operand_batching_dims, dn.start_indices_batching_dims)
  upper = [d - s for d, s in zip(operand.shape, slice_sizes)]
  valid = _in_bounds(starts, upper, dn.start_index_map) if drop else None
  starts = np.clip(starts, 0, np.maximum(upper, 0))
  offsets = _offset_sizes(operand.ndim, slice_sizes, dn)
  if operand.size == 0 or starts.shape[0] == 0:
    return np.full(tuple(batch_shape) + tuple(offsets), fill if drop else 0, operand.dtype)
  out = operand[_window_grids(starts, slice_sizes)]
  out = out.reshape((starts.shape[0],) + tuple(offsets))
  if drop and not valid.all():
    out[~valid] = fill
  return out.reshape(tuple(batch_shape) + tuple(offsets))


gather_p = _prim("gather", _gather_impl, _gather_abstract)


def _gather_batcher(vals, dims, *, dimension_numbers, slice_sizes, **params):
  (x, idx), (x_dim, idx_dim) = vals, dims
  dn, size = dimension_numbers, batching.mapped_size(vals, dims)
  if idx_dim is None:
    # Only the operand is batched: its batch axis is one more window dim, taken whole.
    x = batching.moveaxis(x, x_dim, 0)
    dn = _past_batch_axis(dn, keep="start_indices_batching_dims")
    dn = dn._replace(offset_dims=(0,) + dn.offset_dims)
    return gather_p.bind(x, idx, dimension_numbers=dn, slice_sizes=(size,) + tuple(slice_sizes),
                         **params), 0
  idx = batching.moveaxis(idx, idx_dim, 0)
  if x_dim is None:
    # Only the indices are batched: one more batch dim of indices, in front of the output.
    dn = dn._replace(offset_dims=tuple(d + 1 for d in dn.offset_dims),
                     start_indices_batching_dims=tuple(
                         d + 1 for d in dn.start_indices_batching_dims))
    params.update(indices_are_sorted=False, unique_indices=False)
    return gather_p.bind(x, idx, dimension_numbers=dn, slice_sizes=tuple(slice_sizes),
                         **params), 0
  # Both batched: the vmapped axis is a batching dim of the operand and of the indices.
  x = batching.moveaxis(x, x_dim, 0)
  dn = _batching_dim_in_front(_past_batch_axis(dn), "operand_batching_dims",
                              "start_indices_batching_dims")
  # As JAX: an empty batch takes windows of size 0 along it (1 would not fit in the operand).
  batch_window = 0 if np.shape(x)[0] == 0 else 1
  return gather_p.bind(x, idx, dimension_numbers=dn,
                       slice_sizes=(batch_window,) + tuple(slice_sizes), **params), 0


def _past_batch_axis(dn, keep=None):
  """Every field of gather/scatter dimension numbers (but `keep`) shifted past a leading batch
  axis; JAX leaves the shifted dims NumPy ints, and so prints them."""
  return dn._replace(**{f: tuple(np.add(1, np.asarray(getattr(dn, f), dtype=np.int64)))
                        for f in dn._fields if f != keep})


def _batching_dim_in_front(dn, *fields):
  return dn._replace(**{f: (0,) + getattr(dn, f) for f in fields})


batching.primitive_batchers[gather_p] = _gather_batcher


def _scatter_dnums_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
  """The scatter that puts back what the gather `dn` took out."""
  return ScatterDimensionNumbers(
      update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
      scatter_dims_to_operand_dims=dn.start_index_map,
      operand_batching_dims=dn.operand_batching_dims,
      scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _gather_dnums_of(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
  """The gather that reads what the scatter `dn` writes."""
  return GatherDimensionNumbers(
      offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
      start_index_map=dn.scatter_dims_to_operand_dims,
      operand_batching_dims=dn.operand_batching_dims,
      start_indices_batching_dims=dn.scatter_indices_batching_dims)


def _gather_jvp(primals, tangents, **params):
  x, idx = primals
  out = gather_p.bind(x, idx, **params)
  if type(tangents[0]) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, gather_p.bind(tangents[0], idx, **params)


def _gather_transpose(ct, x, idx, *, dimension_numbers, slice_sizes, indices_are_sorted,
                      unique_indices, mode, fill_value):
  if ad.is_undefined_primal(idx):
    raise NotImplementedError("gather is not linear in its indices")
  zeros = _strong_zeros(x.aval)
  out = _scatter_add_bind(zeros, idx, ct, _scatter_dnums_of(dimension_numbers),
                          indices_are_sorted, unique_indices, mode)
  return [out, None]


def _scatter_add_bind(x, idx, upd, dn, indices_are_sorted, unique_indices, mode):
  dtype = core.get_aval(x).dtype
  return scatter_add_p.bind(x, idx, upd, dimension_numbers=dn,
                            indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                            mode=mode, update_jaxpr=reduction_jaxpr(ew.add_p, dtype),
                            update_consts=())


ad.deflinear(gather_p, _gather_transpose)  # linear in the operand(s)
ad.jvp_rules[gather_p] = _gather_jvp


# --- scatter family ----------------------------------------------------------------------------

# the scatters whose combiner is arithmetic, named as JAX's dtype error names them
_ARITHMETIC_SCATTERS = {"scatter-add": "add", "scatter-mul": "mul", "scatter-sub": "sub"}


def check_scatter_operand_dtype(name, dtype):
  """`x.at[i].add` of bools is a TypeError when it runs (XLA rejects the combiner as JAX lowers
  it: make_jaxpr accepts it, and index and shape errors come first)."""
  arith = _ARITHMETIC_SCATTERS.get(name)
  if arith is not None and dtype == np.bool_:
    raise TypeError(f"{arith} does not accept dtype bool at position 0. Accepted dtypes at "
                    "position 0 are subtypes of integer, floating, complexfloating.")


def _scatter_abstract(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                      unique_indices, mode, update_jaxpr, update_consts, _name="scatter"):
  dn = dimension_numbers
  if not _is_int(indices.dtype):
    raise TypeError(f"{_name} indices must have an integer type, got "
                    f"{dtypes.dtype_name(indices.dtype)}")
  if operand.dtype != updates.dtype:
    raise TypeError(f"lax.{_name} requires arguments to have the same dtypes, got "
                    f"{dtypes.dtype_name(operand.dtype)}, {dtypes.dtype_name(updates.dtype)}.")
  expected = indices.ndim - 1 + len(dn.update_window_dims)
  if updates.ndim != expected:
    raise TypeError(f"Updates tensor must be of rank {expected}; got {updates.ndim}.")
  if indices.shape[-1:] != (len(dn.scatter_dims_to_operand_dims),):
    raise TypeError("Scatter op has scatter_dims_to_operand_dims of size "
                    f"{len(dn.scatter_dims_to_operand_dims)} but the index vector dimension of "
                    f"indices has size {indices.shape[-1:]}.")
  skip = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  max_sizes = [n for d, n in enumerate(operand.shape) if d not in skip]
  for d, bound in zip(dn.update_window_dims, max_sizes):
    # JAX's shape rule (vmap of a dynamic_update_slice whose update outgrows its operand)
    if updates.shape[d] > bound:
      raise TypeError("Bounds of the window dimensions of updates must not exceed the bounds of "
                      f"the corresponding dimensions of operand. For dimension {d}, updates "
                      f"bound is {updates.shape[d]}, operand bound is {bound}.")
  return operand


def _scatter_window(operand_shape, updates_shape, dn):
  """The operand-shaped window each update index writes (1 on inserted and batching dims)."""
  sizes = iter(updates_shape[d] for d in dn.update_window_dims)
  skip = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  return tuple(1 if d in skip else next(sizes) for d in range(len(operand_shape)))


def _scatter_targets(operand, indices, updates, dn, mode):
  """(operand index grids, updates laid out like the grids), out-of-bounds windows handled."""
  updates = np.asarray(updates)
  window = _scatter_window(operand.shape, updates.shape, dn)
  _, starts = _window_starts(indices, operand.shape, dn.scatter_dims_to_operand_dims,
                             dn.operand_batching_dims, dn.scatter_indices_batching_dims)
  scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  upd = updates.transpose(scatter_dims + list(dn.update_window_dims))
  upd = upd.reshape((starts.shape[0],) + window)
  upper = [d - w for d, w in zip(operand.shape, window)]
  if mode == GatherScatterMode.CLIP:
    starts = np.clip(starts, 0, np.maximum(upper, 0))
  else:
    valid = _in_bounds(starts, upper, dn.scatter_dims_to_operand_dims)
    if not valid.all():
      starts, upd = starts[valid], upd[valid]
  return _window_grids(starts, window), upd


def _is_point_scatter(shape, updates_shape, dn) -> bool:
  """Each index vector names single elements along its dims and whole extents elsewhere."""
  mapped = set(dn.scatter_dims_to_operand_dims)
  rest = [d for d in range(len(shape)) if d not in mapped]
  return (not dn.operand_batching_dims and mapped == set(dn.inserted_window_dims)
          and len(mapped) == len(dn.scatter_dims_to_operand_dims)
          and [updates_shape[d] for d in dn.update_window_dims] == [shape[d] for d in rest]
          and all(shape[d] > 0 for d in mapped))


def _point_scatter_targets(out, indices, updates, dn, mode):
  """(view of out with the indexed dims first, flat index columns, updates row per index)."""
  index_map = list(dn.scatter_dims_to_operand_dims)
  k = len(index_map)
  target = np.moveaxis(out, index_map, range(k)) if index_map != list(range(k)) else out
  indices = np.asarray(indices)
  cols = [indices[..., j].reshape(-1) for j in range(k)]
  updates = np.asarray(updates)
  scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  upd = updates.transpose(scatter_dims + list(dn.update_window_dims))
  upd = upd.reshape((-1,) + target.shape[k:])
  if k == 0 and len(upd) == 1:  # no index dims (`x.at[...]`): the one update is the whole operand
    return target, (), upd[0]
  if mode == GatherScatterMode.CLIP:
    cols = [np.clip(c, 0, target.shape[j] - 1) for j, c in enumerate(cols)]
  else:
    valid = np.ones(len(upd), bool)
    for j, c in enumerate(cols):
      valid &= (c >= 0) & (c < target.shape[j])
    if not valid.all():
      cols, upd = [c[valid] for c in cols], upd[valid]
  return target, tuple(cols), upd


def _scatter_impl_for(ufunc, inplace=False, name=None):
  def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices,
           mode, update_jaxpr, update_consts):
    check_scatter_operand_dtype(name, operand.dtype)
    out = operand if inplace else np.array(operand, copy=True)
    if out.size == 0 or np.size(updates) == 0:
      return out
    apply = ufunc is None and update_jaxpr is not None
    if not apply and _is_point_scatter(out.shape, np.shape(updates), dimension_numbers):
      target, index, upd = _point_scatter_targets(out, indices, updates, dimension_numbers,
                                                  mode)
    else:
      target = out
      index, upd = _scatter_targets(out, indices, updates, dimension_numbers, mode)
    if apply:
      _apply_in_rounds(out, index, upd, _update_fn(update_jaxpr, update_consts))
    elif ufunc is None:
      target[index] = upd
    elif unique_indices or (type(index) is tuple and not index):
      # no scatter dims (indices of shape (0,)): one window, and ufunc.at rejects an empty index
      target[index] = ufunc(target[index], upd)
    else:
      ufunc.at(target, index, upd)
    return out
  return impl


_update_fns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _update_fn(jaxpr, consts):
  """A NumPy function of (old, update) computing the scatter's update jaxpr elementwise."""
  closed = _update_fns.get(jaxpr)  # the ClosedJaxpr caches the backend's executable
  if closed is None:
    closed = _update_fns[jaxpr] = core.ClosedJaxpr(jaxpr, list(consts))
  return backend.compile_jaxpr(closed)


def _apply_in_rounds(out, grids, upd, fn):
  """Applies `fn` once per update, so an index hit k times is updated k times (like XLA)."""
  flat = np.ravel_multi_index(np.broadcast_arrays(*grids), out.shape).ravel()
  vals = np.broadcast_to(upd, np.broadcast_shapes(*(g.shape for g in grids))).ravel()
  order = np.argsort(flat, kind="stable")
  sorted_pos = flat[order]
  first = np.r_[True, sorted_pos[1:] != sorted_pos[:-1]]
  run_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
  rank = np.empty(len(order), np.int64)
  rank[order] = np.arange(len(order)) - run_start
  view = out.reshape(-1)
  for r in range(int(rank.max(initial=-1)) + 1):
    sel = rank == r
    pos = flat[sel]
    view[pos] = np.asarray(fn(view[pos], vals[sel])[0], out.dtype)


def _scatter_prim(name, ufunc):
  p = _prim(name, _scatter_impl_for(ufunc, name=name),
            lambda *a, **k: _scatter_abstract(*a, _name=name, **k))
  batching.primitive_batchers[p] = lambda vals, dims, **params: _scatter_batcher(
      p, vals, dims, **params)
  families.numpy_codegen.TABLES.inplace[p] = _scatter_impl_for(ufunc, inplace=True, name=name)
  return p


scatter_p = _scatter_prim("scatter", None)
scatter_add_p = _scatter_prim("scatter-add", np.add)
scatter_mul_p = _scatter_prim("scatter-mul", np.multiply)
scatter_min_p = _scatter_prim("scatter-min", np.minimum)
scatter_max_p = _scatter_prim("scatter-max", np.maximum)
scatter_sub_p = _scatter_prim("scatter-sub", np.subtract)


def _scatter_gather(ct, idx, updates_aval, dn, mode, indices_are_sorted=False,
                    unique_indices=False):
  """`ct` read back at the scattered positions: the cotangent of the updates (the transposes
  gather without the scatter's index hints, as JAX's)."""
  sizes = _scatter_window(core.get_aval(ct).shape, updates_aval.shape, dn)
  return gather_p.bind(ct, idx, dimension_numbers=_gather_dnums_of(dn), slice_sizes=sizes,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       mode=mode, fill_value=0)


def _scatter_add_jvp(prim):
  def jvp(primals, tangents, **params):
    x, idx, upd = primals
    out = prim.bind(x, idx, upd, **params)
    t_x, _, t_u = tangents
    if type(t_x) is ad.Zero and type(t_u) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    return out, prim.bind(ad.instantiate_zeros(t_x), idx, ad.instantiate_zeros(t_u), **params)
  return jvp


def _scatter_add_transpose(negate):
  def transpose(ct, x, idx, upd, *, dimension_numbers, mode, **params):
    if ad.is_undefined_primal(idx):
      raise NotImplementedError("scatter is not linear in its indices")
    t_u = None
    if ad.is_undefined_primal(upd):
      t_u = _scatter_gather(ct, idx, upd.aval, dimension_numbers, mode)
      t_u = ew.neg_p.bind(t_u) if negate else t_u
    return [ct if ad.is_undefined_primal(x) else None, None, t_u]
  return transpose


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
                 mode, update_jaxpr, update_consts):
  # Overwriting scatter: where indices repeat, one update wins; find which by scattering ids,
  # then the result is a scatter-add of the winning updates into the untouched operand.
  x, idx, upd = primals
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode, update_jaxpr=update_jaxpr,
                update_consts=update_consts)
  out = scatter_p.bind(x, idx, upd, **params)
  t_x, _, t_u = tangents
  if type(t_x) is ad.Zero and type(t_u) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  t_x, t_u = ad.instantiate_zeros(t_x), ad.instantiate_zeros(t_u)
  if unique_indices:
    return out, scatter_p.bind(t_x, idx, t_u, **params)
  dn = dimension_numbers
  x_aval, u_aval = core.get_aval(x), core.get_aval(upd)
  ids = np.arange(1, u_aval.size + 1, dtype=np.int32).reshape(u_aval.shape)
  slots = scatter_p.bind(np.zeros(x_aval.shape, np.int32), idx, ids, **dict(
      params, update_jaxpr=None))
  won = ew.eq_p.bind(ids, _scatter_gather(slots, idx, u_aval, dn, mode,
                                          indices_are_sorted=indices_are_sorted,
                                          unique_indices=unique_indices))
  kept = ew.eq_p.bind(slots, np.zeros((), np.int32))
  t_kept = ew.select_n_p.bind(kept, ad.zeros_like_aval(ad.tangent_aval(x_aval)), t_x)
  t_won = ew.select_n_p.bind(won, ad.zeros_like_aval(ad.tangent_aval(u_aval)), t_u)
  return out, _scatter_add_bind(t_kept, idx, t_won, dn, indices_are_sorted, unique_indices,
                                mode)


def _scatter_transpose(ct, x, idx, upd, *, dimension_numbers, mode, **params):
  if not params["unique_indices"]:
    raise NotImplementedError("scatter transpose is only implemented where unique_indices=True")
  u_aval = ad.aval_of(upd)
  t_x = scatter_p.bind(ct, idx, ad.zeros_like_aval(u_aval), dimension_numbers=dimension_numbers,
                       mode=mode, **params) if ad.is_undefined_primal(x) else None
  t_u = _scatter_gather(ct, idx, u_aval, dimension_numbers, mode) \
      if ad.is_undefined_primal(upd) else None
  return [t_x, None, t_u]


def _scatter_mul_jvp(primals, tangents, **params):
  x, idx, upd = primals
  out = scatter_mul_p.bind(x, idx, upd, **params)
  t_x, _, t_u = tangents
  t_out = ad.Zero.from_primal_value(out)
  if type(t_x) is not ad.Zero:
    t_out = scatter_mul_p.bind(t_x, idx, upd, **params)
  if type(t_u) is not ad.Zero:
    if not params["unique_indices"]:
      raise NotImplementedError("scatter_mul gradients are only implemented if "
                                "`unique_indices=True`")
    zeros = ad.zeros_like_aval(ad.tangent_aval(core.get_aval(x)))
    t_upd = ew.mul_p.bind(x, _scatter_add_bind(zeros, idx, t_u, params["dimension_numbers"],
                                               params["indices_are_sorted"], True,
                                               params["mode"]))
    t_out = ad.add_tangents(t_out, t_upd)
  return out, t_out


def _scatter_mul_transpose(ct, x, idx, upd, **params):
  if ad.is_undefined_primal(upd) or ad.is_undefined_primal(idx):
    raise NotImplementedError("scatter_mul is linear only in its operand")
  return [scatter_mul_p.bind(ct, idx, upd, **params), None, None]


def _scatter_extremum_jvp(prim):
  # Tangents of all the values that attain the extremum at a position are averaged. The tangent
  # is t_x plus a scatter-add of per-update corrections (coefficient times tangent), as in JAX:
  # a position whose result is NaN that no value "attains" gets t_x - t_x, so a NaN cotangent
  # there reaches the operand as NaN (a count-and-divide form gives 0/0 or drops it).
  def jvp(primals, tangents, **params):
    x, idx, upd = primals
    out = prim.bind(x, idx, upd, **params)
    t_x, _, t_u = tangents
    if type(t_x) is ad.Zero and type(t_u) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    t_x, t_u = ad.instantiate_zeros(t_x), ad.instantiate_zeros(t_u)
    dn, mode = params["dimension_numbers"], params["mode"]
    u_aval = core.get_aval(upd)
    flags = dict(indices_are_sorted=params["indices_are_sorted"],
                 unique_indices=params["unique_indices"])
    sorted_ = params["indices_are_sorted"]
    at_idx = lambda v: _scatter_gather(v, idx, u_aval, dn, mode, **flags)
    target = at_idx(out)
    upd_won = ew.eq_p.bind(upd, target)
    x_kept = ew.eq_p.bind(at_idx(x), target)
    dt = core.get_aval(out).dtype
    zeros_u = np.zeros(u_aval.shape, dt)
    ones_u = np.ones(u_aval.shape, dt)
    zeros_x = np.zeros(core.get_aval(x).shape, dt)
    n_won = at_idx(_scatter_add_bind(zeros_x, idx, ew.select_n_p.bind(upd_won, zeros_u, ones_u),
                                     dn, sorted_, False, mode))
    n_refs = at_idx(_scatter_add_bind(zeros_x, idx, ones_u, dn, sorted_, False, mode))
    with np.errstate(divide="ignore", invalid="ignore"):
      share_kept = ew.div_p.bind(ones_u, ew.add_p.bind(n_won, ones_u))
      upd_share = ew.select_n_p.bind(x_kept, ew.div_p.bind(ones_u, n_won), share_kept)
      upd_coef = ew.select_n_p.bind(upd_won, zeros_u, upd_share)
      x_share = ew.select_n_p.bind(x_kept, zeros_u, share_kept)
      x_coef = ew.div_p.bind(ew.sub_p.bind(x_share, ones_u), n_refs)
      corr = ew.add_p.bind(ew.mul_p.bind(at_idx(t_x), x_coef), ew.mul_p.bind(t_u, upd_coef))
    return out, _scatter_add_bind(t_x, idx, corr, dn, sorted_, params["unique_indices"], mode)
  return jvp


ad.jvp_rules[scatter_add_p] = _scatter_add_jvp(scatter_add_p)
ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose(negate=False)
ad.jvp_rules[scatter_sub_p] = _scatter_add_jvp(scatter_sub_p)
ad.primitive_transposes[scatter_sub_p] = _scatter_add_transpose(negate=True)
ad.jvp_rules[scatter_p] = _scatter_jvp
ad.primitive_transposes[scatter_p] = _scatter_transpose
ad.jvp_rules[scatter_mul_p] = _scatter_mul_jvp
ad.deflinear(scatter_mul_p, _scatter_mul_transpose)
ad.jvp_rules[scatter_mul_p] = _scatter_mul_jvp  # linear in the operand only
ad.jvp_rules[scatter_min_p] = _scatter_extremum_jvp(scatter_min_p)
ad.jvp_rules[scatter_max_p] = _scatter_extremum_jvp(scatter_max_p)


def _scatter_batcher(prim, vals, dims, *, dimension_numbers, **params):
  (x, idx, upd), (x_dim, idx_dim, u_dim) = vals, dims
  dn, size = dimension_numbers, batching.mapped_size(vals, dims)
  x = batching.bdim_at_front(x, x_dim, size)
  if idx_dim is None:
    # The batch axis is one more update window dim, covering the operand's whole batch axis.
    upd = batching.bdim_at_front(upd, u_dim, size)
    dn = _past_batch_axis(dn, keep="scatter_indices_batching_dims")
    dn = dn._replace(update_window_dims=(0,) + dn.update_window_dims)
    return prim.bind(x, idx, upd, dimension_numbers=dn, **params), 0
  # Batched indices: the vmapped axis is a batching dim of operand, indices and updates.
  idx = batching.moveaxis(idx, idx_dim, 0)
  upd = batching.bdim_at_front(upd, u_dim, size)
  dn = _batching_dim_in_front(_past_batch_axis(dn), "operand_batching_dims",
                              "scatter_indices_batching_dims")
  return prim.bind(x, idx, upd, dimension_numbers=dn, **params), 0


shape_prims.checked_by_abstract_eval(
    slice_p, dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_p, scatter_add_p,
    scatter_mul_p, scatter_min_p, scatter_max_p, scatter_sub_p)


# --- update jaxprs -----------------------------------------------------------------------------

_reduction_jaxprs: dict = {}


def reduction_jaxpr(prim, dtype):
  """The jaxpr `{ lambda ; a b. let c = prim a b in (c,) }` on scalars, one object per key."""
  key = (prim, dtype)
  jaxpr = _reduction_jaxprs.get(key)
  if jaxpr is None:
    jaxpr = _reduction_jaxprs[key] = _trace_scalar_fn(lambda a, b: prim.bind(a, b), dtype)
  return jaxpr


def _trace_scalar_fn(fn, dtype):
  from jaxlite._src.interpreters import partial_eval as pe
  aval = ShapedArray((), dtype)
  closed = pe.trace_to_jaxpr(lambda a, b: [fn(a, b)], [aval, aval])
  return closed.jaxpr


# --- StableHLO lowering (the XLA backend's rules; bodies in slicing_lowering.py) ---------------

xla.register(slice_p, slicing_lowering.slice_rule)
xla.register(dynamic_slice_p, slicing_lowering.dynamic_slice_rule)
xla.register(dynamic_update_slice_p, slicing_lowering.dynamic_update_slice_rule)
xla.register(gather_p, slicing_lowering.gather_rule)
for _p, _combiner in ((scatter_p, None), (scatter_add_p, "add"), (scatter_mul_p, "multiply"),
                      (scatter_min_p, "minimum"), (scatter_max_p, "maximum"),
                      (scatter_sub_p, "subtract")):
  xla.register(_p, slicing_lowering.scatter_rule(_combiner))
xla.register(shape_prims.tile_p, slicing_lowering.tile_rule)


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(slice_p, pk.SHAPE, hoist=True, role="slice")
for _p in (dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_p, scatter_add_p,
           scatter_mul_p, scatter_min_p, scatter_max_p, scatter_sub_p):
  pk.register(_p, pk.GATHER_SCATTER)


shape_prims.register_above(slice_p=slice_p)
