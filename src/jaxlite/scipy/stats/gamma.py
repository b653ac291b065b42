"""`jaxlite.scipy.stats.gamma` (`jax.scipy.stats.gamma`)."""
from jaxlite._src.scipy.stats.gamma import cdf, logcdf, logpdf, logsf, pdf, sf
