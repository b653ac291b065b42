"""A flax.nnx MLP (nnx.Linear layers) trained with nnx.Optimizer(optax.adam) under nnx.jit.

Runs on jaxlite (`python -m jaxlite examples/flax_nnx.py`) or on real JAX (`python
examples/flax_nnx.py`); prints the loss curve and the wall time. `--steps N` sets the length.
"""
import argparse
import time

T0 = time.perf_counter()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402


class MLP(nnx.Module):
  def __init__(self, d_in, width, d_out, *, rngs):
    self.hidden1 = nnx.Linear(d_in, width, rngs=rngs)
    self.hidden2 = nnx.Linear(width, width, rngs=rngs)
    self.out = nnx.Linear(width, d_out, rngs=rngs)

  def __call__(self, x):
    x = jnp.tanh(self.hidden1(x))
    x = jnp.tanh(self.hidden2(x))
    return self.out(x)


def make_data(rng, n=256, d=8):
  x = rng.normal(size=(n, d)).astype(np.float32)
  w = rng.normal(size=(d, 1)).astype(np.float32)
  y = np.sin(x @ w) + 0.1 * x[:, :1] ** 2
  return jnp.asarray(x), jnp.asarray(y.astype(np.float32))


def train(steps=300, lr=3e-3, every=20):
  x, y = make_data(np.random.default_rng(0))
  # Initial weights come from nnx.Rngs(0) (threefry): the same bits on jaxlite and JAX.
  model = MLP(x.shape[1], 32, 1, rngs=nnx.Rngs(0))
  optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)

  def loss_fn(model):
    return jnp.mean((model(x) - y) ** 2)

  @nnx.jit
  def step(model, optimizer):
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss

  losses = []
  for i in range(steps):
    loss = step(model, optimizer)
    if i % every == 0 or i == steps - 1:
      losses.append((i, float(loss)))
  return losses


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--steps", type=int, default=300)
  args = ap.parse_args(argv)
  backend = "jaxlite" if getattr(jax, "__jaxlite__", None) is not None else "jax"
  losses = train(args.steps)
  for i, loss in losses:
    print(f"step {i:4d}  loss {loss:.7f}")
  print(f"backend {backend}  final_loss {losses[-1][1]:.7f}  "
        f"wall_time {time.perf_counter() - T0:.2f}s")


if __name__ == "__main__":
  main()
