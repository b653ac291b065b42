"""`jax.scipy.linalg` matrix constructors (circulant, hankel, pascal, hadamard, dft, ...) and
the solvers built from existing decompositions (expm_frechet, qr_multiply, solve_sylvester)."""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.numpy.util import check_arraylike


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _float(x):
  """x as an array, ints and bools promoted to the default float dtype."""
  jnp = _jnp()
  check_arraylike("companion", x)  # JAX's TypeError for a non-array, not jnp.asarray's
  x = jnp.asarray(x)
  return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.result_type(x.dtype, 1.0))


def _default_float():
  return _jnp().zeros(()).dtype


# --- constructors from vectors ------------------------------------------------------------------

def circulant(c):
  """The circulant matrix whose first column is `c` (batched over leading axes of `c`)."""
  jnp = _jnp()
  check_arraylike("circulant", c)
  c = jnp.atleast_1d(jnp.asarray(c))
  n = c.shape[-1]
  idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
  return c[..., idx]


def hankel(c, r=None):
  """The Hankel matrix with first column `c` and last row `r` (zeros when None)."""
  jnp = _jnp()
  check_arraylike("hankel", c)
  c = jnp.ravel(jnp.asarray(c))
  r = jnp.zeros_like(c) if r is None else jnp.ravel(jnp.asarray(r))
  m, n = c.shape[0], r.shape[0]
  vals = jnp.concatenate([c, r[1:].astype(jnp.result_type(c, r))]).astype(
      jnp.result_type(c, r))
  return vals[np.arange(m)[:, None] + np.arange(n)[None, :]]


def companion(a):
  """The companion matrix of the polynomial with coefficients `a` (highest degree first)."""
  jnp = _jnp()
  a = _float(a)
  if a.ndim != 1 or a.shape[0] < 2:
    raise ValueError(f"companion: expected a 1-D array of at least 2 coefficients, got shape "
                     f"{a.shape}")
  n = a.shape[0] - 1
  first = -a[1:] / a[0]
  return jnp.concatenate([first[None, :], jnp.eye(n - 1, n, dtype=a.dtype)], axis=0)


def convolution_matrix(a, n: int, mode: str = "full"):
  """The matrix A with A @ v == convolve(a, v, mode) for v of length `n`."""
  jnp = _jnp()
  a = jnp.ravel(jnp.asarray(a))
  m = a.shape[0]
  if m == 0:
    raise ValueError("convolution_matrix: len(a) must be at least 1.")
  if n <= 0:
    raise ValueError(f"convolution_matrix: n must be positive, got {n}")
  if mode not in ("full", "same", "valid"):
    raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid', got {mode!r}")
  rows = {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}[mode]
  start = (n + m - 1 - rows) // 2
  i = np.arange(start, start + rows)[:, None] - np.arange(n)[None, :]
  padded = jnp.concatenate([a, jnp.zeros((1,), a.dtype)])
  return padded[np.where((i >= 0) & (i < m), i, m)]


def fiedler(a):
  """The symmetric Fiedler matrix |a_i - a_j|."""
  jnp = _jnp()
  check_arraylike("fiedler", a)
  a = jnp.atleast_1d(jnp.asarray(a))
  return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
  """The pentadiagonal Fiedler companion matrix of the polynomial `a` (highest degree first)."""
  jnp = _jnp()
  a = _float(a)
  if a.ndim != 1:
    raise ValueError(f"fiedler_companion: expected a 1-D array, got shape {a.shape}")
  if a.shape[0] < 3:
    if a.shape[0] == 2:
      return (-a[1] / a[0])[None, None]
    return jnp.zeros((0, 0), a.dtype)
  a = a / a[0]
  n = a.shape[0] - 1
  c = jnp.zeros((n, n), a.dtype)
  c = c.at[np.arange(3, n, 2), np.arange(1, n - 2, 2)].set(1)
  c = c.at[np.arange(2, n, 2), np.arange(1, n - 1, 2)].set(-a[3::2])
  c = c.at[np.arange(0, n - 2, 2), np.arange(2, n, 2)].set(1)
  c = c.at[np.arange(0, n - 1, 2), np.arange(1, n, 2)].set(-a[2::2])
  return c.at[0, 0].set(-a[1]).at[1, 0].set(1)


