"""vmap benchmark: per-example gradients of a linear model's squared loss (batch 256, dim 1024)
via `jit(vmap(grad(loss)))` in jaxlite and JAX, against the gradients batched by hand in NumPy.

`workloads()` feeds the shared harness; `python benchmarks/bench_vmap.py` times them alone.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import tiered

BATCH, DIM = 256, 1024


def _data():
  rng = np.random.default_rng(0)
  w = (rng.standard_normal(DIM) / np.sqrt(DIM)).astype(np.float32)
  b = np.float32(0.1)
  xs = rng.standard_normal((BATCH, DIM)).astype(np.float32)
  ys = rng.standard_normal(BATCH).astype(np.float32)
  return w, b, xs, ys


def _per_example_numpy(w, b, xs, ys):
  """d/dw and d/db of (x.w + b - y)^2 for every example at once."""
  err = 2 * (xs @ w + b - ys)
  return err[:, None] * xs, err


def _per_example_grads(jax_mod) -> Callable:
  """jit(vmap(grad(loss))) for a JAX-like module (jaxlite or jax)."""
  jnp = jax_mod.numpy

  def loss(params, x, y):
    w, b = params
    return (jnp.dot(x, w) + b - y) ** 2

  return jax_mod.jit(jax_mod.vmap(jax_mod.grad(loss), in_axes=(None, 0, 0)))


def _impls() -> dict[str, Callable[[], object]]:
  w, b, xs, ys = _data()
  impls = {"numpy": lambda: _per_example_numpy(w, b, xs, ys)}
  import jaxlite
  lite = _per_example_grads(jaxlite)
  impls["jaxlite"] = lambda: lite((w, b), xs, ys)
  try:
    import jax
  except ImportError:
    return impls
  fast = _per_example_grads(jax)
  wj, bj, xj, yj = (jax.numpy.asarray(a) for a in (w, b, xs, ys))
  impls["jax"] = lambda: jax.block_until_ready(fast((wj, bj), xj, yj))
  return impls


def workloads() -> list[tuple[str, dict[str, Callable[[], object]]]]:
  return [(f"per-example grads jit(vmap(grad)) {BATCH}x{DIM}", tiered(_impls()))]


def check() -> None:
  """The jaxlite gradients equal the hand-batched NumPy ones."""
  import jaxlite
  w, b, xs, ys = _data()
  gw, gb = _per_example_grads(jaxlite)((w, b), xs, ys)
  want_w, want_b = _per_example_numpy(w, b, xs, ys)
  np.testing.assert_allclose(gw, want_w, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(gb, want_b, rtol=1e-4, atol=1e-4)


def main() -> None:
  try:
    import jaxlite  # noqa: F401
  except ImportError:  # run from a checkout without installing: use its src/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
  sys.path.insert(0, str(Path(__file__).resolve().parent))
  from harness import run_workloads
  check()
  run_workloads(workloads())


if __name__ == "__main__":
  main()
