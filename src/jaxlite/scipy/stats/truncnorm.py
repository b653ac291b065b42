"""`jaxlite.scipy.stats.truncnorm` (`jax.scipy.stats.truncnorm`)."""
from jaxlite._src.scipy.stats.truncnorm import (  # noqa: F401
    cdf, logcdf, logpdf, logsf, pdf, sf)
