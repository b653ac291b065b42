"""`jaxlite.scipy.optimize` (`jax.scipy.optimize`): minimize with BFGS."""
from jaxlite._src.scipy.optimize import OptimizeResults, minimize

__all__ = ["OptimizeResults", "minimize"]
