"""`jax.interpreters.mlir`: lowering registration, accepted and ignored.

jaxlite never lowers to MLIR/StableHLO: a primitive runs under jit through its `impl` (the
NumPy backend calls it), so a library's `register_lowering(p, rule)` changes nothing it depends
on. The rules are kept in `_lowerings` (for introspection) and never called. `lower_fun` returns
the function itself for the same reason.
"""
from __future__ import annotations

_lowerings: dict = {}


def register_lowering(prim, rule, platform: str | None = None) -> None:
  _lowerings[(prim, platform)] = rule


def lower_fun(fun, multiple_results: bool = True):
  """JAX builds a lowering rule from `fun`; jaxlite runs impls, so `fun` is all there is."""
  return fun


class LoweringRuleContext:
  """Exists so that type annotations in libraries resolve; jaxlite never constructs one."""

