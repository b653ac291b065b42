"""`jax.experimental.shard_map`: the shard_map entry point under its older module name."""
from jaxlite._src.parallel.shard_map import shard_map  # noqa: F401
