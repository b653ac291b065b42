"""`jaxlite.scipy.stats.logistic` (`jax.scipy.stats.logistic`)."""
from jaxlite._src.scipy.stats.logistic import cdf, isf, logpdf, pdf, ppf, sf
