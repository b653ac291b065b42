"""`cond_p`: run one of several closed jaxprs chosen by an int32 index; `lax.cond` and
`lax.switch` trace their Python branches into it (branches in (false, true) order for cond).

Each branch runs as the backend's executable (`backend.compile_jaxpr`), cached on its jaxpr.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxlite._src.compat import traceback_util
from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.compiler import backend, passes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.config import config
from jaxlite._src.interpreters import ad, batching, linearize
from jaxlite._src.transforms.call_primitives import as_traceable_arg
from jaxlite._src.lax import elementwise_functions as lax
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.base.memory_space import MemorySpace
from jaxlite._src.lax.control_flow import common
from jaxlite._src.lax.identity_ops import empty2
from jaxlite._src.lax.control_flow import lowering as cf_lowering

_NO_OPERAND = object()

# --- the primitive -------------------------------------------------------------------------------

cond_p = core.Primitive("cond")
cond_p.multiple_results = True


def _cond_abstract_eval(index, *avals, branches):
  if index.shape != () or index.dtype != np.int32:
    raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
  n_in = len(branches[0].in_avals)
  if len(avals) != n_in:
    raise TypeError(f"cond branches take {n_in} operands, got {len(avals)}")
  return branches[0].out_avals


def _cond_impl(index, *args, branches):
  # Out-of-range indices run the nearest branch, like XLA's conditional.
  i = min(max(int(index), 0), len(branches) - 1)
  return backend.compile_jaxpr(branches[i])(*args)


cond_p.def_abstract_eval(_cond_abstract_eval)
cond_p.def_impl(_cond_impl)
xla.register(cond_p, cf_lowering.cond_rule)


def _cond_batch_rule(axis_data, args, dims, *, branches):
  if all(d is None for d in dims):
    return cond_p.bind(*args, branches=branches), [None] * len(branches[0].out_avals)
  if dims[0] is not None:
    return _cond_as_select(axis_data, args, dims, branches)
  index, ops, op_batched = args[0], args[1:], [d is not None for d in dims[1:]]
  out_batched = [False] * len(branches[0].out_avals)
  for b in branches:  # an output batched in any branch is batched in all
    _, batched = common.batch_body(b, axis_data, op_batched, out_batched)
    out_batched = [x or y for x, y in zip(out_batched, batched)]
  new_branches = tuple(common.batch_body(b, axis_data, op_batched, out_batched)[0]
                       for b in branches)
  ops = common.moved_to_front(ops, dims[1:], op_batched, axis_data.size)
  outs = cond_p.bind(index, *ops, branches=new_branches)
  return outs, [0 if b else None for b in out_batched]


def _cond_as_select(axis_data, args, dims, branches):
  """A batched index runs every branch on every example and selects, like JAX.

  Each branch sees its operands through a select against `stop_gradient`, so reverse mode
  never differentiates a branch where it was not taken.
  """
  index, *ops = common.moved_to_front(args, dims, [True] * len(args), axis_data.size)
  n_out = len(branches[0].out_avals)
  branch_outs = []
  for i, branch in enumerate(branches):
    batched, _ = common.batch_body(branch, axis_data, [True] * len(ops), [True] * n_out)
    taken = lax.eq(index, np.array(i, np.int32))
    ops_i = [_bcast_select_n(taken, _stop_gradient(x), x) for x in ops]
    branch_outs.append(core.eval_jaxpr(batched.jaxpr, batched.consts, *ops_i))
  outs = [_bcast_select_n(index, *cases) for cases in zip(*branch_outs)]
  return outs, [0] * n_out


def _bcast_select_n(which, *cases):
  if np.ndim(which) != np.ndim(cases[0]):
    which = shape_prims.broadcast_in_dim_p.bind(
        which, shape=tuple(np.shape(cases[0])),
        broadcast_dimensions=tuple(range(np.ndim(which))), sharding=None)
  return lax.select_n(which, *cases)


def _stop_gradient(x):
  # Only inexact values carry gradients (like lax.stop_gradient); keys and other extended
  # dtypes (blackjax's vmapped conds over PRNG keys) carry none.
  dtype = dtypes.dtype_and_weak(x)[0]
  if getattr(dtype, "_is_extended", False) is not True and dtypes.kind_of_dtype(dtype) in "fc":
    return ad.stop_gradient_p.bind(x)
  return x


batching.axis_primitive_batchers[cond_p] = _cond_batch_rule


def _cond_jvp(primals, tangents, *, branches):
  """One cond over (operands, nonzero tangents) running each branch's JVP."""
  index, ops, op_t = primals[0], primals[1:], tangents[1:]
  nonzeros = [not common.is_zero(t) for t in op_t]
  out_nz = _union_out_nonzeros(branches, nonzeros)
  jvp_branches = tuple(common.jvp_body(b, nonzeros, out_nz) for b in branches)
  nz_t = [t for t in op_t if not common.is_zero(t)]
  outs = cond_p.bind(index, *ops, *nz_t, branches=jvp_branches)
  n_out = len(branches[0].out_avals)
  return outs[:n_out], _spread_tangents(outs[n_out:], out_nz, branches[0].out_avals)


