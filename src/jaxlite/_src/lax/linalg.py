"""Decomposition primitives of `jax.lax.linalg` (cholesky, eigh, eig, lu, qr, svd) as NumPy LAPACK
calls batched over leading dims, and the AD and vmap rules of every lax.linalg primitive.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax import creation
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import linalg_lowering
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.lax.linalg_common import (
    _H, _as_dtype, _check_inexact, _check_rank2, _check_square, _cholesky_np, _col_scale,
    _complex_dtype, _diag, _eye_like, _full_like, _instantiate, _int_zero, _lapack,
    _linalg_primitive, _mT, _matmul, _nan_on_failure, _real, _real_dtype, _row_scale, _scalar,
    _solve_triangular_np, symmetrize, tril, triu)
from jaxlite._src.lax.linalg_solve import (
    _triangular_solve_jvp_a, _triangular_solve_transpose_b, _tridiagonal_solve_jvp,
    _tridiagonal_solve_transpose_b, cholesky_update_p, householder_product_p, schur_p,
    symmetric_product_p, triangular_solve, triangular_solve_p, tridiagonal_solve_p)
# numpy.linalg, scipy.linalg and tests/test_vmap.py reach these as `lax_linalg.<name>`.
from jaxlite._src.lax.linalg_common import _conj  # noqa: F401
from jaxlite._src.lax.linalg_solve import (  # noqa: F401
    cholesky_update, householder_product, schur, symmetric_product, tridiagonal_solve)

# --- cholesky ---------------------------------------------------------------------------------

def _cholesky_impl(x):
  out = _cholesky_np(x)
  return out.astype(x.dtype, copy=False)


def _cholesky_abstract(x):
  _check_inexact("cholesky", x)
  _check_square("cholesky", x)
  return ShapedArray(x.shape, x.dtype)


cholesky_p = _linalg_primitive("cholesky", _cholesky_impl, _cholesky_abstract, False)


def _cholesky_jvp(primals, tangents):
  """dL = L Φ(L⁻¹ dA L⁻ᴴ), Φ keeping the strict lower triangle and half the diagonal."""
  (x,), (dx,) = primals, tangents
  L = cholesky_p.bind(x)
  dx = _instantiate(dx, x)
  tmp = triangular_solve(L, dx, left_side=False, lower=True, transpose_a=True,
                         conjugate_a=True)
  tmp = triangular_solve(L, tmp, left_side=True, lower=True)
  phi = 0.5 * np.eye(x.shape[-1]) + np.tril(np.ones(x.shape[-2:]), -1)
  half = ew.mul_p.bind(tmp, np.broadcast_to(np.asarray(phi, x.dtype), x.shape))
  return L, _matmul(L, half)


def cholesky(x, *, symmetrize_input: bool = True):
  """The lower Cholesky factor of Hermitian positive definite matrices (NaNs if not PD)."""
  x = asarg(x)
  if symmetrize_input:
    x = symmetrize(x)
  return tril(cholesky_p.bind(x))


# --- eigh -------------------------------------------------------------------------------------

def _eigh_impl(x, *, lower=True, sort_eigenvalues=True, subset_by_index=None, algorithm=None):
  a = _lapack(x)
  n = a.shape[-1]
  w, v = _nan_on_failure(lambda m: np.linalg.eigh(m, UPLO="L" if lower else "U"), a,
                         [((n,), _real_dtype(a.dtype)), ((n, n), a.dtype)])
  if subset_by_index is not None:
    lo, hi = subset_by_index
    w, v = w[..., lo:hi], v[..., lo:hi]
  return [v.astype(x.dtype, copy=False), w.astype(_real_dtype(x.dtype), copy=False)]


def _eigh_abstract(x, *, lower=True, sort_eigenvalues=True, subset_by_index=None,
                   algorithm=None):
  _check_inexact("eigh", x)
  if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
    raise ValueError("Argument to symmetric eigendecomposition must have shape [..., n, n], "
                     f"got shape {x.shape}")
  n = x.shape[-1]
  k = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
  return [ShapedArray(x.shape[:-1] + (k,), x.dtype),
          ShapedArray(x.shape[:-2] + (k,), _real_dtype(x.dtype))]


eigh_p = _linalg_primitive("eigh", _eigh_impl, _eigh_abstract)


def _eigh_jvp(primals, tangents, **params):
  """dw = Re diag(Vᴴ dA V); dV = V (F ∘ Vᴴ dA V), F_ij = 1 / (w_j - w_i) off the diagonal."""
  (x,), (dx,) = primals, tangents
  if params.get("subset_by_index") not in (None, (0, x.shape[-1])):
    raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
  v, w = eigh_p.bind(x, **params)
  dx = _instantiate(dx, x)
  vdv = _matmul(_H(v), _matmul(dx, v))
  w_c = _as_dtype(w, x.dtype)
  diffs = ew.sub_p.bind(_bcast_row(w_c, x.shape), _bcast_col(w_c, x.shape))
  eye = np.asarray(_eye_like(x), x.dtype)
  safe = ew.add_p.bind(diffs, eye)
  inv = ew.sub_p.bind(ew.div_p.bind(_full_like(x, 1), safe), eye)
  dv = _matmul(v, ew.mul_p.bind(inv, vdv))
  dw = _real(_diag(vdv))
  return [v, w], [dv, dw]


def _bcast_row(v, shape):
  """v[..., None, :] broadcast to `shape`."""
  return shape_prims.broadcast_in_dim_p.bind(
      v, shape=tuple(shape), broadcast_dimensions=tuple(range(v.ndim - 1)) + (v.ndim,),
      sharding=None)


def _bcast_col(v, shape):
  """v[..., :, None] broadcast to `shape`."""
  return shape_prims.broadcast_in_dim_p.bind(
      v, shape=tuple(shape), broadcast_dimensions=tuple(range(v.ndim)), sharding=None)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
  """(eigenvectors, eigenvalues) of Hermitian matrices, eigenvalues ascending."""
  x = asarg(x)
  if symmetrize_input:
    x = symmetrize(x)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=None if subset_by_index is None else
                     tuple(int(i) for i in subset_by_index), algorithm=implementation)
  return v, w


# --- eig (general, CPU) -----------------------------------------------------------------------

def _normalize_vectors(v):
  """Unit 2-norm columns whose largest component is real, as LAPACK's geev returns them."""
  v = v / np.linalg.norm(v, axis=-2, keepdims=True)
  idx = np.argmax(np.abs(v), axis=-2)[..., None, :]
  big = np.take_along_axis(v, idx, axis=-2)
  return v * (np.conj(big) / np.abs(big))


