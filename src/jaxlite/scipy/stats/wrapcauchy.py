"""`jaxlite.scipy.stats.wrapcauchy` (`jax.scipy.stats.wrapcauchy`)."""
from jaxlite._src.scipy.stats.wrapcauchy import (  # noqa: F401
    logpdf, pdf)
