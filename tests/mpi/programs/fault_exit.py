"""Run under `mpiexec -n N`: the last rank leaves the program early (sys.exit(0), no exception)
while the others wait in an Allreduce; its exit-time shutdown barrier times out after
`shutdown_timeout_seconds` and aborts the job, naming it."""
import sys

import numpy as np

import jaxlite as jax
from jaxlite._src.distributed import mpi_collectives as mc

jax.distributed.initialize(shutdown_timeout_seconds=3)
rank, size = jax.process_index(), jax.process_count()
if rank == size - 1:
  sys.exit(0)
mc.allreduce(np.ones(4, np.float32))
print("UNREACHABLE", rank, flush=True)
