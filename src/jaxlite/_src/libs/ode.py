"""`jax.experimental.ode`: adaptive Dormand-Prince (RK45) integration with a dense-output
interpolant, and its gradient by the adjoint method (a second ODE solved backwards in time)."""
from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable

from jaxlite._src.transforms import ad_api
from jaxlite._src.transforms import api_extras
from jaxlite._src.base import config
from jaxlite._src.transforms import vmap_api
from jaxlite._src.transforms.custom_derivatives import custom_vjp
from jaxlite._src.libs.flatten_util import ravel_pytree
from jaxlite._src.transforms.jit import jit
from jaxlite._src.lax import namespace as lax
from jaxlite._src.numpy import namespace as jnp
from jaxlite._src.numpy.util import promote_dtypes_inexact
from jaxlite._src.base.tree_util import tree_leaves, tree_map


def safe_map(f, *args):
  """`map` that insists every argument has the same length (a mismatch is a bug, not a trim)."""
  args = [list(a) for a in args]
  n = len(args[0])
  for a in args[1:]:
    if len(a) != n:
      raise ValueError(f"safe_map: length mismatch: {[len(x) for x in args]}")
  return list(builtins.map(f, *args))


def safe_zip(*args):
  """`zip` that insists every argument has the same length."""
  args = [list(a) for a in args]
  n = len(args[0])
  for a in args[1:]:
    if len(a) != n:
      raise ValueError(f"safe_zip: length mismatch: {[len(x) for x in args]}")
  return list(builtins.zip(*args))


# JAX's module rebinds the builtins to the length-checking versions; it exports them by these names.
map = safe_map  # noqa: A001
zip = safe_zip  # noqa: A001


def ravel_first_arg(f: Callable, unravel, debug_info=None):
  """`g(y_flat, *args) = ravel(f(unravel(y_flat), *args))`: the solver works on one flat vector."""
  del debug_info  # jaxlite's tracing messages name `f` itself

  def flat_f(y_flat, *args):
    out_flat, _ = ravel_pytree(f(unravel(y_flat), *args))
    return out_flat
  return flat_f


