"""StableHLO lowering rules of the ref primitives (new_ref, empty_ref, get, swap, addupdate,
freeze, free_ref); `primitives.py` registers them next to its primitives.

A ref is a `lowering.RefCell` while the program is emitted: `get` slices its current contents,
`swap`/`addupdate` replace them with an updated array, so the compiled program is pure (the
state is discharged as it is lowered). `@main` takes the refs it is given as arguments and
returns their final contents, which the executable writes back into the `Ref` objects.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.compiler.xla.lowering import shaped_aval as _aval


def _extent(d) -> int:
  return (d.size - 1) * d.stride + 1 if d.size else 0


def _starts(ctx, cell, indexer, dyn):
  """The window's start per axis as i32 scalars: a static start as a constant; a dynamic one
  wrapped when negative (XLA's dynamic_slice then clamps it into range, as the NumPy kernel
  does)."""
  out, dyn = [], iter(dyn)
  for d, n in zip(indexer, cell.aval.shape):
    if d.start is not None:
      out.append(ctx.constant(np.asarray(d.start, np.int32)))
      continue
    i = next(dyn)
    i = ctx.convert(i, np.int64 if np.dtype(i.dtype).itemsize > 4 else np.int32)
    wrapped = ctx.op("stablehlo.add", [i, ctx.constant(np.asarray(n, i.dtype))], i.aval)
    i = ctx.select(ctx.compare(i, ctx.constant(np.asarray(0, i.dtype)), "LT"), wrapped, i)
    out.append(ctx.convert(i, np.int32))
  return out


def _is_whole(indexer, shape) -> bool:
  return all(d.start == 0 and d.size == n and d.stride == 1 and not d.squeeze
             for d, n in zip(indexer, shape))


def _window(ctx, cell, indexer, dyn) -> xla.Value:
  """The unstrided window `cell[indexer]` covers (extent per axis, no axis dropped)."""
  buf = cell.value
  if _is_whole(indexer, buf.shape):
    return buf
  extents = [_extent(d) for d in indexer]
  return ctx.op("stablehlo.dynamic_slice", [buf, *_starts(ctx, cell, indexer, dyn)],
                _aval(extents, buf.dtype), {"slice_sizes": xla.i64_array(extents)})


def _read(ctx, cell, indexer, dyn) -> xla.Value:
  """`cell[indexer]`: the window, its strides taken, its integer-indexed axes dropped."""
  window = _window(ctx, cell, indexer, dyn)
  if any(d.stride != 1 for d in indexer):
    window = ctx.op("stablehlo.slice", [window], _aval([d.size for d in indexer], window.dtype),
                    {"start_indices": xla.i64_array([0] * len(indexer)),
                     "limit_indices": xla.i64_array(window.shape),
                     "strides": xla.i64_array([d.stride for d in indexer])})
  return ctx.reshape(window, [d.size for d in indexer if not d.squeeze])


def _write(ctx, cell, indexer, dyn, val) -> None:
  """`cell[indexer] = val`: the cell's contents replaced by the updated array."""
  buf = cell.value
  val = ctx.convert(ctx.broadcast_to(val, [d.size for d in indexer if not d.squeeze]), buf.dtype)
  if _is_whole(indexer, buf.shape):
    cell.value = xla.Value(val.name, buf.aval)
    return
  full = ctx.reshape(val, [d.size for d in indexer])
  if any(d.stride != 1 for d in indexer):
    # the strided elements spread over the window by interior padding; the rest keep the window
    window = _window(ctx, cell, indexer, dyn)
    pad = lambda v, fill: ctx.op(
        "stablehlo.pad", [v, ctx.constant(np.asarray(fill, v.dtype))], window.aval if
        v.dtype == window.dtype else _aval(window.shape, v.dtype),
        {"edge_padding_low": xla.i64_array([0] * len(indexer)),
         "edge_padding_high": xla.i64_array([0] * len(indexer)),
         "interior_padding": xla.i64_array([d.stride - 1 for d in indexer])})
    mask = pad(ctx.constant(np.asarray(True), shape=full.shape), False)
    zero = np.zeros((), buf.dtype)
    full = ctx.op("stablehlo.select", [mask, pad(full, zero), window], window.aval)
  cell.value = ctx.op("stablehlo.dynamic_update_slice",
                      [buf, full, *_starts(ctx, cell, indexer, dyn)], buf.aval)


def new_ref_rule(ctx, val, **_):
  aval = ctx.aval_out
  return xla.RefCell(ctx.convert(ctx.broadcast_to(val, aval.shape), aval.dtype), aval)


def empty_ref_rule(ctx, *, ty, **_):
  # zero-filled, as the NumPy kernel makes it (reads before writes are defined)
  return xla.RefCell(ctx.zeros(ty.shape, ty.dtype), ctx.aval_out)


def get_rule(ctx, ref, *dyn, indexer):
  return _read(ctx, ref, indexer, dyn)


def swap_rule(ctx, ref, val, *dyn, indexer):
  old = _read(ctx, ref, indexer, dyn)
  _write(ctx, ref, indexer, dyn, val)
  return old


def addupdate_rule(ctx, ref, val, *dyn, indexer):
  old = _read(ctx, ref, indexer, dyn)
  val = ctx.convert(ctx.broadcast_to(val, old.shape), old.dtype)
  _write(ctx, ref, indexer, dyn, ctx.op("stablehlo.add", [old, val], old.aval))
  return []


def freeze_rule(ctx, ref):
  return xla.Value(ref.value.name, ctx.aval_out)


def free_ref_rule(ctx, ref):
  return []
