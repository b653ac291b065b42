"""Data-parallel MLP training across processes with jaxlite.distributed over MPI.

  python examples/data_parallel_mpi.py                 # one process
  mpiexec -n 4 python examples/data_parallel_mpi.py    # four processes on this machine
  mpiexec -f hostfile -n 8 python examples/data_parallel_mpi.py   # a cluster (MPICH hydra)
  srun -n 8 python examples/data_parallel_mpi.py       # under Slurm (an MPI-enabled srun)

Every process runs this same program (multi-controller SPMD), as with JAX: a mesh over every
process's devices, the global batch an Array split over it (each process supplies its slice,
`make_array_from_process_local_data`), the parameters replicated, and one jitted training step.
The partitioner sums the examples' gradients across processes inside the step (an MPI
Allreduce), so every process applies the same update and prints the same losses as one process
training on the whole batch (up to float32 rounding of the order of the sums, far below the
printed digits). Needs `pip install 'jaxlite[mpi]'` to run under mpiexec.
"""
import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import multihost_utils
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P

GLOBAL_BATCH, SIZES, STEPS, LR = 64, (8, 32, 1), 8, 0.1


def init_params(key):
  params = []
  for din, dout in zip(SIZES[:-1], SIZES[1:]):
    key, sub = jax.random.split(key)
    params.append((jax.random.normal(sub, (din, dout)) / np.sqrt(din), jnp.zeros(dout)))
  return params


def loss_sum(params, x, y):
  for w, b in params[:-1]:
    x = jnp.tanh(x @ w + b)
  w, b = params[-1]
  return jnp.sum((x @ w + b - y) ** 2)


@jax.jit
def train_step(params, x, y):
  """One SGD step on the global batch: the mean loss before the step, and the new parameters."""
  loss, grads = jax.value_and_grad(loss_sum)(params, x, y)
  params = jax.tree.map(lambda p, g: p - LR * g / GLOBAL_BATCH, params, grads)
  return loss / GLOBAL_BATCH, params


def main():
  try:
    jax.distributed.initialize()  # inside mpiexec/srun: rank and size come from MPI
  except ValueError:
    pass  # not launched by MPI: no coordinator to find, so train as the only process
  rank, nproc = jax.process_index(), jax.process_count()
  mesh = Mesh(np.array(jax.devices()), ("batch",))  # every process's devices
  if GLOBAL_BATCH % mesh.size:
    raise SystemExit(f"the global batch ({GLOBAL_BATCH}) must divide into {mesh.size} devices")
  rng = np.random.default_rng(0)  # the same data in every process; each supplies its slice
  x = rng.normal(size=(GLOBAL_BATCH, SIZES[0])).astype(np.float32)
  y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
  per = GLOBAL_BATCH // nproc
  mine = slice(rank * per, (rank + 1) * per)
  batch = NamedSharding(mesh, P("batch"))
  xs = jax.make_array_from_process_local_data(batch, x[mine], x.shape)
  ys = jax.make_array_from_process_local_data(batch, y[mine], y.shape)
  params = jax.device_put(init_params(jax.random.key(0)), NamedSharding(mesh, P()))
  for step in range(STEPS):
    loss, params = train_step(params, xs, ys)
    if rank == 0:
      print(f"step {step} loss {float(loss):.5f}", flush=True)
  multihost_utils.assert_equal(jax.tree.leaves(params)[0], "parameters diverged")
  if jax.distributed.is_initialized():
    jax.distributed.shutdown()


if __name__ == "__main__":
  main()
