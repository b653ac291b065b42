"""`jax.experimental.sparse`: BCOO and BCSR matrices over jaxlite arrays.

A BCOO holds `data` (nse,) and `indices` (nse, 2) of a 2-D matrix (no batch or dense dimensions:
JAX's `n_batch=0, n_dense=0`, the layout `fromdense` and `from_scipy_sparse` give a matrix); a
BCSR holds `data`, column `indices` and row pointers `indptr`. Their operations are written with
jaxlite's own ops (gathers, `segment_sum`, scatter-add), so jit, vmap, grad and every backend apply
to them as to any jnp code. Padding entries (`fromdense(..., nse=k)` past the nonzeros) have
index `shape` (out of range) and data 0, as JAX's: they drop out of every product and of todense.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import tree_util


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _check_2d(name, shape):
  if len(shape) != 2:
    raise NotImplementedError(
        f"{name}: jaxlite's sparse arrays are 2-D without batch or dense dimensions; got "
        f"shape {tuple(shape)}")


class JAXSparse:
  """The base of BCOO and BCSR (`jax.experimental.sparse.JAXSparse`)."""
  data = indices = shape = None

  dtype = property(lambda self: self.data.dtype)
  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape)))
  nse = property(lambda self: self.data.shape[-1])
  n_batch = 0
  n_dense = 0
  n_sparse = property(lambda self: len(self.shape))
  __array_priority__ = 2000  # `dense @ sparse` reaches the sparse side's __rmatmul__

  def __repr__(self):
    from jaxlite._src.base import dtypes
    dims = ", ".join(map(str, self.shape))
    return f"{type(self).__name__}({dtypes.dtype_name(self.dtype)}[{dims}], nse={self.nse})"

  def __len__(self):
    return self.shape[0]

  def block_until_ready(self):
    for leaf in tree_util.tree_leaves(self):
      leaf.block_until_ready()
    return self

  def __matmul__(self, other):
    if isinstance(other, JAXSparse):
      return NotImplemented
    return _sparse_dense_matmul(self.to_bcoo(), other)

  def __rmatmul__(self, other):
    if isinstance(other, JAXSparse):
      return NotImplemented
    jnp = _jnp()
    other = jnp.asarray(other)
    # x @ A = (A^T @ x^T)^T over x's last axis
    out = _sparse_dense_matmul(self.to_bcoo().transpose(), jnp.swapaxes(other, -1, -2)
                               if other.ndim > 1 else other)
    return jnp.swapaxes(out, -1, -2) if other.ndim > 1 else out


@tree_util.register_pytree_node_class
class BCOO(JAXSparse):
  """A 2-D sparse matrix in coordinate format: `BCOO((data, indices), shape=shape)`."""

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    self.data, self.indices = args
    self.shape = tuple(int(s) for s in shape)
    _check_2d("BCOO", self.shape)
    self.indices_sorted, self.unique_indices = indices_sorted, unique_indices

  def tree_flatten(self):
    return (self.data, self.indices), {"shape": self.shape,
                                       "indices_sorted": self.indices_sorted,
                                       "unique_indices": self.unique_indices}

  @classmethod
  def tree_unflatten(cls, aux, children):
    obj = object.__new__(cls)
    obj.data, obj.indices = children
    obj.shape = aux["shape"]
    obj.indices_sorted, obj.unique_indices = aux["indices_sorted"], aux["unique_indices"]
    return obj

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    """From any scipy.sparse matrix (its COO form, duplicates kept)."""
    if n_dense or n_batch:
      raise NotImplementedError("BCOO.from_scipy_sparse: n_dense and n_batch must be 0")
    jnp = _jnp()
    coo = mat.tocoo()
    idx_dtype = index_dtype or np.int32
    indices = np.stack([coo.row, coo.col], axis=1).astype(idx_dtype)
    return cls((jnp.asarray(coo.data), jnp.asarray(indices)), shape=coo.shape)

  def todense(self):
    return bcoo_todense(self)

  def to_bcoo(self):
    return self

  def transpose(self, axes=None):
    if axes is not None and tuple(axes) != (1, 0):
      if tuple(axes) == (0, 1):
        return self
      raise ValueError(f"BCOO.transpose: axes must be a permutation of (0, 1), got {axes}")
    return BCOO((self.data, self.indices[:, ::-1]), shape=self.shape[::-1])

  T = property(lambda self: self.transpose())

  def sum(self, axis=None):
    return bcoo_todense(self).sum(axis)

  def __neg__(self):
    return BCOO((-self.data, self.indices), shape=self.shape)

  def __mul__(self, other):
    if np.ndim(other) == 0:  # a scalar scales the stored values; other operands: dense product
      return BCOO((self.data * other, self.indices), shape=self.shape)
    return bcoo_todense(self) * other

  __rmul__ = __mul__


@tree_util.register_pytree_node_class
class BCSR(JAXSparse):
  """A 2-D sparse matrix in compressed-row format: `BCSR((data, indices, indptr), shape=...)`."""

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    self.data, self.indices, self.indptr = args
    self.shape = tuple(int(s) for s in shape)
    _check_2d("BCSR", self.shape)
    self.indices_sorted, self.unique_indices = indices_sorted, unique_indices

  def tree_flatten(self):
    return (self.data, self.indices, self.indptr), {"shape": self.shape}

  @classmethod
  def tree_unflatten(cls, aux, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    obj.shape = aux["shape"]
    obj.indices_sorted = obj.unique_indices = False
    return obj

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def from_bcoo(cls, arr: BCOO) -> BCSR:
    """From a BCOO whose entries are in row order (as fromdense makes them)."""
    jnp = _jnp()
    rows = arr.indices[:, 0]
    counts = jnp.zeros(arr.shape[0] + 1, arr.indices.dtype).at[rows + 1].add(1, mode="drop")
    return cls((arr.data, arr.indices[:, 1], jnp.cumsum(counts).astype(arr.indices.dtype)),
               shape=arr.shape)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    jnp = _jnp()
    csr = mat.tocsr()
    idx_dtype = index_dtype or np.int32
    return cls((jnp.asarray(csr.data), jnp.asarray(csr.indices.astype(idx_dtype)),
                jnp.asarray(csr.indptr.astype(idx_dtype))), shape=csr.shape)

  def to_bcoo(self) -> BCOO:
    jnp = _jnp()
    nse = self.data.shape[0]
    # the row of entry k: how many row starts are <= k (padding entries land past the last row)
    rows = jnp.searchsorted(self.indptr[1:], jnp.arange(nse), side="right")
    indices = jnp.stack([rows.astype(self.indices.dtype), self.indices], axis=1)
    return BCOO((self.data, indices), shape=self.shape)

  def todense(self):
    return bcoo_todense(self.to_bcoo())

  def transpose(self, axes=None):
    return self.to_bcoo().transpose(axes)

  T = property(lambda self: self.transpose())


def bcoo_fromdense(mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0) -> BCOO:
  """The nonzeros of `mat` in row-major order; `nse` (required under jit) pads with entries at
  index `shape` holding 0, or keeps the first `nse` nonzeros."""
  if n_dense or n_batch:
    raise NotImplementedError("bcoo_fromdense: n_dense and n_batch must be 0 in jaxlite")
  jnp = _jnp()
  mat = jnp.asarray(mat)
  _check_2d("bcoo_fromdense", mat.shape)
  if nse is None:
    nse = int(jnp.count_nonzero(mat))  # concrete only: JAX's error under jit too
  rows, cols = jnp.nonzero(mat, size=nse, fill_value=mat.shape)
  data = mat.at[rows, cols].get(mode="fill", fill_value=0)
  indices = jnp.stack([rows, cols], axis=1).astype(index_dtype)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_todense(mat: BCOO):
  """The dense matrix: stored values scatter-added at their indices (duplicates add up)."""
  jnp = _jnp()
  out = jnp.zeros(mat.shape, mat.dtype)
  return out.at[mat.indices[:, 0], mat.indices[:, 1]].add(mat.data, mode="drop")


def bcsr_fromdense(mat, *, nse=None, index_dtype=np.int32) -> BCSR:
  return BCSR.from_bcoo(bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype))


def bcsr_todense(mat: BCSR):
  return mat.todense()


def fromdense(mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0) -> BCOO:
  return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                        n_batch=n_batch)


def todense(arr):
  """A sparse array's dense form; a dense array is returned as it is."""
  return arr.todense() if isinstance(arr, JAXSparse) else arr


