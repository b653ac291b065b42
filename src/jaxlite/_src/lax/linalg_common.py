"""Shared pieces of the lax.linalg primitives: LAPACK dtype checks, per-matrix NumPy calls, the
lax-level matrix helpers their rules are written in, and tangent helpers.
"""
from __future__ import annotations

import enum

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.interpreters import ad
from jaxlite._src.lax import creation
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.dot import dot_general_p
from jaxlite._src.lax.families import kind_of


_LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
                  np.dtype(np.complex128))


class EigImplementation(enum.Enum):
  """lax.linalg.EigImplementation (every choice computes with LAPACK here)."""
  LAPACK = "lapack"
  MAGMA = "magma"
  CUSOLVER = "cusolver"


class EighImplementation(enum.Enum):
  """lax.linalg.EighImplementation (every choice computes with LAPACK here)."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
  """lax.linalg.SvdAlgorithm (every choice computes with LAPACK here)."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"


# --- shared checks and NumPy helpers ----------------------------------------------------------

def _check_inexact(name: str, aval, position: int = 0) -> None:
  if kind_of(aval.dtype) not in "fc":
    raise TypeError(f"{name} does not accept dtype {dtypes.dtype_name(aval.dtype)} at position "
                    f"{position}. Accepted dtypes at position {position} are subtypes of "
                    "floating, complexfloating.")


def _check_rank2(name: str, aval, position: int = 0) -> None:
  if aval.ndim < 2:
    raise TypeError(f"Input {position} to {name} must have rank at least 2, but got "
                    f"shape={aval.shape}")


def _check_square(name: str, aval) -> None:
  if aval.ndim < 2 or aval.shape[-1] != aval.shape[-2]:
    raise ValueError(f"The input to {name} must be a square matrix. Got shape {aval.shape}.")


def _real_dtype(dtype):
  return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


def _complex_dtype(dtype):
  return dtype if dtype.kind == "c" else np.dtype(np.complex128 if dtype == np.float64
                                                   else np.complex64)


def _lapack(x):
  """`x` as an ndarray of a dtype LAPACK computes in (half floats go through float32)."""
  x = np.asarray(x)
  return x if x.dtype in _LAPACK_DTYPES else x.astype(np.float32)


def _per_matrix(fn, x, fill_shapes):
  """Applies `fn` to each matrix of a batch, filling NaNs where LAPACK reports a failure."""
  batch = x.shape[:-2]
  flat = x.reshape((int(np.prod(batch, dtype=np.int64)),) + x.shape[-2:])
  results = []
  for m in flat:
    try:
      out = fn(m)
    except np.linalg.LinAlgError:
      out = tuple(np.full(s, np.nan, dt) for s, dt in fill_shapes)
    results.append(out if isinstance(out, tuple) else (out,))
  return tuple(np.stack(parts).reshape(batch + parts[0].shape) if parts else
               np.empty(batch + s, dt) for parts, (s, dt) in zip(zip(*results), fill_shapes))


def _nan_on_failure(fn, x, fill_shapes):
  """fn(x) over the whole batch; where LAPACK fails (NaN inputs), NaNs for those matrices."""
  try:
    return fn(x)
  except np.linalg.LinAlgError:
    return _per_matrix(fn, x, fill_shapes)


def _linalg_primitive(name: str, impl, abstract_eval, multiple_results: bool = True):
  p = core.Primitive(name)
  p.multiple_results = multiple_results
  p.def_impl(impl)
  p.def_abstract_eval(abstract_eval)
  return p


# --- lax-level matrix helpers used by the rules and the public functions ------------------------

def _mT(x):
  nd = x.ndim
  return shape_prims.transpose_p.bind(x, permutation=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
  return _conj(_mT(x))


def _conj(x):
  return ew.conj_p.bind(x) if x.dtype.kind == "c" else x


def _real(x):
  return ew.real_p.bind(x) if x.dtype.kind == "c" else x


def _scalar(x, value):
  return np.asarray(value, x.dtype)[()]


def _full_like(x, value, shape=None):
  shape = x.shape if shape is None else shape
  return shape_prims.broadcast_in_dim_p.bind(_scalar(x, value), shape=tuple(shape),
                                             broadcast_dimensions=(), sharding=None)


def _matmul(a, b):
  """(..., m, k) @ (..., k, n) with equal batch dims, as one dot_general."""
  nb = a.ndim - 2
  batch = tuple(range(nb))
  return dot_general_p.bind(a, b, dimension_numbers=(((nb + 1,), (nb,)), (batch, batch)),
                            precision=None, preferred_element_type=None, out_sharding=None)


def _tri_mask(shape, k: int, lower: bool):
  """A boolean (rows >= cols - k) mask (or its upper counterpart) built from iotas like JAX."""
  rows = creation.iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=len(shape) - 2,
                              sharding=None)
  rows = ew.add_p.bind(rows, np.int32(k))
  cols = creation.iota_p.bind(dtype=np.dtype(np.int32), shape=shape, dimension=len(shape) - 1,
                              sharding=None)
  return ew.ge_p.bind(rows, cols) if lower else ew.le_p.bind(rows, cols)


