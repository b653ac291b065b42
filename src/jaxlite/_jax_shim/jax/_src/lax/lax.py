"""`jax._src.lax.lax`, where JAX defines most of `jax.lax`: jaxlite's `lax` namespace (its
lazily loaded names too)."""
from jaxlite import lax as _lax
from jaxlite.lax import *  # noqa: F401,F403


def __getattr__(name):
  return getattr(_lax, name)
