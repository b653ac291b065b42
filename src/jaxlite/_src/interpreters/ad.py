"""Autodiff core: symbolic zeros, the forward-mode (JVP) trace, the rule tables and the backward
pass that transposes linear jaxprs. Reverse mode = `linearize.py` (JVP + partial eval) + this.

Rule tables, keyed by Primitive, filled right below each primitive's definition:
  jvp_rules[p](primals, tangents, **params) -> (primal_out, tangent_out)
      Tangents are arrays or `Zero(aval)` (a symbolic zero); a rule may return Zero too.
      Rules only bind primitives: in forward mode they run on the parent trace; when
      linearizing they run under a partial-evaluation trace that sends work on primals to the
      parent and stages work on tangents into the linear jaxpr. So a rule never inspects
      which mode it is in.
  linearize_rules[p]: same signature, preferred over jvp_rules when linearizing. Call-like
      primitives (jit, remat2, custom_vjp_call, control flow) use it to emit one primal call
      (all arguments known) and one linear call (residuals + tangents) instead of one
      mixed call that could not be transposed.
  primitive_transposes[p](ct, *args, **params) -> one cotangent per arg (None or Zero where
      there is none). Linear inputs arrive as `UndefinedPrimal(aval)`, the others as values;
      `ct` is a list for multiple-result primitives (entries may be Zero).
Helpers: defjvp (rule(t, *primals)), defjvp2 (rule(t, ans, *primals)), defjvp_zero,
deflinear (transpose(ct, *args)), defbilinear (lhs(ct, x, y), rhs(ct, x, y)); Zero,
instantiate_zeros, zeros_like_aval, zeros_like, add_tangents, add_any_p, tangent_aval,
is_undefined_primal, backward_pass, jvp_jaxpr, transpose_jaxpr. `primitive_jvps` and
`transpose_rules` are aliases.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from jaxlite._src.base import core, dtypes, extended_dtypes, source_info_util
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base.core import Literal, ShapedArray, Var
from jaxlite._src.interpreters import batching
from jaxlite._src.compiler.numpy_codegen import TABLES as _NUMPY_TABLES
from jaxlite._src.base.core import first_weak
from jaxlite._src.compiler.xla import lowering as hlo

jvp_rules: dict = {}
linearize_rules: dict = {}
primitive_transposes: dict = {}
primitive_jvps = jvp_rules
transpose_rules = primitive_transposes

# --- tangent types and symbolic zeros ----------------------------------------------------------


def tangent_dtype(dtype):
  """The dtype of tangents of `dtype` values: float0 for integers, booleans and keys; a user
  extended dtype names its own (`_rules.tangent_dtype`)."""
  if extended_dtypes.has_rules(dtype):
    return dtype._rules.tangent_dtype(dtype)
  if not isinstance(dtype, np.dtype) or dtype == dtypes.float0 or dtypes.kind_of_dtype(dtype) in "iub":
    return dtypes.float0
  return dtype


def tangent_aval(aval: ShapedArray) -> ShapedArray:
  dt = tangent_dtype(aval.dtype)
  if dt is aval.dtype:
    return aval
  return ShapedArray(aval.shape, dt, False)


core.tangent_aval_rule = tangent_aval


class Zero:
  """A symbolic zero tangent or cotangent of type `aval`: no array is ever built for it."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"Zero({self.aval})"

  @staticmethod
  def from_primal_value(x) -> Zero:
    return Zero(tangent_aval(core.get_aval(x)))


class CustomVJPException(Exception):
  """A custom_vjp function differentiated with respect to a value it closes over (a traced
  const of its staged body): its bwd rule only gives cotangents for its explicit arguments.
  JAX's class of this error (jaxopt's tests catch it by name)."""

  def __init__(self, name: str | None = None):
    fun = f"custom_vjp function {name}" if name else "a custom_vjp function"
    super().__init__(
        f"Detected differentiation of {fun} with respect to a closed-over value: its custom "
        "VJP rule gives cotangents only for its explicit arguments. Pass the closed-over "
        "value to the function as an argument (or use jax.closure_convert) and adapt its "
        "fwd and bwd rules.")


