"""CPU devices sharing the cores (issue 32): a data-parallel MLP training step (784-512-512-10,
global batch 2048 split over the devices, `shard_map` + `psum` of the gradients, SGD) on 1, 2,
4 and 8 CPU devices of one process, jaxlite beside JAX, with cpu/wall per cell.

  cd <checkout> && PYTHONPATH=src python3 benchmarks/bench_devices.py [--counts 1,2,4,8]
      [--batch 2048] [--impls jaxlite,jl-per-device,JAX] [--interleave ROUNDS]

Every cell runs in its own child process (the CPU device count is fixed when a process first
uses its devices): `jaxlite` is the default install's configuration (tier 1, with the native
tier where numba is installed; shard_map's body run once over all devices' blocks stacked,
parallel/shard_map_stacked.py), `jl-numpy` tier 1 without numba (JAXLITE_NATIVE=0),
`jl-per-device` the SPMD runtime's thread per device instead of the stacked program
(JAXLITE_SPMD_STACKED=0), `JAX` real JAX where installed. A cell is the median time per step
and the cores kept busy (process CPU time / wall time over the timed steps); the last columns
are each count's throughput over one device's (the issue's targets: every count > 1, 8 devices
>= 3 on a 13-core host). The per-device runtime's BLAS threads follow spmd/runtime.py's
JAXLITE_DEVICE_BLAS policy (default `all`); `--impls` can add `jl-blas-one` / `jl-blas-all` /
`jl-blas-share` to compare them (with the stacked program off). `--interleave ROUNDS` runs one
process per impl instead, with a mesh over the first k of max(counts) devices per count, the
counts timed in turns (ROUNDS turns of ~0.1 s each): on a loaded machine the slow spells then
fall on every count alike.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The XLA tier is off in the jaxlite cells: `pip install jaxlite` brings no jaxlib (and one
# device's program could go to XLA where the sharded ones do not).
IMPLS = {"jaxlite": ("jaxlite", {"JAXLITE_XLA_TIER": "0"}),
         "jl-numpy": ("jaxlite", {"JAXLITE_NATIVE": "0", "JAXLITE_XLA_TIER": "0"}),
         "JAX": ("jax", {}),
         # the per-device runtime (a thread per device) in place of the stacked program
         "jl-per-device": ("jaxlite", {"JAXLITE_XLA_TIER": "0", "JAXLITE_SPMD_STACKED": "0"}),
         # the device programs' BLAS thread policies (spmd/runtime.py's JAXLITE_DEVICE_BLAS;
         # `jaxlite` runs the default): comparisons, with --impls
         "jl-blas-one": ("jaxlite", {"JAXLITE_XLA_TIER": "0", "JAXLITE_SPMD_STACKED": "0",
                                     "JAXLITE_DEVICE_BLAS": "one"}),
         "jl-blas-all": ("jaxlite", {"JAXLITE_XLA_TIER": "0", "JAXLITE_SPMD_STACKED": "0",
                                     "JAXLITE_DEVICE_BLAS": "all"}),
         "jl-blas-share": ("jaxlite", {"JAXLITE_XLA_TIER": "0", "JAXLITE_SPMD_STACKED": "0",
                                       "JAXLITE_DEVICE_BLAS": "share"})}


def _child(module: str, ndev: int, batch: int) -> None:
  sys.path.insert(0, str(HERE))
  sys.path.insert(0, str(HERE.parent / "src"))
  jax = __import__(module)
  jax.config.update("jax_num_cpu_devices", ndev)
  import bench_sharding
  from harness import time_callable_cpu
  sec, busy = time_callable_cpu(bench_sharding._dp_step(jax, ndev, batch), 0.2, 7, 20.0)
  print(sec, busy)


def _child_interleaved(module: str, counts, batch: int, rounds: int) -> None:
  """Every count's step in one process (meshes over the first k of max(counts) devices),
  timed in turns, so that a loaded machine's slow spells fall on every count alike: prints
  one line per count, its median seconds per step and cpu/wall."""
  import statistics
  import time
  sys.path.insert(0, str(HERE))
  sys.path.insert(0, str(HERE.parent / "src"))
  jax = __import__(module)
  jax.config.update("jax_num_cpu_devices", max(counts))
  import bench_sharding
  from harness import time_callable_cpu
  devs = jax.devices()
  steps = {k: bench_sharding._dp_step(jax, k, batch, devs) for k in counts}
  number = {}
  for k, fn in steps.items():  # warm (tiers settle) and size a turn at ~0.1 s
    sec, _ = time_callable_cpu(fn, 0.05, 3, 2.0)
    number[k] = max(1, int(0.1 / sec))
  samples = {k: [] for k in counts}
  cpu = {k: 0.0 for k in counts}
  wall = {k: 0.0 for k in counts}
  for _ in range(rounds):
    for k, fn in steps.items():
      c0, t0 = time.process_time(), time.perf_counter()
      for _ in range(number[k]):
        fn()
      dt = time.perf_counter() - t0
      cpu[k] += time.process_time() - c0
      wall[k] += dt
      samples[k].append(dt / number[k])
  for k in counts:
    print(k, statistics.median(samples[k]), cpu[k] / wall[k])


def _cell(impl: str, ndev: int, batch: int):
  module, env = IMPLS[impl]
  out = subprocess.run([sys.executable, __file__, "--child", module, str(ndev), str(batch)],
                       capture_output=True, text=True, env={**os.environ, **env}, timeout=900)
  if out.returncode:
    last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    raise RuntimeError(last)
  sec, busy = map(float, out.stdout.split()[-2:])
  return sec, busy


def main(argv) -> None:
  p = argparse.ArgumentParser()
  p.add_argument("--batch", type=int, default=2048)
  p.add_argument("--counts", default="1,2,4,8")
  p.add_argument("--impls", default="jaxlite,jl-numpy,JAX")
  p.add_argument("--interleave", type=int, default=0, metavar="ROUNDS",
                 help="one process per impl timing every count in turn, ROUNDS turns each")
  args = p.parse_args(argv)
  counts = [int(c) for c in args.counts.split(",")]
  impls = [i for i in args.impls.split(",") if i in IMPLS]
  if "JAX" in impls:
    try:
      __import__("jax")
    except ImportError:
      impls.remove("JAX")
  if "jl-numpy" in impls:
    import importlib.util
    if importlib.util.find_spec("numba") is None:
      impls.remove("jl-numpy")  # the same configuration as `jaxlite` here
  sys.path.insert(0, str(HERE.parent / "src"))
  from jaxlite._src.base import machine
  print(f"# python {platform.python_version()}, {platform.machine()}, "
        f"{machine.usable_cores()} usable cores, L2 {machine.cache_bytes(2)} B; "
        f"MLP 784-512-512-10 step, global batch {args.batch}; cells: median per step "
        f"(cpu/wall)")
  print("| devices | " + " | ".join(impls) + " | " +
        " | ".join(f"{i} x1-throughput" for i in impls) + " |")
  print("|---" * (1 + 2 * len(impls)) + "|")
  if args.interleave:
    _interleaved(impls, counts, args)
    return
  first = {}
  for n in counts:
    cells, ratios = [], []
    for impl in impls:
      try:
        sec, busy = _cell(impl, n, args.batch)
      except Exception as e:  # noqa: BLE001 - a failing cell is reported in its place
        cells.append(f"failed: {str(e)[:60]}")
        ratios.append("")
        continue
      first.setdefault(impl, sec)
      cells.append(f"{sec * 1e3:.2f} ms ({busy:.2f})")
      ratios.append(f"{first[impl] / sec:.2f}")
    print(f"| {n} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |", flush=True)


def _interleaved(impls, counts, args) -> None:
  rows = {n: ([], []) for n in counts}
  for impl in impls:
    module, env = IMPLS[impl]
    out = subprocess.run([sys.executable, __file__, "--child-interleaved", module,
                          ",".join(map(str, counts)), str(args.batch), str(args.interleave)],
                         capture_output=True, text=True, env={**os.environ, **env}, timeout=900)
    got = {}
    if out.returncode == 0:
      for line in out.stdout.strip().splitlines()[-len(counts):]:
        k, sec, busy = line.split()
        got[int(k)] = (float(sec), float(busy))
    err = out.stderr.strip().splitlines()[-1][:60] if out.stderr.strip() else "failed"
    for n in counts:
      if n not in got:
        rows[n][0].append(f"failed: {err}")
        rows[n][1].append("")
        continue
      sec, busy = got[n]
      rows[n][0].append(f"{sec * 1e3:.2f} ms ({busy:.2f})")
      rows[n][1].append(f"{got[counts[0]][0] / sec:.2f}" if counts[0] in got else "")
  for n in counts:
    print(f"| {n} | " + " | ".join(rows[n][0]) + " | " + " | ".join(rows[n][1]) + " |",
          flush=True)


if __name__ == "__main__":
  if len(sys.argv) == 6 and sys.argv[1] == "--child-interleaved":
    _child_interleaved(sys.argv[2], [int(c) for c in sys.argv[3].split(",")], int(sys.argv[4]),
                       int(sys.argv[5]))
  elif len(sys.argv) == 5 and sys.argv[1] == "--child":
    _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
  else:
    main(sys.argv[1:])
