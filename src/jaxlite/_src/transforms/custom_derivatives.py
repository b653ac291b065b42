"""`custom_jvp` and `custom_vjp`: functions with user-supplied derivative rules.

A call is dispatched on the current trace (end of file) so user code runs when JAX runs it:
eager, and the rule alone under JVP/grad with concrete primals. Staged (jit), each is one
primitive (`custom_jvp_call`, `custom_vjp_call`) holding the function's jaxpr and flat wrappers
of the rules; their AD and batching rules live right below them.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence

import numpy as np

from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.base import linear_util as lu
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.compiler import backend
from jaxlite._src.compiler import passes
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.interpreters import linearize as lin
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.interpreters.ad import Zero
from jaxlite._src.compiler.numpy_codegen import TABLES as _NUMPY_TABLES
from jaxlite._src.compiler.xla import lowering as hlo


class SymbolicZero:
  """A zero tangent or cotangent handed to rules defined with `symbolic_zeros=True`."""

  def __init__(self, aval):
    self.aval = aval

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)

  def __repr__(self):
    return f"SymbolicZero({self.aval.str_short(short_dtypes=False)})"

  def instantiate(self):
    return ad.zeros_like_aval(self.aval)


class CustomVJPPrimal:
  """A primal argument of a `symbolic_zeros=True` fwd rule and whether it is perturbed."""

  def __init__(self, value, perturbed: bool):
    self.value, self.perturbed = value, perturbed

  def __repr__(self):
    return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def zero_from_primal(val, symbolic_zeros: bool = False):
  def zero(x):
    aval = ad.tangent_aval(core.get_aval(x))
    return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)
  return tree_util.tree_map(zero, val)


# --- shared plumbing ---------------------------------------------------------------------------


def _fun_name(f) -> str:
  while isinstance(f, functools.partial):
    f = f.func
  return getattr(f, "__name__", type(f).__name__)


def _resolve_args(fun, args, kwargs):
  """Keyword arguments moved into their positions and omitted defaults filled in, as JAX does
  for custom functions (flax's fp8 `dot_general_with_precision` leaves nondiff args default)."""
  if not kwargs:
    code = getattr(fun, "__code__", None)
    if code is not None and len(args) >= code.co_argcount:
      return tuple(args)
  try:
    signature = inspect.signature(fun)  # a jitted function's is its function's (ott's norm)
  except (TypeError, ValueError):
    if not kwargs:
      return tuple(args)
    raise
  try:
    bound = signature.bind(*args, **kwargs)
  except (TypeError, ValueError) as e:
    raise TypeError(f"The function {_fun_name(fun)} was called with arguments that do not "
                    f"match its signature: {e}") from None
  bound.apply_defaults()
  if bound.kwargs:
    raise TypeError("keyword arguments could not be resolved to positions")
  return tuple(bound.args)


def _split_nondiff(args, nondiff_argnums):
  nondiff = tuple(args[i] for i in nondiff_argnums)
  diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
  return nondiff, diff


def _merge_nondiff(nondiff_argnums, nondiff, diff):
  out, it_n, it_d = [], iter(nondiff), iter(diff)
  for i in range(len(nondiff) + len(diff)):
    out.append(next(it_n) if i in nondiff_argnums else next(it_d))
  return out


def _as_arg(x):
  from jaxlite._src.transforms.ad_api import _as_array
  return _as_array(x)


def _checked_arg(x):
  from jaxlite._src.transforms.ad_api import _checked
  return _checked(x, "Output")


def _trace_call(fun, flat_args, in_tree):
  """(ClosedJaxpr of `fun` over the args' types, lifted outer-trace consts, out tree)."""
  store = {}

  def flat_fun(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    leaves, store["out_tree"] = tree_util.tree_flatten(out)
    return [_as_arg(o) for o in leaves]
  closed = pe.trace_to_jaxpr(flat_fun, [core.get_aval(a) for a in flat_args])
  closed, lifted = pe.convert_constvars_to_invars(closed)
  return closed, lifted, store["out_tree"]


def _run_jaxpr(*args, call_jaxpr, **params):
  return backend.compile_jaxpr(call_jaxpr)(*args)


def _long(aval) -> str:
  return aval.str_short(short_dtypes=False)


def _tree_str(tree, avals) -> str:
  return str(tree_util.tree_unflatten(tree, [_long(a) for a in avals])).replace("'", "")


def _check_tangents(primals, tangents):
  avals = [core.get_aval(p).strip_weak_type() for p in primals]
  want = [ad.tangent_aval(a) for a in avals]
  got = [t.aval if type(t) in (SymbolicZero, Zero) else core.get_aval(t).strip_weak_type()
         for t in tangents]
  bad = [(p, w, g) for p, w, g in zip(avals, want, got)
         if w.shape != g.shape or w.dtype != g.dtype]
  if not bad:
    return
  if len(avals) == 1:
    (p, w, g), = bad
    raise TypeError("Custom JVP rule must produce primal and tangent outputs with corresponding "
                    f"shapes and dtypes. Expected {_long(w)} (tangent type of {_long(p)}) but "
                    f"got {_long(g)}.")
  lines = "\n".join(f"  primal {_long(p)} with tangent {_long(g)}, expecting tangent {w}"
                    for p, w, g in bad)
  raise TypeError("Custom JVP rule must produce primal and tangent outputs with corresponding "
                  f"shapes and dtypes, but got:\n{lines}")


# --- custom_jvp --------------------------------------------------------------------------------

class CustomJVPCallPrimitive(core.Primitive):
  """`custom_jvp_call`: its eqn holds the function's jaxpr and the flat JVP rule as params.

  JAX's `get_bind_params` turns those into `subfuns` (the function and the lifted rule, each a
  `linear_util.WrappedFun`) that its `bind` takes back: equinox's `finalise_jaxpr` calls the
  first to inline the call, or rebinds the eqn with them. jaxlite's `bind` reads the jaxpr and
  the rule from the params, which still hold them; `subfuns` are views of those two.
  """

  def get_bind_params(self, params) -> dict:
    new = dict(params)
    closed, jvp = params["call_jaxpr"], params["jvp"]
    num_consts, symbolic_zeros = params["num_consts"], params["symbolic_zeros"]
    new["subfuns"] = (lu.wrap_init(core.jaxpr_as_fun(closed)),
                      lu.wrap_init(_lifted_jvp(jvp, num_consts, symbolic_zeros)))
    return new

  def bind(self, *args, subfuns=None, **params):
    return super().bind(*args, **params)


def _lifted_jvp(jvp, num_consts, symbolic_zeros):
  """The rule over flat (consts, primals, const tangents, tangents) -> outputs then their
  tangents, symbolic zeros as `SymbolicZero` (JAX's `lift_jvp`)."""
  def flat_jvp(*xs):
    n, ragged = divmod(len(xs), 2)
    if ragged:
      raise TypeError(f"custom_jvp_call's lifted JVP rule takes primals and tangents in equal "
                      f"numbers; got {len(xs)} values")
    tangents = [Zero(t.aval) if type(t) is SymbolicZero else t for t in xs[n + num_consts:]]
    outs, t_outs = _apply_jvp_rule(jvp, xs[num_consts:n], tangents, symbolic_zeros)
    return [*outs, *(SymbolicZero(t.aval) if type(t) is Zero else t for t in t_outs)]
  return flat_jvp


custom_jvp_call_p = CustomJVPCallPrimitive("custom_jvp_call")
pp.param_rules[custom_jvp_call_p] = pp.ParamRule(
    first=("name",), only=("call_jaxpr", "jvp", "num_consts", "symbolic_zeros"),
    drop={"num_consts": pp.is_zero}, show={"jvp": pp.fun_name})
custom_jvp_call_p.multiple_results = True
pp.unnamed_calls.add(custom_jvp_call_p)
custom_jvp_call_p.def_impl(_run_jaxpr)
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **params: call_jaxpr.out_avals)
passes.inlinable_call_primitives.add(custom_jvp_call_p)
passes.inline_jaxpr_param[custom_jvp_call_p] = "call_jaxpr"
hlo.register_call(custom_jvp_call_p, "call_jaxpr")  # compiled code runs the primal


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros,
                         name):
  if any(type(t) is not Zero for t in tangents[:num_consts]):
    raise NotImplementedError(
        f"custom_jvp function {name} closes over a value that is being differentiated; "
        "pass it as an argument instead (or use jax.closure_convert)")
  return _apply_jvp_rule(jvp, primals[num_consts:], tangents[num_consts:], symbolic_zeros)


