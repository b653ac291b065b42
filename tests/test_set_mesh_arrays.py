"""Arrays made under `jax.set_mesh(mesh)` with a concrete mesh (issue 34: flax.nnx's
spmd_test `test_separate_opt_sharding`): eager results, creation and random functions and jit
outputs are committed, replicated NamedShardings over the context mesh, and `jax.typeof` shows
its AbstractMesh; sharded inputs keep their rules' placements, `device_put` without a device
stays uncommitted, and outside the mesh nothing changes. Against real JAX where it is installed,
JAX 0.10.2's recorded output otherwise."""
import json
import os
import subprocess
import sys

import pytest

from conftest import oracle

# One subprocess per library: the CPU device count freezes at first use.
_PROGRAM = r"""
import json, sys, importlib
import numpy as np
mod = sys.argv[1]
jax = importlib.import_module(mod)
jnp = importlib.import_module(mod + ".numpy")
jax.config.update("jax_num_cpu_devices", 4)
sh = importlib.import_module(mod + ".sharding")
NamedSharding, P, AxisType = sh.NamedSharding, sh.PartitionSpec, sh.AxisType
out = {}

def show(a):
  return [str(a.sharding), a.committed, str(jax.typeof(a).sharding)]

mesh = jax.make_mesh((4,), ("x",))
x = jnp.ones(3)
with jax.set_mesh(mesh):
  d = jax.device_put(jnp.arange(8.), NamedSharding(mesh, P("x")))
  cases = {
      "zeros": lambda: jnp.zeros(3),
      "x+1": lambda: x + 1,
      "x*x": lambda: x * x,
      "x-1": lambda: x - 1,
      "x>0": lambda: x > 0,
      "matmul": lambda: jnp.ones((4, 2)) @ jnp.ones((2, 2)),
      "jit": lambda: jax.jit(lambda v: v * 2)(x),
      "jit_const": lambda: jax.jit(lambda: jnp.ones(2))(),
      "grad": lambda: jax.grad(lambda v: (v * v).sum())(x),
      "vmap": lambda: jax.vmap(lambda v: v * 2)(x),
      "x[0]": lambda: x[0],
      "sum": lambda: x.sum(),
      "arange": lambda: jnp.arange(3),
      "full": lambda: jnp.full((2,), 3.),
      "eye": lambda: jnp.eye(2),
      "linspace": lambda: jnp.linspace(0, 1, 3),
      "zeros_like": lambda: jnp.zeros_like(x),
      "concat": lambda: jnp.concatenate([x, x]),
      "stack": lambda: jnp.stack([x, x]),
      "where": lambda: jnp.where(x > 0, x, 0.),
      "array_list": lambda: jnp.array([1., 2.]),
      "asarray_np": lambda: jnp.asarray(np.ones(2)),
      "array_scalar": lambda: jnp.array(3.),
      "float32": lambda: jnp.float32(3),
      "asarray_x": lambda: jnp.asarray(x),
      "device_put_np": lambda: jax.device_put(np.ones(2)),
      "key": lambda: jax.random.key(0),
      "normal": lambda: jax.random.normal(jax.random.key(0), (2,)),
      "sharded*2": lambda: d * 2,
      "sharded.sum": lambda: d.sum(),
      "sharded+zeros": lambda: d + jnp.zeros(8),
  }
  for name, f in cases.items():
    out[name] = show(f())
  z = jnp.zeros(3)
  out["z+1"] = show(z + 1)
  out["-z"] = show(-z)
  out["array_z"] = show(jnp.array(z))
  # eager and jitted shard_map bodies that make arrays: the shards' own placements win
  f = jax.shard_map(lambda v: v + jnp.ones(2) + jax.lax.axis_index("x"), in_specs=P("x"),
                    out_specs=P("x"))
  g = jax.shard_map(lambda v: v.sum(keepdims=True) * jnp.float32(2), in_specs=P("x"),
                    out_specs=P("x"))
  for name, r in (("shard_map", f(d)), ("jit_shard_map", jax.jit(f)(d)), ("shard_map_sum", g(d))):
    out[name] = show(r) + [np.asarray(r).tolist()]
  out["split_keys"] = show(jax.random.split(jax.random.key(1), 4))
  out["values"] = [np.asarray(jnp.ones((4, 2)) @ jnp.ones((2, 2))).tolist(),
                   np.asarray(jax.jit(lambda v: v * 2)(x)).tolist(), np.asarray(d * 2).tolist()]
out["outside"] = show(jnp.zeros(2))
out["outside_x+1"] = show(x + 1)
# flax.nnx's test_separate_opt_sharding: a parameter made eagerly under a 2x2 Auto mesh
mesh2 = jax.make_mesh((2, 2), ("row", "col"), axis_types=(AxisType.Auto,) * 2)
with jax.set_mesh(mesh2):
  w = jax.random.normal(jax.random.key(0), (4, 2)) * 0.1
  out["auto_param"] = show(w) + [w.sharding.is_equivalent_to(NamedSharding(mesh2, P()), ndim=2),
                                 len(w.sharding.device_set)]
  out["auto_jit"] = show(jax.jit(lambda v: v @ v.T)(w))
print(json.dumps(out))
"""

