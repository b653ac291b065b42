"""jit's trace caches: one per traced function (same function and argument types -> same jaxpr),
the `CacheEntry` each holds (the jaxpr, its executable, how to run it), and `clear_caches`.

The wrappers (jit_function.py) register themselves in `live_wrappers` so that `clear_caches` and
`set_fast_runners` reach their per-wrapper caches without this module importing them.
"""
from __future__ import annotations

import importlib
import os
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base import fp_quiet
from jaxlite._src.base import tree_util
from jaxlite._src.compiler import backend
from jaxlite._src.transforms import cache_miss
from jaxlite._src.transforms import jit_arguments

# Whether per-wrapper fast runners may call executables directly; off while instrumentation
# wraps `CacheEntry.run` (debug_nans, timing, no_execution), which must see every call.
fast_runners_enabled = True


def set_fast_runners(enabled: bool) -> None:
  global fast_runners_enabled
  fast_runners_enabled = enabled
  for w in list(live_wrappers):
    w._fast_cache.clear()


class CacheEntry:
  __slots__ = ("closed", "out_tree", "lifted", "executable", "out_avals", "donation", "refs")

  def __init__(self, closed, out_tree, lifted):
    self.closed = closed
    self.out_tree = out_tree
    self.lifted = lifted
    self.executable = None
    self.out_avals = closed.out_avals
    self.donation = None  # donation.Plan per donation vector, made on the first donating call
    # (flat positions of Ref arguments, Refs the function closes over), None when neither:
    # every call checks that no Ref is passed twice nor both passed and closed over
    self.refs = None

  def compiled(self, on=None):
    """The executable on backend `on`: by default the one installed when it was first built
    (kept by the entry); another backend's is cached on the jaxpr (`compile_jaxpr`)."""
    if on is not None and on is not backend.installed():
      return backend.compile_jaxpr(self.closed, on)
    exe = self.executable
    if exe is None:
      exe = self.executable = backend.compile_program(self.closed)
    return exe

  def run(self, values, on=None):
    """Runs the executable of backend `on` (see `compiled`) on that backend's buffers; Arrays
    in the output pytree."""
    exe = self.executable if on is None else None
    token = fp_quiet.quiet()  # NumPy's floating-point warnings: XLA's kernels never warn
    try:
      outs = (exe or self.compiled(on))(*values)
    finally:
      fp_quiet.loud(token)
    make = core.make_array
    return self.out_tree.unflatten([make(o, a) for o, a in zip(outs, self.out_avals)])

  def fast_runner(self):
    """`run` for the eager all-Array call path. A function returning one Array of a NumPy
    dtype gets a runner without the pytree and aval machinery (what `run` computes, in ~1 µs
    less); anything else, or instrumentation on, gets `run` itself."""
    avals = self.out_avals
    if not fast_runners_enabled or not tree_util.treedef_is_leaf(self.out_tree) \
        or len(avals) != 1 or not isinstance(avals[0].dtype, np.dtype) \
        or avals[0].dtype == dtypes.float0:
      return self.run
    exe = self.compiled()
    aval = avals[0]
    dt, weak = aval.dtype, aval.weak_type
    # A backend's executable may offer its own one-result runner (XLA's: device buffers in and
    # out, no NumPy error state to set).
    own = getattr(exe, "one_result_runner", None)
    runner = None if own is None else own(dt, weak)
    if runner is not None:
      return runner
    make, from_numpy = core.make_array, core.host_array_from_numpy

    def run_one(values):
      token = fp_quiet.quiet()
      try:
        o = exe(*values)[0]
      finally:
        fp_quiet.loud(token)
      return from_numpy(o, weak) if o.dtype == dt else make(o, aval)
    return run_one


# Trace cache shared by every jit of the same function: same function and avals -> same jaxpr.
# Held weakly by the function, so a jit of a fresh lambda leaves nothing behind once the lambda
# goes; each function's cache is bounded (oldest entry evicted first) so that retracing on ever
# new shapes stays flat too. The bound is `TRACE_CACHE_SIZE` entries per function (4096, like
# JAX's per-function cache; JAXLITE_JIT_CACHE_SIZE overrides it). `clear_caches` empties all.
TRACE_CACHE_SIZE = int(os.environ.get("JAXLITE_JIT_CACHE_SIZE", 4096))
_trace_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# Functions that cannot be weakly referenced (callables with __slots__...): by id, at most this
# many, each entry (function, cache).
_UNWEAKREFABLE_LIMIT = 256
_unweakrefable_caches: dict = {}
# Every live jit wrapper, so that `clear_caches` and `set_fast_runners` can empty their
# per-wrapper caches too (jit_function.py adds each as it is made).
live_wrappers: "weakref.WeakSet" = weakref.WeakSet()


def cache_for(fun) -> dict:
  try:
    cache = _trace_caches.get(fun)
    if cache is None:
      cache = _trace_caches[fun] = {}
    return cache
  except TypeError:
    # Held strongly next to its cache, so that its id cannot be reused by another function
    # while the entry lives (the bound keeps that from growing without end).
    held = _unweakrefable_caches.get(id(fun))
    if held is None or held[0] is not fun:
      held = (fun, {})
      bounded_put(_unweakrefable_caches, id(fun), held, _UNWEAKREFABLE_LIMIT)
    return held[1]


def bounded_put(cache: dict, key, value, limit=None):
  """`cache[key] = value`, first evicting the oldest entries past `limit` (insertion order: a
  hit costs nothing extra on the dispatch path, unlike a true LRU's reordering)."""
  limit = TRACE_CACHE_SIZE if limit is None else limit
  while len(cache) >= limit > 0:
    try:
      del cache[next(iter(cache))]
    except (KeyError, RuntimeError, StopIteration):  # another thread evicted it first
      break
  cache[key] = value


def clear_caches():
  """Empties every trace, compile and derived-jaxpr cache (`jax.clear_caches`)."""
  _trace_caches.clear()
  _unweakrefable_caches.clear()
  jit_arguments.clear_arg_names()
  for w in list(live_wrappers):
    w._cache.clear()
    w._fast_cache.clear()
    w._sharded_cache.clear()
  cache_miss.clear()
  backend.clear_backend_caches()
  for module, name in DERIVED_CACHES:
    cache = getattr(importlib.import_module(f"jaxlite._src.{module}"), name)
    (cache.cache_clear if hasattr(cache, "cache_clear") else cache.clear)()


# Caches keyed by jaxprs or functions that other modules keep (all weak or bounded; listed here
# so that `clear_caches` empties them; tests/test_memory.py checks each still exists).
DERIVED_CACHES = (
    ("lax.control_flow.common", "_body_caches"), ("lax.control_flow.common", "_batched_bodies"),
    ("lax.control_flow.common", "_derived_bodies"), ("lax.control_flow.loops", "_wrappers"),
    ("lax.slicing_primitives", "_update_fns"), ("lax.dot", "_layout_plan"),
    ("interpreters.batching", "_jaxpr_cache"),
    ("interpreters.linearize", "_linearize_cache"), ("interpreters.ad", "_jvp_jaxpr_cache"),
    ("interpreters.ad", "_transpose_cache"), ("transforms.ad_checkpoint", "_remat_split_cached"),
    ("lax.windowed", "_compiled_computations"),
)
