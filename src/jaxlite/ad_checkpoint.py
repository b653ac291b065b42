"""Public `jax.ad_checkpoint`: rematerialization and the names its policies can refer to."""
from jaxlite._src.ad_checkpoint import (  # noqa: F401
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
    remat,
    remat_p,
)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]
