"""Allreduce across processes (issue 13): `psum` in a jitted `shard_map` over a mesh axis that
spans the processes, beside the same Allreduce called directly through mpi4py, per buffer size.

Run under MPI (one CPU device per process):  mpiexec -n 2 python benchmarks/mpi_allreduce.py
Optional arguments: sizes in bytes (default 4096 1048576 67108864), `--eager` for an eager
`shard_map` (no jit). Rank 0 prints, per size,
the median seconds per call of each and their ratio. The two are timed in alternating rounds
within one run, so a loaded machine slows both alike; quote the ratio.
"""
from __future__ import annotations

import sys
import time

import numpy as np

DEFAULT_SIZES = (4096, 1 << 20, 64 << 20)


def _reps(nbytes):
  return 400 if nbytes <= 65536 else 40 if nbytes <= (4 << 20) else 6


def _time(fn, reps, comm):
  comm.Barrier()
  t0 = time.perf_counter()
  for _ in range(reps):
    fn()
  return (time.perf_counter() - t0) / reps


def main(argv):
  import jaxlite as jax
  from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P
  jax.config.update("jax_num_cpu_devices", 1)
  jax.distributed.initialize()
  from mpi4py import MPI
  comm = MPI.COMM_WORLD
  n, me = jax.process_count(), jax.process_index()
  mesh = Mesh(np.array(jax.devices()), ("x",))
  eager = "--eager" in argv  # shard_map called eagerly (retraced each call) instead of jitted
  psum = jax.shard_map(lambda b: jax.lax.psum(b, "x"), mesh=mesh, in_specs=P("x"),
                       out_specs=P())
  psum = psum if eager else jax.jit(psum)
  sizes = [int(a) for a in argv if a != "--eager"] or list(DEFAULT_SIZES)
  if me == 0:
    print(f"# {n} processes, float32, s/call over rounds (raw mpi4py | jaxlite psum): "
          "median, then the best round")
    print(f"{'bytes':>10s} {'mpi4py':>10s} {'jaxlite':>10s} {'ratio':>6s} "
          f"{'best mpi4py':>11s} {'jaxlite':>10s} {'ratio':>6s}")
  for nbytes in sizes:
    k = nbytes // 4
    local = np.full(k, me + 1, np.float32)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), local, (n * k,))
    expect = np.full(k, n * (n + 1) / 2, np.float32)
    np.testing.assert_array_equal(np.asarray(psum(x)), expect)  # also warms the jit cache
    out = np.empty_like(local)

    def raw():
      comm.Allreduce(local, out, op=MPI.SUM)

    def ours():
      psum(x).block_until_ready()
    reps = _reps(nbytes)
    raw(), ours()
    t_raw, t_ours = [], []
    for _ in range(7):
      t_raw.append(_time(raw, reps, comm))
      t_ours.append(_time(ours, reps, comm))
    a, b = float(np.median(t_raw)), float(np.median(t_ours))
    c, d = min(t_raw), min(t_ours)
    if me == 0:
      print(f"{nbytes:10d} {a:10.3e} {b:10.3e} {b / a:6.2f} {c:11.3e} {d:10.3e} {d / c:6.2f}",
            flush=True)


if __name__ == "__main__":
  main(sys.argv[1:])
