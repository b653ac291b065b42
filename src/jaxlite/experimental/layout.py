"""`jax.experimental.layout`: the `Layout` and `Format` records (defined in
`jaxlite._src.sharding.layout`, where `with_sharding_constraint` reads a Format's sharding)."""
from jaxlite._src.sharding.layout import AutoLayout, Format, Layout

__all__ = ["Format", "Layout"]
