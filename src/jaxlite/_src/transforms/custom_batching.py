"""`jax.custom_batching`: functions with a user-supplied vmap rule (`custom_vmap`), and
`sequential_vmap`, whose rule maps the function over the batch one example at a time.

A call stages as one `custom_vmap_call` eqn holding the function's jaxpr and the flat rule;
its batching rule calls the user's rule instead of batching the body.
"""
from __future__ import annotations

from collections.abc import Callable

from jaxlite._src.base import core, tree_util
from jaxlite._src.compiler import backend
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.transforms.custom_derivatives import (
    _as_arg,
    _fun_name,
    _resolve_args,
    _trace_call,
)
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.interpreters import partial_eval as pe

custom_vmap_call_p = core.Primitive("custom_vmap_call")
custom_vmap_call_p.multiple_results = True
custom_vmap_call_p.def_impl(
    lambda *args, call_jaxpr, **params: backend.compile_jaxpr(call_jaxpr)(*args))
custom_vmap_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **params: call_jaxpr.out_avals)
# StableHLO: the function itself inlined (the vmap rule applies only under vmap, before).
xla.register(custom_vmap_call_p,
             lambda ctx, *args, call_jaxpr, **_: ctx.lower_jaxpr(call_jaxpr, None, args))


def _custom_vmap_batcher(axis_data, vals, dims, *, call_jaxpr, rule, num_consts, name):
  params = {"call_jaxpr": call_jaxpr, "rule": rule, "num_consts": num_consts, "name": name}
  n_out = len(call_jaxpr.out_avals)
  if all(d is batching.not_mapped for d in dims):
    return custom_vmap_call_p.bind(*vals, **params), [batching.not_mapped] * n_out
  if any(d is not batching.not_mapped for d in dims[:num_consts]):
    raise NotImplementedError(
        f"custom_vmap function {name} closes over a value that is being vmapped; pass it as "
        "an argument instead")
  args = [v if d is batching.not_mapped else batching.bdim_at_front(v, d, axis_data.size)
          for v, d in zip(vals[num_consts:], dims[num_consts:])]
  in_batched = [d is not batching.not_mapped for d in dims[num_consts:]]
  outs, out_batched = rule(axis_data.size, in_batched, args)
  return outs, [0 if b else batching.not_mapped for b in out_batched]


batching.axis_primitive_batchers[custom_vmap_call_p] = _custom_vmap_batcher


def _custom_vmap_jvp(primals, tangents, *, call_jaxpr, rule, num_consts, name):
  """A custom_vmap of the JVP: its body is the body's JVP and its vmap rule the rule's JVP,
  so vmap of jvp still goes through the user's rule (as in JAX)."""
  from jaxlite._src.transforms.ad_api import jvp
  if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
    raise NotImplementedError(
        f"custom_vmap function {name} closes over a value that is being differentiated; pass "
        "it as an argument instead")
  consts, args = list(primals[:num_consts]), list(primals[num_consts:])
  t_args = [ad.instantiate_zeros(t) for t in tangents[num_consts:]]
  n = len(args)
  body = core.jaxpr_as_fun(call_jaxpr)

  def jvp_body(*xs):
    outs, t_outs = jvp(lambda *a: body(*consts, *a), list(xs[:n]), list(xs[n:]))
    return list(outs) + list(t_outs)
  closed = pe.trace_to_jaxpr(jvp_body, [core.get_aval(x) for x in args + t_args])
  closed, lifted = pe.convert_constvars_to_invars(closed)
  outs = custom_vmap_call_p.bind(*lifted, *args, *t_args, call_jaxpr=closed,
                                 rule=_jvp_of_rule(rule, n), num_consts=len(lifted),
                                 name=f"jvp({name})")
  half = len(outs) // 2
  return outs[:half], outs[half:]


