"""`jaxlite.scipy.stats.multivariate_normal` (`jax.scipy.stats.multivariate_normal`)."""
from jaxlite._src.scipy.stats.multivariate_normal import logpdf, pdf