def tril(x, k: int = 0):
  return ew.select_n_p.bind(_tri_mask(x.shape, k, True), _full_like(x, 0), x)


def triu(x, k: int = 0):
  return ew.select_n_p.bind(_tri_mask(x.shape, k, False), _full_like(x, 0), x)


def _eye_like(x, shape=None):
  shape = x.shape if shape is None else tuple(shape)
  return np.broadcast_to(np.eye(shape[-2], shape[-1], dtype=x.dtype), shape)


def _diag(x):
  """The diagonals of a batch of matrices, (..., n, n) -> (..., n)."""
  n = min(x.shape[-2:])
  mask = _eye_like(x, x.shape[:-2] + (x.shape[-2], x.shape[-1]))
  from jaxlite._src.lax.reductions import reduce_sum_p
  picked = ew.mul_p.bind(x, np.asarray(mask, x.dtype))
  if x.shape[-2] > n:
    picked = _mT(picked)
  return reduce_sum_p.bind(picked, axes=(x.ndim - 2,), out_sharding=None)


def _col_scale(x, v):
  """x * v[..., None, :]: scales the columns of x."""
  shape = x.shape
  bv = shape_prims.broadcast_in_dim_p.bind(
      v, shape=shape, broadcast_dimensions=tuple(range(v.ndim - 1)) + (v.ndim,), sharding=None)
  return ew.mul_p.bind(x, bv)


def _row_scale(x, v):
  """x * v[..., :, None]: scales the rows of x."""
  shape = x.shape
  bv = shape_prims.broadcast_in_dim_p.bind(
      v, shape=shape, broadcast_dimensions=tuple(range(v.ndim)), sharding=None)
  return ew.mul_p.bind(x, bv)


def _as_dtype(x, dtype):
  if x.dtype == dtype:
    return x
  return casts.convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def _cholesky_np(x):
  x = _lapack(x)
  try:
    return np.linalg.cholesky(x)
  except np.linalg.LinAlgError:
    n = x.shape[-1]
    return _per_matrix(np.linalg.cholesky, x, [((n, n), x.dtype)])[0]


def symmetrize(x):
  """(x + xᴴ) / 2."""
  return ew.div_p.bind(ew.add_p.bind(x, _H(x)), _scalar(x, 2))


def _solve_triangular_np(t, b, lower: bool, unit: bool = False):
  """t⁻¹ b for triangular t, recursively halved so that the work is matrix products; only the
  `lower` (or upper) triangle of t is read. Zero pivots give infs and NaNs, as LAPACK's trsm."""
  n = t.shape[-1]
  if n <= 16:
    return _substitute(t, b, lower, unit)
  h = n // 2
  if lower:
    x1 = _solve_triangular_np(t[..., :h, :h], b[..., :h, :], lower, unit)
    x2 = _solve_triangular_np(t[..., h:, h:], b[..., h:, :] - t[..., h:, :h] @ x1, lower, unit)
  else:
    x2 = _solve_triangular_np(t[..., h:, h:], b[..., h:, :], lower, unit)
    x1 = _solve_triangular_np(t[..., :h, :h], b[..., :h, :] - t[..., :h, h:] @ x2, lower, unit)
  return np.concatenate([x1, x2], axis=-2)


def _substitute(t, b, lower, unit):
  """Forward (lower) or back (upper) substitution over the rows of a small triangle."""
  n = t.shape[-1]
  x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:],
               np.result_type(t, b))
  for i in (range(n) if lower else range(n - 1, -1, -1)):
    done = slice(0, i) if lower else slice(i + 1, n)
    acc = b[..., i, :] - (t[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
    x[..., i, :] = acc if unit else acc / t[..., i, i, None]
  return x


def _instantiate(t, like):
  """A tangent that may be a symbolic zero, as an array of `like`'s shape."""
  if t is None or type(t) is ad.Zero:
    return _full_like(like, 0)
  return t


def _int_zero(x):
  return ad.Zero.from_primal_value(x)
