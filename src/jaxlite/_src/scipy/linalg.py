"""`jax.scipy.linalg`: SciPy's linear algebra names (Cholesky and LU factor/solve pairs,
triangular solves, expm by Padé scaling and squaring, block_diag) over lax.linalg and jnp.linalg.
"""
from __future__ import annotations

import operator

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import linalg as lax_linalg
from jaxlite._src.numpy import linalg as jnp_linalg
from jaxlite._src.numpy.util import check_arraylike, promote_dtypes_inexact


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _inexact(name, *args):
  check_arraylike(name, *args)
  jnp = _jnp()
  return [jnp.asarray(a) for a in promote_dtypes_inexact(*[jnp.asarray(a) for a in args])]


# --- Cholesky ---------------------------------------------------------------------------------

def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """The Cholesky factor: upper (Uᴴ U = a) by default, as SciPy."""
  (a,) = _inexact("cholesky", a)
  return _cholesky(a, lower=bool(lower))


@internal_jit(static_argnames=("lower",), name="_cholesky")
def _cholesky(a, *, lower):
  L = lax_linalg.cholesky(a)
  return L if lower else lax_linalg._H(L)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """(c, lower) for cho_solve."""
  return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
  """Solves a x = b from cho_factor's (c, lower)."""
  c, lower = c_and_lower
  c, b = _inexact("cho_solve", c, b)
  return _cho_solve(c, b, lower=bool(lower))


@internal_jit(static_argnames=("lower",), name="_cho_solve")
def _cho_solve(c, b, *, lower):
  vector = b.ndim == c.ndim - 1
  if vector:
    b = b[..., None]
  if c.shape[-1] != b.shape[-2]:
    raise ValueError(f"Incompatible shapes for cho_solve: {c.shape} and {b.shape}.")
  c, b = jnp_linalg._broadcast_batch(c, b, 2, 2)
  # a = L Lᴴ (lower) or Uᴴ U (upper): two triangular solves.
  y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)
  x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                                  conjugate_a=lower)
  return x[..., 0] if vector else x


# --- triangular and general solves ------------------------------------------------------------

_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
  """Solves op(a) x = b for triangular a; trans 0/'N', 1/'T' or 2/'C'."""
  if trans not in _TRANS:
    raise ValueError(f"Invalid 'trans' value {trans}")
  a, b = _inexact("solve_triangular", a, b)
  if a.ndim >= 2 and b.ndim >= 1 and b.shape[-1 if b.ndim == a.ndim - 1 else -2] != a.shape[-1]:
    raise ValueError(f"solve_triangular: b of shape {b.shape} does not match a of shape "
                     f"{a.shape}: inconsistent size for core dimension 'n' (signature "
                     "'(n,n),(n)->(n)' or '(n,n),(n,k)->(n,k)')")
  return _solve_triangular(a, b, trans=_TRANS[trans], lower=bool(lower),
                           unit_diagonal=bool(unit_diagonal))


@internal_jit(static_argnames=("trans", "lower", "unit_diagonal"), name="_solve_triangular")
def _solve_triangular(a, b, *, trans, lower, unit_diagonal):
  t = trans
  vector = b.ndim == a.ndim - 1
  if vector:
    b = b[..., None]
  a, b = jnp_linalg._broadcast_batch(a, b, 2, 2)
  out = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=t > 0,
                                    conjugate_a=t == 2, unit_diagonal=unit_diagonal)
  return out[..., 0] if vector else out


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
  """Solves a x = b; assume_a 'pos' uses Cholesky, others LU."""
  if assume_a not in ("gen", "sym", "her", "pos"):
    raise ValueError(f"Expected assume_a to be one of {{'gen', 'sym', 'her', 'pos'}}, got "
                     f"{assume_a}.")
  a, b = _inexact("solve", a, b)
  return _solve(a, b, assume_a=assume_a, lower=bool(lower))


@internal_jit(static_argnames=("assume_a", "lower"), name="_solve")
def _solve(a, b, *, assume_a, lower):
  if assume_a == "pos":
    return _cho_solve(_cholesky(a, lower=lower), b, lower=lower)
  vector = b.ndim == a.ndim - 1
  out = jnp_linalg.solve(a, b[..., None] if vector else b)
  return out[..., 0] if vector else out


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
  return jnp_linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
  return jnp_linalg.det(a)


# --- LU ---------------------------------------------------------------------------------------

