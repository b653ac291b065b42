"""Sharded programs on the xla backend (issue 31) beside JAX, on N XLA CPU devices of one process:

- `dp<N>`: the data-parallel MLP training step (784-512-512-10, global batch 2048 split over
  N devices, `shard_map` + `psum` of the gradients, SGD; bench_sharding.py's `_dp_step`) on
  1, 2, 4 and 8 devices;
- `psum8`: `jit(shard_map(psum))` over 8 devices x 1 MiB each;
- `mlp2d`: a 2-D (data x model) sharded MLP training step: jit with in_shardings, batch split
  over `data` (4), the hidden layer's weights over `model` (2); XLA's partitioner inserts the
  collectives (8 devices).

  cd <checkout> && PYTHONPATH=src python3 benchmarks/bench_xla_sharding.py [--cases dp1,psum8]

Every cell runs in its own child process (the CPU device count is fixed when a process first
uses its devices): `jaxlite-xla` is jaxlite with JAXLITE_BACKEND=xla, `JAX` real JAX. A cell is
the median time per call (including `block_until_ready`); the ratio is jaxlite-xla / JAX.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMPLS = {"jaxlite-xla": ("jaxlite", {"JAXLITE_BACKEND": "xla"}), "JAX": ("jax", {})}
CASES = {"dp1": 1, "dp2": 2, "dp4": 4, "dp8": 8, "psum8": 8, "mlp2d": 8}


def _mlp2d(jax, batch=2048, sizes=(784, 512, 512, 10), lr=0.01):
  """An MLP step over a (data=4, model=2) mesh: the batch split over `data`, the hidden
  layers' weights split over `model` (column then row, Megatron style)."""
  import numpy as np
  jnp = jax.numpy
  P, NamedSharding = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  mesh = jax.make_mesh((4, 2), ("data", "model"),
                       axis_types=(jax.sharding.AxisType.Auto,) * 2)
  rng = np.random.default_rng(0)
  params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
             np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
  x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
  labels = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
  specs = [(P(None, "model"), P("model")), (P("model", None), P()), (P(), P())]
  p_sh = [tuple(NamedSharding(mesh, s) for s in pair) for pair in specs]
  d_sh = NamedSharding(mesh, P("data"))

  def loss(params, x, labels):
    h = x
    for w, b in params[:-1]:
      h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    return -jnp.sum(jax.nn.log_softmax(h @ w + b) * labels) / batch

  def step(params, x, labels):
    lv, grads = jax.value_and_grad(loss)(params, x, labels)
    return lv, jax.tree.map(lambda p, g: p - lr * g, params, grads)

  f = jax.jit(step, in_shardings=(p_sh, d_sh, d_sh), out_shardings=(None, p_sh))
  state = {"p": jax.device_put(params, p_sh)}
  xs, ls = jax.device_put(x, d_sh), jax.device_put(labels, d_sh)

  def run():
    lv, state["p"] = f(state["p"], xs, ls)
    lv.block_until_ready()
  return run


def _child(module: str, case: str) -> None:
  sys.path.insert(0, str(HERE))
  sys.path.insert(0, str(HERE.parent / "src"))
  jax = __import__(module)
  jax.config.update("jax_num_cpu_devices", CASES[case])
  import bench_sharding
  from harness import time_callable
  if case.startswith("dp"):
    fn = bench_sharding._dp_step(jax, CASES[case], 2048)
  elif case == "psum8":
    fn = bench_sharding._psum(jax, 8)
  else:
    fn = _mlp2d(jax)
  fn()  # compile
  print(time_callable(fn, 0.2, 7, 20.0))


def _cell(impl: str, case: str) -> float:
  module, env = IMPLS[impl]
  out = subprocess.run([sys.executable, __file__, "--child", module, case],
                       capture_output=True, text=True, env={**os.environ, **env}, timeout=900)
  if out.returncode:
    last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    raise RuntimeError(last)
  return float(out.stdout.split()[-1])


def main(argv) -> None:
  p = argparse.ArgumentParser()
  p.add_argument("--cases", default=",".join(CASES))
  args = p.parse_args(argv)
  cases = [c for c in args.cases.split(",") if c in CASES]
  print(f"# python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores; "
        "cells: median time per call (block_until_ready included)")
  print("| case | devices | jaxlite-xla | JAX | jaxlite-xla / JAX |")
  print("|---|---|---|---|---|")
  for case in cases:
    cells = {}
    for impl in IMPLS:
      try:
        cells[impl] = _cell(impl, case)
      except Exception as e:  # noqa: BLE001 - a failing cell is reported in its place
        cells[impl] = f"failed: {str(e)[:80]}"
    a, b = cells["jaxlite-xla"], cells["JAX"]
    fmt = lambda s: f"{s * 1e3:.2f} ms" if isinstance(s, float) else s  # noqa: E731
    ratio = f"{a / b:.2f}" if isinstance(a, float) and isinstance(b, float) else ""
    print(f"| {case} | {CASES[case]} | {fmt(a)} | {fmt(b)} | {ratio} |", flush=True)


if __name__ == "__main__":
  if len(sys.argv) == 4 and sys.argv[1] == "--child":
    _child(sys.argv[2], sys.argv[3])
  else:
    main(sys.argv[1:])
