"""Varying manual axes (check_vma): types a shard_map body's values by the mesh axes they may
vary over, inserting `pvary` where JAX's binds do and turning `psum` into `psum_invariant`.

A pass over a traced body rather than a trace-time rule: the result is the jaxpr JAX 0.10.2
builds, and bodies derived by jvp, linearize, transpose and vmap are typed the same way.
"""
from __future__ import annotations

from jaxlite._src.base import core
from jaxlite._src.base.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from jaxlite._src.lax import parallel, parallel_comm


def spec_axes(spec, manual) -> frozenset:
  """The manual mesh axes a PartitionSpec splits some dimension over."""
  out = set()
  for entry in spec:
    if entry is None:
      continue
    out.update(n for n in (entry if isinstance(entry, tuple) else (entry,)) if n in manual)
  return frozenset(out)


def _names(v) -> tuple:
  return tuple(v) if isinstance(v, (tuple, list)) else (v,)


# primitive -> (how it types its result, the param naming its axes)
_RULES = {
    parallel.psum_p: ("psum", "axes"),
    parallel.pmax_p: ("remove", "axes"),
    parallel.pmin_p: ("remove", "axes"),
    parallel_comm.psum_invariant_p: ("remove", "axes"),
    parallel_comm.pvary_p: ("add", "axes"),
    parallel.axis_index_p: ("index", "axis_name"),
    parallel.all_gather_p: ("same", "axis_name"),
    parallel_comm.ppermute_p: ("same", "axis_name"),
    parallel_comm.all_to_all_p: ("same", "axis_name"),
    parallel_comm.reduce_scatter_p: ("same", "axis_name"),
    parallel_comm.pbroadcast_p: ("same", "axis_name"),
}


def _vma(atom) -> frozenset:
  return frozenset() if type(atom) is Literal else atom.aval.vma


def annotate(closed: ClosedJaxpr, in_vmas, mesh, manual, out_vmas=None) -> ClosedJaxpr:
  """`closed` with every variable typed by its varying manual axes (inputs by `in_vmas`);
  outputs are cast up to `out_vmas` when given (loop carries, branches of a cond)."""
  order = mesh.axis_names
  jaxpr = closed.jaxpr
  env = {}

  def fresh(v, vma):
    nv = Var(v.aval.update(vma=frozenset(vma)))
    env[v] = nv
    return nv

  def read(a):
    return a if type(a) is Literal else env.get(a, a)

  eqns = []

  def pvary(atom, missing):
    axes = tuple(a for a in order if a in missing)
    aval = atom.aval.update(vma=_vma(atom) | frozenset(axes))
    out = Var(aval)
    eqns.append(JaxprEqn([atom], [out], parallel_comm.pvary_p, {"axes": axes}))
    return out

  invars = [fresh(v, vma) for v, vma in zip(jaxpr.invars, in_vmas)]
  for eqn in jaxpr.eqns:
    ins = [read(a) for a in eqn.invars]
    vmas = [_vma(a) for a in ins]
    kind, key = _RULES.get(eqn.primitive, (None, None))
    prim, params = eqn.primitive, eqn.params
    if params.get("axis_index_groups") is not None and kind != "index":
      # (from a check_vma=False body: psum refuses groups under check_vma) each group's
      # result differs: it varies as its operand does, and psum_invariant has no groups
      kind = "same"
    nested = _nested(eqn, ins, vmas, mesh, manual, pvary)
    if nested is not None:
      ins, params, outs = nested
    elif kind == "index":
      outs = [frozenset(_names(params[key])) & manual]
    elif kind is not None:
      named = [a for a in _names(params[key]) if not isinstance(a, int)]
      axes = frozenset(named) & manual
      if kind != "add" and not axes <= vmas[0]:
        ins = [pvary(ins[0], axes - vmas[0])] + ins[1:]
        vmas = [_vma(ins[0])] + vmas[1:]
      if kind == "add":
        out = vmas[0] | axes
      elif kind == "same":
        out = vmas[0]
      else:
        out = vmas[0] - axes
      if kind == "psum" and len(named) == len(_names(params[key])):
        prim, params = parallel_comm.psum_invariant_p, {"axes": tuple(named)}
      outs = [out]
    else:
      union = frozenset().union(*vmas) if vmas else frozenset()
      ins = [pvary(a, union - v) if union - v else a for a, v in zip(ins, vmas)]
      outs = [union] * len(eqn.outvars)
    outvars = [fresh(v, vma) for v, vma in zip(eqn.outvars, outs)]
    eqns.append(eqn.replace(invars=ins, outvars=outvars, primitive=prim, params=params))
  outvars = [read(a) for a in jaxpr.outvars]
  if out_vmas is not None:
    outvars = [pvary(a, want - _vma(a)) if want - _vma(a) else a
               for a, want in zip(outvars, out_vmas)]
  new = Jaxpr(jaxpr.constvars, invars, outvars, eqns, jaxpr.effects, jaxpr.debug_info)
  return ClosedJaxpr(new, closed.consts)


