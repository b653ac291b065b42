"""Data-parallel MLP training across processes with jaxlite.distributed over MPI.

  python examples/data_parallel_mpi.py                 # one process
  mpiexec -n 4 python examples/data_parallel_mpi.py    # four processes on this machine
  mpiexec -f hostfile -n 8 python examples/data_parallel_mpi.py   # a cluster (MPICH hydra)
  srun -n 8 python examples/data_parallel_mpi.py       # under Slurm (an MPI-enabled srun)

Every process runs this same program (multi-controller SPMD). Each takes its slice of the
global batch, computes the gradient of its examples' summed loss, and the processes add their
gradients with `multihost_utils.process_allgather` (an MPI Allgather, then a sum in process
order), so every process applies the same update and prints the same losses as one process
training on the whole batch (up to float32 rounding of the order of the sums, far below the
printed digits). Needs `pip install 'jaxlite[mpi]'` to run under mpiexec.
"""
import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import multihost_utils

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


grad_fn = jax.jit(jax.value_and_grad(loss_sum))


def main():
  try:
    jax.distributed.initialize()  # inside mpiexec/srun: rank and size come from MPI
  except ValueError:
    pass  # not launched by MPI: no coordinator to find, so train as the only process
  rank, nproc = jax.process_index(), jax.process_count()
  if GLOBAL_BATCH % nproc:
    raise SystemExit(f"the global batch ({GLOBAL_BATCH}) must divide into {nproc} processes")
  rng = np.random.default_rng(0)  # the same data in every process; each takes its slice
  x = rng.normal(size=(GLOBAL_BATCH, SIZES[0])).astype(np.float32)
  y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
  per = GLOBAL_BATCH // nproc
  xs, ys = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
  params = init_params(jax.random.key(0))
  for step in range(STEPS):
    loss, grads = grad_fn(params, xs, ys)
    # Sum the processes' losses and gradients: the gradient of the global batch's loss.
    loss, grads = multihost_utils.process_allgather((loss, grads))
    loss = loss.sum(0) / GLOBAL_BATCH
    params = jax.tree.map(lambda p, g: p - LR * g.sum(0) / GLOBAL_BATCH, params, grads)
    if rank == 0:
      print(f"step {step} loss {float(loss):.5f}", flush=True)
  multihost_utils.assert_equal(jax.tree.leaves(params)[0], "parameters diverged")
  if jax.distributed.is_initialized():
    jax.distributed.shutdown()


if __name__ == "__main__":
  main()
