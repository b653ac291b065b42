"""`jaxlite.dtypes`: dtype canonicalization, promotion and the float0 tangent dtype."""
from jaxlite._src.base.dtypes import (  # noqa: F401
    canonicalize_dtype, float0, issubdtype, result_type, finfo, iinfo, TypePromotionError,
    is_weakly_typed, promote_types, scalar_type_of, itemsize_bits)
from jaxlite._src.rng.prng import extended, prng_key  # noqa: F401

__all__ = ["canonicalize_dtype", "float0", "issubdtype", "result_type", "finfo", "iinfo",
           "TypePromotionError", "is_weakly_typed", "promote_types", "scalar_type_of",
           "itemsize_bits", "extended", "prng_key"]


def __getattr__(name):
  if name == "bfloat16":
    from jaxlite._src.base import dtypes
    dtypes.load_ml_dtypes()
    return dtypes.bfloat16.type  # the scalar type, as JAX's: jax.dtypes.bfloat16(1) is a value
  raise AttributeError(f"module 'jaxlite.dtypes' has no attribute {name!r}")
