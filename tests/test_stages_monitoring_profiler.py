"""jax.stages types, jax.monitoring listeners of jit events, and jax.profiler traces written as
Chrome/Perfetto JSON."""
import gzip
import json
import os

import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import monitoring, profiler, stages
from jaxlite._src.transforms import jit_cache


def test_stage_types_are_what_jit_returns():
  f = jaxlite.jit(lambda x: x * 2)
  traced = f.trace(1.0)
  lowered = traced.lower()
  compiled = lowered.compile()
  assert isinstance(f, stages.Wrapped)
  assert type(traced) is stages.Traced and type(lowered) is stages.Lowered
  assert type(compiled) is stages.Compiled
  assert float(compiled(3.0)) == 6.0
  info = stages.ArgInfo(jaxlite.typeof(jnp.ones(3)), False)
  assert info.shape == (3,) and info.dtype == jnp.float32 and not info.donated


def test_monitoring_records_trace_and_compile_durations():
  events = []
  listener = lambda e, d, **kw: events.append((e, kw["fun_name"], d >= 0))
  monitoring.register_event_duration_secs_listener(listener)
  try:
    def my_fun(x):
      return jnp.sin(x) + 1
    f = jaxlite.jit(my_fun)
    f(1.0)
    f(2.0)  # cache hit: nothing traced or compiled
  finally:
    monitoring.unregister_event_duration_listener(listener)
  assert events == [("/jax/core/compile/jaxpr_trace_duration", "my_fun", True),
                    ("/jax/core/compile/backend_compile_duration", "my_fun", True)]
  assert not hasattr(jit_cache.CacheEntry.run, "__wrapped__")  # instrumentation removed


def test_monitoring_user_events_and_errors():
  seen = []
  cb = lambda e, **kw: seen.append((e, kw))
  monitoring.register_event_listener(cb)
  monitoring.record_event("/my/event", k=1)
  monitoring.unregister_event_listener(cb)
  monitoring.record_event("/my/event")
  assert seen == [("/my/event", {"k": 1})]
  with pytest.raises(AssertionError):
    monitoring.unregister_event_listener(cb)
  scalars = []
  monitoring.register_scalar_listener(lambda e, v, **kw: scalars.append((e, v)))
  monitoring.record_scalar("/s", 3.5)
  monitoring.clear_event_listeners()
  monitoring.record_scalar("/s", 4.0)
  assert scalars == [("/s", 3.5)]


def _read_trace(log_dir):
  runs = os.listdir(os.path.join(log_dir, "plugins", "profile"))
  assert len(runs) == 1
  path = os.path.join(log_dir, "plugins", "profile", runs[0], "perfetto_trace.json.gz")
  with gzip.open(path, "rt") as f:
    return json.load(f)["traceEvents"]


def test_profiler_trace_writes_chrome_json(tmp_path):
  @profiler.annotate_function
  def helper(v):
    return v + 1

  with profiler.trace(str(tmp_path)):
    with profiler.StepTraceAnnotation("train", step_num=3):
      g = jaxlite.jit(lambda x: jnp.cos(x) * 3)
      g(1.0)
      g(2.0)
      helper(1)
  events = _read_trace(str(tmp_path))
  spans = [(e["name"], e["cat"]) for e in events if e["ph"] == "X"]
  assert spans == [("trace(<lambda>)", "trace"), ("compile(<lambda>)", "compile"),
                   ("execute(<lambda>)", "execute"), ("execute(<lambda>)", "execute"),
                   ("test_profiler_trace_writes_chrome_json.<locals>.helper", "annotation"),
                   ("train", "annotation")]
  step = [e for e in events if e["name"] == "train"][0]
  assert step["args"] == {"step_num": "3"} and step["dur"] >= 0


def test_profiler_start_stop_errors(tmp_path):
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  profiler.start_trace(str(tmp_path))
  try:
    with pytest.raises(RuntimeError, match="already been started"):
      profiler.start_trace(str(tmp_path))
  finally:
    profiler.stop_trace()
  assert [e for e in _read_trace(str(tmp_path)) if e["ph"] == "X"] == []
