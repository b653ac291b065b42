"""`jax.lib`: in JAX 0.10.2 only the jaxlib version (`jax.lib.__version__`, which equinox's
tests and jax-md read). jaxlite has no jaxlib: it reports the JAX release it follows."""
from jaxlite.version import __version__

__all__ = ["__version__"]
