"""`jaxlite.scipy` (`jax.scipy`): special functions, distributions, linear algebra, minimize and
integration, in SciPy's names."""
from jaxlite.scipy import (  # noqa: F401
    cluster, fft, integrate, interpolate, linalg, ndimage, optimize, signal, sparse, spatial,
    special, stats)
