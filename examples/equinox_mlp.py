"""equinox's eqx.nn.MLP trained with optax adam under eqx.filter_jit / eqx.filter_value_and_grad.

Runs on jaxlite (`python -m jaxlite examples/equinox_mlp.py`) or on real JAX (`python
examples/equinox_mlp.py`); prints the loss curve and the wall time. `--steps N` sets the length.
"""
import argparse
import time

T0 = time.perf_counter()

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402


def make_data(rng, n=256, d=4):
  x = rng.normal(size=(n, d)).astype(np.float32)
  y = np.sin(x.sum(axis=1, keepdims=True)) + 0.1 * x[:, :1] ** 2
  return jnp.asarray(x), jnp.asarray(y.astype(np.float32))


def train(steps=200, lr=1e-3, every=20):
  x, y = make_data(np.random.default_rng(0))
  model = eqx.nn.MLP(in_size=x.shape[1], out_size=1, width_size=32, depth=2,
                     activation=jnp.tanh, key=jax.random.PRNGKey(0))
  opt = optax.adam(lr)
  opt_state = opt.init(eqx.filter(model, eqx.is_inexact_array))

  def loss_fn(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)

  @eqx.filter_jit
  def step(model, opt_state):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
    return eqx.apply_updates(model, updates), opt_state, loss

  losses = []
  for i in range(steps):
    model, opt_state, loss = step(model, opt_state)
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
