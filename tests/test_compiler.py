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


# The NumPy backend's generated code (its buffer reuse): pinned to that backend.
def test_generated_source_reuses_buffers(on_numpy):
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


def test_scalar_broadcasts_fold_into_their_readers():
  # uniform's bounds are broadcast to f32[1] and read by `max d m` / `sub e d`: the reader takes
  # the literal (one side only, so the result keeps its shape); no signed-zero fix-up is left.
  from jaxlite import lax
  key = jax.random.key(0)
  closed = jax.make_jaxpr(lambda k: jax.random.uniform(k, (5,), minval=-1.0, maxval=2.0))(key)
  jaxpr, _ = passes.optimize(closed)
  (mx,) = [e for e in jaxpr.eqns if e.primitive.name == "max"]
  assert type(mx.invars[0]) is passes.Literal and float(mx.invars[0].val) == -1.0
  src = jax.jit(lambda k: jax.random.uniform(k, (5,), minval=-1.0, maxval=2.0)) \
      .lower(key).compile().as_text()
  assert "copysign" not in src
  for e in jaxpr.eqns:
    if e.primitive in passes.scalar_operand_primitives:
      assert sum(type(v) is passes.Literal for v in e.invars) < 2
  np.testing.assert_array_equal(
      np.asarray(jax.jit(lambda k: jax.random.uniform(k, (1000,), minval=-1.0))(key)),
      np.asarray(jax.random.uniform(key, (1000,), minval=-1.0)))

  def signed(x):  # a zero bound broadcast: folding keeps JAX's max(-0., 0.) = 0.
    zero = lax.broadcast_in_dim(np.float32(0.0), x.shape, ())
    return lax.max(zero, x), lax.min(x, lax.broadcast_in_dim(np.float32(-0.0), x.shape, ()))
  x = np.array([-0.0, 0.0, -1.0, 1.0, np.nan], np.float32)
  for got, want in zip(jax.jit(signed)(x), (np.array([0.0, 0.0, 0.0, 1.0, np.nan], np.float32),
                                            np.array([-0.0, -0.0, -1.0, -0.0, np.nan],
                                                     np.float32))):
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(want))


def test_custom_derivative_calls_are_inlined():
  # Compiled code runs only the primal function of a custom_jvp/custom_vjp call: its eqns join
  # the caller's (relu's max can fuse with the bias add before it).
  @jax.custom_vjp
  def clip_grad(x):
    return jnp.sin(x)
  clip_grad.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.clip(g, -1, 1),))
  x = np.linspace(-2, 2, 7, dtype=np.float32)
  assert _optimized(lambda v: jax.nn.relu(v + 1.0), x) == ["add", "max"]
  assert _optimized(lambda v: clip_grad(v) * 2, x) == ["sin", "mul"]
  np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: jax.nn.relu(v + 1.0))(x)),
                                np.maximum(x + 1, 0))
  np.testing.assert_array_equal(np.asarray(jax.jit(jax.grad(lambda v: clip_grad(v * 3).sum()))(x)),
                                np.full(7, 3.0, np.float32))