def zeros_like_aval(aval):
  """A zero array of type `aval`: a scalar constant broadcast (one eqn when traced)."""
  if aval.dtype == dtypes.float0:
    if aval.shape and core.staging_trace(core.current_trace()) is not None:
      # staged as JAX stages it (`broadcast_in_dim (b'',):float0[]`), not a captured const
      return pk.roles.broadcast_in_dim.bind(np.zeros((), dtypes.float0), shape=tuple(aval.shape),
                                            broadcast_dimensions=(), sharding=None)
    return np.zeros(aval.shape, dtypes.float0)
  if extended_dtypes.has_rules(aval.dtype):  # its own zero (flax's fp8 meta dtype: -inf)
    return _extended_zeros(aval)
  scalar = core.array_from_numpy(np.zeros((), aval.dtype), aval.weak_type)
  if not aval.shape:
    return scalar
  return pk.roles.broadcast_in_dim.bind(scalar, shape=tuple(aval.shape), broadcast_dimensions=(),
                                 sharding=None)


def _extended_zeros(aval):
  """`_rules.zero` of a user extended dtype, broadcast as its physical type and cast back (so
  eager results stay typed by it)."""
  convert_element_type_p, broadcast_in_dim_p = pk.roles.convert_element_type, \
      pk.roles.broadcast_in_dim  # registered by lax (primitive_kinds)
  dt = aval.dtype
  scalar = dt._rules.zero(dt)
  if not aval.shape:
    return scalar
  phys = extended_dtypes.physical_dtype(dt)
  flat = convert_element_type_p.bind(scalar, new_dtype=phys, weak_type=False)
  flat = broadcast_in_dim_p.bind(flat, shape=tuple(aval.shape), broadcast_dimensions=(),
                                 sharding=None)
  return convert_element_type_p.bind(flat, new_dtype=dt, weak_type=False)


def zeros_like(x):
  """Zeros of the type of the value `x`."""
  return zeros_like_aval(core.get_aval(x))


def instantiate_zeros(t):
  return zeros_like_aval(t.aval) if type(t) is Zero else t


def instantiate_zeros_staged(t):
  """A zero tangent array made where the current linearization stages tangents (the linear
  jaxpr), as JAX's partial evaluation of a loop leaves its instantiated carry tangents; a 0-d
  zero stages nothing and stays a literal. Elsewhere instantiate_zeros."""
  if type(t) is not Zero:
    return t
  staged = getattr(core.current_trace(), "zero_tangents_trace", None)
  if staged is None or not t.aval.shape:
    return zeros_like_aval(t.aval)
  with core.set_current_trace(staged):
    return zeros_like_aval(t.aval)


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return _add_cts(x, y)


def _add_cts(x, y):
  """Accumulates two (co)tangents; a user extended dtype accumulates by its `_rules.add`."""
  dtype = core.get_aval(x).dtype
  if extended_dtypes.has_rules(dtype):
    return dtype._rules.add(dtype, x, y)
  return add_any_p.bind(x, y)


# `add_any` adds tangents of equal types; reverse mode accumulates cotangents with it.
add_any_p = core.Primitive("add_any")
add_any_p.def_impl(lambda x, y: np.add(x, y) if x.dtype != dtypes.float0 else x)
add_any_p.def_abstract_eval(lambda x, y: x)
add_any_p.eager_weak_type = first_weak
_NUMPY_TABLES.templates[add_any_p] = lambda: "np.add({0}, {1})"
hlo.register_elementwise(add_any_p, "add")


def _add_any_jvp(primals, tangents):
  return add_any_p.bind(*primals), add_tangents(*tangents)


jvp_rules[add_any_p] = _add_any_jvp
primitive_transposes[add_any_p] = lambda ct, x, y: [ct, ct]


def _add_any_batch(axis_data, vals, dims):
  # add_any never broadcasts: an unbatched operand is broadcast to the other's batch axis, so the
  # result always carries the batch axis (as JAX's add_jaxvals batching does).
  (x, y), (dx, dy) = vals, dims
  if dx is batching.not_mapped and dy is batching.not_mapped:
    return add_any_p.bind(x, y), batching.not_mapped
  d = dy if dx is batching.not_mapped else dx
  size = batching.shape_of(y if dx is batching.not_mapped else x)[d]  # axis_data may not know it
  return add_any_p.bind(batching.bdim_to(x, dx, d, size), batching.bdim_to(y, dy, d, size)), d


