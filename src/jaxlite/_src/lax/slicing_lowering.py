"""StableHLO lowering rules of the slicing primitives (slice, dynamic_slice,
dynamic_update_slice, gather, the scatters) and tile; `slicing_primitives.py` registers them
next to its primitives (tile_p comes from `shape.py`).

XLA's gather clamps every window into the operand and its scatter skips any window that leaves
it, so CLIP and PROMISE_IN_BOUNDS gathers and FILL_OR_DROP scatters are one op each; a
FILL_OR_DROP gather masks its out-of-bounds windows to the fill value and a CLIP scatter clamps
its indices first, as JAX lowers them.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.compiler.xla.lowering import shaped_aval as _aval
from jaxlite._src.lax.gather_dnums import GatherScatterMode, _default_fill


# --- static and dynamic slices ---------------------------------------------------------------

def slice_rule(ctx, x, *, start_indices, limit_indices, strides):
  strides = strides or (1,) * len(start_indices)
  return ctx.op("stablehlo.slice", [x], ctx.aval_out,
                {"start_indices": xla.i64_array(start_indices),
                 "limit_indices": xla.i64_array(limit_indices),
                 "strides": xla.i64_array(strides)})


def _index_scalars(ctx, starts):
  """Start indices in one integer type (StableHLO wants them alike): int64 if any is wider than
  32 bits, else int32. XLA clamps them into the operand, as the NumPy impl does."""
  wide = any(np.dtype(s.dtype).itemsize > 4 for s in starts)
  return [ctx.convert(s, np.int64 if wide else np.int32) for s in starts]


def dynamic_slice_rule(ctx, x, *starts, slice_sizes):
  return ctx.op("stablehlo.dynamic_slice", [x, *_index_scalars(ctx, starts)], ctx.aval_out,
                {"slice_sizes": xla.i64_array(slice_sizes)})


def dynamic_update_slice_rule(ctx, x, update, *starts, **_):
  return ctx.op("stablehlo.dynamic_update_slice", [x, update, *_index_scalars(ctx, starts)],
                ctx.aval_out)


def tile_rule(ctx, x, *, reps):
  """x broadcast along a new leading axis per dimension (reps[i], x.shape[i]), then merged."""
  wide = [n for pair in zip(reps, x.shape) for n in pair]
  spread = ctx.broadcast_to(x, wide, dims=range(1, 2 * len(x.shape), 2))
  return ctx.reshape(spread, ctx.aval_out.shape)


# --- gather -------------------------------------------------------------------------------------

def _dnums_attr(kind: str, fields) -> str:
  """`#stablehlo.gather<offset_dims = [1], ...>`; empty lists are left out, as MLIR prints."""
  body = ", ".join(f"{k} = {xla.i64_list(v)}" for k, v in fields[:-1] if v)
  return f"#stablehlo.{kind}<{body}{', ' if body else ''}index_vector_dim = {fields[-1][1]}>"


def gather_dnums_text(dn, index_vector_dim: int) -> str:
  return _dnums_attr("gather", [
      ("offset_dims", dn.offset_dims), ("collapsed_slice_dims", dn.collapsed_slice_dims),
      ("operand_batching_dims", dn.operand_batching_dims),
      ("start_indices_batching_dims", dn.start_indices_batching_dims),
      ("start_index_map", dn.start_index_map), ("index_vector_dim", index_vector_dim)])


def scatter_dnums_text(dn, index_vector_dim: int) -> str:
  return _dnums_attr("scatter", [
      ("update_window_dims", dn.update_window_dims),
      ("inserted_window_dims", dn.inserted_window_dims),
      ("input_batching_dims", dn.operand_batching_dims),
      ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
      ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
      ("index_vector_dim", index_vector_dim)])


def _bool_attr(b) -> str:
  return "true" if b else "false"


def gather_rule(ctx, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted,
                unique_indices, mode, fill_value):
  dn = dimension_numbers
  if 0 in ctx.aval_out.shape:  # nothing gathered: StableHLO rejects a slice wider than an
    return ctx.zeros(ctx.aval_out.shape, ctx.aval_out.dtype)  # empty operand (JAX's rule too)
  out = ctx.op("stablehlo.gather", [operand, indices], ctx.aval_out,
               {"dimension_numbers": gather_dnums_text(dn, len(indices.shape) - 1),
                "indices_are_sorted": _bool_attr(indices_are_sorted),
                "slice_sizes": xla.i64_array(slice_sizes)})
  if GatherScatterMode.from_any(mode) != GatherScatterMode.FILL_OR_DROP:
    return out
  upper = [operand.shape[d] - slice_sizes[d] for d in dn.start_index_map]
  ok = _in_bounds(ctx, indices, upper)
  batch_dims = [d for d in range(len(out.shape)) if d not in dn.offset_dims]
  ok = ctx.broadcast_to(ok, out.shape, dims=batch_dims)
  dtype = np.dtype(out.dtype)
  fill = _default_fill(dtype) if fill_value is None else fill_value
  with np.errstate(invalid="ignore", over="ignore"):
    fill = np.asarray(fill).astype(dtype)
  return ctx.select(ok, out, ctx.constant(fill, shape=out.shape))


def _in_bounds(ctx, indices, upper) -> xla.Value:
  """Whether each index vector (the last axis of `indices`) lies in [0, upper]: a bool array of
  the batch shape."""
  dtype = np.dtype(indices.dtype)
  lo = ctx.compare(indices, ctx.constant(np.zeros((), dtype), shape=indices.shape), "GE")
  hi_vec = ctx.constant(np.asarray(upper, dtype))
  hi = ctx.compare(indices, ctx.broadcast_to(hi_vec, indices.shape,
                                             dims=[len(indices.shape) - 1]), "LE")
  both = ctx.op("stablehlo.and", [lo, hi], lo.aval)
  return _all_last(ctx, both)


def _all_last(ctx, pred) -> xla.Value:
  """AND over the last axis of a bool array."""
  out_aval = _aval(pred.shape[:-1], np.bool_)
  return ctx.op("stablehlo.reduce", [pred, ctx.constant(np.asarray(True))], out_aval,
                {"dimensions": xla.i64_array([len(pred.shape) - 1])},
                regions=[ctx.scalar_region(np.bool_, "stablehlo.and")])


# --- scatter ------------------------------------------------------------------------------------

def _update_region(ctx, combiner, dtype, update_jaxpr, update_consts) -> str:
  av = _aval((), dtype)
  if combiner is not None:
    return ctx.scalar_region(dtype, combiner)
  if update_jaxpr is None:  # scatter proper: the update replaces the operand
    return ctx.region([av, av], lambda c, old, new: new)
  return ctx.region([av, av], lambda c, old, new: c.lower_jaxpr(update_jaxpr, update_consts,
                                                                 [old, new]))


def _scatter_window(operand_shape, updates_shape, dn):
  sizes = iter(updates_shape[d] for d in dn.update_window_dims)
  skip = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  return [1 if d in skip else next(sizes) for d in range(len(operand_shape))]


def _clamp_indices(ctx, indices, upper) -> xla.Value:
  dtype = np.dtype(indices.dtype)
  lo = ctx.constant(np.zeros((), dtype), shape=indices.shape)
  hi = ctx.broadcast_to(ctx.constant(np.maximum(np.asarray(upper), 0).astype(dtype)),
                        indices.shape, dims=[len(indices.shape) - 1])
  return ctx.op("stablehlo.clamp", [lo, indices, hi], indices.aval)


def scatter_rule(combiner: str | None):
  """The rule of a scatter primitive combining old and new values with elementwise op
  `combiner` ("add", ...; None: the update replaces the operand, or its update_jaxpr runs)."""
  def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices, mode, update_jaxpr, update_consts):
    dn = dimension_numbers
    if GatherScatterMode.from_any(mode) == GatherScatterMode.CLIP:
      window = _scatter_window(operand.shape, updates.shape, dn)
      upper = [operand.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims]
      indices = _clamp_indices(ctx, indices, upper)
    region = _update_region(ctx, combiner, operand.dtype, update_jaxpr, update_consts)
    return ctx.op("stablehlo.scatter", [operand, indices, updates], ctx.aval_out,
                  {"scatter_dimension_numbers": scatter_dnums_text(dn, len(indices.shape) - 1),
                   "indices_are_sorted": _bool_attr(indices_are_sorted),
                   "unique_indices": _bool_attr(unique_indices)},
                  regions=[region])
  return rule
