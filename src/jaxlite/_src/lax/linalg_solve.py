"""Triangular, tridiagonal and Schur-form lax.linalg primitives (triangular_solve, schur,
cholesky_update, symmetric_product, householder_product, tridiagonal_solve) with their rules.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.dot import dot_general_p
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.lax import linalg_lowering
from jaxlite._src.lax.linalg_common import (
    _check_inexact, _check_square, _cholesky_np, _conj, _instantiate, _lapack,
    _linalg_primitive, _mT, _matmul, _row_scale, _solve_triangular_np, symmetrize, tril, triu)


# --- triangular_solve -------------------------------------------------------------------------

def _triangular_solve_impl(a, b, *, left_side=False, lower=False, transpose_a=False,
                           conjugate_a=False, unit_diagonal=False):
  t = _lapack(a)
  if conjugate_a:
    t = np.conj(t)
  reads_lower = lower
  if transpose_a:
    t = np.swapaxes(t, -1, -2)
    reads_lower = not reads_lower
  rhs = _lapack(b)
  if not left_side:  # x op(a) = b  <=>  op(a)ᵀ xᵀ = bᵀ
    t, rhs = np.swapaxes(t, -1, -2), np.swapaxes(rhs, -1, -2)
    reads_lower = not reads_lower
  with np.errstate(all="ignore"):
    out = _solve_triangular_np(t, rhs, reads_lower, unit_diagonal)
  if not left_side:
    out = np.swapaxes(out, -1, -2)
  return out.astype(b.dtype, copy=False)


def _triangular_solve_abstract(a, b, *, left_side=False, lower=False, transpose_a=False,
                               conjugate_a=False, unit_diagonal=False):
  _check_inexact("triangular_solve", a, 0)
  _check_inexact("triangular_solve", b, 1)
  if a.ndim < 2:
    raise TypeError("triangular_solve requires a to be a batch of square matrices, got "
                    f"shape {a.shape}")
  if a.shape[-1] != a.shape[-2]:  # JAX's shape rule: a ValueError, as is the one below
    raise ValueError("The first input to triangular_solve must be a square matrix. Got "
                     f"shape {a.shape[-2:]}.")
  if a.ndim != b.ndim:
    raise TypeError("triangular_solve requires a and b to have the same number of "
                    f"dimensions, got {a.shape} and {b.shape}")
  if a.shape[:-2] != b.shape[:-2]:
    raise TypeError("triangular_solve requires both arguments to have the same batch "
                    f"dimensions, got {a.shape[:-2]} and {b.shape[:-2]}")
  common = b.shape[-2] if left_side else b.shape[-1]
  if common != a.shape[-1]:
    raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} and "
                     f"{b.shape}.")
  if a.dtype != b.dtype:
    raise TypeError("triangular_solve requires a and b to have the same dtype, got "
                    f"{a.dtype.name} and {b.dtype.name}")
  return ShapedArray(b.shape, b.dtype)


triangular_solve_p = _linalg_primitive("triangular_solve", _triangular_solve_impl,
                                       _triangular_solve_abstract, False)
xla.register(triangular_solve_p, linalg_lowering.triangular_solve_rule)


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  """d x = -op(A)⁻¹ op(dA) x (left side) or -x op(dA) op(A)⁻¹ (right side)."""
  params = {"left_side": left_side, "lower": lower, "transpose_a": transpose_a,
            "conjugate_a": conjugate_a, "unit_diagonal": unit_diagonal}
  g_a = tril(g_a) if lower else triu(g_a)
  if unit_diagonal:
    g_a = tril(g_a, -1) if lower else triu(g_a, 1)
  g_a = ew.neg_p.bind(g_a)
  if conjugate_a:
    g_a = _conj(g_a)
  if transpose_a:
    g_a = _mT(g_a)
  # The cheaper association: solve first when it shrinks the work.
  m, n = b.shape[-2:]
  if left_side:
    if n > m:
      return triangular_solve_p.bind(a, _matmul(g_a, ans), **params)
    return _matmul(triangular_solve_p.bind(a, g_a, **params), ans)
  if m > n:
    return triangular_solve_p.bind(a, _matmul(ans, g_a), **params)
  return _matmul(ans, triangular_solve_p.bind(a, g_a, **params))


def _triangular_solve_transpose_b(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                  unit_diagonal):
  """The map b ↦ op(A)⁻¹ b transposes to ct ↦ op(A)⁻ᵀ ct."""
  return triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                 transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                 unit_diagonal=unit_diagonal)


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
  """Solves op(a) x = b (left_side) or x op(a) = b for triangular a; a 1-D b is a vector."""
  a, b = asarg(a), asarg(b)
  a_aval, b_aval = core.get_aval(a), core.get_aval(b)
  singleton = b_aval.ndim == a_aval.ndim - 1
  if singleton:
    nd = b_aval.ndim
    shape = b_aval.shape + (1,) if left_side else b_aval.shape[:-1] + (1, b_aval.shape[-1])
    dims = tuple(range(nd)) if left_side else tuple(range(nd - 1)) + (nd,)
    b = shape_prims.broadcast_in_dim_p.bind(b, shape=shape, broadcast_dimensions=dims,
                                            sharding=None)
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    out = shape_prims.squeeze_p.bind(out, dimensions=(out.ndim - 1 if left_side
                                                      else out.ndim - 2,))
  return out


# --- schur ------------------------------------------------------------------------------------
# NumPy has no Schur decomposition, so it is built from the eigendecomposition: QR-factor the
# eigenvector basis (real and imaginary parts of each complex pair side by side for real input)
# and T = Zᴴ A Z is (quasi-)upper-triangular. Valid for diagonalizable matrices; the order of
# the eigenvalues along T's diagonal is eig's, not LAPACK's.

def _schur_one(a, complex_output):
  n = a.shape[-1]
  w, v = np.linalg.eig(a)
  if complex_output or a.dtype.kind == "c":
    basis = v.astype(np.result_type(v, np.complex64))
  else:
    basis = np.empty((n, n), a.dtype)
    j = 0
    while j < n:
      if abs(w[j].imag) > 0 and j + 1 < n:
        basis[:, j], basis[:, j + 1] = v[:, j].real, v[:, j].imag
        j += 2
      else:
        basis[:, j] = v[:, j].real
        j += 1
  z, _ = np.linalg.qr(basis)
  t = np.conj(z.T) @ a @ z
  # Exact zeros below the (block) diagonal, as a Schur form has.
  below = np.tril(np.ones((n, n), bool), -1)
  if not (complex_output or a.dtype.kind == "c"):
    pairs = np.zeros(n, bool)
    j = 0
    while j < n - 1:
      if abs(w[j].imag) > 0:
        pairs[j] = True
        j += 2
      else:
        j += 1
    below[np.arange(1, n)[pairs[:-1]], np.arange(n - 1)[pairs[:-1]]] = False
  t[below] = 0
  return t, z


def _schur_impl(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
  if sort_eig_vals or select_callable is not None:
    raise NotImplementedError("schur with eigenvalue sorting is not implemented in jaxlite")
  a = _lapack(x)
  batch, n = a.shape[:-2], a.shape[-1]
  flat = a.reshape((int(np.prod(batch, dtype=np.int64)), n, n))
  ts, zs = [], []
  for m in flat:
    t, z = _schur_one(m, False)
    ts.append(t)
    zs.append(z)
  t = np.stack(ts).reshape(a.shape) if ts else np.zeros(a.shape, a.dtype)
  z = np.stack(zs).reshape(a.shape) if zs else np.zeros(a.shape, a.dtype)
  out = [t.astype(x.dtype)]
  return out + ([z.astype(x.dtype)] if compute_schur_vectors else [])


def _schur_abstract(x, *, compute_schur_vectors=True, sort_eig_vals=False,
                    select_callable=None):
  _check_inexact("schur", x)
  _check_square("schur", x)
  return [ShapedArray(x.shape, x.dtype)] * (2 if compute_schur_vectors else 1)


schur_p = _linalg_primitive("schur", _schur_impl, _schur_abstract)
xla.register(schur_p, linalg_lowering.schur_rule)
xla.register_none(schur_p, "tpu")  # JAX: CPU only


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
  """(T, Z) with x = Z T Zᴴ, T upper triangular (complex) or quasi-triangular (real, 2×2
  blocks for complex pairs), Z unitary."""
  return tuple(schur_p.bind(asarg(x), compute_schur_vectors=bool(compute_schur_vectors),
                            sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable))


# --- cholesky_update, symmetric_product, householder_product ------------------------------------

def _cholesky_update_impl(r, w):
  """The upper factor of Rᴴ R + w wᴴ, by Givens-free refactorization of the updated matrix."""
  rr = _lapack(r)
  ww = _lapack(w)
  gram = np.conj(np.swapaxes(rr, -1, -2)) @ rr + ww[..., :, None] * np.conj(ww[..., None, :])
  lower = _cholesky_np(gram)
  return np.conj(np.swapaxes(lower, -1, -2)).astype(r.dtype, copy=False)


def _cholesky_update_abstract(r, w):
  _check_inexact("cholesky_update", r, 0)
  _check_square("cholesky_update", r)
  if w.shape != r.shape[:-1] or w.dtype != r.dtype:
    raise TypeError("cholesky_update requires w of shape r.shape[:-1] and r's dtype, got "
                    f"{w.str_short()} for {r.str_short()}")
  return ShapedArray(r.shape, r.dtype)


cholesky_update_p = _linalg_primitive("cholesky_update", _cholesky_update_impl,
                                      _cholesky_update_abstract, False)
xla.register(cholesky_update_p, linalg_lowering.cholesky_update_rule)
xla.register(cholesky_update_p, linalg_lowering.cholesky_update_xla_rule, platform="tpu")


def cholesky_update(r_matrix, w_vector):
  """The upper Cholesky factor of Rᴴ R + w wᴴ given R's."""
  return cholesky_update_p.bind(asarg(r_matrix), asarg(w_vector))


