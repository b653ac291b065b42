"""jaxlite's private implementation. Submodules load on first attribute access too, since JAX
libraries read `jax._src.<module>.<name>` without importing that module themselves (chex)."""
import importlib as _importlib


def __getattr__(name):
  if not name.startswith("__"):
    try:
      return _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
      if e.name != f"{__name__}.{name}":
        raise
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