def leslie(f, s):
  """The Leslie matrix: fecundities `f` on the first row, survival `s` on the subdiagonal."""
  jnp = _jnp()
  f, s = jnp.atleast_1d(jnp.asarray(f)), jnp.atleast_1d(jnp.asarray(s))
  n = f.shape[-1]
  if s.shape[-1] != n - 1:
    raise ValueError(f"leslie: incorrect lengths for f and s: the length of s ({s.shape[-1]}) "
                     f"must be one less than the length of f ({n})")
  dtype = jnp.result_type(f, s, 1.0)
  out = jnp.zeros(f.shape[:-1] + (n, n), dtype)
  out = out.at[..., 0, :].set(f.astype(dtype))
  return out.at[..., np.arange(1, n), np.arange(n - 1)].set(s.astype(dtype))


# --- constructors from a size -------------------------------------------------------------------

def _size(name, n):
  n = int(n)
  if n < 0:
    raise ValueError(f"{name}: n must be non-negative, got {n}")
  return n


def hilbert(n: int):
  """The Hilbert matrix 1 / (i + j + 1)."""
  n = _size("hilbert", n)
  i = np.arange(n)
  return _jnp().asarray(1.0 / (i[:, None] + i[None, :] + 1), _default_float())


def invhilbert(n: int):
  """The exact inverse of the n x n Hilbert matrix (integers, in the default float dtype)."""
  n = _size("invhilbert", n)
  out = np.empty((n, n))
  for i in range(n):
    for j in range(n):
      v = (i + j + 1) * math.comb(n + i, n - j - 1) * math.comb(n + j, n - i - 1) \
          * math.comb(i + j, i) ** 2
      out[i, j] = -v if (i + j) % 2 else v
  return _jnp().asarray(out, _default_float())


def _pascal_lower(n):
  return np.array([[math.comb(i, j) for j in range(n)] for i in range(n)], np.float64)


def pascal(n: int, kind: str | None = None):
  """The Pascal matrix: binomials C(i + j, i) ('symmetric'), or its 'lower'/'upper' factor."""
  n = _size("pascal", n)
  kind = "symmetric" if kind is None else kind
  if kind not in ("symmetric", "lower", "upper"):
    raise ValueError(f"pascal: kind must be 'symmetric', 'lower', or 'upper', got {kind!r}")
  low = _pascal_lower(n)
  out = {"symmetric": low @ low.T, "lower": low, "upper": low.T}[kind]
  return _jnp().asarray(out, _default_float())


def invpascal(n: int, kind: str | None = None):
  """The exact inverse of `pascal(n, kind)`."""
  n = _size("invpascal", n)
  kind = "symmetric" if kind is None else kind
  if kind not in ("symmetric", "lower", "upper"):
    raise ValueError(f"invpascal: kind must be 'symmetric', 'lower', or 'upper', got {kind!r}")
  i = np.arange(n)
  inv_low = _pascal_lower(n) * np.where((i[:, None] - i[None, :]) % 2, -1.0, 1.0)
  out = {"symmetric": inv_low.T @ inv_low, "lower": inv_low, "upper": inv_low.T}[kind]
  return _jnp().asarray(out, _default_float())


def hadamard(n: int, dtype=int):
  """Sylvester's Hadamard matrix of order `n` (a power of 2)."""
  n = int(n)
  if n < 1 or n & (n - 1):
    raise ValueError("n must be an positive a power of 2 integer")
  h = np.ones((1, 1))
  while h.shape[0] < n:
    h = np.block([[h, h], [h, -h]])
  return _jnp().asarray(h, dtype)