# JAX 0.10.2's output of the program (for when jax is not installed)
_WANT = json.loads(r"""{"zeros": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "x+1": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "x*x": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "x-1": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "x>0": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "matmul": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None, None), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None, None))"], "jit": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "jit_const": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "grad": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "vmap": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "x[0]": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P())"], "sum": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P())"], "arange": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "full": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "eye": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None, None), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None, None))"], "linspace": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "zeros_like": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "concat": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "stack": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None, None), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None, None))"], "where": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "array_list": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "asarray_np": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "array_scalar": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P())"], "float32": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P())"], "asarray_x": ["SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)", false, "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,))"], "device_put_np": ["SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)", false, "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,))"], "key": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P())"], "normal": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "sharded*2": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P('x',))"], "sharded.sum": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P())"], "sharded+zeros": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P('x',))"], "z+1": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "-z": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "array_z": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "shard_map": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P('x',))", [1.0, 2.0, 4.0, 5.0, 7.0, 8.0, 10.0, 11.0]], "jit_shard_map": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P('x',))", [1.0, 2.0, 4.0, 5.0, 7.0, 8.0, 10.0, 11.0]], "shard_map_sum": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P('x',))", [2.0, 10.0, 18.0, 26.0]], "split_keys": ["NamedSharding(mesh=Mesh('x': 4, axis_types=(Explicit,)), spec=P(None,), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('x': 4, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None,))"], "values": [[[2.0, 2.0], [2.0, 2.0], [2.0, 2.0], [2.0, 2.0]], [2.0, 2.0, 2.0], [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]], "outside": ["SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)", false, "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,))"], "outside_x+1": ["SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)", false, "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,))"], "auto_param": ["NamedSharding(mesh=Mesh('row': 2, 'col': 2, axis_types=(Auto, Auto)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('row': 2, 'col': 2, axis_types=(Auto, Auto), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None, None))", true, 4], "auto_jit": ["NamedSharding(mesh=Mesh('row': 2, 'col': 2, axis_types=(Auto, Auto)), spec=P(), memory_kind=device)", true, "NamedSharding(mesh=AbstractMesh('row': 2, 'col': 2, axis_types=(Auto, Auto), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None, None))"]}""")


def _run(mod):
  r = subprocess.run([sys.executable, "-c", _PROGRAM, mod], capture_output=True, text=True,
                     timeout=600, env={**os.environ, "JAX_PLATFORMS": "cpu"})
  assert r.returncode == 0, r.stderr[-3000:]
  return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def got():
  return _run("jaxlite")


def test_arrays_made_under_set_mesh_live_on_its_mesh_as_jax_recorded(got):
  assert got == _WANT


def test_arrays_made_under_set_mesh_match_live_jax(got):
  oracle()
  assert _run("jax") == got
