"""Public `jax.ad_checkpoint`: rematerialization and the names its policies can refer to."""
from jaxlite._src.ad_checkpoint import (  # noqa: F401
    checkpoint, remat, checkpoint_name, checkpoint_policies, remat_p)

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies"]
