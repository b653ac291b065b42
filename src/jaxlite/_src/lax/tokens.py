"""Tokens and DCE sinks: `create_token`/`after_all` (values of type `Tok` that order effects)
and `dce_sink` (keeps a value alive through dead-code elimination)."""
from __future__ import annotations

from jaxlite._src.base import core, tree_util
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax.elementwise_functions import asarg

abstract_token = core.AbstractToken()


class Token:
  """A run-time token (`jax.extend.core.Token`): carries no data, only an ordering."""
  __slots__ = ("_buf",)
  aval = abstract_token

  def __init__(self, buf=None):
    self._buf = buf

  def block_until_ready(self):
    return self


class _TokenPrimitive(core.Primitive):
  """Its eager results are Tokens, not arrays: at the top level `bind` runs the impl."""

  def bind(self, *args, **params):
    if core.current_trace() is core.eval_trace:
      self.abstract_eval(*[core.get_aval(a) for a in args], **params)
      return self.impl(*args, **params)
    return super().bind(*args, **params)


create_token_p = _TokenPrimitive("create_token")
create_token_p.def_impl(lambda *_: Token())
create_token_p.def_abstract_eval(lambda *_: abstract_token)
batching.primitive_batchers[create_token_p] = lambda vals, dims: (create_token_p.bind(*vals),
                                                                  batching.not_mapped)
ad.defjvp_zero(create_token_p)


def create_token(*operands):
  """A fresh token (its operands, accepted for compatibility, are ignored as in JAX)."""
  return create_token_p.bind(*operands)


def _after_all_abstract_eval(*avals):
  if any(a is not abstract_token for a in avals):
    raise TypeError("Arguments to after_all must be tokens")
  return abstract_token


after_all_p = _TokenPrimitive("after_all")
after_all_p.def_impl(lambda *_: Token())
after_all_p.def_abstract_eval(_after_all_abstract_eval)


def after_all(*operands):
  """A token that comes after every token of `operands`."""
  return after_all_p.bind(*operands)


# Tokens carry no batch dimension: a vmapped token is the token itself.
batching.primitive_batchers[after_all_p] = lambda vals, dims: (after_all_p.bind(*vals),
                                                               batching.not_mapped)
ad.defjvp_zero(after_all_p)

# dce_sink: no outputs, never removed, so its operand stays alive.
dce_sink_p = core.Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_impl(lambda x, **_: [])
dce_sink_p.def_abstract_eval(lambda x, **_: [])
passes.effectful_primitives.add(dce_sink_p)


def _dce_sink_jvp(primals, tangents, **params):
  return dce_sink_p.bind(*primals, **params), []


def _dce_sink_batch(vals, dims, **params):
  return dce_sink_p.bind(*vals, **params), []


ad.jvp_rules[dce_sink_p] = _dce_sink_jvp
ad.primitive_transposes[dce_sink_p] = lambda cts, x, **params: [None]
batching.primitive_batchers[dce_sink_p] = _dce_sink_batch


# StableHLO: a token is `stablehlo.after_all` of its predecessors (none: a fresh one); dce_sink
# keeps its operand alive only in jaxprs, XLA's dead-code elimination is not ours to stop.
def _after_all_hlo(ctx, *tokens):
  return ctx.op("stablehlo.after_all", list(tokens), abstract_token)


xla.register(create_token_p, lambda ctx, *_: _after_all_hlo(ctx))
xla.register(after_all_p, _after_all_hlo)
xla.register(dce_sink_p, lambda ctx, x, **_: [])


def dce_sink(val, *, prevent_mlir_dce: bool = False):
  """Marks every leaf of `val` as used (one `dce_sink` eqn each); returns None."""
  for leaf in tree_util.tree_leaves(val):
    dce_sink_p.bind(asarg(leaf), prevent_mlir_dce=prevent_mlir_dce)
