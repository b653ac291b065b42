"""Linearization ("direct linearize"): JVP with the tangent work staged into a linear jaxpr.

`LinearizeTrace` pairs each primal (a parent-trace value) with a tangent that is a tracer of a
nested staging trace. JVP rules run under `_PartialEvalTrace`, which binds work on primals on
the parent and stages work on tangents, so the linear jaxpr holds only linear eqns.
"""
from __future__ import annotations

import weakref

from jaxlite._src.base import core, errors, source_info_util
from jaxlite._src.compiler import passes
from jaxlite._src.base.core import ClosedJaxpr, Var
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.interpreters.ad import Zero


class LinearizeTracer(ad.JVPTracer):
  """A primal value with a tangent staged into the linear jaxpr (JAX prints it GradTracer).

  Traces tell their own tracers apart by exact type and trace identity, so sharing JVPTracer's
  body is safe."""
  __slots__ = ()

  def __repr__(self):
    tangent = self.tangent.aval.str_short(short_dtypes=True)
    return f"GradTracer(primal={ad._short(self.primal)}, typeof(tangent)={tangent})"

  __str__ = __repr__


class _PartialEvalTrace(core.Trace):
  """Where JVP rules run while linearizing: an eqn reading a tangent is staged into the linear
  jaxpr (the primals it reads become residuals); any other eqn runs on the parent."""
  __slots__ = ("owner", "tangent_trace")

  def __init__(self, parent, tangent_trace, owner):
    super().__init__(parent)
    self.tangent_trace = tangent_trace
    self.owner = owner

  @property
  def zero_tangents_trace(self):
    """Where ad.instantiate_zeros_staged stages a rule's zero tangents: the linear jaxpr."""
    return self.tangent_trace

  def process_primitive(self, primitive, args, params):
    tt = self.tangent_trace
    linear_in = []
    for a in args:
      if type(a) is LinearizeTracer and a._trace is self.owner:
        raise errors.unexpected_tracer_error(a)
      linear_in.append(type(a) is pe.JaxprTracer and a._trace is tt)
    if any(linear_in):
      split = mixed_call_rules.get(primitive)
      if split is not None and not all(linear_in):
        return split(self.parent, tt, args, linear_in, params)
      with core.set_current_trace(tt):
        return tt.process_primitive(primitive, args, params)
    with core.set_current_trace(self.parent):
      return primitive.bind(*args, **params)


# primitive -> rule(parent trace, tangent trace, args, linear_in, params) -> outputs: for a call
# (jit) that a JVP rule binds with primals and tangents together (a jit JVP'd inside a
# custom_jvp rule), the outputs that read no tangent run on the parent and only the rest is
# staged; staged whole, its primal outputs would be tracers of the linear jaxpr (escaping as
# the value of a value_and_grad, and transposed as if linear). Filled by the call primitives.
mixed_call_rules: dict = {}


