"""`jaxlite.lax`: the primitive operations, with strict dtypes and no implicit promotion."""
from jaxlite._src.lax.namespace import *  # noqa: F401,F403
from jaxlite._src.lax.namespace import __all__  # noqa: F401
