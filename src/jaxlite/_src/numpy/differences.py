"""jnp's differences and integrals: diff, ediff1d, gradient, trapezoid, and cross.

Compositions of jnp/lax functions, staged as named internal jits where JAX stages them.
"""
from __future__ import annotations

import builtins

import numpy as np

from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import namespace as lax
from jaxlite._src.numpy import creation, shape_ops
from jaxlite._src.numpy import where_reshape as lnp
from jaxlite._src.numpy import reductions as red
from jaxlite._src.numpy import ufuncs as uf
from jaxlite._src.numpy.util import (
  canonicalize_axis,
  check_arraylike,
  promote_dtypes,
  promote_dtypes_inexact,
)
from jaxlite._src.numpy.elementwise_extra import _arr, _dtype


# ---- differences and integrals ---------------------------------------------------------------

def _slice_axis(a, start, stop, axis):
  n = a.shape[axis]
  start, stop = builtins.max(start % (n + 1) if start < 0 else start, 0), \
      (stop + n if stop < 0 else builtins.min(stop, n))
  return lax.slice_in_dim(a, start, stop, axis=axis)


def _diff_once(a, axis):
  n = a.shape[axis]
  if n == 0:  # a[1:] and a[:-1] are all of an empty axis (JAX elides both slices)
    hi = lo = a
  else:  # a[1:] and a[:-1] along `axis`: static-index slices, printed with strides=None
    axis = axis % a.ndim
    cut = lambda s, e: lax.slice(a, [s if d == axis else 0 for d in range(a.ndim)],
                                 [e if d == axis else a.shape[d] for d in range(a.ndim)])
    hi, lo = cut(1, n), cut(0, n - 1)
  return uf.not_equal(hi, lo) if _dtype(a) == np.bool_ else uf.subtract(hi, lo)


def _along(value, like, axis):
  """`value` (scalar or array) broadcast to `like`'s shape with length-1 `axis` unless it has it."""
  value = _arr(value)
  if value.ndim == 0:
    shape = list(like.shape)
    shape[axis] = 1
    return lnp.broadcast_to(value, tuple(shape))
  return value


@internal_jit(static_argnames=("n", "axis"), name="diff")
def _diff(a, n, axis, prepend, append):
  axis = canonicalize_axis(axis, a.ndim)
  parts = [_along(prepend, a, axis)] if prepend is not None else []
  parts.append(a)
  if append is not None:
    parts.append(_along(append, a, axis))
  if len(parts) > 1:
    a = shape_ops.concatenate(parts, axis=axis)
  for _ in range(n):
    a = _diff_once(a, axis)
  return a


def diff(a, n=1, axis=-1, prepend=None, append=None):
  check_arraylike("diff", a)
  a = _arr(a)
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  if a.ndim == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  if n == 0:
    return a
  return _diff(a, n, axis, prepend, append)


@internal_jit(name="ediff1d")
def _ediff1d(ary, to_end, to_begin):
  ary = lnp.ravel(ary)
  out = _diff_once(ary, 0) if ary.shape[0] else ary
  parts = [lnp.ravel(_arr(to_begin).astype(out.dtype))] if to_begin is not None else []
  parts.append(out)
  if to_end is not None:
    parts.append(lnp.ravel(_arr(to_end).astype(out.dtype)))
  return shape_ops.concatenate(parts) if len(parts) > 1 else out


def ediff1d(ary, to_end=None, to_begin=None):
  check_arraylike("ediff1d", ary)
  return _ediff1d(_arr(ary), to_end, to_begin)