def _apply_jvp_rule(jvp, args, t_args, symbolic_zeros, as_arrays=True):
  """The rule run on the primals and tangents (on the trace below the JVP's); with
  `as_arrays`, the Python or NumPy values it returns made Arrays."""
  if not symbolic_zeros:
    t_args = [ad.instantiate_zeros(t) for t in t_args]
  outs, t_outs = jvp(list(args), list(t_args))
  t_outs = [Zero(t.aval) if type(t) is SymbolicZero else t for t in t_outs]
  if as_arrays:
    outs = [_as_arg(o) for o in outs]
    t_outs = [t if type(t) is Zero else _as_arg(t) for t in t_outs]
  return outs, t_outs


ad.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, jvp, num_consts, symbolic_zeros, name):
  """A linear custom_jvp function transposes as its body does (the JVP rule plays no part in
  the transpose), evaluated inline as JAX's backward pass does (optimistix transposes
  lineax's linear solves through one)."""
  return ad.transpose_call(call_jaxpr, cts, args, lambda trans, ins: core.eval_jaxpr(
      trans.jaxpr, trans.consts, *ins))


ad.primitive_transposes[custom_jvp_call_p] = _custom_jvp_call_transpose


def _batched_call(call_jaxpr, axis_data, vals, dims):
  """`call_jaxpr` over batched values, every output batched at axis 0."""
  size = axis_data.size

  def fun(*xs):
    outs, out_dims = batching.batch_flat(core.jaxpr_as_fun(call_jaxpr), axis_data, xs, dims)
    return [batching.bdim_at_front(o, d, size) for o, d in zip(outs, out_dims)]
  # An unbatched operand keeps the call's declared aval: a weak literal of an outer jaxpr
  # arrives here as a NumPy scalar, whose own aval would be strong (seed 316: softplus of a
  # weak bool under vmap came back strong)
  avals = [a if d is None else core.get_aval(v)
           for v, d, a in zip(vals, dims, call_jaxpr.in_avals)]
  closed = pe.trace_to_jaxpr(fun, avals)
  return pe.convert_constvars_to_invars(closed)[0]


