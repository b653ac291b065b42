"""`jaxlite.scipy.integrate` (`jax.scipy.integrate`): the trapezoidal rule."""
from jaxlite._src.scipy.integrate import trapezoid

__all__ = ["trapezoid"]
