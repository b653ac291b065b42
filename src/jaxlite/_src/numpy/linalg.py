"""`jnp.linalg`: norms, determinants, solves, inverses and decompositions composed from the
lax.linalg primitives (so grad, jit and vmap go through their rules); names JAX jits stay jitted.
"""
from __future__ import annotations

import functools
import operator
from typing import NamedTuple

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.custom_derivatives import custom_jvp
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import linalg as lax_linalg
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.numpy.util import check_arraylike, promote_dtypes, promote_dtypes_inexact


class EighResult(NamedTuple):
  eigenvalues: core.Array
  eigenvectors: core.Array


class EigResult(NamedTuple):
  eigenvalues: core.Array
  eigenvectors: core.Array


class QRResult(NamedTuple):
  Q: core.Array
  R: core.Array


class SlogdetResult(NamedTuple):
  sign: core.Array
  logabsdet: core.Array


class SVDResult(NamedTuple):
  U: core.Array
  S: core.Array
  Vh: core.Array


def _jnp():
  from jaxlite._src.numpy import namespace as jnp  # deferred: the namespace imports this module
  return jnp


# --- argument handling ------------------------------------------------------------------------

def _asarray(x):
  if isinstance(x, (core.Tracer, core.array_type)):
    return x
  return _jnp().asarray(x)


def _inexact(name, *args):
  """The arguments as arrays of one common inexact dtype (integers become the default float)."""
  check_arraylike(name, *args)
  return [_asarray(a) for a in promote_dtypes_inexact(*[_asarray(a) for a in args])]


def _check_square(name, a):
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to {name} must have shape [..., n, n], got {a.shape}.")


def _check_matrix(name, a):
  if a.ndim < 2:
    raise ValueError(f"{name} requires an array of at least two dimensions, got {a.ndim}.")


def _eps(dtype):
  return float(dtypes.finfo(lax_linalg._real_dtype(np.dtype(dtype))).eps)


# --- small array helpers over primitives --------------------------------------------------------

def _mT(x):
  return lax_linalg._mT(x)


def _H(x):
  return lax_linalg._H(x)


def _broadcast_batch(a, b, core_a: int, core_b: int):
  """a and b with their leading (batch) dims broadcast to one shape."""
  jnp = _jnp()
  batch = np.broadcast_shapes(a.shape[:a.ndim - core_a], b.shape[:b.ndim - core_b])
  return (jnp.broadcast_to(a, batch + a.shape[a.ndim - core_a:]),
          jnp.broadcast_to(b, batch + b.shape[b.ndim - core_b:]))


def _matmul(a, b):
  """Matrix products of stacks of matrices, batch dims broadcast."""
  a, b = _broadcast_batch(a, b, 2, 2)
  return lax_linalg._matmul(a, b)


def _eye(n, dtype, batch=()):
  eye = np.eye(n, dtype=dtype)
  if not batch:
    return _jnp().asarray(eye)
  return _jnp().broadcast_to(_jnp().asarray(eye), tuple(batch) + (n, n))


def _diagonal(x):
  """The main diagonals of a stack of matrices, without multiplying by a mask (inf-safe)."""
  jnp = _jnp()
  n = min(x.shape[-2:])
  mask = np.zeros(x.shape[-2:], bool)
  mask[np.arange(n), np.arange(n)] = True
  picked = jnp.where(mask, x, jnp.zeros((), x.dtype))
  if x.shape[-2] > n:
    picked = _mT(picked)
  return jnp.sum(picked, axis=-2)


def _moveaxis(x, src, dst):
  """x with axes `src` moved to positions `dst` (one transpose)."""
  src = [operator.index(a) % x.ndim for a in src]
  dst = [operator.index(a) % x.ndim for a in dst]
  rest = [i for i in range(x.ndim) if i not in src]
  perm = [None] * x.ndim
  for s_, d in zip(src, dst):
    perm[d] = s_
  it = iter(rest)
  perm = tuple(p if p is not None else next(it) for p in perm)
  if perm == tuple(range(x.ndim)):
    return x
  return shape_prims.transpose_p.bind(x, permutation=perm)


