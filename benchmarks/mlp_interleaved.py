"""The MLP train step of jaxlite (default tier) and JAX in one process, interleaved: batches of
40 calls alternate between the two, and each side's figure is the median of its batch medians.

Separate-process runs of the step (anchors.py) spread more than the gap between the two; this
puts both under the same machine state. Both share the cores, so neither figure is what the
program gets alone. `python benchmarks/mlp_interleaved.py [rounds] [--busy N]` (default 12
rounds): `--busy N` starts N processes spinning on the CPU for the run (a loaded machine: each
takes a core from the step whenever the scheduler gives it one).
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
  import jaxlite
except ImportError:  # run from a checkout without installing: use its src/
  sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
  import jaxlite
import bench_mlp  # noqa: E402


def main(rounds: int) -> None:
  import jax
  from jaxlite._src.compiler import native
  params, x, labels = bench_mlp._data()
  fns = {"jaxlite": bench_mlp._jax_callable(jaxlite, params, x, labels),
         "jax": bench_mlp._jax_callable(jax, params, x, labels)}
  for f in fns.values():
    for _ in range(30):
      f()
  native.wait()  # native kernels compiled (where numba is installed) before timing
  for f in fns.values():
    for _ in range(50):
      f()
  medians = {k: [] for k in fns}
  for _ in range(rounds):
    for k, f in fns.items():
      times = []
      for _ in range(40):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
      medians[k].append(np.median(times))
  for k, v in medians.items():
    print(f"{k}: median of batch medians {np.median(v) * 1e3:.3f} ms, best batch "
          f"{min(v) * 1e3:.3f} ms")
  print(f"jaxlite/jax {np.median(medians['jaxlite']) / np.median(medians['jax']):.2f}")


def _busy(n: int) -> list:
  return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


if __name__ == "__main__":
  args = sys.argv[1:]
  busy = 0
  if "--busy" in args:
    i = args.index("--busy")
    busy = int(args[i + 1])
    del args[i:i + 2]
  spinners = _busy(busy)
  try:
    if busy:
      print(f"# {busy} busy process(es) running beside the benchmark")
    main(int(args[0]) if args else 12)
  finally:
    for p in spinners:
      p.kill()
      p.wait()