def _union_out_nonzeros(branches, nonzeros) -> tuple:
  out = [False] * len(branches[0].out_avals)
  for b in branches:
    _, nz = ad.jvp_jaxpr(b, tuple(nonzeros))
    out = [x or y for x, y in zip(out, nz)]
  return tuple(out)


def _spread_tangents(present, nonzeros, avals) -> list:
  it = iter(present)
  return [next(it) if nz else ad.Zero(ad.tangent_aval(a)) for nz, a in zip(nonzeros, avals)]


def _cond_linearize(primals, tangents, *, branches):
  """Reverse mode: a primal cond that also returns the branches' residuals (slots shared by
  type across branches, unspecified where the taken branch fills none), then a linear cond of
  the tangents that reads them."""
  index, ops, op_t = primals[0], primals[1:], tangents[1:]
  nonzeros = tuple(not common.is_zero(t) for t in op_t)
  primal_branches, tangent_branches, out_nz = common.memo(
      branches[0], ("cond_linearize", branches, nonzeros),
      lambda: _linearized_branches(branches, nonzeros))
  n_out = len(branches[0].out_avals)
  outs = cond_p.bind(index, *ops, branches=primal_branches)
  primal_out, residuals = outs[:n_out], outs[n_out:]
  nz_t = [t for t in op_t if not common.is_zero(t)]
  t_out = cond_p.bind(index, *residuals, *nz_t, branches=tangent_branches) if any(out_nz) else []
  return primal_out, _spread_tangents(t_out, out_nz, branches[0].out_avals)


def _merged_residual_slots(res_avals):
  """One list of residual slots for all branches and each branch's slot indices: a branch's
  k-th residual of a type takes the k-th slot of that type, so branches share slots by type
  (JAX's merge: [x], [y], [x, x] -> slots [x, y, x], indices [[0], [1], [0, 2]])."""
  def tagged(avals):
    seen = {}
    out = []
    for a in avals:
      key = (tuple(a.shape), a.dtype, a.weak_type)
      out.append((key, seen.setdefault(key, 0)))
      seen[key] += 1
    return out
  tags = [tagged(avals) for avals in res_avals]
  slot_of, slots = {}, []
  for branch_tags, avals in zip(tags, res_avals):
    for tag, aval in zip(branch_tags, avals):
      if tag not in slot_of:
        slot_of[tag] = len(slots)
        slots.append(aval)
  return slots, [[slot_of[t] for t in branch_tags] for branch_tags in tags]


def _unspecified_like(aval):
  """A value of `aval`'s type whose contents do not matter (a residual slot the taken branch
  does not fill): `empty2` broadcast, as JAX stages it."""
  x = empty2(aval.dtype, memory_space=MemorySpace.Device)
  if not aval.shape:
    return x
  return shape_prims.broadcast_in_dim_p.bind(x, shape=tuple(aval.shape), broadcast_dimensions=(),
                                             sharding=None)


