"""The optional native tier (extra `jaxlite[native]`): hot fused kernels and threefry compiled
to multi-threaded loops by numba in a background thread, swapped in when ready.

This module never imports numba: it decides whether the tier is on, counts calls, and runs the
compile jobs. `codegen` writes the numba source, `cache` compiles it (or loads it, verified,
from disk), `backend` is tier 1's backend with its kernels wrapped in `HotSwap`.

Switches: config `jax_jaxlite_native` (env JAXLITE_NATIVE, default on; 0 turns the whole tier
off), JAXLITE_NATIVE_HOT (calls before a kernel is compiled, default 3), JAXLITE_NATIVE_CACHE
(cache folder, default ~/.cache/jaxlite/native).
"""
from __future__ import annotations

import importlib.util
import os
import time

from jaxlite._src.compiler import background
from jaxlite._src.base.config import config

# A kernel's calls before it is compiled: its first calls run on tier 1 at once.
HOT_CALLS = max(1, int(os.environ.get("JAXLITE_NATIVE_HOT", "3")))

# Timed calls of a new native kernel before it is kept (or dropped for the faster fallback):
# three of each thread count a fused kernel tries first (codegen._Threads alternates all and
# one), so that calls whose second thread found no free core do not decide alone (on the
# shared 2-core machine logsumexp's first native calls took 6-8 ms, its later ones 3 ms).
TRIALS = 6

# A native kernel is kept only if its best trial beats the fallback's best by this factor. The
# trials time the kernel alone, not what its numba threads cost the code around it (OpenMP
# workers that spin after the loop take the core the next BLAS call wanted): the MLP step's
# SGD update kernel won its trials by 9% (170 against 187 us) while the whole step ran 2-20%
# slower with it (quiet machine, interleaved runs). The kernels worth the swap win by far more
# (logsumexp 2.7x, the normal sampler 7x).
KEEP_RATIO = 0.8
# A kernel on one thread (a small one) leaves no workers behind: it only has to win clearly
# over the trials' noise.
SERIAL_KEEP_RATIO = 0.9


def available() -> bool:
  """numba is installed (found without importing it: `import jaxlite` stays cheap)."""
  return importlib.util.find_spec("numba") is not None


def enabled() -> bool:
  """The tier is on (flag and env) and numba is installed."""
  return bool(config.jax_jaxlite_native) and available()


class _State:
  __slots__ = ("on",)

  def __init__(self):
    self.on = bool(config.jax_jaxlite_native)


_state = _State()


# --- the background compiler (shared with the XLA tier: one compile at a time) ---------------

COMPILER = background.COMPILER


def wait(timeout: float | None = None) -> bool:
  """Blocks until every submitted background compile (native or XLA) has finished; False on
  timeout."""
  return COMPILER.wait(timeout)


class HotSwap:
  """Calls `fallback` until called HOT_CALLS times, then has `build()` (which returns the native
  callable, same signature) run on the compile thread and calls its result from then on.

  Choice by measurement: the fallback's calls are timed, and so are the native callable's first
  TRIALS calls; if its best is over KEEP_RATIO (0.8; SERIAL_KEEP_RATIO for a callable on one
  thread, by its `keep_ratio`) of the fallback's best (a loop of scalar
  libm calls can lose to NumPy's SIMD transcendentals; a marginal win does not pay for the
  threads), it is dropped and the fallback stays (`rejected`).
  `measure=False` skips that (for callables whose calls differ in size, where one call's time
  says nothing of another's). A failed build is logged once and leaves `fallback` in place
  (`error` holds why)."""
  __slots__ = ("fallback", "build", "name", "calls", "native", "error", "submitted",
               "best_fallback", "best_native", "trials", "rejected")

  def __init__(self, fallback, build, name: str, measure: bool = True):
    self.fallback, self.build, self.name = fallback, build, name
    self.calls, self.native, self.error, self.submitted = 0, None, None, False
    self.best_fallback = self.best_native = float("inf")
    self.trials, self.rejected = 0 if measure else TRIALS, False

  def __call__(self, *args):
    native = self.native
    if native is not None and _state.on:
      if self.trials >= TRIALS or COMPILER.pending:
        # Trials wait for the compile thread to go idle: compiling holds the GIL for long
        # stretches, and trials timed meanwhile read 2-4x slow (the MLP step's small kernels
        # measured 95 us in trials, 25 us alone), so kernels were rejected for the compiler.
        return native(*args)
      t = time.perf_counter()
      out = native(*args)
      self.best_native = min(self.best_native, time.perf_counter() - t)
      self.trials += 1
      keep = getattr(native, "keep_ratio", KEEP_RATIO)
      if self.trials == TRIALS and self.best_native > keep * self.best_fallback:
        self.native, self.rejected = None, True
      return out
    if not self.submitted:
      self.calls += 1
      if self.calls >= HOT_CALLS and _state.on:
        self.submitted = True
        COMPILER.submit(self._build)
    t = time.perf_counter()
    out = self.fallback(*args)
    self.best_fallback = min(self.best_fallback, time.perf_counter() - t)
    return out

  def _build(self) -> None:
    try:
      self.native = self.build()
    except Exception as e:  # noqa: BLE001 - any compile failure keeps the tier-1 kernel
      self.error = e
      import logging
      logger = logging.getLogger("jaxlite.native")
      logger.warning("jaxlite native tier: %s stays on tier 1: %s: %s", self.name,
                     type(e).__name__, e, exc_info=logger.isEnabledFor(logging.DEBUG))