def _symmetric_product_impl(a, c, *, alpha, beta):
  out = alpha * (np.asarray(a) @ np.conj(np.swapaxes(a, -1, -2))) + beta * np.asarray(c)
  return out.astype(c.dtype, copy=False)


def _symmetric_product_abstract(a, c, *, alpha, beta):
  _check_inexact("symmetric_product", a, 0)
  if c.shape != a.shape[:-1] + (a.shape[-2],) or a.dtype != c.dtype:
    raise TypeError("symmetric_product requires c of shape a.shape[:-1] + (a.shape[-2],) and "
                    f"a's dtype, got {c.str_short()} for {a.str_short()}")
  return ShapedArray(c.shape, c.dtype)


symmetric_product_p = _linalg_primitive("symmetric_product", _symmetric_product_impl,
                                        _symmetric_product_abstract, False)
xla.register(symmetric_product_p, linalg_lowering.symmetric_product_rule)


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
  """alpha a aᴴ + beta c."""
  out = symmetric_product_p.bind(asarg(a_matrix), asarg(c_matrix), alpha=float(alpha),
                                 beta=float(beta))
  return symmetrize(out) if symmetrize_output else out


def _householder_product_impl(a, taus):
  """Q = H_1 ⋯ H_k of the reflectors H_i = I - τ_i v_i v_iᴴ stored below a's diagonal (geqrf's
  packed form), as the first n columns."""
  a, taus = np.asarray(a), np.asarray(taus)
  m, n = a.shape[-2:]
  q = np.array(np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape))
  for i in reversed(range(taus.shape[-1])):
    v = a[..., i:, i].copy()
    v[..., 0] = 1
    proj = np.einsum("...r,...rc->...c", np.conj(v), q[..., i:, :])
    q[..., i:, :] -= taus[..., i, None, None] * v[..., :, None] * proj[..., None, :]
  return q


