"""Staging out: `DynamicJaxprTrace` records every primitive applied to its tracers as a jaxpr eqn.

Values of outer traces and concrete arrays seen while tracing become constvars; scalars become
literals. `trace_to_jaxpr` runs a flat function under a fresh trace and returns a ClosedJaxpr.
"""
from __future__ import annotations

import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base import errors
from jaxlite._src.base import source_info_util
from jaxlite._src.base.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var


class DynamicJaxprTracer(core.Tracer):
  __slots__ = ("_aval", "_var", "_debug")

  def __init__(self, trace, aval, var):
    self._trace = trace
    self._aval = aval
    self._var = var

  aval = property(lambda self: self._aval)

  def to_concrete_value(self):
    return None

  def _error_context(self):
    dbg = self._trace.debug_info
    if dbg is None:
      return ""
    return (f"\nThe error occurred while tracing the function {dbg.func_src_info} for "
            f"{dbg.traced_for}. This concrete value was not available in Python because it "
            f"depends on the value of {dbg.arg_desc(self)}.")

  def __repr__(self):
    for hook in tracer_text_hooks:
      hook(self)
    return f"JitTracer({self._aval})"

  __str__ = __repr__


class JaxprTracer(DynamicJaxprTracer):
  """A tangent staged while linearizing (grad, vjp, linearize): what JAX's partial evaluation
  makes of an unknown value, and prints as JAX does (a custom JVP rule under grad sees it)."""
  __slots__ = ()

  def __repr__(self):
    return f"Traced<{self._aval}:JaxprTrace>"

  __str__ = __repr__


# Called with a tracer whose text (str/repr) is asked for, before it is made: an eager
# shard_map's body that prints a value runs op by op instead (shard_map_eager.py).
tracer_text_hooks: list = []


class TracingDebugInfo:
  """Where a traced function came from, for error messages and jaxpr names."""
  __slots__ = ("traced_for", "func_src_info", "arg_names", "_arg_vars")

  def __init__(self, traced_for, func_src_info, arg_names):
    self.traced_for = traced_for
    self.func_src_info = func_src_info
    self.arg_names = arg_names
    self._arg_vars = {}

  def arg_desc(self, tracer) -> str:
    name = self._arg_vars.get(tracer._var)
    if name is not None:
      return f"the argument {name}"
    names = [n for n in self._arg_vars.values() if n]
    if names:
      return "the argument" + ("s " if len(names) > 1 else " ") + ", ".join(names)
    return "a traced argument"


def _is_literalable(x) -> bool:
  t = type(x)
  if t in (int, float, complex, bool) or t in dtypes.typed_scalar_types:
    return True
  if isinstance(x, np.generic):
    return True
  if isinstance(x, np.ndarray) and x.ndim == 0:
    return True
  if t is core.array_type and x.ndim == 0:
    return True
  return False


def _literal_value(x):
  if type(x) is core.array_type:
    x = x._host_value()
  if isinstance(x, np.ndarray):
    x = x[()]
  return x


# primitive -> rule(atoms, params, out_aval) giving a Literal to use instead of staging an eqn, or
# None. As JAX's `pe.const_fold_rules` (convert_element_type of a scalar literal folds).
const_fold_rules: dict = {}


# A library primitive's abstract evaluations in linearize's tangent trace, per primitive:
# (avals, params) -> output avals. JAX's are cached process-wide there (`_cached_abstract_eval`),
# which a library's instrumented rules observe (the primitives tutorial prints each call).
_library_evals: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cached_library_eval(primitive, rule, avals, params):
  try:
    key = (tuple(avals), tuple(sorted(params.items())))
    hash(key)
  except TypeError:  # unhashable params: evaluated each time
    return rule(*avals, **params)
  table = _library_evals.setdefault(primitive, {})
  out = table.get(key)
  if out is None:
    out = table[key] = rule(*avals, **params)
  return out


