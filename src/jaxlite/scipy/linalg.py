"""`jaxlite.scipy.linalg` (`jax.scipy.linalg`): SciPy's linear algebra API."""
from jaxlite._src.scipy.linalg import (  # noqa: F401
    block_diag, cho_factor, cho_solve, cholesky, det, eigh, expm, inv, lu, lu_factor, lu_solve,
    qr, solve, solve_triangular, svd, toeplitz)

__all__ = [n for n in dir() if not n.startswith("_")]
