"""`jaxlite.scipy.stats.cauchy` (`jax.scipy.stats.cauchy`)."""
from jaxlite._src.scipy.stats.cauchy import (
    cdf, isf, logcdf, logpdf, logsf, pdf, ppf, sf)