def _sparse_dense_matmul(mat: BCOO, other):
  """mat @ other for a 2-D BCOO and a dense vector or stack of matrices (numpy matmul's
  broadcasting over other's leading axes): gather other's rows at the column indices, scale
  by the data, and sum into the output rows."""
  from jaxlite._src.libs.ops import segment_sum
  jnp = _jnp()
  other = jnp.asarray(other)
  rows, cols = mat.indices[:, 0], mat.indices[:, 1]
  if other.ndim == 0:
    raise TypeError("matmul: a scalar operand is not allowed; use *")
  if other.shape[-2 if other.ndim > 1 else 0] != mat.shape[1]:
    k = other.shape[-2 if other.ndim > 1 else 0]  # JAX's message (its product is a dot_general)
    raise TypeError("dot_general requires contracting dimensions to have the same shape, got "
                    f"({mat.shape[1]},) and ({k},).")
  dtype = jnp.result_type(mat.dtype, other.dtype)
  if other.ndim == 1:
    terms = mat.data.astype(dtype) * other.astype(dtype).at[cols].get(mode="fill",
                                                                      fill_value=0)
    return segment_sum(terms, rows, num_segments=mat.shape[0])
  moved = jnp.moveaxis(other.astype(dtype), -2, 0)  # (m, ..., k)
  gathered = moved.at[cols].get(mode="fill", fill_value=0)
  terms = gathered * mat.data.astype(dtype).reshape((-1,) + (1,) * (moved.ndim - 1))
  out = segment_sum(terms, rows, num_segments=mat.shape[0])  # (n, ..., k)
  return jnp.moveaxis(out, 0, -2)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None):
  """`lhs . rhs` where one side is a 2-D BCOO, for the contractions that are matrix products
  (lhs's last axis with rhs's first, no batch axes); others raise NotImplementedError."""
  (lc, rc), (lb, rb) = dimension_numbers
  if lb or rb or len(lc) != 1:
    raise NotImplementedError("bcoo_dot_general: jaxlite supports one contracting dimension "
                              "and no batch dimensions")
  jnp = _jnp()
  if isinstance(lhs, BCOO) and not isinstance(rhs, JAXSparse):
    mat = lhs if tuple(lc) == (1,) else lhs.transpose()
    rhs = jnp.moveaxis(jnp.asarray(rhs), rc[0], 0)
    out = _sparse_dense_matmul(mat, rhs.reshape(rhs.shape[0], -1) if rhs.ndim > 1 else rhs)
    return out.reshape((mat.shape[0],) + rhs.shape[1:])
  if isinstance(rhs, BCOO) and not isinstance(lhs, JAXSparse):
    lhs = jnp.moveaxis(jnp.asarray(lhs), lc[0], -1)
    mat = rhs if tuple(rc) == (0,) else rhs.transpose()
    flat = lhs.reshape(-1, lhs.shape[-1])
    out = _sparse_dense_matmul(mat.transpose(), flat.T).T
    return out.reshape(lhs.shape[:-1] + (mat.shape[1],))
  raise NotImplementedError("bcoo_dot_general: one dense and one BCOO operand")