def _householder_product_abstract(a, taus):
  _check_inexact("householder_product", a, 0)
  if taus.shape != a.shape[:-2] + (taus.shape[-1],) or taus.shape[-1] > min(a.shape[-2:]):
    raise TypeError(f"householder_product got incompatible shapes {a.shape} and {taus.shape}")
  return ShapedArray(a.shape, a.dtype)


householder_product_p = _linalg_primitive("householder_product", _householder_product_impl,
                                          _householder_product_abstract, False)
xla.register(householder_product_p, linalg_lowering.householder_product_rule)
xla.register(householder_product_p, linalg_lowering.householder_product_xla_rule,
             platform="tpu")


def householder_product(a, taus):
  """The unitary matrix of the Householder reflectors in LAPACK's packed (a, taus) form."""
  return householder_product_p.bind(asarg(a), asarg(taus))


# --- tridiagonal_solve ------------------------------------------------------------------------

def _tridiagonal_solve_impl(dl, d, du, b, *, perturb_singular=False):
  """The Thomas algorithm over the leading batch dims; b is (..., m, n)."""
  dl, d, du, b = (np.asarray(v) for v in (dl, d, du, b))
  m = d.shape[-1]
  cp = np.zeros(d.shape, d.dtype)
  dp = np.zeros(b.shape, b.dtype)
  with np.errstate(all="ignore"):
    denom = d[..., 0]
    cp[..., 0] = du[..., 0] / denom
    dp[..., 0, :] = b[..., 0, :] / denom[..., None]
    for i in range(1, m):
      denom = d[..., i] - dl[..., i] * cp[..., i - 1]
      cp[..., i] = du[..., i] / denom
      dp[..., i, :] = (b[..., i, :] - dl[..., i, None] * dp[..., i - 1, :]) / denom[..., None]
    x = dp
    for i in range(m - 2, -1, -1):
      x[..., i, :] = dp[..., i, :] - cp[..., i, None] * x[..., i + 1, :]
  return x.astype(b.dtype, copy=False)


