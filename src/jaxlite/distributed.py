"""`jax.distributed`: join the processes of an MPI launch (`mpiexec -n 4 python prog.py`) into
one multi-controller program; mpi4py is imported only when `initialize` runs."""
from jaxlite._src.distributed.state import initialize, is_initialized, shutdown  # noqa: F401
