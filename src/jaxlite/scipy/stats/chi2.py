"""`jaxlite.scipy.stats.chi2` (`jax.scipy.stats.chi2`)."""
from jaxlite._src.scipy.stats.chi2 import cdf, logcdf, logpdf, logsf, pdf, sf
