"""Compiler passes (inline, CSE, DCE) and the tier-0 executor's generated code."""
import numpy as np

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite._src.compiler import passes


def _optimized(f, *args):
  closed = jax.make_jaxpr(f)(*args)
  jaxpr, _ = passes.optimize(closed)
  return [e.primitive.name for e in jaxpr.eqns]


def test_inlines_nested_jit():
  prims = _optimized(lambda x: jax.jit(lambda y: jnp.sin(y) * 2)(x) + 1, 1.0)
  assert prims == ["sin", "mul", "add"]


def test_cse_and_dce():
  def f(x):
    a = jnp.sin(x) * 2
    b = jnp.sin(x) * 2  # same computation
    _ = jnp.exp(x)  # dead
    return a + b
  assert _optimized(f, 1.0) == ["sin", "mul", "add"]
  assert float(jax.jit(f)(1.0)) == float(f(1.0))


def test_generated_source_reuses_buffers():
  f = jax.jit(lambda x: jnp.tanh(x * 2.0 + 1.0) * 0.5)
  src = f.lower(jnp.ones(3)).compile().as_text()
  assert "out=" in src and "np.tanh" in src
  x = np.linspace(-2, 2, 7).astype(np.float32)
  np.testing.assert_allclose(np.asarray(f(x)), np.tanh(x * 2 + 1) * 0.5, rtol=1e-6)
  np.testing.assert_array_equal(x, np.linspace(-2, 2, 7).astype(np.float32))  # input untouched


def test_views_are_never_overwritten():
  def f(x):
    a = x * 2.0
    b = jnp.reshape(a, (3, 1))  # a view of a's buffer
    c = a + 1.0  # must not write into a
    return b, c
  b, c = jax.jit(f)(jnp.ones(3))
  assert b.tolist() == [[2.0], [2.0], [2.0]] and c.tolist() == [3.0, 3.0, 3.0]


def test_no_float_warnings_like_jax(recwarn):
  out = jax.jit(lambda x: jnp.exp(x) + jnp.log(x - 2.0))(jnp.array([1000.0]))
  assert np.isinf(np.asarray(out)).all() or np.isnan(np.asarray(out)).all()
  assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
