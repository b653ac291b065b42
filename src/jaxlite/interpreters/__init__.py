"""`jax.interpreters`: the rule tables of jaxlite's interpreters, for libraries adding primitives.

`ad`, `batching`, `partial_eval` and `mlir` load on first use.
"""
import importlib

_SUBMODULES = {"ad", "batching", "partial_eval", "mlir", "xla", "pxla"}


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"jaxlite.interpreters.{name}")
  raise AttributeError(f"module 'jaxlite.interpreters' has no attribute {name!r}")
