"""The native tier's compile time and speed on issue 15's two rows it targets, beside tier 0/1.

  JAXLITE_NATIVE_CACHE=$(mktemp -d) PYTHONPATH=src python benchmarks/native_tier.py [n]

Rows: the elementwise chain tanh(x)*exp(x)+sin(x) over n float32 (10M) and jit(random.normal)
of n. For the native tier: the background compile (hot -> swapped in), the same kernel loaded
from the disk cache, and steady-state medians. Needs numba (the `native` extra).
"""
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("JAXLITE_NATIVE_CACHE", tempfile.mkdtemp(prefix="jaxlite-native-"))

import numpy as np  # noqa: E402

import jaxlite as jax  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite.scipy.special import logsumexp  # noqa: E402
from jaxlite._src.compiler import backend, numpy_codegen, tier1_backend  # noqa: E402
from jaxlite._src.compiler import native  # noqa: E402
from jaxlite._src.compiler.native import backend as native_backend  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
REPEATS = 5


def median_ms(f, *args) -> float:
  times = []
  for _ in range(REPEATS):
    t = time.perf_counter()
    np.asarray(f(*args))
    times.append(time.perf_counter() - t)
  return statistics.median(times) * 1e3


def _swaps():
  import gc
  return [o for o in gc.get_objects() if isinstance(o, native.HotSwap)]


def rows():
  x = jnp.asarray(np.random.default_rng(0).standard_normal(N).astype(np.float32))
  key = jax.random.key(0)
  workloads = {
      "chain tanh*exp+sin": (lambda: jax.jit(lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x)),
                             (x,)),
      "jit(random.normal)": (lambda: jax.jit(lambda k: jax.random.normal(k, (N,))), (key,)),
      "jit(random.uniform)": (lambda: jax.jit(lambda k: jax.random.uniform(k, (N,))), (key,)),
      "logsumexp (4096, 1024)": (lambda: jax.jit(lambda x: logsumexp(x, axis=1)),
                                 (x[:4096 * 1024].reshape(4096, 1024),)),
  }
  for name, (make, args) in workloads.items():
    out = {}
    for label, b in (("tier 0", numpy_codegen.NUMPY), ("tier 1", tier1_backend.TIER1)):
      backend.install_backend(b)
      f = make()
      t = time.perf_counter()
      np.asarray(f(*args))
      out[label + " first call"] = (time.perf_counter() - t) * 1e3
      out[label] = median_ms(f, *args)
    backend.install_backend(native_backend.NATIVE)
    before = {id(h) for h in _swaps()}
    f = make()
    t = time.perf_counter()
    np.asarray(f(*args))
    out["native first call (runs tier 1)"] = (time.perf_counter() - t) * 1e3
    for _ in range(native.HOT_CALLS):
      np.asarray(f(*args))
    t = time.perf_counter()
    native.wait()
    out["native background compile (wait after hot)"] = (time.perf_counter() - t) * 1e3
    out["native (the kept kernels)"] = median_ms(f, *args)
    print(f"## {name}, n = {N}")
    for k, v in out.items():
      print(f"  {k:45s} {v:9.1f} ms")
    for h in _swaps():
      if id(h) not in before or h is native_backend.THREEFRY_BITS32:
        print(f"  kernel {h.name}: tier 1 best {h.best_fallback * 1e3:.1f} ms, native best "
              f"{h.best_native * 1e3:.1f} ms -> {'tier 1' if h.rejected else 'native'}")
  # The same kernels from the disk cache (what a new process pays instead of compiling).
  from jaxlite._src.compiler.native import cache
  t = time.perf_counter()
  cache.load(native_backend.threefry_source())
  ms = (time.perf_counter() - t) * 1e3
  print(f"  {'threefry kernel loaded from the disk cache':45s} {ms:9.1f} ms")


if __name__ == "__main__":
  print(f"numba threads: {__import__('numba').config.NUMBA_NUM_THREADS}, "
        f"cache {os.environ['JAXLITE_NATIVE_CACHE']}")
  rows()