def _out_vmas(closed) -> list:
  return [_vma(v) for v in closed.jaxpr.outvars]


def _nested(eqn, ins, vmas, mesh, manual, pvary):
  """Types the jaxprs an eqn calls (jit, scan, cond) with its operands' types: returns
  (operands, params, output types), or None for other eqns."""
  params = eqn.params
  branches = params.get("branches")
  if isinstance(branches, tuple) and branches and all(isinstance(b, ClosedJaxpr)
                                                      for b in branches):
    # cond: outputs vary where any branch's (or the index) does; branches agree by casting.
    inner = vmas[1:]
    typed = [annotate(b, inner, mesh, manual) for b in branches]
    outs = [frozenset().union(vmas[0], *col) for col in zip(*map(_out_vmas, typed))]
    typed = tuple(annotate(b, inner, mesh, manual, outs) for b in branches)
    return ins, {**params, "branches": typed}, outs
  sub = params.get("jaxpr")
  if not isinstance(sub, ClosedJaxpr) or len(sub.jaxpr.invars) != len(ins):
    return None
  if "num_carry" not in params:  # jit-like: operands map onto the callee's inputs
    typed = annotate(sub, vmas, mesh, manual)
    return ins, {**params, "jaxpr": typed}, _out_vmas(typed)
  # scan: a carry's type is the fixpoint of its initial value's and the body's result's.
  nc, ncar = params["num_consts"], params["num_carry"]
  carry = list(vmas[nc:nc + ncar])
  for _ in range(len(mesh.axis_names) + 1):
    typed = annotate(sub, vmas[:nc] + carry + vmas[nc + ncar:], mesh, manual)
    new = [c | o for c, o in zip(carry, _out_vmas(typed)[:ncar])]
    if new == carry:
      break
    carry = new
  body_outs = _out_vmas(typed)
  typed = annotate(sub, vmas[:nc] + carry + vmas[nc + ncar:], mesh, manual,
                   carry + body_outs[ncar:])
  init = [pvary(a, c - v) if c - v else a
          for a, v, c in zip(ins[nc:nc + ncar], vmas[nc:nc + ncar], carry)]
  ins = ins[:nc] + init + ins[nc + ncar:]
  return ins, {**params, "jaxpr": typed}, carry + body_outs[ncar:]


# --- trace-time typing ----------------------------------------------------------------------------
# While the user's body is traced (check_vma=True), every bind casts its less-varying operands up
# with pvary and every traced result carries its varying axes, as JAX's binds do: so
# `jax.typeof` inside the body prints `{V:x}`, and `grad` taken inside the body differentiates
# through the pvary (whose transpose is a psum), giving a replicated input's gradient summed over
# the devices it is shared by. `annotate` still types the finished jaxpr (it is idempotent on a
# body typed here) and the bodies autodiff and vmap derive later.

_SKIP = {parallel_comm.pvary_p}
_UNBOUND_ASSERTS = {parallel.psum_p, parallel.pmax_p, parallel.pmin_p, parallel_comm.ppermute_p}