def helmert(n: int, full: bool = False):
  """The Helmert matrix: orthonormal rows, the first (kept when `full`) constant."""
  n = _size("helmert", n)
  h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
  d = np.arange(n) * np.arange(1, n + 1)
  h[0], d[0] = 1, n
  h = h / np.sqrt(d)[:, None]
  return _jnp().asarray(h if full else h[1:], _default_float())


def dft(n: int, scale: str | None = None, *, dtype=None):
  """The n-point discrete Fourier transform matrix exp(-2 pi i j k / n), scaled by 1, 1/sqrt(n)
  ('sqrtn') or 1/n ('n')."""
  jnp = _jnp()
  n = _size("dft", n)
  if scale not in (None, "sqrtn", "n"):
    raise ValueError(f"dft: scale must be None, 'sqrtn', or 'n', got {scale!r}")
  jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)
  m = np.exp(-2j * np.pi * jk / max(n, 1))
  if scale == "sqrtn":
    m = m / np.sqrt(n)
  elif scale == "n":
    m = m / n
  dtype = jnp.zeros((), jnp.complex64).dtype if dtype is None else dtype
  return jnp.asarray(m, dtype)


# --- functions of matrices ----------------------------------------------------------------------

def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
  """The Frechet derivative of expm at A in direction E (with expm(A) when `compute_expm`),
  read off the upper-right block of expm([[A, E], [0, A]])."""
  jnp = _jnp()
  from jaxlite._src.scipy.linalg import expm
  if method not in (None, "SPS", "blockEnlarge"):
    raise ValueError(f"expm_frechet: unknown method {method!r}")
  A, E = _float(A), _float(E)
  if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.shape != E.shape:
    raise ValueError(f"expm_frechet: expected A and E square matrices of one shape, got "
                     f"{A.shape} and {E.shape}")
  dtype = jnp.result_type(A, E)
  A, E = A.astype(dtype), E.astype(dtype)
  n = A.shape[-1]
  big = jnp.concatenate([jnp.concatenate([A, E], -1),
                         jnp.concatenate([jnp.zeros_like(A), A], -1)], -2)
  big_exp = expm(big)
  frechet = big_exp[..., :n, n:]
  return (big_exp[..., :n, :n], frechet) if compute_expm else frechet


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
  """(Q @ c, R) for mode 'left' or (c @ Q, R) for 'right', Q and R of the economic QR of a
  (and the column permutation p with pivoting, a[:, p] = Q R)."""
  jnp = _jnp()
  if mode not in ("right", "left"):
    raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
  a, c = _float(a), _float(c)
  dtype = jnp.result_type(a, c)
  a, c = a.astype(dtype), c.astype(dtype)
  onedim = c.ndim == 1
  if onedim:
    c = c[:, None] if mode == "left" else c[None, :]
  m, n = a.shape[-2:]
  k = min(m, n)
  if mode == "left" and c.shape[-2] != k:
    raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                     f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} rows "
                     f"(expected {k}).")
  if mode == "right" and c.shape[-1] != m:
    raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                     f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} columns "
                     f"(expected {m}).")
  from jaxlite._src.lax import linalg as lax_linalg
  q, r, *perm = lax_linalg.qr(a, pivoting=bool(pivoting), full_matrices=False)
  if conjugate:
    q = jnp.conj(q)
  out = q @ c if mode == "left" else c @ q
  return ((out.ravel() if onedim else out), r, *perm)  # with pivoting also p: a[:, p] = q r


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
  """The X with A X + X B = C, from the Kronecker form (I ⊗ A + Bᵀ ⊗ I) vec(X) = vec(C)
  (column-major vec); NaN where that system is singular within `tol`, like JAX."""
  jnp = _jnp()
  if method not in ("schur", "eigen"):
    raise ValueError(f"solve_sylvester: method must be 'schur' or 'eigen', got {method!r}")
  A, B, C = _float(A), _float(B), _float(C)
  dtype = jnp.result_type(A, B, C)
  A, B, C = A.astype(dtype), B.astype(dtype), C.astype(dtype)
  m, n = A.shape[-1], B.shape[-1]
  if A.shape != (m, m) or B.shape != (n, n) or C.shape != (m, n):
    raise ValueError(f"solve_sylvester: expected A (m, m), B (n, n), C (m, n), got {A.shape}, "
                     f"{B.shape}, {C.shape}")
  K = jnp.kron(jnp.eye(n, dtype=dtype), A) + jnp.kron(B.T, jnp.eye(m, dtype=dtype))
  x = jnp.linalg.solve(K, C.T.reshape(-1))
  X = x.reshape(n, m).T
  smallest = jnp.min(jnp.abs(jnp.linalg.eigvals(A)[:, None] + jnp.linalg.eigvals(B)[None, :]))
  return jnp.where(smallest < tol, jnp.nan, X)


