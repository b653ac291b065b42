"""`jaxlite.scipy.stats.vonmises` (`jax.scipy.stats.vonmises`)."""
from jaxlite._src.scipy.stats.vonmises import (  # noqa: F401
    logpdf, pdf)
