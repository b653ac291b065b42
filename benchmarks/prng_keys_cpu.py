"""Batched-key workloads of bench_random.py timed by CPU time per call and best wall time,
jaxlite and JAX interleaved in one process (a loaded machine skews the harness medians).

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/prng_keys_cpu.py
"""
import sys, time, statistics
HERE = __import__("pathlib").Path(__file__).resolve().parent
sys.path.insert(0, str(HERE)); sys.path.insert(0, str(HERE.parent / "src"))
import bench_random
rows = []
for fold in (False, True):
  for jit in (True, False):
    impls = bench_random._batched_key_impls(fold, jit)
    res = {}
    for _ in range(2):  # interleaved rounds
      for name, fn in impls.items():
        for _ in range(8): fn()  # warm (native compile, tier-1 probes)
        try:
          import jaxlite._src.compiler.native as nat; nat.wait()
        except Exception: pass
        for _ in range(8): fn()
        cpu, wall = [], []
        for _ in range(15):
          c0, w0 = time.process_time(), time.perf_counter(); fn()
          cpu.append(time.process_time() - c0); wall.append(time.perf_counter() - w0)
        res.setdefault(name, []).append((statistics.median(cpu), min(wall)))
    label = f"{'jit' if jit else 'eager'} vmap normal{' fold_in' if fold else ''} 100_000 keys"
    l = min(r[0] for r in res["jaxlite"]), min(r[1] for r in res["jaxlite"])
    j = min(r[0] for r in res["jax"]), min(r[1] for r in res["jax"])
    print(f"{label:40s} jaxlite cpu {l[0]*1e3:6.2f} ms wall-min {l[1]*1e3:6.2f} ms | jax cpu {j[0]*1e3:6.2f} ms wall-min {j[1]*1e3:6.2f} ms | jax/jaxlite cpu {j[0]/l[0]:.2f}x wall-min {j[1]/l[1]:.2f}x", flush=True)