def _batched_fn(fn, axis_data, in_dims, n_first, tag=None):
  """`fn(first, rest) -> (outs, outs2)` over batched values; outputs batched at axis 0."""
  size = axis_data.size

  def batched(first, rest):
    n = len(first)
    counts = []

    def flat(*xs):
      a, b = fn(list(xs[:n]), list(xs[n:]))
      counts.append(len(a))
      return list(a) + list(b)
    # A symbolic zero (a tangent) goes in unbatched, as one example's zero, and comes out
    # batched at axis 0 again.
    vals, dims = list(first) + list(rest), list(in_dims)
    for i, (v, d) in enumerate(zip(vals, dims)):
      if type(v) is Zero and d is not None:
        shape = list(v.aval.shape)
        del shape[d]
        vals[i], dims[i] = Zero(v.aval.update(shape=tuple(shape))), None
    outs, dims = batching.batch_flat(flat, axis_data, vals, dims, tag)
    # a rule's symbolic-zero tangent output (symbolic_zeros=True) is one example's zero too
    outs = [Zero(o.aval.update(shape=(size, *o.aval.shape))) if type(o) in (Zero, SymbolicZero)
            else batching.bdim_at_front(o, d, size) for o, d in zip(outs, dims)]
    return outs[:counts[0]], outs[counts[0]:]
  batched.__name__ = _fun_name(fn)
  return batched


def _custom_jvp_call_batcher(axis_data, vals, dims, *, call_jaxpr, jvp, num_consts,
                             symbolic_zeros, name):
  params = {"num_consts": num_consts, "symbolic_zeros": symbolic_zeros, "name": name}
  if all(d is None for d in dims):
    return custom_jvp_call_p.bind(*vals, call_jaxpr=call_jaxpr, jvp=jvp, **params), \
        [None] * len(call_jaxpr.out_avals)
  arg_dims = list(dims[num_consts:])
  batched_jvp = _batched_fn(jvp, axis_data, arg_dims + arg_dims, len(arg_dims))
  outs = custom_jvp_call_p.bind(*vals, call_jaxpr=_batched_call(call_jaxpr, axis_data, vals,
                                                                dims),
                                jvp=batched_jvp, **params)
  return outs, [0] * len(outs)


batching.axis_primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batcher


class _CustomFunction:
  """What custom_jvp and custom_vjp share: nondiff arguments, method binding, and tracing the
  primal function on the differentiable arguments."""

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.symbolic_zeros = False

  def __get__(self, instance, owner=None):
    return self if instance is None else functools.partial(self, instance)

  def _flat_primal(self, args):
    """(nondiff args, flat diff args, their tree, the primal function on flat arguments, the
    dict its output tree and types go to once it has run)."""
    nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
    flat, in_tree = tree_util.tree_flatten(diff)
    flat = [_as_arg(x) for x in flat]
    out_store = {}

    def flat_fun(*xs):
      out = self.fun(*_merge_nondiff(self.nondiff_argnums, nondiff,
                                     tree_util.tree_unflatten(in_tree, xs)))
      leaves, out_store["tree"] = tree_util.tree_flatten(out)
      leaves = [_as_arg(o) for o in leaves]
      out_store["avals"] = [core.get_aval(o) for o in leaves]
      return leaves
    flat_fun.__name__ = _fun_name(self.fun)
    return nondiff, flat, in_tree, flat_fun, out_store