# Dormand-Prince (RK5(4)7M) tableau: nodes, stage weights, 5th-order solution weights and the
# 5th-minus-4th-order weights that estimate the local error.
_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0]
_BETA = [[1 / 5, 0, 0, 0, 0, 0, 0],
         [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_C_SOL = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
          -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.]
# Weights giving y at the step's midpoint (Shampine's dense output for DOPRI5), halved.
_C_MID = [6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
          -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
          -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2]


def fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
  """Coefficients (a, b, c, d, e) of the quartic in s in [0, 1] matching y and y' at both ends
  of the step and y at its middle."""
  dt = dt.astype(y0.dtype)
  a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  d = dt * dy0
  e = y0
  return a, b, c, d, e


def interp_fit_dopri(y0, y1, k, dt):
  """The dense-output quartic of one Dormand-Prince step (stages `k`), as a (5, n) array."""
  c_mid = jnp.array(_C_MID, dtype=y0.dtype)
  y_mid = y0 + dt.astype(y0.dtype) * jnp.dot(c_mid, k)
  return jnp.asarray(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def initial_step_size(fun, t0, y0, order, rtol, atol, f0):
  """First step size by Hairer, Norsett & Wanner, *Solving ODEs I*, sec. II.4: a trial Euler
  step sized from ||y0|| / ||f0||, then the size that makes its error estimate 0.01."""
  y0, f0 = promote_dtypes_inexact(y0, f0)
  dtype = y0.dtype
  scale = atol + jnp.abs(y0) * rtol
  d0 = jnp.linalg.norm(y0 / scale.astype(dtype))
  d1 = jnp.linalg.norm(f0 / scale.astype(dtype))
  h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
  d2 = jnp.linalg.norm((f1 - f0) / scale.astype(dtype)) / h0
  h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                 (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
  return jnp.minimum(100. * h0, h1)


def runge_kutta_step(func, y0, f0, t0, dt):
  """One Dormand-Prince step: (y1, f(y1), error estimate, the 7 stage derivatives)."""
  alpha = jnp.array(_ALPHA, dtype=dt.dtype)
  beta = jnp.array(_BETA, dtype=f0.dtype)
  c_sol = jnp.array(_C_SOL, dtype=f0.dtype)
  c_err = jnp.array(_C_ERR, dtype=f0.dtype)
  h = dt.astype(f0.dtype)

  def stage(i, k):
    return k.at[i, :].set(func(y0 + h * jnp.dot(beta[i - 1, :], k), t0 + dt * alpha[i - 1]))

  k = jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
  k = lax.fori_loop(1, 7, stage, k)
  return h * jnp.dot(c_sol, k) + y0, k[-1], h * jnp.dot(c_err, k), k


def abs2(x):
  """|x|**2 without a square root (real and imaginary parts squared for complex x)."""
  if jnp.iscomplexobj(x):
    return x.real ** 2 + x.imag ** 2
  return x ** 2


def mean_error_ratio(error_estimate, rtol, atol, y0, y1):
  """RMS of the error estimate over the mixed tolerance atol + rtol * max(|y0|, |y1|)."""
  err_tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
  return jnp.sqrt(jnp.mean(abs2(error_estimate / err_tol.astype(error_estimate.dtype))))


def optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2,
                      order=5.0):
  """Next step size: safety * ratio**(-1/order), kept within [dfactor, ifactor] of the last one
  (never shrinking after an accepted step, growing by `ifactor` after an exact one)."""
  dfactor = jnp.where(mean_error_ratio < 1, 1.0, dfactor)
  factor = jnp.minimum(ifactor, jnp.maximum(mean_error_ratio ** (-1.0 / order) * safety,
                                            dfactor))
  return jnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=jnp.inf, hmax=jnp.inf):
  """Solves dy/dt = func(y, t, *args) from y(t[0]) = y0, returning y at every time in `t` (a
  new leading axis of len(t) on each leaf of the pytree y0). Adaptive Dormand-Prince steps with
  tolerances rtol/atol, at most `mxstep` steps between output times and steps at most `hmax`;
  differentiable in y0, t and args by the adjoint method."""
  for arg in tree_leaves(args):
    if not _valid_jaxtype(arg):
      raise TypeError(
          f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
  if not jnp.issubdtype(jnp.asarray(t).dtype, jnp.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  t = jnp.asarray(t)
  converted, consts = api_extras.closure_convert(func, y0, t[0], *args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


def _valid_jaxtype(x) -> bool:
  try:
    jnp.asarray(x)
  except Exception:  # anything jnp.asarray refuses is not an array value
    return False
  return not isinstance(x, str)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  with config.default_matmul_precision("highest"):
    y0, unravel = ravel_pytree(y0)
    out = _odeint(ravel_first_arg(func, unravel), rtol, atol, mxstep, hmax, y0, ts, *args)
    return vmap_api.vmap(unravel)(out)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  def f(y, t):
    return func(y, t, *args)

  def to_next_output(carry, target_t):
    # Step until the accepted steps pass target_t, then evaluate the last step's interpolant.
    def keep_going(state):
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def attempt(state):
      i, y, fy, t, dt, last_t, coeff = state
      next_y, next_f, next_err, k = runge_kutta_step(f, y, fy, t, dt)
      ratio = mean_error_ratio(next_err, rtol, atol, y, next_y)
      new_coeff = interp_fit_dopri(y, next_y, k, dt)
      new_dt = jnp.clip(optimal_step_size(dt, ratio), min=0., max=hmax)
      accepted = [i + 1, next_y, next_f, t + dt, new_dt, t, new_coeff]
      rejected = [i + 1, y, fy, t, new_dt, last_t, coeff]
      ok = ratio <= 1.
      return [jnp.where(ok, a, r) for a, r in safe_zip(accepted, rejected)]

    _, *carry = lax.while_loop(keep_going, attempt, [0] + carry)
    _, _, t, _, last_t, coeff = carry
    s = (target_t - last_t) / (t - last_t)
    return carry, jnp.polyval(coeff, s.astype(coeff.dtype))

  with config.default_matmul_precision("highest"):
    f0 = f(y0, ts[0])
    dt = jnp.clip(initial_step_size(f, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
    init = [y0, f0, ts[0], dt, ts[0], jnp.array([y0] * 5)]
    _, ys = lax.scan(to_next_output, init, ts[1:])
    return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
  """Adjoint method: between consecutive output times, integrate backwards the system
  (y, a, a_t, a_args) with a' = -a df/dy, a_t' = -a df/dt, a_args' = -a df/dargs, adding each
  output's cotangent to a at its time and the time cotangents f(y_i, t_i) . g_i."""
  ys, ts, args = res

  def aug_dynamics(state, neg_t, *args):
    # Solved in negated time so the backward integration runs over increasing times.
    y, y_bar, *_ = state
    y_dot, vjp_fun = ad_api.vjp(func, y, -neg_t, *args)
    return (-y_dot, *vjp_fun(y_bar))

  def back_one_interval(carry, i):
    y_bar, t0_bar, args_bar = carry
    t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real  # times are real even for complex y
    t0_bar = t0_bar - t_bar
    _, y_bar, t0_bar, args_bar = odeint(
        aug_dynamics, (ys[i], y_bar, t0_bar, args_bar), jnp.array([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
    return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

  with config.default_matmul_precision("highest"):
    init = (g[-1], 0., tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(
        back_one_interval, init, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([jnp.array([t0_bar]), rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
