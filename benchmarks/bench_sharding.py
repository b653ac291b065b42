"""Sharded execution (issue 12): a data-parallel MLP training step on 1 and 2 CPU devices,
`shard_map` of `psum` over 8 devices, and the overhead of sharded eager ops and jitted calls on
tiny arrays (also a cached jit call under `jax.set_mesh` on arguments on no mesh) — jaxlite
beside JAX.

The CPU device count is fixed when a process first uses its devices, so every measurement
runs in a child process (`python bench_sharding.py <impl> <case>`), which prints the median
seconds per call; `workloads()` wraps those children for the shared harness.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES, BATCH, LR = (784, 512, 512, 10), 256, 0.01

# case -> number of CPU devices the child process asks for
CASES = {"dp_step_1dev": 1, "dp_step_2dev": 2, "psum_8dev_1mib": 8, "eager_sharded_add": 2,
         "jit_sharded_call": 2, "jit_call_set_mesh": 2}


def _dp_step(jax, ndev, batch=BATCH, devices=None):
  """One SGD step of the MLP, batch `batch` split over `ndev` devices (the first `ndev` of
  `devices` where given), gradients psum'med."""
  import numpy as np
  jnp = jax.numpy
  P = jax.sharding.PartitionSpec
  NamedSharding = jax.sharding.NamedSharding
  mesh = jax.make_mesh((ndev,), ("batch",)) if devices is None else \
      jax.make_mesh((ndev,), ("batch",), devices=devices[:ndev])
  rng = np.random.default_rng(0)
  params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
             np.zeros(n, np.float32)) for m, n in itertools.pairwise(SIZES)]
  x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
  labels = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], batch)]

  def loss(params, x, labels):
    h = x
    for w, b in params[:-1]:
      h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    logp = jax.nn.log_softmax(h @ w + b)
    return -jnp.sum(logp * labels) / batch

  def local_step(params, x, labels):
    lv, grads = jax.value_and_grad(loss)(params, x, labels)
    lv, grads = jax.lax.psum((lv, grads), "batch")
    return lv, jax.tree.map(lambda p, g: p - LR * g, params, grads)

  # check_vma=False: each device's gradient is its own part, summed by the explicit psum (with
  # the default check_vma=True the gradient of the replicated params is already summed through
  # JAX's implicit pvary, and the psum would count it once per device again).
  step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                               out_specs=(P(), P()), check_vma=False))
  xs = jax.device_put(x, NamedSharding(mesh, P("batch")))
  ls = jax.device_put(labels, NamedSharding(mesh, P("batch")))
  params = jax.device_put(params, NamedSharding(mesh, P()))
  state = {"p": params}

  def run():
    lv, state["p"] = step(state["p"], xs, ls)
    lv.block_until_ready()
  return run


def _psum(jax, ndev):
  import numpy as np
  NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
  mesh = jax.make_mesh((ndev,), ("i",))
  block = 1 << 18  # float32 elements: 1 MiB per device
  x = jax.device_put(np.ones((ndev * block,), np.float32), NamedSharding(mesh, P("i")))
  f = jax.jit(jax.shard_map(lambda b: jax.lax.psum(b, "i"), mesh=mesh, in_specs=P("i"),
                            out_specs=P()))
  return lambda: f(x).block_until_ready()


def _tiny(jax, ndev, jitted):
  import numpy as np
  NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
  mesh = jax.make_mesh((ndev,), ("i",))
  x = jax.device_put(np.ones(8, np.float32), NamedSharding(mesh, P("i")))
  if jitted:
    f = jax.jit(lambda v: v * 2 + 1)
    return lambda: f(x).block_until_ready()
  return lambda: (x + 1).block_until_ready()


def _under_set_mesh(jax, ndev):
  """A cached jit call on an array made off the mesh, with `jax.set_mesh` entered for the whole
  timing (the results are placed on the context mesh by their types)."""
  mesh = jax.make_mesh((ndev,), ("i",))
  x = jax.numpy.ones((8, 8))
  f = jax.jit(lambda v: v * 2 + 1)
  return lambda: f(x).block_until_ready(), jax.set_mesh(mesh)


def _child(impl, case):
  sys.path.insert(0, str(HERE))
  sys.path.insert(0, str(HERE.parent / "src"))
  ndev = CASES[case]
  jax = __import__("jax" if impl == "jax" else "jaxlite")
  jax.config.update("jax_num_cpu_devices", ndev)
  if case.startswith("dp_step"):
    fn = _dp_step(jax, ndev)
  elif case.startswith("psum"):
    fn = _psum(jax, ndev)
  elif case == "jit_call_set_mesh":
    fn, context = _under_set_mesh(jax, ndev)
  else:
    fn = _tiny(jax, ndev, case == "jit_sharded_call")
  from harness import time_callable
  if case == "jit_call_set_mesh":
    with context:
      print(time_callable(fn))
    return
  print(time_callable(fn))


def _in_child(impl, case):
  def run():
    out = subprocess.run([sys.executable, __file__, impl, case], capture_output=True, text=True,
                         env=dict(os.environ), timeout=600)
    if out.returncode:
      raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return float(out.stdout.strip().splitlines()[-1])
  run.single_shot = True
  return run


def workloads():
  impls = ["jaxlite"]
  try:
    import jax  # noqa: F401
    impls.append("jax")
  except ImportError:
    pass
  names = {"dp_step_1dev": "dp MLP step b256, 1 device",
           "dp_step_2dev": "dp MLP step b256, 2 devices",
           "psum_8dev_1mib": "shard_map psum 8 dev x 1 MiB",
           "eager_sharded_add": "eager x + 1, f32[8] on 2 dev",
           "jit_sharded_call": "jit call, f32[8] on 2 dev",
           "jit_call_set_mesh": "jit call under set_mesh, f32[8,8]"}
  return [(names[c], {i: _in_child(i, c) for i in impls}) for c in CASES]


if __name__ == "__main__":
  if len(sys.argv) == 3:
    _child(sys.argv[1], sys.argv[2])
  else:
    from harness import run_workloads
    run_workloads(workloads(), only=sys.argv[1:] or None)
