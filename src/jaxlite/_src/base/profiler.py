"""`jax.profiler`: traces of jit tracing, compilation and execution plus user annotations,
written as Chrome trace-event JSON (gzipped) that Perfetto (ui.perfetto.dev) and
chrome://tracing open.

`start_trace(log_dir)` ... `stop_trace()` writes `log_dir/plugins/profile/<run>/
perfetto_trace.json.gz` (the file name JAX's `create_perfetto_trace=True` uses).
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time

_lock = threading.Lock()
_state = {"events": None, "log_dir": None, "t0": 0.0}


def is_active() -> bool:
  return _state["events"] is not None


def add_span(name: str, start: float, dur: float, cat: str = "user", args=None) -> None:
  """Records one complete event (times in seconds since the epoch) if a trace is running."""
  events = _state["events"]
  if events is None:
    return
  ev = {"name": name, "cat": cat, "ph": "X", "ts": start * 1e6, "dur": dur * 1e6,
        "pid": os.getpid(), "tid": threading.get_ident()}
  if args:
    ev["args"] = {k: str(v) for k, v in args.items()}
  with _lock:
    events.append(ev)


def start_trace(log_dir, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False, profiler_options=None) -> None:
  """Starts collecting trace events; `stop_trace` writes them under `log_dir`."""
  if is_active():
    raise RuntimeError("Profile has already been started. Only one profile may be run at a "
                       "time.")
  _state.update(events=[], log_dir=os.fspath(log_dir), t0=time.time())
  from jaxlite._src.base import instrumentation
  instrumentation.refresh()


def stop_trace() -> None:
  """Stops the trace and writes `perfetto_trace.json.gz` under the run's directory."""
  if not is_active():
    raise RuntimeError("No profile started")
  events, log_dir = _state["events"], _state["log_dir"]
  _state.update(events=None, log_dir=None)
  from jaxlite._src.base import instrumentation
  instrumentation.refresh()
  run = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime(_state["t0"]))
  out_dir = os.path.join(log_dir, "plugins", "profile", run)
  os.makedirs(out_dir, exist_ok=True)
  meta = [{"name": "process_name", "ph": "M", "pid": os.getpid(),
           "args": {"name": f"jaxlite {socket.gethostname()}"}}]
  path = os.path.join(out_dir, "perfetto_trace.json.gz")
  with gzip.open(path, "wt") as f:
    json.dump({"traceEvents": meta + events, "displayTimeUnit": "ms"}, f)
  _state["last_path"] = path


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options=None):
  """Profiles the block: `with jax.profiler.trace("/tmp/tb"): ...`."""
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


class TraceAnnotation:
  """A named span of host work in the trace (`with TraceAnnotation("step"):`)."""

  def __init__(self, name: str, **kwargs):
    if not isinstance(name, str):  # JAX's binding rejects it (TypeError) before any tracing
      raise TypeError(f"TraceAnnotation: name must be a str, got {name!r} of type "
                      f"{type(name).__name__}")
    self.name, self.kwargs = name, kwargs

  def __enter__(self):
    self._start = time.time()
    self._t = time.perf_counter()
    return self

  def __exit__(self, *exc):
    add_span(self.name, self._start, time.perf_counter() - self._t, "annotation", self.kwargs)
    return False


class StepTraceAnnotation(TraceAnnotation):
  """A training-step span: `with StepTraceAnnotation("train", step_num=i):`."""

  def __init__(self, name: str, **kwargs):
    super().__init__(name, **kwargs)


def annotate_function(func=None, name: str | None = None, **kwargs):
  """Decorator: each call of `func` is a TraceAnnotation named after it."""
  if func is None:
    return functools.partial(annotate_function, name=name, **kwargs)
  label = name or getattr(func, "__qualname__", getattr(func, "__name__", "function"))

  @functools.wraps(func)
  def wrapper(*args, **kw):
    with TraceAnnotation(label, **kwargs):
      return func(*args, **kw)
  return wrapper


class ProfileOptions:
  """Options JAX passes to its profiler; jaxlite's host tracer reads none of them."""

  def __init__(self):
    self.host_tracer_level = 2
    self.python_tracer_level = 0
    self.enable_hlo_proto = False
    self.start_timestamp_ns = 0
    self.duration_ms = 0
    self.advanced_configuration = {}
