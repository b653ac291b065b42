"""`jax._src.lib.mlir.dialects`: `hlo`, jaxlite's builders of StableHLO ops in lowering rules."""
from jaxlite.interpreters import _hlo_ops as hlo  # noqa: F401