def _eig_impl(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
              enable_eigvec_derivs=False, implementation=None):
  a = _lapack(x)
  cdt = _complex_dtype(x.dtype)
  n = a.shape[-1]
  w, vr = _nan_on_failure(np.linalg.eig, a, [((n,), cdt), ((n, n), cdt)])
  w, vr = w.astype(cdt), vr.astype(cdt)
  out = [w]
  if compute_left_eigenvectors:
    with np.errstate(all="ignore"):
      vl = _normalize_vectors(np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2)))
    out.append(vl.astype(cdt))
  if compute_right_eigenvectors:
    out.append(vr)
  return out


def _eig_abstract(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
                  enable_eigvec_derivs=False, implementation=None):
  _check_inexact("eig", x)
  _check_rank2("eig", x)
  _check_square("eig", x)
  cdt = _complex_dtype(x.dtype)
  out = [ShapedArray(x.shape[:-1], cdt)]
  out += [ShapedArray(x.shape, cdt)] * (int(compute_left_eigenvectors)
                                        + int(compute_right_eigenvectors))
  return out


eig_p = _linalg_primitive("eig", _eig_impl, _eig_abstract)


def _eig_jvp(primals, tangents, **params):
  """dw = diag(V⁻¹ dA V); with enable_eigvec_derivs also dV = V (F ∘ V⁻¹ dA V), F_ij =
  1 / (w_j - w_i) off the diagonal, less the part along each v that would change its norm."""
  (x,), (dx,) = primals, tangents
  if params["compute_left_eigenvectors"] or (params["compute_right_eigenvectors"]
                                             and not params["enable_eigvec_derivs"]):
    raise NotImplementedError(
        "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
        "input that JAX cannot check (see the enable_eigvec_derivs argument to "
        "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to opt in. "
        "See https://github.com/jax-ml/jax/issues/2748 for discussion.")
  w, vr = eig_p.bind(x, compute_left_eigenvectors=False, compute_right_eigenvectors=True,
                     enable_eigvec_derivs=False, implementation=params["implementation"])
  dx = _as_dtype(_instantiate(dx, x), w.dtype)
  n = x.shape[-1]
  eye = np.broadcast_to(np.eye(n, dtype=w.dtype), vr.shape)
  vinv_dx_v = _matmul(_solve_general(vr, eye), _matmul(dx, vr))
  dw = _diag(vinv_dx_v)
  if not params["compute_right_eigenvectors"]:
    return [w], [dw]
  diffs = ew.sub_p.bind(_bcast_row(w, vr.shape), _bcast_col(w, vr.shape))
  safe = ew.add_p.bind(diffs, np.asarray(eye))
  f = ew.sub_p.bind(ew.div_p.bind(_full_like(vr, 1), safe), np.asarray(eye))
  dv = _matmul(vr, ew.mul_p.bind(f, vinv_dx_v))
  along = _real(_diag(_matmul(_H(vr), dv)))  # Re(vᴴ dv) per column
  dv = ew.sub_p.bind(dv, _col_scale(vr, _as_dtype(along, vr.dtype)))
  if vr.dtype.kind == "c":
    dv = _keep_largest_component_real(vr, dv)
  return [w, vr], [dw, dv]


