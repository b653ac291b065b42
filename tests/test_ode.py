"""`jax.experimental.ode.odeint`: values against closed-form solutions and JAX, gradients
(adjoint method) against JAX and against the analytic derivative."""
import numpy as np
import pytest

import jaxlite as jl
import jaxlite.numpy as jnp
from jaxlite.experimental import ode
from conftest import oracle

TS = np.linspace(0., 2., 5).astype(np.float32)


def decay(y, t, a):
  return -a * y * t


def pendulum(state, t, k):
  # a pytree state: dict of position and velocity
  return {"x": state["v"], "v": -k * jnp.sin(state["x"])}


def test_decay_matches_closed_form():
  # y' = -a t y, y(0) = 1  =>  y = exp(-a t^2 / 2)
  ys = ode.odeint(decay, np.float32(1.0), jnp.asarray(TS), np.float32(0.7))
  np.testing.assert_allclose(ys, np.exp(-0.7 * TS ** 2 / 2), rtol=2e-6, atol=2e-6)
  assert ys.shape == (5,) and ys.dtype == np.float32


def test_gradient_matches_analytic():
  # d/da sum_t exp(-a t^2/2) = sum_t -t^2/2 exp(-a t^2/2); d/dy0 = sum_t exp(-a t^2/2)
  def loss(y0, a):
    return ode.odeint(decay, y0, jnp.asarray(TS), a).sum()
  gy0, ga = jl.grad(loss, argnums=(0, 1))(np.float32(1.0), np.float32(0.7))
  np.testing.assert_allclose(ga, np.sum(-TS ** 2 / 2 * np.exp(-0.7 * TS ** 2 / 2)), rtol=1e-5)
  np.testing.assert_allclose(gy0, np.sum(np.exp(-0.7 * TS ** 2 / 2)), rtol=1e-5)


def test_values_and_grads_vs_jax_pytree_state_and_closure():
  jax = oracle()
  from jax.experimental.ode import odeint as jodeint
  y0 = {"x": np.float32(1.0), "v": np.float32(0.0)}
  ts = np.linspace(0., 3., 4).astype(np.float32)
  ours = ode.odeint(pendulum, y0, jnp.asarray(ts), np.float32(2.0))
  ref = jodeint(pendulum_jax(jax), y0, jax.numpy.asarray(ts), np.float32(2.0))
  for k in ("x", "v"):
    np.testing.assert_allclose(ours[k], ref[k], rtol=1e-5, atol=1e-6)

  # gradient wrt a closed-over value (hoisted by closure_convert) and wrt the times
  def loss(c, ts, *, odeint):
    return odeint(lambda y, t: -c * y, np.float32(2.0), ts).sum() * 1.0
  g = jl.grad(lambda c, t: loss(c, t, odeint=ode.odeint), argnums=(0, 1))(
      np.float32(0.5), jnp.asarray(ts))
  gr = jax.grad(lambda c, t: loss(c, t, odeint=jodeint), argnums=(0, 1))(
      np.float32(0.5), jax.numpy.asarray(ts))
  np.testing.assert_allclose(g[0], gr[0], rtol=1e-4)
  np.testing.assert_allclose(g[1], gr[1], rtol=1e-4, atol=1e-6)


def pendulum_jax(jax):
  def f(state, t, k):
    return {"x": state["v"], "v": -k * jax.numpy.sin(state["x"])}
  return f


@pytest.mark.parametrize("name, args, expected", [
    ("abs2", (np.array([3 + 4j]),), np.array([25.0])),
    ("abs2", (np.array([-3.0]),), np.array([9.0])),
    ("optimal_step_size", (np.float32(0.1), np.float32(0.0)), np.float32(1.0)),
    ("optimal_step_size", (np.float32(0.1), np.float32(1.0)), np.float32(0.09)),
    ("mean_error_ratio", (np.ones(2, np.float32), 0.0, 1.0, *[np.zeros(2, np.float32)] * 2), 1.0),
])
def test_helpers_known_answers(name, args, expected):
  np.testing.assert_allclose(getattr(ode, name)(*args), expected, rtol=1e-6)


def test_fit_polynomial_interpolates_a_quartic():
  # y(s) = s^4 over [0, 1] with dt = 1: the fit must reproduce it exactly
  coeff = jnp.asarray(ode.fit_4th_order_polynomial(
      jnp.array([0.]), jnp.array([1.]), jnp.array([1 / 16]), jnp.array([0.]), jnp.array([4.]),
      jnp.asarray(1.)))
  np.testing.assert_allclose(jnp.polyval(coeff, jnp.asarray(0.3)), [0.3 ** 4], atol=1e-6)


@pytest.mark.parametrize("bad, err", [
    (dict(t=np.arange(3)), "t must be an array of floats"),
    (dict(args=("str",)), "must be arrays or scalars"),
])
def test_bad_input_raises(bad, err):
  t = bad.get("t", np.linspace(0., 1., 3))
  with pytest.raises(TypeError, match=err):
    ode.odeint(lambda y, t, *a: -y, 1.0, t, *bad.get("args", ()))


def test_safe_zip_checks_lengths():
  assert ode.zip([1, 2], "ab") == [(1, "a"), (2, "b")]
  assert ode.map(lambda a, b: a + b, [1, 2], [3, 4]) == [4, 6]
  with pytest.raises(ValueError):
    ode.safe_zip([1], [1, 2])
