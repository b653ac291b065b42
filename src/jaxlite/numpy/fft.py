"""`jaxlite.numpy.fft`: NumPy's discrete Fourier transforms (as `jax.numpy.fft`)."""
from jaxlite._src.numpy.fft import (  # noqa: F401
    fft, fft2, fftfreq, fftn, fftshift, hfft, ifft, ifft2, ifftn, ifftshift, ihfft, irfft,
    irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)

__all__ = [n for n in dir() if not n.startswith("_")]
