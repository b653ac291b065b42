"""`jaxlite.ops` (`jax.ops`): segment reductions (sum, prod, max, min) over rows of an array."""
from jaxlite._src.libs.ops import segment_max, segment_min, segment_prod, segment_sum  # noqa: F401

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
