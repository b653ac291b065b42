"""Where jaxlite's time goes on the accelerator (cProfile of the cached call, eager x + 1 and
the 10M elementwise chain); run by tpu_run.sh's diag step."""
import cProfile
import pstats
import time

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp

x = jnp.asarray(np.ones(100, np.float32))
big = jnp.asarray(np.random.default_rng(0).normal(size=10_000_000).astype(np.float32))
print("placed:", type(x._value).__name__, type(big._value).__name__)
f = jax.jit(lambda x: x * 2 + 1)
g = jax.jit(lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x))
for _ in range(5):
  f(x).block_until_ready()
  g(big).block_until_ready()
  (x + 1).block_until_ready()


def per_call(label, fn, n):
  t = time.perf_counter()
  for _ in range(n):
    fn()
  print(f"{label}: {(time.perf_counter() - t) / n * 1e6:.0f} us", flush=True)


per_call("cached call", lambda: f(x).block_until_ready(), 200)
per_call("cached call, no block", lambda: f(x), 200)
per_call("eager x+1", lambda: (x + 1).block_until_ready(), 200)
per_call("chain", lambda: g(big).block_until_ready(), 10)
per_call("chain, no block", lambda: g(big), 10)
r = g(big)
per_call("block of a done array", lambda: r.block_until_ready(), 200)
exe_args = None
pr = cProfile.Profile()
pr.enable()
for _ in range(200):
  f(x).block_until_ready()
for _ in range(5):
  g(big).block_until_ready()
for _ in range(200):
  (x + 1).block_until_ready()
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(14)