batching.axis_primitive_batchers[add_any_p] = _add_any_batch


# `stop_gradient`: identity on values, zero derivative.
stop_gradient_p = core.Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)
hlo.register_identity(stop_gradient_p)
stop_gradient_p.eager_weak_type = first_weak
_NUMPY_TABLES.templates[stop_gradient_p] = lambda: "{0}"


def _stop_gradient_jvp(primals, tangents):
  (x,) = primals
  out = stop_gradient_p.bind(x)
  return out, Zero.from_primal_value(out)


jvp_rules[stop_gradient_p] = _stop_gradient_jvp
batching.defvectorized(stop_gradient_p)


class UndefinedPrimal:
  """A linear input of an eqn being transposed: only its type is known."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x) -> bool:
  return type(x) is UndefinedPrimal


def aval_of(x):
  """The type of a primal argument of a transpose rule, defined or not."""
  return x.aval if type(x) in (UndefinedPrimal, Zero) else core.get_aval(x)


# --- rule helpers ------------------------------------------------------------------------------


def _sum_tangents(out, contributions):
  acc = Zero.from_primal_value(out)
  for c in contributions:
    acc = add_tangents(acc, c)
  return acc


def defjvp(prim, *rules):
  """JVP from one rule per argument: `rule(t, *primals, **params)` (None: not differentiable)."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    contributions = [rule(t, *primals, **params) for rule, t in zip(rules, tangents)
                     if rule is not None and type(t) is not Zero]
    return out, _sum_tangents(out, contributions)
  jvp_rules[prim] = jvp


def defjvp2(prim, *rules):
  """Like defjvp, with the primal output too: `rule(t, ans, *primals, **params)`."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    contributions = [rule(t, out, *primals, **params) for rule, t in zip(rules, tangents)
                     if rule is not None and type(t) is not Zero]
    return out, _sum_tangents(out, contributions)
  jvp_rules[prim] = jvp


def defjvp_zero(prim):
  """A piecewise-constant (or integer-valued) primitive: its tangent is a symbolic zero."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
      return out, [Zero.from_primal_value(o) for o in out]
    return out, Zero.from_primal_value(out)
  jvp_rules[prim] = jvp


def linear_jvp(prim, primals, tangents, **params):
  out = prim.bind(*primals, **params)
  if all(type(t) is Zero for t in tangents):
    if prim.multiple_results:
      return out, [Zero.from_primal_value(o) for o in out]
    return out, Zero.from_primal_value(out)
  return out, prim.bind(*[instantiate_zeros(t) for t in tangents], **params)


def deflinear(prim, transpose_rule):
  """A primitive linear in all its arguments; `transpose_rule(ct, *args, **params)`."""
  jvp_rules[prim] = functools.partial(linear_jvp, prim)

  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if type(a) is UndefinedPrimal else None for a in args]
    return transpose_rule(ct, *args, **params)
  primitive_transposes[prim] = transpose


deflinear2 = deflinear


def defbilinear(prim, lhs_rule, rhs_rule):
  """A primitive linear in each of its two arguments separately (mul, dot_general)."""
  defjvp(prim, lambda t, x, y, **params: prim.bind(t, y, **params),
         lambda t, x, y, **params: prim.bind(x, t, **params))

  def transpose(ct, x, y, **params):
    if is_undefined_primal(x) and is_undefined_primal(y):
      raise NotImplementedError(f"{prim} is not linear in both arguments at once and cannot "
                                "be transposed")
    if is_undefined_primal(x):
      return [Zero(x.aval) if type(ct) is Zero else lhs_rule(ct, x, y, **params), None]
    return [None, Zero(y.aval) if type(ct) is Zero else rhs_rule(ct, x, y, **params)]
  primitive_transposes[prim] = transpose


# --- forward mode: the JVP trace ---------------------------------------------------------------


