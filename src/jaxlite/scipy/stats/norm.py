"""`jaxlite.scipy.stats.norm` (`jax.scipy.stats.norm`)."""
from jaxlite._src.scipy.stats.norm import (
    cdf, isf, logcdf, logpdf, logsf, pdf, ppf, sf)
