"""Times workloads side by side (jaxlite, NumPy, and JAX / PyTorch where installed).

A benchmark module exposes `workloads()` -> [(name, {impl: zero-arg callable})]; each callable
is warmed up, then timed in repeats of adaptively many calls; the median per call is reported,
with the cores kept busy (process CPU time / wall time over the timed calls). `tiered(impls)`
splits a workload's "jaxlite" entry into tier 0 ("jaxlite") and tier 1 ("jl-tier1") columns.
"""
from __future__ import annotations

import statistics
import sys
import time


def _settle_tier1(fn, first_s: float, budget_s: float = 10.0) -> None:
  """Steady state of tier 1's timed choices: each kernel times its first calls in every way it
  can run (pooled tiles, wide pooled tiles, tiles on one thread, one whole call), a program with big products on
  all BLAS threads and on one (adaptive.py), before it keeps the fastest; a 0.4 s workload
  timed over its first 7 calls measured that probing (the median of the three ways), not the
  kernel. Skipped where the calls would take over `budget_s`."""
  adaptive = sys.modules.get("jaxlite._src.compiler.adaptive")
  if adaptive is None:
    return
  calls = adaptive.PROBES * 4  # pooled, wide pooled, tiles, whole
  if first_s * calls <= budget_s:
    for _ in range(calls):
      fn()


def _settle_native(fn) -> None:
  """Steady state where jaxlite's native tier is loaded: its kernels are compiled on a
  background thread from their third call on, then timed against tier 1 for TRIALS calls;
  timing while that runs measures the compiler (on 2 cores a 1-device data-parallel step read
  10-40 ms instead of 5.4)."""
  native = sys.modules.get("jaxlite._src.compiler.native")
  if native is None or not hasattr(native, "wait"):
    return
  for _ in range(native.HOT_CALLS):
    fn()
  native.wait()
  for _ in range(native.TRIALS + 1):  # the swapped-in kernels' trials, untimed
    fn()


def _settle_xla(fn) -> None:
  """Steady state where the background XLA tier is on (jaxlib installed): its programs are hot
  after HOT_CALLS calls over HOT_SECONDS, compiled in the background, then timed against their
  tier for 2 * TRIALS calls; all of that happens here, untimed."""
  xla_tier = sys.modules.get("jaxlite._src.compiler.xla_tier")
  if xla_tier is None or not xla_tier.enabled():
    return
  t0, calls = time.perf_counter(), 0
  while calls <= xla_tier.HOT_CALLS or (time.perf_counter() - t0 < 2 * xla_tier.HOT_SECONDS
                                        and calls < 200):
    fn()
    calls += 1
  xla_tier.wait()
  for _ in range(2 * xla_tier.TRIALS + 1):
    fn()


def time_callable(fn, min_repeat_s: float = 0.05, repeats: int = 7, max_total_s: float = 20.0):
  """Median seconds per call of `fn`, after warm-up calls (one; tier 1 and the native tier
  settled where loaded: `_settle_tier1`, `_settle_native`, `_settle_xla`)."""
  return time_callable_cpu(fn, min_repeat_s, repeats, max_total_s)[0]


def time_callable_cpu(fn, min_repeat_s: float = 0.05, repeats: int = 7,
                      max_total_s: float = 20.0):
  """(median seconds per call, CPU seconds / wall seconds over the timed calls)."""
  fn()  # traces and compiles
  t0 = time.perf_counter()
  fn()
  _settle_tier1(fn, time.perf_counter() - t0)
  _settle_native(fn)
  _settle_xla(fn)
  t0 = time.perf_counter()
  fn()
  one = max(time.perf_counter() - t0, 1e-7)
  number = max(1, int(min_repeat_s / one))
  repeats = max(3, min(repeats, int(max_total_s / max(one * number, 1e-9))))
  samples = []
  cpu0, wall0 = time.process_time(), time.perf_counter()
  for _ in range(repeats):
    t0 = time.perf_counter()
    for _ in range(number):
      fn()
    samples.append((time.perf_counter() - t0) / number)
  busy = (time.process_time() - cpu0) / max(time.perf_counter() - wall0, 1e-9)
  return statistics.median(samples), busy


def tiered(impls: dict) -> dict:
  """`impls` with its "jaxlite" callable run at `jax_jaxlite_tier` 0 ("jaxlite", the ratio
  base) and 1 ("jl-tier1"). The tier is part of jit's cache key, so each column keeps its own
  compiled executables. A column sets the tier only when it differs (an impl's calls are timed
  back to back, so the flag flips once per column, not per call); `run_workloads` restores it
  after each workload."""
  fn = impls.get("jaxlite")
  if fn is None:
    return impls
  import jaxlite

  def at(tier):
    def run():
      if jaxlite.config.jax_jaxlite_tier != tier:
        jaxlite.config.update("jax_jaxlite_tier", tier)
      return fn()
    run.single_shot = getattr(fn, "single_shot", False)
    return run
  out = {"jaxlite": at(0), "jl-tier1": at(1)}
  out.update((k, v) for k, v in impls.items() if k != "jaxlite")
  return out


def _jaxlite_tier():
  config = getattr(sys.modules.get("jaxlite"), "config", None)
  return None if config is None else config.jax_jaxlite_tier


def _restore_tier(tier) -> None:
  if tier is not None and _jaxlite_tier() != tier:
    sys.modules["jaxlite"].config.update("jax_jaxlite_tier", tier)


def fmt_seconds(s: float) -> str:
  if s < 1e-3:
    return f"{s * 1e6:9.2f} us"
  if s < 1:
    return f"{s * 1e3:9.2f} ms"
  return f"{s:9.3f} s "


def run_workloads(workloads, out=print, only=None):
  """Times every impl of every workload; returns rows (workload, impl, seconds)."""
  rows = []
  for name, impls in workloads:
    if only and not any(o in name for o in only):
      continue
    results, busy = {}, {}
    tier = _jaxlite_tier()
    for impl, fn in impls.items():
      try:
        if getattr(fn, "single_shot", False):
          results[impl] = fn()
        else:
          results[impl], busy[impl] = time_callable_cpu(fn)
      except Exception as e:  # a failing impl is reported, not fatal
        out(f"{name:42s} {impl:8s} FAILED: {type(e).__name__}: {e}")
    _restore_tier(tier)
    base = results.get("jaxlite")
    for impl, sec in results.items():
      ratio = f"{sec / base:8.2f}x" if base else ""
      cores = f"  cpu/wall {busy[impl]:4.2f}" if impl in busy else ""
      out(f"{name:42s} {impl:8s} {fmt_seconds(sec)}  {ratio}{cores}")
      rows.append((name, impl, sec))
  return rows
