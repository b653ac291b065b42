"""`jaxlite.scipy.sparse.linalg` (`jax.scipy.sparse.linalg`): cg, bicgstab, gmres."""
from jaxlite._src.scipy.sparse_linalg import bicgstab, cg, gmres  # noqa: F401

__all__ = ["bicgstab", "cg", "gmres"]