class LinearizeTrace(core.Trace):
  __slots__ = ("rule_trace", "tangent_trace")

  def __init__(self, parent, tangent_trace):
    super().__init__(parent)
    self.tangent_trace = tangent_trace
    self.rule_trace = _PartialEvalTrace(parent, tangent_trace, self)

  def to_primal_tangent_pair(self, x):
    if type(x) is LinearizeTracer and x._trace is self:
      return x.primal, x.tangent
    return x, Zero.from_primal_value(x)

  def process_primitive(self, primitive, args, params):
    primals, tangents = ad._split_tracers(self, LinearizeTracer, args)
    if tangents is None:
      with core.set_current_trace(self.parent):
        return primitive.bind(*primals, **params)
    rule = ad.linearize_rules.get(primitive) or ad.jvp_rules.get(primitive)
    if rule is None:
      raise NotImplementedError(f"Differentiation rule for '{primitive}' not implemented")
    if primitive.library:  # a library's rule gets tuples, as JAX passes them
      out, tangent_out = self._library_rule(rule, primitive, tuple(primals), tuple(tangents),
                                            params)
    else:
      with core.set_current_trace(self.rule_trace):
        out, tangent_out = rule(primals, tangents, **params)
    if primitive.multiple_results:
      return [self._wrap(o, t) for o, t in zip(out, tangent_out)]
    return self._wrap(out, tangent_out)

  def _library_rule(self, rule, primitive, primals, tangents, params):
    """A library primitive's JVP rule as JAX's fallback linearization runs it: the tangent work
    is traced on its own, then re-emitted into the linear jaxpr, so each tangent eqn is
    abstractly evaluated twice (the primitives tutorial's instrumented rules print both)."""
    inner = pe.DynamicJaxprTrace(self.parent, tracer_type=pe.JaxprTracer)
    live = [t for t in tangents if type(t) is not Zero]
    staged_in = iter([inner.new_arg(t.aval) for t in live])
    rule_tangents = tuple(t if type(t) is Zero else next(staged_in) for t in tangents)
    try:
      with core.set_current_trace(_PartialEvalTrace(self.parent, inner, self)):
        out, tangent_out = rule(primals, rule_tangents, **params)
      outs = list(tangent_out) if primitive.multiple_results else [tangent_out]
      nonzero = [type(t) is not Zero for t in outs]
      closed = inner.to_closed_jaxpr([t for t, nz in zip(outs, nonzero) if nz])
    finally:
      inner.invalidate()
    with core.set_current_trace(self.tangent_trace):
      replayed = iter(core.eval_jaxpr(closed.jaxpr, closed.consts, *live))
    outs = [next(replayed) if nz else t for t, nz in zip(outs, nonzero)]
    return out, (outs if primitive.multiple_results else outs[0])

  def _wrap(self, primal, tangent):
    if type(tangent) is Zero or tangent.aval.dtype == ad.dtypes.float0:
      # A float0 tangent (of an integer or boolean value) carries nothing: as a symbolic zero
      # it keeps primitives without differentiation rules applicable to the value (equinox's
      # unvmap_max on step counts), as JAX's linearize does.
      return primal
    if not (type(tangent) is pe.JaxprTracer and tangent._trace is self.tangent_trace):
      # A rule returned a tangent computed from primals alone: stage it as a constant.
      var = self.tangent_trace.to_atom(tangent)
      tangent = pe.JaxprTracer(self.tangent_trace, var.aval, var)
    return LinearizeTracer(self, primal, tangent)


def linearize_flat(fun, primals, nonzeros=None):
  """Runs `fun` on primals paired with staged tangents.

  Returns (out_primals, out_nonzero, linear ClosedJaxpr, aux): the jaxpr maps one tangent per
  primal to the nonzero output tangents; its consts are the residuals (parent-trace values).
  `fun` returns (flat outputs, aux); aux is returned with this trace's tracers stripped.
  """
  parent = core.current_trace()
  tangent_trace = pe.DynamicJaxprTrace(parent, tracer_type=pe.JaxprTracer)
  tangent_trace.caches_library_evals = True
  trace = LinearizeTrace(parent, tangent_trace)
  tracers = []
  for i, p in enumerate(primals):
    t = tangent_trace.new_arg(ad.tangent_aval(core.get_aval(p)))
    differentiable = t.aval.dtype != ad.dtypes.float0 and (nonzeros is None or nonzeros[i])
    tracers.append(LinearizeTracer(trace, p, t) if differentiable else p)
  try:
    with core.set_current_trace(trace), source_info_util.transform_name_stack("jvp"):
      outs, aux = fun(*tracers)
      pairs = [trace.to_primal_tangent_pair(o) for o in outs]
    # Outside the trace: rebuilding aux's pytree nodes must see the caller's trace (as in JAX),
    # e.g. flax.nnx Variables record the trace they are made under and refuse updates elsewhere.
    aux = strip_tracers(trace, aux)
  finally:
    trace.invalidate()
  out_primals = [p for p, _ in pairs]
  out_nz = [type(t) is not Zero for _, t in pairs]
  try:
    lin = tangent_trace.to_closed_jaxpr([t for _, t in pairs if type(t) is not Zero])
  finally:
    tangent_trace.invalidate()
  return out_primals, out_nz, dce_closed(lin, prune_subjaxprs=True), aux


def strip_tracers(trace, tree):
  """`tree` with the given linearize trace's tracers replaced by their primals."""
  from jaxlite._src.base import tree_util
  return tree_util.tree_map(
      lambda x: x.primal if type(x) is LinearizeTracer and x._trace is trace else x, tree)


