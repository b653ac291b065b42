"""`jaxlite.numpy`: NumPy's API on jaxlite arrays (import as `jnp`)."""
from jaxlite._src.numpy.namespace import *  # noqa: F401,F403
from jaxlite._src.numpy.namespace import __all__  # noqa: F401
from jaxlite._src.numpy import scalar_types as _scalar_types


def __getattr__(name):
  if name in _scalar_types.LAZY_SCALAR_NAMES:
    return _scalar_types.lazy_scalar_type(name)
  raise AttributeError(f"module 'jaxlite.numpy' has no attribute {name!r}")
