"""jaxlite: JAX's programming model — jit, grad, vmap, jaxprs, pytrees, a splittable PRNG —
in pure Python over NumPy. Use it as `import jaxlite as jax; import jaxlite.numpy as jnp`.
"""
from jaxlite._src.base import array as _array  # noqa: F401 - installs the concrete Array type
from jaxlite._src.base.config import config  # noqa: F401
from jaxlite._src.base.core import Array  # noqa: F401
from jaxlite._src.transforms.jit_cache import clear_caches  # noqa: F401
from jaxlite._src.transforms.jit import jit  # noqa: F401
from jaxlite._src.transforms.vmap_api import vmap  # noqa: F401
from jaxlite._src.transforms.ad_api import (  # noqa: F401
    grad, value_and_grad, jvp, vjp, linearize, stop_gradient)
from jaxlite._src.transforms.custom_derivatives import custom_jvp, custom_vjp  # noqa: F401
from jaxlite._src.transforms.ad_checkpoint import (  # noqa: F401
    checkpoint,
    remat,
    checkpoint_policies,
)
from jaxlite._src.transforms.api import (  # noqa: F401
    make_jaxpr, eval_shape, device_put, device_get, typeof, ShapeDtypeStruct, disable_jit,
    block_until_ready, ensure_compile_time_eval, named_call, named_scope)
from jaxlite._src.base.devices import (  # noqa: F401
    devices, local_devices, device_count, local_device_count, default_backend, process_count,
    process_index)
from jaxlite._src.base import dtypes as _dtypes  # noqa: F401
from jaxlite import numpy  # noqa: F401 - sets Array operators
from jaxlite import lax  # noqa: F401
from jaxlite import tree  # noqa: F401
from jaxlite import tree_util  # noqa: F401
from jaxlite import errors  # noqa: F401

__version__ = "0.1.0"

# Submodules imported on first use, keeping `import jaxlite` cheap.
_LAZY = {"random", "nn", "scipy", "sharding", "test_util", "dtypes", "typing",
         "custom_derivatives", "ad_checkpoint", "dlpack",
         # surface-libs (issue 14): example libraries and small public modules
         "example_libraries", "flatten_util", "ops", "image", "custom_batching"}

# surface-core: JAX's extension and debugging surface, loaded on first use.
_LAZY |= {"core", "extend", "interpreters", "api_util", "debug", "experimental", "stages",
          "monitoring", "profiler", "version"}
_LAZY |= {"distributed", "ref"}  # jax.distributed (MPI, issue 13) and jax.ref (issue 14)
_LAZY_ATTRS = {
    "shard_map": ("jaxlite._src.parallel.shard_map", "shard_map"),
    "pmap": ("jaxlite._src.parallel.pmap", "pmap"),
    "pure_callback": ("jaxlite._src.transforms.callbacks", "pure_callback"),
    "float0": ("jaxlite._src.base.dtypes", "float0"),
    "install_as_jax": ("jaxlite._install", "install_as_jax"),
    **{n: ("jaxlite._src.transforms.api_extras", n) for n in (
        "linear_transpose", "custom_gradient", "closure_convert", "effects_barrier",
        "live_arrays", "print_environment_info", "host_count", "host_id", "host_ids", "Device",
        "process_indices", "copy_to_host_async")},
    # sharding-types: meshes and shardings, loaded on first use
    "make_mesh": ("jaxlite._src.sharding.mesh", "make_mesh"),
    "set_mesh": ("jaxlite._src.sharding.mesh", "set_mesh"),
    "NamedSharding": ("jaxlite._src.sharding.named_sharding", "NamedSharding"),
    "P": ("jaxlite._src.sharding.partition_spec", "PartitionSpec"),
    # sharded-jit: building sharded Arrays from pieces, and their shards
    **{n: ("jaxlite._src.sharding.arrays", n) for n in (
        "make_array_from_callback", "make_array_from_single_device_arrays",
        "make_array_from_process_local_data")},
    "Shard": ("jaxlite._src.base.devices", "Shard"),
    "reshard": ("jaxlite._src.sharding.reshard", "reshard"),
    # surface (issue 14): mutable array references
    **{n: ("jaxlite._src.state.primitives", n) for n in (
        "new_ref", "empty_ref", "free_ref", "freeze", "ds")},
    "Ref": ("jaxlite._src.state.types", "Ref"),
    "memory": ("jaxlite._src.base.memory_space", "memory"),
    "fwd_and_bwd": ("jaxlite._src.transforms.linear_call", "fwd_and_bwd"),
    # the Jacobians (above lax: they split their rows with lax ops), loaded on first use
    **{n: ("jaxlite._src.transforms.jacobians", n) for n in ("jacfwd", "jacrev", "jacobian",
                                                             "hessian")},
}
from jaxlite._src.base.config import (  # noqa: F401,E402
    enable_x64, debug_nans, debug_infs, default_device, default_matmul_precision,
    numpy_rank_promotion, numpy_dtype_promotion, checking_leaks, transfer_guard,
    transfer_guard_host_to_device, transfer_guard_device_to_host, transfer_guard_device_to_device,
    log_compiles, explain_cache_misses, threefry_partitionable, enable_checks, default_prng_impl,
    legacy_prng_key, enable_custom_prng, debug_key_reuse, softmax_custom_jvp, make_user_context,
    check_tracer_leaks, no_tracing, no_execution)
from jaxlite._src.base.config import (  # noqa: F401,E402 - surface (issue 14): remaining flags
    allow_f16_reductions, array_garbage_collection_guard, jax2tf_associative_scan_reductions,
    thread_guard)
from jaxlite._src.compat import traceback_util as _traceback_util  # noqa: E402

# A script's uncaught exception loses jaxlite's frames as JAX's loses JAX's (a jnp call outside
# any jit/grad boundary too); jax_traceback_filtering=off keeps them.
_traceback_util.install_excepthook()


def __getattr__(name):
  if name in _LAZY:
    import importlib
    return importlib.import_module(f"jaxlite.{name}")
  if name in _LAZY_ATTRS:
    import importlib
    mod, attr = _LAZY_ATTRS[name]
    return getattr(importlib.import_module(mod), attr)
  raise AttributeError(f"module 'jaxlite' has no attribute {name!r}")

# The default backend: an accelerator's PJRT plugin when one is installed with jaxlib, else
# NumPy or XLA's CPU client (`jax_jaxlite_backend`). Looks for plugins on disk, imports no jaxlib.
from jaxlite._src.compiler.xla import platforms as _xla_platforms  # noqa: E402,F401