def _short(x) -> str:
  return repr(x) if isinstance(x, core.Tracer) else str(x)


def primal_concrete_value(p):
  """The NumPy value behind a primal (None when it is abstract)."""
  if isinstance(p, core.Tracer):
    return p.to_concrete_value()
  if type(p) is core.array_type:
    return p._host_value()
  return np.asarray(p)


class JVPTracer(core.Tracer):
  """A primal value paired with its tangent (both values of the parent trace)."""
  __slots__ = ("primal", "tangent")

  def __init__(self, trace, primal, tangent):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent

  aval = property(lambda self: core.get_aval(self.primal))

  def to_concrete_value(self):
    return primal_concrete_value(self.primal)

  def __repr__(self):
    return f"JVPTracer(primal={_short(self.primal)}, tangent={_short(self.tangent)})"

  __str__ = __repr__


class JVPTrace(core.Trace):
  __slots__ = ()

  def to_primal_tangent_pair(self, x):
    if type(x) is JVPTracer and x._trace is self:
      return x.primal, x.tangent
    return x, Zero.from_primal_value(x)

  def process_primitive(self, primitive, args, params):
    primals, tangents = _split_tracers(self, JVPTracer, args)
    # `jax.jvp` keeps Python and NumPy primals and tangents as they are (custom rules and, as
    # in JAX, a library's rules see them so); jaxlite's primitives and rules get Arrays
    library = primitive.library
    if not library:
      primals = tuple(p if isinstance(p, core.Array) else _primal_array(p) for p in primals)
    if tangents is None:
      with core.set_current_trace(self.parent):
        return primitive.bind(*primals, **params)
    if not library:
      tangents = tuple(t if isinstance(t, (core.Array, Zero)) else _primal_array(t)
                       for t in tangents)
    rule = jvp_rules.get(primitive)
    if rule is None:
      raise NotImplementedError(f"Differentiation rule for '{primitive}' not implemented")
    if primitive.library:  # a library's rule gets tuples, as JAX passes them
      primals, tangents = tuple(primals), tuple(tangents)
    with core.set_current_trace(self.parent):
      out, tangent_out = rule(primals, tangents, **params)
    if primitive.multiple_results:
      return [_maybe_tracer(self, JVPTracer, o, t) for o, t in zip(out, tangent_out)]
    return _maybe_tracer(self, JVPTracer, out, tangent_out)


def _primal_array(x):
  """A Python or NumPy value (a `jax.jvp` argument) as an Array; anything else as it is."""
  if type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic)):
    return core.asarray(x)
  return x


def _split_tracers(trace, tracer_type, args):
  """(primals, tangents) of `args`; tangents is None when every tangent is a symbolic zero."""
  primals = []
  found = False
  for a in args:
    if type(a) is tracer_type and a._trace is trace:
      primals.append(a.primal)
      found = True
    else:
      primals.append(a)
  if not found:
    return primals, None
  tangents = tuple(a.tangent if type(a) is tracer_type and a._trace is trace
                   else Zero.from_primal_value(a) for a in args)
  return tuple(primals), tangents  # tuples, as JAX passes rules (equinox vmaps over them)


def _maybe_tracer(trace, tracer_type, primal, tangent):
  # A float0 tangent (of an integer or boolean value) is a zero: as in JAX, primitives applied
  # to that value alone need no differentiation rule.
  if type(tangent) is Zero or getattr(tangent, "dtype", None) == dtypes.float0:
    return primal
  return tracer_type(trace, primal, tangent)


def jvp_flat(fun, primals, tangents, instantiate=True):
  """Runs `fun` on (primal, tangent) pairs; returns its outputs' primals and tangents.

  `tangents` may hold Zero; with `instantiate`, Zero output tangents become arrays.
  """
  trace = JVPTrace(core.current_trace())
  tracers = [_maybe_tracer(trace, JVPTracer, p, t) for p, t in zip(primals, tangents)]
  try:
    with core.set_current_trace(trace), source_info_util.transform_name_stack("jvp"):
      outs = fun(*tracers)
    pairs = [trace.to_primal_tangent_pair(o) for o in outs]
  finally:
    trace.invalidate()
  out_primals = [p for p, _ in pairs]
  out_tangents = [instantiate_zeros(t) if instantiate else t for _, t in pairs]
  return out_primals, out_tangents


