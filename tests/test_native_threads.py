"""numba's thread pool for the native tier (compiler/native/threads.py): the layer priority,
the chunking per layer, and native kernels under each layer this machine can load giving tier
0's results (JAX-COMPAT §10: exact ops bit for bit, transcendentals to 8 ulp)."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
pytestmark = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (a default dependency where numba has "
                           "wheels; elsewhere pip install 'jaxlite[native]')")

SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src")


def test_chunks_by_layer(monkeypatch):
  from jaxlite._src.compiler.native import threads
  monkeypatch.setattr(threads, "_layer", ["workqueue"])
  assert threads.chunk(4096) == 0  # numba's even split: its threads nap between polls
  monkeypatch.setattr(threads, "_layer", ["omp"])
  assert threads.chunk(4096) == 4096 // threads.CHUNKS
  assert threads.chunk(5) == 1


def test_configure_puts_openmp_first_and_leaves_a_users_choice(monkeypatch):
  import numba
  from jaxlite._src.compiler.native import threads
  before = list(numba.config.THREADING_LAYER_PRIORITY)
  try:
    numba.config.THREADING_LAYER_PRIORITY = ["tbb", "omp", "workqueue"]
    monkeypatch.setenv("NUMBA_THREADING_LAYER", "workqueue")
    threads.configure()
    assert numba.config.THREADING_LAYER_PRIORITY == ["tbb", "omp", "workqueue"]
    monkeypatch.delenv("NUMBA_THREADING_LAYER")
    monkeypatch.setenv("NUMBA_THREADING_LAYER_PRIORITY", "tbb omp workqueue")
    threads.configure()
    assert numba.config.THREADING_LAYER_PRIORITY == ["tbb", "omp", "workqueue"]
    monkeypatch.delenv("NUMBA_THREADING_LAYER_PRIORITY")
    threads.configure()
    assert numba.config.THREADING_LAYER_PRIORITY == ["omp", "tbb", "workqueue"]
  finally:
    numba.config.THREADING_LAYER_PRIORITY = before


def test_pip_tbb_is_found_only_where_installed():
  from jaxlite._src.compiler.native import threads
  path = threads.load_pip_tbb()
  if importlib.util.find_spec("tbb") is None and path is None:
    return  # the `tbb` wheel is not installed here: nothing to load
  if sys.platform.startswith("linux") and path is not None:
    assert os.path.basename(path) == "libtbb.so.12" and os.path.exists(path)


_RUN = r"""
import gc, numpy as np, jaxlite, jaxlite.numpy as jnp
from jaxlite._src.compiler import native
from jaxlite._src.compiler.native import threads
native.KEEP_RATIO = native.SERIAL_KEEP_RATIO = 1e9  # kept whatever the trials say (load)
rng = np.random.default_rng(0)
x = rng.normal(size=(2048, 1024)).astype(np.float32)  # parallel kernels: 2M elements
def lse(a):
  m = jnp.max(a, axis=1, keepdims=True)
  return jnp.log(jnp.sum(jnp.exp(a - m), axis=1)) + m[:, 0]
def chain(a):
  return jnp.tanh(a) * jnp.exp(-a * a) + jnp.sin(a)
outs = []
for fn in (lse, chain):
  f = jaxlite.jit(fn)
  for _ in range(native.HOT_CALLS + 1):
    f(x)
  native.wait()
  for _ in range(native.TRIALS + 2):
    got = np.asarray(f(x))
  outs.append(got)
kept = [h.native for h in gc.get_objects() if type(h) is native.HotSwap and h.native is not None]
np.save(OUT, np.concatenate([o.ravel() for o in outs]))
print(threads.layer(), len(kept), min(k.chunk for k in kept if hasattr(k, "chunk")))
"""


def _layers():
  """The threading layers numba can load here (each run in its own process)."""
  from jaxlite._src.compiler.native import threads
  threads.load_pip_tbb()  # as configure() does for an explicit `tbb`
  found = []
  for layer, module in (("omp", "omppool"), ("workqueue", "workqueue"), ("tbb", "tbbpool")):
    try:
      importlib.import_module(f"numba.np.ufunc.{module}")
    except ImportError:
      continue
    found.append(layer)
  return found


@pytest.mark.parametrize("layer", ["omp", "workqueue", "tbb"])
def test_native_kernels_give_tier0_results_under_each_layer(layer, tmp_path):
  if layer not in _layers():
    pytest.skip(f"numba's {layer} layer does not load here (its library is not installed)")
  import jaxlite.numpy as jnp
  out = tmp_path / "native.npy"
  path = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
  env = {**os.environ, "PYTHONPATH": path, "NUMBA_THREADING_LAYER": layer,
         "JAXLITE_NATIVE_CACHE": str(tmp_path / "cache"), "JAXLITE_TIER": "1",
         "JAXLITE_NATIVE": "1"}
  run = subprocess.run([sys.executable, "-c", f"OUT = {str(out)!r}\n" + _RUN], env=env,
                       capture_output=True, text=True, timeout=600)
  assert run.returncode == 0, run.stderr[-2000:]
  got_layer, kept, chunk = run.stdout.split()
  assert got_layer == layer and int(kept) >= 1
  # numba's even split on workqueue, chunks of the trip count elsewhere
  assert (int(chunk) == 0) == (layer == "workqueue")
  x = np.random.default_rng(0).normal(size=(2048, 1024)).astype(np.float32)
  with _tier0():
    m = jnp.max(x, axis=1, keepdims=True)
    want_lse = np.asarray(jnp.log(jnp.sum(jnp.exp(x - m), axis=1)) + m[:, 0])
    want_chain = np.asarray(jnp.tanh(x) * jnp.exp(-x * x) + jnp.sin(x))
  got = np.load(out)
  np.testing.assert_allclose(got[:2048], want_lse, rtol=2e-6, atol=1e-6)
  np.testing.assert_allclose(got[2048:].reshape(x.shape), want_chain, rtol=1e-6, atol=1e-6)


class _tier0:
  """jax_jaxlite_tier 0 for the block: the reference is tier 0's."""

  def __enter__(self):
    import jaxlite
    self.prev = jaxlite.config.jax_jaxlite_tier
    jaxlite.config.update("jax_jaxlite_tier", 0)

  def __exit__(self, *exc):
    import jaxlite
    jaxlite.config.update("jax_jaxlite_tier", self.prev)
