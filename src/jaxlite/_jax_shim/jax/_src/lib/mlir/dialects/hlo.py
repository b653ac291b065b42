"""`jax._src.lib.mlir.dialects.hlo`: the StableHLO op builders a lowering rule calls; jaxlite's
are in jaxlite.interpreters._hlo_ops (each op is the lax operation of the same meaning)."""
from jaxlite.interpreters._hlo_ops import *  # noqa: F401,F403
from jaxlite.interpreters._hlo_ops import __getattr__  # noqa: F401
