"""`jax.experimental.sparse` (numpyro imports `BCOO`): 2-D BCOO and BCSR matrices, their dense
conversions and products with dense arrays (see `jaxlite._src.libs.sparse`)."""
from jaxlite._src.libs.sparse import (  # noqa: F401
    BCOO, BCSR, JAXSparse, bcoo_dot_general, bcoo_fromdense, bcoo_todense, bcsr_fromdense,
    bcsr_todense, fromdense, todense)

__all__ = ["BCOO", "BCSR", "JAXSparse", "bcoo_dot_general", "bcoo_fromdense", "bcoo_todense",
           "bcsr_fromdense", "bcsr_todense", "fromdense", "todense"]
