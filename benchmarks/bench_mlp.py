"""MLP train step benchmark: 784-512-512-10 (ReLU, softmax cross-entropy), batch 128, one SGD
step, as `jit(value_and_grad(loss))` in jaxlite and JAX, hand-written backprop in NumPy, and
autograd in PyTorch where installed.

`workloads()` feeds the shared harness; `python benchmarks/bench_mlp.py` times them alone.
"""
from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import tiered

SIZES, BATCH, LR = (784, 512, 512, 10), 128, 0.01


def _data():
  rng = np.random.default_rng(0)
  params = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
             np.zeros(n, np.float32)) for m, n in itertools.pairwise(SIZES)]
  x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
  labels = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
  return params, x, labels


# --- NumPy: the forward pass and backprop written out by hand -----------------------------------

def _numpy_step(params, x, labels):
  acts, h = [x], x
  for w, b in params[:-1]:
    h = np.maximum(h @ w + b, 0)
    acts.append(h)
  w, b = params[-1]
  logits = h @ w + b
  shifted = logits - logits.max(axis=1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
  loss = -np.mean(np.sum(log_probs * labels, axis=1))
  delta = (np.exp(log_probs) - labels) / x.shape[0]
  new = []
  for i in range(len(params) - 1, -1, -1):
    w, b = params[i]
    gw, gb = acts[i].T @ delta, delta.sum(axis=0)
    if i:
      delta = (delta @ w.T) * (acts[i] > 0)
    new.append((w - LR * gw, b - LR * gb))
  return loss, new[::-1]


# --- jaxlite and JAX: the same program, differentiated and jitted ---------------------------------

def _jax_step(jax_mod):
  jnp = jax_mod.numpy

  def loss(params, x, labels):
    h = x
    for w, b in params[:-1]:
      h = jax_mod.nn.relu(jnp.dot(h, w) + b)
    w, b = params[-1]
    logits = jnp.dot(h, w) + b
    return -jnp.mean(jnp.sum(jax_mod.nn.log_softmax(logits) * labels, axis=1))

  @jax_mod.jit
  def step(params, x, labels):
    value, grads = jax_mod.value_and_grad(loss)(params, x, labels)
    return value, jax_mod.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
  return step


def _jax_callable(jax_mod, params, x, labels):
  step = _jax_step(jax_mod)
  jnp = jax_mod.numpy
  params = jax_mod.tree_util.tree_map(jnp.asarray, params)
  x, labels = jnp.asarray(x), jnp.asarray(labels)

  def call():
    return jax_mod.block_until_ready(step(params, x, labels))
  return call


def _torch_callable(torch, params, x, labels):
  ps = [(torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True))
        for w, b in params]
  tx, tl = torch.tensor(x), torch.tensor(labels)

  def call():
    h = tx
    for w, b in ps[:-1]:
      h = torch.relu(h @ w + b)
    w, b = ps[-1]
    loss = -(torch.log_softmax(h @ w + b, dim=1) * tl).sum(dim=1).mean()
    grads = torch.autograd.grad(loss, [t for pair in ps for t in pair])
    with torch.no_grad():
      return loss, [t - LR * g for t, g in zip([t for pair in ps for t in pair], grads)]
  return call


def workloads() -> list[tuple[str, dict[str, Callable[[], object]]]]:
  params, x, labels = _data()
  import jaxlite
  impls = {"jaxlite": _jax_callable(jaxlite, params, x, labels),
           "numpy": lambda: _numpy_step(params, x, labels)}
  try:
    import jax
  except ImportError:
    pass
  else:
    impls["jax"] = _jax_callable(jax, params, x, labels)
  try:
    import torch
  except ImportError:
    pass
  else:
    impls["torch"] = _torch_callable(torch, params, x, labels)
  name = f"MLP train step {'-'.join(map(str, SIZES))}, batch {BATCH}"
  return [(name, tiered(impls))]


def _check_agreement() -> float:
  """Largest difference between jaxlite's updated weights and hand-written NumPy backprop's."""
  import jaxlite
  params, x, labels = _data()
  want_loss, want = _numpy_step(params, x, labels)
  got_loss, got = _jax_step(jaxlite)(params, x, labels)
  diffs = [abs(float(got_loss) - want_loss)]
  diffs += [float(np.max(np.abs(np.asarray(g) - w)))
            for gp, wp in zip(got, want) for g, w in zip(gp, wp)]
  return max(diffs)


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
    print(f"{name}: " + "  ".join(f"{impl} {fmt_seconds(s)}" for impl, s in figures.items()))
    for other in ("numpy", "jax", "torch"):
      if other in figures:
        print(f"  jaxlite/{other} {figures['jaxlite'] / figures[other]:.2f}x")


if __name__ == "__main__":
  main()