def _gradient_axis(f, h, axis):
  """Second-order central differences inside, first-order at the edges (NumPy's edge_order=1)."""
  n = f.shape[axis]
  if n < 2:
    raise ValueError("Shape of array too small to calculate a numerical gradient, "
                     "at least 2 elements are required.")
  sl = lambda s, e: _slice_axis(f, s, e, axis)
  if _arr(h).ndim == 0:
    first = (sl(1, 2) - sl(0, 1)) / h
    last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
    inner = (sl(2, n) - sl(0, n - 2)) / (2 * h) if n > 2 else None
  else:  # coordinates: NumPy's non-uniform formula
    shape = [1] * f.ndim
    shape[axis] = -1
    dx = lnp.reshape(diff(h), shape)
    first = (sl(1, 2) - sl(0, 1)) / _slice_axis(dx, 0, 1, axis)
    last = (sl(n - 1, n) - sl(n - 2, n - 1)) / _slice_axis(dx, n - 2, n - 1, axis)
    inner = None
    if n > 2:
      d1, d2 = _slice_axis(dx, 0, n - 2, axis), _slice_axis(dx, 1, n - 1, axis)
      a = -d2 / (d1 * (d1 + d2))
      b = (d2 - d1) / (d1 * d2)
      c = d1 / (d2 * (d1 + d2))
      inner = a * sl(0, n - 2) + b * sl(1, n - 1) + c * sl(2, n)
  parts = [first] + ([inner] if inner is not None else []) + [last]
  return shape_ops.concatenate(parts, axis=axis)


@internal_jit(static_argnames=("axis",), name="gradient")
def _gradient(f, spacing, axis):
  return [_gradient_axis(f, h, ax) for h, ax in zip(spacing, axis)]


def gradient(f, *varargs, axis=None, edge_order=None):
  if edge_order is not None:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  check_arraylike("gradient", f)
  (f,) = promote_dtypes_inexact(_arr(f))
  if axis is None:
    axes = tuple(range(f.ndim))
  else:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(canonicalize_axis(ax, f.ndim) for ax in axes)
  if not axes:
    return []
  if not varargs:
    spacing = (1.0,) * len(axes)
  elif len(varargs) == 1:
    spacing = tuple(varargs) * len(axes)
  elif len(varargs) == len(axes):
    spacing = tuple(varargs)
  else:
    raise TypeError("Invalid number of spacing arguments")
  spacing = tuple(s if isinstance(s, (int, float)) else _arr(s) for s in spacing)
  out = _gradient(f, spacing, axes)
  return out[0] if len(axes) == 1 else out


@internal_jit(static_argnames=("axis",), name="trapezoid")
def _trapezoid(y, x, dx, axis):
  y = shape_ops.moveaxis(y, axis, -1)
  if x is not None:
    x = _arr(x)
    if x.ndim == 1:
      dx = diff(x)
    else:
      dx = shape_ops.moveaxis(diff(x, axis=axis), axis, -1)
  return 0.5 * red.sum(dx * (y[..., 1:] + y[..., :-1]), axis=-1)


def trapezoid(y, x=None, dx=1.0, axis=-1):
  check_arraylike("trapezoid", y)
  if x is None:
    (y,) = promote_dtypes_inexact(_arr(y))
  else:
    y, x = promote_dtypes_inexact(_arr(y), _arr(x))
  return _trapezoid(y, x, dx, axis)


@internal_jit(static_argnames=("axisa", "axisb", "axisc", "axis"), name="cross")
def _cross(a, b, axisa, axisb, axisc, axis):
  if axis is not None:
    axisa = axisb = axisc = axis
  a = shape_ops.moveaxis(a, axisa, -1)
  b = shape_ops.moveaxis(b, axisb, -1)
  if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")
  if a.shape[-1] == 2 and b.shape[-1] == 2:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
  a0, a1 = a[..., 0], a[..., 1]
  a2 = a[..., 2] if a.shape[-1] == 3 else creation.zeros_like(a0)
  b0, b1 = b[..., 0], b[..., 1]
  b2 = b[..., 2] if b.shape[-1] == 3 else creation.zeros_like(b0)
  c = shape_ops.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
  return shape_ops.moveaxis(c, -1, axisc)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  check_arraylike("cross", a, b)
  a, b = promote_dtypes(_arr(a), _arr(b))
  return _cross(a, b, axisa, axisb, axisc, axis)
