"""`jax.distributed`: join the processes of an MPI launch (`mpiexec -n 4 python prog.py`) into
one multi-controller program; mpi4py is imported only when `initialize` runs."""
from jaxlite._src.distributed.state import initialize, is_initialized, shutdown  # noqa: F401
from jaxlite._src.distributed import sharded_jit as _sharded_jit  # noqa: F401,E402 - fills the
# multi-process hooks of the layers below (partition, shard_map, core's eager path)
