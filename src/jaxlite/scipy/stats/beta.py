"""`jaxlite.scipy.stats.beta` (`jax.scipy.stats.beta`)."""
from jaxlite._src.scipy.stats.beta import cdf, logcdf, logpdf, logsf, pdf, sf
