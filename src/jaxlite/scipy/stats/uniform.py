"""`jaxlite.scipy.stats.uniform` (`jax.scipy.stats.uniform`)."""
from jaxlite._src.scipy.stats.uniform import cdf, logpdf, pdf, ppf
