"""On Explicit mesh axes (jax.make_mesh's default in 0.10.2) an argument's sharding is part of
its type: shard_map refuses in_specs that differ from it (JAX's ValueError), eagerly and under
jit, and jit traces an argument once per explicit sharding (a cached trace for P('x') is not
reused for P(None, 'x')). Compared with JAX row by row."""
import pytest

from conftest import oracle, run_json_program

_PROGRAM = r"""
import json, sys
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 2)
P = jax.sharding.PartitionSpec
NS = jax.sharding.NamedSharding
mesh = jax.make_mesh((2,), ("x",))
auto = jax.make_mesh((2,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
X = np.arange(8.0, dtype=np.float32).reshape(4, 2)
args = {"numpy": X, "jnp": jax.numpy.asarray(X), "rows": jax.device_put(X, NS(mesh, P("x"))),
        "cols": jax.device_put(X, NS(mesh, P(None, "x")))}
out = {}

def rec(name, thunk):
  try:
    out[name] = str(jax.typeof(thunk()))
  except Exception as e:
    out[name] = [type(e).__name__, str(e)]

f = jax.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
jf = jax.jit(f)
for k in ("rows", "cols", "numpy", "jnp", "rows", "cols"):  # the jit cache sees each twice
  rec(f"eager {k}", lambda: f(args[k]))
  rec(f"jit {k}", lambda: jf(args[k]))
rep = jax.shard_map(lambda a: a + 1, mesh=mesh, in_specs=P(), out_specs=P())
rec("replicated numpy", lambda: rep(X))
rec("inferred cols", lambda: jax.shard_map(lambda a: a * 2, mesh=mesh, out_specs=P(None, "x"))(
    args["cols"]))
h = jax.jit(lambda v: v * 2)
for k in ("rows", "cols", "rows"):
  rec(f"plain jit {k}", lambda: h(args[k]))
g = jax.shard_map(lambda a: a * 2, mesh=auto, in_specs=P("x"), out_specs=P("x"))
rec("auto mesh cols", lambda: g(jax.device_put(X, NS(auto, P(None, "x")))))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ours():
  return run_json_program(_PROGRAM, "jaxlite")


@pytest.fixture(scope="module")
def theirs():
  oracle()
  return run_json_program(_PROGRAM, "jax")


def test_known_answers(ours):
  assert ours["eager rows"] == ours["jit rows"] == "float32[4@x,2]"
  assert ours["plain jit cols"] == "float32[4,2@x]"
  assert ours["plain jit rows"] == "float32[4@x,2]"
  for k in ("cols", "numpy", "jnp"):
    for mode in ("eager", "jit"):
      cls, msg = ours[f"{mode} {k}"]
      assert cls == "ValueError" and msg.startswith(
          "in_specs passed to shard_map: P('x', None) does not match the specs of the input:")
  assert ours["replicated numpy"] == "float32[4,2]"
  assert ours["auto mesh cols"] == "float32[4,2]"


def test_matches_jax(ours, theirs):
  assert ours.keys() == theirs.keys()
  for k in ours:
    assert ours[k] == theirs[k], k
