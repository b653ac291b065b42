"""`jaxlite.numpy`: NumPy's API on jaxlite arrays (import as `jnp`)."""
from jaxlite._src.numpy import scalar_types as _scalar_types
from jaxlite._src.numpy.namespace import *  # noqa: F401,F403
from jaxlite._src.numpy.namespace import LAZY_SUBMODULES as _LAZY_SUBMODULES
from jaxlite._src.numpy.namespace import __all__ as _eager_names

__all__ = list(_eager_names) + list(_LAZY_SUBMODULES)


def __getattr__(name):
  if name in _scalar_types.LAZY_SCALAR_NAMES:
    return _scalar_types.lazy_scalar_type(name)
  if name in _LAZY_SUBMODULES:  # importing a submodule sets the attribute
    return __import__("importlib").import_module(f"{__name__}.{name}")
  raise AttributeError(f"module 'jaxlite.numpy' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_LAZY_SUBMODULES))
