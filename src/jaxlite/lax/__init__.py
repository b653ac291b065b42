"""`jaxlite.lax`: the primitive operations, with strict dtypes and no implicit promotion."""
import importlib as _importlib

from jaxlite._src.lax.namespace import *  # noqa: F401,F403
from jaxlite._src.lax.namespace import LAZY_NAMES as _LAZY_NAMES
from jaxlite._src.lax.namespace import __all__ as _eager_names

__all__ = list(_eager_names) + list(_LAZY_NAMES)


# Names JAX 0.10.2 removed, with the AttributeError message it gives for them.
_REMOVED = {
    "pvary": "jax.lax.pvary was deprecated in JAX v0.8.2 and removed in JAX v0.10.0; use "
             "`jax.lax.pcast(..., to='varying')",
}


def __getattr__(name):
  if name in _REMOVED:
    raise AttributeError(_REMOVED[name])
  if name not in _LAZY_NAMES:
    raise AttributeError(f"module 'jaxlite.lax' has no attribute {name!r}")
  module = _LAZY_NAMES[name]
  if module is None:  # a submodule: importing it sets the attribute
    return _importlib.import_module(f"{__name__}.{name}")
  value = globals()[name] = getattr(_importlib.import_module(module), name)
  return value


def __dir__():
  return sorted(set(globals()) | set(_LAZY_NAMES))
