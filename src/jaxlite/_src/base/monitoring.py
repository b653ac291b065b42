"""`jax.monitoring`: listeners for events and durations jaxlite records (jit tracing and
compilation times, under JAX's event names), plus the user's own `record_*` calls."""
from __future__ import annotations

from typing import Callable

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_event_listeners: list = []
_event_duration_secs_listeners: list = []
_event_time_span_listeners: list = []
_scalar_listeners: list = []


def record_event(event: str, **kwargs) -> None:
  for callback in list(_event_listeners):
    callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
  for callback in list(_event_duration_secs_listeners):
    callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
  for callback in list(_event_time_span_listeners):
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value, **kwargs) -> None:
  for callback in list(_scalar_listeners):
    callback(event, value, **kwargs)


def _changed() -> None:
  from jaxlite._src.base import instrumentation
  instrumentation.refresh()


def register_event_listener(callback: Callable) -> None:
  _event_listeners.append(callback)
  _changed()


def register_event_duration_secs_listener(callback: Callable) -> None:
  _event_duration_secs_listeners.append(callback)
  _changed()


def register_event_time_span_listener(callback: Callable) -> None:
  _event_time_span_listeners.append(callback)
  _changed()


def register_scalar_listener(callback: Callable) -> None:
  _scalar_listeners.append(callback)
  _changed()


def _unregister(table: list, callback, kind: str) -> None:
  if callback not in table:
    raise AssertionError(f"unregister_{kind}: {callback!r} is not registered")
  table.remove(callback)
  _changed()


def unregister_event_listener(callback) -> None:
  _unregister(_event_listeners, callback, "event_listener")


def unregister_event_duration_listener(callback) -> None:
  _unregister(_event_duration_secs_listeners, callback, "event_duration_listener")


def unregister_event_time_span_listener(callback) -> None:
  _unregister(_event_time_span_listeners, callback, "event_time_span_listener")


def unregister_scalar_listener(callback) -> None:
  _unregister(_scalar_listeners, callback, "scalar_listener")


def clear_event_listeners() -> None:
  for table in (_event_listeners, _event_duration_secs_listeners, _event_time_span_listeners,
                _scalar_listeners):
    table.clear()
  _changed()


def has_timing_listeners() -> bool:
  return bool(_event_duration_secs_listeners or _event_time_span_listeners)
