"""Hooks on jit and eager dispatch, installed only while a feature needs them:
timing of jit's tracing, compilation and execution (for `jax.monitoring` listeners and the
profiler) and the `jax_debug_nans`/`jax_debug_infs` checks.

`refresh()` restores the original methods, then wraps those the active features need, so
programs that use none of them pay nothing on the dispatch path.
"""
from __future__ import annotations

import time
import types

import numpy as np

from jaxlite._src.base import core, monitoring
from jaxlite._src.base import config as config_lib
from jaxlite._src.base.config import config

_saved: dict = {}


def _entry_name(entry) -> str:
  dbg = getattr(entry.closed.jaxpr, "debug_info", None)
  src = getattr(dbg, "func_src_info", None) or "<jit>"
  return src.split(" ")[0]


def _timed(event, kind, name_of, method):
  def wrapper(self, *args, **kwargs):
    start = time.perf_counter()
    t0 = time.time()
    try:
      return method(self, *args, **kwargs)
    finally:
      dur = time.perf_counter() - start
      name = name_of(self)
      if event is not None:
        monitoring.record_event_duration_secs(event, dur, fun_name=name)
        monitoring.record_event_time_span(event, t0, t0 + dur, fun_name=name)
      from jaxlite._src.base import profiler
      profiler.add_span(f"{kind}({name})", t0, dur, cat=kind)
  return wrapper


# --- debug_nans / debug_infs -----------------------------------------------------------------

def _invalid_kind(values) -> str | None:
  """'nan' or 'inf' when a checked kind of invalid value is among the NumPy `values`."""
  for v in values:
    v = np.asarray(v)
    if v.dtype.kind not in "fc":
      continue
    if config.jax_debug_nans and np.isnan(v).any():
      return "nan"
    if config.jax_debug_infs and np.isinf(v).any():
      return "inf"
  return None


def _checked_eager(method):
  def process_primitive(self, primitive, args, params):
    out = method(self, primitive, args, params)
    if not (config.jax_debug_nans or config.jax_debug_infs):  # on in another thread only
      return out
    outs = out if primitive.multiple_results else [out]
    kind = _invalid_kind([o._host_value() for o in outs if type(o) is core.array_type])
    if kind is not None:
      raise FloatingPointError(f"invalid value ({kind}) encountered in {primitive.name}")
    return out
  return process_primitive


def _checked_run(method):
  def run(self, values, on=None):
    out = method(self, values, on)
    if not (config.jax_debug_nans or config.jax_debug_infs):  # on in another thread only
      return out
    kind = _invalid_kind([o._host_value() for o in _leaves(out) if type(o) is core.array_type])
    if kind is not None:
      _rerun_deoptimized(self, values)
      raise FloatingPointError(
          f"invalid value ({kind}) encountered in jit({_entry_name(self)}). Because "
          "jax_config.debug_nans.value and/or config.jax_debug_infs is set, the de-optimized "
          "function (i.e., the function as if the `jit` decorator were removed) was called in "
          "an attempt to get a more precise error message. However, the de-optimized function "
          "did not produce invalid values during its execution.")
    return out
  return run


def _leaves(tree):
  from jaxlite._src.base import tree_util
  return tree_util.tree_leaves(tree)


def _rerun_deoptimized(entry, values):
  """Evaluates the jaxpr op by op, so the eager check names the primitive that went wrong."""
  closed = entry.closed
  args = [core.make_array(np.asarray(v), v_aval.aval)
          for v, v_aval in zip(values, closed.jaxpr.invars)]
  with core.set_current_trace(core.eval_trace):
    core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- log_compiles ---------------------------------------------------------------------------

def _logged_trace(method):
  import logging
  logger = logging.getLogger("jax._src.dispatch")

  def _trace(self, *args, **kwargs):
    if not config.jax_log_compiles:  # on in another thread only
      return method(self, *args, **kwargs)
    start = time.perf_counter()
    entry = method(self, *args, **kwargs)
    logger.warning("Finished tracing %s for jit in %.9f sec", self._name,
                   time.perf_counter() - start)
    return entry
  return _trace


