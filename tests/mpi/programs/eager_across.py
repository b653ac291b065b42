"""Run under `mpiexec -n N`: eager operations on Arrays sharded across processes run as jitted
primitives over the global mesh (elementwise ops per local shard, keeping the sharding;
reductions with the psum across processes), against NumPy on the global values; reading the
data of a non-replicated one raises JAX's error. Each rank prints `OK <rank>` at the end."""
import os

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import multihost_utils as mu
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.config.update("jax_num_cpu_devices", 2)
jax.distributed.initialize()
me, N = jax.process_index(), jax.device_count()
mesh = Mesh(np.array(jax.devices()), ("x",))
rows = NamedSharding(mesh, P("x"))
g = np.arange(N * 2 * 3, dtype=np.float32).reshape(N * 2, 3) / 7 - 1
h = np.linspace(-2, 2, N * 2 * 3, dtype=np.float32).reshape(N * 2, 3)
x = jax.device_put(g, rows)
y = jax.device_put(h, rows)
r = jax.device_put(np.float32([1, 2, 3]), NamedSharding(mesh, P()))  # replicated


def value(a):
  return np.asarray(a) if a.is_fully_replicated else mu.process_allgather(a, tiled=True)


# (name, computation, NumPy value, the result's spec over the mesh: None where the layout is
# the partitioner's choice, not fixed by JAX's semantics)
CASES = [
    ("x * 2", lambda: x * 2, g * 2, P("x")),
    ("x + y", lambda: x + y, g + h, P("x")),
    ("sin(x)", lambda: jnp.sin(x), np.sin(g), P("x")),
    ("where(x > 0, x, y)", lambda: jnp.where(x > 0, x, y), np.where(g > 0, g, h), P("x")),
    ("x * replicated row", lambda: x * r, g * np.float32([1, 2, 3]), P("x")),
    ("x.astype(int32)", lambda: x.astype(jnp.int32), g.astype(np.int32), P("x")),
    ("sum(x)", lambda: jnp.sum(x), g.sum(), P()),
    ("x.sum(axis=0)", lambda: x.sum(axis=0), g.sum(0), P()),
    ("x.max(axis=1)", lambda: x.max(axis=1), g.max(1), P("x")),
    ("mean(x * y)", lambda: jnp.mean(x * y), (g * h).mean(), P()),
    ("x @ x.T", lambda: x @ x.T, g @ g.T, P("x")),
    ("x[1]", lambda: x[1], g[1], None),
    ("x.copy()", lambda: x.copy(), g, P("x")),
    ("jnp.array(x)", lambda: jnp.array(x), g, P("x")),
    ("concatenate", lambda: jnp.concatenate([x, y], axis=1), np.concatenate([g, h], 1), P("x")),
    ("argmax", lambda: jnp.argmax(x), g.argmax(), P()),
    ("cumsum axis 0", lambda: jnp.cumsum(x, axis=0), g.cumsum(0), None),
    ("grad of sum(x**2)", lambda: jax.grad(lambda a: jnp.sum(a ** 2))(x), 2 * g, P("x")),
    ("vmap of row sums", lambda: jax.vmap(lambda row: row.sum())(x), g.sum(1), P("x")),
]
for name, fn, want, spec in CASES:
  out = fn()
  np.testing.assert_allclose(value(out), want, rtol=1e-5, atol=1e-5, err_msg=name)
  assert spec is None or out.sharding.is_equivalent_to(NamedSharding(mesh, spec), out.ndim), \
      (name, out.sharding)
  if spec == P("x"):
    assert not out.is_fully_addressable, name
    for s in out.addressable_shards:  # each process computed its own shards
      np.testing.assert_allclose(np.asarray(s.data), np.asarray(want)[s.index], rtol=1e-5,
                                 atol=1e-5, err_msg=name)

# A replicated result reads as a value; a sharded one raises JAX's RuntimeError.
assert abs(float(jnp.sum(x)) - g.sum()) < 1e-3
assert repr(x * 2) == f"Array(shape=({N * 2}, 3), dtype=float32)"  # as JAX: its type only
for read in (lambda: np.asarray(x * 2), lambda: (x * 2).tolist(), lambda: (x * 2).item(),
             lambda: jax.device_get(x)):
  try:
    read()
  except RuntimeError as e:
    assert "spans non-addressable" in str(e), e
  else:
    raise AssertionError("reading a non-addressable Array did not raise")
os.write(1, f"OK {me}\n".encode())  # one write: ranks share the pipe
