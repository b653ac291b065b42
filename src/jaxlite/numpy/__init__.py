"""`jaxlite.numpy`: NumPy's API on jaxlite arrays (import as `jnp`)."""
import sys as _sys

from jaxlite._src.numpy import array_api_metadata as _array_api_metadata
from jaxlite._src.numpy import scalar_types as _scalar_types
from jaxlite._src.numpy.namespace import *  # noqa: F401,F403
from jaxlite._src.numpy.namespace import LAZY_SUBMODULES as _LAZY_SUBMODULES
from jaxlite._src.numpy.namespace import __all__ as _eager_names

__all__ = list(_eager_names) + list(_LAZY_SUBMODULES)
_array_api_metadata.namespace = _sys.modules[__name__]  # what Array.__array_namespace__ returns


def __getattr__(name):
  if name in _scalar_types.LAZY_SCALAR_NAMES:
    return _scalar_types.lazy_scalar_type(name)
  if name in _LAZY_SUBMODULES:  # importing a submodule sets the attribute
    return __import__("importlib").import_module(f"{__name__}.{name}")
  raise AttributeError(f"module 'jaxlite.numpy' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_LAZY_SUBMODULES))
