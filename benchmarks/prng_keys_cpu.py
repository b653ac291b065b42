"""Batched-key workloads of bench_random.py timed by CPU time per call and best wall time,
jaxlite and JAX interleaved in one process (on a loaded machine the harness medians measure
the wait for a core: BENCHMARKS.md, "Batched PRNG keys").

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/prng_keys_cpu.py
"""
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import bench_random  # noqa: E402


def _settle(fn) -> None:
  for _ in range(8):  # tier-1 probes, the native kernel's compile trigger
    fn()
  native = sys.modules.get("jaxlite._src.compiler.native")
  if native is not None:
    native.wait()
  for _ in range(8):
    fn()


def _time(fn, calls: int = 15) -> tuple[float, float]:
  """(median CPU seconds per call, fastest wall seconds)."""
  cpu, wall = [], []
  for _ in range(calls):
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    cpu.append(time.process_time() - c0)
    wall.append(time.perf_counter() - w0)
  return statistics.median(cpu), min(wall)


def main() -> None:
  for fold in (False, True):
    for jit in (True, False):
      impls = bench_random._batched_key_impls(fold, jit)
      best = {}
      for _ in range(2):  # interleaved rounds; each impl keeps its better one
        for name, fn in impls.items():
          _settle(fn)
          cpu, wall = _time(fn)
          old = best.get(name, (float("inf"), float("inf")))
          best[name] = (min(old[0], cpu), min(old[1], wall))
      label = (f"{'jit' if jit else 'eager'} vmap normal{' fold_in' if fold else ''} "
               f"{bench_random.KEYS:_} keys")
      lite = best["jaxlite"]
      line = f"{label:40s} jaxlite cpu {lite[0] * 1e3:6.2f} ms wall {lite[1] * 1e3:6.2f} ms"
      if "jax" in best:
        jax = best["jax"]
        line += (f" | jax cpu {jax[0] * 1e3:6.2f} ms wall {jax[1] * 1e3:6.2f} ms"
                 f" | jax/jaxlite cpu {jax[0] / lite[0]:.2f}x wall {jax[1] / lite[1]:.2f}x")
      print(line, flush=True)


if __name__ == "__main__":
  main()
