"""`jax.scipy.spatial`: the `transform` submodule (rotations and their interpolation)."""
from jaxlite.scipy.spatial import transform  # noqa: F401
