"""jnp's index helpers (diag/tril/triu indices, unravel_index, ravel_multi_index, ix_), selection
and placement (select, piecewise, choose, compress, extract, put, place) and the r_/c_ objects.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import shape as lax_shape
from jaxlite._src.lax.elementwise_functions import _convert_element_type
from jaxlite._src.numpy import indexing, where_reshape as lax_numpy
from jaxlite._src.numpy.util import canonicalize_axis, dtype_weak, promote_dtypes
from jaxlite._src.numpy.shape_ops import _INT, _asarray, concatenate, moveaxis, resize, stack


# --- index helpers -------------------------------------------------------------------------------

def _int_array(x):
  return core.array_from_numpy(np.asarray(x, dtypes.canonicalize_dtype(np.int64)), False)


def diag_indices(n, ndim: int = 2):
  n = core.concrete_or_error(operator.index, n, "'n' argument of jnp.diag_indices()")
  ndim = core.concrete_or_error(operator.index, ndim, "'ndim' argument of jnp.diag_indices()")
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0:
    raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  from jaxlite._src.lax.creation import iota
  return (iota(dtypes.canonicalize_dtype(np.int64), n),) * ndim


def diag_indices_from(arr):
  arr = _asarray(arr)
  if arr.ndim < 2:
    raise ValueError("input array must be at least 2-d")
  if len(set(arr.shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(arr.shape[0], arr.ndim)


def tril_indices(n, k: int = 0, m=None):
  n, k = operator.index(n), operator.index(k)
  return tuple(_int_array(i) for i in np.tril_indices(n, k, m))


def triu_indices(n, k: int = 0, m=None):
  n, k = operator.index(n), operator.index(k)
  return tuple(_int_array(i) for i in np.triu_indices(n, k, m))


def tril_indices_from(arr, k: int = 0):
  arr = _asarray(arr)
  if arr.ndim != 2:
    raise ValueError("input array must be 2-d")
  return tril_indices(arr.shape[0], k, arr.shape[1])


def triu_indices_from(arr, k: int = 0):
  arr = _asarray(arr)
  if arr.ndim != 2:
    raise ValueError("input array must be 2-d")
  return triu_indices(arr.shape[0], k, arr.shape[1])


def unravel_index(indices, shape):
  """Coordinates of flat indices in `shape` (negative indices wrap, then clip, like JAX)."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.sorting import clip
  indices = _asarray(indices)
  shape = core.canonicalize_shape(shape)
  if any(d < 0 for d in shape):
    raise ValueError("unravel_index: shape should be non-negative.")
  if dtype_weak(indices)[0].kind not in "iu":
    raise TypeError("Only integer indices are allowed for unravel_index, got "
                    f"{dtypes.dtype_name(dtype_weak(indices)[0])}")
  size = math.prod(shape)
  flat = lax_numpy.where(indices < 0, indices + size, indices)
  flat = clip(flat, 0, max(size - 1, 0))
  out = []
  for d in reversed(shape):
    out.append(ufuncs.remainder(flat, d) if d else flat)
    flat = ufuncs.floor_divide(flat, d) if d else flat
  return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
  """Flat indices of coordinate arrays in an array of shape `dims`."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.sorting import clip
  dims = core.canonicalize_shape(dims)
  if len(multi_index) != len(dims):
    raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
  if order not in ("C", "F"):
    raise ValueError("only 'C' or 'F' order is permitted")
  index = [_asarray(i) for i in multi_index]
  if any(dtype_weak(i)[0].kind not in "iu" for i in index):
    raise TypeError("only int indices permitted")
  if mode == "raise":
    vals = [np.asarray(core.concrete_or_error(
        None, i, "The error occurred because ravel_multi_index was jit-compiled with "
        "mode='raise'. Use mode='wrap' or mode='clip' instead.") if isinstance(i, core.Tracer)
        else i._host_value()) for i in index]
    if any(np.any((v < 0) | (v >= d)) for v, d in zip(vals, dims)):
      raise ValueError("invalid entry in coordinates array")
  elif mode == "clip":
    index = [clip(i, 0, d - 1) for i, d in zip(index, dims)]
  elif mode == "wrap":
    index = [ufuncs.remainder(i, d) for i, d in zip(index, dims)]
  else:
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
  order_dims = range(len(dims)) if order == "F" else range(len(dims) - 1, -1, -1)
  total, stride = None, 1
  for k in order_dims:
    term = ufuncs.multiply(stride, index[k]) if stride != 1 else index[k]
    total = term if total is None else ufuncs.add(total, term)
    stride *= dims[k]
  return total if total is not None else _int_array(0)


def ix_(*args):
  """Open-mesh index arrays: the i-th array reshaped to lie along axis i."""
  out = []
  n = len(args)
  for i, a in enumerate(args):
    a = _asarray(a)
    if a.ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {a.shape}")
    if a.dtype == np.bool_:
      raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    shape = [1] * n
    shape[i] = a.shape[0]
    out.append(lax_shape.broadcast_in_dim(a, shape, (i,)))
  return tuple(out)


# --- selecting -----------------------------------------------------------------------------------

def select(condlist, choicelist, default=0):
  """Elementwise: the choice of the first true condition, else `default`."""
  from jaxlite._src.numpy.reductions import argmax
  if len(condlist) != len(choicelist):
    raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                     f"{len(choicelist)})")
  if not condlist:
    raise ValueError("condlist must be non-empty")
  choices = promote_dtypes(default, *choicelist)
  conds = lax_numpy.broadcast_arrays(False, *condlist)
  which = argmax(stack([c if dtype_weak(c)[0] == np.bool_ else c.astype(bool) for c in conds]),
                 axis=0)
  return ew.select_n_p.bind(*lax_numpy.broadcast_arrays(which, *choices))


def piecewise(x, condlist, funclist, *args, **kw):
  """NumPy's piecewise: later true conditions win; one extra function gives the default."""
  x = _asarray(x)
  if isinstance(condlist, core.Array) and condlist.ndim == x.ndim or \
      not isinstance(condlist, (list, tuple)) and np.ndim(condlist) == x.ndim:
    condlist = [condlist]
  nc, nf = len(condlist), len(funclist)
  if nf not in (nc, nc + 1):
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; "
                     f"got {nf}")
  dtype = x.dtype

  def value(f):
    out = f(x, *args, **kw) if callable(f) else f
    return lax_numpy.broadcast_to(_convert_element_type(_asarray(out), dtype, weak_type=False),
                                  x.shape)
  out = value(funclist[-1]) if nf == nc + 1 else _convert_element_type(
      lax_numpy.broadcast_to(np.zeros((), dtype)[()], x.shape), dtype, weak_type=False)
  for c, f in zip(condlist, funclist):
    out = lax_numpy.where(_asarray(c).astype(bool), value(f), out)
  return out