class custom_jvp(_CustomFunction):
  """A function with a custom JVP rule: `f = custom_jvp(fun)`, then `f.defjvp(rule)`."""

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    super().__init__(fun, nondiff_argnums)
    self.jvp = None

  def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
    """Sets the rule `jvp(primals, tangents) -> (primal_out, tangent_out)`."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps: Callable | None) -> None:
    """One rule per argument, `jvp_i(t_i, primal_out, *primals)`; the results are summed."""
    if self.nondiff_argnums:
      raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

    def jvp(primals, tangents):
      primal_out = self(*primals)
      terms = [rule(t, primal_out, *primals) for rule, t in zip(jvps, tangents)
               if rule is not None]
      if not terms:
        return primal_out, zero_from_primal(primal_out)
      return primal_out, tree_util.tree_map(lambda *ts: functools.reduce(_add, ts), *terms)
    jvp.__name__ = "jvp"
    self.defjvp(jvp)

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
    args = _resolve_args(self.fun, args, kwargs)
    if core.current_trace() is core.eval_trace:
      _check_eager_leaves(args, self.nondiff_argnums, _custom_jvp_leaf_error)
      return self.fun(*args)
    # As in JAX, tracers among nondiff arguments are not differentiated through.
    args = tuple(tree_util.tree_map(_stop_tracer_gradient, a) if i in self.nondiff_argnums
                 else a for i, a in enumerate(args))
    nondiff, flat, in_tree, fun, out_store = self._flat_primal(args)
    flat_jvp = _flat_jvp(self.jvp, nondiff, in_tree, out_store, name, self.symbolic_zeros)
    outs = _CustomCall("jvp", fun, (flat_jvp,), self.symbolic_zeros, name).bind(flat)
    return tree_util.tree_unflatten(out_store["tree"], outs)


# argument types an eager call passes on unchecked (the common case); anything else is
# flattened and its leaves checked, as the custom_jvp_call/custom_vjp_call bind checks them
_PLAIN_ARG_TYPES = frozenset({core.array_type, float, int, bool, complex, np.ndarray})


def _check_eager_leaves(args, nondiff_argnums, error):
  if all(type(a) in _PLAIN_ARG_TYPES for a in args):
    return
  diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
  for position, leaf in enumerate(tree_util.tree_leaves(diff)):
    if not core.valid_jaxtype(leaf):
      raise error(leaf, position)


def _custom_jvp_leaf_error(leaf, position):
  return TypeError(
      "Error interpreting argument to custom_jvp_call as a JAX value. The problematic value is "
      f"of type {type(leaf)} and was passed to custom_jvp_call at position {position}.\n")


def _custom_vjp_leaf_error(leaf, position):
  return TypeError(f"Argument {leaf!r} of type {type(leaf)} is not a valid JAX type")


def _add(x, y):
  return x + y


def _stop_tracer_gradient(x):
  return ad.stop_gradient_p.bind(x) if isinstance(x, core.Tracer) else x


def _check_for_tracers(x):
  from jaxlite._src.base import errors
  if any(isinstance(leaf, core.Tracer) for leaf in tree_util.tree_leaves(x)):
    raise errors.UnexpectedTracerError(
        "Found a JAX Tracer object passed as an argument to a custom_vjp function in a position "
        "indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed as "
        "non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should "
        "only be used for arguments that can't be or contain JAX tracers, e.g. function-valued "
        "arguments. In particular, array-valued arguments should typically not be indicated as "
        "nondiff_argnums.")


def _flat_jvp(rule, nondiff, in_tree, out_store, primal_name, symbolic_zeros):
  """The user's rule over flat primals and tangents, with JAX's checks on what it returns
  (against the primal function's outputs when that has run; else its tree is the result's)."""
  rule_name = _fun_name(rule)

  def flat_jvp(primals, tangents):
    if symbolic_zeros:
      tangents = [SymbolicZero(t.aval) if type(t) is Zero else t for t in tangents]
    py_primals = tree_util.tree_unflatten(in_tree, primals)
    py_tangents = tree_util.tree_unflatten(in_tree, tangents)
    pair = rule(*nondiff, py_primals, py_tangents)
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
      raise TypeError(f"Custom JVP rule {rule_name} for function {primal_name} must produce a "
                      "pair (list or tuple of length two) representing primal and tangent "
                      f"outputs, but got {pair}.")
    outs, tree = tree_util.tree_flatten(pair[0])
    t_outs, t_tree = tree_util.tree_flatten(pair[1], is_leaf=lambda x: type(x) is SymbolicZero)
    if tree != t_tree:
      raise TypeError(f"Custom JVP rule {rule_name} for function {primal_name} must produce "
                      "primal and tangent outputs with equal container (pytree) structures, but "
                      f"got {tree} and {t_tree} respectively.")
    # checked, not converted: under an eager `jax.jvp` the rule's Python floats come out as
    # they are, as in JAX (`_apply_jvp_rule` makes them Arrays for every other caller)
    outs = [_checked_arg(o) for o in outs]
    _check_primal_outs(rule_name, primal_name, tree, outs, out_store)
    t_outs = [t if type(t) is SymbolicZero else _checked_arg(t) for t in t_outs]
    _check_tangents(outs, t_outs)
    return outs, t_outs
  flat_jvp.__name__ = rule_name
  return flat_jvp


def _check_primal_outs(rule_name, primal_name, tree, outs, out_store, kind="JVP"):
  """JAX's checks of a rule's primal outputs against the primal function's, when it ran."""
  out_store.setdefault("tree", tree)
  if "avals" not in out_store:
    return
  out_tree, out_avals = out_store["tree"], out_store["avals"]
  avals = [core.get_aval(o) for o in outs]
  what = ("pair (list or tuple of length two) where the first element represents the primal "
          f"output (equal in value to the output of the custom_jvp-decorated function "
          f"{primal_name}, ") if kind == "JVP" else (
          "pair (list or tuple of length two) where the first element represents the primal "
          f"output (equal to the output of the custom_vjp-decorated function {primal_name}) "
          "and the second element represents residuals (i.e. values stored from the forward "
          "pass for use on the backward pass), but ")
  deco = "custom_jvp" if kind == "JVP" else "custom_vjp"
  rule_kind = "JVP rule" if kind == "JVP" else "VJP fwd rule"
  out_word = "JVP rule output's" if kind == "JVP" else "fwd rule output's"
  if tree != out_tree:
    raise TypeError(
        f"Custom {rule_kind} {rule_name} for function {primal_name} must produce a {what}"
        + ("and in particular of the same container/pytree structure), but " if kind == "JVP"
           else "") + f"instead the {out_word} first element had container/pytree structure:\n"
        f"    {_tree_str(tree, avals)}\nwhile the {deco}-decorated function {primal_name} had "
        f"output container/pytree structure:\n    {_tree_str(out_tree, out_avals)}.")
  if any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(avals, out_avals)):
    raise TypeError(
        f"Custom {rule_kind} {rule_name} for function {primal_name} must produce a {what}"
        + ("and in particular with leaves of the same shape/dtype), but " if kind == "JVP"
           else "") + f"instead the {out_word} first element had shapes/dtypes of:\n"
        f"    {_tree_str(tree, avals)}\nwhile the {deco}-decorated function {primal_name} had "
        f"output shapes/dtypes of:\n    {_tree_str(out_tree, out_avals)}")