def _real(x):
  return ew.real_p.bind(x) if x.dtype.kind == "c" else x


def _abs_square(x):
  return _real(ew.mul_p.bind(x, ew.conj_p.bind(x))) if x.dtype.kind == "c" else \
      ew.mul_p.bind(x, x)


def _lu_solve(lu_, perm, b, trans: int = 0):
  """Solves A x = b (trans=0) or Aᵀ x = b (trans=1) from P A = L U; b is (..., n, k)."""
  if trans == 0:
    pb = lax_linalg._permute_rows(b, perm)
    y = lax_linalg.triangular_solve(lu_, pb, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu_, y, left_side=True, lower=False)
  y = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True)
  z = lax_linalg.triangular_solve(lu_, y, left_side=True, lower=True, transpose_a=True,
                                  unit_diagonal=True)
  return lax_linalg._permute_rows(z, _inverse_permutation(perm))


def _inverse_permutation(perm):
  jnp = _jnp()
  return jnp.argsort(perm, axis=-1).astype(perm.dtype)


# --- solves and inverses ----------------------------------------------------------------------

@internal_jit(name="solve")
def _solve(a, b):
  _check_square("solve", a)
  lu_, _, perm = lax_linalg.lu(a)
  jnp = _jnp()
  if b.ndim == 1:
    if b.shape[0] != a.shape[-1]:
      raise ValueError(f"solve: b has shape {b.shape}, expected ({a.shape[-1]},) to match "
                       f"a of shape {a.shape}")
    column = jnp.broadcast_to(_as_column(b), a.shape[:-2] + (b.shape[0], 1))
    return _squeeze_last(_lu_solve(lu_, perm, column))
  if b.shape[-2] != a.shape[-1]:
    raise ValueError(f"Invalid shapes for solve: {a.shape}, {b.shape}.")
  batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
  lu_b = jnp.broadcast_to(lu_, batch + lu_.shape[-2:])
  perm_b = jnp.broadcast_to(perm, batch + perm.shape[-1:])
  return _lu_solve(lu_b, perm_b, jnp.broadcast_to(b, batch + b.shape[-2:]))


def _as_column(v):
  return shape_prims.broadcast_in_dim_p.bind(v, shape=v.shape + (1,),
                                             broadcast_dimensions=tuple(range(v.ndim)),
                                             sharding=None)


def _squeeze_last(x):
  return shape_prims.squeeze_p.bind(x, dimensions=(x.ndim - 1,))


def solve(a, b):
  """Solves a x = b; a 1-D b is one right-hand side vector (broadcast over a's batch)."""
  a, b = _inexact("solve", a, b)
  return _solve(a, b)


@internal_jit(name="inv")
def _inv(a):
  _check_square("inv", a)
  return _solve(a, _eye(a.shape[-1], a.dtype, a.shape[:-2]))


def inv(a):
  """The inverse of square matrices (infs or NaNs for singular ones, as LAPACK)."""
  (a,) = _inexact("inv", a)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Argument to inv must have shape [..., n, n], got {a.shape}.")
  return _inv(a)


# --- determinants -----------------------------------------------------------------------------

def _pivot_sign(pivots, dtype):
  """(-1)^(number of row swaps)."""
  jnp = _jnp()
  swaps = jnp.sum(pivots != jnp.arange(pivots.shape[-1], dtype=pivots.dtype), axis=-1)
  odd = (swaps % 2) == 1
  return jnp.where(odd, jnp.asarray(-1, dtype), jnp.asarray(1, dtype))


@internal_jit(name="det")
def _det(a):
  _check_square("_det()", a)
  n = a.shape[-1]
  if n == 2:
    return _det_2x2(a)
  if n == 3:
    return _det_3x3(a)
  return _det_lu(a)


def _det_2x2(a):
  return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
  """The rule of Sarrus, in JAX's order of operations (a polynomial: exact gradients)."""
  return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
          + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
          + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
          - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
          - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
          - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


@custom_jvp
def _det_lu(a):
  jnp = _jnp()
  lu_, pivots, _ = lax_linalg.lu(a)
  return _pivot_sign(pivots, a.dtype) * jnp.prod(_diagonal(lu_), axis=-1)


