"""`jax.scipy.optimize.minimize` with BFGS: one while_loop over quasi-Newton steps with a
backtracking line search, so it runs eagerly, under jit and under vmap alike.
"""
from __future__ import annotations

from typing import Any, NamedTuple
from collections.abc import Callable, Mapping

import numpy as np

from jaxlite._src.base import core


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


def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
  """BFGS (Nocedal & Wright, Algorithm 6.1) with JAX's strong-Wolfe line search: the same
  steps, evaluation counts and statuses as jax.scipy.optimize (0 converged, 1 maxiter,
  2 + the line search's status when it failed)."""
  from jaxlite._src.transforms.ad_api import value_and_grad
  from jaxlite._src.lax.control_flow import while_loop
  jnp = _jnp()
  x0 = x0 if jnp.issubdtype(x0.dtype, jnp.inexact) else x0.astype(jnp.float32)
  n = x0.shape[0]
  maxiter = n * 200 if maxiter is None else maxiter
  f0, g0 = value_and_grad(fun)(x0)
  eye = jnp.eye(n, dtype=x0.dtype)
  init = _BFGSState(converged=jnp.linalg.norm(g0, ord=norm) < gtol, failed=jnp.asarray(False),
                    k=jnp.asarray(0), nfev=jnp.asarray(1), ngev=jnp.asarray(1), x=x0, f=f0,
                    g=g0, H=eye, f_prev=f0 + jnp.linalg.norm(g0) / 2,
                    ls_status=jnp.asarray(0))

  def cond(st):
    return ~st.converged & ~st.failed & (st.k < maxiter)

  def body(st):
    p = -jnp.dot(st.H, st.g)
    ls = _line_search(value_and_grad(fun), st.x, p, st.f, st.f_prev, st.g, line_search_maxiter)
    s = ls.alpha * p
    y = ls.g - st.g
    rho = 1.0 / jnp.dot(y, s)
    w = eye - rho * (s[:, None] * y[None, :])
    H = jnp.dot(jnp.dot(w, st.H), w.T) + rho * (s[:, None] * s[None, :])
    return _BFGSState(converged=jnp.linalg.norm(ls.g, ord=norm) < gtol, failed=ls.failed,
                      k=st.k + 1, nfev=st.nfev + ls.nfev, ngev=st.ngev + ls.nfev,
                      x=st.x + s, f=ls.f, g=ls.g, H=jnp.where(jnp.isfinite(rho), H, st.H),
                      f_prev=st.f, ls_status=ls.status)

  st = while_loop(cond, body, init)
  status = jnp.where(st.converged, 0, jnp.where(
      st.k == maxiter, 1, jnp.where(st.failed, 2 + st.ls_status, -1)))
  return OptimizeResults(x=st.x, success=st.converged & ~st.failed, status=status, fun=st.f,
                         jac=st.g, hess_inv=st.H, nfev=st.nfev, njev=st.ngev, nit=st.k)


class _BFGSState(NamedTuple):
  converged: Any
  failed: Any
  k: Any
  nfev: Any
  ngev: Any
  x: Any
  f: Any
  g: Any
  H: Any
  f_prev: Any  # the value before the last step (it sizes the line search's first step)
  ls_status: Any


class _LineSearch(NamedTuple):
  failed: Any
  nfev: Any
  alpha: Any
  f: Any
  g: Any
  status: Any  # 0 found, 1 its zoom failed, 3 out of iterations


class _Bracket(NamedTuple):
  """The state of a zoom (Nocedal & Wright, Algorithm 3.6) over [lo, hi]: `rec` is the
  previous end point, for the cubic interpolation; `star` the accepted step."""
  done: Any
  failed: Any
  j: Any
  lo: Any
  f_lo: Any
  d_lo: Any
  hi: Any
  f_hi: Any
  d_hi: Any
  rec: Any
  f_rec: Any
  star: Any
  f_star: Any
  g_star: Any
  nfev: Any


