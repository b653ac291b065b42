"""`jax.interpreters.partial_eval`: known/unknown partial evaluation and jaxpr staging.

`trace_to_jaxpr_nounits(fun, pvals)` runs `fun` once: operations on known values run (on the
enclosing trace), operations touching an unknown input are staged into a jaxpr, as JAX does;
flax's `lazy_init` and `axes_scan` use it to compute what does not depend on their unknowns.
"""
from __future__ import annotations

from typing import NamedTuple

from jaxlite._src.base import core
from jaxlite._src.compiler import passes as _passes
from jaxlite._src.interpreters import partial_eval as _pe
from jaxlite._src.interpreters.partial_eval import DynamicJaxprTracer  # noqa: F401

Val = object


class PartialVal(NamedTuple):
  """(aval, None) for an unknown value of type `aval`, (None, const) for a known one."""
  pv: object
  const: object

  @classmethod
  def known(cls, const) -> "PartialVal":
    return cls(None, const)

  @classmethod
  def unknown(cls, aval) -> "PartialVal":
    return cls(aval, None)

  def is_known(self) -> bool:
    return self.pv is None

  def get_known(self):
    return self.const if self.pv is None else None

  def get_aval(self):
    return core.get_aval(self.const) if self.pv is None else self.pv


class JaxprTracer(core.Tracer):
  """An unknown value: a tracer of the staging trace, seen through the partial-eval trace."""
  __slots__ = ("staged",)

  def __init__(self, trace, staged):
    self._trace = trace
    self.staged = staged

  aval = property(lambda self: self.staged.aval)

  def __repr__(self):
    return f"JaxprTracer({self.aval})"


class _PartialEvalTrace(core.Trace):
  """Known operations bind on the parent; the rest go to `staging` (a DynamicJaxprTrace)."""
  __slots__ = ("staging",)

  def __init__(self, parent):
    super().__init__(parent)
    self.staging = _pe.DynamicJaxprTrace(parent)

  def process_primitive(self, primitive, args, params):
    if not any(type(a) is JaxprTracer and a._trace is self for a in args):
      with core.set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    staged_args = [a.staged if type(a) is JaxprTracer and a._trace is self else a
                   for a in args]
    with core.set_current_trace(self.staging):
      outs = primitive.bind(*staged_args, **params)
    if primitive.multiple_results:
      return [JaxprTracer(self, o) for o in outs]
    return JaxprTracer(self, outs)


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
  """(jaxpr of the unknown part, out PartialVals, consts of that jaxpr) of `fun` on `pvals`.

  `fun` is a `linear_util.WrappedFun` (or any callable) taking the flat values.
  """
  trace = _PartialEvalTrace(core.current_trace())
  in_tracers = []
  for pval in pvals:
    if pval.is_known():
      in_tracers.append(pval.const)
    else:
      in_tracers.append(JaxprTracer(trace, trace.staging.new_arg(pval.pv)))
  call = getattr(fun, "call_wrapped", fun)
  try:
    with core.set_current_trace(trace):
      outs = call(*in_tracers)
    instantiate = ([instantiate] * len(outs) if isinstance(instantiate, bool)
                   else list(instantiate))
    out_pvals, staged_outs = [], []
    for o, inst in zip(outs, instantiate):
      if type(o) is JaxprTracer and o._trace is trace:
        out_pvals.append(PartialVal.unknown(o.aval))
        staged_outs.append(o.staged)
      elif inst:
        out_pvals.append(PartialVal.unknown(core.get_aval(o)))
        staged_outs.append(o)
      else:
        out_pvals.append(PartialVal.known(o))
    closed = trace.staging.to_closed_jaxpr(staged_outs)
  finally:
    trace.staging.invalidate()
    trace.invalidate()
  return closed.jaxpr, out_pvals, closed.consts


def trace_to_jaxpr_dynamic(fun, in_avals, *, keep_inputs=None):
  """(jaxpr, out avals, consts) of `fun` traced on abstract values of `in_avals`."""
  call = getattr(fun, "call_wrapped", fun)
  closed = _pe.trace_to_jaxpr(lambda *xs: list(call(*xs)), list(in_avals))
  return closed.jaxpr, closed.out_avals, closed.consts