def _logged_compile(method):
  import logging
  pxla_logger = logging.getLogger("jax._src.interpreters.pxla")
  logger = logging.getLogger("jax._src.dispatch")

  def compiled(self):
    if self.executable is not None or not config.jax_log_compiles:
      return method(self)
    name = _entry_name(self)
    avals = tuple(self.closed.in_avals)
    mapping = "(" + "".join("UnspecifiedValue, " for _ in avals).rstrip(" ") + ")"
    pxla_logger.warning("Compiling jit(%s) with global shapes and types %s. Argument mapping: "
                        "%s.", name, avals, mapping)
    start = time.perf_counter()
    exe = method(self)
    logger.warning("Finished NumPy code generation of jit(%s) in %.9f sec", name,
                   time.perf_counter() - start)
    return exe
  return compiled


# --- no_tracing / no_execution ------------------------------------------------------------------

def _refuse_trace(method):
  def _trace(self, *args, **kwargs):
    if not config.jax_no_tracing:  # on in another thread only
      return method(self, *args, **kwargs)
    raise RuntimeError(f"re-tracing function {_jit.fun_src_info(self._fun)} for `jit`, but "
                       "'no_tracing' is set")
  return _trace


def _refuse_run(method):
  def run(self, values, on=None):
    if not config.jax_no_execution:  # on in another thread only
      return method(self, values, on)
    raise RuntimeError(f"JAX tried to execute function jit({_entry_name(self)}), but the "
                       "no_execution config option is set")
  return run


def _refuse_eager(method):
  def process_primitive(self, primitive, args, params):
    if not config.jax_no_execution:  # on in another thread only
      return method(self, primitive, args, params)
    raise RuntimeError(f"JAX tried to execute function jit({primitive.name}), but the "
                       "no_execution config option is set")
  return process_primitive


# --- installing ----------------------------------------------------------------------------------

# What the hooks wrap of jit (transforms/jit_function.py and jit_cache.py), registered at jit's
# import so that this module, which config and monitoring call, never imports up (issue 29);
# until then there is no jit to wrap.
_jit = None


def register_jit(*, wrapper, cache_entry, set_fast_runners, fun_src_info) -> None:
  """Installs jit's parts the hooks act on: the wrapper class (whose `_trace` they wrap), the
  trace cache entry class (`run`, `compiled`), the switch of the fast runners that bypass
  `run`, and how a traced function is named in errors."""
  global _jit
  _jit = types.SimpleNamespace(PjitFunction=wrapper, CacheEntry=cache_entry,
                               set_fast_runners=set_fast_runners, fun_src_info=fun_src_info)
  refresh()


def refresh() -> None:
  """Makes the installed wrappers match the features that are on."""
  from jaxlite._src.base import profiler
  jit = _jit
  if jit is None:
    return
  for (cls, attr), method in _saved.items():
    setattr(cls, attr, method)
  _saved.clear()
  timing = monitoring.has_timing_listeners() or profiler.is_active()
  on = config._on_anywhere  # a flag context in any thread needs the hook; it checks per thread
  checking = on("jax_debug_nans") or on("jax_debug_infs")

  def wrap(cls, attr, make):
    key = (cls, attr)
    if key not in _saved:
      _saved[key] = cls.__dict__[attr]
    setattr(cls, attr, make(cls.__dict__[attr]))

  if on("jax_no_tracing"):
    wrap(jit.PjitFunction, "_trace", _refuse_trace)
  if on("jax_no_execution"):
    wrap(jit.CacheEntry, "run", _refuse_run)
    wrap(core.EvalTrace, "process_primitive", _refuse_eager)
  if on("jax_log_compiles"):
    wrap(jit.PjitFunction, "_trace", _logged_trace)
    wrap(jit.CacheEntry, "compiled", _logged_compile)
  if checking:
    wrap(core.EvalTrace, "process_primitive", _checked_eager)
    wrap(jit.CacheEntry, "run", _checked_run)
  if timing:
    wrap(jit.PjitFunction, "_trace", lambda m: _timed(monitoring.JAXPR_TRACE_EVENT, "trace",
                                                       lambda self: self._name, m))
    wrap(jit.CacheEntry, "compiled", lambda m: _timed(monitoring.BACKEND_COMPILE_EVENT,
                                                        "compile", _entry_name, m))
    wrap(jit.CacheEntry, "run", lambda m: _timed(None, "execute", _entry_name, m))
  hooked = (core.EvalTrace, "process_primitive") in _saved
  core.eager_fast_trace = None if hooked else core.eval_trace
  jit.set_fast_runners((jit.CacheEntry, "run") not in _saved)


config_lib._refresh.append(refresh)
