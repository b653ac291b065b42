"""Data-parallel MLP training step across processes (issue 13): the step time of the same
global batch on 1 and on N processes (one CPU device each), for the two ways of writing it --
`jit` of the global-batch step over a batch split across processes (the partitioner inserts the
gradient psums, as examples/data_parallel_mpi.py does) and `jit(shard_map)` with the gradient
psum written in the body.

  python benchmarks/mpi_data_parallel.py [global_batch] [hidden]
  mpiexec -n 2 python benchmarks/mpi_data_parallel.py [global_batch] [hidden]

Rank 0 prints seconds per step (median of rounds) per variant; the throughput ratio of N
processes to one is t(1) / t(N) from two runs (quote both, measured back to back).
"""
from __future__ import annotations

import sys
import time

import numpy as np


def main(argv):
  import jaxlite as jax
  import jaxlite.numpy as jnp
  from jaxlite._src.distributed import mpi_collectives as mc
  from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P
  jax.config.update("jax_num_cpu_devices", 1)
  try:
    jax.distributed.initialize()
  except ValueError:
    pass  # not under mpiexec: one process
  batch = int(argv[0]) if argv else 256
  hidden = int(argv[1]) if len(argv) > 1 else 256
  sizes, lr = (32, hidden, hidden, 1), 0.01
  rank, nproc = jax.process_index(), jax.process_count()
  mesh = Mesh(np.array(jax.devices()), ("batch",))
  rng = np.random.default_rng(0)
  x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
  y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)
  per = batch // nproc
  split = NamedSharding(mesh, P("batch"))
  xs = jax.make_array_from_process_local_data(split, x[rank * per:(rank + 1) * per], x.shape)
  ys = jax.make_array_from_process_local_data(split, y[rank * per:(rank + 1) * per], y.shape)
  params = [(jnp.asarray(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a)),
             jnp.zeros(b, jnp.float32)) for a, b in zip(sizes[:-1], sizes[1:])]
  params = jax.device_put(params, NamedSharding(mesh, P()))

  def loss_sum(p, x, y):
    for w, b in p[:-1]:
      x = jnp.tanh(x @ w + b)
    w, b = p[-1]
    return jnp.sum((x @ w + b - y) ** 2)

  @jax.jit
  def partitioned(p, x, y):
    loss, g = jax.value_and_grad(loss_sum)(p, x, y)
    return loss / batch, jax.tree.map(lambda a, b: a - lr * b / batch, p, g)

  def body(p, x, y):
    loss, g = jax.value_and_grad(loss_sum)(p, x, y)
    loss, g = jax.lax.psum((loss, g), "batch")
    return loss / batch, jax.tree.map(lambda a, b: a - lr * b / batch, p, g)
  smapped = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                                  out_specs=(P(), P())))
  inner = mc.global_state.comm
  results = {}
  for name, step in (("jit(partitioned)", partitioned), ("jit(shard_map)+psum", smapped)):
    p = params
    for _ in range(3):
      loss, p = step(p, xs, ys)
    float(loss)
    results[name] = []
    for _ in range(7):
      if inner is not None:
        inner.Barrier()
      t0 = time.perf_counter()
      for _ in range(10):
        loss, p = step(p, xs, ys)
      float(loss)
      results[name].append((time.perf_counter() - t0) / 10)
  if rank == 0:
    print(f"# {nproc} process(es), global batch {batch}, MLP {sizes}: s/step (median of 7)")
    for name, ts in results.items():
      print(f"{name:22s} {float(np.median(ts)):.3e}", flush=True)


if __name__ == "__main__":
  main(sys.argv[1:])