@_det_lu.defjvp
def _det_lu_jvp(primals, tangents):
  """d det = tr(adj(A) dA), with adj(A) = ±adj(U) L⁻¹ P from P A = L U. adj(U) is built from
  U' (U with zero pivots replaced by 1) so it stays finite: c U'⁻¹ with no zero pivot, the
  rank-one c U'⁻¹e_k e_kᵀU'⁻¹ with one at k, and 0 with more (c = the product of the nonzero
  pivots). So singular matrices of rank n - 1 get their exact (cofactor) gradient."""
  jnp = _jnp()
  (a,), (a_dot,) = primals, tangents
  lu_, pivots, perm = lax_linalg.lu(a)
  u = _diagonal(lu_)
  zero = u == 0
  n_zero = jnp.sum(zero, axis=-1)
  u_safe = jnp.where(zero, jnp.ones((), u.dtype), u)
  c = jnp.prod(u_safe, axis=-1)
  sign = _pivot_sign(pivots, a.dtype)
  upper = lax_linalg.triu(lu_) + _diag_matrix(u_safe - u)
  m = lax_linalg.triangular_solve(lu_, lax_linalg._permute_rows(a_dot, perm), left_side=True,
                                  lower=True, unit_diagonal=True)
  x = lax_linalg.triangular_solve(upper, m, left_side=True, lower=False)
  y = lax_linalg.triangular_solve(upper, x, left_side=False, lower=False)
  full_rank = jnp.sum(_diagonal(x), axis=-1)
  rank_one = jnp.sum(jnp.where(zero, _diagonal(y), jnp.zeros((), y.dtype)), axis=-1)
  trace = jnp.where(n_zero == 0, full_rank, jnp.where(n_zero == 1, rank_one, 0))
  det = sign * jnp.where(n_zero == 0, c, jnp.zeros((), c.dtype))
  return det, sign * c * trace


def _diag_matrix(v):
  """(..., n) -> (..., n, n) with v on the diagonal."""
  jnp = _jnp()
  n = v.shape[-1]
  return jnp.where(np.eye(n, dtype=bool), v[..., None, :], jnp.zeros((), v.dtype))


def det(a):
  """The determinant of square matrices."""
  (a,) = _inexact("det", a)
  return _det(a)


def slogdet(a, *, method: str | None = None) -> SlogdetResult:
  """(sign, log|det|) of square matrices; sign 0 and log|det| -inf when singular."""
  (a,) = _inexact("slogdet", a)
  if method not in (None, "lu"):
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                     "(`None`).")
  _check_square("slogdet", a)
  return _slogdet(a)


@internal_jit(name="slogdet")
def _slogdet(a):
  jnp = _jnp()
  lu_, pivots, _ = lax_linalg.lu(a)
  diag = _diagonal(lu_)
  absd = jnp.abs(diag)
  zero = jnp.any(diag == 0, axis=-1)
  sign = _pivot_sign(pivots, a.dtype) * jnp.prod(diag / jnp.where(absd == 0, 1, absd)
                                                 .astype(a.dtype), axis=-1)
  logdet = jnp.sum(jnp.log(jnp.where(absd == 0, 1, absd)), axis=-1)
  real = lax_linalg._real_dtype(np.dtype(a.dtype))
  sign = jnp.where(zero, jnp.zeros((), a.dtype), sign)
  logdet = jnp.where(zero, jnp.asarray(-np.inf, real), logdet)
  return SlogdetResult(sign, logdet)


# --- decompositions (jitted under JAX's names) ------------------------------------------------

def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
  """The Cholesky factor (lower, or upper = its conjugate transpose)."""
  (a,) = _inexact("cholesky", a)
  _check_square("cholesky", a)
  return _cholesky(a, upper=bool(upper), symmetrize_input=bool(symmetrize_input))


@internal_jit(static_argnames=("upper", "symmetrize_input"), name="cholesky")
def _cholesky(a, *, upper, symmetrize_input):
  L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(L) if upper else L


