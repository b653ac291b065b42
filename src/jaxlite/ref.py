"""`jax.ref`: mutable array references (`new_ref`, indexing reads and writes, `freeze`), usable
eagerly, under jit (staged as ref ops) and under vmap/grad/jvp (discharged into pure ops)."""
from jaxlite._src.state.primitives import (  # noqa: F401
    empty_ref, free_ref, freeze, new_ref, ref_addupdate as addupdate, ref_get as get,
    ref_set as set, ref_swap as swap)
from jaxlite._src.state.types import AbstractRef, Ref  # noqa: F401

__all__ = ["AbstractRef", "Ref", "addupdate", "free_ref", "freeze", "get", "new_ref",
           "empty_ref", "set", "swap"]
