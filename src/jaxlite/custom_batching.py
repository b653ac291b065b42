"""`jaxlite.custom_batching` (`jax.custom_batching`): functions with their own vmap rules."""
from jaxlite._src.transforms.custom_batching import custom_vmap, sequential_vmap  # noqa: F401

__all__ = ["custom_vmap", "sequential_vmap"]