def dce_jaxpr(jaxpr: core.Jaxpr, used_outputs, instantiate=False):
  """(jaxpr computing only the used outputs, which inputs it still reads)."""
  used_outputs = list(used_outputs)
  if len(used_outputs) != len(jaxpr.outvars):  # ValueError, as JAX's (from its safe_map)
    raise ValueError(f"dce_jaxpr: used_outputs has {len(used_outputs)} entries for a jaxpr with "
                     f"{len(jaxpr.outvars)} outputs")
  outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  pruned = _passes.dce(jaxpr.replace(outvars=outvars))
  read = {v for eqn in pruned.eqns for v in eqn.invars if isinstance(v, core.Var)}
  read |= {v for v in pruned.outvars if isinstance(v, core.Var)}
  instantiate = ([instantiate] * len(jaxpr.invars) if isinstance(instantiate, bool)
                 else list(instantiate))
  used_inputs = [v in read or inst for v, inst in zip(jaxpr.invars, instantiate)]
  new = pruned.replace(invars=[v for v, u in zip(jaxpr.invars, used_inputs) if u])
  return new, used_inputs


def dce_jaxpr_consts(jaxpr: core.Jaxpr, used_outputs, instantiate=False):
  """Like dce_jaxpr, with the constvars pruned too: (jaxpr, used consts, used inputs)."""
  new, used_inputs = dce_jaxpr(jaxpr, used_outputs, instantiate)
  read = {v for eqn in new.eqns for v in eqn.invars if isinstance(v, core.Var)}
  read |= {v for v in new.outvars if isinstance(v, core.Var)}
  used_consts = [v in read for v in jaxpr.constvars]
  new = new.replace(constvars=[v for v, u in zip(jaxpr.constvars, used_consts) if u])
  return new, used_consts, used_inputs


# Rule tables JAX keeps for its partial evaluator; jaxlite's DCE and remat consult their own,
# so rules registered here are recorded for introspection.
custom_partial_eval_rules: dict = {}
partial_eval_jaxpr_custom_rules: dict = {}
dce_rules: dict = {}



def dce_jaxpr_call_rule(used_outputs, eqn):
  """DCE of a `call` eqn: (which inputs it still reads, the pruned eqn or None if it goes)."""
  effectful = _passes.is_effectful(eqn)
  if not any(used_outputs) and not effectful:
    return [False] * len(eqn.invars), None
  new_jaxpr, used_inputs = dce_jaxpr(eqn.params["call_jaxpr"], used_outputs)
  if not any(used_inputs) and not any(used_outputs) and not effectful:
    return used_inputs, None
  return used_inputs, _pruned_eqn(eqn, used_inputs, used_outputs, call_jaxpr=new_jaxpr)


def dce_jaxpr_closed_call_rule(used_outputs, eqn):
  """DCE of a `closed_call` eqn (its ClosedJaxpr keeps its consts)."""
  if not any(used_outputs) and not _passes.is_effectful(eqn):
    return [False] * len(eqn.invars), None
  closed = eqn.params["call_jaxpr"]
  new_jaxpr, used_inputs = dce_jaxpr(closed.jaxpr, used_outputs)
  return used_inputs, _pruned_eqn(eqn, used_inputs, used_outputs,
                                  call_jaxpr=core.ClosedJaxpr(new_jaxpr, closed.consts))


def _pruned_eqn(eqn, used_inputs, used_outputs, **params):
  return eqn.replace(invars=[v for v, u in zip(eqn.invars, used_inputs) if u],
                     outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
                     params=dict(eqn.params, **params))


def _register_call_dce_rules():
  from jaxlite._src.transforms.closed_call import call_p, closed_call_p
  dce_rules[call_p] = dce_jaxpr_call_rule
  dce_rules[closed_call_p] = dce_jaxpr_closed_call_rule


_register_call_dce_rules()