def _higher_order(params) -> bool:
  for v in params.values():
    if isinstance(v, (ClosedJaxpr, Jaxpr)) or (callable(v) and not isinstance(v, type)):
      return True
    if isinstance(v, tuple) and v and isinstance(v[0], (ClosedJaxpr, Jaxpr)):
      return True
  return False


def _atom_vma(x) -> frozenset:
  return getattr(getattr(x, "aval", None), "vma", None) or frozenset()


class TraceTyping:
  def __init__(self, mesh, manual):
    self.order = mesh.axis_names
    self.manual = frozenset(manual)

  def _named(self, prim, params):
    key = _RULES[prim][1]
    return [a for a in _names(params[key]) if not isinstance(a, int)]

  def check_bound(self, prim, named):
    unbound = [a for a in named if a not in self.order and not parallel.axis_is_bound(a)]
    if unbound:
      # JAX 0.10.2 fails an internal assertion here (with no message) under check_vma: its
      # class, and the message its unbound-name NameErrors give.
      name = "psum" if prim is parallel.psum_p else prim.name
      raise AssertionError(f"Found an unbound axis name: {unbound[0]}. To fix this, please "
                           f"call {name} under `jax.shard_map`.")

  def cast(self, prim, args, params):
    if prim in _SKIP or not args:
      return args
    if prim in _RULES:
      named = self._named(prim, params)
      if prim in _UNBOUND_ASSERTS:
        self.check_bound(prim, named)
      if prim is parallel.psum_p:
        axes = frozenset(named) & self.manual
        for x in args:
          vma = _atom_vma(x)
          if axes & vma and axes - vma:
            raise ValueError(
                "jax.lax.psum can only accept axis_name which corresponds to one of varying, "
                "unreduced, reduced or invarying state of the input. Got input type: "
                f"{core.get_aval(x)}, axes: {tuple(named)} and input state: "
                "{'varying', 'invarying'}")
      return args
    if _higher_order(params):
      return args
    vmas = [_atom_vma(a) for a in args]
    union = frozenset().union(*vmas)
    if all(v == union for v in vmas):
      return args
    return tuple(a if v == union else
                 parallel_comm.pvary_p.bind(a, axes=tuple(n for n in self.order
                                                          if n in union - v))
                 for a, v in zip(args, vmas))

  def type_out(self, prim, avals, params, out_avals):
    vmas = [getattr(a, "vma", None) or frozenset() for a in avals]
    if prim in _RULES:
      kind = _RULES[prim][0]
      axes = frozenset(self._named(prim, params)) & self.manual
      if kind == "index":
        vma = axes
      elif kind in ("add", "same"):
        vma = vmas[0] | axes
      else:
        vma = vmas[0] - axes
    elif _higher_order(params):
      return out_avals
    else:
      vma = frozenset().union(*vmas) if vmas else frozenset()
    if not vma:
      return out_avals
    if isinstance(out_avals, (list, tuple)):
      return type(out_avals)(_with_vma(a, vma) for a in out_avals)
    return _with_vma(out_avals, vma)


def cast_like(out, x):
  """`out` cast up (pvary) to vary where `x` does: the `*_like` constructors' type (JAX)."""
  missing = _atom_vma(x) - _atom_vma(out)
  if not missing or core.vma_typing is None:
    return out
  return parallel_comm.pvary_p.bind(out, axes=tuple(n for n in core.vma_typing.order
                                                      if n in missing))


def _with_vma(aval, vma):
  return aval.update(vma=vma) if isinstance(aval, core.ShapedArray) else aval


def trace_typed(mesh, manual, check_vma=True):
  """A context manager: binds inside it are typed by TraceTyping, or with check_vma=False not
  typed (a check_vma=False body inside a typed one is not, as in JAX); restores the outer
  typing."""
  import contextlib

  @contextlib.contextmanager
  def ctx():
    saved = core.vma_typing
    core.vma_typing = TraceTyping(mesh, manual) if check_vma else None
    try:
      yield
    finally:
      core.vma_typing = saved
  return ctx()