def _line_search(value_grad, x, p, f0, f_prev, g0, maxiter, c1=1e-4, c2=0.9):
  """A step along `p` meeting the strong Wolfe conditions (Nocedal & Wright, Algorithm 3.5,
  doubling the step as SciPy does), bracketed then zoomed as JAX's line search does;
  `value_grad(x)` is (f(x), its gradient)."""
  from jaxlite._src.lax.control_flow import while_loop
  jnp = _jnp()
  dtype = p.dtype

  def along(t):  # (phi(t), phi'(t), gradient) on the line
    t = jnp.asarray(t, dtype=dtype)
    f, g = value_grad(x + t * p)
    return f, jnp.real(jnp.dot(g, p)), g

  d0 = jnp.real(jnp.dot(g0, p))
  guess = 1.01 * 2 * (f0 - f_prev) / d0
  first = jnp.where(guess > 1, 1.0, guess)
  sufficient_decrease_fails = lambda t, f: f > f0 + c1 * t * d0
  curvature_holds = lambda d: jnp.abs(d) <= -c2 * d0
  bits = jnp.finfo(dtype).bits
  zero = jnp.zeros((), dtype)

  def zoom(lo, f_lo, d_lo, hi, f_hi, d_hi, skip):
    def body(b):
      width = b.hi - b.lo
      left, right = jnp.minimum(b.hi, b.lo), jnp.maximum(b.hi, b.lo)
      failed = b.failed | (width <= (1e-5 if bits < 64 else 1e-10))
      cubic = _cubicmin(b.lo, b.f_lo, b.d_lo, b.hi, b.f_hi, b.rec, b.f_rec)
      use_cubic = (b.j > 0) & (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
      quad = _quadmin(b.lo, b.f_lo, b.d_lo, b.hi, b.f_hi)
      use_quad = ~use_cubic & (quad > left + 0.1 * width) & (quad < right - 0.1 * width)
      t = jnp.where(use_cubic, cubic, jnp.where(use_quad, quad, (b.lo + b.hi) / 2.))
      f, d, g = along(t)
      f, d, g = f.astype(b.f_lo.dtype), d.astype(b.d_lo.dtype), g.astype(b.g_star.dtype)
      to_hi = sufficient_decrease_fails(t, f) | (f >= b.f_lo)
      accept = curvature_holds(d) & ~to_hi
      flip = (d * (b.hi - b.lo) >= 0.) & ~to_hi & ~accept
      to_lo = ~to_hi & ~accept
      sel = jnp.where
      # the new end points: t replaces hi (to_hi) or lo (to_lo, after lo moved to hi: flip)
      hi = sel(to_hi, t, sel(flip, b.lo, b.hi))
      f_hi = sel(to_hi, f, sel(flip, b.f_lo, b.f_hi))
      d_hi = sel(to_hi, d, sel(flip, b.d_lo, b.d_hi))
      rec = sel(to_hi | flip, b.hi, sel(to_lo, b.lo, b.rec))
      f_rec = sel(to_hi | flip, b.f_hi, sel(to_lo, b.f_lo, b.f_rec))
      return _Bracket(
          done=b.done | accept, failed=failed | (b.j + 1 >= 30), j=b.j + 1,
          lo=sel(to_lo, t, b.lo), f_lo=sel(to_lo, f, b.f_lo), d_lo=sel(to_lo, d, b.d_lo),
          hi=hi, f_hi=f_hi, d_hi=d_hi, rec=rec, f_rec=f_rec,
          star=sel(accept, t, b.star), f_star=sel(accept, f, b.f_star),
          g_star=sel(accept, g, b.g_star), nfev=b.nfev + 1)

    start = _Bracket(done=jnp.asarray(False), failed=jnp.asarray(False), j=jnp.asarray(0),
                     lo=lo, f_lo=f_lo, d_lo=d_lo, hi=hi, f_hi=f_hi, d_hi=d_hi,
                     rec=(lo + hi) / 2., f_rec=(f_lo + f_hi) / 2., star=jnp.ones((), dtype),
                     f_star=f_lo, g_star=g0, nfev=jnp.asarray(0))
    return while_loop(lambda b: ~b.done & ~skip & ~b.failed, body, start)

  def cond(st):
    i, done, failed = st[0], st[1], st[2]
    return ~done & (i <= maxiter) & ~failed

  def body(st):
    i, done, failed, t_prev, f_prev_t, d_prev, nfev, star, f_star, g_star = st
    t = jnp.where(i == 1, first, t_prev * 2.)
    f, d, g = along(t)
    to_zoom_up = sufficient_decrease_fails(t, f) | ((f >= f_prev_t) & (i > 1))
    accept = curvature_holds(d) & ~to_zoom_up
    to_zoom_down = (d >= 0.) & ~to_zoom_up & ~accept
    z1 = zoom(t_prev, f_prev_t, d_prev, t, f, d, ~to_zoom_up)
    z2 = zoom(t, f, d, t_prev, f_prev_t, d_prev, ~to_zoom_down)
    sel = jnp.where
    star = sel(to_zoom_down, z2.star, sel(accept, t, sel(to_zoom_up, z1.star, star)))
    f_star = sel(to_zoom_down, z2.f_star, sel(accept, f, sel(to_zoom_up, z1.f_star, f_star)))
    g_star = sel(to_zoom_down, z2.g_star, sel(accept, g, sel(to_zoom_up, z1.g_star, g_star)))
    failed = failed | (to_zoom_up & z1.failed) | (to_zoom_down & z2.failed)
    return (i + 1, done | to_zoom_up | accept | to_zoom_down, failed, t, f, d,
            nfev + 1 + z1.nfev + z2.nfev, star, f_star, g_star)

  st = (jnp.asarray(1), jnp.asarray(False), jnp.asarray(False), zero, f0, d0, jnp.asarray(0),
        zero, f0, g0)
  i, done, failed, _, _, _, nfev, star, f_star, g_star = while_loop(cond, body, st)
  status = jnp.where(failed, 1, jnp.where(i > maxiter, 3, 0))
  # below 64 bits a step under 1e-8 would leave BFGS stuck on a zero direction (JAX's floor)
  if bits != 64:
    star = jnp.where(jnp.abs(star) < 1e-8, jnp.sign(star) * 1e-8, star)
  return _LineSearch(failed=failed | ~done, nfev=nfev, alpha=star, f=f_star, g=g_star,
                     status=status)


def _cubicmin(a, fa, fpa, b, fb, c, fc):
  """The minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
  jnp = _jnp()
  db, dc = b - a, c - a
  denom = (db * dc) ** 2 * (db - dc)
  dtype = jnp.result_type(a, fa, fpa, b, fb, c, fc)
  m = jnp.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dtype)
  v = jnp.array([fb - fa - fpa * db, fc - fa - fpa * dc], dtype=dtype)
  A, B = jnp.dot(m, v) / denom
  return a + (-B + jnp.sqrt(B * B - 3. * A * fpa)) / (3. * A)


def _quadmin(a, fa, fpa, b, fb):
  """The minimizer of the parabola through (a, fa) with slope fpa and (b, fb)."""
  db = b - a
  return a - fpa / (2. * ((fb - fa - fpa * db) / (db ** 2)))
