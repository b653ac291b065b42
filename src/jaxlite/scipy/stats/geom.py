"""`jaxlite.scipy.stats.geom` (`jax.scipy.stats.geom`)."""
from jaxlite._src.scipy.stats.geom import (  # noqa: F401
    logpmf, pmf)