def _keep_largest_component_real(v, dv):
  """LAPACK's eigenvectors have their largest component real: rotate each tangent column by
  the imaginary phase that would move it off the real axis."""
  mags = ew.abs_p.bind(v)
  rows = creation.iota_p.bind(dtype=np.dtype(np.int32), shape=v.shape, dimension=v.ndim - 2,
                              sharding=None)
  from jaxlite._src.lax.reductions import argmax_p, reduce_sum_p
  k = argmax_p.bind(mags, axes=(v.ndim - 2,), index_dtype=np.dtype(np.int32))
  onehot = casts.convert_element_type_p.bind(ew.eq_p.bind(rows, _bcast_row(k, v.shape)),
                                          new_dtype=v.dtype, weak_type=False)
  v_k = reduce_sum_p.bind(ew.mul_p.bind(v, onehot), axes=(v.ndim - 2,), out_sharding=None)
  dv_k = reduce_sum_p.bind(ew.mul_p.bind(dv, onehot), axes=(v.ndim - 2,), out_sharding=None)
  phase = ew.imag_p.bind(ew.div_p.bind(dv_k, v_k))
  rotation = ew.mul_p.bind(_as_dtype(phase, v.dtype), np.asarray(1j, v.dtype))
  return ew.sub_p.bind(dv, _col_scale(v, rotation))


def _solve_general(a, b):
  """a⁻¹ b through the LU primitive (so that it stays differentiable)."""
  lu_, _, perm = lu_p.bind(a)
  pb = _permute_rows(b, perm)
  y = triangular_solve(lu_, pb, left_side=True, lower=True, unit_diagonal=True)
  return triangular_solve(lu_, y, left_side=True, lower=False)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
  """[eigenvalues, left eigenvectors?, right eigenvectors?] of square matrices (complex)."""
  return eig_p.bind(asarg(x), compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors),
                    enable_eigvec_derivs=bool(enable_eigvec_derivs),
                    implementation=implementation)


# --- lu: partial pivoting, recursive on columns so most flops run in BLAS ----------------------

def _lu_unblocked(a):
  """In-place LU of a (B, m, n) batch view; returns the pivots (B, min(m, n))."""
  nb, m, n = a.shape
  k = min(m, n)
  if nb == 1:
    return _lu_unblocked_one(a[0])[None]
  rows = np.arange(nb)
  pivots = np.zeros((nb, k), np.int32)
  for j in range(k):
    p = j + np.argmax(np.abs(a[:, j:, j]), axis=1)
    pivots[:, j] = p
    row_j = a[rows, j].copy()
    a[rows, j] = a[rows, p]
    a[rows, p] = row_j
    piv = a[:, j, j]
    safe = np.where(piv == 0, 1, piv)
    a[:, j + 1:, j] /= safe[:, None]
    a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
  return pivots


def _lu_unblocked_one(a):
  """_lu_unblocked for one matrix: plain slicing, no per-step fancy indexing over a batch."""
  m, n = a.shape
  k = min(m, n)
  pivots = np.zeros(k, np.int32)
  for j in range(k):
    p = j + int(np.argmax(np.abs(a[j:, j])))
    pivots[j] = p
    if p != j:
      a[[j, p]] = a[[p, j]]
    piv = a[j, j]
    if piv != 0:
      a[j + 1:, j] /= piv
    a[j + 1:, j + 1:] -= np.multiply.outer(a[j + 1:, j], a[j, j + 1:])
  return pivots


def _apply_swaps(a, pivots):
  """Applies LAPACK-style sequential row swaps to a (B, m, n) view in place, as one gather."""
  perm = _pivots_to_permutation_np(pivots, a.shape[1])
  # A panel's swaps move at most twice its width of rows: copy only those.
  moved = np.nonzero(np.any(perm != np.arange(a.shape[1]), axis=0))[0]
  if moved.size:
    a[:, moved] = np.take_along_axis(a, perm[:, moved, None], axis=1)


