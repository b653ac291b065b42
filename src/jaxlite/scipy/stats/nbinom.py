"""`jaxlite.scipy.stats.nbinom` (`jax.scipy.stats.nbinom`)."""
from jaxlite._src.scipy.stats.nbinom import (  # noqa: F401
    logpmf, pmf)
