"""`jax.scipy.ndimage.map_coordinates` (orders 0 and 1, SciPy's boundary modes),
`jax.scipy.interpolate.RegularGridInterpolator` and `jax.scipy.cluster.vq.vq`."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from jaxlite._src.base import tree_util


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


# --- map_coordinates ----------------------------------------------------------------------------

def _fix_constant(i, size):
  return i  # validity is checked separately; out-of-range corners read cval


def _fix_nearest(i, size):
  return _jnp().clip(i, 0, size - 1)


def _fix_wrap(i, size):
  return _jnp().mod(i, size)


def _fix_mirror(i, size):
  """Reflection about the edge samples (period 2(size - 1), edges not repeated)."""
  jnp = _jnp()
  if size == 1:
    return jnp.zeros_like(i)
  period = 2 * (size - 1)
  i = jnp.mod(i, period)
  return jnp.where(i >= size, period - i, i)


def _fix_reflect(i, size):
  """Reflection about the edges between samples (period 2 size, edges repeated)."""
  jnp = _jnp()
  i = jnp.mod(i, 2 * size)
  return jnp.where(i >= size, 2 * size - 1 - i, i)


_INDEX_FIXERS = {"constant": _fix_constant, "nearest": _fix_nearest, "wrap": _fix_wrap,
                 "mirror": _fix_mirror, "reflect": _fix_reflect}


def _nearest(c):
  jnp = _jnp()
  return [(jnp.floor(c + 0.5).astype(jnp.int32), 1)]


def _linear(c):
  jnp = _jnp()
  lower = jnp.floor(c)
  frac = c - lower
  lower = lower.astype(jnp.int32)
  return [(lower, 1 - frac), (lower + 1, frac)]


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
  """`input` sampled at `coordinates` (one array per axis) by nearest (order 0) or linear
  (order 1) interpolation; `mode` says how indices outside the array are mapped."""
  jnp = _jnp()
  arr = jnp.asarray(input)
  coords = [jnp.asarray(c) for c in coordinates]
  if len(coords) != arr.ndim:
    raise ValueError("coordinates must be a sequence of length input.ndim, but "
                     f"{len(coords)} != {arr.ndim}")
  if mode not in _INDEX_FIXERS:
    raise NotImplementedError(f"jax.scipy.ndimage.map_coordinates does not yet support mode "
                              f"{mode}. Currently supported modes are "
                              f"{set(_INDEX_FIXERS)}.")
  if order not in (0, 1):
    raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
  interp = _nearest if order == 0 else _linear
  fixer = _INDEX_FIXERS[mode]
  per_axis = []
  for c, size in zip(coords, arr.shape):
    c = c.astype(jnp.result_type(c.dtype, 1.0)) if not jnp.issubdtype(c.dtype, jnp.inexact) \
        else c
    per_axis.append([(fixer(i, size), (i >= 0) & (i < size), w) for i, w in interp(c)])
  out = 0
  for corner in itertools.product(*per_axis):
    idx = tuple(jnp.clip(i, 0, size - 1) for (i, _, _), size in zip(corner, arr.shape))
    value = arr[idx]
    if mode == "constant":
      valid = functools.reduce(operator.and_, [v for _, v, _ in corner])
      value = jnp.where(valid, value, jnp.asarray(cval, arr.dtype))
    weight = functools.reduce(operator.mul, [w for _, _, w in corner])
    out = out + value * weight
  if jnp.issubdtype(arr.dtype, jnp.integer):
    out = jnp.sign(out) * jnp.floor(jnp.abs(out) + 0.5)  # round half away from zero
  return jnp.asarray(out).astype(arr.dtype)


# --- RegularGridInterpolator --------------------------------------------------------------------

@tree_util.register_pytree_node_class
class RegularGridInterpolator:
  """Linear or nearest interpolation of `values` on the rectilinear grid `points` (one
  increasing 1-D array per axis); points outside get `fill_value` (or extrapolate when None)."""

  def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
    jnp = _jnp()
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    if bounds_error:
      raise NotImplementedError("`bounds_error` takes no effect under JIT")
    values = jnp.asarray(values)
    if len(points) > values.ndim:
      raise ValueError(f"there are {len(points)} point arrays, but values has {values.ndim} "
                       "dimensions")
    if not jnp.issubdtype(values.dtype, jnp.inexact):
      values = values.astype(jnp.result_type(values.dtype, 1.0))
    if fill_value is not None:
      fill_value = jnp.asarray(fill_value)
      if not np.can_cast(np.asarray(fill_value).dtype, values.dtype, casting="same_kind"):
        raise ValueError("fill_value must be either 'None' or of a type compatible with values")
    for i, p in enumerate(points):
      if values.shape[i] != len(p):
        raise ValueError(f"there are {len(p)} points and {values.shape[i]} values in "
                         f"dimension {i}")
    self.grid = tuple(jnp.asarray(p) for p in points)
    self.values, self.method = values, method
    self.bounds_error, self.fill_value = bounds_error, fill_value

  def tree_flatten(self):
    return (self.grid, self.values, self.fill_value), (self.method, self.bounds_error)

  @classmethod
  def tree_unflatten(cls, aux, children):
    obj = cls.__new__(cls)
    obj.grid, obj.values, obj.fill_value = children
    obj.method, obj.bounds_error = aux
    return obj

  def __call__(self, xi, method=None):
    jnp = _jnp()
    method = self.method if method is None else method
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    ndim = len(self.grid)
    if isinstance(xi, (tuple, list)):
      xi = jnp.stack(jnp.broadcast_arrays(*[jnp.asarray(x) for x in xi]), axis=-1)
    xi = jnp.asarray(xi)
    if xi.shape[-1] != ndim:
      raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, but "
                       f"this RegularGridInterpolator has dimension {ndim}")
    batch = xi.shape[:-1]
    xi = xi.reshape(-1, ndim)
    indices, dists, outside = [], [], jnp.zeros(xi.shape[0], bool)
    for k, g in enumerate(self.grid):
      x = xi[:, k]
      i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
      indices.append(i)
      dists.append((x - g[i]) / (g[i + 1] - g[i]))
      outside = outside | (x < g[0]) | (x > g[-1])
    trailing = (slice(None),) * (self.values.ndim - ndim)
    extra = (1,) * (self.values.ndim - ndim)
    if method == "nearest":
      idx = tuple(jnp.where(d <= 0.5, i, i + 1) for i, d in zip(indices, dists))
      result = self.values[idx + trailing]
    else:
      result = 0
      for corner in itertools.product((0, 1), repeat=ndim):
        idx = tuple(i + c for i, c in zip(indices, corner))
        w = functools.reduce(operator.mul, [d if c else 1 - d for d, c in zip(dists, corner)])
        result = result + self.values[idx + trailing] * w.reshape(w.shape + extra)
    if self.fill_value is not None:
      result = jnp.where(outside.reshape(outside.shape + extra), self.fill_value, result)
    return result.reshape(batch + self.values.shape[ndim:])


# --- vq -----------------------------------------------------------------------------------------

def vq(obs, code_book, check_finite: bool = True):
  """Each observation's nearest code (index) in `code_book` and its Euclidean distance."""
  jnp = _jnp()
  obs, code_book = jnp.asarray(obs), jnp.asarray(code_book)
  if obs.ndim != code_book.ndim:
    raise ValueError("Observation and code_book should have the same rank")
  if obs.ndim == 1:
    obs, code_book = obs[:, None], code_book[:, None]
  if obs.ndim != 2:
    raise ValueError("ndim different than 1 or 2 are not supported")
  dtype = jnp.result_type(obs, code_book, 1.0)
  obs, code_book = obs.astype(dtype), code_book.astype(dtype)
  dist = jnp.sqrt(jnp.sum((obs[:, None, :] - code_book[None, :, :]) ** 2, axis=-1))
  code = jnp.argmin(dist, axis=-1)
  return code, jnp.min(dist, axis=-1)
