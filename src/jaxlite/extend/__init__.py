"""`jax.extend`: the interfaces for libraries that extend JAX (new primitives, jaxpr access).

Submodules load on first use, as in JAX: `jax.extend.core`, `linear_util`, `source_info_util`,
`random`, `mlir`.
"""
import importlib

_SUBMODULES = {"core", "linear_util", "source_info_util", "random", "mlir", "backend"}


def __getattr__(name):
  if name in _SUBMODULES:
    return importlib.import_module(f"jaxlite.extend.{name}")
  raise AttributeError(f"module 'jaxlite.extend' has no attribute {name!r}")
