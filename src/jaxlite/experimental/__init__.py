"""`jax.experimental`: `io_callback` here; submodules (`checkify`, ...) load on first use."""
import importlib

from jaxlite._src.transforms.callbacks import io_callback  # noqa: F401

# Submodules other changes may add files for; each is imported on first attribute access.
_SUBMODULES = {"checkify", "ode", "layout", "mesh_utils", "shard_map", "multihost_utils",
               "random", "hijax", "sparse"}


def __getattr__(name):
  if name == "cur_qdd":  # JAX re-exports hijax's cur_qdd here (flax.nnx calls it from here)
    from jaxlite._src.compat.hijax import cur_qdd
    return cur_qdd
  if name in _SUBMODULES:
    return importlib.import_module(f"jaxlite.experimental.{name}")
  raise AttributeError(f"module 'jaxlite.experimental' has no attribute {name!r}")
