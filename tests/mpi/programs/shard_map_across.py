"""Run under `mpiexec -n N`: shard_map with collectives over mesh axes that span processes
(2 CPU devices per process), against NumPy's values; each rank prints `OK <rank>` at the end."""
import os

import numpy as np

import jaxlite as jax
from jaxlite.experimental import multihost_utils as mu
from jaxlite.experimental.shard_map import shard_map
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.config.update("jax_num_cpu_devices", 2)
jax.distributed.initialize()
me, n, L = jax.process_index(), jax.process_count(), 2
N = n * L

# A 1-d mesh over every process's devices: one group per collective (MPI collectives).
mesh = Mesh(np.array(jax.devices()), ("x",))
g = np.arange(N * 4, dtype=np.float32).reshape(N * 2, 2)
blocks = g.reshape(N, 2, 2)
x = jax.device_put(g, NamedSharding(mesh, P("x")))
psum = shard_map(lambda b: jax.lax.psum(b, "x"), mesh=mesh, in_specs=P("x"), out_specs=P())
np.testing.assert_array_equal(np.asarray(psum(x)), blocks.sum(0))
gather = shard_map(lambda b: jax.lax.all_gather(b, "x", tiled=True), mesh=mesh,
                   in_specs=P("x"), out_specs=P(), check_vma=False)
np.testing.assert_array_equal(np.asarray(gather(x)), g)
mixed = shard_map(lambda b: b * 2 + jax.lax.pmax(b, "x"), mesh=mesh, in_specs=P("x"),
                  out_specs=P("x"))
np.testing.assert_array_equal(mu.process_allgather(mixed(x), tiled=True),
                              g * 2 + np.tile(blocks.max(0), (N, 1)))
ring = shard_map(lambda b: jax.lax.ppermute(b, "x", [(i, (i + 1) % N) for i in range(N)]),
                 mesh=mesh, in_specs=P("x"), out_specs=P("x"))
np.testing.assert_array_equal(mu.process_allgather(ring(x), tiled=True),
                              np.roll(blocks, 1, 0).reshape(N * 2, 2))
big = jax.device_put(np.ones(N * 70000, np.float32), NamedSharding(mesh, P("x")))
np.testing.assert_array_equal(np.asarray(psum(big)), np.full(70000, N, np.float32))
# jitted, over 1 MiB blocks (pooled result buffers): a result kept stays intact while later
# calls reuse the buffers of results that were dropped.
jpsum = jax.jit(psum)
huge = jax.device_put(np.ones(N * (1 << 18), np.float32), NamedSharding(mesh, P("x")))
kept = jpsum(huge)
for k in range(2, 5):
  np.testing.assert_array_equal(np.asarray(jpsum(huge * k)), np.full(1 << 18, N * k))
np.testing.assert_array_equal(np.asarray(kept), np.full(1 << 18, N, np.float32))

# A 2-d mesh, x across processes and y within: the groups over x (one per y) run at once.
mesh2 = Mesh(np.array(jax.devices()).reshape(n, L), ("x", "y"))
g2 = np.arange(n * L * 6, dtype=np.float32).reshape(n * 2, L * 3)
x2 = jax.device_put(g2, NamedSharding(mesh2, P("x", "y")))
h = shard_map(lambda b: jax.lax.psum(b * 2, "x"), mesh=mesh2, in_specs=P("x", "y"),
              out_specs=P(None, "y"))
np.testing.assert_array_equal(mu.process_allgather(h(x2), tiled=True),
                              (2 * g2.reshape(n, 2, L * 3).sum(0)))
hh = shard_map(lambda b: jax.lax.all_gather(b, "x", tiled=True), mesh=mesh2,
               in_specs=P("x", "y"), out_specs=P(None, "y"), check_vma=False)
np.testing.assert_array_equal(mu.process_allgather(hh(x2), tiled=True), g2)

# Operands laid out otherwise than the in_specs (another mesh, other dimensions split): their
# shards move between processes point to point (as JAX reshards them), eager and jitted.
g3 = np.arange(N * 2 * N, dtype=np.float32).reshape(N * 2, N)
x3 = jax.device_put(g3, NamedSharding(mesh, P("x")))  # rows over the 1-d mesh
for spec in (P("y"), P(None, ("x", "y")), P(("y", "x"), None), P(None, "x"), P()):
  move = shard_map(lambda b: b + 1, mesh=mesh2, in_specs=spec, out_specs=spec)
  for f in (move, jax.jit(move)):
    out = f(x3)
    assert out.sharding.is_equivalent_to(NamedSharding(mesh2, spec), 2), (spec, out.sharding)
    np.testing.assert_array_equal(mu.process_allgather(out, tiled=True), g3 + 1,
                                  err_msg=str(spec))
os.write(1, f"OK {me}\n".encode())  # one write: ranks share the pipe
