"""Scan benchmark: a 1000-step tanh RNN (hidden 128, batch 32) as `lax.scan` under jit in
jaxlite and JAX, against the same recurrence as a NumPy Python loop.

`workloads()` feeds the shared harness; `python benchmarks/bench_scan.py` times them alone.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import tiered

STEPS, HIDDEN, BATCH = 1000, 128, 32


def _data():
  rng = np.random.default_rng(0)
  w = (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
  u = (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
  b = np.zeros(HIDDEN, np.float32)
  h0 = np.zeros((BATCH, HIDDEN), np.float32)
  xs = rng.standard_normal((STEPS, BATCH, HIDDEN)).astype(np.float32)
  return w, u, b, h0, xs


def _rnn_numpy(w, u, b, h0, xs):
  h, hs = h0, np.empty_like(xs)
  for t in range(xs.shape[0]):
    h = np.tanh(h @ w + xs[t] @ u + b)
    hs[t] = h
  return h, hs


def _rnn_scan(jax_mod, w, u, b, h0, xs):
  """The same recurrence as `lax.scan` for a JAX-like module (jaxlite or jax), jitted."""
  jnp, lax = jax_mod.numpy, jax_mod.lax

  def step(h, x):
    h = jnp.tanh(h @ w + x @ u + b)
    return h, h

  run = jax_mod.jit(lambda h0, xs: lax.scan(step, h0, xs))
  h0, xs = jnp.asarray(h0), jnp.asarray(xs)

  def call():
    return jax_mod.block_until_ready(run(h0, xs))
  return call


def workloads() -> list[tuple[str, dict[str, Callable[[], object]]]]:
  data = _data()
  impls = {"numpy": lambda: _rnn_numpy(*data)}
  import jaxlite
  impls["jaxlite"] = _rnn_scan(jaxlite, *data)
  try:
    import jax
  except ImportError:
    pass
  else:
    impls["jax"] = _rnn_scan(jax, *data)
  return [(f"scan RNN {STEPS} steps, hidden {HIDDEN}, batch {BATCH}", tiered(impls))]


def _check_agreement() -> float:
  """Largest difference between jaxlite's final state and NumPy's (they must agree)."""
  import jaxlite
  data = _data()
  want, _ = _rnn_numpy(*data)
  got, _ = _rnn_scan(jaxlite, *data)()
  return float(np.max(np.abs(np.asarray(got) - want)))


def main() -> None:
  try:
    import jaxlite  # noqa: F401
  except ImportError:  # run from a checkout without installing: use its src/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
  sys.path.insert(0, str(Path(__file__).resolve().parent))
  from harness import fmt_seconds, time_callable
  print(f"max |jaxlite - numpy| = {_check_agreement():.2e}")
  for name, fns in workloads():
    figures = {impl: time_callable(fn) for impl, fn in fns.items()}
    cells = "  ".join(f"{impl} {fmt_seconds(s)}" for impl, s in figures.items())
    print(f"{name}: {cells}")
    if "jax" in figures:
      print(f"  jaxlite/jax {figures['jaxlite'] / figures['jax']:.2f}x, "
            f"jaxlite/numpy {figures['jaxlite'] / figures['numpy']:.2f}x")


if __name__ == "__main__":
  main()
