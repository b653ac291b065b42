"""`jaxlite.lax.linalg`: linear algebra primitives and their lax functions (as `jax.lax.linalg`)."""
from jaxlite._src.lax.linalg import (
    cholesky, cholesky_p, eig, eig_p, eigh, eigh_p, lu, lu_p, lu_pivots_to_permutation,
    lu_pivots_to_permutation_p, qr, qr_p, svd, svd_p)
from jaxlite._src.lax.linalg_solve import (
    cholesky_update, cholesky_update_p, householder_product, householder_product_p, schur, schur_p,
    symmetric_product, symmetric_product_p, triangular_solve, triangular_solve_p, tridiagonal_solve,
    tridiagonal_solve_p)
from jaxlite._src.lax.linalg_common import EigImplementation, EighImplementation, SvdAlgorithm
from jaxlite._src.lax.linalg_more import (  # noqa: F401
    hessenberg, hessenberg_p, ormqr, ormqr_p, qdwh, tridiagonal, tridiagonal_p)

__all__ = [n for n in dir() if not n.startswith("_")]
