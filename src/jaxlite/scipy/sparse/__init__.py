"""`jaxlite.scipy.sparse` (`jax.scipy.sparse`): its `linalg` Krylov solvers."""
from jaxlite.scipy.sparse import linalg  # noqa: F401
