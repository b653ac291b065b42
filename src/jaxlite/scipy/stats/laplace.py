"""`jaxlite.scipy.stats.laplace` (`jax.scipy.stats.laplace`)."""
from jaxlite._src.scipy.stats.laplace import cdf, logpdf, pdf
