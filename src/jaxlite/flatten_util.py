"""`jaxlite.flatten_util` (`jax.flatten_util`): ravel a pytree of arrays into one flat vector
and get back the function that restores the tree (`jaxlite._src.libs.flatten_util`)."""
from jaxlite._src.libs.flatten_util import ravel_pytree  # noqa: F401

__all__ = ["ravel_pytree"]
