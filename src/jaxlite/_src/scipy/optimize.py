"""`jax.scipy.optimize.minimize` with BFGS: one while_loop over quasi-Newton steps with a
backtracking line search, so it runs eagerly, under jit and under vmap alike.
"""
from __future__ import annotations

from typing import Any, NamedTuple
from collections.abc import Callable, Mapping

import numpy as np

from jaxlite._src import core


class OptimizeResults(NamedTuple):
  """The outcome of minimize; status 0 converged, 1 hit maxiter, 3 the line search failed."""
  x: core.Array
  success: Any
  status: Any
  fun: core.Array
  jac: core.Array
  hess_inv: core.Array
  nfev: Any
  njev: Any
  nit: Any


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
  """Minimizes fun(x, *args) over 1-D x starting from x0 (method 'BFGS')."""
  options = dict(options or {})
  if method.lower() != "bfgs":
    raise ValueError(f"Method {method} not recognized")
  if tol is not None:
    options.setdefault("gtol", tol)
  jnp = _jnp()
  x0 = jnp.asarray(x0)
  if x0.ndim != 1:
    raise ValueError(f"x0 must be 1-dimensional, got shape {x0.shape}")
  return _bfgs(lambda x: fun(x, *args), x0, **options)


def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=30):
  from jaxlite._src.ad_api import value_and_grad
  from jaxlite._src.lax.control_flow import while_loop
  jnp = _jnp()
  x0 = x0 if jnp.issubdtype(x0.dtype, jnp.inexact) else x0.astype(jnp.float32)
  n = x0.shape[0]
  maxiter = n * 200 if maxiter is None else maxiter
  value_grad = value_and_grad(fun)
  f0, g0 = value_grad(x0)
  dtype = x0.dtype
  eye = jnp.eye(n, dtype=dtype)
  # state: (k, status, x, f, g, H, nfev); status -1 while running.
  init = (jnp.asarray(0), jnp.asarray(-1), x0, f0, g0, eye, jnp.asarray(1))
  init = (init[0], jnp.where(jnp.linalg.norm(g0, ord=norm) < gtol, 0, -1), *init[2:])

  def cond(state):
    k, status = state[0], state[1]
    return (status < 0) & (k < maxiter)

  def body(state):
    k, _, x, f, g, H, nfev = state
    p = -(H @ g)
    slope = jnp.dot(g, p)
    alpha, f_new, g_new, evals, found = _backtrack(value_grad, x, f, g, p, slope,
                                                   line_search_maxiter, while_loop)
    s = alpha * p
    x_new = x + s
    y = g_new - g
    ys = jnp.dot(y, s)
    rho = jnp.where(ys > 0, 1 / jnp.where(ys > 0, ys, 1), 0)
    left = eye - rho * jnp.outer(s, y)
    H_new = jnp.where(ys > 0, left @ H @ left.T + rho * jnp.outer(s, s), H)
    converged = jnp.linalg.norm(g_new, ord=norm) < gtol
    # A step that no longer lowers f (float precision reached) ends the search as a failure.
    stalled = found & ~converged & ~(f_new < f)
    status = jnp.where(~found | stalled, 3, jnp.where(converged, 0, -1))
    keep = found
    return (k + 1, status, jnp.where(keep, x_new, x), jnp.where(keep, f_new, f),
            jnp.where(keep, g_new, g), jnp.where(keep, H_new, H), nfev + evals)

  k, status, x, f, g, H, nfev = while_loop(cond, body, init)
  status = jnp.where(status < 0, 1, status)
  return OptimizeResults(x=x, success=status == 0, status=status, fun=f, jac=g, hess_inv=H,
                         nfev=nfev, njev=nfev, nit=k)


def _backtrack(value_grad, x, f, g, p, slope, maxiter, while_loop, c1=1e-4, c2=0.9):
  """Halves the step from 1 until the Armijo condition holds (and, while the step is the full
  one, the curvature condition too); returns (alpha, f, g, evaluations, found)."""
  jnp = _jnp()
  dtype = x.dtype

  def cond(st):
    i, _, _, _, found = st
    return (~found) & (i < maxiter)

  def body(st):
    i, alpha, _, _, _ = st
    alpha = jnp.where(i == 0, jnp.asarray(1.0, dtype), alpha * 0.5)
    f_new, g_new = value_grad(x + alpha * p)
    armijo = f_new <= f + c1 * alpha * slope
    curvature = jnp.abs(jnp.dot(g_new, p)) <= c2 * jnp.abs(slope)
    ok = armijo & jnp.isfinite(f_new) & (curvature | (i > 0))
    return (i + 1, alpha, f_new, g_new, ok)

  st = (jnp.asarray(0), jnp.asarray(1.0, dtype), f, g, jnp.asarray(slope < 0) & False)
  i, alpha, f_new, g_new, found = while_loop(cond, body, st)
  found = found & (slope < 0)
  return alpha, f_new, g_new, i, found
