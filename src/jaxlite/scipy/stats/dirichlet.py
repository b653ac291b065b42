"""`jaxlite.scipy.stats.dirichlet` (`jax.scipy.stats.dirichlet`)."""
from jaxlite._src.scipy.stats.dirichlet import logpdf, pdf
