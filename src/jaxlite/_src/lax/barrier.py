"""`optimization_barrier_p`: an identity on a tuple of arrays that XLA may not reorder or fuse
computation across; here every rule passes values through, keeping the eqn in the jaxpr."""
from __future__ import annotations

from jaxlite._src.base import core, tree_util
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.compiler.xla import lowering as hlo

optimization_barrier_p = core.Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True
optimization_barrier_p.def_impl(lambda *args: list(args))
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
hlo.register(optimization_barrier_p, lambda ctx, *args: ctx.op(
    "optimization_barrier", args, [a.aval for a in args]) if args else [])


def _barrier_jvp(primals, tangents):
  # Tangents get their own barrier, as in JAX, so the rule stays linear in them.
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  return optimization_barrier_p.bind(*primals), optimization_barrier_p.bind(*tangents)


def _barrier_transpose(cts, *args):
  cts = [ad.instantiate_zeros(c) for c in cts]
  return optimization_barrier_p.bind(*cts)


def _barrier_batch(vals, dims):
  return optimization_barrier_p.bind(*vals), list(dims)


ad.jvp_rules[optimization_barrier_p] = _barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = _barrier_transpose
batching.primitive_batchers[optimization_barrier_p] = _barrier_batch


def optimization_barrier(operand, /):
  """Returns `operand` (any pytree of arrays) through one `optimization_barrier` eqn."""
  leaves, tree = tree_util.tree_flatten(operand)
  outs = optimization_barrier_p.bind(*[asarg(x) for x in leaves])
  return tree_util.tree_unflatten(tree, outs)