def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
  """(lu, piv): the packed factors and LAPACK's swap-style pivots."""
  (a,) = _inexact("lu_factor", a)
  return _lu_factor(a)


@internal_jit(name="lu_factor")
def _lu_factor(a):
  lu_, pivots, _ = lax_linalg.lu(a)
  return lu_, pivots


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
  """Solves a x = b (trans 0), aᵀ x = b (1) or aᴴ x = b (2) from lu_factor's result."""
  lu_, piv = lu_and_piv
  lu_, b = _inexact("lu_solve", lu_, b)
  if trans not in (0, 1, 2):
    raise ValueError(f"Invalid 'trans' value {trans}")
  return _lu_solve(lu_, _jnp().asarray(piv), b, trans=trans)


@internal_jit(static_argnames=("trans",), name="lu_solve")
def _lu_solve(lu_, piv, b, *, trans):
  m = lu_.shape[-1]
  perm = lax_linalg.lu_pivots_to_permutation(piv, m)
  vector = b.ndim == 1
  if vector:
    b = b[:, None]
  if b.shape[-2] != m:
    raise ValueError(f"Incompatible shapes in lu_solve: {lu_.shape} and {b.shape}.")
  lu_b, b = jnp_linalg._broadcast_batch(lu_, b, 2, 2)
  perm_b = _jnp().broadcast_to(perm, lu_b.shape[:-1])
  if trans == 2:
    lu_b = lax_linalg._conj(lu_b)
  x = jnp_linalg._lu_solve(lu_b, perm_b, b, trans=0 if trans == 0 else 1)
  return x[..., 0] if vector else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """(p, l, u) with a = p l u, or (p l, u) when permute_l."""
  (a,) = _inexact("lu", a)
  return _lu(a, permute_l=bool(permute_l))


