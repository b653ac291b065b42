"""The scan RNN anchor (bench_scan: 1000 steps, hidden 128, batch 32) beside JAX in one process,
calls interleaved round by round (a loaded machine slows every column alike):

  cd <checkout> && PYTHONPATH=src python3 benchmarks/scan_ab.py [rounds]

Columns (CPU figures are the least over the rounds: a loaded machine inflates them less than wall
time; JAX runs on its own threads, jaxlite's loop on the calling one, its stacked products on
tier 1's pool): JAX (jit, block_until_ready); `jaxlite` as `pip install jaxlite` runs it (tier 1
with the native tier where numba is; the background XLA tier off, as it is without jaxlib:
set JAXLITE_XLA_TIER=1 to leave it on); `jl fused off`, the same with the fused scan step off
(native/fused_scan.py: tier 1's hoisted loop of NumPy calls, as before it). Each jaxlite column
is its own jitted function, warmed up until its HotSwaps are decided (untimed). Per column: the
median wall time per call over the rounds, the cores kept busy (process CPU / wall), and the
median of per-round ratios to JAX (<= 1: jaxlite faster).
"""
from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("JAXLITE_XLA_TIER", "0")
try:  # BLAS threads: the cores this process may use (taskset narrows them), as anchors.py sets
  _CORES = len(os.sched_getaffinity(0))
except (AttributeError, OSError):
  _CORES = os.cpu_count() or 1
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
  os.environ.setdefault(_var, str(_CORES))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "src"))

import numpy as np  # noqa: E402

import bench_scan  # noqa: E402
import jaxlite  # noqa: E402
from jaxlite._src.compiler import native  # noqa: E402


def _warm(call) -> None:
  for _ in range(native.HOT_CALLS + 1):
    call()
  native.wait()
  for _ in range(native.TRIALS + 2):
    call()


def _swaps(name: str) -> list:
  import gc
  return [o for o in gc.get_objects() if isinstance(o, native.HotSwap) and o.name == name]


def main(argv) -> None:
  rounds = int(argv[0]) if argv else 15
  data = bench_scan._data()
  impls = {}
  try:
    import jax
    impls["JAX"] = bench_scan._rnn_scan(jax, *data)
  except ImportError:
    jax = None
  fused_scan = None
  if native.available():
    from jaxlite._src.compiler.native import fused_scan
  impls["jaxlite"] = bench_scan._rnn_scan(jaxlite, *data)
  _warm(impls["jaxlite"])
  if fused_scan is not None:
    fused_scan.ENABLED = False  # read when the scan compiles (the first call)
    impls["jl fused off"] = bench_scan._rnn_scan(jaxlite, *data)
    impls["jl fused off"]()
    fused_scan.ENABLED = True
    _warm(impls["jl fused off"])
  for call in impls.values():
    _warm(call)
  want, _ = bench_scan._rnn_numpy(*data)
  for name in impls:
    if name != "JAX":
      got = np.asarray(impls[name]()[0])
      print(f"# {name}: max |h - NumPy's| = {float(np.max(np.abs(got - want))):.2e}")
  wall = {k: [] for k in impls}
  cpu = {k: [] for k in impls}
  main_cpu = {k: [] for k in impls}
  for _ in range(rounds):
    for name, call in impls.items():
      c0, m0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
      for _ in range(3):
        call()
      wall[name].append((time.perf_counter() - t0) / 3)
      cpu[name].append((time.process_time() - c0) / 3)
      main_cpu[name].append((time.thread_time() - m0) / 3)
  print(f"# scan RNN {bench_scan.STEPS} steps h{bench_scan.HIDDEN} b{bench_scan.BATCH}, "
        f"{rounds} rounds of 3 calls per column, {_CORES} cores, numba "
        f"{'layer ' + _layer() if native.available() else 'not installed'}, "
        f"XLA tier {'on' if os.environ.get('JAXLITE_XLA_TIER') != '0' else 'off'}")
  for name in impls:
    line = (f"{name:>13}: median {statistics.median(wall[name]) * 1e3:7.2f} ms, "
            f"min {min(wall[name]) * 1e3:7.2f} ms, cpu/wall "
            f"{sum(cpu[name]) / sum(wall[name]):.2f}, cpu per call {min(cpu[name]) * 1e3:.2f} ms "
            f"(main thread {min(main_cpu[name]) * 1e3:.2f})")
    if "JAX" in impls and name != "JAX":
      ratio = statistics.median(a / b for a, b in zip(wall[name], wall["JAX"]))
      mins = min(wall[name]) / min(wall["JAX"])
      line += f", /JAX {ratio:.3f} (median of rounds), {mins:.3f} (mins)"
    print(line)
  for s in _swaps("scan"):
    way = getattr(s.native, "mode", None)  # fused_scan.AdaptiveFused: hoisted (True) or not
    print(f"# scan HotSwap: {type(s.native).__name__ if s.native else 'tier 1'}"
          f"{'' if way is None else ', hoisted' if way else ', plain'}, rejected "
          f"{s.rejected}, trials best native {s.best_native * 1e3:.2f} ms / tier 1 "
          f"{s.best_fallback * 1e3:.2f} ms, error {s.error}")
  for s in _swaps("tanh float32"):
    print(f"# loop tanh HotSwap: {getattr(s.native, '__name__', s.native)}")


def _layer() -> str:
  from jaxlite._src.compiler.native import cache  # noqa: F401  (configures the layer)
  from jaxlite._src.compiler.native import threads
  return threads.layer()


if __name__ == "__main__":
  main(sys.argv[1:])