def qr(a, mode: str = "reduced"):
  """QRResult(Q, R) for mode 'reduced' or 'complete'; R alone for mode 'r'; for 'raw',
  QRResult(reflectors^T, taus) (LAPACK geqrf's packed form, as NumPy and JAX)."""
  (a,) = _inexact("qr", a)
  _check_matrix("qr", a)
  if mode not in ("reduced", "complete", "r", "raw"):
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  if mode == "raw":  # LAPACK's reflectors, transposed as NumPy returns them
    from jaxlite._src.lax.linalg_more import geqrf
    packed, taus = geqrf(a)
    return QRResult(packed.mT, taus)
  return _qr(a, mode=mode)


@internal_jit(static_argnames=("mode",), name="qr")
def _qr(a, *, mode):
  q, r = lax_linalg.qr(a, full_matrices=(mode == "complete"))
  return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
  """SVDResult(U, S, Vh), or S alone; singular values descend."""
  (a,) = _inexact("svd", a)
  if a.ndim < 2:  # JAX's lax.linalg check and class
    raise TypeError(f"Input 0 to svd must have rank at least 2, but got shape={a.shape}")
  subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
  return _svd(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
              subset_by_index=subset)


@internal_jit(static_argnames=("full_matrices", "compute_uv", "subset_by_index"), name="svd")
def _svd(a, *, full_matrices, compute_uv, subset_by_index):
  out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                       subset_by_index=subset_by_index)
  return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
  return svd(x, compute_uv=False)


def eig(a) -> EigResult:
  """Eigenvalues and right eigenvectors of general square matrices (complex)."""
  (a,) = _inexact("eig", a)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a):
  (a,) = _inexact("eigvals", a)
  return _eigvals(a)


@internal_jit(name="eigvals")
def _eigvals(a):
  return lax_linalg.eig(a, compute_left_eigenvectors=False,
                        compute_right_eigenvectors=False)[0]


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
  """Eigenvalues (ascending) and eigenvectors of Hermitian matrices."""
  (a,) = _inexact("eigh", a)
  return _eigh(a, lower=_uplo(UPLO), symmetrize_input=bool(symmetrize_input))


@internal_jit(static_argnames=("lower", "symmetrize_input"), name="eigh")
def _eigh(a, *, lower, symmetrize_input):
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def _uplo(UPLO):
  if UPLO is None or UPLO == "L":
    return True
  if UPLO == "U":
    return False
  raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")


def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):
  (a,) = _inexact("eigvalsh", a)
  return _eigvalsh(a, lower=_uplo(UPLO), symmetrize_input=bool(symmetrize_input))


@internal_jit(static_argnames=("lower", "symmetrize_input"), name="eigvalsh")
def _eigvalsh(a, *, lower, symmetrize_input):
  return lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)[1]


# --- built on the decompositions --------------------------------------------------------------

def _default_rtol(a):
  return max(a.shape[-2:]) * _eps(a.dtype)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
  """The Moore-Penrose pseudo-inverse from the SVD, cutting singular values below rtol·max."""
  (a,) = _inexact("pinv", a)
  _check_matrix("pinv", a)
  if rcond is not None:
    rtol = rcond
  m, n = a.shape[-2:]
  if m == 0 or n == 0:
    return _jnp().zeros(a.shape[:-2] + (n, m), a.dtype)
  return _pinv(a, 10.0 * _default_rtol(a) if rtol is None else rtol, bool(hermitian))


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _pinv(a, rtol, hermitian):
  jnp = _jnp()
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  cutoff = jnp.asarray(rtol)[..., None] * jnp.max(s, axis=-1, keepdims=True)
  keep = s > cutoff.astype(s.dtype)
  s_inv = jnp.where(keep, 1 / jnp.where(keep, s, 1), 0).astype(a.dtype)
  return _matmul(_H(vh), s_inv[..., :, None] * _H(u))