# --- real Schur form to complex Schur form -----------------------------------------------------

def _rsf2csf_2d(t, z):
  """One matrix: for m = n-1 ... 1, a 2x2 block left in the real Schur form (a non-negligible
  subdiagonal T[m, m-1]) is triangularised by the Givens rotation built from an eigenvalue of
  the block, applied to T's rows and columns and to Z's columns."""
  from jaxlite._src.numpy import namespace as jnp
  n = t.shape[0]
  eps = float(jnp.finfo(t.dtype).eps)
  cols, rows = jnp.arange(n), jnp.arange(n)[:, None]
  for m in range(n - 1, 0, -1):
    block = t[m - 1:m + 1, m - 1:m + 1]
    mu = jnp.linalg.eigvals(block) - t[m, m]
    r = jnp.sqrt(jnp.abs(mu[0]) ** 2 + jnp.abs(t[m, m - 1]) ** 2).astype(t.dtype)
    r = jnp.where(r == 0, 1, r)
    c, s = mu[0] / r, t[m, m - 1] / r
    g = jnp.stack([jnp.stack([c.conj(), s]), jnp.stack([-s, c])]).astype(t.dtype)
    gh = g.conj().T
    # rows m-1, m of T from column m-1 on; then columns m-1, m of T in rows 0..m; Z's columns
    t_rows = jnp.where(cols >= m - 1, g @ t[m - 1:m + 1], t[m - 1:m + 1])
    t2 = t.at[m - 1:m + 1].set(t_rows)
    t_cols = jnp.where(rows < m + 1, t2[:, m - 1:m + 1] @ gh, t2[:, m - 1:m + 1])
    t2 = t2.at[:, m - 1:m + 1].set(t_cols)
    z2 = z.at[:, m - 1:m + 1].set(z[:, m - 1:m + 1] @ gh)
    rotate = jnp.abs(t[m, m - 1]) > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m]))
    t, z = jnp.where(rotate, t2, t), jnp.where(rotate, z2, z)
    t = t.at[m, m - 1].set(0)
  return t, z


def rsf2csf(T, Z, check_finite: bool = True):
  """(T, Z) in complex Schur form from the real Schur form `T` and its Schur vectors `Z` (as
  returned by `schur(a)`): Z T Z^H is still `a`, and T is upper triangular."""
  from jaxlite._src.numpy import namespace as jnp
  del check_finite  # NumPy-backed: nothing to check beyond what the arithmetic does
  t, z = jnp.asarray(T), jnp.asarray(Z)
  if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
    raise ValueError("Input 'T' must be square.")
  if z.ndim < 2 or z.shape[-1] != z.shape[-2]:
    raise ValueError("Input 'Z' must be square.")
  if t.shape[-1] != z.shape[-1]:
    raise ValueError(f"Input array shapes must match: Z: {z.shape} vs. T: {t.shape}")
  dtype = jnp.result_type(t.dtype, z.dtype, jnp.complex64)
  t, z = t.astype(dtype), z.astype(dtype)
  if t.shape[-1] == 1:
    return t, z
  return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(t, z)
