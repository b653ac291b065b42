"""`jax.scipy.sparse.linalg`: the Krylov solvers cg, bicgstab and gmres, as `while_loop`s inside
`lax.custom_linear_solve`, so gradients are solves with the (transposed) operator, as in JAX."""
from __future__ import annotations

import functools
import operator

import numpy as np

from jaxlite._src.base import tree_util


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _lax():
  from jaxlite._src.lax import namespace as lax
  return lax


# --- pytree vector arithmetic -------------------------------------------------------------------

def _add(x, y):
  return tree_util.tree_map(operator.add, x, y)


def _sub(x, y):
  return tree_util.tree_map(operator.sub, x, y)


def _scale(a, x):
  return tree_util.tree_map(lambda v: a * v, x)


def _axpy(a, x, y):
  return tree_util.tree_map(lambda u, v: a * u + v, x, y)


def _vdot(x, y):
  """sum conj(x) * y over every leaf."""
  jnp = _jnp()
  parts = [jnp.vdot(u, v) for u, v in zip(tree_util.tree_leaves(x), tree_util.tree_leaves(y))]
  return functools.reduce(operator.add, parts)


def _vdot_real(x, y):
  jnp = _jnp()
  parts = [jnp.vdot(u.real, v.real) + jnp.vdot(u.imag, v.imag) if jnp.iscomplexobj(u)
           else jnp.vdot(u, v)
           for u, v in zip(tree_util.tree_leaves(x), tree_util.tree_leaves(y))]
  return functools.reduce(operator.add, parts)


def _select(pred, x, y):
  jnp = _jnp()
  return tree_util.tree_map(lambda u, v: jnp.where(pred, u, v), x, y)


def _identity(x):
  return x


def _as_operator(A):
  """A matrix becomes `x -> A @ x`; a callable is used as it is."""
  if callable(A):
    return A
  jnp = _jnp()
  if not hasattr(A, "ndim") or A.ndim != 2:
    raise ValueError(f"linear operator must be either a function or ndarray: {A}")
  A = jnp.asarray(A)
  return lambda x: jnp.matmul(A, x, precision="highest")


# --- the solvers --------------------------------------------------------------------------------