# --- custom_vjp --------------------------------------------------------------------------------

custom_vjp_call_p = core.Primitive("custom_vjp_call")
pp.param_rules[custom_vjp_call_p] = pp.ParamRule(
    first=("name",), only=("bwd", "call_jaxpr", "fwd", "num_consts", "symbolic_zeros"),
    drop={"num_consts": pp.is_zero}, show={"bwd": pp.fun_name, "fwd": pp.fun_name})
custom_vjp_call_p.multiple_results = True
custom_vjp_call_p.def_impl(_run_jaxpr)
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **params: call_jaxpr.out_avals)
passes.inlinable_call_primitives.add(custom_vjp_call_p)
passes.inline_jaxpr_param[custom_vjp_call_p] = "call_jaxpr"
hlo.register_call(custom_vjp_call_p, "call_jaxpr")
pp.unnamed_calls.add(custom_vjp_call_p)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, symbolic_zeros,
                         name):
  if any(type(t) is not Zero for t in tangents[:num_consts]):
    raise ad.CustomVJPException(name)
  return _apply_fwd_rule(fwd, bwd, primals[num_consts:], tangents[num_consts:], symbolic_zeros)


_NO_JVP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


def _apply_fwd_rule(fwd, bwd, args, t_args, symbolic_zeros):
  """JVP and linearization alike: fwd runs (on the parent) for the primal outputs and
  residuals; the tangent side is one `custom_lin` eqn whose transpose calls the bwd rule. In
  forward mode nothing transposes it: evaluating it (eager) or compiling it (jit) raises JAX's
  TypeError, so fwd has run first, and under jit nothing of the program runs."""
  nonzero = tuple(type(t) is not Zero for t in t_args)
  outs, res = fwd(list(args), nonzero)
  out_avals = tuple(ad.tangent_aval(core.get_aval(o)) for o in outs)
  t_outs = custom_lin_p.bind(*res, *[t for t in t_args if type(t) is not Zero],
                             num_res=len(res), bwd=bwd, out_avals=out_avals,
                             in_avals=tuple(ad.tangent_aval(core.get_aval(a)) for a in args),
                             nonzero=nonzero, symbolic_zeros=symbolic_zeros)
  return outs, t_outs


ad.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_vjp_call_batcher(axis_data, vals, dims, *, call_jaxpr, fwd, bwd, num_consts,
                             symbolic_zeros, name):
  params = {"num_consts": num_consts, "symbolic_zeros": symbolic_zeros, "name": name}
  if all(d is None for d in dims):
    return custom_vjp_call_p.bind(*vals, call_jaxpr=call_jaxpr, fwd=fwd, bwd=bwd, **params), \
        [None] * len(call_jaxpr.out_avals)
  fwd_b, bwd_b = _batched_vjp_rules(fwd, bwd, axis_data, vals[num_consts:],
                                    list(dims[num_consts:]))
  outs = custom_vjp_call_p.bind(*vals, call_jaxpr=_batched_call(call_jaxpr, axis_data, vals,
                                                                dims),
                                fwd=fwd_b, bwd=bwd_b, **params)
  return outs, [0] * len(outs)


