"""`jax._src.flatten_util` (blackjax imports `ravel_pytree` from here): jaxlite's own
`jaxlite.flatten_util`, under JAX's internal module name."""
from jaxlite.flatten_util import ravel_pytree

__all__ = ["ravel_pytree"]
