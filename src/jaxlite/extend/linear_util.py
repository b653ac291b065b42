"""`jax.extend.linear_util`: wrapped functions with transformation stacks, for libraries."""
from jaxlite._src.base.linear_util import (  # noqa: F401
    StoreException, WrappedFun, cache, merge_linear_aux, transformation, transformation2,
    transformation_with_aux, transformation_with_aux2, wrap_init)
