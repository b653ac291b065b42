"""Times workloads side by side (jaxlite, NumPy, and JAX / PyTorch where installed).

A benchmark module exposes `workloads()` -> [(name, {impl: zero-arg callable})]; each callable
is warmed up, then timed in repeats of adaptively many calls; the median per call is reported.
"""
from __future__ import annotations

import statistics
import time


def time_callable(fn, min_repeat_s: float = 0.05, repeats: int = 7, max_total_s: float = 20.0):
  """Median seconds per call of `fn`, after one warm-up call."""
  fn()
  t0 = time.perf_counter()
  fn()
  one = max(time.perf_counter() - t0, 1e-7)
  number = max(1, int(min_repeat_s / one))
  repeats = max(3, min(repeats, int(max_total_s / max(one * number, 1e-9))))
  samples = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    for _ in range(number):
      fn()
    samples.append((time.perf_counter() - t0) / number)
  return statistics.median(samples)


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
    results = {}
    for impl, fn in impls.items():
      try:
        results[impl] = time_callable(fn) if not getattr(fn, "single_shot", False) else fn()
      except Exception as e:  # a failing impl is reported, not fatal
        out(f"{name:42s} {impl:8s} FAILED: {type(e).__name__}: {e}")
    base = results.get("jaxlite")
    for impl, sec in results.items():
      ratio = f"{sec / base:8.2f}x" if base else ""
      out(f"{name:42s} {impl:8s} {fmt_seconds(sec)}  {ratio}")
      rows.append((name, impl, sec))
  return rows
