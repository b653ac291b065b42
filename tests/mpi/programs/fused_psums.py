"""Run under `mpiexec -n N` (argument: CPU devices per process, default 1): several psums over
an axis spanning the processes at one point of a jitted shard_map -- a psum of a pytree, and a
data-parallel step's gradient psums, written in the body or inserted by the partitioner -- are packed into one MPI Allreduce per dtype. Values are
checked against the single-process computation on the global data (every process can build
it), and the MPI calls counted; each rank prints `OK <rank>` at the end."""
import os
import sys

import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite._src.compiler.xla import multiprocess
from jaxlite._src.distributed import mpi_collectives as mc
from jaxlite.sharding import Mesh, NamedSharding, PartitionSpec as P

local = int(sys.argv[1]) if len(sys.argv) > 1 else 1
jax.config.update("jax_num_cpu_devices", local)
jax.distributed.initialize()
# With the xla backend the psums are XLA's all-reduces across processes (gloo), no MPI Allreduce
# (compiler/xla/multiprocess.py); on the NumPy backend they are packed into MPI Allreduces.
ON_XLA = multiprocess.active()
me, n = jax.process_index(), jax.process_count()
mesh = Mesh(np.array(jax.devices()), ("x",))
split, repl = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
lax = jax.lax
ndev = mesh.size

# Count the Allreduces across processes: the reducers of compiled bodies (allreducer) and the
# SPMD runtime's exchanges (allreduce).
calls = []
_allreduce, _allreducer = mc.allreduce, mc.allreducer


def counting_allreduce(x, *a, **k):
  calls.append(np.asarray(x).dtype)
  return _allreduce(x, *a, **k)


def counting_allreducer(*a, **k):
  inner = _allreducer(*a, **k)

  def run(x):
    calls.append(x.dtype)
    return inner(x)
  run.op = inner.op
  return run


mc.allreduce, mc.allreducer = counting_allreduce, counting_allreducer


def put(global_value):
  """The global Array split over "x" on axis 0, from this process's rows."""
  per = global_value.shape[0] // n
  return jax.make_array_from_process_local_data(
      split, global_value[me * per:(me + 1) * per], global_value.shape)


# 1. A psum of a pytree of mixed dtypes: one Allreduce per dtype, values as NumPy's.
rng = np.random.default_rng(0)
tree = {"a": rng.integers(-5, 6, (ndev * 2, 3)).astype(np.float32),
        "b": rng.integers(-5, 6, (ndev,)).astype(np.float32),
        "c": rng.integers(-5, 6, (ndev * 3,)).astype(np.int32),
        "d": rng.integers(-5, 6, (ndev, 2, 2)).astype(np.float32)}
psum_tree = jax.jit(jax.shard_map(lambda t: lax.psum(t, "x"), mesh=mesh, in_specs=P("x"),
                                  out_specs=P()))


def blocks_sum(v):
  return v.reshape((ndev, -1) + v.shape[1:]).sum(0)


for i in range(3):
  calls.clear()
  out = psum_tree({k: put(v * (i + 1)) for k, v in tree.items()})
  for k, v in tree.items():
    got = np.asarray(out[k])
    assert got.dtype == v.dtype, (k, got.dtype)
    np.testing.assert_array_equal(got, blocks_sum(v * (i + 1)), err_msg=f"{k} call {i}")
  if n > 1:
    assert sorted(map(str, calls)) == ([] if ON_XLA else ["float32", "int32"]), calls

# 2. A data-parallel step in jit(shard_map): per-shard gradients, psummed (the JAX way).
SIZES = (5, 16, 8, 1)
params = [(jnp.asarray(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a)),
           jnp.zeros(b, jnp.float32)) for a, b in zip(SIZES[:-1], SIZES[1:])]
x = rng.normal(size=(ndev * 4, SIZES[0])).astype(np.float32)
y = np.sin(x.sum(1, keepdims=True)).astype(np.float32)


def loss_sum(p, x, y):
  for w, b in p[:-1]:
    x = jnp.tanh(x @ w + b)
  w, b = p[-1]
  return jnp.sum((x @ w + b - y) ** 2)


def shard_grads(p, xb, yb):
  loss, g = jax.value_and_grad(loss_sum)(p, xb, yb)
  return lax.psum((loss, g), "x")


# check_vma=False: the body's gradient is this shard's own part, summed by the psum (with
# check_vma=True, as in JAX, it would already be summed through the implicit pvary).
step = jax.jit(jax.shard_map(shard_grads, mesh=mesh, in_specs=(P(), P("x"), P("x")),
                             out_specs=P(), check_vma=False))
p_rep = jax.device_put(params, repl)
want_loss, want_g = jax.value_and_grad(loss_sum)(params, jnp.asarray(x), jnp.asarray(y))
for i in range(3):
  calls.clear()
  loss, g = step(p_rep, put(x), put(y))
  np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
  for got, want in zip(jax.tree.leaves(g), jax.tree.leaves(want_g)):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
  if n > 1:
    assert len(calls) == (0 if ON_XLA else 1), calls  # NumPy: seven float32 psums, one Allreduce

# 3. The same step as jit of the global-batch function (the partitioner inserts each layer's
# gradient psum inside the backward pass, between the next layer's backprop): reordered so the
# psums meet once.
@jax.jit
def partitioned(p, x, y):
  return jax.value_and_grad(loss_sum)(p, x, y)


for i in range(3):
  calls.clear()
  loss, g = partitioned(p_rep, put(x), put(y))
  np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
  for got, want in zip(jax.tree.leaves(g), jax.tree.leaves(want_g)):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
  if n > 1:
    assert len(calls) == (0 if ON_XLA else 1), calls

jax.distributed.shutdown()
os.write(1, f"OK {me}\n".encode())  # one write: ranks share the pipe
