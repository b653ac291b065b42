"""`jaxlite.scipy` (`jax.scipy`): special functions, distributions, linear algebra, minimize and
integration, in SciPy's names."""
from jaxlite.scipy import integrate, linalg, optimize, sparse, special, stats  # noqa: F401