class DynamicJaxprTrace(core.Trace):
  __slots__ = ("eqns", "invars", "constvar_of", "const_vals", "debug_info", "tracer_type",
               "caches_library_evals", "made_values")
  stages_constants = True  # operations on concrete arrays are staged too (ArrayImpl.__iter__)

  def __init__(self, parent, debug_info=None, tracer_type=DynamicJaxprTracer):
    super().__init__(parent)
    self.tracer_type = tracer_type  # JaxprTracer for linearize's tangents
    # True for linearize's tangent trace, where a library primitive's JVP is re-emitted: JAX
    # evaluates those eqns' types through its cache, and a jit's or a rule's own eqns afresh
    self.caches_library_evals = False
    self.eqns = []
    self.invars = []
    self.constvar_of = {}  # id(value) -> Var; the value is kept alive in const_vals
    self.const_vals = {}   # Var -> value
    # id(Array) -> (Array, tracer): concrete Arrays made under this trace that inner traces
    # closed over, as this trace's tracers (`value_tracer`)
    self.made_values = None
    self.debug_info = debug_info

  def new_arg(self, aval, name=None) -> DynamicJaxprTracer:
    var = Var(aval)
    self.invars.append(var)
    if self.debug_info is not None:
      self.debug_info._arg_vars[var] = name
    return self.tracer_type(self, aval, var)

  def to_atom(self, x):
    if isinstance(x, core.Tracer):
      if x._trace is self:
        return x._var
      if not x._trace.alive:
        raise errors.unexpected_tracer_error(x)
      return self._constvar(x, x.aval)
    if type(x) is core.array_type:
      return self._array_atom(x)
    if _is_literalable(x):
      val = _literal_value(x)
      return Literal(val, core.get_aval(x))
    return self._constvar(x, core.get_aval(x))

  def _array_atom(self, x):
    """A concrete Array as JAX sees it here (core.staging_trace): made while this trace was
    staging, a 0-d one is a literal (an array a constvar); made under an outer staging trace
    still alive, that trace's tracer, which this trace's jaxpr takes as a const (a jit lifts it
    to a leading argument); made before (eagerly, or under a trace now gone), a constvar."""
    owner = core.made_under(x)
    if owner is self or owner is core.EVERY_TRACE:
      if x.ndim == 0:
        return Literal(_literal_value(x), core.get_aval(x))
    elif owner is not None and owner.alive and self._inside(owner):
      return self._constvar(owner.value_tracer(x), x.aval)
    return self._constvar(x, core.get_aval(x))

  def _inside(self, trace) -> bool:
    t = self.parent
    while t is not None:
      if t is trace:
        return True
      t = getattr(t, "parent", None)
    return False

  def value_tracer(self, x):
    """Concrete Array `x`, made while this trace was staging, as this trace's tracer (one per
    Array): what an inner trace closing over it captures."""
    made = self.made_values
    if made is None:
      made = self.made_values = {}
    entry = made.get(id(x))
    if entry is None:
      atom = self.to_atom(x)
      entry = made[id(x)] = (x, self.tracer_type(self, atom.aval, atom))
    return entry[1]

  def _constvar(self, x, aval):
    var = self.constvar_of.get(id(x))
    if var is None:
      if type(x) is np.ndarray or (isinstance(x, np.ndarray)):
        canon = dtypes.canonicalize_dtype(x.dtype)
        if canon != x.dtype:
          x = x.astype(canon)
        aval = ShapedArray(x.shape, canon, False)
      var = Var(aval)
      self.constvar_of[id(x)] = var
      self.const_vals[var] = x
    return var

  def process_primitive(self, primitive, args, params):
    atoms = [self.to_atom(a) for a in args]
    avals = [a.aval for a in atoms]
    rule = primitive.abstract_eval
    if rule is None:  # a user's Primitive (jax.extend.core) given no rule: JAX's error
      raise NotImplementedError(f"Abstract evaluation for '{primitive.name}' not implemented")
    if primitive.library and self.caches_library_evals:
      out_avals = _cached_library_eval(primitive, rule, avals, params)
    else:
      out_avals = rule(*avals, **params)
    out_avals = core.with_out_shardings(primitive, avals, params, out_avals)
    if core.vma_typing is not None:
      out_avals = core.vma_typing.type_out(primitive, avals, params, out_avals)
    fold = const_fold_rules.get(primitive)
    if fold is not None:
      folded = fold(atoms, params, out_avals)
      if folded is not None:
        return self.tracer_type(self, folded.aval, folded)
    if primitive.multiple_results:
      outvars = [Var(a) for a in out_avals]
      self.eqns.append(JaxprEqn(atoms, outvars, primitive, params,
                                source_info=core.staged_source_info()))
      return [self.tracer_type(self, v.aval, v) for v in outvars]
    var = Var(out_avals)
    self.eqns.append(JaxprEqn(atoms, [var], primitive, params,
                              source_info=core.staged_source_info()))
    return self.tracer_type(self, out_avals, var)

  def add_eqn(self, primitive, atoms, out_avals, params):
    """Records an eqn with precomputed output types (used by higher-order primitives)."""
    outvars = [Var(a) for a in out_avals]
    self.eqns.append(JaxprEqn(atoms, outvars, primitive, params,
                              source_info=core.staged_source_info()))
    return [self.tracer_type(self, v.aval, v) for v in outvars]

  def to_closed_jaxpr(self, outs) -> tuple[ClosedJaxpr, list]:
    """The recorded jaxpr; outer-trace tracers among the consts come back separately."""
    outvars = [self.to_atom(o) for o in outs]
    constvars, consts = [], []
    for var, val in self.const_vals.items():
      constvars.append(var)
      consts.append(val)
    jaxpr = Jaxpr(constvars, self.invars, outvars, self.eqns, debug_info=self.debug_info)
    return ClosedJaxpr(jaxpr, consts)


