"""Sharded Arrays: device_put over a mesh, shards as views, placement of results, reprs.

Runs in a subprocess per case because the CPU device count is fixed at first use."""
import json
import subprocess
import sys

import pytest

_PROGRAM = r"""
import json, sys
import numpy as np
import {mod} as jax
jax.config.update("jax_num_cpu_devices", 4)
from {mod}.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((2, 2), ("x", "y"))
out = {{}}
x = jax.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4), NamedSharding(mesh, P("x")))
out["sharding"] = repr(x.sharding)
out["typeof"] = str(jax.typeof(x))
out["shards"] = [[s.device.id, repr(s.index), s.replica_id, np.asarray(s.data).tolist()]
                 for s in x.addressable_shards]
out["shard1"] = repr(x.addressable_shards[1])
out["flags"] = [x.committed, x.is_fully_replicated, x.is_fully_addressable]
out["device"] = repr(x.device)
out["devices"] = sorted(d.id for d in x.devices())
out["value"] = np.asarray(x).tolist()
out["data3"] = np.asarray(x.addressable_data(3)).tolist()
y = jax.device_put(np.ones(4, np.float32), jax.devices()[1])
try:
  x + y
except ValueError as e:
  out["mix"] = str(e).split(" and argument")[0]
try:
  jax.device_put(np.ones(3), NamedSharding(mesh, P("x")))
except ValueError as e:
  out["indivisible"] = str(e).split(" Got shape")[0]
t = jax.device_put({{"a": np.ones(4), "b": np.ones(2)}},
                   {{"a": NamedSharding(mesh, P("y")), "b": jax.devices()[3]}})
out["tree"] = [repr(t["a"].sharding.spec), repr(t["b"].sharding)]
print(json.dumps(out))
"""


def _run(mod):
  r = subprocess.run([sys.executable, "-c", _PROGRAM.format(mod=mod)], capture_output=True,
                     text=True, check=True)
  return json.loads(r.stdout)


@pytest.fixture(scope="module")
def ours():
  return _run("jaxlite")


def test_sharded_device_put_known_answers(ours):
  assert ours["typeof"] == "float32[4@x,4]"
  assert ours["sharding"] == ("NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Explicit, "
                              "Explicit)), spec=P('x',), memory_kind=device)")
  rows = [list(range(0, 8)), list(range(8, 16))]
  for dev, (_, _, rid, data) in enumerate(ours["shards"]):
    assert rid == dev % 2
    assert sum(data, []) == [float(v) for v in rows[dev // 2]]
  assert ours["flags"] == [True, False, True]
  assert ours["devices"] == [0, 1, 2, 3]
  assert ours["data3"] == [[8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]
  assert ours["mix"].endswith("with device ids [0, 1, 2, 3] on platform CPU")
  assert ours["tree"][0] == "P('y',)"


def test_sharded_device_put_matches_jax(ours):
  from conftest import oracle
  oracle()
  theirs = _run("jax")
  for k in ["sharding", "typeof", "shards", "shard1", "flags", "device", "devices", "value",
            "data3", "mix", "indivisible", "tree"]:
    assert ours[k] == theirs[k], k


_JIT_SHARD_MAP = r"""
import json
import numpy as np
import {mod} as jax
jax.config.update("jax_num_cpu_devices", 2)
mesh = jax.make_mesh((2,), ("i",))
P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
x = jax.device_put(np.arange(4.0, dtype=np.float32), NS(mesh, P("i")))
f = jax.jit(jax.shard_map(lambda b: (jax.lax.psum(b, "i"), b * 2), mesh=mesh, in_specs=P("i"),
                          out_specs=(P(), P("i"))))
a, b = f(x)
print(json.dumps([np.asarray(a).tolist(), repr(a.sharding.spec), np.asarray(b).tolist(),
                  repr(b.sharding.spec), str(jax.typeof(b))]))
"""


def test_jit_of_shard_map_on_sharded_arguments():
  # A jitted shard_map on sharded arguments runs its SPMD program once (not nested in a
  # partitioned jit) and its results are placed by out_specs.
  def run(mod):
    r = subprocess.run([sys.executable, "-c", _JIT_SHARD_MAP.format(mod=mod)],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)
  ours = run("jaxlite")
  assert ours == [[2.0, 4.0], "P(None,)", [0.0, 2.0, 4.0, 6.0], "P('i',)", "float32[4@i]"]
  from conftest import oracle
  oracle()
  assert ours == run("jax")
