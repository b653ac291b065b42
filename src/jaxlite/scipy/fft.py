"""`jaxlite.scipy.fft` (`jax.scipy.fft`): the type-II DCT and its inverse."""
from jaxlite._src.scipy.fft import dct, dctn, idct, idctn  # noqa: F401

__all__ = ["dct", "dctn", "idct", "idctn"]
