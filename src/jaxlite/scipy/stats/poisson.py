"""`jaxlite.scipy.stats.poisson` (`jax.scipy.stats.poisson`)."""
from jaxlite._src.scipy.stats.poisson import cdf, entropy, logpmf, pmf
