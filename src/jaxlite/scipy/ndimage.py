"""`jaxlite.scipy.ndimage` (`jax.scipy.ndimage`): map_coordinates."""
from jaxlite._src.scipy.interpolation import map_coordinates  # noqa: F401

__all__ = ["map_coordinates"]
