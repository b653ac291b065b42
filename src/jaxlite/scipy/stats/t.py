"""`jaxlite.scipy.stats.t` (`jax.scipy.stats.t`)."""
from jaxlite._src.scipy.stats.t import logpdf, pdf