def _tridiagonal_solve_abstract(dl, d, du, b, *, perturb_singular=False):
  for i, v in enumerate((dl, d, du, b)):
    _check_inexact("tridiagonal_solve", v, i)
  if b.ndim < 2:
    raise ValueError(f"tridiagonal_solve requires b of rank >= 2, got shape {b.shape}")
  m = b.shape[-2]
  for name, v in (("dl", dl), ("d", d), ("du", du)):
    if v.shape != b.shape[:-2] + (m,):
      raise ValueError(f"tridiagonal_solve requires {name} to have shape {b.shape[:-2] + (m,)},"
                       f" got {v.shape}")
  if not dl.dtype == d.dtype == du.dtype == b.dtype:
    raise ValueError("tridiagonal_solve requires that all arguments have the same dtype")
  return ShapedArray(b.shape, b.dtype)


tridiagonal_solve_p = _linalg_primitive("tridiagonal_solve", _tridiagonal_solve_impl,
                                        _tridiagonal_solve_abstract, False)
xla.register(tridiagonal_solve_p, linalg_lowering.tridiagonal_solve_rule)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
  """Solves the tridiagonal systems (dl below, d on, du above the diagonal) for b."""
  return tridiagonal_solve_p.bind(asarg(dl), asarg(d), asarg(du), asarg(b),
                                  perturb_singular=bool(perturb_singular))


def _shift(v, offset: int):
  """w[..., i] = v[..., i - offset] (zeros shifted in), as a product with a constant matrix."""
  m = v.shape[-1]
  s = np.eye(m, k=offset, dtype=v.dtype)
  return dot_general_p.bind(v, s, dimension_numbers=(((v.ndim - 1,), (0,)), ((), ())),
                            precision=None, preferred_element_type=None, out_sharding=None)


def _tridiagonal_matvec(dl, d, du, x):
  """T x for the tridiagonal T given by its three diagonals; x is (..., m, n)."""
  def rows_scaled(diag, y):
    return _row_scale(y, diag)
  below = _mT(_shift(_mT(x), 1))  # x[i - 1]
  above = _mT(_shift(_mT(x), -1))  # x[i + 1]
  return ew.add_p.bind(ew.add_p.bind(rows_scaled(dl, below), rows_scaled(d, x)),
                       rows_scaled(du, above))


def _tridiagonal_solve_transpose_b(ct, dl, d, du, b, *, perturb_singular):
  """Tᵀ has du shifted down one as its subdiagonal and dl shifted up one as its superdiagonal."""
  return tridiagonal_solve_p.bind(_shift(du, 1), d, _shift(dl, -1), ct,
                                  perturb_singular=perturb_singular)


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
  """dx = T⁻¹ (db - dT x)."""
  dl, d, du, b = primals
  x = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
  tdl, td, tdu, tb = (_instantiate(t, p) for t, p in zip(tangents, primals))
  rhs = ew.sub_p.bind(tb, _tridiagonal_matvec(tdl, td, tdu, x))
  return x, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)
