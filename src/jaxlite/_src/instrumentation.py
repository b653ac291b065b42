"""Timing of jit's tracing, compilation and execution, for `jax.monitoring` and the profiler.

Installed only while someone listens (a duration/time-span listener or an active profiler
trace): it wraps three methods of the jit machinery and restores them when the last listener
goes, so programs nobody profiles pay nothing on the dispatch path.
"""
from __future__ import annotations

import time

from jaxlite._src import monitoring

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
      from jaxlite._src import profiler
      profiler.add_span(f"{kind}({name})", t0, dur, cat=kind)
  wrapper.__wrapped__ = method
  return wrapper


def _targets():
  from jaxlite._src import jit
  return [
      (jit.PjitFunction, "_trace", monitoring.JAXPR_TRACE_EVENT, "trace",
       lambda self: self._name),
      (jit._CacheEntry, "compiled", monitoring.BACKEND_COMPILE_EVENT, "compile", _entry_name),
      (jit._CacheEntry, "run", None, "execute", _entry_name),
  ]


def refresh() -> None:
  """Installs or removes the timing wrappers to match whether anyone listens."""
  from jaxlite._src import profiler
  wanted = monitoring.has_timing_listeners() or profiler.is_active()
  if wanted and not _saved:
    for cls, attr, event, kind, name_of in _targets():
      method = cls.__dict__[attr]
      _saved[(cls, attr)] = method
      setattr(cls, attr, _timed(event, kind, name_of, method))
  elif not wanted and _saved:
    for (cls, attr), method in _saved.items():
      setattr(cls, attr, method)
    _saved.clear()
