"""Run under `mpiexec -n N`: the last rank raises while the others wait in an Allreduce; the
job must end (MPI_Abort through jaxlite's hook) with a message naming the failed rank."""
import time

import numpy as np

import jaxlite as jax
from jaxlite._src.distributed import mpi_collectives as mc

jax.distributed.initialize()
rank, size = jax.process_index(), jax.process_count()
if rank == size - 1:
  time.sleep(0.5)
  raise ValueError(f"boom in rank {rank}")
mc.allreduce(np.ones(4, np.float32))
print("UNREACHABLE", rank, flush=True)
