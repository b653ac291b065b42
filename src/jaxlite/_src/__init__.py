"""jaxlite's private implementation. Submodules load on first attribute access too, since JAX
libraries read `jax._src.<module>.<name>` without importing that module themselves (chex).

JAX-private modules that JAX's own tutorials import (`jax._src.lax.lax`, `jax._src.util`,
`jax._src.test_util`, `jax._src.lib.mlir`...) are thin aliases over jaxlite's modules kept in
the `jax` shim directory (`_jax_shim/jax/_src`), which is part of this package's path: with
jaxlite installed as `jax`, `jax._src.X` is `jaxlite._src.X`, found here or there."""
import importlib as _importlib
import os as _os

__path__.append(_os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))),
                              "_jax_shim", "jax", "_src"))


def __getattr__(name):
  if not name.startswith("__"):
    try:
      return _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
      if e.name != f"{__name__}.{name}":
        raise
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
