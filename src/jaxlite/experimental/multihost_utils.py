"""`jax.experimental.multihost_utils`: data movement and checks across processes (over MPI)."""
from jaxlite._src.distributed.multihost import (  # noqa: F401
    process_allgather, broadcast_one_to_all, sync_global_devices, assert_equal,
    host_local_array_to_global_array, global_array_to_host_local_array)
