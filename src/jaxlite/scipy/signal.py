"""`jaxlite.scipy.signal` (`jax.scipy.signal`): convolution, correlation and detrending."""
from jaxlite._src.scipy.signal import (  # noqa: F401
    convolve, convolve2d, correlate, correlate2d, csd, detrend, fftconvolve, istft, stft, welch)

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend", "fftconvolve",
           "istft", "stft", "welch"]
