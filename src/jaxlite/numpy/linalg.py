"""`jaxlite.numpy.linalg`: NumPy's linear algebra API (as `jax.numpy.linalg`)."""
from jaxlite._src.numpy.linalg import (  # noqa: F401
    EighResult, EigResult, QRResult, SlogdetResult, SVDResult, cholesky, cond, cross, det,
    diagonal, eig, eigh, eigvals, eigvalsh, inv, lstsq, matmul, matrix_norm, matrix_power,
    matrix_rank, matrix_transpose, multi_dot, norm, outer, pinv, qr, slogdet, solve, svd,
    svdvals, tensordot, tensorinv, tensorsolve, trace, vecdot, vector_norm)

__all__ = [n for n in dir() if not n.startswith("_") and n[0].islower()]
