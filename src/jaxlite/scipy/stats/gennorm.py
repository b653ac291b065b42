"""`jaxlite.scipy.stats.gennorm` (`jax.scipy.stats.gennorm`)."""
from jaxlite._src.scipy.stats.gennorm import (  # noqa: F401
    cdf, logpdf, pdf)
