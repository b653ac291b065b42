"""`jaxlite.scipy.integrate` (`jax.scipy.integrate`): the trapezoidal rule."""
from jaxlite._src.scipy.integrate import trapezoid  # noqa: F401

__all__ = ["trapezoid"]
