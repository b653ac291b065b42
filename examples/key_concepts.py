"""JAX's "Key concepts" page, run on jaxlite: every snippet, printing what JAX prints.

Run: python examples/key_concepts.py
"""
import jaxlite as jax
import jaxlite.numpy as jnp

# JAX arrays
x = jnp.arange(5)
print(isinstance(x, jax.Array))
print(x.devices())
print(x.sharding)


# Transformations
def selu(x, alpha=1.67, lambda_=1.05):
  return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


selu_jit = jax.jit(selu)
print(selu_jit(1.0))


# Tracing
@jax.jit
def f(x):
  print(x)
  return x + 1


x = jnp.arange(5)
result = f(x)

# Jaxprs
x = jnp.arange(5.0)
print(jax.make_jaxpr(selu)(x))

# Pytrees
params = [1, 2, (jnp.arange(3), jnp.ones(2))]
print(jax.tree.structure(params))
print(jax.tree.leaves(params))

params = {'n': 5, 'W': jnp.ones((2, 2)), 'b': jnp.zeros(2)}
print(jax.tree.structure(params))
print(jax.tree.leaves(params))

from typing import NamedTuple  # noqa: E402


class Params(NamedTuple):
  a: int
  b: float


params = Params(1, 5.0)
print(jax.tree.structure(params))
print(jax.tree.leaves(params))

# Pseudorandom numbers
from jaxlite import random  # noqa: E402

key = random.key(43)
print(key)
print(random.normal(key))
print(random.normal(key))

for i in range(3):
  new_key, subkey = random.split(key)
  del key
  val = random.normal(subkey)
  del subkey
  print(f"draw {i}: {val}")
  key = new_key

# Beyond the page: grad and vmap compose with jit.
print(jax.grad(lambda x: jnp.sum(selu(x)))(jnp.arange(3.0)))
print(jax.vmap(jax.grad(lambda x: selu(x)))(jnp.arange(3.0)))
