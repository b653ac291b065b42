"""Tier 1's executor: runs a fused kernel over row tiles, on a pool of one worker per core.

NumPy drops the GIL inside its loops, so tiles on different threads overlap; each tile's values
stay in the core's L2 between the ops of the kernel. Outputs are preallocated and every tile
writes its rows into them.

Threads and BLAS: kernels never contain a matmul, and a kernel call returns only when all its
tiles are done, so BLAS (called between kernels, on the calling thread) never runs while pool
workers do, and never from two workers at once. BLAS keeps its own threads: set
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS to the core count (or fewer) so the
two add up to at most one thread per core at any moment.
"""
from __future__ import annotations

import itertools
import os
import threading
import time

import numpy as np

from jaxlite._src.base import machine
from jaxlite._src.compiler import adaptive
from jaxlite._src.compiler import tier_sizes


def _tile_bytes() -> int:
  """Half a core's L2 (sysfs), within 256 KiB..2 MiB; 1 MiB where the size is unknown."""
  l2 = machine.cache_bytes(2)
  return 1 << 20 if not l2 else min(max(l2 // 2, 256 << 10), 2 << 20)


# Target bytes of one tile, counted as the sum of every value the kernel reads or makes for
# its rows (fusion.Kernel.row_bytes). That sum is an upper bound: buffers are reused within a
# tile and views cost nothing, so the live set is about a third of it: half the L2 keeps it
# there. Measured on the 2-core dev machine (2 MiB L2, so 1 MiB): 256 KiB tiles cost up to 2x
# on logsumexp in per-tile Python overhead (~15 NumPy calls a tile), 1 MiB is within noise of
# the best on every row.
TILE_BYTES = _tile_bytes()

# Wide tiles (mode WIDE) hold up to this many base tiles' rows. Each NumPy call of a tile takes
# and gives back the GIL once; when a thread finds it held, it sleeps and is woken later (tens
# of microseconds on a VM), which costs more than a cheap op on an L2-sized tile (a uint32 add
# of the threefry hash: 3 us on 32K elements). Longer calls make fewer hand-offs per byte at
# the price of leaving the L2; which wins depends on the core count and the kernel, so it is
# one more mode the kernel times. Bounded so that the threads' tiles together stay far below
# a whole-array temporary (the peak memory WHOLE_MAX_TILES guards).
WIDE_FACTOR = 4

# Kernels whose largest value has fewer elements run inline as tier 0 code (see tiers.py, which
# decides without loading tier 1 whether a program has a value this big).
SMALL_ELEMENTS = tier_sizes.SMALL_ELEMENTS


def worker_count() -> int:
  """Workers (the calling thread included): JAXLITE_TIER1_THREADS, else the usable cores
  (machine.usable_cores: the CPU affinity). A call uses its share of them
  (machine.share: CPU devices running programs at once split the cores)."""
  env = os.environ.get("JAXLITE_TIER1_THREADS")
  if env:
    return max(1, int(env))
  return machine.usable_cores()


class _Pool:
  """The shared worker pool, made on first use; None where threads cannot start (Pyodide)."""

  def __init__(self):
    self.executor = None
    self.workers = None
    self.lock = threading.Lock()

  def get(self):
    if self.workers is None:
      with self.lock:
        if self.workers is None:
          workers = worker_count()
          if workers > 1:
            try:
              from concurrent.futures import ThreadPoolExecutor
              self.executor = ThreadPoolExecutor(workers - 1, thread_name_prefix="jaxlite-tier1")
              self.executor.submit(int).result()  # threads really start
            except (RuntimeError, ImportError, OSError):
              self.executor, workers = None, 1
          self.workers = workers
    return self.executor, self.workers


POOL = _Pool()


def _forget_pool_in_child() -> None:
  # A forked child has none of the parent's worker threads: submitting to the inherited
  # executor would wait forever. The child makes its own pool on first use.
  global POOL
  POOL = _Pool()


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_forget_pool_in_child)


# How a kernel runs a call: its tile function once over all rows (tier 0's whole-array NumPy
# calls, no per-tile overhead), over the tiles on the calling thread, or over the tiles on the
# calling thread plus the pool.
WHOLE, TILES, POOLED, WIDE = "whole", "tiles", "pool", "pool-wide"

# One call over all rows is a mode only for kernels of at most this many tiles (a working set of
# about as many MiB, see TILE_BYTES): its intermediates are whole arrays. On the 10M-element
# anchors (230-344 tiles) it never won (chain 28 ms against 11 pooled, 10M normals 534 against
# 241 tiled), and the one probe call in it set the program's peak memory: jit(random.normal)
# of 10M grew 345 MiB on tier 1 against tier 0's 153 and JAX's 182 (2026-12-05).
WHOLE_MAX_TILES = 16

# Adaptive choice between them (adaptive.ADAPTIVE; env JAXLITE_TIER1_ADAPT=0: always tiles,
# pooled where threads exist). Tiling wins only where a kernel's values outgrow the caches, and
# the pool only where a second core is free: a worker preempted while it holds the GIL stalls
# the caller, which on a loaded 2-core machine made a pooled kernel 4x slower than one thread
# (measured). Neither is known when the program compiles, so each kernel times its calls
# (adaptive.ModeChooser), the pooled and tiled modes probed first.


class TiledKernel:
  """Calls `tile_fn(first_row, n_rows, *operand_tiles, *output_tiles)` for each tile of the
  `n` rows (the first row places a tile in the whole, e.g. random_bits' counters), or once over
  all rows (mode WHOLE; see ADAPTIVE).

  `tiled[k]` says whether operand k is sliced by rows (else passed whole, to broadcast);
  `outs` are the outputs' (shape, dtype); `reuse[j]` the operand output j is written into.
  `last_tiles` / `last_threads` / `last_mode` record the latest call (how many tiles ran, on
  how many distinct threads, in which mode); `mode` is the mode chosen once probing is done.

  Pooled tiles are claimed one at a time from a shared counter by the calling thread and the
  pool's workers, so the caller never waits for a worker that has not started: a worker that
  gets no core finds no tiles left, and the caller waits at most for the tiles workers are
  running (dynamic scheduling, not a fixed split)."""

  def __init__(self, tile_fn, n: int, rows: int, tiled, outs, quiet: bool, reuse=None):
    self.tile_fn, self.n, self.rows = tile_fn, n, rows
    self.tiled = tuple(tiled)
    self.outs = tuple(outs)
    # Per output, the operand whose buffer it is written into (a dying buffer the program owns,
    # as tier 0's `out=`: no fresh allocation and its page faults), or -1 for a new buffer.
    self.reuse = tuple(reuse) if reuse is not None and any(r >= 0 for r in reuse) else None
    self.quiet = quiet
    self.bounds = [(lo, min(lo + rows, n)) for lo in range(0, n, rows)]
    self.wide_bounds = None  # mode WIDE's tiles, settled with the modes
    self.last_tiles = self.last_threads = 0
    self.last_mode = None
    # the candidate modes, settled on the first call (the pool exists then); a ModeChooser
    # where there are several
    self.modes = self.chooser = None

  @property
  def mode(self):
    """The mode chosen once probing is done (None before, and where there is no choice)."""
    return self.chooser.mode if self.chooser is not None else None

  def __call__(self, *operands):
    if self.reuse is None:
      outs = [np.empty(shape, dtype) for shape, dtype in self.outs]
    else:
      outs = [operands[r] if r >= 0 else np.empty(shape, dtype)
              for r, (shape, dtype) in zip(self.reuse, self.outs)]
    executor, workers = POOL.get()
    modes = self.modes
    if modes is None:
      modes = self.modes = self._candidates(executor, workers)
      if len(modes) > 1:
        self.chooser = adaptive.ModeChooser(modes)
    if len(modes) == 1:
      self._run(modes[0], executor, workers, operands, outs)
      return outs
    mode = self.chooser.pick()
    t = time.perf_counter()
    self._run(mode, executor, workers, operands, outs)
    self.chooser.record(mode, time.perf_counter() - t)
    return outs

  def _candidates(self, executor, workers) -> tuple:
    tiled = len(self.bounds) > 1
    pooled = tiled and executor is not None and workers > 1
    if not adaptive.ADAPTIVE:
      return (POOLED,) if pooled else (TILES,)
    whole = len(self.bounds) <= WHOLE_MAX_TILES
    wide = False
    if pooled:  # WIDE_FACTOR base tiles a tile, yet a tile for every worker
      rows = min(WIDE_FACTOR * self.rows, -(-self.n // workers))
      wide = rows >= 2 * self.rows
      if wide:
        self.wide_bounds = [(lo, min(lo + rows, self.n)) for lo in range(0, self.n, rows)]
    return (POOLED,) * pooled + (WIDE,) * wide + (TILES,) * tiled + (WHOLE,) * whole

  def _run(self, mode, executor, workers, operands, outs) -> None:
    self.last_mode = mode
    if mode == WHOLE:
      self._tiles([(0, self.n)], operands, outs)
      self.last_tiles = self.last_threads = 1
    elif mode == TILES:
      self._tiles(self.bounds, operands, outs)
      self.last_tiles, self.last_threads = len(self.bounds), 1
    else:
      bounds = self.wide_bounds if mode == WIDE else self.bounds
      job = _Job(self, bounds, operands, outs)
      # this program's share of the workers: CPU devices running at once split the cores
      for _ in range(min(machine.share(workers), len(bounds)) - 1):
        executor.submit(job.work)
      job.work()
      job.wait()
      self.last_tiles, self.last_threads = len(bounds), len(job.threads)

  def _tiles(self, bounds, operands, outs) -> None:
    fn, tiled = self.tile_fn, self.tiled
    if self.quiet:  # errstate is per thread: a worker does not see the caller's
      with np.errstate(all="ignore"):
        for lo, hi in bounds:
          fn(lo, hi - lo, *[x[lo:hi] if t else x for x, t in zip(operands, tiled)],
             *[o[lo:hi] for o in outs])
    else:
      for lo, hi in bounds:
        fn(lo, hi - lo, *[x[lo:hi] if t else x for x, t in zip(operands, tiled)],
           *[o[lo:hi] for o in outs])


class _Job:
  """One call of a TiledKernel shared by the threads running it: `work` claims tiles until none
  are left; `wait` returns once every claimed tile is done (raising the first tile error)."""
  __slots__ = ("kernel", "bounds", "operands", "outs", "claim", "lock", "done", "finished",
               "threads", "error")

  def __init__(self, kernel: TiledKernel, bounds, operands, outs):
    self.kernel, self.bounds, self.operands, self.outs = kernel, bounds, operands, outs
    self.claim = itertools.count().__next__  # atomic: one C call under the GIL
    self.lock = threading.Lock()
    self.done = threading.Event()
    self.finished = 0
    self.threads = set()
    self.error = None

  def work(self) -> None:
    bounds, claim, count = self.bounds, self.claim, 0
    i = claim()
    if i >= len(bounds):
      return  # a worker that started after the last tile was taken
    try:
      if self.kernel.quiet:
        with np.errstate(all="ignore"):
          count = self._loop(i, bounds, claim)
      else:
        count = self._loop(i, bounds, claim)
    finally:
      with self.lock:
        self.threads.add(threading.get_ident())
        self.finished += count
        if self.finished == len(bounds):
          self.done.set()

  def _loop(self, i, bounds, claim) -> int:
    fn, tiled, operands, outs = self.kernel.tile_fn, self.kernel.tiled, self.operands, self.outs
    count = 0
    while i < len(bounds):
      count += 1  # a tile that raises counts as finished: the error is raised by `wait`
      if self.error is None:
        lo, hi = bounds[i]
        try:
          fn(lo, hi - lo, *[x[lo:hi] if t else x for x, t in zip(operands, tiled)],
             *[o[lo:hi] for o in outs])
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
          self.error = e
      i = claim()
    return count

  def wait(self) -> None:
    self.done.wait()
    if self.error is not None:
      raise self.error


def tile_rows(n: int, row_bytes: int, workers: int) -> int:
  """Rows per tile: about TILE_BYTES of working set, and at least one tile per worker."""
  rows = max(1, TILE_BYTES // max(row_bytes, 1))
  rows = max(1, min(rows, -(-n // max(workers, 1))))
  # Tiles of equal size, as many as a multiple of the workers: 256 rows of 127-row tiles were
  # 127 + 127 + 2, one worker idle for the whole last tile.
  tiles = -(-n // rows)
  tiles = -(-tiles // max(workers, 1)) * max(workers, 1)
  return max(1, -(-n // tiles))