def _unit_lower_solve(lower_factor, b):
  """L⁻¹ b for the unit lower triangle of `lower_factor`."""
  return _solve_triangular_np(lower_factor, b, lower=True, unit=True)


def _lu_recursive(a):
  m, n = a.shape[1:]
  k = min(m, n)
  if k <= 16:
    return _lu_unblocked(a)
  k1 = k // 2
  p1 = _lu_recursive(a[:, :, :k1])
  _apply_swaps(a[:, :, k1:], p1)
  a[:, :k1, k1:] = _unit_lower_solve(a[:, :k1, :k1], a[:, :k1, k1:])
  a[:, k1:, k1:] -= np.matmul(a[:, k1:, :k1], a[:, :k1, k1:])
  p2 = _lu_recursive(a[:, k1:, k1:])
  _apply_swaps(a[:, k1:, :k1], p2)
  return np.concatenate([p1, p2 + k1], axis=1).astype(np.int32)


def _pivots_to_permutation_np(pivots, size):
  batch = pivots.shape[:-1]
  piv = pivots.reshape(int(np.prod(batch, dtype=np.int64)), pivots.shape[-1])
  if piv.shape[0] == 1:  # one matrix: swap Python ints, far cheaper than array ops per step
    perm = list(range(size))
    for j, p in enumerate(piv[0].tolist()):
      perm[j], perm[p] = perm[p], perm[j]
    return np.asarray(perm, np.int32).reshape(batch + (size,))
  perm = np.tile(np.arange(size, dtype=np.int32), (piv.shape[0], 1))
  rows = np.arange(piv.shape[0])
  for j in range(piv.shape[1]):
    p = piv[:, j]
    pj = perm[:, j].copy()
    perm[:, j] = perm[rows, p]
    perm[rows, p] = pj
  return perm.reshape(batch + (size,))


def _lu_impl(x):
  a = np.array(_lapack(x), copy=True)
  batch, (m, n) = a.shape[:-2], a.shape[-2:]
  flat = a.reshape((int(np.prod(batch, dtype=np.int64)), m, n))
  with np.errstate(all="ignore"):
    pivots = _lu_recursive(flat) if flat.size else np.zeros((flat.shape[0], min(m, n)),
                                                            np.int32)
  perm = _pivots_to_permutation_np(pivots, m)
  return [flat.reshape(a.shape).astype(x.dtype, copy=False),
          pivots.reshape(batch + (min(m, n),)), perm.reshape(batch + (m,))]


def _lu_abstract(x):
  _check_inexact("lu", x)
  _check_rank2("lu", x)
  m, n = x.shape[-2:]
  batch = x.shape[:-2]
  i32 = np.dtype(np.int32)
  return [ShapedArray(x.shape, x.dtype), ShapedArray(batch + (min(m, n),), i32),
          ShapedArray(batch + (m,), i32)]


lu_p = _linalg_primitive("lu", _lu_impl, _lu_abstract)


def _lu_jvp(primals, tangents):
  """With P A = L U: dLU = L tril(X, -1) + triu(X) U, X = L⁻¹ P dA U⁻¹ (padded square)."""
  (x,), (dx,) = primals, tangents
  lu_, pivots, perm = lu_p.bind(x)
  dx = _instantiate(dx, x)
  m, n = x.shape[-2:]
  k = min(m, n)
  l_sq = _square_l(lu_, m, n, k)
  u_sq = _square_u(lu_, m, n, k)
  pdx = _permute_rows(dx, perm)
  la = triangular_solve(l_sq, pdx, left_side=True, lower=True, unit_diagonal=True)
  lau = triangular_solve(u_sq, la, left_side=False, lower=False)
  dlu = ew.add_p.bind(_matmul(l_sq, tril(lau, -1)), _matmul(triu(lau), u_sq))
  return [lu_, pivots, perm], [dlu, _int_zero(pivots), _int_zero(perm)]


def _square_l(lu_, m, n, k):
  """The m×m unit lower factor: the first k columns of lu's strict lower part, then I."""
  sel = np.zeros((n, m), lu_.dtype)
  sel[np.arange(k), np.arange(k)] = 1
  picked = _matmul(lu_, np.broadcast_to(sel, lu_.shape[:-2] + (n, m)))
  return ew.add_p.bind(tril(picked, -1), np.asarray(_eye_like(picked), lu_.dtype))