def trace_to_jaxpr(flat_fun, in_avals, debug_info=None, arg_names=None) -> tuple:
  """Runs `flat_fun` on tracers of `in_avals`; returns (ClosedJaxpr, outputs' pytree aux)."""
  parent = core.current_trace()
  trace = DynamicJaxprTrace(parent, debug_info)
  names = arg_names or [None] * len(in_avals)
  tracers = [trace.new_arg(a, n) for a, n in zip(in_avals, names)]
  # As JAX's, the traced body starts a fresh name stack (the eqn binding it carries the outer).
  in_scope = core.source_info_state.scope is not None
  try:
    if in_scope:
      source_info_util.push_name_stack(source_info_util.NameStack())
    with core.set_current_trace(trace):
      outs = flat_fun(*tracers)
      closed = trace.to_closed_jaxpr(outs)
  finally:
    if in_scope:
      source_info_util.pop_name_stack()
    trace.invalidate()
  return closed


def convert_constvars_to_invars(closed: ClosedJaxpr, every_const=False) -> tuple[ClosedJaxpr,
                                                                                  list]:
  """Moves outer-trace tracers out of the consts (`every_const`: every const, as JAX stages
  custom_jvp_call's): they become leading invars of the jaxpr."""
  jaxpr = closed.jaxpr
  keep_vars, keep_vals, lifted_vars, lifted_vals = [], [], [], []
  for v, c in zip(jaxpr.constvars, closed.consts):
    if every_const or isinstance(c, core.Tracer):
      lifted_vars.append(v)
      lifted_vals.append(c)
    else:
      keep_vars.append(v)
      keep_vals.append(c)
  if not lifted_vars:
    return closed, []
  new = jaxpr.replace(constvars=keep_vars, invars=lifted_vars + jaxpr.invars)
  return ClosedJaxpr(new, keep_vals), lifted_vals