def _pinv_jvp(rtol, hermitian, primals, tangents):
  """dA⁺ = -A⁺ dA A⁺ + A⁺A⁺ᴴ dAᴴ (I - A A⁺) + (I - A⁺A) dAᴴ A⁺ᴴA⁺ (Golub & Pereyra): the
  derivative at fixed rank, finite even where a singular value sits at the cutoff."""
  (a,), (a_dot,) = primals, tangents
  p = _pinv(a, rtol, hermitian)
  m, n = a.shape[-2:]
  p_h, a_dot_h = _H(p), _H(a_dot)
  eye_m = _eye(m, a.dtype, a.shape[:-2])
  eye_n = _eye(n, a.dtype, a.shape[:-2])
  term1 = -_matmul(p, _matmul(a_dot, p))
  term2 = _matmul(_matmul(p, p_h), _matmul(a_dot_h, eye_m - _matmul(a, p)))
  term3 = _matmul(eye_n - _matmul(p, a), _matmul(a_dot_h, _matmul(p_h, p)))
  return p, term1 + term2 + term3


_pinv.defjvp(_pinv_jvp)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
  """(x, residuals, rank, s) of the least-squares solution of a x = b, through the SVD.
  With numpy_resid the residuals are empty, as NumPy's, unless a has full column rank m > n
  (a concrete check: not under jit)."""
  a, b = _inexact("lstsq", a, b)
  if a.ndim != 2:
    raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
  if b.ndim not in (1, 2):
    raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or "
                    "two-dimensional")
  if b.shape[0] != a.shape[0]:  # JAX's message and class
    raise ValueError(f"lstsq: Leading dimensions of input arrays must match, got a of shape "
                     f"{a.shape} and b of shape {b.shape}")
  x, resid, rank, s = _lstsq(a, b, rcond)
  if numpy_resid:
    m, n = a.shape
    if m <= n or int(rank) < n:
      resid = _jnp().asarray([], resid.dtype)
  return x, resid, rank, s


@internal_jit(name="_lstsq")
def _lstsq(a, b, rcond):
  jnp = _jnp()
  vector = b.ndim == 1
  if vector:
    b = b[:, None]
  m, n = a.shape
  eps = _eps(a.dtype)
  rcond = eps * max(m, n) if rcond is None else jnp.where(rcond < 0, eps, rcond)
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  mask = s >= jnp.asarray(rcond, s.dtype) * (s[0] if s.shape[0] else 0)
  rank = jnp.sum(mask).astype(dtypes.default_int_dtype())
  s_inv = jnp.where(mask, 1 / jnp.where(mask, s, 1), 0).astype(a.dtype)
  x = _matmul(_H(vh), s_inv[:, None] * _matmul(_H(u), b))
  resid = jnp.sum(_abs_square(b - _matmul(a, x)), axis=0)
  if vector:
    x = x[:, 0]
  return x, resid, rank, s


def matrix_power(a, n: int):
  """a raised to the integer power n by repeated squaring (n < 0 inverts first)."""
  a = _asarray(a)
  check_arraylike("matrix_power", a)
  _check_square("matrix_power", a)
  try:
    n = operator.index(n)
  except TypeError as err:
    raise TypeError(f"exponent must be an integer, got {n}") from err
  return _matrix_power(a, n)


@internal_jit(static_argnums=(1,), name="matrix_power")
def _matrix_power(a, n):
  jnp = _jnp()
  if n == 0:
    return jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
  if n < 0:
    a = _inv(a)
    n = -n
  result = None
  while n:
    if n & 1:
      result = a if result is None else _matmul(result, a)
    n >>= 1
    if n:
      a = _matmul(a, a)
  return result


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
  """The number of singular values above tol (default: largest · max(m, n) · eps)."""
  (M,) = _inexact("matrix_rank", M)
  return _matrix_rank(M, rtol if tol is None else tol)


@internal_jit(name="matrix_rank")
def _matrix_rank(M, rtol):
  jnp = _jnp()
  if M.ndim < 2:
    return jnp.any(M != 0).astype(np.int32)
  s = lax_linalg.svd(M, full_matrices=False, compute_uv=False)
  if s.shape[-1] == 0:
    return jnp.zeros(s.shape[:-1], np.int32)
  if rtol is None:
    cutoff = jnp.max(s, axis=-1, keepdims=True) * _default_rtol(M)
  else:
    cutoff = jnp.asarray(rtol, s.dtype)[..., None]
  return jnp.sum(s > cutoff, axis=-1).astype(np.int32)


