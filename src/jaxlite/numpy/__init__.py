"""`jaxlite.numpy`: NumPy's API on jaxlite arrays (import as `jnp`)."""
from jaxlite._src.numpy.namespace import *  # noqa: F401,F403
from jaxlite._src.numpy.namespace import __all__  # noqa: F401
