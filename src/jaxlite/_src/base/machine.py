"""What the host gives compiled programs to run on: usable cores, cache sizes, and how many
programs share the cores right now.

A leaf module (no jaxlite imports): tier 1's executor sizes its tiles and pool from it, the PRNG
its hash blocks, `compiler/blas.py` the BLAS threads of a program; the SPMD runtime, which runs
one program per CPU device at once, says how many run (`sharing`), so that each takes its share
of the cores instead of all of them.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading


@functools.lru_cache(maxsize=None)
def usable_cores() -> int:
  """The cores this process may run on (its CPU affinity: `taskset` and container limits
  narrow it), else os.cpu_count()."""
  try:
    return max(1, len(os.sched_getaffinity(0)))
  except (AttributeError, OSError):
    return os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def cache_bytes(level: int) -> int | None:
  """Size of one core's data (or unified) cache of `level` (Linux sysfs), None where unknown.
  A shared cache (L3) is reported whole: divide by the cores sharing it for one core's part."""
  base = "/sys/devices/system/cpu/cpu0/cache"
  try:
    entries = os.listdir(base)
  except OSError:
    return None
  for entry in sorted(entries):
    if not entry.startswith("index"):
      continue
    try:
      with open(f"{base}/{entry}/level") as f:
        if int(f.read()) != level:
          continue
      with open(f"{base}/{entry}/type") as f:
        if f.read().strip() not in ("Data", "Unified"):
          continue
      with open(f"{base}/{entry}/size") as f:
        text = f.read().strip().upper()
    except (OSError, ValueError):
      continue
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    try:
      return int(text.rstrip("KMG")) * scale
    except ValueError:
      return None
  return None


# Programs running at once in this process (device programs of an SPMD run); 1 outside runs.
_lock = threading.Lock()
_busy = [1]


def programs() -> int:
  """How many compiled programs share the cores now (at least 1)."""
  return _busy[0]


def share(total: int) -> int:
  """One program's part of `total` threads while `programs()` run at once: total // programs,
  at least 1, so that the programs together never ask for more threads than `total`."""
  return max(1, total // _busy[0])


@contextlib.contextmanager
def sharing(n: int):
  """`n` programs run at once for the duration (nested runs add up)."""
  with _lock:
    _busy[0] += n - 1
  try:
    yield
  finally:
    with _lock:
      _busy[0] -= n - 1