def multi_dot(arrays, *, precision=None):
  """The product of a chain of matrices (first and last may be vectors), in the cheapest
  association order."""
  arrays = [_asarray(a) for a in arrays]
  if len(arrays) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrays)}")
  jnp = _jnp()
  first_vec, last_vec = arrays[0].ndim == 1, arrays[-1].ndim == 1
  if first_vec:
    arrays[0] = arrays[0][None, :]
  if last_vec:
    arrays[-1] = arrays[-1][:, None]
  if any(a.ndim != 2 for a in arrays):
    raise ValueError("multi_dot: all arrays but the first and last must be two-dimensional")
  order = _chain_order([a.shape[0] for a in arrays] + [arrays[-1].shape[1]])
  out = _chain_product(arrays, order, 0, len(arrays) - 1, jnp, precision)
  if first_vec:
    out = out[0]
  if last_vec:
    out = out[..., 0]
  return out


def _chain_order(dims):
  """The classic dynamic program for the cheapest matrix-chain association."""
  n = len(dims) - 1
  cost = [[0] * n for _ in range(n)]
  split = [[0] * n for _ in range(n)]
  for length in range(1, n):
    for i in range(n - length):
      j = i + length
      cost[i][j] = None
      for k in range(i, j):
        c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
        if cost[i][j] is None or c < cost[i][j]:
          cost[i][j], split[i][j] = c, k
  return split


def _chain_product(arrays, split, i, j, jnp, precision):
  if i == j:
    return arrays[i]
  k = split[i][j]
  return jnp.matmul(_chain_product(arrays, split, i, k, jnp, precision),
                    _chain_product(arrays, split, k + 1, j, jnp, precision),
                    precision=precision)


def tensorsolve(a, b, axes=None):
  """Solves tensordot(a, x, x.ndim) = b for x."""
  a, b = _inexact("tensorsolve", a, b)
  if axes is not None:
    axes = [operator.index(ax) % a.ndim for ax in axes]
    rest = [i for i in range(a.ndim) if i not in axes]
    a = shape_prims.transpose_p.bind(a, permutation=tuple(rest + axes))
  out_shape = a.shape[b.ndim:]
  size = int(np.prod(out_shape, dtype=np.int64))
  if int(np.prod(b.shape, dtype=np.int64)) != size:
    raise ValueError(f"shape mismatch: b.shape={b.shape} must match a.shape[:b.ndim]="
                     f"{a.shape[:b.ndim]} with the same total size as {out_shape}")
  x = solve(a.reshape(size, size), b.reshape(size))
  return x.reshape(out_shape)


