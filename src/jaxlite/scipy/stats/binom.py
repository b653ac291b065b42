"""`jaxlite.scipy.stats.binom` (`jax.scipy.stats.binom`)."""
from jaxlite._src.scipy.stats.binom import (  # noqa: F401
    logpmf, pmf)
