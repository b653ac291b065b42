"""`jax._src.lib`: where JAX binds jaxlib. jaxlite has no jaxlib; only the MLIR names a lowering
rule imports are here (`jax._src.lib.mlir.dialects.hlo`), over jax.interpreters.mlir."""
from jaxlite.version import __version__  # noqa: F401
