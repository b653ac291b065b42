"""`jaxlite.scipy.cluster` (`jax.scipy.cluster`): vector quantization."""
from jaxlite.scipy.cluster import vq  # noqa: F401
