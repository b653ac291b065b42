"""Bounded memory: jit's caches hold functions weakly or up to a bound, so long-running loops of
jits, calls and retraces keep the heap flat after warm-up; `jax.clear_caches` empties them."""
import gc
import importlib
import tracemalloc

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite._src import jit_function as jit_mod

# Each compile of generated source keeps ~100-500 bytes: Python keeps the strings it interns for
# the new function and file names, and numpy_codegen names every executable uniquely
# (`_jaxpr_fn{N}`, `<jaxlite tier0 _jaxpr_fnN>`). Until codegen reuses one name, "flat" means far
# under what holding each traced function cost (~5.5 KB a jit before the fix).
PER_COMPILE_SLACK = 600


def _growth(step, n, warmup):
  """Bytes the traced heap grew by over `n` calls of `step(i)` after `warmup` calls.

  Tracing starts before the warm-up: cache entries made then and evicted later must count as
  freed, or a full cache's turnover would look like growth."""
  tracemalloc.start()
  try:
    for i in range(warmup):
      step(i)
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(warmup, warmup + n):
      step(i)
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - before
  finally:
    tracemalloc.stop()


@pytest.fixture
def small_trace_cache(monkeypatch):
  monkeypatch.setattr(jit_mod, "TRACE_CACHE_SIZE", 32)


def _fresh_lambda(x):
  return lambda i: jax.jit(lambda v: v * 2 + 1)(x)


def _one_function(x):
  f = jax.jit(lambda v: v * 2 + 1)
  return lambda i: f(x)


def _many_shapes(_):
  f = jax.jit(lambda v: v.sum() * 2)
  return lambda i: f(np.ones(i + 1, np.float32))


def _jit_in_loop(x):
  def step(i):
    def body(v):
      return jnp.sin(v) + i
    return jax.jit(body)(x)
  return step


CASES = [  # (name, make step, calls measured, warm-up calls, allowed growth in bytes)
    ("fresh-lambdas", _fresh_lambda, 600, 100, 600 * PER_COMPILE_SLACK),
    ("one-jitted-function", _one_function, 10000, 200, 20_000),
    ("retrace-many-shapes", _many_shapes, 300, 300, 300 * PER_COMPILE_SLACK),
    ("jit-in-loop-closure", _jit_in_loop, 300, 50, 300 * PER_COMPILE_SLACK),
]


@pytest.mark.parametrize("name,make,n,warmup,limit", CASES, ids=[c[0] for c in CASES])
def test_heap_stays_flat(name, make, n, warmup, limit, small_trace_cache):
  x = jnp.ones(3)
  grew = _growth(make(x), n, warmup)
  assert grew < limit, f"{name}: heap grew by {grew} bytes over {n} calls (limit {limit})"


def test_trace_cache_is_bounded(small_trace_cache):
  f = jax.jit(lambda v: v + 1)
  for i in range(100):
    np.testing.assert_array_equal(f(np.zeros(i + 1, np.float32)), np.ones(i + 1))
  assert len(f._cache) == 32 and len(f._fast_cache) <= 32
  # The newest entries survive: the last shape is a hit (no new entry, same count).
  f(np.zeros(100, np.float32))
  assert len(f._cache) == 32


def test_trace_cache_drops_dead_functions():
  x = jnp.ones(3)
  before = len(jit_mod._trace_caches)
  for _ in range(50):
    jax.jit(lambda v: v - 1)(x)
  gc.collect()
  assert len(jit_mod._trace_caches) <= before + 1


def test_clear_caches_empties_all():
  f = jax.jit(lambda v: v * 3)
  x = jnp.arange(3.0)
  f(x)
  jax.lax.scan(lambda c, a: (c + a, a), 0.0, x)
  jax.grad(lambda v: jnp.sum(jnp.sin(v)))(x)
  jax.vmap(f)(jnp.ones((2, 3)))
  assert len(f._cache) and len(f._fast_cache)
  jax.clear_caches()
  assert not f._cache and not f._fast_cache and not len(jit_mod._trace_caches)
  for module, name in jit_mod.DERIVED_CACHES:
    cache = getattr(importlib.import_module(f"jaxlite._src.{module}"), name)
    size = cache.cache_info().currsize if hasattr(cache, "cache_info") else len(cache)
    assert size == 0, (module, name)
  np.testing.assert_array_equal(f(x), [0.0, 3.0, 6.0])  # and everything still works


@pytest.fixture
def soak_selected(request):
  if "soak" not in (request.config.getoption("-m") or ""):
    pytest.skip("soak test: run with -m soak")


SOAK = [  # the figures: minutes, not in the default run
    ("fresh-lambdas", _fresh_lambda, 100_000, 1000, 100_000 * PER_COMPILE_SLACK),
    ("one-jitted-function", _one_function, 100_000, 1000, 50_000),
    ("retrace-many-shapes", _many_shapes, 10_000, 4200, 10_000 * PER_COMPILE_SLACK),
    ("jit-in-loop-closure", _jit_in_loop, 20_000, 1000, 20_000 * PER_COMPILE_SLACK),
]


@pytest.mark.soak
@pytest.mark.parametrize("name,make,n,warmup,limit", SOAK, ids=[c[0] for c in SOAK])
def test_soak_heap_stays_flat(name, make, n, warmup, limit, soak_selected):
  grew = _growth(make(jnp.ones(3)), n, warmup)
  assert grew < limit, f"{name}: heap grew by {grew} bytes over {n} calls (limit {limit})"
