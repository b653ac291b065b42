"""A small MLP trained with optax's adam on synthetic regression data under jax.jit(value_and_grad).

Runs on jaxlite (`python -m jaxlite examples/optax_mlp.py`) or on real JAX (`python
examples/optax_mlp.py`); prints the loss curve and the wall time. `--steps N` sets the length.
"""
import argparse
import time

T0 = time.perf_counter()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402


def init_params(rng, sizes):
  """Glorot-scaled weights from NumPy (identical on both backends), zero biases."""
  params = []
  for n_in, n_out in zip(sizes[:-1], sizes[1:]):
    w = rng.normal(0.0, np.sqrt(2.0 / (n_in + n_out)), (n_in, n_out)).astype(np.float32)
    params.append({"w": jnp.asarray(w), "b": jnp.zeros((n_out,), jnp.float32)})
  return params


def mlp(params, x):
  for layer in params[:-1]:
    x = jnp.tanh(x @ layer["w"] + layer["b"])
  return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
  return jnp.mean((mlp(params, x) - y) ** 2)


def make_data(rng, n=256, d=8):
  x = rng.normal(size=(n, d)).astype(np.float32)
  w = rng.normal(size=(d, 1)).astype(np.float32)
  y = np.sin(x @ w) + 0.1 * x[:, :1] ** 2
  return jnp.asarray(x), jnp.asarray(y.astype(np.float32))


def train(steps=200, lr=3e-3, every=20):
  rng = np.random.default_rng(0)
  x, y = make_data(rng)
  params = init_params(rng, [x.shape[1], 32, 32, 1])
  opt = optax.adam(lr)
  opt_state = opt.init(params)

  @jax.jit
  def step(params, opt_state):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

  losses = []
  for i in range(steps):
    params, opt_state, loss = step(params, opt_state)
    if i % every == 0 or i == steps - 1:
      losses.append((i, float(loss)))
  return losses


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--steps", type=int, default=200)
  args = ap.parse_args(argv)
  backend = "jaxlite" if getattr(jax, "__jaxlite__", None) is not None else "jax"
  losses = train(args.steps)
  for i, loss in losses:
    print(f"step {i:4d}  loss {loss:.7f}")
  print(f"backend {backend}  final_loss {losses[-1][1]:.7f}  "
        f"wall_time {time.perf_counter() - T0:.2f}s")


if __name__ == "__main__":
  main()
