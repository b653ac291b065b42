"""Run under `mpiexec -n N`: initialize's errors and success, the global device list, arrays
over other processes' devices, multihost_utils; each rank prints `OK <rank>` at the end."""
import os
import sys

import numpy as np

import jaxlite as jax
from jaxlite._src.distributed import global_arrays as ga

LOCAL = int(sys.argv[1]) if len(sys.argv) > 1 else 2
jax.config.update("jax_num_cpu_devices", LOCAL)


def raises(exc, text, fn, *a, **k):
  try:
    fn(*a, **k)
  except exc as e:
    assert text in str(e), (text, str(e))
    return
  raise AssertionError(f"{fn.__name__}{a}{k} did not raise {exc.__name__}")


from mpi4py import MPI  # noqa: E402 - only to know what to expect

rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
# Inconsistent arguments raise before anything is set up, so a later call can still succeed.
raises(ValueError, "disagree with the MPI launch", jax.distributed.initialize,
       num_processes=size + 1)
raises(TypeError, "process_id must be a nonnegative int", jax.distributed.initialize,
       process_id="0")
assert not jax.distributed.is_initialized()
jax.distributed.initialize()
assert jax.distributed.is_initialized()
raises(RuntimeError, "distributed.initialize should only be called once",
       jax.distributed.initialize)

# -- devices: process 0's first, ids packed as JAX's CPU client packs them ---------------------
assert jax.process_index() == rank and jax.process_count() == size
assert jax.process_indices() == list(range(size)) and jax.host_ids() == list(range(size))
assert jax.host_id() == rank and jax.host_count() == size
want_ids = [p * 2048 + i for p in range(size) for i in range(LOCAL)]
assert [d.id for d in jax.devices()] == want_ids, jax.devices()
assert [d.process_index for d in jax.devices()] == [p for p in range(size) for _ in range(LOCAL)]
assert [d.id for d in jax.local_devices()] == [rank * 2048 + i for i in range(LOCAL)]
assert jax.device_count() == size * LOCAL and jax.local_device_count() == LOCAL
assert all(d.host_id == 1 for d in jax.local_devices(process_index=1))
# -- after devices exist, initialize raises JAX's error ------------------------------------------
raises(RuntimeError, "must be called before any JAX calls", jax.distributed.initialize)

from jaxlite.experimental import multihost_utils as mu  # noqa: E402
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

n = size * LOCAL
mesh = Mesh(np.array(jax.devices()), ("x",))
# make_mesh over every process's devices, in JAX's global order
gm = jax.make_mesh((size, LOCAL), ("p", "l"))
assert [d.id for d in gm.devices.flat] == want_ids
glob = np.arange(n * 3, dtype=np.float32).reshape(n, 3)

# -- device_put of the same global value: each process keeps its shards ------------------------
x = jax.device_put(glob, NamedSharding(mesh, P("x")))
assert x.shape == (n, 3) and x.dtype == np.float32
assert (not x.is_fully_addressable) == (size > 1)
shards = x.addressable_shards
assert [s.device for s in shards] == jax.local_devices()
for s in shards:
  np.testing.assert_array_equal(np.asarray(s.data), glob[s.index])
if size > 1:
  raises(RuntimeError, "Fetching value for `jax.Array` that spans non-addressable", np.asarray, x)
  assert repr(x) == str(x) == "Array(shape=(%d, 3), dtype=float32)" % n
  # jit partitions over the global mesh (tests/mpi/programs/sharded_jit.py has more).
  y = jax.jit(lambda a: a * 2)(x)
  assert y.sharding == x.sharding and not y.is_fully_addressable
  np.testing.assert_array_equal(mu.process_allgather(y, tiled=True), glob * 2)
np.testing.assert_array_equal(mu.process_allgather(x, tiled=True), glob)
if size > 1:
  raises(ValueError, "only supports tiled=True", mu.process_allgather, x)

# A replicated global array: every process holds the value, so it prints and computes.
r = jax.device_put(np.ones(3, np.float32), NamedSharding(mesh, P()))
assert r.is_fully_replicated and (not r.is_fully_addressable) == (size > 1)
np.testing.assert_array_equal(np.asarray(r + 1), np.full(3, 2.0))
assert len(r.addressable_shards) == LOCAL