@internal_jit(static_argnames=("permute_l",), name="lu")
def _lu(a, *, permute_l):
  jnp = _jnp()
  lu_, _, perm = lax_linalg.lu(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  l_ = jnp.tril(lu_[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
  u = jnp.triu(lu_[..., :k, :])
  # p is the transpose of the row permutation: a = p l u.
  p = (perm[..., None, :] == jnp.arange(m, dtype=perm.dtype)[:, None]).astype(a.dtype)
  if permute_l:
    return jnp.matmul(p, l_), u
  return p, l_, u


# --- decompositions with SciPy's conventions --------------------------------------------------

def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
  """mode 'full' (complete Q), 'economic' (reduced) or 'r' ((r,)); with pivoting also the
  column permutation p (a[:, p] = q r)."""
  # SciPy's mode='raw' (LAPACK's packed Householder form) is not offered: JAX raises this
  # ValueError for it too.
  if mode not in ("full", "economic", "r"):
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  (a,) = _inexact("qr", a)
  return _qr(a, mode=mode, pivoting=bool(pivoting))


@internal_jit(static_argnames=("mode", "pivoting"), name="_qr")
def _qr(a, *, mode, pivoting):
  out = lax_linalg.qr(a, pivoting=pivoting, full_matrices=(mode in ("full", "r")))
  q, r = out[0], out[1]
  rest = tuple(out[2:])
  return ((r,) if mode == "r" else (q, r)) + rest


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
  if lapack_driver not in ("gesdd", "gesvd"):
    raise ValueError(f"Unsupported lapack_driver '{lapack_driver}'")
  (a,) = _inexact("svd", a)
  return _svd(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))


@internal_jit(static_argnames=("full_matrices", "compute_uv"), name="_svd")
def _svd(a, *, full_matrices, compute_uv):
  out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
  return tuple(out) if compute_uv else out


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
  """(w, v) of a Hermitian matrix (b, the generalized problem, is not supported)."""
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  (a,) = _inexact("eigh", a)
  return _eigh(a, lower=bool(lower), eigvals_only=bool(eigvals_only))


@internal_jit(static_argnames=("lower", "eigvals_only"), name="_eigh")
def _eigh(a, *, lower, eigvals_only):
  v, w = lax_linalg.eigh(a, lower=lower)
  return w if eigvals_only else (w, v)


def schur(a, output: str = "real"):
  """(T, Z) with a = Z T Zᴴ: quasi-triangular real T (output 'real') or triangular complex T."""
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got output={output}.")
  (a,) = _inexact("schur", a)
  if output == "complex" and a.dtype.kind != "c":
    a = a.astype(lax_linalg._complex_dtype(a.dtype))
  return _schur(a)


@internal_jit(name="_schur")
def _schur(a):
  return lax_linalg.schur(a)


def _eig_function(A, fn):
  """V fn(w) V⁻¹ from the eigendecomposition (complex; for diagonalizable A)."""
  jnp = _jnp()
  w, v = lax_linalg.eig(A, compute_left_eigenvectors=False)
  return jnp_linalg.solve(jnp.swapaxes(v, -1, -2),
                          jnp.swapaxes(v * fn(w)[..., None, :], -1, -2)).swapaxes(-1, -2)


def sqrtm(A, blocksize: int = 1):
  """The principal square root of A (complex), through the eigendecomposition."""
  if blocksize > 1:
    raise NotImplementedError("Blocked version is not implemented yet.")
  (A,) = _inexact("sqrtm", A)
  return _eig_function(A, _jnp().sqrt)


def funm(A, func, disp: bool = True):
  """func applied to the eigenvalues of A (complex result)."""
  (A,) = _inexact("funm", A)
  if A.ndim != 2 or A.shape[0] != A.shape[1]:
    raise ValueError("expected square array_like input")
  out = _eig_function(A, func)
  return out if disp else (out, None)


def polar(a, side: str = "right", *, method: str = "svd", eps=None, max_iterations=None):
  """(u, p) with a = u p (side 'right') or a = p u (side 'left'): u unitary, p Hermitian PSD;
  every method computes through the SVD here."""
  if side not in ("right", "left"):
    raise ValueError(f"side={side} was invalid.")
  if method not in ("svd", "qdwh"):
    raise ValueError(f"Unknown polar decomposition method {method}.")
  (a,) = _inexact("polar", a)
  jnp = _jnp()
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  unitary = jnp.matmul(u, vh)
  s = s.astype(a.dtype)
  if side == "right":
    posdef = jnp.matmul(lax_linalg._H(vh) * s[..., None, :], vh)
  else:
    posdef = jnp.matmul(u * s[..., None, :], lax_linalg._H(u))
  return unitary, posdef


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
  """Eigenvalues (and vectors) of the symmetric tridiagonal matrix with diagonal d and
  off-diagonal e."""
  if select == "a":
    lo = hi = None
  elif select == "i":
    if select_range is None:
      raise ValueError("for select='i', select_range must be specified.")
    lo, hi = (operator.index(i) for i in select_range)
    if lo > hi:
      raise ValueError("Got empty index range in select_range.")
    hi += 1
  elif select == "v":
    # As in JAX 0.10.2: the count of eigenvalues in a value range is data-dependent.
    raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented.")
  else:
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
  jnp = _jnp()
  d, e = _inexact("eigh_tridiagonal", d, e)
  n = d.shape[-1]
  full = jnp.diag(d)
  if n > 1:
    full = full + jnp.diag(e[:n - 1], 1) + jnp.diag(jnp.conj(e[:n - 1]), -1)
  v, w = lax_linalg.eigh(full, symmetrize_input=False)
  w, v = w[..., lo:hi], v[..., lo:hi]  # eigh sorts ascending: index i is the i-th smallest
  return w if eigvals_only else (w, v)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """The upper Hessenberg form H = Qᴴ a Q by Householder reflections (and Q when calc_q)."""
  (a,) = _inexact("hessenberg", a)
  if a.ndim != 2 or a.shape[0] != a.shape[1]:
    raise ValueError(f"expected a square matrix, got shape {a.shape}")
  return _hessenberg(a, calc_q=bool(calc_q))


@internal_jit(static_argnames=("calc_q",), name="hessenberg")
def _hessenberg(a, *, calc_q):
  jnp = _jnp()
  n = a.shape[0]
  q = jnp.eye(n, dtype=a.dtype)
  h = a
  rows = np.arange(n)
  for k in range(n - 2):
    below = rows > k  # the entries the reflector acts on: rows k+1 .. n-1 of column k
    x = jnp.where(below, h[:, k], 0)
    alpha = jnp.sqrt(jnp.sum(jnp.abs(x) ** 2))
    pivot = x[k + 1]
    phase = jnp.where(pivot == 0, 1, pivot / jnp.where(pivot == 0, 1, jnp.abs(pivot)))
    v = x + jnp.where(rows == k + 1, phase * alpha, 0)
    norm = jnp.sqrt(jnp.sum(jnp.abs(v) ** 2))
    v = v / jnp.where(norm == 0, 1, norm)
    reflector = jnp.eye(n, dtype=a.dtype) - 2 * jnp.outer(v, jnp.conj(v))
    h = jnp.matmul(reflector, jnp.matmul(h, reflector))
    q = jnp.matmul(q, reflector)
  h = jnp.where(rows[:, None] > rows[None, :] + 1, 0, h)  # exact zeros below the subdiagonal
  return (h, q) if calc_q else h


# --- matrix functions and constructors --------------------------------------------------------

# Padé [13/13] coefficients of exp and its scaling threshold (Higham 2005).
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
  """exp(A) by the [13/13] Padé approximant of A / 2^s and s squarings."""
  (A,) = _inexact("expm", A)
  if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
    raise ValueError(f"expected A to be a square matrix, got shape {A.shape}")
  return _expm(A, max_squarings=int(max_squarings))


@internal_jit(static_argnames=("max_squarings",), name="expm")
def _expm(A, *, max_squarings):
  jnp = _jnp()
  from jaxlite._src.lax.control_flow import fori_loop
  norm1 = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)
  real = norm1.dtype
  s = jnp.maximum(0, jnp.ceil(jnp.log2(norm1 / np.asarray(_THETA13, real))))
  s = jnp.where(jnp.isfinite(s), s, 0).astype(np.int32)
  # One squaring count for a whole batch: the largest, so no member is under-scaled.
  s_all = jnp.max(s) if s.ndim else s
  scaled = A / jnp.power(jnp.asarray(2.0, real), s_all.astype(real)).astype(A.dtype)
  r = _pade13(scaled)
  # A static trip count (a scan, so reverse mode works); steps past s_all leave r alone.
  from jaxlite._src.lax.control_flow import cond
  r = fori_loop(0, max_squarings,
                lambda i, m: cond(i < s_all, lambda m: jnp.matmul(m, m), lambda m: m, m), r)
  return jnp.where(s_all > max_squarings, jnp.nan, r)


def _pade13(A):
  jnp = _jnp()
  b = _PADE13
  n = A.shape[-1]
  eye = jnp.broadcast_to(jnp.eye(n, dtype=A.dtype), A.shape)
  A2 = jnp.matmul(A, A)
  A4 = jnp.matmul(A2, A2)
  A6 = jnp.matmul(A4, A2)
  U = jnp.matmul(A, jnp.matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2)
                 + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
  V = (jnp.matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2)
       + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye)
  return jnp_linalg.solve(V - U, V + U)


