"""numba's thread pool for the native tier: which threading layer runs the parallel kernels, and
how a parallel loop is cut into chunks on it (imports numba: loaded only by a compile).

numba picks a layer at its first parallel launch: TBB, then OpenMP, then its own `workqueue`,
the first whose library loads. numba's OpenMP layer needs the system's libgomp (libgomp1 on
Debian; absent from slim containers and from the TPU machine's 13-core host), its TBB layer
libtbb, which the `tbb` wheel installs under the environment's lib/ folder, off the loader's
path. Without either a machine gets `workqueue`, and there the native logsumexp anchor
(4096x1024 float32, 13 cores, 2026-12-06) took 1.0-1.6 ms where OpenMP took 0.37-0.51 ms and
JAX 0.70-0.75 ms (benchmarks/diag_many_cores.py; BENCHMARKS.md, issue 32). workqueue is also
not thread-safe: CPU devices launching parallel kernels at once must not share it.

`configure()` (before the first launch) therefore puts OpenMP first (measured there, and on the
2-core machine, where it has always run), then TBB with the `tbb` wheel's libtbb loaded by path
when OpenMP's library is missing, then workqueue; an explicit NUMBA_THREADING_LAYER or
NUMBA_THREADING_LAYER_PRIORITY is left as it is (libtbb is still loaded for an explicit
`tbb`). `chunk(count)` is the chunk size a kernel of
`count` iterations sets around its calls.
"""
from __future__ import annotations

import importlib.metadata
import os
import sys

import numba

# Parallel loops run in chunks of about 1/CHUNKS of their trip count, handed out as threads
# free up: numba's default splits a loop evenly once, and on a shared machine a thread that
# loses its core then holds the whole call up, as tier 1's README says of its pool. On
# workqueue, whose threads nap between polls for work, more chunks cost more than they save:
# logsumexp's kernel at 13 threads took 1.56 ms in 32 chunks against 1.03 ms split evenly
# (13-core host); there `chunk` is numba's even split.
CHUNKS = 32

_layer = []  # the layer numba runs, once known


def configure() -> None:
  """Sets numba's layer priority to OpenMP, TBB, workqueue unless the user chose (see the
  module's docstring), and loads the `tbb` wheel's libtbb where TBB may be used: OpenMP's
  library does not load, or NUMBA_THREADING_LAYER asks for TBB. Call before numba's first
  parallel launch (later calls change nothing)."""
  chosen = os.environ.get("NUMBA_THREADING_LAYER", "default")
  if chosen == "default" and not os.environ.get("NUMBA_THREADING_LAYER_PRIORITY"):
    numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]
  if chosen == "tbb" or not _openmp_loads():
    load_pip_tbb()


def _openmp_loads() -> bool:
  try:
    from numba.np.ufunc import omppool  # noqa: F401  (loads libgomp, as numba's launch would)
  except ImportError:
    return False
  return True


def load_pip_tbb() -> str | None:
  """Loads libtbb from the `tbb` wheel (it installs the library into the environment's lib/
  folder, where numba's tbbpool, which names only `libtbb.so.12`, does not look); the path,
  or None where that wheel is not installed or its library does not load (Linux only: the
  Windows and macOS layers numba uses there need no help)."""
  if not sys.platform.startswith("linux"):
    return None
  try:
    files = importlib.metadata.files("tbb") or []
  except importlib.metadata.PackageNotFoundError:
    return None
  for f in files:
    if f.name == "libtbb.so.12":
      path = os.path.normpath(str(f.locate()))
      try:
        import ctypes
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # tbbpool's libtbb.so.12 resolves to it
      except OSError:
        return None
      return path
  return None


def layer() -> str:
  """The threading layer numba runs (launching its threads if they are not running yet)."""
  if not _layer:
    numba.get_num_threads()  # launches the pool: the layer is chosen here
    _layer.append(numba.threading_layer())
  return _layer[0]


def chunk(count: int) -> int:
  """The parallel chunk size for a loop of `count` iterations: about count / CHUNKS, or 0
  (numba's even split) on workqueue."""
  return 0 if layer() == "workqueue" else max(1, count // CHUNKS)
