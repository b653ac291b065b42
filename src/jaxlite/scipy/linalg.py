"""`jaxlite.scipy.linalg` (`jax.scipy.linalg`): SciPy's linear algebra API."""
from jaxlite._src.scipy.linalg import (
    block_diag, cho_factor, cho_solve, cholesky, det, eigh, eigh_tridiagonal, expm, funm,
    hessenberg, inv, lu, lu_factor, lu_solve, polar, qr, schur, solve, solve_triangular, sqrtm,
    svd, toeplitz)
from jaxlite._src.scipy.linalg_more import (
    circulant, companion, convolution_matrix, dft, expm_frechet, fiedler, fiedler_companion,
    hadamard, hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, qr_multiply,
    rsf2csf, solve_sylvester)

__all__ = [n for n in dir() if not n.startswith("_")]