def block_diag(*arrs):
  """A block-diagonal matrix from scalars, vectors (one row each) and matrices."""
  jnp = _jnp()
  if not arrs:
    return jnp.zeros((1, 0))
  check_arraylike("block_diag", *arrs)
  return _block_diag(*(jnp.asarray(a) for a in arrs))


@internal_jit(name="block_diag")
def _block_diag(*arrs):
  jnp = _jnp()
  mats = [jnp.atleast_2d(a) for a in arrs]
  if any(m.ndim != 2 for m in mats):
    raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 dimensions,"
                     f" got {arrs} at argument {[m.ndim for m in mats].index(3)}.")
  dtype = jnp.result_type(*mats)
  cols = sum(m.shape[1] for m in mats)
  rows = []
  start = 0
  for m in mats:
    pad = ((0, 0), (start, cols - start - m.shape[1]))
    rows.append(jnp.pad(m.astype(dtype), pad))
    start += m.shape[1]
  return jnp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
  """The Toeplitz matrix with first column c and first row r (r defaults to conj(c))."""
  jnp = _jnp()
  check_arraylike("toeplitz", c)
  c = jnp.ravel(jnp.asarray(c))
  r = jnp.conj(c) if r is None else jnp.ravel(jnp.asarray(r))
  c, r = promote_dtypes_inexact(c, r) if c.dtype != r.dtype else (c, r)
  i = np.arange(c.shape[0])[:, None]
  j = np.arange(r.shape[0])[None, :]
  from_c = jnp.take(c, np.clip(i - j, 0, c.shape[0] - 1))
  from_r = jnp.take(r, np.clip(j - i, 0, r.shape[0] - 1))
  return jnp.where(i >= j, from_c, from_r)


_ = core
