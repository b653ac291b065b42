"""jnp's index grids (mgrid, ogrid, s_), diagonal/mask/trim helpers, printing and NumPy file I/O
wrappers, and scalar type aliases."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.numpy import creation, scalar_types, shape_ops, sorting
from jaxlite._src.numpy import where_reshape as lnp
from jaxlite._src.numpy.util import check_arraylike, promote_dtypes


def _arr(x):
  return creation.asarray(x)


# ---- arrays and indices ---------------------------------------------------------------------

def diagflat(v, k=0):
  """One scatter into the flattened square, as JAX (no `_diag` jit)."""
  check_arraylike("diagflat", v)
  v = lnp.ravel(_arr(v))
  n = v.shape[0] + abs(k)
  offset = k if k >= 0 else -k * n
  idx = creation.arange(v.shape[0]) * (n + 1) + offset
  return creation.zeros(n * n, v.dtype).at[idx].set(v).reshape(n, n)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  check_arraylike("fill_diagonal", a, val)
  a = _arr(a)
  if a.ndim < 2:
    raise ValueError("array must be at least 2-d")
  if a.ndim > 2 and not all(n == a.shape[0] for n in a.shape[1:]):
    raise ValueError("All dimensions of input must be of equal length")
  n = min(a.shape)
  idx = creation.arange(n)
  val = lnp.ravel(_arr(val).astype(a.dtype))
  val = shape_ops.tile(val, -(-n // max(val.shape[0], 1)))[:n] if val.shape[0] else val
  return a.at[(idx,) * a.ndim].set(val)


def mask_indices(n, mask_func, k=0, *, size=None):
  from jaxlite._src.numpy.setops import nonzero
  return nonzero(mask_func(creation.ones((n, n)), k), size=size)


def trim_zeros(filt, trim="fb"):
  check_arraylike("trim_zeros", filt)
  filt = _arr(filt)
  if filt.ndim != 1:
    raise TypeError(f"trim_zeros requires 1D input; got {filt.ndim=}")
  nz = np.flatnonzero(np.asarray(filt) != 0)  # concrete, like JAX
  if nz.size == 0:
    return filt[:0]
  start = nz[0] if "f" in trim.lower() else 0
  end = nz[-1] + 1 if "b" in trim.lower() else filt.shape[0]
  return filt[int(start):int(end)]


def sort_complex(a):
  check_arraylike("sort_complex", a)
  return _sort_complex(_arr(a))


@internal_jit(name="sort_complex")
def _sort_complex(a):
  a = sorting.sort(a)
  dt = dtypes.canonicalize_dtype(np.result_type(a.dtype, np.complex64))
  return a.astype(dt)


class _IndexGrid:
  def __init__(self, sparse):
    self.sparse = sparse

  def __getitem__(self, key):
    single = isinstance(key, slice)
    keys = (key,) if single else tuple(key)
    axes = []
    for s in keys:
      start = 0 if s.start is None else s.start
      step = 1 if s.step is None else s.step
      if isinstance(step, complex):
        axes.append(creation.linspace(start, s.stop, int(abs(step))))
      else:
        axes.append(creation.arange(start, s.stop, step))
    if single:
      return axes[0]
    axes = promote_dtypes(*axes)
    grids = creation.meshgrid(*axes, indexing="ij", sparse=self.sparse)
    return list(grids) if self.sparse else shape_ops.stack(grids, 0)


mgrid = _IndexGrid(sparse=False)
ogrid = _IndexGrid(sparse=True)
s_ = np.s_
index_exp = np.index_exp


def einsum_path(subscripts, *operands, optimize="auto"):
  """NumPy's contraction path on stand-in arrays of the operands' shapes (JAX uses opt_einsum)."""
  stand_ins = [np.empty(np.shape(o), np.float32) for o in operands]
  if optimize is True or optimize == "auto":
    optimize = "greedy"
  return np.einsum_path(subscripts, *stand_ins, optimize=optimize)


# ---- printing and files -----------------------------------------------------------------------

def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
  return np.array_repr(arr, max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
  return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions
save = np.save
savez = np.savez


def load(file, *args, **kwargs):
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == np.object_:
      raise ValueError("object arrays cannot be loaded when allow_pickle=False")
    # NumPy saves bfloat16 (an ml_dtypes type it does not know) as 2-byte void: JAX's load
    # reads it back as bfloat16 (equinox's tree_deserialise_leaves relies on it)
    if out.dtype == np.dtype("V2") and dtypes.load_ml_dtypes():
      out = out.view(dtypes.bfloat16)
    try:
      return creation.asarray(out)
    except TypeError:  # a dtype JAX arrays cannot hold: NumPy's array, as JAX returns it
      return out
  return out


# ---- scalar type aliases ----------------------------------------------------------------------

single = scalar_types.float32
double = scalar_types.float64
csingle = scalar_types.complex64
cdouble = scalar_types.complex128
character = np.character
flexible = np.flexible
object_ = np.object_