def _jvp_of_rule(rule, n):
  """The flat vmap rule of the JVP body: the JVP of `rule`, primals and tangents batched alike."""
  def jvp_rule(axis_size, in_batched, args):
    from jaxlite._src.transforms.ad_api import jvp
    flags = [p or t for p, t in zip(in_batched[:n], in_batched[n:])]
    args = [batching.broadcast(x, axis_size, 0) if want and not have else x
            for x, want, have in zip(args, flags + flags, in_batched)]
    store = {}

    def primal_rule(*xs):
      outs, store["flags"] = rule(axis_size, flags, list(xs))
      return outs
    outs, t_outs = jvp(primal_rule, args[:n], args[n:])
    return list(outs) + list(t_outs), list(store["flags"]) * 2
  return jvp_rule


ad.jvp_rules[custom_vmap_call_p] = _custom_vmap_jvp


def _flat_rule(rule, name, in_tree, out_tree, out_avals):
  """rule(axis_size, in_batched tree, *args tree) as rule(axis_size, [bool], [arg])."""
  def flat(axis_size, in_batched, args):
    batched_tree = tree_util.tree_unflatten(in_tree, in_batched)
    out, out_batched = rule(axis_size, list(batched_tree) if isinstance(batched_tree, tuple)
                            else batched_tree, *tree_util.tree_unflatten(in_tree, args))
    outs, got_tree = tree_util.tree_flatten(out)
    flags, flags_tree = tree_util.tree_flatten(out_batched)
    if got_tree != out_tree:
      raise ValueError(f"structure of output value and output batching specification returned "
                       f"by custom vmap rule ({name}) do not match the original function's "
                       f"output: expected {out_tree}, got {got_tree}")
    if flags_tree != out_tree or not all(isinstance(f, bool) for f in flags):
      raise ValueError(f"structure of output value and output batching specification returned "
                       f"by custom vmap rule ({name}) do not match: value {got_tree}, batching "
                       f"specification {flags_tree}")
    return [_as_arg(o) for o in outs], flags
  return flat


class custom_vmap:
  """Wraps `fun` so that vmap uses a rule set with `def_vmap` instead of batching its body.

  The rule is `rule(axis_size, in_batched, *args) -> (out, out_batched)`: `in_batched` mirrors
  the argument tuple with a bool per leaf (batched leaves carry the batch axis first), and
  `out_batched` mirrors `out` likewise."""

  def __init__(self, fun: Callable):
    self.fun = fun
    self.vmap_rule = None
    self.__name__ = _fun_name(fun)
    self.__doc__ = getattr(fun, "__doc__", None)
    self.__wrapped__ = fun

  def def_vmap(self, vmap_rule: Callable) -> Callable:
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    if self.vmap_rule is None:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} using "
                           "def_vmap.")
    args = _resolve_args(self.fun, args, kwargs)
    if core.current_trace() is core.eval_trace:
      return self.fun(*args)
    flat, in_tree = tree_util.tree_flatten(args)
    flat = [_as_arg(x) for x in flat]
    closed, lifted, out_tree = _trace_call(self.fun, flat, in_tree)
    rule = _flat_rule(self.vmap_rule, name, in_tree, out_tree, closed.out_avals)
    outs = custom_vmap_call_p.bind(*lifted, *flat, call_jaxpr=closed, rule=rule,
                                   num_consts=len(lifted), name=name)
    return tree_util.tree_unflatten(out_tree, outs)


def sequential_vmap(f: Callable) -> custom_vmap:
  """`f` batched by looping over the examples (a `lax.map`) instead of by batching its body."""
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    from jaxlite._src.lax.control_flow import loops as lax
    leaves, treedef = tree_util.tree_flatten(args)
    flags = tree_util.tree_leaves(in_batched)
    batched = [x for x, b in zip(leaves, flags) if b]

    def one(xs):
      it = iter(xs)
      merged = [next(it) if b else x for x, b in zip(leaves, flags)]
      return f.fun(*tree_util.tree_unflatten(treedef, merged))
    out = lax.map(one, batched)
    return out, tree_util.tree_map(lambda _: True, out)
  return f