_jvp_jaxpr_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jvp_jaxpr(closed: core.ClosedJaxpr, nonzeros, instantiate=False):
  """The JVP of a closed jaxpr: (primals, nonzero tangents) -> (primal outs, nonzero tangent
  outs). Returns (ClosedJaxpr, which output tangents are nonzero). Cached per jaxpr."""
  nonzeros = tuple(bool(n) for n in nonzeros)
  key = (nonzeros, instantiate)
  per_jaxpr = _jvp_jaxpr_cache.setdefault(closed, {})
  hit = per_jaxpr.get(key)
  if hit is None:
    hit = per_jaxpr[key] = _jvp_jaxpr(closed, nonzeros, instantiate)
  return hit


def _jvp_jaxpr(closed, nonzeros, instantiate):
  from jaxlite._src.interpreters import partial_eval as pe
  in_avals = closed.in_avals
  tan_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
  n = len(in_avals)
  nz_out = []

  def fun(*args):
    primals, nz_tangents = args[:n], iter(args[n:])
    tangents = [next(nz_tangents) if nz else Zero(tangent_aval(a))
                for a, nz in zip(in_avals, nonzeros)]
    outs, touts = jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                           primals, tangents, instantiate=instantiate)
    nz_out.extend(type(t) is not Zero for t in touts)
    return list(outs) + [t for t in touts if type(t) is not Zero]

  out = pe.trace_to_jaxpr(fun, list(in_avals) + tan_avals)
  return out, tuple(nz_out)


# --- reverse mode: transposing linear jaxprs ---------------------------------------------------


# primitive -> split(eqn, linear_in) -> (an eqn computing the outputs that read no linear
# input, or None; the eqn left to transpose, those outputs dropped; per output, whether it is
# linear): for eqns that mix both (a checkpoint nested in a checkpoint, JVP'd: primals and
# tangents in, both out), whose non-linear outputs later eqns read as ordinary values.
forward_splits: dict = {}


def backward_pass(jaxpr: core.Jaxpr, consts, args, cts_out, cts_in=None) -> list:
  """Cotangents of `jaxpr`'s inputs, given cotangents of its outputs (NumPy's floating-point
  warnings silenced, as XLA gives none: `0 * inf` in a cotangent is NaN, quietly). `cts_in`:
  cotangents the inputs' start from (None: zero), each contribution added to them as it comes
  (a transposed scan's running sums of its consts' cotangents, as JAX's)."""
  with np.errstate(all="ignore"):
    return _backward_pass(jaxpr, consts, args, cts_out, cts_in)


