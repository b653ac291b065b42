"""`jaxlite.scipy.stats.multinomial` (`jax.scipy.stats.multinomial`)."""
from jaxlite._src.scipy.stats.multinomial import (  # noqa: F401
    logpmf, pmf)
