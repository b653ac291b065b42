"""`jax._src.lax.lax`, where JAX defines most of `jax.lax`: jaxlite's `lax` namespace, read
through (its names are not copied here, so this module defines no primitive of its own)."""
from jaxlite import lax as _lax


def __getattr__(name):
  return getattr(_lax, name)


def __dir__():
  return dir(_lax)