def _cg_solve(A, b, x0, *, maxiter, tol, atol, M):
  jnp, lax = _jnp(), _lax()
  atol2 = jnp.maximum(jnp.square(tol) * _vdot_real(b, b), jnp.square(atol))
  r0 = _sub(b, A(x0))
  p0 = z0 = M(r0)
  dtype = jnp.result_type(*tree_util.tree_leaves(p0))
  gamma0 = _vdot_real(r0, z0).astype(dtype)

  def cond(state):
    _, r, gamma, _, k = state
    rs = gamma.real if M is _identity else _vdot_real(r, r)
    return (rs > atol2) & (k < maxiter)

  def body(state):
    x, r, gamma, p, k = state
    Ap = A(p)
    alpha = gamma / _vdot_real(p, Ap).astype(dtype)
    x = _axpy(alpha, p, x)
    r = _axpy(-alpha, Ap, r)
    z = M(r)
    gamma_new = _vdot_real(r, z).astype(dtype)
    p = _axpy(gamma_new / gamma, p, z)
    return x, r, gamma_new, p, k + 1

  return lax.while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab_solve(A, b, x0, *, maxiter, tol, atol, M):
  jnp, lax = _jnp(), _lax()
  atol2 = jnp.maximum(jnp.square(tol) * _vdot_real(b, b), jnp.square(atol))

  def cond(state):
    r, k = state[1], state[-1]
    return (_vdot_real(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body(state):
    x, r, rhat, alpha, omega, rho, p, q, k = state
    rho_new = _vdot(rhat, r)
    beta = rho_new / rho * alpha / omega
    p = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
    phat = M(p)
    q = A(phat)
    alpha = rho_new / _vdot(rhat, q)
    s = _axpy(-alpha, q, r)
    exit_early = _vdot_real(s, s) < atol2
    shat = M(s)
    t = A(shat)
    omega = _vdot(t, s) / _vdot(t, t)  # a zero here is caught by k = -11 below
    x_half = _axpy(alpha, phat, x)
    x = _select(exit_early, x_half, _axpy(omega, shat, x_half))
    r = _select(exit_early, s, _axpy(-omega, t, s))
    k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
    k = jnp.where(rho_new == 0, -10, k)
    return x, r, rhat, alpha, omega, rho_new, p, q, k

  r0 = _sub(b, A(x0))
  one = jnp.ones((), jnp.result_type(*tree_util.tree_leaves(b)))
  return lax.while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _gmres_solve(A, b, x0, *, maxiter, tol, atol, M, restart):
  """Restarted GMRES on the raveled pytree: `restart` Arnoldi steps (modified Gram-Schmidt with
  one reorthogonalization), then the small least-squares problem, until the residual is small."""
  jnp, lax = _jnp(), _lax()
  leaves, tree = tree_util.tree_flatten(b)
  shapes, sizes = [v.shape for v in leaves], [int(np.prod(v.shape)) for v in leaves]
  splits = list(np.cumsum(sizes)[:-1])

  def ravel(x):
    return jnp.concatenate([jnp.ravel(v) for v in tree_util.tree_leaves(x)])

  def unravel(v):
    parts = jnp.split(v, splits) if splits else [v]
    return tree_util.tree_unflatten(tree, [p.reshape(s) for p, s in zip(parts, shapes)])

  op = lambda v: ravel(M(A(unravel(v))))  # noqa: E731 (left-preconditioned operator)
  b_vec = ravel(M(b))
  dtype = b_vec.dtype
  n = b_vec.shape[0]
  m = min(restart, n)
  b_norm = jnp.linalg.norm(b_vec)
  threshold = jnp.maximum(tol * b_norm, atol)

  def cycle(x):
    r = b_vec - op(x)
    beta = jnp.linalg.norm(r)
    V = jnp.zeros((m + 1, n), dtype).at[0].set(r / jnp.where(beta == 0, 1, beta))
    H = jnp.zeros((m + 1, m), dtype)

    def arnoldi(j, VH):
      V, H = VH
      w = op(V[j])
      mask = (jnp.arange(m + 1) <= j).astype(dtype)
      for _ in range(2):  # two passes of Gram-Schmidt keep V orthonormal in float32
        h = (jnp.conj(V) @ w) * mask
        w = w - h @ V
        H = H.at[:, j].add(h)
      norm = jnp.linalg.norm(w)
      H = H.at[j + 1, j].set(norm)
      V = V.at[j + 1].set(w / jnp.where(norm == 0, 1, norm))
      return V, H

    V, H = lax.fori_loop(0, m, arnoldi, (V, H))
    e1 = jnp.zeros((m + 1,), dtype).at[0].set(beta)
    y = jnp.linalg.lstsq(H, e1)[0]
    return x + y @ V[:m]

  def cond(state):
    x, k = state
    return (jnp.linalg.norm(b_vec - op(x)) > threshold) & (k < maxiter)

  def body(state):
    x, k = state
    return cycle(x), k + 1

  x, _ = lax.while_loop(cond, body, (ravel(x0), 0))
  return unravel(x)


def _isolve(solve_fun, A, b, x0, *, tol, atol, maxiter, M, check_symmetric, name, **extra):
  jnp, lax = _jnp(), _lax()
  b = tree_util.tree_map(jnp.asarray, b)
  if x0 is None:
    x0 = tree_util.tree_map(jnp.zeros_like, b)
  x0 = tree_util.tree_map(jnp.asarray, x0)
  if tree_util.tree_structure(x0) != tree_util.tree_structure(b):
    raise ValueError(f"{name}: x0 and b must have matching tree structure: "
                     f"{tree_util.tree_structure(x0)} vs {tree_util.tree_structure(b)}")
  if [v.shape for v in tree_util.tree_leaves(x0)] != [v.shape for v in tree_util.tree_leaves(b)]:
    raise ValueError(f"{name}: arrays in x0 and b must have matching shapes: "
                     f"{[v.shape for v in tree_util.tree_leaves(x0)]} vs "
                     f"{[v.shape for v in tree_util.tree_leaves(b)]}")
  if maxiter is None:
    maxiter = 10 * sum(int(np.prod(v.shape)) for v in tree_util.tree_leaves(b))
  A = _as_operator(A)
  M = _identity if M is None else _as_operator(M)
  solve = functools.partial(solve_fun, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M, **extra)
  symmetric = check_symmetric and not any(jnp.iscomplexobj(v)
                                          for v in tree_util.tree_leaves(b))
  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
  return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Conjugate gradients for a Hermitian positive-definite `A` (matrix or function)."""
  return _isolve(_cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=True, name="cg")


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Biconjugate gradients stabilized, for general square `A`."""
  return _isolve(_bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=False, name="bicgstab")


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
  """Restarted GMRES for general square `A`; `solve_method` ('batched' or 'incremental')
  selects JAX's orthogonalization schedule, and both give the same solution here."""
  if solve_method not in ("incremental", "batched"):
    raise ValueError(f"invalid solve_method {solve_method!r}, must be either 'incremental' or "
                     "'batched'")
  if maxiter is None:
    size = sum(int(np.prod(np.shape(v))) for v in tree_util.tree_leaves(b))
    maxiter = 10 * size
  return _isolve(_gmres_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=False, name="gmres", restart=int(restart))
