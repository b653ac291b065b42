"""`jaxlite.scipy.stats.expon` (`jax.scipy.stats.expon`)."""
from jaxlite._src.scipy.stats.expon import cdf, logcdf, logpdf, logsf, pdf, ppf, sf