def _square_u(lu_, m, n, k):
  """The n×n upper factor: lu's first k rows' upper part, identity below them."""
  sel = np.zeros((n, m), lu_.dtype)
  sel[np.arange(k), np.arange(k)] = 1
  picked = _matmul(np.broadcast_to(sel, lu_.shape[:-2] + (n, m)), lu_)
  pad = np.zeros(picked.shape, lu_.dtype)
  pad[..., np.arange(k, n), np.arange(k, n)] = 1
  return ew.add_p.bind(triu(picked), pad)


def _permute_rows(x, perm):
  """x[..., perm, :]: one gather, batched over the leading dims of x and perm alike."""
  from jaxlite._src.lax import slicing
  if 0 in x.shape:
    return x  # nothing to move (and XLA's gather wants a window inside each batch dim)
  nb = x.ndim - 2
  n = x.shape[-1]
  indices = shape_prims.broadcast_in_dim_p.bind(
      perm, shape=perm.shape + (1,), broadcast_dimensions=tuple(range(perm.ndim)),
      sharding=None)
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=(nb + 1,), collapsed_slice_dims=(nb,), start_index_map=(nb,),
      operand_batching_dims=tuple(range(nb)), start_indices_batching_dims=tuple(range(nb)))
  return slicing.gather(x, indices, dnums, (1,) * (nb + 1) + (n,),
                        mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS)


def lu(x):
  """(lu, pivots, permutation) of the partial-pivoting LU decomposition P A = L U."""
  lu_, pivots, perm = lu_p.bind(asarg(x))
  return lu_, pivots, perm


def _lu_pivots_impl(pivots, *, permutation_size):
  return _pivots_to_permutation_np(np.asarray(pivots), permutation_size).astype(pivots.dtype)


def _lu_pivots_abstract(pivots, *, permutation_size):
  if pivots.dtype.kind not in "iu":
    raise TypeError(f"lu_pivots_to_permutation requires integer pivots, got {pivots.dtype}")
  if pivots.ndim < 1:
    raise ValueError("Argument to lu_pivots_to_permutation must have rank >= 1, got shape "
                     f"{pivots.shape}")
  if pivots.shape[-1] > permutation_size:
    raise ValueError("Output permutation size {permutation_size} has to exceed the trailing "
                     f"dimension of the pivots. Got pivots size {pivots.shape[-1]}")
  return ShapedArray(pivots.shape[:-1] + (permutation_size,), pivots.dtype)


lu_pivots_to_permutation_p = _linalg_primitive(
    "lu_pivots_to_permutation", _lu_pivots_impl, _lu_pivots_abstract, False)


def lu_pivots_to_permutation(pivots, permutation_size: int):
  """The row permutation that LAPACK-style sequential pivots (swaps) describe."""
  return lu_pivots_to_permutation_p.bind(asarg(pivots), permutation_size=int(permutation_size))


# --- qr ---------------------------------------------------------------------------------------

def _qr_impl(x, *, pivoting=False, full_matrices=True, use_magma=None):
  a = _lapack(x)
  m, n = a.shape[-2:]
  if a.size == 0:
    k = m if full_matrices else min(m, n)
    out = [_eye_like(a, a.shape[:-2] + (m, k)).astype(x.dtype),
           np.zeros(a.shape[:-2] + (k, n), x.dtype)]
    return out + ([np.broadcast_to(np.arange(n, dtype=np.int32), a.shape[:-2] + (n,))]
                  if pivoting else [])
  perm = None
  if pivoting:
    perm = _pivot_columns(a)
    a = np.take_along_axis(a, perm[..., None, :], axis=-1)
  q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
  out = [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]
  return out + ([perm] if pivoting else [])


def _pivot_columns(a):
  """The column order of QR with column pivoting (Businger–Golub, as LAPACK's geqp3): at each
  step the remaining column of largest norm, with norms downdated by each Householder step."""
  batch, (m, n) = a.shape[:-2], a.shape[-2:]
  flat = a.reshape((int(np.prod(batch, dtype=np.int64)), m, n))
  perms = np.stack([_pivot_columns_one(mat) for mat in flat]) if flat.shape[0] else \
      np.zeros((0, n), np.int32)
  return perms.reshape(batch + (n,)).astype(np.int32)


def _pivot_columns_one(mat):
  work = np.array(mat, dtype=np.complex128 if mat.dtype.kind == "c" else np.float64)
  m, n = work.shape
  perm = np.arange(n)
  norms = np.sum(np.abs(work) ** 2, axis=0)
  for k in range(min(m, n)):
    j = k + int(np.argmax(norms[k:]))
    if j != k:
      work[:, [k, j]] = work[:, [j, k]]
      perm[[k, j]] = perm[[j, k]]
      norms[[k, j]] = norms[[j, k]]
    col = work[k:, k]
    alpha = np.linalg.norm(col)
    if alpha == 0:
      continue
    v = col.copy()
    phase = v[0] / abs(v[0]) if v[0] != 0 else 1.0
    v[0] += phase * alpha
    v /= np.linalg.norm(v)
    work[k:, k:] -= 2 * np.outer(v, np.conj(v) @ work[k:, k:])
    norms[k + 1:] = np.maximum(norms[k + 1:] - np.abs(work[k, k + 1:]) ** 2, 0)
  return perm