def tensorinv(a, ind: int = 2):
  """The inverse of a tensor seen as a map from its last dims to its first `ind` dims."""
  (a,) = _inexact("tensorinv", a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer, got {ind}")
  head, tail = a.shape[:ind], a.shape[ind:]
  rows = int(np.prod(head, dtype=np.int64))
  if rows != int(np.prod(tail, dtype=np.int64)):
    raise ValueError(f"tensorinv: product of first {ind} dimensions ({rows}) must equal the "
                     f"product of the remaining dimensions, got shape {a.shape}")
  return inv(a.reshape(rows, rows)).reshape(tail + head)


def cond(x, p=None):
  """The condition number of x in the norm p (singular-value ratio for None, 2 and -2)."""
  (x,) = _inexact("cond", x)
  _check_matrix("cond", x)
  if 0 in x.shape[-2:]:
    raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={x.shape}")
  if p not in (None, 2, -2):
    _check_square("cond", x)
  return _cond(x, p=p)


@internal_jit(static_argnames=("p",), name="cond")
def _cond(x, *, p):
  jnp = _jnp()
  if p is None or p in (2, -2):
    s = lax_linalg.svd(x, compute_uv=False)
    r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
  else:
    r = norm(x, ord=p, axis=(-2, -1)) * norm(_inv(x), ord=p, axis=(-2, -1))
  if p is None or p == 2:
    return r  # 0 / 0 stays NaN here, as JAX has it
  # Singular inputs give inf, not NaN, unless x itself holds NaNs.
  nan_in_x = jnp.any(jnp.isnan(x), axis=(-2, -1))
  return jnp.where(jnp.isnan(r) & ~nan_in_x, jnp.inf, r)


# --- norms ------------------------------------------------------------------------------------

def _norm_axes(x, axis):
  if axis is None:
    return None
  return tuple(_norm_axis(a, x.ndim) for a in (axis if isinstance(axis, (tuple, list))
                                               else (axis,)))


def _norm_axis(axis, ndim):
  """JAX's canonicalize_axis: strict, a 0-d array has no axis 0 (or -1)."""
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


@internal_jit(static_argnames=("ord", "axis", "keepdims"), name="norm")
def norm(x, ord=None, axis=None, keepdims: bool = False):
  """Vector norms (one axis) and matrix norms (two axes) of every order NumPy has."""
  (x,) = _inexact("norm", x)
  axes = _norm_axes(x, axis)
  if axes is None:
    if x.ndim == 1 or (ord is None and x.ndim != 2):
      return _vector_norm(x, ord, tuple(range(x.ndim)), keepdims)
    if x.ndim == 2:
      return _matrix_norm(x, ord, (0, 1), keepdims)
    raise ValueError(f"Improper number of axes for norm: axis={tuple(range(x.ndim))}. Pass "
                     "one axis to compute a vector-norm, or two axes to compute a "
                     "matrix-norm.")
  if len(axes) == 1:
    return _vector_norm(x, ord, axes, keepdims)
  if len(axes) == 2:
    return _matrix_norm(x, ord, axes, keepdims)
  raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to compute "
                   "a vector-norm, or two axes to compute a matrix-norm.")


def _vector_norm(x, ord, axes, keepdims):
  # Staged as JAX stages it: max with `initial=0` (an empty vector's inf-norm is 0), ord=0
  # counts without abs, and a general `ord` raises to literal powers ord and 1/ord.
  jnp = _jnp()
  if ord is None or ord == 2:
    squares = _abs_square(x) if x.dtype.kind in "fc" else jnp.multiply(x, x)
    return jnp.sqrt(jnp.sum(squares, axis=axes, keepdims=keepdims))
  if isinstance(ord, str):
    raise ValueError(f"Invalid order '{ord}' for vector norm.")
  if ord == 0:
    return jnp.sum(x != 0, dtype=_real_dtype(x.dtype), axis=axes, keepdims=keepdims)
  ax = jnp.abs(x)
  if ord == np.inf:
    return jnp.max(ax, axis=axes, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return jnp.min(ax, axis=axes, keepdims=keepdims)
  if ord == 1:
    return jnp.sum(ax, axis=axes, keepdims=keepdims)
  p = np.asarray(ord, ax.dtype)[()]
  p_inv = np.asarray(1.0 / p, ax.dtype)[()]
  return jnp.power(jnp.sum(jnp.power(ax, p), axis=axes, keepdims=keepdims), p_inv)


def _real_dtype(dtype):
  return dtypes.finfo(dtype).dtype  # (jaxlite's: NumPy's finfo may not know bfloat16)


def _matrix_norm(x, ord, axes, keepdims):
  jnp = _jnp()
  row, col = axes
  if row == col:
    if ord in (2, -2, "nuc"):  # JAX's moveaxis to (-2, -1) fails first there: a TypeError
      perm = tuple(a for a in range(x.ndim) if a not in axes) + (row, col)
      raise TypeError("transpose permutation isn't a permutation of operand dimensions, got "
                      f"permutation {perm} for operand shape {x.shape}.")
    raise ValueError(f"duplicate value in 'axis': {axes}")
  if ord is None or ord == "fro":
    return jnp.sqrt(jnp.sum(_abs_square(x), axis=axes, keepdims=keepdims))
  if ord in (1, -1, np.inf, -np.inf):
    # The inner sum drops its axis (unless keepdims), so the outer axis shifts down past it.
    inner, outer = (row, col) if ord in (1, -1) else (col, row)
    if not keepdims and outer > inner:
      outer -= 1
    sums = jnp.sum(jnp.abs(x), axis=inner, keepdims=keepdims)
    if ord in (1, np.inf):
      return jnp.max(sums, axis=outer, keepdims=keepdims, initial=0)
    return jnp.min(sums, axis=outer, keepdims=keepdims)
  if ord in (2, -2, "nuc"):
    moved = _moveaxis(x, (row, col), (-2, -1))
    s = svd(moved, compute_uv=False)
    out = jnp.sum(s, axis=-1) if ord == "nuc" else (
        jnp.max(s, axis=-1, initial=0) if ord == 2 else jnp.min(s, axis=-1))
    if keepdims:
      out = jnp.expand_dims(out, axes)
    return out
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
  """The Array API vector norm: over all elements when axis is None. The input keeps its dtype,
  as in JAX: an integer's squares are summed in the integer type and `sqrt` promotes them."""
  check_arraylike("jnp.linalg.vector_norm", x)
  x = _asarray(x)
  axes = tuple(range(x.ndim)) if axis is None else _norm_axes(x, axis)
  return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
  """The Array API matrix norm over the last two axes."""
  return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# --- Array API helpers ------------------------------------------------------------------------

def outer(x1, x2, /):
  x1, x2 = _asarray(x1), _asarray(x2)
  if x1.ndim != 1 or x2.ndim != 1:
    raise ValueError("Input arrays must be one-dimensional, but they are "
                     f"x1.ndim={x1.ndim} x2.ndim={x2.ndim}")
  return x1[:, None] * x2[None, :]


def cross(x1, x2, /, *, axis=-1):
  """The cross product of 3-vectors along `axis` (the Array API's linalg.cross)."""
  check_arraylike("cross", x1, x2)
  x1, x2 = (_asarray(a) for a in promote_dtypes(_asarray(x1), _asarray(x2)))
  if x1.shape[axis] != 3 or x2.shape[axis] != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                     f"have x1.shape[axis]={x1.shape[axis]} and "
                     f"x2.shape[axis]={x2.shape[axis]}")
  return _cross(x1, x2, axis=operator.index(axis))