def _backward_pass(jaxpr: core.Jaxpr, consts, args, cts_out, cts_in=None) -> list:
  """Cotangents of `jaxpr`'s inputs, given cotangents of its outputs.

  `args` holds UndefinedPrimal for the inputs the jaxpr is linear in and values for the rest;
  eqns that read no linear value run forward first, then linear eqns are transposed in reverse
  order, cotangents adding up with `add_any`. Entries for defined inputs come back None,
  those that received no cotangent as Zero.
  """
  env = dict(zip(jaxpr.constvars, consts))
  linear = set()
  given = {}  # the caller's UndefinedPrimals: their avals type what rules see (a scan's carry)
  for v, a in zip(jaxpr.invars, args):
    if type(a) is UndefinedPrimal:
      linear.add(v)
      given[v] = a
    else:
      env[v] = a

  def read(v):
    return literal_value(v) if type(v) is Literal else env[v]

  def is_linear(v):
    return type(v) is Var and v in linear

  lin_eqns = []
  for eqn in jaxpr.eqns:
    lin_in = [is_linear(v) for v in eqn.invars]
    if any(lin_in):
      split = forward_splits.get(eqn.primitive)
      if split is not None and not all(lin_in):
        forward, eqn, lin_out = split(eqn, lin_in)
        if forward is not None:
          outs = forward.primitive.bind(*[read(v) for v in forward.invars], **forward.params)
          env.update(zip(forward.outvars, outs if forward.primitive.multiple_results
                         else [outs]))
        linear.update(v for v, u in zip(eqn.outvars, lin_out) if u)
      else:
        linear.update(eqn.outvars)
      lin_eqns.append(eqn)
      continue
    outs = _under_eqn_name_stack(eqn, eqn.primitive.bind, [read(v) for v in eqn.invars],
                                 eqn.params)
    env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))

  ct_env = {}

  def accumulate(v, ct):
    if is_linear(v) and ct is not None and type(ct) is not Zero:
      prev = ct_env.get(v)
      if prev is None:
        ct_env[v] = ct
      else:  # a sum of cotangents is an Array, Python numbers among them too
        if type(prev) in _PY_SCALARS:
          prev = _scalar_ct(prev, v.aval)
        ct_env[v] = _add_cts(prev, _scalar_ct(ct, v.aval) if type(ct) in _PY_SCALARS else ct)

  for v, ct in zip(jaxpr.invars, cts_in or ()):
    accumulate(v, ct)
  for v, ct in zip(jaxpr.outvars, cts_out):
    accumulate(v, ct)
  with source_info_util.transform_name_stack("transpose"):
    for eqn in reversed(lin_eqns):
      _under_eqn_name_stack(eqn, _transpose_eqn,
                            (eqn, read, is_linear, given, accumulate, ct_env), {})
  return [None if v not in linear else ct_env[v] if v in ct_env else Zero(tangent_aval(v.aval))
          for v in jaxpr.invars]


def _under_eqn_name_stack(eqn, fn, args, kwargs):
  """`fn(*args, **kwargs)` with `eqn`'s name stack after the current one, as JAX's: what an eqn
  of a jaxpr being transposed or replayed stages carries `transpose(jvp(model))/layer`."""
  si = eqn._source_info
  if si is None or not si.name_stack.stack:
    return fn(*args, **kwargs)
  source_info_util.push_name_stack(source_info_util.current_name_stack() + si.name_stack)
  try:
    return fn(*args, **kwargs)
  finally:
    source_info_util.pop_name_stack()


def _transpose_eqn(eqn, read, is_linear, given, accumulate, ct_env):
  cts = [ct_env.pop(v, None) for v in eqn.outvars]
  if all(ct is None for ct in cts) and not getattr(eqn.primitive, "transpose_zero_cts", False):
    return  # a zero cotangent transposes to zeros, except through a user's bwd (below)
  cts = [Zero(tangent_aval(v.aval)) if ct is None else ct for v, ct in zip(eqn.outvars, cts)]
  rule = primitive_transposes.get(eqn.primitive)
  if rule is None:
    raise NotImplementedError("Transpose rule (for reverse-mode differentiation) for "
                              f"'{eqn.primitive}' not implemented")
  if eqn.primitive not in python_cotangent_primitives:
    # a Python number given to a VJP function goes on as it is only to a user's bwd rule
    cts = [_scalar_ct(ct, v.aval) if type(ct) in _PY_SCALARS else ct
           for v, ct in zip(eqn.outvars, cts)]
  invals = [(given.get(v) or UndefinedPrimal(v.aval)) if is_linear(v) else read(v)
            for v in eqn.invars]
  if eqn.primitive.library:
    # a library's rule reads `x.aval` of its operands, as JAX's literals are Arrays (equinox's
    # select_if_vmap transpose, on the zeros a JVP rule made)
    invals = [core.array_from_numpy(np.asarray(x), False) if isinstance(x, np.generic) else x
              for x in invals]
  cts_in = rule(cts if eqn.primitive.multiple_results else cts[0], *invals, **eqn.params)
  for v, ct in zip(eqn.invars, cts_in):
    accumulate(v, ct)


# Primitives whose transpose takes a cotangent that is a Python number as it came (JAX passes a
# VJP function's float cotangent to a custom_vjp's bwd unchanged); filled by custom_derivatives.
python_cotangent_primitives: set = set()
_PY_SCALARS = (float, int, complex)


