"""`jaxlite.scipy.stats.bernoulli` (`jax.scipy.stats.bernoulli`)."""
from jaxlite._src.scipy.stats.bernoulli import cdf, logpmf, pmf, ppf
