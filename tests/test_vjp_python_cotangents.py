"""A VJP function called with Python numbers: JAX hands a float cotangent to a custom_vjp's
bwd as the float it is and returns what bwd returns; an identity passes it through; a sum of
cotangents is an Array. Compared with JAX (type and value of what bwd sees and what comes back)."""
from __future__ import annotations

import numpy as np

import jaxlite
import jaxlite.numpy as jlnp
from conftest import oracle


def _runs(jax, jnp):
  seen = []

  @jax.custom_vjp
  def f(x):
    return x * 2

  def fwd(x):
    return f(x), None

  def bwd(res, g):
    seen.append((type(g).__name__, float(g)))
    return (g * 2.0,)
  f.defvjp(fwd, bwd)
  outs = []
  for fun, primals, ct in ((f, (3.0,), 1.0), (f, (3.0,), jnp.float32(1.0)),
                           (lambda x: f(x) + jnp.sin(x), (3.0,), 1.0),
                           (lambda x: x, (3.0,), 1.0), (lambda x: (x, x * 3), (3.0,), (1.0, 1.0)),
                           (lambda x, z: (x, z), (3.0, 2.0), (1.0, 1.0)),
                           (jnp.sin, (3.0,), 1.0), (lambda x: jnp.sum(x ** 2), (jnp.ones(2),), 1.0)):
    _, pb = jax.vjp(fun, *primals)
    res = pb(ct)
    outs.append([(type(r).__name__, np.asarray(r).tolist(), getattr(r, "weak_type", None))
                 for r in res])
  outs.append([(type(jax.grad(f)(3.0)).__name__, 0, 0)])
  return seen, outs


def test_python_float_cotangents_as_jax():
  ours = _runs(jaxlite, jlnp)
  real = oracle()
  import jax.numpy as jnp
  theirs = _runs(real, jnp)
  assert ours[0] == theirs[0]
  assert ours[0][0] == ("float", 1.0)
  assert ours[1] == theirs[1]
  assert ours[1][0] == [("float", 2.0, None)]