def dce_closed(closed: ClosedJaxpr, prune_subjaxprs: bool = False) -> ClosedJaxpr:
  """Drops dead eqns and the consts nothing reads any more; with `prune_subjaxprs` (linear
  jaxprs) also loops' unused outputs (passes.dce_rules)."""
  jaxpr = passes.dce(closed.jaxpr, prune_subjaxprs)
  used = {v for e in jaxpr.eqns for v in e.invars if type(v) is Var}
  used.update(v for v in jaxpr.outvars if type(v) is Var)
  keep = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts) if v in used]
  if jaxpr is closed.jaxpr and len(keep) == len(closed.consts):
    return closed
  jaxpr = jaxpr.replace(constvars=[v for v, _ in keep])
  return ClosedJaxpr(jaxpr, [c for _, c in keep])


# --- linearizing a closed jaxpr (for call primitives such as jit) ------------------------------


class LinearizedJaxpr:
  """A closed jaxpr split into a primal jaxpr and a linear (tangent) jaxpr.

  `primal`: primal inputs -> (primal outputs not forwarded from inputs, computed residuals).
  `tangent`: (residuals, nonzero tangents) -> nonzero output tangents.
  `out_fwd[i]`: the input index that primal output i is, or None; `res_src[k]`: where residual
  k comes from, ("in", input index) or ("out", index into the primal jaxpr's outputs).
  """
  __slots__ = ("nz_out", "out_fwd", "primal", "res_src", "tangent")

  def __init__(self, primal, tangent, nz_out, out_fwd, res_src):
    self.primal, self.tangent, self.nz_out = primal, tangent, nz_out
    self.out_fwd, self.res_src = out_fwd, res_src

  def assemble(self, primals_in, primal_call_outs):
    """(primal outputs, residuals) from the inputs and the primal call's outputs."""
    outs = iter(primal_call_outs)
    primal_outs = [next(outs) if f is None else primals_in[f] for f in self.out_fwd]
    call_outs = list(primal_call_outs)
    residuals = [primals_in[i] if kind == "in" else call_outs[i] for kind, i in self.res_src]
    return primal_outs, residuals


_linearize_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def linearize_jaxpr(closed: ClosedJaxpr, nonzeros) -> LinearizedJaxpr:
  nonzeros = tuple(bool(n) for n in nonzeros)
  per_jaxpr = _linearize_cache.setdefault(closed, {})
  hit = per_jaxpr.get(nonzeros)
  if hit is None:
    hit = per_jaxpr[nonzeros] = _linearize_jaxpr(closed, nonzeros)
  return hit


def _linearize_jaxpr(closed, nonzeros):
  primal_trace = pe.DynamicJaxprTrace(core.current_trace())
  tangent_trace = pe.DynamicJaxprTrace(core.current_trace(), tracer_type=pe.JaxprTracer)
  trace = LinearizeTrace(primal_trace, tangent_trace)
  primals = [primal_trace.new_arg(a) for a in closed.in_avals]
  tracers = [LinearizeTracer(trace, p, tangent_trace.new_arg(ad.tangent_aval(p.aval)))
             if nz else p for p, nz in zip(primals, nonzeros)]
  try:
    with core.set_current_trace(trace):
      outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
      pairs = [trace.to_primal_tangent_pair(o) for o in outs]
  finally:
    trace.invalidate()
  nz_out = tuple(type(t) is not Zero for _, t in pairs)
  tangent = dce_closed(tangent_trace.to_closed_jaxpr([t for _, t in pairs if type(t) is not Zero]),
                       prune_subjaxprs=True)
  tangent, residuals = pe.convert_constvars_to_invars(tangent)
  primal_outs = [p for p, _ in pairs]
  return _split_primal(primal_trace, primals, primal_outs, residuals, tangent, nz_out)


def _split_primal(primal_trace, primals, primal_outs, residuals, tangent, nz_out):
  """Builds the primal jaxpr, forwarding inputs and deduplicating residuals like JAX."""
  in_pos = {id(p): i for i, p in enumerate(primals)}
  out_fwd = [in_pos.get(id(o)) for o in primal_outs]
  kept_outs = [o for o, f in zip(primal_outs, out_fwd) if f is None]
  out_pos = {id(o): i for i, o in enumerate(kept_outs)}
  extra, res_src = [], []
  for r in residuals:
    if id(r) in in_pos:
      res_src.append(("in", in_pos[id(r)]))
    elif id(r) in out_pos:
      res_src.append(("out", out_pos[id(r)]))
    else:
      res_src.append(("out", len(kept_outs) + len(extra)))
      extra.append(r)
  try:
    primal = dce_closed(primal_trace.to_closed_jaxpr(kept_outs + extra))
  finally:
    primal_trace.invalidate()
  return LinearizedJaxpr(primal, tangent, nz_out, out_fwd, res_src)