def _scalar_ct(ct, aval):
  return core.array_from_numpy(np.asarray(ct, tangent_aval(aval).dtype), True)


def literal_value(lit: Literal):
  """A literal's value, still weakly typed if the literal was (NumPy scalars are not)."""
  val = lit.val
  if lit.aval.weak_type and isinstance(val, np.generic):
    return core.array_from_numpy(np.asarray(val), True)
  return val


_transpose_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def transpose_jaxpr(closed: core.ClosedJaxpr, undefined, ct_nonzero, linear_avals=None):
  """A jaxpr computing the cotangents of `closed`'s linear (`undefined`) inputs.

  It takes the defined inputs then the nonzero output cotangents and returns the nonzero input
  cotangents; also returns which of the linear inputs got a (nonzero) cotangent. Cached.
  `linear_avals` (one per linear input): the caller's UndefinedPrimals' types, where they
  differ from the jaxpr's (a strong cotangent of a weak carry, as JAX types them).
  """
  linear_avals = tuple(linear_avals) if linear_avals is not None else None
  key = (tuple(undefined), tuple(ct_nonzero),
         None if linear_avals is None else tuple((a.shape, a.dtype, a.weak_type)
                                                 for a in linear_avals))
  per_jaxpr = _transpose_cache.setdefault(closed, {})
  hit = per_jaxpr.get(key)
  if hit is None:
    hit = per_jaxpr[key] = _transpose_jaxpr(closed, key[0], key[1], linear_avals)
  return hit


def _transpose_jaxpr(closed, undefined, ct_nonzero, linear_avals=None):
  from jaxlite._src.interpreters import partial_eval as pe
  in_avals = closed.in_avals
  if linear_avals is not None:
    it = iter(linear_avals)
    in_avals = [next(it) if u else a for a, u in zip(in_avals, undefined)]
  out_avals = closed.out_avals
  defined_avals = [a for a, u in zip(in_avals, undefined) if not u]
  ct_avals = [tangent_aval(a) for a, nz in zip(out_avals, ct_nonzero) if nz]
  n_def = len(defined_avals)
  nonzero_out = []

  def fun(*args):
    defined, cts = iter(args[:n_def]), iter(args[n_def:])
    full_args = [UndefinedPrimal(a) if u else next(defined) for a, u in zip(in_avals, undefined)]
    full_cts = [next(cts) if nz else Zero(tangent_aval(a)) for a, nz in zip(out_avals, ct_nonzero)]
    res = backward_pass(closed.jaxpr, closed.consts, full_args, full_cts)
    lin_cts = [r for r, u in zip(res, undefined) if u]
    nonzero_out.extend(type(c) is not Zero for c in lin_cts)
    return [c for c in lin_cts if type(c) is not Zero]

  out = pe.trace_to_jaxpr(fun, defined_avals + ct_avals)
  return out, tuple(nonzero_out)


def transpose_call(closed: core.ClosedJaxpr, cts, args, run) -> list:
  """The transpose rule of a call primitive whose body is `closed`: its transposed jaxpr run
  by `run(transposed, ins)` on the defined arguments then the nonzero cotangents (not run when
  no linear input gets a cotangent), the results spread over `args`."""
  undefined = [type(a) is UndefinedPrimal for a in args]
  trans, nonzero = transpose_jaxpr(closed, undefined, [type(c) is not Zero for c in cts])
  ins = [a for a, u in zip(args, undefined) if not u] + [c for c in cts if type(c) is not Zero]
  return spread_transposed(args, nonzero, run(trans, ins) if any(nonzero) else [])


def spread_transposed(args, nonzero, outs) -> list:
  """A transposed call's outputs spread over the call's arguments: None for defined ones,
  Zero for linear ones that got no cotangent (`nonzero` is from `transpose_jaxpr`)."""
  it, nz = iter(outs), iter(nonzero)
  return [None if type(a) is not UndefinedPrimal else (next(it) if next(nz) else Zero(a.aval))
          for a in args]


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(add_any_p, pk.ELEMENTWISE)
pk.register(stop_gradient_p, pk.ELEMENTWISE, identity=True)  # the compiler drops it
