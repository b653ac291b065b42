"""A jit JVP'd inside a custom_jvp rule, under reverse mode, and a custom_vjp's nondiff closure
over a vmapped value (issue 34: ott-jax), against JAX.

ott's `norm` is a custom_jvp whose rule is `jax.jvp(jnp.linalg.norm, ...)`, and
`jnp.linalg.norm` is a jit: the rule binds one jit with the primal and its tangent together.
While linearizing, jaxlite staged that jit whole into the linear jaxpr, so its primal output
(the norm) became a linear value: `grad` of `norm(z) ** 2` failed with "mul is not linear in
both arguments at once", and a `value_and_grad` of it inside a `cond` returned the staged value
(UnexpectedTracerError): ott's h-transforms and transport maps (`costs_test.py::TestTICost`,
8 tests) run optax's L-BFGS, whose `value_and_grad_from_state` is such a cond. Now, as JAX's
partial evaluation does, the outputs that read no tangent are computed on the primal side.
"""
import numpy as np
import pytest

import jaxlite as jax
from conftest import oracle

X = np.array([0.5, -1.0, 2.0], np.float32)

# JAX 0.10.2 on CPU (recorded 2026-12-06), for X.
RECORDED = {
    "value_and_grad_in_cond": [36.997726, 17.474459, 1.5465374, 33.40238],
    "grad_of_grad": [21.481754, 14.748175, 28.215336],
    "norm_value_and_grad": [5.25, 1.0, -2.0, 4.0],
    "norm_grad_of_grad": [2.0, 2.0, 2.0],
    "h_transform_grad": [0.35000002, -0.70000005, 1.4000001],
}


def _ott_norm(m):
  """ott.math.utils.norm's pattern: a custom_jvp whose rule JVPs jnp.linalg.norm (a jit)."""
  @m.custom_jvp
  def norm(x):
    return m.numpy.linalg.norm(x)

  @norm.defjvp
  def norm_jvp(primals, tangents):
    return m.jvp(m.numpy.linalg.norm, primals, tangents)
  return norm


def _nested(m):
  """A rule JVP'ing a jit that calls another jit (the split recurses into the body)."""
  inner = m.jit(lambda x: m.numpy.linalg.norm(x) * 2.0)
  outer = m.jit(lambda x: inner(x) + m.numpy.sum(x))

  @m.custom_jvp
  def f(x):
    return outer(x)
  f.defjvp(lambda p, t: m.jvp(outer, p, t))
  return f


def _cases(m):
  jnp, lax = m.numpy, m.lax
  norm, nested = _ott_norm(m), _nested(m)

  def value_and_grad_in_cond(f):
    v, g = lax.cond(True, lambda z: m.value_and_grad(lambda z: f(z) ** 2)(z),
                    lambda z: (jnp.sum(z), z), X)
    return [float(v)] + [float(a) for a in g]

  def grad_of_grad(f):
    return [float(a) for a in m.grad(lambda x: jnp.sum(m.grad(lambda z: f(z) ** 2)(x)))(X)]

  def h_transform_grad():
    # ott's h_transform: a loop of value_and_grad steps (in a cond) on a function closing
    # over x, its minimiser stopped, differentiated with respect to x.
    a = jnp.eye(3) * 2.0

    def g_h(x):
      def fun(z):
        return 0.5 * norm(z) ** 2 + jnp.sum((x - z) * (a @ (x - z)))

      def step(c):
        z, i = c
        _, g = lax.cond(z[0] > -100, m.value_and_grad(fun), lambda z: (fun(z), z), z)
        return z - 0.1 * g, i + 1
      z = lax.while_loop(lambda c: c[1] < 3, step, (x, 0))[0]
      return fun(lax.stop_gradient(z))
    return [float(v) for v in m.grad(g_h)(X)]

  return {
      "value_and_grad_in_cond": value_and_grad_in_cond(nested),
      "grad_of_grad": grad_of_grad(nested),
      "norm_value_and_grad": value_and_grad_in_cond(norm),
      "norm_grad_of_grad": grad_of_grad(norm),
      "h_transform_grad": h_transform_grad(),
  }


def test_jit_jvpd_in_a_custom_jvp_rule_under_reverse_mode():
  got = _cases(jax)
  for name, want in RECORDED.items():
    np.testing.assert_allclose(got[name], want, rtol=2e-6, atol=1e-6, err_msg=name)


def test_recorded_values_are_jaxs():
  real = oracle()
  want = _cases(real)
  for name, values in RECORDED.items():
    np.testing.assert_allclose(want[name], values, rtol=2e-6, atol=1e-6, err_msg=name)


def test_primal_value_of_a_rules_jit_is_not_staged():
  """The value value_and_grad returns is a concrete Array, also under make_jaxpr's grad."""
  norm = _ott_norm(jax)
  v, g = jax.value_and_grad(lambda z: norm(z) ** 2)(X)
  assert type(v) is type(jax.numpy.asarray(1.0)) and float(v) == pytest.approx(5.25)
  jaxpr = jax.make_jaxpr(jax.grad(lambda z: norm(z) ** 2))(X)
  # the norm is computed once on the primal side; the linear part multiplies by it
  assert "jit" in str(jaxpr)
  np.testing.assert_allclose(np.asarray(g), 2 * X, rtol=1e-6)


def _nondiff_closure_under_vmap(m):
  """ott's fixed-point loops (`fixpoint_iter_backprop`, behind `sqrtm` and the Bures
  barycenter): a custom_vjp whose nondiff argument is a loop body closing over a value the
  caller's vmap batches. jaxlite batched the function in a new vmap trace that took the
  closed-over tracer for a foreign one (UnexpectedTracerError); JAX's batch subtrace shares
  the vmap's tag."""
  import functools

  @functools.partial(m.custom_vjp, nondiff_argnums=(0,))
  def loop(body, state):
    return m.lax.while_loop(lambda s: s[0] < 3, body, state)

  def fwd(body, state):
    return loop(body, state), None

  def bwd(body, res, g):
    return (g,)
  loop.defvjp(fwd, bwd)

  def f(x):
    y = x * 2
    return loop(lambda s: (s[0] + 1, s[1] * y), (0, x))[1]
  xs = m.numpy.arange(1.0, 4.0)
  return [np.asarray(o).tolist() for o in (
      m.vmap(f)(xs), m.jit(m.vmap(f))(xs), m.vmap(m.jit(f))(xs),
      m.vmap(lambda x: m.lax.fori_loop(0, 2, lambda i, c: c + f(x), 0.0))(xs))]


def test_custom_vjp_nondiff_closure_over_a_vmapped_value():
  got = _nondiff_closure_under_vmap(jax)
  assert got == [[8.0, 128.0, 648.0]] * 3 + [[16.0, 256.0, 1296.0]]


def test_custom_vjp_nondiff_closure_over_a_vmapped_value_in_jax():
  assert _nondiff_closure_under_vmap(oracle()) == _nondiff_closure_under_vmap(jax)