def _qr_abstract(x, *, pivoting=False, full_matrices=True, use_magma=None):
  _check_inexact("qr", x)
  _check_rank2("qr", x)
  m, n = x.shape[-2:]
  k = m if full_matrices else min(m, n)
  batch = x.shape[:-2]
  out = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
  if pivoting:
    out.append(ShapedArray(batch + (n,), np.dtype(np.int32)))
  return out


qr_p = _linalg_primitive("qr", _qr_impl, _qr_abstract)


def _qr_thin_tangents(q, r, dx):
  """(dQ, dR) of the thin QR A = Q R, A m x n with m >= n: with C = Qᴴ dA R⁻¹ and Ω its
  skew-Hermitian part built from the strict lower triangle, dQ = Q (Ω - C) + dA R⁻¹ and
  dR = (C - Ω) R."""
  dx_rinv = triangular_solve(r, dx)
  qt_dx_rinv = _matmul(_H(q), dx_rinv)
  lower = tril(qt_dx_rinv, -1)
  omega = ew.sub_p.bind(lower, _H(lower))
  if q.dtype.kind == "c":
    imag_diag = ew.sub_p.bind(qt_dx_rinv, _as_dtype(_real(qt_dx_rinv), q.dtype))
    omega = ew.add_p.bind(omega, ew.mul_p.bind(imag_diag, np.asarray(_eye_like(omega),
                                                                     q.dtype)))
  dq = ew.add_p.bind(_matmul(q, ew.sub_p.bind(omega, qt_dx_rinv)), dx_rinv)
  dr = _matmul(ew.sub_p.bind(qt_dx_rinv, omega), r)
  return dq, dr


def _last_columns(x, start, stop):
  from jaxlite._src.lax.slicing import slice_in_dim
  return slice_in_dim(x, start, stop, 1, x.ndim - 1)


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
  """m >= n: the thin rule (_qr_thin_tangents). m < n: A = [A1 A2] with A1 square, so
  (dQ, dR1) is the square rule for A1 = Q R1 and R2 = Qᴴ A2 gives dR2 = dQᴴ A2 + Qᴴ dA2.
  Pivoting permutes dA's columns like A's (the permutation is piecewise constant)."""
  (x,), (dx,) = primals, tangents
  outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
  q, r = outs[0], outs[1]
  m, n = x.shape[-2:]
  if m > n and full_matrices:
    # JAX 0.10.2 has this case (arXiv 2409.13374); jaxlite does not yet.
    raise NotImplementedError(
        "QR decomposition derivative of a tall matrix with full_matrices=True")
  dx = _instantiate(dx, x)
  if pivoting:
    dx = _mT(_permute_rows(_mT(dx), outs[2]))
  if m < n:
    xp = _mT(_permute_rows(_mT(x), outs[2])) if pivoting else x
    dq, dr1 = _qr_thin_tangents(q, _last_columns(r, 0, m), _last_columns(dx, 0, m))
    dr2 = ew.add_p.bind(_matmul(_H(dq), _last_columns(xp, m, n)),
                        _matmul(_H(q), _last_columns(dx, m, n)))
    dr = shape_prims.concatenate_p.bind(dr1, dr2, dimension=x.ndim - 1)
  else:
    dq, dr = _qr_thin_tangents(q, r, dx)
  tangents_out = [dq, dr] + ([_int_zero(outs[2])] if pivoting else [])
  return list(outs), tangents_out


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
  """(q, r) of the QR decomposition (and the column permutation when pivoting)."""
  out = qr_p.bind(asarg(x), pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                  use_magma=use_magma)
  return tuple(out)


# --- svd --------------------------------------------------------------------------------------

