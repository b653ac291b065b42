"""Public `jax.scipy.spatial.transform`: `Rotation` and `Slerp`."""
from jaxlite._src.scipy.spatial_transform import Rotation, Slerp  # noqa: F401

__all__ = ["Rotation", "Slerp"]