def choose(a, choices, out=None, mode: str = "raise"):
  """Elementwise `choices[a]` (modes raise, wrap, clip)."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.sorting import clip
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  a = _asarray(a)
  n = len(choices)
  if mode == "raise":
    val = core.concrete_or_error(
        None, a, "The error occurred because jnp.choose was jit-compiled with mode='raise'. "
        "Use mode='wrap' or mode='clip' instead.") if isinstance(a, core.Tracer) \
        else a._host_value()
    if np.any((np.asarray(val) < 0) | (np.asarray(val) >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    a = ufuncs.remainder(a, n)
  elif mode == "clip":
    a = clip(a, 0, n - 1)
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  choices = promote_dtypes(*choices)
  a = _convert_element_type(a, _INT, weak_type=False)
  return ew.select_n_p.bind(*lax_numpy.broadcast_arrays(a, *choices))


def compress(condition, a, axis: int | None = None, *, size=None, fill_value=0, out=None):
  """The slices of `a` along `axis` where the (concrete) 1-D `condition` is true."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  cond = _asarray(condition)
  if cond.ndim != 1:
    raise ValueError("condition must be a 1D array")
  cond = cond.astype(bool) if cond.dtype != np.bool_ else cond
  arr = _asarray(a)
  if axis is None:
    arr, axis = lax_numpy.ravel(arr), 0
  else:
    axis = canonicalize_axis(axis, arr.ndim)
  arr = moveaxis(arr, axis, 0)
  n = arr.shape[0]
  extra = cond[n:]
  cond = cond[:n]
  arr = arr[:cond.shape[0]]
  if extra.shape[0] and _concrete_any(extra):
    raise ValueError("condition contains entries that are out of bounds")
  if size is None:
    result = indexing.getitem(arr, cond)
  else:
    from jaxlite._src.numpy import setops
    idx = setops.nonzero(cond, size=size, fill_value=n)[0]
    result = indexing.getitem(arr, idx, mode="fill", fill_value=fill_value)
  return moveaxis(result, 0, axis)


def _concrete_any(x) -> bool:
  val = x.to_concrete_value() if isinstance(x, core.Tracer) else x._host_value()
  return val is None or bool(np.any(val))


def extract(condition, arr, *, size=None, fill_value=0):
  return compress(lax_numpy.ravel(_asarray(condition)), lax_numpy.ravel(_asarray(arr)),
                  size=size, fill_value=fill_value)


