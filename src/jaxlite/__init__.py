"""jaxlite: JAX's programming model — jit, grad, vmap, jaxprs, pytrees, a splittable PRNG —
in pure Python over NumPy. Use it as `import jaxlite as jax; import jaxlite.numpy as jnp`.
"""
from jaxlite._src import array as _array  # noqa: F401 - installs the concrete Array type
from jaxlite._src.config import config  # noqa: F401
from jaxlite._src.core import Array  # noqa: F401
from jaxlite._src.jit import jit  # noqa: F401
from jaxlite._src.vmap_api import vmap  # noqa: F401
from jaxlite._src.ad_api import (  # noqa: F401
    grad, value_and_grad, jvp, vjp, linearize, jacfwd, jacrev, jacobian, hessian, stop_gradient)
from jaxlite._src.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401
from jaxlite._src.ad_checkpoint import checkpoint, remat, checkpoint_policies  # noqa: F401
from jaxlite._src.api import (  # noqa: F401
    make_jaxpr, eval_shape, device_put, device_get, typeof, ShapeDtypeStruct, disable_jit,
    block_until_ready, ensure_compile_time_eval, named_call, named_scope)
from jaxlite._src.devices import (  # noqa: F401
    devices, local_devices, device_count, local_device_count, default_backend, process_count,
    process_index)
from jaxlite._src import dtypes as _dtypes  # noqa: F401
from jaxlite import numpy  # noqa: F401 - sets Array operators
from jaxlite import lax  # noqa: F401
from jaxlite import tree  # noqa: F401
from jaxlite import tree_util  # noqa: F401
from jaxlite import errors  # noqa: F401

__version__ = "0.1.0"

# Submodules imported on first use, keeping `import jaxlite` cheap.
_LAZY = {"random", "nn", "scipy", "sharding", "test_util", "dtypes", "typing",
         "custom_derivatives", "ad_checkpoint", "dlpack"}


def __getattr__(name):
  if name in _LAZY:
    import importlib
    return importlib.import_module(f"jaxlite.{name}")
  raise AttributeError(f"module 'jaxlite' has no attribute {name!r}")
