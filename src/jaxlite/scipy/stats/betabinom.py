"""`jaxlite.scipy.stats.betabinom` (`jax.scipy.stats.betabinom`)."""
from jaxlite._src.scipy.stats.betabinom import (  # noqa: F401
    logpmf, pmf)
