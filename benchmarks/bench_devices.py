"""CPU devices sharing the cores (issue 32): a data-parallel MLP training step (784-512-512-10,
global batch 2048 split over the devices, `shard_map` + `psum` of the gradients, SGD) on 1, 2,
4 and 8 CPU devices of one process, jaxlite beside JAX, with cpu/wall per cell.

  cd <checkout> && PYTHONPATH=src python3 benchmarks/bench_devices.py [--batch 2048] [--counts 1,2,4,8]

Every cell runs in its own child process (the CPU device count is fixed when a process first
uses its devices): `jaxlite` is the default install's configuration (tier 1, with the native
tier where numba is installed), `jl-numpy` tier 1 without it (JAXLITE_NATIVE=0), `JAX` real JAX
where installed. A cell is the median time per step and the cores kept busy (process CPU time
/ wall time over the timed steps); the last columns are each count's throughput over one
device's (the issue's targets: every count > 1, 8 devices >= 3 on a 13-core host). BLAS threads
are left as NumPy's OpenBLAS starts them (all cores); each device program's count then follows
spmd/runtime.py's JAXLITE_DEVICE_BLAS policy (default `all`), and `--impls` can add the
`jl-blas-one` / `jl-blas-all` / `jl-blas-share` columns to compare the policies.
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
         # the device programs' BLAS thread policies (spmd/runtime.py's JAXLITE_DEVICE_BLAS;
         # `jaxlite` runs the default): comparisons, with --impls
         "jl-blas-one": ("jaxlite", {"JAXLITE_XLA_TIER": "0", "JAXLITE_DEVICE_BLAS": "one"}),
         "jl-blas-all": ("jaxlite", {"JAXLITE_XLA_TIER": "0", "JAXLITE_DEVICE_BLAS": "all"}),
         "jl-blas-share": ("jaxlite", {"JAXLITE_XLA_TIER": "0",
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


if __name__ == "__main__":
  if len(sys.argv) == 5 and sys.argv[1] == "--child":
    _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
  else:
    main(sys.argv[1:])
