"""Run under `mpiexec -n N`: jit over Arrays sharded across processes (the partitioner inserts
the collectives: psum for reductions over the split batch, all_gather where a value must be
whole), checked against NumPy on the global values that every process can build; each rank
prints `OK <rank>` at the end."""
import os

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import multihost_utils as mu
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.config.update("jax_num_cpu_devices", 2)
jax.distributed.initialize()
me, n, L = jax.process_index(), jax.process_count(), 2
N = n * L
rng = np.random.default_rng(0)  # the same global values in every process
mesh = Mesh(np.array(jax.devices()), ("batch",))
batch = NamedSharding(mesh, P("batch"))
repl = NamedSharding(mesh, P())

g = rng.standard_normal((N * 3, 5)).astype(np.float32)
w = rng.standard_normal((5, 4)).astype(np.float32)
x = jax.device_put(g, batch)
assert not x.is_fully_addressable
wr = jax.device_put(w, repl)
# jax.make_array_from_* over a sharding spanning processes build the same Array.
rows_per = g.shape[0] // n
built = [jax.make_array_from_callback(g.shape, batch, lambda idx: g[idx]),
         jax.make_array_from_process_local_data(batch, g[me * rows_per:(me + 1) * rows_per]),
         jax.make_array_from_single_device_arrays(
             g.shape, batch, [jax.device_put(g[s.index], s.device) for s in x.addressable_shards])]
for b in built:
  assert b.sharding == batch and not b.is_fully_addressable
  for s, t in zip(b.addressable_shards, x.addressable_shards):
    assert s.device == t.device and s.index == t.index
    np.testing.assert_array_equal(np.asarray(s.data), np.asarray(t.data))


def close(a, b, tol=1e-5):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol,
                             atol=tol)


def gathered(a):
  return a if a.is_fully_addressable else mu.process_allgather(a, tiled=True)


# (name, function, arguments, the NumPy value, the result's expected spec)
CASES = [
    ("sum", jnp.sum, (x,), g.sum(), P()),
    ("sum axis 0", lambda a: jnp.sum(a, axis=0), (x,), g.sum(0), P()),
    ("sum axis 1", lambda a: jnp.sum(a, axis=1), (x,), g.sum(1), P("batch")),
    ("max", jnp.max, (x,), g.max(), P()),
    ("mean of x*2+1", lambda a: jnp.mean(a * 2 + 1), (x,), (g * 2 + 1).mean(), P()),
    ("matmul with replicated weights", lambda a, b: a @ b, (x, wr), g @ w, P("batch")),
    ("relu(x @ w) summed", lambda a, b: jnp.sum(jax.nn.relu(a @ b)), (x, wr),
     np.maximum(g @ w, 0).sum(), P()),
    ("x.T @ x", lambda a: a.T @ a, (x,), g.T @ g, P()),
]
for name, fn, args, want, spec in CASES:
  out = jax.jit(fn)(*args)
  close(gathered(out), want, 1e-4)
  assert out.sharding.is_equivalent_to(NamedSharding(mesh, spec), out.ndim), (name, out.sharding)

# Explicit in/out shardings: the replicated result of a reduction, the batch-sharded result of
# an elementwise op, a sharded output gathered to replicated by out_shardings.
f = jax.jit(lambda a: (a * 3, jnp.sum(a, axis=0)), in_shardings=batch,
            out_shardings=(batch, repl))
y, s = f(x)
close(gathered(y), g * 3)
close(s, g.sum(0), 1e-4)
assert not y.is_fully_addressable and s.is_fully_replicated
z = jax.jit(lambda a: a + 1, out_shardings=repl)(x)
assert z.is_fully_replicated
close(z, g + 1)

# A 2-d mesh: rows across processes ("x"), columns within ("y"); the weights split over "y".
mesh2 = Mesh(np.array(jax.devices()).reshape(n, L), ("x", "y"))
w2 = rng.standard_normal((5, 2 * L)).astype(np.float32)
x2 = jax.device_put(g, NamedSharding(mesh2, P("x")))
w2s = jax.device_put(w2, NamedSharding(mesh2, P(None, "y")))
out = jax.jit(lambda a, b: a @ b)(x2, w2s)
close(gathered(out), g @ w2, 1e-4)
tot = jax.jit(lambda a, b: jnp.sum(a @ b))(x2, w2s)
close(tot, (g @ w2).sum(), 1e-3)

# Repeated calls (remembered per argument placement) and the same function over other layouts.
twice = jax.jit(lambda a: jnp.sum(a * 2, axis=0))
for arg in (x, x, x2, x2, jax.device_put(g, repl), x):
  close(twice(arg), 2 * g.sum(0), 1e-4)
close(gathered(jax.jit(lambda a: a - 1)(x2)), g - 1)

# Data-parallel training with plain jit: the batch split over every process's devices, the
# loss and gradients' psums inserted by the partitioner; the losses are the one-process ones.
params = [rng.standard_normal((5, 8)).astype(np.float32) * 0.3,
          rng.standard_normal((8, 1)).astype(np.float32) * 0.3]
target = rng.standard_normal((N * 3, 1)).astype(np.float32)


def loss(p, a, t):
  h = jnp.tanh(a @ p[0])
  return jnp.mean((h @ p[1] - t) ** 2)


@jax.jit
def step(p, a, t):
  lv, gr = jax.value_and_grad(loss)(p, a, t)
  return lv, [q - 0.1 * d for q, d in zip(p, gr)]


def np_step(p, a, t):
  h = np.tanh(a @ p[0])
  r = h @ p[1] - t
  lv = (r ** 2).mean()
  dr = 2 * r / r.size
  g1 = h.T @ dr
  g0 = a.T @ ((dr @ p[1].T) * (1 - h ** 2))
  return lv, [p[0] - 0.1 * g0, p[1] - 0.1 * g1]


ps = jax.device_put(params, repl)
ts = jax.device_put(target, batch)
ref = [q.astype(np.float64) for q in params]
for i in range(4):
  lv, ps = step(ps, x, ts)
  want, ref = np_step(ref, g.astype(np.float64), target.astype(np.float64))
  close(lv, want, 1e-4)
  assert all(q.is_fully_replicated for q in ps)
close(ps[0], ref[0], 1e-4)
os.write(1, f"OK {me}\n".encode())  # one write: ranks share the pipe