def _svd_impl(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
  a = _lapack(x)
  rdt = _real_dtype(x.dtype)
  if a.size == 0:
    return _svd_empty(a, x.dtype, full_matrices, compute_uv)
  if not compute_uv:
    k = min(a.shape[-2:])
    (s,) = _nan_on_failure(lambda m: (np.linalg.svd(m, compute_uv=False),), a,
                           [((k,), _real_dtype(a.dtype))])
    return [_svd_subset(s, subset_by_index, -1).astype(rdt)]
  m, n = a.shape[-2:]
  k = min(m, n)
  u, s, vt = _nan_on_failure(
      lambda x: np.linalg.svd(x, full_matrices=full_matrices), a,
      [((m, m if full_matrices else k), a.dtype), ((k,), _real_dtype(a.dtype)),
       ((n if full_matrices else k, n), a.dtype)])
  if subset_by_index is not None:
    s = _svd_subset(s, subset_by_index, -1)
    u = _svd_subset(u, subset_by_index, -1)
    vt = _svd_subset(vt, subset_by_index, -2)
  return [s.astype(rdt), u.astype(x.dtype, copy=False), vt.astype(x.dtype, copy=False)]


def _svd_subset(v, subset_by_index, axis):
  if subset_by_index is None:
    return v
  lo, hi = subset_by_index
  return v[..., lo:hi] if axis == -1 else v[..., lo:hi, :]


def _svd_empty(a, dtype, full_matrices, compute_uv):
  m, n = a.shape[-2:]
  k = min(m, n)
  batch = a.shape[:-2]
  s = np.zeros(batch + (k,), _real_dtype(dtype))
  if not compute_uv:
    return [s]
  u = _eye_like(a, batch + (m, m if full_matrices else k)).astype(dtype)
  vt = _eye_like(a, batch + (n if full_matrices else k, n)).astype(dtype)
  return [s, u, vt]


def _svd_abstract(x, *, full_matrices=True, compute_uv=True, subset_by_index=None,
                  algorithm=None):
  _check_inexact("svd", x)
  _check_rank2("svd", x)
  m, n = x.shape[-2:]
  batch = x.shape[:-2]
  k = min(m, n)
  if subset_by_index is not None:
    k = subset_by_index[1] - subset_by_index[0]
  s = ShapedArray(batch + (k,), _real_dtype(x.dtype))
  if not compute_uv:
    return [s]
  ucols = m if full_matrices and subset_by_index is None else k
  vrows = n if full_matrices and subset_by_index is None else k
  return [s, ShapedArray(batch + (m, ucols), x.dtype), ShapedArray(batch + (vrows, n), x.dtype)]


svd_p = _linalg_primitive("svd", _svd_impl, _svd_abstract)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
  """ds = Re diag(Uᴴ dA V); dU and dV by the F-matrix formula of the reduced SVD."""
  (x,), (dx,) = primals, tangents
  if subset_by_index is not None:
    raise NotImplementedError("Derivatives not defined for partial SVD")
  s, u, vt = svd_p.bind(x, full_matrices=False, compute_uv=True, subset_by_index=None,
                        algorithm=algorithm)
  if compute_uv and full_matrices and x.shape[-2] != x.shape[-1]:
    raise NotImplementedError(
        "Singular value decomposition JVP not implemented for full matrices")
  dx = _instantiate(dx, x)
  v = _H(vt)
  ds_mat = _matmul(_H(u), _matmul(dx, v))
  ds = _real(_diag(ds_mat))
  if not compute_uv:
    return [s], [ds]
  du, dv = _svd_vector_tangents(x, s, u, v, dx, ds_mat)
  return [s, u, vt], [ds, du, _H(dv)]


def _svd_vector_tangents(x, s, u, v, dx, ds_mat):
  m, n = x.shape[-2:]
  k = s.shape[-1]
  kshape = s.shape + (k,)
  s2 = ew.mul_p.bind(s, s)
  diffs = ew.sub_p.bind(_bcast_row(s2, kshape), _bcast_col(s2, kshape))
  eye = np.asarray(_eye_like(s, kshape), s.dtype)
  f = ew.sub_p.bind(ew.div_p.bind(_full_like(s, 1, kshape), ew.add_p.bind(diffs, eye)), eye)
  f = _as_dtype(f, x.dtype)
  s_c = _as_dtype(s, x.dtype)
  dss = _col_scale(ds_mat, s_c)
  sds = _row_scale(ds_mat, s_c)
  du = _matmul(u, ew.mul_p.bind(f, ew.add_p.bind(dss, _H(dss))))
  dv = _matmul(v, ew.mul_p.bind(f, ew.add_p.bind(sds, _H(sds))))
  s_inv = _as_dtype(_safe_reciprocal(s), x.dtype)
  if x.dtype.kind == "c":
    # The phase gauge: dU alone carries i Im(dS_ii) / s_i (dV none), so that
    # Im(Uᴴ dU - Vᴴ dV)_ii s_i = Im(dS_ii), as a product like V S⁻¹ Uᴴ needs.
    imag = ew.sub_p.bind(ds_mat, _as_dtype(_real(ds_mat), x.dtype))
    du = ew.add_p.bind(du, _matmul(u, _col_scale(
        ew.mul_p.bind(imag, np.asarray(eye, x.dtype)), s_inv)))
  if m > n:
    proj = ew.sub_p.bind(dx, _matmul(u, _matmul(_H(u), dx)))
    du = ew.add_p.bind(du, _col_scale(_matmul(proj, v), s_inv))
  if n > m:
    proj = ew.sub_p.bind(_H(dx), _matmul(v, _matmul(_H(v), _H(dx))))
    dv = ew.add_p.bind(dv, _col_scale(_matmul(proj, u), s_inv))
  return du, dv


def _safe_reciprocal(s):
  zero = ew.eq_p.bind(s, _scalar(s, 0))
  safe = ew.select_n_p.bind(zero, s, _full_like(s, 1))
  return ew.select_n_p.bind(zero, ew.div_p.bind(_full_like(s, 1), safe), _full_like(s, 0))


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
  """(u, s, vh) of the singular value decomposition, or s alone when not compute_uv."""
  out = svd_p.bind(asarg(x), full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                   subset_by_index=None if subset_by_index is None else
                   tuple(int(i) for i in subset_by_index), algorithm=algorithm)
  if compute_uv:
    s, u, vt = out
    return u, s, vt
  return out[0]


# --- rule registration ------------------------------------------------------------------------

def _leading_batcher(prim):
  """Every operand's batch axis goes first: these primitives map over leading dims already."""
  def rule(vals, dims, **params):
    size = batching.mapped_size(vals, dims)
    out = prim.bind(*batching.all_at_front(vals, dims, size), **params)
    return out, ([0] * len(out) if prim.multiple_results else 0)
  return rule


def _triangular_solve_transpose(ct, a, b, **params):
  if ad.is_undefined_primal(a):
    raise NotImplementedError("triangular_solve is not linear in its matrix argument")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  return [None, _triangular_solve_transpose_b(ct, a, b, **params)]


def _tridiagonal_solve_transpose(ct, dl, d, du, b, **params):
  if any(ad.is_undefined_primal(v) for v in (dl, d, du)):
    raise NotImplementedError("tridiagonal_solve is linear only in its right-hand side")
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  return [None, None, None, _tridiagonal_solve_transpose_b(ct, dl, d, du, b, **params)]


def _register_rules():
  ad.jvp_rules[cholesky_p] = _cholesky_jvp
  ad.jvp_rules[eigh_p] = _eigh_jvp
  ad.jvp_rules[eig_p] = _eig_jvp
  ad.jvp_rules[lu_p] = _lu_jvp
  ad.jvp_rules[qr_p] = _qr_jvp
  ad.jvp_rules[svd_p] = _svd_jvp
  ad.jvp_rules[tridiagonal_solve_p] = _tridiagonal_solve_jvp
  ad.defjvp_zero(lu_pivots_to_permutation_p)
  ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a,
             lambda t, ans, a, b, **params: triangular_solve_p.bind(a, t, **params))
  ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
  ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose
  for prim in (cholesky_p, eigh_p, eig_p, lu_p, qr_p, svd_p, triangular_solve_p,
               tridiagonal_solve_p, lu_pivots_to_permutation_p, schur_p, cholesky_update_p,
               symmetric_product_p, householder_product_p):
    batching.primitive_batchers[prim] = _leading_batcher(prim)


_register_rules()


# --- StableHLO lowering (LAPACK custom calls on the CPU; bodies in linalg_lowering.py) ----------

for _p, _rule in ((cholesky_p, linalg_lowering.cholesky_rule), (eigh_p, linalg_lowering.eigh_rule),
                  (lu_p, linalg_lowering.lu_rule), (qr_p, linalg_lowering.qr_rule),
                  (svd_p, linalg_lowering.svd_rule),
                  (lu_pivots_to_permutation_p, linalg_lowering.lu_pivots_to_permutation_rule),
                  (eig_p, linalg_lowering.eig_rule)):
  xla.register(_p, _rule)
# the TPU's (XLA's ops and custom calls; svd's is a jnp composition: numpy/linalg_svd_polar.py)
for _p, _rule in ((cholesky_p, linalg_lowering.cholesky_xla_rule),
                  (eigh_p, linalg_lowering.eigh_xla_rule), (lu_p, linalg_lowering.lu_xla_rule),
                  (qr_p, linalg_lowering.qr_xla_rule)):
  xla.register(_p, _rule, platform="tpu")
xla.register_none(eig_p, "tpu")  # JAX: CPU and GPU only