# -- make_array_from_* over the global mesh ------------------------------------------------------
y = ga.make_array_from_callback((n, 3), NamedSharding(mesh, P("x")), lambda idx: glob[idx])
np.testing.assert_array_equal(mu.process_allgather(y, tiled=True), glob)
rows = glob[rank * LOCAL:(rank + 1) * LOCAL]
z = ga.make_array_from_process_local_data(NamedSharding(mesh, P("x")), rows)
assert z.shape == (n, 3)
np.testing.assert_array_equal(mu.process_allgather(z, tiled=True), glob)
singles = [jax.device_put(glob[i:i + 1], d) for i, d in
           zip(range(rank * LOCAL, (rank + 1) * LOCAL), jax.local_devices())]
w = ga.make_array_from_single_device_arrays((n, 3), NamedSharding(mesh, P("x")), singles)
np.testing.assert_array_equal(mu.process_allgather(w, tiled=True), glob)

# 2-d mesh (processes x local devices), columns split over the local axis
mesh2 = Mesh(np.array(jax.devices()).reshape(size, LOCAL), ("p", "l"))
g2 = np.arange(size * 2 * LOCAL * 2, dtype=np.int32).reshape(size * 2, LOCAL * 2)
v = jax.device_put(g2, NamedSharding(mesh2, P("p", "l")))
np.testing.assert_array_equal(mu.process_allgather(v, tiled=True), g2)
loc = mu.global_array_to_host_local_array(v, mesh2, P("p", "l"))
np.testing.assert_array_equal(np.asarray(loc), g2[rank * 2:(rank + 1) * 2])
assert loc.is_fully_addressable and loc.sharding.mesh.devices.shape == (1, LOCAL)
back = mu.host_local_array_to_global_array(np.asarray(loc), mesh2, P("p", "l"))
np.testing.assert_array_equal(mu.process_allgather(back, tiled=True), g2)

# pytrees with a prefix tree of specs
tree = mu.host_local_array_to_global_array({"a": rows, "b": (glob, glob)}, mesh,
                                           {"a": P("x"), "b": P()})
np.testing.assert_array_equal(mu.process_allgather(tree["a"], tiled=True), glob)
assert tree["b"][1].is_fully_replicated and tree["b"][1].shape == glob.shape
np.testing.assert_array_equal(np.asarray(tree["b"][0]), glob)
back = mu.global_array_to_host_local_array(tree, mesh, {"a": P("x"), "b": P()})
np.testing.assert_array_equal(np.asarray(back["a"]), rows)
np.testing.assert_array_equal(np.asarray(back["b"][1]), glob)

# -- multihost_utils on host-local values --------------------------------------------------------
me = np.array([rank, 10 + rank])
np.testing.assert_array_equal(mu.process_allgather(me),
                              np.array([[p, 10 + p] for p in range(size)]))
np.testing.assert_array_equal(mu.process_allgather(me, tiled=True),
                              np.array([v for p in range(size) for v in (p, 10 + p)]))
np.testing.assert_array_equal(mu.process_allgather(np.float32(rank)), np.arange(size))
tree = mu.broadcast_one_to_all({"a": np.array([rank + 5.0]), "b": np.int32(rank)})
np.testing.assert_array_equal(tree["a"], [5.0])
assert tree["b"] == 0
last = mu.broadcast_one_to_all(np.array([rank * 1.5]), is_source=rank == size - 1)
np.testing.assert_array_equal(last, [(size - 1) * 1.5])
mu.sync_global_devices("step 1")
mu.assert_equal({"w": np.arange(4)}, "same everywhere")
if size > 1:
  raises(AssertionError, "differs. Expected: ", mu.assert_equal, np.array([rank]), "differs")
  raises(AssertionError, "sync_global_devices name mismatch ('name",
         mu.sync_global_devices, f"name {rank}")
jax.distributed.shutdown()
assert not jax.distributed.is_initialized()
os.write(1, f"OK {rank}\n".encode())  # one write: ranks share the pipe