@internal_jit(static_argnames=("axis",), name="cross")
def _cross(x1, x2, *, axis):
  jnp = _jnp()
  a = _moveaxis(x1, (axis,), (-1,))
  b = _moveaxis(x2, (axis,), (-1,))
  a, b = jnp.broadcast_arrays(a, b)
  a0, a1, a2 = (a[..., i] for i in range(3))
  b0, b1, b2 = (b[..., i] for i in range(3))
  out = jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
  return _moveaxis(out, (-1,), (axis,))


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
  """Σ conj(x1) x2 along `axis`, batch dims broadcast: one dot_general."""
  from jaxlite._src.lax.dot import dot_general
  jnp = _jnp()
  check_arraylike("vecdot", x1, x2)
  x1, x2 = (_asarray(a) for a in promote_dtypes(_asarray(x1), _asarray(x2)))
  if x1.shape[axis] != x2.shape[axis]:
    raise ValueError("x1 and x2 must have the same size along the specified axis; got "
                     f"x1.shape={x1.shape}, x2.shape={x2.shape}, axis={axis}")
  x1, x2 = jnp.broadcast_arrays(_moveaxis(x1, (axis,), (-1,)), _moveaxis(x2, (axis,), (-1,)))
  if x1.dtype.kind == "c":
    x1 = ew.conj_p.bind(x1)
  nb = x1.ndim - 1
  batch = tuple(range(nb))
  return dot_general(x1, x2, (((nb,), (nb,)), (batch, batch)), precision=precision,
                     preferred_element_type=preferred_element_type)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
  return _jnp().matmul(x1, x2, precision=precision,
                       preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
  return _jnp().tensordot(x1, x2, axes=axes, precision=precision,
                          preferred_element_type=preferred_element_type)


def trace(x, /, *, offset: int = 0, dtype=None):
  return _jnp().trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset: int = 0):
  return _jnp().diagonal(x, offset=offset, axis1=-2, axis2=-1)


def matrix_transpose(x, /):
  return _jnp().matrix_transpose(x)


# svd's TPU lowering (a program over the linalg primitives, in linalg_more) registers on import
from jaxlite._src.lax import linalg_more  # noqa: E402,F401