def _linearized_branches(branches, nonzeros):
  lins = [linearize.linearize_jaxpr(b, nonzeros) for b in branches]
  out_nz = tuple(any(nz) for nz in zip(*(lin.nz_out for lin in lins)))
  res_avals = [[v.aval for v in lin.tangent.jaxpr.invars[:len(lin.res_src)]] for lin in lins]
  slots, slot_indices = _merged_residual_slots(res_avals)
  op_avals = branches[0].in_avals

  def primal_branch(i, lin):
    def fun(*ops):
      outs = core.eval_jaxpr(lin.primal.jaxpr, lin.primal.consts, *ops)
      primal_out, res = lin.assemble(list(ops), outs)
      filled = [_unspecified_like(a) for a in slots]  # every slot first, as JAX's join
      for k, r in zip(slot_indices[i], res):
        filled[k] = r
      return primal_out + filled
    return common.retrace(fun, op_avals)

  t_avals = [ad.tangent_aval(a) for a, nz in zip(op_avals, nonzeros) if nz]

  def tangent_branch(i, lin):
    def fun(*args):
      res = [args[k] for k in slot_indices[i]]
      outs = core.eval_jaxpr(lin.tangent.jaxpr, lin.tangent.consts, *res, *args[len(slots):])
      return common.instantiate_outputs(outs, lin.nz_out, out_nz, branches[0].out_avals)
    return common.retrace(fun, slots + t_avals)

  return (tuple(primal_branch(i, lin) for i, lin in enumerate(lins)),
          tuple(tangent_branch(i, lin) for i, lin in enumerate(lins)), out_nz)


def _cond_transpose(cts, index, *args, branches):
  """Each branch transposed; one cond picks the taken branch's cotangents."""
  undefined = tuple(ad.is_undefined_primal(a) for a in args)
  ct_nz = tuple(not common.is_zero(c) for c in cts)
  if not any(ct_nz):
    return [None] + [ad.Zero(a.aval) if u else None for a, u in zip(args, undefined)]
  lin_avals = [a.aval for a, u in zip(args, undefined) if u]  # the caller's types (JAX's)
  t_branches = tuple(common.transpose_body(b, undefined, ct_nz, lin_avals) for b in branches)
  defined = [a for a, u in zip(args, undefined) if not u]
  outs = iter(cond_p.bind(index, *defined, *[c for c in cts if not common.is_zero(c)],
                          branches=t_branches))
  return [None] + [next(outs) if u else None for u in undefined]


ad.jvp_rules[cond_p] = _cond_jvp
ad.linearize_rules[cond_p] = _cond_linearize
ad.primitive_transposes[cond_p] = _cond_transpose


def _cond_dce(eqn, used_outputs):
  """A cond without its unused outputs, each branch pruned to the used ones (its dead eqns
  gone), and without the operands no branch reads any more: JAX's rule."""
  branches = eqn.params["branches"]
  pruned = [passes.dce(b.jaxpr.replace(outvars=[v for v, u in zip(b.jaxpr.outvars, used_outputs)
                                                if u]), prune_subjaxprs=True)
            for b in branches]
  reads = [any(r) for r in zip(*(passes.used_inputs(j) for j in pruned))]
  if all(used_outputs) and all(reads) and all(
      len(j.eqns) == len(b.jaxpr.eqns) for j, b in zip(pruned, branches)):
    return eqn
  new_branches = tuple(
      core.ClosedJaxpr(j.replace(invars=[v for v, r in zip(j.invars, reads) if r]), b.consts)
      for j, b in zip(pruned, branches))
  return eqn.replace(invars=[eqn.invars[0]] + [v for v, r in zip(eqn.invars[1:], reads) if r],
                     outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
                     params=dict(eqn.params, branches=new_branches))


passes.dce_rules[cond_p] = _cond_dce


# --- lax.cond ------------------------------------------------------------------------------------


def _as_int32_index(x):
  """cond's/switch's branch index as int32. A Python or NumPy scalar stays a NumPy scalar (a
  literal when staged, as JAX's convert of it): made into an Array under `jax.set_mesh` it would
  be placed on the mesh and lend it to results whose types name none."""
  if type(x) in (bool, int, np.bool_) or isinstance(x, np.integer):
    v = int(x)
    if -2**31 <= v < 2**31:
      return np.int32(v)
  return lax.convert_element_type(x, np.int32)


@traceback_util.api_boundary
def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
  """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, staged as one `cond` eqn."""
  if not (callable(true_fun) and callable(false_fun)):
    # JAX still accepts the deprecated form cond(pred, x_true, f_true, x_false, f_false).
    if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
      x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
      return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  operands = _operands(operands, operand)
  pred = _check_pred(pred)
  if config.jax_disable_jit and _is_concrete(pred):
    return true_fun(*operands) if pred else false_fun(*operands)
  index = _as_int32_index(pred)
  return _bind_branches(index, (false_fun, true_fun), operands, "cond",
                        (("true_fun", 1), ("false_fun", 0)))


