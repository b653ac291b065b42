"""`jaxlite.scipy.cluster.vq` (`jax.scipy.cluster.vq`): vq."""
from jaxlite._src.scipy.interpolation import vq  # noqa: F401

__all__ = ["vq"]
