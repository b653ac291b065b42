"""JAX's "Key concepts" page, run on jaxlite: every snippet, printing what JAX prints, each
value after a label saying what it is.

Run: python examples/key_concepts.py
"""
import jaxlite as jax
import jaxlite.numpy as jnp


def show(label, value):
  """Prints `label: value` (a value of several lines starts on the next line)."""
  text = str(value)
  print(f"{label}:{chr(10) if chr(10) in text else ' '}{text}")


# JAX arrays
x = jnp.arange(5)
show("isinstance(x, jax.Array)", isinstance(x, jax.Array))
show("x.devices()", x.devices())
show("x.sharding", x.sharding)


# Transformations
def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


selu_jit = jax.jit(selu)
show("selu_jit(1.0)", selu_jit(1.0))


# Tracing
@jax.jit
def f(x):
  show("traced x inside f", x)
  return x + 1


x = jnp.arange(5)
result = f(x)

# Jaxprs
x = jnp.arange(5.0)
show("jax.make_jaxpr(selu)(x)", jax.make_jaxpr(selu)(x))

# Pytrees
params = [1, 2, (jnp.arange(3), jnp.ones(2))]
show("jax.tree.structure(params)", jax.tree.structure(params))
show("jax.tree.leaves(params)", jax.tree.leaves(params))

params = {'n': 5, 'W': jnp.ones((2, 2)), 'b': jnp.zeros(2)}
show("jax.tree.structure(params)", jax.tree.structure(params))
show("jax.tree.leaves(params)", jax.tree.leaves(params))

from typing import NamedTuple  # noqa: E402


class Params(NamedTuple):
  a: int
  b: float


params = Params(1, 5.0)
show("jax.tree.structure(params)", jax.tree.structure(params))
show("jax.tree.leaves(params)", jax.tree.leaves(params))

# Pseudorandom numbers
from jaxlite import random  # noqa: E402

key = random.key(43)
show("key", key)
show("random.normal(key)", random.normal(key))
show("random.normal(key) again (same key, same draw)", random.normal(key))

for i in range(3):
  new_key, subkey = random.split(key)
  del key
  val = random.normal(subkey)
  del subkey
  print(f"draw {i}: {val}")
  key = new_key

# Beyond the page: grad and vmap compose with jit.
show("grad of sum(selu) at [0, 1, 2]", jax.grad(lambda x: jnp.sum(selu(x)))(jnp.arange(3.0)))
show("vmap(grad(selu)) at [0, 1, 2]", jax.vmap(jax.grad(lambda x: selu(x)))(jnp.arange(3.0)))
