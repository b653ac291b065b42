"""StableHLO lowering rules of the control-flow primitives: `while` -> stablehlo.while,
`cond` -> stablehlo.case, `scan` -> a stablehlo.while over a counter (fori_loop traces to one
of the two); `loops.py` and `conditionals.py` register them next to their primitives.

Bodies are inlined into the op's regions. A loop's constants travel in its state rather than
being read from above, so the regions depend on nothing but their arguments.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.compiler.xla.lowering import shaped_aval as _aval
from jaxlite._src.base.list_util import split_list


def _any(ctx, pred) -> xla.Value:
  """A batched predicate (vmap of a while loop) is true while any element is."""
  if not pred.shape:
    return pred
  return ctx.op("stablehlo.reduce", [pred, ctx.constant(np.asarray(False))], _aval((), np.bool_),
                {"dimensions": xla.i64_array(range(len(pred.shape)))},
                regions=[ctx.scalar_region(np.bool_, "stablehlo.or")])


def _where(ctx, pred, new, old) -> xla.Value:
  """`new` where the (leading-axes) predicate holds, else `old`."""
  if not pred.shape:
    return new
  # key carries select their whole data rows
  data_new, data_old = xla.physical(new), xla.physical(old)
  p = ctx.broadcast_to(pred, data_new.shape, dims=range(len(pred.shape)))
  return xla.with_aval(ctx.select(p, data_new, data_old), new.aval)


# --- while ----------------------------------------------------------------------------------------

def while_rule(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # refs among the consts (a ref the loop closes over) travel in the state: the body's writes
  # are the next iteration's contents and the loop's result the ref's new contents
  refs = xla.RefThreading(args)
  operands = refs.operands()
  state_avals = [v.aval for v in operands]
  batched = bool(cond_jaxpr.out_avals[0].shape)

  def cond_region(c, *state):
    cc, _, cy = split_list(refs.cells(state), [cond_nconsts, body_nconsts])
    pred, = c.lower_jaxpr(cond_jaxpr, None, cc + cy)
    return [_any(c, pred)]

  def body_region(c, *state):
    inner = refs.cells(state)
    cc, bc, cy = split_list(inner, [cond_nconsts, body_nconsts])
    new = c.lower_jaxpr(body_jaxpr, None, bc + cy)
    if batched:  # elements whose predicate is already false keep their carry
      pred, = c.lower_jaxpr(cond_jaxpr, None, cc + cy)
      new = [_where(c, pred, n, o) for n, o in zip(new, cy)]
    return refs.yields([*cc, *bc, *new])

  outs = ctx.op("stablehlo.while", operands, state_avals,
                regions=[ctx.region(state_avals, cond_region),
                         ctx.region(state_avals, body_region)])
  refs.update(outs)
  return outs[cond_nconsts + body_nconsts:]


# --- cond -----------------------------------------------------------------------------------------

def cond_rule(ctx, index, *ops, branches):
  # The index is in range: `switch` clamps it where it is traced (as JAX's does) and `cond`'s
  # comes from a bool, so the case takes it as it is, as JAX lowers it.
  n = len(branches)
  index = ctx.convert(index, np.int32)
  if n == 1:
    return ctx.lower_jaxpr(branches[0], None, list(ops))
  # refs the branches close over: each branch starts from their contents and returns its final
  # contents after the outputs; the case's extra results are the refs' new contents
  refs = xla.RefThreading(ops)
  n_out = len(ctx.avals_out)

  def branch(c, b):
    inner = refs.cells(refs.operands())
    outs = c.lower_jaxpr(b, None, inner)
    return [*outs, *(inner[i].value for i, j in refs.first.items() if i == j)]
  ref_avals = [ops[i].value.aval for i, j in refs.first.items() if i == j]
  regions = [ctx.region([], lambda c, b=b: branch(c, b)) for b in branches]
  outs = ctx.op("stablehlo.case", [index], [*ctx.avals_out, *ref_avals], regions=regions)
  final = iter(outs[n_out:])
  for i, j in refs.first.items():
    if i == j:
      ops[i].value = next(final)
  return outs[:n_out]


# --- scan -----------------------------------------------------------------------------------------

def scan_rule(ctx, *args, reverse, length, jaxpr, num_consts, num_carry, unroll, **_):
  # refs among the consts travel in the loop state as their contents (see while_rule)
  refs = xla.RefThreading(args)
  consts, carry, xs = split_list(refs.operands(), [num_consts, num_carry])
  if length == 0:  # no step runs (and there is no row to slice): the carry and empty ys
    return [*carry, *(ctx.zeros(a.shape, a.dtype) if not xla.is_extended(a) else xla.with_aval(
        ctx.zeros(xla.physical_aval(a).shape, np.uint32), a) for a in ctx.avals_out[num_carry:])]
  # xs and ys are sliced and updated as data (key arrays: ui32 [..., 2]); the body sees types
  y_avals = jaxpr.out_avals[num_carry:]
  x_avals = jaxpr.in_avals[num_consts + num_carry:]
  xs = [xla.physical(x) for x in xs]
  ys = [ctx.zeros((length, *d.shape), d.dtype) for d in map(xla.physical_aval, y_avals)]
  i0 = ctx.constant(np.asarray(0, np.int32))
  state = [i0, *consts, *carry, *xs, *ys]
  state_avals = [v.aval for v in state]
  sizes = [1, num_consts, num_carry, len(xs)]

  def cond_region(c, i, *rest):
    return [c.compare(i, c.constant(np.asarray(length, np.int32)), "LT")]

  def body_region(c, i, *rest):
    cs, cy, xv, yv = split_list(rest, sizes[1:])
    cs = refs.cells([*cs, *cy, *xv])[:num_consts]
    t = i
    if reverse:
      t = c.op("stablehlo.subtract", [c.constant(np.asarray(length - 1, np.int32)), i], i.aval)
    zero = c.constant(np.asarray(0, np.int32))
    x_t = [xla.with_aval(_index_row(c, x, t, zero), a) for x, a in zip(xv, x_avals)]
    outs = c.lower_jaxpr(jaxpr, None, [*cs, *cy, *x_t])
    new_carry, y_t = outs[:num_carry], outs[num_carry:]
    new_ys = [_update_row(c, y, xla.physical(v), t, zero) for y, v in zip(yv, y_t)]
    step = c.op("stablehlo.add", [i, c.constant(np.asarray(1, np.int32))], i.aval)
    return [step, *refs.yields(cs), *new_carry, *xv, *new_ys]

  outs = ctx.op("stablehlo.while", state, state_avals,
                regions=[ctx.region(state_avals, cond_region),
                         ctx.region(state_avals, body_region)])
  _, out_consts, out_carry, _, out_ys = split_list(outs, sizes)
  refs.update(out_consts)
  return [*out_carry, *(xla.with_aval(y, a) for y, a in zip(out_ys, ctx.avals_out[num_carry:]))]


def _index_row(ctx, x, t, zero) -> xla.Value:
  """Row `t` of `x` (its leading axis dropped)."""
  row = ctx.op("stablehlo.dynamic_slice", [x, t] + [zero] * (len(x.shape) - 1),
               _aval((1, *x.shape[1:]), x.dtype),
               {"slice_sizes": xla.i64_array((1, *x.shape[1:]))})
  return ctx.reshape(row, x.shape[1:])


def _update_row(ctx, y, v, t, zero) -> xla.Value:
  """`y` with row `t` replaced by `v`."""
  v = ctx.convert(ctx.broadcast_to(v, y.shape[1:]), y.dtype)
  row = ctx.reshape(v, (1, *y.shape[1:]))
  return ctx.op("stablehlo.dynamic_update_slice", [y, row, t] + [zero] * (len(y.shape) - 1),
                y.aval)
