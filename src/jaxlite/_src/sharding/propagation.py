"""Sharding propagation over a jaxpr in Auto mode, and `lax.with_sharding_constraint`.

A spec here is a tuple with one entry per dimension: the tuple of mesh axis names that
dimension is split over (() when unsplit). `propagate` walks the eqns once, in order, and gives
every value a spec and every eqn a plan (`EqnPlan`): the specs its operands must be brought to
and the collective that completes each output. The policy is deliberately simple:

1. Follow the operands. Elementwise ops take the spec of their first operand of full rank that
   is split anywhere; the other operands are brought to it. Layout ops (transpose, reshape that
   keeps a split dim whole, broadcast_in_dim, squeeze, expand_dims, convert) and the per-key
   PRNG ops (random_bits, random_split, random_wrap/unwrap, threefry2x32) carry each dim's
   axes to where the dim goes.
2. Prefer the constrained sharding: `sharding_constraint` eqns (and jit's `out_shardings`) set
   their value's spec whatever the operand had; a value whose type carries a sharding (explicit
   axes) takes that one.
3. Reductions and contractions over a split dim compute locally, then complete the result with
   a collective: `reduce_sum` and `dot_general` -> psum, `reduce_max` -> pmax, `reduce_min` ->
   pmin, over the axes of the reduced dims. For `dot_general`, lhs's split contracting dims
   win: rhs's matching dims are brought to the same axes; a free dim of rhs split over an axis
   lhs already uses is gathered.
4. Ops along some dims (cumulative ops, sort, concatenate, argmax and the other reductions)
   make those dims whole and keep the others' axes.
5. Replicate when in doubt: any other primitive (control flow, gathers, scatters, calls of
   unknown bodies) gets all its operands gathered and runs whole on every device; its outputs
   are replicated.
6. Backward from the outputs: a result jit's `out_shardings` asks split, which forward
   propagation left replicated, is computed split where JAX's propagation computes it so:
   its producer (elementwise and layout ops, reductions, dot_general, calls) takes the
   requested spec and asks its operands for the matching one, and so on up to the inputs
   (sliced locally), as long as every consumer of a value wants the same spec
   (`back_propagate`). Likewise a replicated `broadcast_in_dim` result that all its consumers
   want split over dims the broadcast creates is produced split.

`partition.py` turns the plan into one per-device program.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.base import devices
from jaxlite._src.base import tree_util
from jaxlite._src.compiler.xla import lowering as hlo
from jaxlite._src.compiler.xla import spmd as xla_spmd
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.sharding.layout import Format
from jaxlite._src.sharding.partition_spec import UNCONSTRAINED, PartitionSpec

# --- specs ---------------------------------------------------------------------------------------


def replicated(ndim: int) -> tuple:
  return ((),) * ndim


def spec_of_sharding(sharding, ndim: int) -> tuple:
  """The spec of a NamedSharding (or a single-device/replicated sharding) for rank `ndim`."""
  pspec = getattr(sharding, "spec", None)
  if pspec is None:
    return replicated(ndim)
  out = []
  for entry in tuple(pspec)[:ndim]:
    if entry is None or entry is getattr(type(pspec), "UNCONSTRAINED", object()):
      out.append(())
    else:
      out.append(tuple(entry) if isinstance(entry, tuple) else (entry,))
  return tuple(out) + ((),) * (ndim - len(out))


def spec_axes(spec) -> set:
  return {a for entry in spec for a in entry}


class EqnPlan:
  """How one eqn runs per device: operands brought to `in_specs`, outputs with `out_specs`,
  each output then completed by `reduce[i]` = (collective name, axes) or None. `local` says
  whether the eqn runs on blocks (params localized) or on whole values; `inner` is, for a call
  (jit, custom_jvp_call, custom_vjp_call: run as their jaxpr when not differentiated), the
  (closed jaxpr, specs, plans) of its body, partitioned in place."""
  __slots__ = ("in_specs", "out_specs", "reduce", "local", "inner")

  def __init__(self, in_specs, out_specs, reduce=None, local=True, inner=None):
    self.in_specs, self.out_specs, self.local, self.inner = in_specs, out_specs, local, inner
    self.reduce = reduce or [None] * len(out_specs)


# --- rules ---------------------------------------------------------------------------------------

# Which rule a primitive takes is registered with it (primitive_kinds): its kind (elementwise
# ops propagate operand axes to the result), the collective completing a reduction over a split
# axis, the dims an op works along, the name of one of the rules below (`RULES`), or the
# param holding a call's jaxpr.
def _ndim(v) -> int:
  return len(v.aval.shape)


def _rule_elementwise(eqn, specs):
  # Operands of full rank may have size-1 dims (broadcast): those stay whole.
  shape = eqn.outvars[0].aval.shape
  full = [v.aval.shape == shape for v in eqn.invars]
  target = next((s for f, s in zip(full, specs) if f and spec_axes(s)), replicated(len(shape)))
  ins = []
  for v in eqn.invars:
    vs = v.aval.shape
    ins.append(replicated(len(vs)) if len(vs) != len(shape)
               else tuple(t if n == m else () for t, n, m in zip(target, vs, shape)))
  return EqnPlan(ins, [target] * len(eqn.outvars))


def _rule_transpose(eqn, specs):
  (s,) = specs
  return EqnPlan([s], [tuple(s[p] for p in eqn.params["permutation"])])


def _rule_broadcast_in_dim(eqn, specs):
  (s,) = specs
  in_shape = eqn.invars[0].aval.shape
  out_shape = eqn.params["shape"]
  kept = list(s)
  out = [()] * len(out_shape)
  for i, d in enumerate(eqn.params["broadcast_dimensions"]):
    if in_shape[i] == out_shape[d]:
      out[d] = s[i]
    else:
      kept[i] = ()  # a size-1 dim broadcast: it must be whole first
  return EqnPlan([tuple(kept)], [tuple(out)])


def _rule_squeeze(eqn, specs):
  (s,) = specs
  dims = set(d % max(len(s), 1) for d in eqn.params["dimensions"])
  return EqnPlan([s], [tuple(e for i, e in enumerate(s) if i not in dims)])


def _rule_expand_dims(eqn, specs):
  (s,) = specs
  out = list(s)
  for d in sorted(eqn.params["dimensions"]):
    out.insert(d, ())
  return EqnPlan([s], [tuple(out)])


def _rule_reshape(eqn, specs):
  # Dims kept whole at the front (same sizes, in order) keep their axes; everything after the
  # first changed dim is made whole.
  (s,) = specs
  in_shape, out_shape = eqn.invars[0].aval.shape, tuple(eqn.params["new_sizes"])
  ins, out = [()] * len(in_shape), [()] * len(out_shape)
  for i, (a, b) in enumerate(zip(in_shape, out_shape)):
    if a != b:
      break
    ins[i] = out[i] = s[i]
  return EqnPlan([tuple(ins)], [tuple(out)])


def _rule_reduction(eqn, specs):
  (s,) = specs
  axes = set(eqn.params["axes"])
  done = tuple(a for i, e in enumerate(s) if i in axes for a in e)
  out = tuple(e for i, e in enumerate(s) if i not in axes)
  reduce = [(kinds.collective_of[eqn.primitive], done)] if done else None
  return EqnPlan([s], [out], reduce)


def _rule_dot_general(eqn, specs):
  ls, rs = specs
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  lhs, rhs = list(ls), list(rs)
  # Contracting and batch dims: lhs's axes win, rhs's matching dims follow.
  for li, ri in list(zip(lc, rc)) + list(zip(lb, rb)):
    rhs[ri] = lhs[li]
  used = spec_axes(lhs)
  lfree = [i for i in range(len(ls)) if i not in lc and i not in lb]
  rfree = [i for i in range(len(rs)) if i not in rc and i not in rb]
  for i in rfree:
    if set(rhs[i]) & used:
      rhs[i] = ()
    used |= set(rhs[i])
  out = [lhs[i] for i in lb] + [lhs[i] for i in lfree] + [rhs[i] for i in rfree]
  done = tuple(a for i in lc for a in lhs[i])
  return EqnPlan([tuple(lhs), tuple(rhs)], [tuple(out)], [("psum", done)] if done else None)


def _whole_dims(eqn):
  """The dims an op works along (they must be whole on each device); None: not such an op."""
  dims = kinds.whole_dims.get(eqn.primitive)
  return None if dims is None else dims(eqn.params)


def _rule_along_dims(eqn, specs):
  # Ops along some dims (scans, sorts, concatenation, other reductions): those dims are made
  # whole, the others keep the first full-rank operand's axes and the op runs on blocks.
  dims = _whole_dims(eqn)
  nd = _ndim(eqn.invars[0])
  s = tuple(() if d in dims else e for d, e in enumerate(specs[0]))
  if any(_ndim(v) != nd for v in eqn.invars):
    return _rule_replicate(eqn, specs)
  reduces = "axes" in eqn.params
  out = tuple(e for d, e in enumerate(s) if d not in dims) if reduces else s
  return EqnPlan([s] * len(eqn.invars), [out] * len(eqn.outvars))


def _rule_constraint(eqn, specs):
  (s,) = specs
  target = spec_of_sharding(eqn.params["sharding"], len(s))
  unconstrained = eqn.params["unconstrained_dims"]
  target = tuple(s[i] if i in unconstrained else t for i, t in enumerate(target))
  return EqnPlan([target], [target])


_CALL_JAXPR = kinds.call_jaxpr  # call primitive -> the param holding its jaxpr


def _rule_call(eqn, specs, mesh_shape):
  closed = eqn.params[_CALL_JAXPR[eqn.primitive]]
  if eqn.primitive is kinds.roles.custom_vjp_call:
    specs = specs[eqn.params.get("num_consts", 0):] if len(specs) > len(closed.jaxpr.invars) \
        else specs
  if eqn.primitive is kinds.roles.jit:  # a jit's given in_shardings lay out its operands
    specs = [_given_spec(g, v, mesh_shape) or sp for g, v, sp in
             zip(eqn.params.get("in_shardings", ()), eqn.invars, specs)] or specs
  env, plans = propagate(closed.jaxpr, specs, mesh_shape)
  outs = [env[v] if isinstance(v, core.Var) else replicated(_ndim(v))
          for v in closed.jaxpr.outvars]
  return EqnPlan(list(specs), outs, inner=(closed, env, plans))


def _given_spec(sharding, v, mesh_shape):
  """The spec of a jit eqn's given in/out sharding over the program's mesh, else None."""
  mesh = getattr(sharding, "mesh", None)
  if mesh is None or dict(mesh.shape) != mesh_shape:
    return None
  return spec_of_sharding(sharding, _ndim(v))


def _rule_replicate(eqn, specs):
  return EqnPlan([replicated(_ndim(v)) for v in eqn.invars],
                 [replicated(_ndim(v)) for v in eqn.outvars], local=False)


def _rule_inspect(eqn, specs):
  return EqnPlan(list(specs), [])  # no results; partition reports the operand's spec


def _rule_per_key(eqn, specs):
  # random_bits / random_split: `shape` is per key; the key dims keep their axes.
  (s,) = specs
  return EqnPlan([s], [s + ((),) * len(eqn.params["shape"])])


def _rule_unwrap(eqn, specs):
  (s,) = specs
  return EqnPlan([s], [s + ((),)])


def _rule_wrap(eqn, specs):
  (s,) = specs  # the trailing key-data dim stays whole
  return EqnPlan([s[:-1] + ((),)], [s[:-1]])


def _rule_threefry(eqn, specs):
  shape = eqn.outvars[0].aval.shape
  target = next((sp for v, sp in zip(eqn.invars, specs)
                 if v.aval.shape == shape and spec_axes(sp)), replicated(len(shape)))
  ins = [target if v.aval.shape == shape else replicated(_ndim(v)) for v in eqn.invars]
  return EqnPlan(ins, [target] * len(eqn.outvars))


# The rules a primitive names when it registers (`primitive_kinds.register(...,
# propagation_rule=...)`): a rule per way of moving axes, shared by the primitives that move
# them alike.
RULES = {
    "inspect": _rule_inspect, "per_key": _rule_per_key, "unwrap": _rule_unwrap,
    "wrap": _rule_wrap, "threefry": _rule_threefry, "transpose": _rule_transpose,
    "broadcast_in_dim": _rule_broadcast_in_dim, "squeeze": _rule_squeeze,
    "expand_dims": _rule_expand_dims, "reshape": _rule_reshape,
    "dot_general": _rule_dot_general, "constraint": _rule_constraint,
}


def _rule_for(eqn):
  prim = eqn.primitive
  named = kinds.propagation.get(prim)
  if named is not None:
    return RULES[named]
  if prim in kinds.collective_of:
    return _rule_reduction
  if _whole_dims(eqn) is not None:
    return _rule_along_dims
  if kinds.kind_of.get(prim) == kinds.ELEMENTWISE and not prim.multiple_results:
    shape = eqn.outvars[0].aval.shape
    if all(v.aval.shape == () or len(v.aval.shape) == len(shape) and
           all(n in (m, 1) for n, m in zip(v.aval.shape, shape)) for v in eqn.invars):
      return _rule_elementwise
  return _rule_replicate


def _typed_spec(v):
  sharding = getattr(v.aval, "sharding", None)
  return None if sharding is None else spec_of_sharding(sharding, _ndim(v))


def _splittable(spec, shape, mesh_shape) -> tuple:
  """`spec` with the axes of dims they do not evenly divide dropped (those stay whole), and
  axes of another mesh (a `reshard` under `use_abstract_mesh` to another shape of the same
  devices: its blocks are computed whole here and placed by the value's type at the end)."""
  out = []
  for entry, n in zip(spec, shape):
    if any(a not in mesh_shape for a in entry):
      out.append(())
      continue
    k = int(np.prod([mesh_shape[a] for a in entry], dtype=int))
    out.append(entry if n % k == 0 else ())
  return tuple(out)


def propagate(jaxpr, in_specs, mesh_shape, out_specs=None, loose=None):
  """(specs of every var, plans of every eqn) of `jaxpr` (a core.Jaxpr) whose invars have
  `in_specs`; `mesh_shape` maps axis names to sizes; `out_specs` (None entries: free) are the
  specs its results are asked for (jit's out_shardings), propagated backward."""
  env = {}
  for v, s in zip(jaxpr.invars, in_specs):
    env[v] = s
  for v in jaxpr.constvars:
    env[v] = replicated(_ndim(v))

  def read(a):
    return env[a] if isinstance(a, core.Var) else replicated(_ndim(a))

  plans = []
  for eqn in jaxpr.eqns:
    specs = [read(a) for a in eqn.invars]
    if eqn.primitive in _CALL_JAXPR and \
        len(eqn.invars) == len(eqn.params[_CALL_JAXPR[eqn.primitive]].jaxpr.invars):
      plan = _rule_call(eqn, specs, mesh_shape)
    else:
      plan = _rule_for(eqn)(eqn, specs)
    if any(_splittable(s, v.aval.shape, mesh_shape) != s
           for v, s in zip(eqn.invars, plan.in_specs)):
      plan = _rule_replicate(eqn, specs)  # a dim its axes do not evenly divide: run whole
    plans.append(plan)
    given = eqn.params.get("out_shardings", ()) if eqn.primitive is kinds.roles.jit else ()
    for i, (v, s) in enumerate(zip(eqn.outvars, plan.out_specs)):
      # A value whose type names a sharding takes it (rule 2), as does a result a jit's
      # out_shardings place; partition reshards to it.
      typed = _typed_spec(v)
      if typed is None and i < len(given):
        typed = _given_spec(given[i], v, mesh_shape)
      env[v] = _splittable(typed, v.aval.shape, mesh_shape) if typed is not None else s
  if out_specs is not None and any(t is not None for t in out_specs):
    back_propagate(jaxpr, env, plans, list(out_specs), mesh_shape, loose)
  _split_broadcasts(jaxpr, env, plans)
  return env, plans


# --- backward propagation -----------------------------------------------------------------------

def _back_elementwise(eqn, t):
  shape = eqn.outvars[0].aval.shape
  ins = []
  for v in eqn.invars:
    vs = v.aval.shape
    ins.append(replicated(len(vs)) if len(vs) != len(shape)
               else tuple(e if n == m else () for e, n, m in zip(t, vs, shape)))
  return ins


def _back_transpose(eqn, t):
  perm = eqn.params["permutation"]
  ins = [()] * len(perm)
  for d, p in enumerate(perm):
    ins[p] = t[d]
  return [tuple(ins)]


def _back_broadcast_in_dim(eqn, t):
  in_shape, out_shape = eqn.invars[0].aval.shape, eqn.params["shape"]
  ins = [t[d] if in_shape[i] == out_shape[d] else ()
         for i, d in enumerate(eqn.params["broadcast_dimensions"])]
  return [tuple(ins)] + [replicated(_ndim(v)) for v in eqn.invars[1:]]


def _back_reshape(eqn, t):
  in_shape, out_shape = eqn.invars[0].aval.shape, tuple(eqn.params["new_sizes"])
  same = 0
  while same < min(len(in_shape), len(out_shape)) and in_shape[same] == out_shape[same]:
    same += 1
  if any(t[same:]):
    return None  # a split dim the reshape does not keep whole
  return [tuple(t[:same]) + ((),) * (len(in_shape) - same)]


def _back_squeeze(eqn, t):
  nd = _ndim(eqn.invars[0])
  dims = set(d % nd for d in eqn.params["dimensions"])
  it = iter(t)
  return [tuple(() if d in dims else next(it) for d in range(nd))]


def _back_expand_dims(eqn, t):
  dims = set(eqn.params["dimensions"])
  if any(t[d] for d in dims):
    return None
  return [tuple(e for d, e in enumerate(t) if d not in dims)]


def _back_reduction(eqn, t):
  # The reduced dims stay whole on each device: the reduction is local, no collective.
  nd = _ndim(eqn.invars[0])
  axes = set(eqn.params["axes"])
  it = iter(t)
  return [tuple(() if d in axes else next(it) for d in range(nd))]


def _back_dot_general(eqn, t):
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  nl, nr = _ndim(eqn.invars[0]), _ndim(eqn.invars[1])
  lfree = [i for i in range(nl) if i not in lc and i not in lb]
  rfree = [i for i in range(nr) if i not in rc and i not in rb]
  lhs, rhs = [()] * nl, [()] * nr
  it = iter(t)
  for li, ri in zip(lb, rb):
    lhs[li] = rhs[ri] = next(it)
  for i in lfree:
    lhs[i] = next(it)
  for i in rfree:
    rhs[i] = next(it)
  return [tuple(lhs), tuple(rhs)]


# Backward rules, by the forward rule's name (see RULES).
_BACK_RULES = {
    "transpose": _back_transpose, "broadcast_in_dim": _back_broadcast_in_dim,
    "reshape": _back_reshape, "squeeze": _back_squeeze, "expand_dims": _back_expand_dims,
    "dot_general": _back_dot_general,
}


def _back_rule(eqn):
  rule = _BACK_RULES.get(kinds.propagation.get(eqn.primitive))
  if rule is not None:
    return rule
  if eqn.primitive in kinds.collective_of:
    return _back_reduction
  return _back_elementwise if _rule_for(eqn) is _rule_elementwise else None


def _refines(t, s) -> bool:
  """Whether spec `t` splits each dim over the axes `s` does and maybe more (going from `s` to
  `t` is a local slice, no communication), and is not `s` itself."""
  return t != s and all(a[:len(b)] == b for a, b in zip(t, s))


def propagate_free(jaxpr, in_specs, mesh_shape, out_specs, free):
  """`propagate` where the inputs marked `free` (uncommitted, no in_sharding) may take the
  spec the backward pass asks of them, as XLA's propagation picks a free parameter's sharding
  from its uses: (the input specs chosen, env, plans). The other uses of such an input then
  follow it forward (a result computed from it and left unspecified comes out split too)."""
  loose = {}
  env, plans = propagate(jaxpr, in_specs, mesh_shape, out_specs, loose=loose)
  new = list(in_specs)
  for n, v in enumerate(jaxpr.invars):
    t = loose.get(v)
    if free[n] and t is not None and t != new[n] and \
        _splittable(t, v.aval.shape, mesh_shape) == t:
      new[n] = t
  if new == list(in_specs):
    return tuple(in_specs), env, plans
  env, plans = propagate(jaxpr, new, mesh_shape, out_specs)
  return tuple(new), env, plans


def back_propagate(jaxpr, env, plans, out_targets, mesh_shape, loose=None):
  """Propagates the specs `out_targets` asks of `jaxpr`'s outputs (None: none) backward from
  each output into its producers, updating `env` and `plans` in place. A value is computed
  with a spec `t` instead of its forward one when `t` refines it (`_refines`: only local
  slicing), every use of the value takes `t` (wants it; an `inspect_array_sharding` or an
  output with no spec asked takes any; another consumer takes it when its forward rule,
  replanned on `t`, gives the same outputs: a full reduction psums instead), its producer has
  a backward rule (`_BACK_RULES`, elementwise ops, calls) and `t` evenly divides every
  operand. Returns {invar: (spec, commit)} for the inputs whose uses would take a refining
  spec: a call eqn around `jaxpr` hands that spec to its operand and calls `commit()`."""
  uses, producer = {}, {}
  for k, eqn in enumerate(jaxpr.eqns):
    for i, v in enumerate(eqn.invars):
      if isinstance(v, core.Var):
        uses.setdefault(v, []).append((k, i))
    for v in eqn.outvars:
      producer[v] = k
  for j, v in enumerate(jaxpr.outvars):
    if isinstance(v, core.Var):
      uses.setdefault(v, []).append((None, j))

  def takes(v, t):
    """None when some use of `v` does not take spec `t`, else {eqn index: its new plan} for
    the consumers that must be replanned."""
    replans = {}
    for k, i in uses.get(v, ()):
      if k is None:
        if out_targets[i] is not None and out_targets[i] != t:
          return None
        continue
      eqn, plan = jaxpr.eqns[k], plans[k]
      if eqn.primitive is kinds.roles.inspect_sharding or plan.in_specs[i] == t:
        continue
      if plan.inner is not None or not plan.local or not _replannable(eqn.primitive):
        return None
      specs = [t if u is v else env[u] if isinstance(u, core.Var) else replicated(_ndim(u))
               for u in eqn.invars]
      new = _rule_for(eqn)(eqn, specs)
      if new.out_specs != plan.out_specs or any(
          _splittable(sp, u.aval.shape, mesh_shape) != sp for u, sp in zip(eqn.invars,
                                                                          new.in_specs)):
        return None
      replans[k] = new
    return replans

  def commit(v, t, replans):
    env[v] = t
    for k, new in replans.items():
      plans[k] = new
    for k, i in uses.get(v, ()):  # an inspection reads the value where it now is
      if k is not None and jaxpr.eqns[k].primitive is kinds.roles.inspect_sharding:
        plans[k].in_specs[i] = t

  todo = [(v, t) for v, t in zip(jaxpr.outvars, out_targets)
          if isinstance(v, core.Var) and t is not None]
  invars = set(jaxpr.invars)
  wants = {}
  while todo:
    v, t = todo.pop()
    if not _refines(t, env[v]):
      continue
    if loose is not None and v not in loose and v in invars:  # asked of an input (free ones)
      loose[v] = t
    replans = takes(v, t)
    if replans is None:
      continue
    k = producer.get(v)
    if k is None:
      if v in jaxpr.invars:
        wants[v] = (t, replans)
      continue
    eqn, plan = jaxpr.eqns[k], plans[k]
    if len(eqn.outvars) != 1 or any(r is not None for r in plan.reduce):
      continue
    if plan.inner is not None:  # a call: back into its body, then ask its operands
      closed, inner_env, inner_plans = plan.inner
      inner_wants = back_propagate(closed.jaxpr, inner_env, inner_plans, [t], mesh_shape)
      (inner_out,) = closed.jaxpr.outvars
      if not isinstance(inner_out, core.Var) or inner_env[inner_out] != t:
        continue
      ins = list(plan.in_specs)
      for n, u in enumerate(closed.jaxpr.invars):
        if u in inner_wants:
          ins[n], apply = inner_wants[u]
          apply()
    else:
      rule = _back_rule(eqn) if plan.local else None
      ins = None if rule is None else rule(eqn, t)
      if ins is None or any(_splittable(sp, u.aval.shape, mesh_shape) != sp
                            for u, sp in zip(eqn.invars, ins)):
        continue
    plan.in_specs, plan.out_specs = list(ins), [t]
    commit(v, t, replans)
    todo += [(u, sp) for u, sp in zip(eqn.invars, ins)
             if isinstance(u, core.Var) and env[u] != sp]
  # An input's uses would take `t`: a call eqn around `jaxpr` may provide it (then commits).
  return {v: (t, lambda v=v, t=t, r=replans: commit(v, t, r)) for v, (t, replans)
          in wants.items()}


def _replannable(prim) -> bool:
  """Consumers that may be replanned on an operand's new spec (their forward rule handles
  any): reductions completed by a collective, and products."""
  return prim in kinds.collective_of or prim is kinds.roles.dot_general


def _split_broadcasts(jaxpr, env, plans):
  """A replicated `broadcast_in_dim` result that all its consumers want split the same way is
  made split (each device broadcasts only its block; its operand is brought to the matching
  split): forward propagation alone would build the whole value and slice it (zeros in
  gradients, biases). Walked backwards, so chains of broadcasts split end to end."""
  uses = {}
  for k, (eqn, plan) in enumerate(zip(jaxpr.eqns, plans)):
    for i, v in enumerate(eqn.invars):
      if isinstance(v, core.Var):
        uses.setdefault(v, []).append((k, i))
  for v in jaxpr.outvars:
    if isinstance(v, core.Var):
      uses.setdefault(v, []).append((None, env[v]))

  def wanted(k, i):
    return i if k is None else plans[k].in_specs[i]

  for eqn, plan in zip(reversed(jaxpr.eqns), reversed(plans)):
    if eqn.primitive is not kinds.roles.broadcast_in_dim or not plan.local or \
        spec_axes(plan.out_specs[0]):
      continue
    v = eqn.outvars[0]
    specs = [wanted(k, i) for k, i in uses.get(v, [])]
    if not specs or any(w != specs[0] for w in specs) or not spec_axes(specs[0]):
      continue
    in_shape = eqn.invars[0].aval.shape
    operand = [()] * len(in_shape)
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
      if specs[0][d]:
        if in_shape[i] == 1:
          continue
        operand[i] = specs[0][d]
    plan.in_specs = [tuple(operand)] + list(plan.in_specs[1:])
    plan.out_specs = [specs[0]]
    env[v] = specs[0]


# --- with_sharding_constraint ---------------------------------------------------------------

class _Unconstrained(frozenset):
  """A frozenset that prints as JAX prints the `unconstrained_dims` param."""
  def __str__(self):
    return "frozenset({" + ", ".join(str(d) for d in sorted(self)) + "})"


class _ContextMesh:
  """The mesh in context when the constraint was made, printed as JAX prints it."""
  __slots__ = ("mesh",)

  def __init__(self, mesh):
    self.mesh = mesh

  def __str__(self):
    return "Mesh()" if self.mesh.empty else str(self.mesh)

  def __eq__(self, other):
    return type(other) is _ContextMesh and other.mesh == self.mesh

  def __hash__(self):
    return hash(str(self))  # (the empty Mesh does not hash)


sharding_constraint_p = core.Primitive("sharding_constraint")


def _check_sharding(sharding, shape, fun="with_sharding_constraint"):
  if hasattr(sharding, "shard_shape"):
    sharding.shard_shape(tuple(shape))  # JAX's IndivisibleError / rank ValueError


def _constraint_impl(x, *, sharding, layout, context_mesh, unconstrained_dims):
  return x  # on NumPy values: placement is `_apply`'s (eager) or the partitioner's (jit)


def _constraint_abstract(x, *, sharding, layout, context_mesh, unconstrained_dims):
  # Under jit JAX accepts a constraint that does not evenly divide a dim (XLA pads; here the
  # partitioner leaves such a dim whole); only a spec longer than the rank is an error.
  factors = getattr(sharding, "_factors", None)
  if factors is not None:
    factors(len(x.shape))
  return x


def _placed(sharding):
  """The sharding an eager constraint puts a value on: UNCONSTRAINED dims left unsplit."""
  spec = getattr(sharding, "spec", None)
  if spec is None or not any(e is UNCONSTRAINED for e in spec):
    return sharding
  entries = [None if e is UNCONSTRAINED else e for e in spec]
  while entries and entries[-1] is None:
    entries.pop()
  return sharding.with_spec(PartitionSpec(*entries))


def _apply(x, **params):
  """`sharding_constraint` of `x`: a concrete Array is placed now; a tracer gets the eqn."""
  if core.current_trace() is core.eval_trace and not isinstance(x, core.Tracer):
    sharding = _on_concrete_mesh(params["sharding"], x)
    _check_sharding(sharding, np.shape(x))
    return core.device_put(x, _placed(sharding))  # api's, registered there
  return sharding_constraint_p.bind(x, **params)


def _on_concrete_mesh(sharding, x):
  """An eager constraint over an AbstractMesh is placed on a concrete mesh, as JAX's impl does:
  the mesh a NamedSharding'd `x` lives on, else the one in context (`jax.set_mesh`). flax's nnx
  builds such shardings from `get_abstract_mesh()` and constrains eager values with them."""
  from jaxlite._src.sharding.mesh import AbstractMesh, get_mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  mesh = getattr(sharding, "mesh", None)
  if not isinstance(sharding, NamedSharding) or not isinstance(mesh, AbstractMesh):
    return sharding
  have = getattr(x, "sharding", None)
  ctx = get_mesh()
  if isinstance(have, NamedSharding):
    target = have.mesh
  elif not ctx.empty:
    # JAX takes the context mesh only for inputs with no sharding (NumPy), since its eager ops
    # under `set_mesh` return NamedSharding'd arrays; jaxlite's return single-device ones.
    target = ctx
  else:
    raise TypeError("with_sharding_constraint: the sharding on the input must be a "
                    "`NamedSharding` since the target sharding has an `AbstractMesh` in it. "
                    f"Got sharding type {type(have)} for shape {np.shape(x)}")
  if target.shape_tuple != mesh.shape_tuple:
    raise ValueError(f"with_sharding_constraint: mesh shape of the input {target.shape_tuple} "
                     f"does not match the mesh shape of the target sharding "
                     f"{mesh.shape_tuple} for shape {np.shape(x)}")
  return NamedSharding(target, sharding.spec, memory_kind=sharding._memory_kind)


def _constraint_transpose(ct, x, **params):
  return [_apply(ct, **params)]


def _constraint_batcher(vals, dims, *, sharding, unconstrained_dims, **params):
  # The batch dim is left unconstrained, as JAX does.
  (x,), (d,) = vals, dims
  spec = list(getattr(sharding, "spec", ()))
  spec += [None] * (len(getattr(x, "shape", ())) - 1 - len(spec))
  spec.insert(d, UNCONSTRAINED)
  batched = sharding.with_spec(PartitionSpec(*spec)) if hasattr(sharding, "with_spec") \
      else sharding
  dims_after = _Unconstrained({d} | {u + (u >= d) for u in unconstrained_dims})
  return _apply(x, sharding=batched, unconstrained_dims=dims_after, **params), d


sharding_constraint_p.def_impl(_constraint_impl)
sharding_constraint_p.def_abstract_eval(_constraint_abstract)
hlo.register(sharding_constraint_p, xla_spmd.constraint_rule)  # sdy.sharding_constraint
xla_spmd.SPMD_PRIMITIVES.add(sharding_constraint_p)
ad.deflinear(sharding_constraint_p, _constraint_transpose)
batching.primitive_batchers[sharding_constraint_p] = _constraint_batcher


def _as_sharding(s, fun):
  from jaxlite._src.sharding.mesh import get_mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  if isinstance(s, PartitionSpec):
    from jaxlite._src.sharding.named_sharding import check_unique_axes
    check_unique_axes(s, "shardings")  # JAX's DuplicateSpecError names the argument
    mesh = get_mesh()
    if mesh.empty:
      raise RuntimeError(f"{fun} requires a non-empty mesh in context if you are passing "
                         "`PartitionSpec`s. You can define a context mesh via "
                         "`jax.set_mesh(mesh)`.")
    return NamedSharding(mesh, s)
  if isinstance(s, Format) and s.sharding is not None:
    # JAX accepts any Layout here; jaxlite keeps every array row-major (layout.py), so the
    # Format constrains its sharding and its layout changes no value
    return _as_sharding(s.sharding, fun)
  if not isinstance(s, devices.Sharding):
    raise ValueError(f"{fun}: shardings must be Shardings or PartitionSpecs, got {s!r} of type "
                     f"{type(s).__name__}")
  return s


def with_sharding_constraint(x, shardings):
  """`x` (a pytree) laid out by `shardings` (a Sharding, a PartitionSpec under a mesh, or a
  pytree prefix of them): eagerly a device_put; under jit, a constraint the propagation pass
  honours."""
  from jaxlite._src.base.operands import asarg
  from jaxlite._src.sharding.mesh import get_mesh
  leaves, tree = tree_util.tree_flatten(x)
  if isinstance(shardings, devices.Sharding) or type(shardings).__name__ == "PartitionSpec":
    flat_s = [shardings] * len(leaves)
  else:
    s_leaves, s_tree = tree_util.tree_flatten(shardings)
    subtrees = s_tree.flatten_up_to(x)
    flat_s = [s for s, sub in zip(s_leaves, subtrees)
              for _ in tree_util.tree_leaves(sub)]
  mesh = _ContextMesh(get_mesh())
  outs = []
  for leaf, raw in zip(leaves, flat_s):
    s = _as_sharding(raw, "with_sharding_constraint")
    leaf = asarg(leaf)
    spec = tuple(getattr(s, "spec", ()))
    if _check_explicit(s, leaf, isinstance(raw, PartitionSpec)):
      outs.append(leaf)
      continue
    unconstrained = _Unconstrained(i for i, e in enumerate(spec) if e is UNCONSTRAINED)
    outs.append(_apply(leaf, sharding=s, layout=None, context_mesh=mesh,
                       unconstrained_dims=unconstrained))
  return tree_util.tree_unflatten(tree, outs)


def _check_explicit(sharding, x, from_pspec) -> bool:
  """On Explicit mesh axes a constraint given as a PartitionSpec only asserts the sharding
  already in the type (JAX's AssertionError; True: nothing to do); a NamedSharding naming
  Explicit axes is JAX's ValueError."""
  from jaxlite._src.sharding.mesh import AxisType
  mesh = getattr(sharding, "mesh", None)
  if mesh is None:
    return False
  types = mesh._name_to_type
  if from_pspec and types and all(t == AxisType.Explicit for t in types.values()):
    nd = len(np.shape(x))
    have = core.get_aval(x).sharding
    have = PartitionSpec(*(have.spec if have is not None else ()))._normalized_spec_for_aval(nd)
    want = sharding.spec._normalized_spec_for_aval(nd)
    if have != want:
      raise AssertionError(
          "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
          f"`Explicit`. The array sharding: {have!r} did not match the sharding provided: "
          f"{want!r}. Please use `jax.sharding.reshard` to shard your input to the sharding "
          "you want.")
    return True
  named = [a for e in sharding.spec for a in (e if isinstance(e, tuple) else (e,))
           if a is not None and a is not UNCONSTRAINED]
  if any(types[a] == AxisType.Explicit for a in named):
    raise ValueError(
        "The spec of NamedSharding passed to with_sharding_constraint can only refer to Auto "
        f"axes of the mesh. Got spec={sharding.spec!r} and mesh={mesh.abstract_mesh!r}. You "
        "probably meant to use `reshard` API?")
  return False


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

kinds.register(sharding_constraint_p, kinds.SHARDING, role="sharding_constraint",
            propagation_rule="constraint")
