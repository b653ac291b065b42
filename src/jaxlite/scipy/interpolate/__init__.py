"""`jaxlite.scipy.interpolate` (`jax.scipy.interpolate`): RegularGridInterpolator."""
from jaxlite._src.scipy.interpolation import RegularGridInterpolator  # noqa: F401

__all__ = ["RegularGridInterpolator"]