def _batched_vjp_rules(fwd, bwd, axis_data, args, arg_dims, tag=None):
  """fwd and bwd over batched values: outputs and cotangents batched at axis 0, residuals at
  axis 0 or unbatched as fwd left them (so bwd sees them as JAX's does), argument cotangents
  brought back to their arguments' batch dims."""
  size = axis_data.size
  res_dims = []

  def fwd_b(args, nonzero):
    n_out = []

    def flat(*xs):
      outs, res = fwd(list(xs), nonzero)
      n_out.append(len(outs))
      return list(outs) + list(res)
    vals, dims_out = batching.batch_flat(flat, axis_data, args, arg_dims, tag)
    n = n_out[0]
    outs = [batching.bdim_at_front(o, d, size) for o, d in zip(vals[:n], dims_out[:n])]
    res = [o if d is batching.not_mapped else batching.moveaxis(o, d, 0)
           for o, d in zip(vals[n:], dims_out[n:])]
    res_dims[:] = [None if d is batching.not_mapped else 0 for d in dims_out[n:]]
    return outs, res
  fwd_b.__name__ = _fun_name(fwd)

  def bwd_b(res, cts):
    mask = []

    def flat(*xs):
      outs = bwd(list(xs[:len(res)]), list(xs[len(res):]))
      mask.extend(type(o) is not Zero for o in outs)
      return [o for o in outs if type(o) is not Zero]
    nz_cts = [c for c in cts if type(c) is not Zero]
    ct_mask = [type(c) is not Zero for c in cts]
    flat_in = list(res) + nz_cts
    inner = lambda *xs: flat(*xs[:len(res)], *_refill(xs[len(res):], ct_mask, cts))
    outs, dims_out = batching.batch_flat(inner, axis_data, flat_in,
                                         list(res_dims) + [0] * len(nz_cts), tag)
    outs = iter([batching.bdim_at_front(o, d, size) for o, d in zip(outs, dims_out)])
    return [_unbatch_ct(next(outs), d) if m else Zero(a)
            for m, d, a in zip(mask, arg_dims, _in_ct_avals(args, arg_dims))]
  bwd_b.__name__ = _fun_name(bwd)
  return fwd_b, bwd_b


def _refill(nonzero_vals, mask, originals):
  it = iter(nonzero_vals)
  return [next(it) if m else o for m, o in zip(mask, originals)]


def _unbatch_ct(ct, dim):
  """A cotangent batched at axis 0 brought to its argument's batch dim; summed if unbatched."""
  if dim is None:
    return pk.roles.reduce_sum.bind(ct, axes=(0,), out_sharding=None)
  return batching.moveaxis(ct, 0, dim)


def _in_ct_avals(vals, dims):
  return [ad.tangent_aval(core.get_aval(v)) for v in vals]


batching.axis_primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batcher


# `custom_lin`: the linear stand-in for a custom_vjp function on the tangent side.
custom_lin_p = core.Primitive("custom_lin")
custom_lin_p.multiple_results = True
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **params: list(out_avals))


ad.python_cotangent_primitives.add(custom_lin_p)


def _custom_lin_impl(*args, **params):
  raise TypeError(_NO_JVP)


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, in_avals, nonzero,
                          symbolic_zeros):
  res = args[:num_res]
  if not symbolic_zeros:
    cts = [ad.instantiate_zeros(c) for c in cts]
  arg_cts = bwd(list(res), _staged(cts))
  nz_cts = [ct for ct, nz in zip(arg_cts, nonzero) if nz]
  return [None] * num_res + nz_cts


def _staged(vals) -> list:
  """Under a staging trace (jit), concrete values become its tracers, as every value a user
  function sees there is in JAX (grad's seed cotangent 1.0 among them)."""
  trace = core.current_trace()
  while trace is not core.eval_trace and type(trace) is not pe.DynamicJaxprTrace:
    trace = trace.parent  # the traces between pass binds without their tracers down
  if trace is core.eval_trace:
    return list(vals)
  return [v if isinstance(v, (core.Tracer, Zero, SymbolicZero))
          else pe.DynamicJaxprTracer(trace, core.get_aval(v), trace.to_atom(v)) for v in vals]


def _custom_lin_lowering(**params):
  """Compiling a `custom_lin` eqn (one forward mode left untransposed) fails like JAX's missing
  lowering: at compile time, before the program runs."""
  raise TypeError(_NO_JVP)


def _custom_lin_batcher(vals, dims, **params):
  raise TypeError(_NO_JVP)  # only forward mode binds it on a batch trace (jacfwd, vmap(jvp))


custom_lin_p.def_impl(_custom_lin_impl)
batching.primitive_batchers[custom_lin_p] = _custom_lin_batcher
_NUMPY_TABLES.templates[custom_lin_p] = _custom_lin_lowering
hlo.register(custom_lin_p, lambda ctx, *args, **params: _custom_lin_lowering())  # (as NumPy's)
ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose
# A custom_vjp's bwd runs even when every output cotangent is zero, as in JAX's backward pass
# (which skips no linear eqn): a bwd may return values that are not linear in its cotangents
# (flax's fp8 `in_q` passes its updated scale and amax history out as "gradients").
custom_lin_p.transpose_zero_cts = True


class custom_vjp(_CustomFunction):
  """A function with a custom VJP: `f = custom_vjp(fun)`, then `f.defvjp(fwd, bwd)`."""

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    super().__init__(fun, nondiff_argnums)
    self.fwd = None
    self.bwd = None

  def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
             optimize_remat: bool = False) -> None:
    """Sets `fwd(*args) -> (out, residuals)` and `bwd(residuals, ct_out) -> ct_args`."""
    self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
    args = _resolve_args(self.fun, args, kwargs)
    if core.current_trace() is core.eval_trace:
      _check_eager_leaves(args, self.nondiff_argnums, _custom_vjp_leaf_error)
      return self.fun(*args)
    for i in self.nondiff_argnums:
      _check_for_tracers(args[i])
    nondiff, flat, in_tree, fun, out_store = self._flat_primal(args)
    in_avals = [ad.tangent_aval(core.get_aval(x)) for x in flat]
    res_tree = []
    flat_fwd = _flat_fwd(self.fwd, self.nondiff_argnums, nondiff, in_tree, out_store, name,
                         self.symbolic_zeros, res_tree)
    flat_bwd = _flat_bwd(self.bwd, nondiff, in_tree, in_avals, res_tree)
    outs = _CustomCall("vjp", fun, (flat_fwd, flat_bwd), self.symbolic_zeros, name).bind(flat)
    return tree_util.tree_unflatten(out_store["tree"], outs)