def put(a, ind, v, mode=None, *, inplace: bool = True):
  """A copy of `a` with flat positions `ind` set to `v` (requires inplace=False, as JAX)."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.sorting import clip
  if inplace:
    raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  arr = _asarray(a)
  ind = lax_numpy.ravel(_asarray(ind))
  v = lax_numpy.ravel(_asarray(v))
  if not arr.size or not ind.size or not v.size:
    return arr
  if v.shape[0] != ind.shape[0]:
    v = resize(v, ind.shape)
  if mode is None:
    scatter_mode = "drop"
  elif mode == "clip":
    ind, scatter_mode = clip(ind, 0, arr.size - 1), "promise_in_bounds"
  elif mode == "wrap":
    ind, scatter_mode = ufuncs.remainder(ind, arr.size), "promise_in_bounds"
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
  return arr.at[unravel_index(ind, arr.shape)].set(v, mode=scatter_mode)


def put_along_axis(arr, indices, values, axis, inplace: bool = True, *, mode=None):
  """A copy of `arr` with `values` put at `indices` along `axis` (requires inplace=False)."""
  from jaxlite._src.lax.creation import broadcasted_iota
  if inplace:
    raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
                     "arrays are immutable. Pass inplace=False to instead return an updated "
                     "array.")
  arr, indices = _asarray(arr), _asarray(indices)
  if axis is None:
    arr_flat = lax_numpy.ravel(arr)
    out = put_along_axis(arr_flat, lax_numpy.ravel(indices), values, 0, inplace=False,
                         mode=mode)
    return lax_numpy.reshape(out, arr.shape)
  axis = canonicalize_axis(axis, arr.ndim)
  if indices.ndim != arr.ndim:
    raise ValueError("indices and arr must have the same number of dimensions; "
                     f"{indices.ndim} vs. {arr.ndim}")
  shape = tuple(np.broadcast_shapes(indices.shape, arr.shape[:axis] + (1,) +
                                    arr.shape[axis + 1:]))
  index = tuple(lax_numpy.broadcast_to(indices, shape) if d == axis
                else broadcasted_iota(_INT, shape, d) for d in range(arr.ndim))
  return arr.at[index].set(values, mode=mode)


def place(arr, mask, vals, *, inplace: bool = True):
  """A copy of `arr` with the masked positions filled from `vals` (cycled), inplace=False."""
  from jaxlite._src.numpy import ufuncs
  from jaxlite._src.numpy.reductions import cumsum
  if inplace:
    raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  arr = _asarray(arr)
  flat = lax_numpy.ravel(arr)
  m = lax_numpy.ravel(_asarray(mask)).astype(bool)
  vals = lax_numpy.ravel(_asarray(vals))
  if not vals.shape[0]:
    return arr
  pos = ufuncs.remainder(cumsum(m.astype(_INT)) - 1, vals.shape[0])
  filled = lax_numpy.where(m, indexing.getitem(vals, pos), flat)
  return lax_numpy.reshape(filled, arr.shape)


# --- r_ and c_ ------------------------------------------------------------------------------------

class _AxisConcatenator:
  """`r_`/`c_`: concatenation by index syntax; slices become ranges (complex steps: linspace)."""

  def __init__(self, axis=0, ndmin=1, trans1d=-1):
    self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

  def __getitem__(self, key):
    from jaxlite._src.numpy.creation import array
    key = key if isinstance(key, tuple) else (key,)
    axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
    if key and isinstance(key[0], str):
      axis, ndmin, trans1d = self._directive(key[0], axis, ndmin, trans1d)
      key = key[1:]
    parts = []
    for item in key:
      if isinstance(item, slice):
        part = self._range(item)
      elif isinstance(item, str):
        raise ValueError("string directive must be placed at the beginning")  # noqa: TRY004
      else:
        part = _asarray(item) if isinstance(item, (core.Array, np.ndarray)) else array(item)
      parts.append(self._ndmin(part, ndmin, trans1d))
    if not parts:
      return array([])
    return concatenate(parts, axis)

  @staticmethod
  def _directive(s, axis, ndmin, trans1d):
    if s in ("r", "c"):
      raise NotImplementedError("jaxlite r_/c_ do not support matrix directives")
    vals = [int(v) for v in s.split(",")]
    axis = vals[0]
    ndmin = vals[1] if len(vals) > 1 else ndmin
    trans1d = vals[2] if len(vals) > 2 else trans1d
    return axis, ndmin, trans1d

  @staticmethod
  def _range(s):
    from jaxlite._src.numpy.creation import arange, linspace
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
      return linspace(start, s.stop, int(abs(step)))
    return arange(start, s.stop, step)

  @staticmethod
  def _ndmin(x, ndmin, trans1d):
    if x.ndim >= ndmin:
      return x
    # NumPy's rule: prepend axes, then move the original axes to start at `trans1d`.
    k2 = ndmin - x.ndim
    x = lax_shape.expand_dims(x, tuple(range(k2)))
    if trans1d != -1:
      k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
      axes = list(range(ndmin))
      x = lax_shape.transpose(x, axes[:k1] + axes[k2:] + axes[k1:k2])
    return x

  def __len__(self):
    return 0


class RClass(_AxisConcatenator):
  def __init__(self):
    super().__init__(0, 1, -1)


class CClass(_AxisConcatenator):
  def __init__(self):
    super().__init__(-1, 2, 0)


r_ = RClass()
c_ = CClass()
