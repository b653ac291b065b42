"""NumPy's BLAS thread count: finding OpenBLAS's setter, and tier 1's choice of the count per
program (`AdaptiveThreads`).

A matrix product big enough for OpenBLAS's threads (`threaded_products`) runs on all of
them, and they busy-wait after each call for the next. On a quiet machine that is the fastest
way (the MLP anchor's five products: 2.4 ms on two threads, 4.4 ms on one, 2-core AMD EPYC).
When other work holds a core, the call waits for a worker that has lost its core and the
spinning workers take time from the rest: the MLP step took 7.4 ms on two threads and 5.1 ms on
one with one other busy process, 25 ms against 11 ms with three (2026-12-05; JAX 5.2 and 8.7
ms). Which count wins is the machine's state, not the program's, so tier 1 times its calls.
"""
from __future__ import annotations

import math
import os
import time

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.compiler import adaptive

# A matrix product whose m * n * k is past this runs on OpenBLAS's threads (its gemm takes one
# thread up to 65536 * GEMM_MULTITHREAD_THRESHOLD, 4 by default).
THREADED_MNK = 1 << 18

_BLAS = []  # [(get_num_threads, set_num_threads) or None], once looked for


def threaded_products(jaxpr) -> bool:
  """Whether some matrix product of `jaxpr`, its loop bodies and branches included, is big
  enough for BLAS threads."""
  for e in jaxpr.eqns:
    if e.primitive is not kinds.roles.dot_general:
      if any(threaded_products(sub) for sub in core.jaxprs_in_params(e.params)):
        return True
      continue
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    lhs, rhs = (v.aval.shape for v in e.invars)
    k = math.prod(lhs[d] for d in lc)
    m = math.prod(s for d, s in enumerate(lhs) if d not in lc and d not in lb)
    n = math.prod(s for d, s in enumerate(rhs) if d not in rc and d not in rb)
    if m * n * k > THREADED_MNK:
      return True
  return False


def openblas():
  """OpenBLAS's (get, set) of its thread count, when NumPy's BLAS is a loaded OpenBLAS (Linux:
  found in /proc/self/maps), else None. Setting the count costs ~0.4 us; it is process-wide."""
  if not _BLAS:
    _BLAS.append(_find_openblas())
  return _BLAS[0]


def _loaded_openblas():
  """The OpenBLAS libraries loaded in this process (Linux: /proc/self/maps), NumPy's own first
  (numpy.libs/ in a wheel): SciPy or torch may have loaded another copy."""
  import ctypes
  try:
    with open("/proc/self/maps") as f:
      paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
  except OSError:
    return
  for path in sorted(paths, key=lambda p: ("numpy" not in p, p)):
    try:
      # the library NumPy already loaded (NOLOAD: never a second copy), its symbols kept local
      yield ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0))
    except OSError:
      continue


def _find_openblas():
  import ctypes
  for lib in _loaded_openblas():
    for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "64_"), ("openblas", ""),
                           ("scipy_openblas", "")):
      get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
      set_threads = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
      if get is not None and set_threads is not None:
        get.restype, get.argtypes = ctypes.c_int, []
        set_threads.restype, set_threads.argtypes = None, [ctypes.c_int]
        return get, set_threads
  return None


_GEMM = {}  # dtype name -> cblas_gemm's answer, once looked for


def cblas_gemm(dtype: str):
  """(address, ilp64) of the CBLAS gemm for `dtype` ("float32": sgemm, "float64": dgemm) of the
  OpenBLAS NumPy loaded, the one its matmul calls (ilp64: 64-bit integer arguments), or None
  (no OpenBLAS found: another BLAS, another platform). A library naming its symbols without
  the `64_` suffix is taken as ILP64 only where its config string says USE64BITINT."""
  if dtype not in _GEMM:
    _GEMM[dtype] = _find_gemm({"float32": "s", "float64": "d"}[dtype])
  return _GEMM[dtype]


def _find_gemm(letter: str):
  import ctypes
  for lib in _loaded_openblas():
    for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("", ""), ("scipy_", "")):
      fn = getattr(lib, f"{prefix}cblas_{letter}gemm{suffix}", None)
      if fn is None:
        continue
      if suffix:
        ilp64 = True
      else:
        config = getattr(lib, f"{prefix}openblas_get_config", None)
        if config is None:
          continue
        config.restype, config.argtypes = ctypes.c_char_p, []
        ilp64 = b"USE64BITINT" in (config() or b"")
      return ctypes.cast(fn, ctypes.c_void_p).value, ilp64
  return None


def one_thread(lib) -> int:
  """Sets the thread count of `lib` (`openblas()`'s (get, set), or None) to one; returns the
  count to set back afterwards, 0 where there is nothing to set back."""
  if lib is None:
    return 0
  threads = lib[0]()
  if threads < 2:
    return 0
  lib[1](1)
  return threads


ALL, ONE = "all", 1  # the modes: BLAS's own thread count, or one thread


class AdaptiveThreads:
  """Compiled program `fn` run with the BLAS thread count as set (ALL) or with one (ONE), the
  faster chosen by timing its calls (adaptive.ModeChooser: probes, then now and then the
  other; env JAXLITE_TIER1_ADAPT=0 turns this off). Tier 1 wraps its programs in it, tier 0
  does not. The count is process-wide: a BLAS call another thread makes during a ONE call runs
  on one thread too (same values; programs on several threads, as sharded ones, each restore
  the count they found, so it ends as it was). `last_mode`: the latest call's mode."""

  def __init__(self, fn, get_threads, set_threads):
    self.fn, self.lib = fn, (get_threads, set_threads)
    self.chooser = adaptive.ModeChooser((ALL, ONE))
    self.last_mode = None
    self.__jaxlite_source__ = getattr(fn, "__jaxlite_source__", repr(fn))
    self.__jaxlite_kernels__ = getattr(fn, "__jaxlite_kernels__", [])

  @property
  def mode(self):
    return self.chooser.mode

  def __call__(self, *args):
    mode = self.last_mode = self.chooser.pick()
    restore = one_thread(self.lib) if mode == ONE else 0
    t = time.perf_counter()
    try:
      return self.fn(*args)
    finally:
      self.chooser.record(mode, time.perf_counter() - t)
      if restore:
        self.lib[1](restore)


def adapt(fn, jaxpr):
  """`fn` (the compiled `jaxpr`), in an AdaptiveThreads where the choice exists: a product big
  enough for BLAS threads, an OpenBLAS found with more than one thread, and adaptive tier 1."""
  if not adaptive.ADAPTIVE or not threaded_products(jaxpr):
    return fn
  lib = openblas()
  if lib is None or lib[0]() < 2:
    return fn
  return AdaptiveThreads(fn, *lib)