def _operands(operands, operand):
  if operand is _NO_OPERAND:
    return operands
  if operands:
    raise TypeError("if 'operand' keyword is passed then no positional operands can be passed, "
                    f"got operand={operand!r} and positional operands {operands!r}")
  return (operand,)


def _check_pred(pred):
  """The predicate as a boolean scalar (numbers compare with 0), with JAX's TypeErrors."""
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, Sequence) or np.ndim(pred) != 0:
    what = f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {np.shape(pred)}."
    raise TypeError(f"Pred must be a scalar, got {pred} of {what}")
  try:
    dtype = dtypes.result_type(pred)
  except TypeError:
    raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from None
  if dtype.kind == "b":
    return pred
  if dtype.kind in "iuf":
    return pred != 0
  raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")


def _is_concrete(x) -> bool:
  return not isinstance(x, core.Tracer) or x.to_concrete_value() is not None


# --- lax.switch ----------------------------------------------------------------------------------


@traceback_util.api_boundary
def switch(index, branches, *operands, operand=_NO_OPERAND):
  """`branches[clamp(0, index, len(branches) - 1)](*operands)`, staged as one `cond` eqn."""
  if not all(callable(b) for b in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  operands = _operands(operands, operand)
  if len(np.shape(index)) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  try:
    index_dtype = dtypes.result_type(index)
  except TypeError:
    raise TypeError(f"Index type must be an integer, got {index}.") from None
  if index_dtype.kind not in "iu":
    raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
  branches = tuple(branches)
  if not branches:
    raise ValueError("Empty branch sequence")
  if len(branches) == 1:
    return branches[0](*operands)
  index = _as_int32_index(index)
  if type(index) is np.int32 and core._state.trace is core.eval_trace:  # (staged: a clamp eqn)
    index = np.int32(min(max(int(index), 0), len(branches) - 1))
  else:
    index = lax.clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
  if config.jax_disable_jit and _is_concrete(index):
    return branches[int(index)](*operands)
  named = [("branch 0", 0)] + [(f"branch{i}", i) for i in range(1, len(branches))]
  return _bind_branches(index, branches, operands, "switch", named)


# --- shared by cond and switch -------------------------------------------------------------------


def _bind_branches(index, funs, operands, api_name, named):
  """Traces `funs` (in index order) on the operands and binds `cond_p`.

  `named` lists (name, index) in the user's order, which is the order of tracing, of the
  output checks and of the merged consts (true_fun before false_fun for cond). Outputs that
  every branch forwards from an input skip the eqn, like JAX.
  """
  args, in_tree = tree_util.tree_flatten(operands)
  args = [as_traceable_arg(a) for a in args]
  in_avals = tuple(core.get_aval(a) for a in args)
  branches, consts, in_fwd, out_tree = common.cached_trace(
      tuple(funs), (in_tree, in_avals, api_name),
      lambda: _trace_branches(funs, in_tree, in_avals, api_name, named))
  outs = iter(cond_p.bind(index, *consts, *args, branches=branches))
  all_inputs = [*consts, *args]
  flat = [next(outs) if f is None else common.as_array(all_inputs[f]) for f in in_fwd]
  return tree_util.tree_unflatten(out_tree, flat)


def _trace_branches(funs, in_tree, in_avals, api_name, named):
  traced = {}
  for _, i in named:
    # one callable given for several branches is traced once, as JAX does (haiku counts)
    same = next((j for j in traced if funs[j] is funs[i]), None)
    traced[i] = traced[same] if same is not None else common.trace_body(
        funs[i], in_tree, in_avals, api_name)
  (name0, i0), first = named[0], traced[named[0][1]]
  for name, i in named[1:]:
    common.check_branch_outputs(api_name, name0, name, funs[i0], funs[i], first.out_tree,
                                first.out_avals, traced[i].out_tree, traced[i].out_avals)
  jaxprs, consts = common.merge_common_consts([traced[i] for _, i in named])
  by_index = dict(zip((i for _, i in named), jaxprs))
  branches = [by_index[i] for i in range(len(funs))]
  fwds = [common.forwarding(b.jaxpr) for b in branches]
  in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds)]
  keep = [f is None for f in in_fwd]
  return tuple(common.prune_outputs(b, keep) for b in branches), consts, in_fwd, first.out_tree