def _flat_fwd(fwd, nondiff_argnums, nondiff, in_tree, out_store, primal_name, symbolic_zeros,
              res_tree_box):
  fwd_name = _fun_name(fwd)

  def flat_fwd(args, nonzero):
    if symbolic_zeros:
      args = [CustomVJPPrimal(a, bool(nz)) for a, nz in zip(args, nonzero)]
    py_args = tree_util.tree_unflatten(in_tree, args)
    pair = fwd(*_merge_nondiff(nondiff_argnums, nondiff, py_args))
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
      raise TypeError(f"Custom VJP fwd rule {fwd_name} for function {primal_name} must produce "
                      "a pair (list or tuple of length two) where the first element represents "
                      "the primal output (equal to those of the custom_vjp-decorated function "
                      f"{primal_name}) and the second element represents residuals (i.e. "
                      "values stored from the forward pass for use on the backward pass), but "
                      f"instead of a pair the fwd rule {fwd_name} produced {pair}.")
    outs, tree = tree_util.tree_flatten(pair[0])
    outs = [_as_arg(o) for o in outs]
    _check_primal_outs(fwd_name, primal_name, tree, outs, out_store, kind="VJP")
    res, res_tree = tree_util.tree_flatten(pair[1])
    # Python bools among the residuals reach bwd as Python bools, as in JAX (equinox's
    # filter_custom_vjp keeps its `perturbed` flags there and partitions on them): they are
    # not operands of the call.
    static_bools = {i: r for i, r in enumerate(res) if type(r) is bool}
    res_tree_box[:] = [res_tree, tree, static_bools]
    return outs, [_as_arg(r) for i, r in enumerate(res) if i not in static_bools]
  flat_fwd.__name__ = fwd_name
  return flat_fwd


def _flat_bwd(bwd, nondiff, in_tree, in_avals, res_tree_box):
  def flat_bwd(res, cts):
    res_tree, out_tree, static_bools = res_tree_box
    operands = iter(res)
    res = [static_bools[i] if i in static_bools else next(operands)
           for i in range(res_tree.num_leaves)]
    py_res = tree_util.tree_unflatten(res_tree, res)
    cts = [SymbolicZero(c.aval) if type(c) is Zero else c for c in cts]
    py_cts = tree_util.tree_unflatten(out_tree, cts)
    py_cts_in = bwd(*nondiff, py_res, py_cts)
    return _flatten_bwd_output(py_cts_in, in_tree, in_avals)
  flat_bwd.__name__ = _fun_name(bwd)
  return flat_bwd


def _flatten_bwd_output(py_cts_in, in_tree, in_avals) -> list:
  """The bwd rule's output as one cotangent (or Zero) per flat argument, checked like JAX."""
  n_args = len(tree_util.treedef_children(in_tree))
  if isinstance(py_cts_in, list) and len(py_cts_in) == n_args:
    py_cts_in = tuple(py_cts_in)
  dummy = tree_util.tree_unflatten(in_tree, [object()] * in_tree.num_leaves)
  flat = []

  def collect(ct, d):
    count = len(tree_util.tree_leaves(d))
    flat.extend([None] * count if ct is None else [ct] * count)
    return ct
  try:
    if not isinstance(py_cts_in, tuple):
      raise ValueError  # noqa: TRY004 - the same error as a structure mismatch below
    tree_util.tree_map(collect, py_cts_in, dummy, is_leaf=lambda x: x is None)
  except ValueError:
    tree2 = tree_util.tree_structure(py_cts_in)
    raise TypeError("Custom VJP bwd rule must produce an output with the same container "
                    "(pytree) structure as the args tuple of the primal function, and in "
                    "particular must produce a tuple of length equal to the number of arguments "
                    f"to the primal function, but got bwd output structure {tree2} for primal "
                    f"input structure {in_tree}.") from None
  out = []
  for ct, aval in zip(flat, in_avals):
    if ct is None or type(ct) is SymbolicZero or aval.dtype == dtypes.float0:
      out.append(Zero(aval))
      continue
    got = core.get_aval(_as_arg(ct))
    if got.shape != aval.shape or got.dtype != aval.dtype:
      raise ValueError("Custom VJP bwd rule must produce an output with the same type as the "
                       "args tuple of the primal function, but the bwd rule produced an output "
                       f"of type {_long(got)} corresponding to an input of type {_long(aval)}")
    out.append(ct if type(ct) in (float, int, complex) else _as_arg(ct))  # JAX keeps a float
  return out



