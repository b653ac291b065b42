"""A primitive defined in one file (tests/one_file_primitive.py) works everywhere a built-in
elementwise primitive does: eager, jit on every tier, grad, vmap, sharded jit, and tier 1's
fusion puts it in a kernel with its neighbours (issue 29: each primitive's facts in one place,
looked up by the object, never by name)."""
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite._src.base import primitive_kinds
from jaxlite._src.compiler import backend, fusion, passes

from one_file_primitive import softsign, softsign_p

HAVE_NUMBA = importlib.util.find_spec("numba") is not None


def _want(x):
  return x / (1 + np.abs(x))


X = (np.arange(1024 * 130, dtype=np.float32).reshape(1024, 130) % 37 - 18) / 5


def _f(x):
  return jnp.tanh(softsign(x * 2.0) + 1.0)


def test_registered_by_the_family_helper():
  assert primitive_kinds.kind(softsign_p) == primitive_kinds.ELEMENTWISE
  assert softsign_p in primitive_kinds.fusible and softsign_p in primitive_kinds.hoistable


def test_eager():
  np.testing.assert_allclose(np.asarray(softsign(jnp.asarray(X))), _want(X), rtol=1e-6)


@pytest.mark.numpy_backend("the NumPy backend's tiers (tier 0, tier 1, native)")
@pytest.mark.parametrize("tier,native", [(0, False), (1, False)] + (
    [(1, True)] if HAVE_NUMBA else []))
def test_jit_on_every_tier(tier, native):
  prev_tier, prev_native = jax.config.jax_jaxlite_tier, jax.config.jax_jaxlite_native
  prev = backend.installed()
  try:
    jax.config.update("jax_jaxlite_native", native)
    jax.config.update("jax_jaxlite_tier", tier)
    f = jax.jit(_f)
    got = np.asarray(f(X))
    name = backend.get_backend().name
  finally:
    jax.config.update("jax_jaxlite_native", prev_native)
    jax.config.update("jax_jaxlite_tier", prev_tier)
    backend.install_backend(prev)
  assert name == {0: "numpy", 1: "numpy-native" if native else "numpy-tiled"}[tier]
  np.testing.assert_allclose(got, np.tanh(_want(X * 2) + 1), rtol=1e-5, atol=1e-6)


def test_jit_on_the_installed_backend():
  """jit of the one-file primitive on whichever backend runs the suite (XLA through its
  StableHLO rule under JAXLITE_BACKEND=xla)."""
  got = np.asarray(jax.jit(_f)(X))
  np.testing.assert_allclose(got, np.tanh(_want(X * 2) + 1), rtol=1e-5, atol=1e-6)


def test_fused_into_one_kernel_with_its_neighbours():
  jaxpr, _ = passes.optimize(jax.make_jaxpr(_f)(X))
  kernels = [k for k in fusion.plan(jaxpr)[0] if isinstance(k, fusion.Kernel)]
  (k,) = [k for k in kernels if any(e.primitive is softsign_p for e in k.eqns)]
  assert {e.primitive.name for e in k.eqns} >= {"mul", "softsign", "add", "tanh"}


def test_grad_and_vmap():
  x = np.linspace(-3, 3, 7).astype(np.float32)
  g = jax.grad(lambda x: jnp.sum(softsign(x)))(x)
  np.testing.assert_allclose(np.asarray(g), 1 / (1 + np.abs(x)) ** 2, rtol=1e-6)
  gj = jax.jit(jax.grad(lambda x: jnp.sum(softsign(x) ** 2)))(x)
  np.testing.assert_allclose(np.asarray(gj), 2 * _want(x) / (1 + np.abs(x)) ** 2, rtol=1e-5)
  m = X[:6, :5]
  v = jax.vmap(softsign, in_axes=1, out_axes=1)(m)
  np.testing.assert_allclose(np.asarray(v), _want(m), rtol=1e-6)


_SHARDED = r"""
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
import jaxlite as jax
jax.config.update("jax_num_cpu_devices", 4)
from jaxlite.sharding import NamedSharding, PartitionSpec as P
from one_file_primitive import softsign, softsign_p
mesh = jax.make_mesh((4,), ("x",))
X = (np.arange(32, dtype=np.float32).reshape(8, 4) - 16) / 3
x = jax.device_put(X, NamedSharding(mesh, P("x")))
f = jax.jit(lambda x: softsign(x) * 2)
out = f(x)
jaxpr = jax.make_jaxpr(lambda x: softsign(x) * 2)(X).jaxpr
from jaxlite._src.sharding import propagation
_, plans = propagation.propagate(jaxpr, [(("x",), ())], {{"x": 4}})
print(json.dumps({{"value": np.asarray(out).tolist(), "spec": [str(e) for e in out.sharding.spec],
                  "local": plans[0].local, "out_spec": [list(e) for e in plans[0].out_specs[0]],
                  "shard": [list(s.data.shape) for s in out.addressable_shards]}}))
"""


def test_sharded_jit():
  import json
  import os
  tests = os.path.dirname(os.path.abspath(__file__))
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [os.path.join(os.path.dirname(tests), "src"), os.environ.get("PYTHONPATH", "")]))
  out = subprocess.run([sys.executable, "-c", _SHARDED.format(tests=tests)], env=env,
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  got = json.loads(out.stdout.strip().splitlines()[-1])
  X = (np.arange(32, dtype=np.float32).reshape(8, 4) - 16) / 3
  np.testing.assert_allclose(np.array(got["value"]), _want(X) * 2, rtol=1e-6)
  # the elementwise rule keeps the operand's split: each device computes its rows
  assert got["local"] and got["out_spec"] == [["x"], []]
  assert got["spec"][0] == "x" and got["shard"] == [[2, 4]] * 4
