"""Public `jax.ad_checkpoint`: rematerialization and the names its policies can refer to."""
from jaxlite._src.transforms.ad_checkpoint import (  # noqa: F401
    Offloadable,
    Recompute,
    Saveable,
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    remat,
    remat_p,
    saved_residuals,
)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat"]