# --- when the user's functions run: a call dispatched on the current trace ---------------------
#
# As in JAX, a custom function is not traced to a jaxpr up front. Each trace decides what runs:
# the eval trace runs the primal function; JVP and linearize traces run only the rule (jvp, or
# fwd then bwd at transpose time) on the trace below, so with concrete primals the rule sees
# concrete values; the batch trace batches the function and the rules and passes the call
# down; staging traces (jit and others) trace the primal function and keep the rules as params.


class _CustomCall:
  """One call of a custom function on flat arguments; `rules` is (jvp,) or (fwd, bwd)."""
  __slots__ = ("fun", "kind", "name", "rules", "symbolic_zeros")

  def __init__(self, kind, fun, rules, symbolic_zeros, name):
    self.kind, self.fun, self.rules = kind, fun, rules
    self.symbolic_zeros, self.name = symbolic_zeros, name

  def bind(self, args):
    trace = core.current_trace()
    handler = _custom_call_handlers.get(type(trace), _stage_custom_call)
    return handler(trace, self, list(args))

  def bind_on(self, trace, args):
    with core.set_current_trace(trace):
      return self.bind(args)

  def differentiate(self, primals, tangents, as_arrays=True):
    """(primal outs, tangent outs) from the rule, on the current trace (a JVP rule's Python
    values kept as they are without `as_arrays`)."""
    if self.kind == "jvp":
      return _apply_jvp_rule(self.rules[0], primals, tangents, self.symbolic_zeros, as_arrays)
    return _apply_fwd_rule(*self.rules, primals, tangents, self.symbolic_zeros)


def _eval_custom_call(trace, call, args):
  return call.fun(*args)


def _stage_custom_call(trace, call, args):
  """Traces the primal function to a jaxpr and binds the call primitive (jit, checkify...)."""
  closed = pe.trace_to_jaxpr(call.fun, [core.get_aval(a) for a in args])
  # As JAX's: every const becomes an operand (a concrete one a constvar of the enclosing jaxpr)
  closed, lifted = pe.convert_constvars_to_invars(closed, every_const=True)
  params = {"call_jaxpr": closed, "num_consts": len(lifted),
            "symbolic_zeros": call.symbolic_zeros, "name": call.name}
  if call.kind == "jvp":
    return custom_jvp_call_p.bind(*lifted, *args, jvp=call.rules[0], **params)
  return custom_vjp_call_p.bind(*lifted, *args, fwd=call.rules[0], bwd=call.rules[1], **params)


def _jvp_custom_call(trace, call, args):
  primals, tangents = ad._split_tracers(trace, ad.JVPTracer, args)
  if tangents is None:
    return call.bind_on(trace.parent, primals)
  with core.set_current_trace(trace.parent):  # JVPTracers hold Python values as they are
    outs, t_outs = call.differentiate(primals, tangents, as_arrays=False)
  return [ad._maybe_tracer(trace, ad.JVPTracer, o, t) for o, t in zip(outs, t_outs)]


def _linearize_custom_call(trace, call, args):
  primals, tangents = ad._split_tracers(trace, lin.LinearizeTracer, args)
  if tangents is None:
    return call.bind_on(trace.parent, primals)
  with core.set_current_trace(trace.rule_trace):
    outs, t_outs = call.differentiate(primals, tangents)
  return [trace._wrap(o, t) for o, t in zip(outs, t_outs)]


def _rule_trace_custom_call(trace, call, args):
  """Inside a linearize rule: calls on primals go below; a call reading a tangent is staged
  into the linear jaxpr."""
  tt = trace.tangent_trace
  if any(type(a) is pe.JaxprTracer and a._trace is tt for a in args):
    return _stage_custom_call(trace, call, args)
  return call.bind_on(trace.parent, args)


def _batch_custom_call(trace, call, args):
  vals, dims = zip(*[trace.to_batch_info(a) for a in args]) if args else ((), ())
  if all(d is batching.not_mapped for d in dims):
    return call.bind_on(trace.parent, list(vals))
  axis_data, dims = trace.axis_data, list(dims)

  def fun_b(*xs):
    outs, out_dims = batching.batch_flat(call.fun, axis_data, xs, dims, tag=trace.tag)
    return [batching.bdim_at_front(o, d, axis_data.size) for o, d in zip(outs, out_dims)]
  fun_b.__name__ = _fun_name(call.fun)
  if call.kind == "jvp":
    rules = (_batched_fn(call.rules[0], axis_data, dims + dims, len(dims), trace.tag),)
  else:
    rules = _batched_vjp_rules(*call.rules, axis_data, vals, dims, trace.tag)
  outs = _CustomCall(call.kind, fun_b, rules, call.symbolic_zeros, call.name).bind_on(
      trace.parent, list(vals))
  return [trace.wrap(o, 0) for o in outs]


_custom_call_handlers = {
    core.EvalTrace: _eval_custom_call,
    ad.JVPTrace: _jvp_custom_call,
    lin.LinearizeTrace: _linearize_custom_call,
    lin._PartialEvalTrace: _rule_trace_custom_call,
    batching.BatchTrace: _batch_custom_call,
}


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(custom_jvp_call_p, pk.CALL, jaxpr_param="call_jaxpr")
pk.register(custom_vjp_call_p, pk.CALL, jaxpr_param="call_jaxpr", role="custom_vjp_call")
