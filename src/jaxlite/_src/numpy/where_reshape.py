"""jnp functions that are compositions of lax primitives: where, reshapes, broadcasting.

Names that JAX stages as nested jit eqns (`_where`…) are wrapped with `internal_jit` under the
same names, so printed jaxprs match.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.numpy import creation
from jaxlite._src.numpy.util import (canonicalize_axis, check_arraylike, dtype_weak, promote_dtypes,
                                     promote_shapes, shape_of, broadcast_shapes, ndim_of)

# `nonzero` (one-argument where), registered by setops at its import: it stands on this module.
_above = {}


def register_above(**fns):
  _above.update(fns)


def _broadcast_to_shape(x, shape):
  """Broadcasts `x` (NumPy rules) to `shape` with one broadcast_in_dim eqn."""
  xs = tuple(shape_of(x))
  shape = tuple(shape)
  if xs == shape:
    return x
  nlead = len(shape) - len(xs)
  if nlead < 0 or any(a not in (1, b) for a, b in zip(xs, shape[nlead:])):
    raise ValueError(f"Incompatible shapes for broadcasting: {xs} and requested shape {shape}")
  # Stretched size-1 axes stay in the operand: broadcast_in_dim maps them, as in JAX.
  return shape_prims.broadcast_in_dim_p.bind(
      x, shape=shape, broadcast_dimensions=tuple(range(nlead, len(shape))), sharding=None)


def broadcast_to(array, shape):
  from jaxlite._src.numpy.creation import asarray
  check_arraylike("broadcast_to", array)
  shape = core.canonicalize_shape(shape)
  # PRNG key arrays broadcast as they are (asarray would try to read them as numbers).
  arr = array if isinstance(array, (core.Tracer, core.array_type, core.key_array_type)) else (
      asarray(array))
  return _broadcast_to_shape(arr, shape)


def broadcast_arrays(*args):
  check_arraylike("broadcast_arrays", *args)
  shapes = [shape_of(a) for a in args]
  out = broadcast_shapes(*shapes)
  from jaxlite._src.numpy.creation import asarray
  return [_broadcast_to_shape(asarray(a) if not isinstance(a, core.Tracer) else a, out)
          for a in args]


def _plain_select(condition, x, y) -> bool:
  """Eager arrays that need no promotion or broadcasting: a bool mask and two cases of one
  dtype, weak type and shape (the general path would bind the same select_n)."""
  at = core.array_type
  if type(condition) is not at or type(x) is not at or type(y) is not at:
    return False
  xd = x.dtype  # metadata only: the Array's, whatever its placement
  return (condition.dtype == np.bool_ and xd == y.dtype and x.weak_type == y.weak_type
          and condition.shape == x.shape == y.shape and not (x.weak_type and xd == np.bool_))


@internal_jit
def _where(condition, x, y):
  if _plain_select(condition, x, y):
    return ew.select_n_p.bind(condition, y, x)
  cond_b = condition if dtype_weak(condition)[0] == np.bool_ else \
      ew.ne_p.bind(*promote_dtypes(condition, 0))
  x, y = promote_dtypes(x, y)
  # select_n takes a scalar predicate as is, so JAX broadcasts only the cases then.
  operands = (x, y) if not shape_of(cond_b) else (cond_b, x, y)
  shape = broadcast_shapes(*(shape_of(a) for a in operands))
  if shape_of(cond_b):
    cond_b = _broadcast_to_shape(cond_b, shape)
  x, y = (_broadcast_to_shape(a, shape) for a in (x, y))
  if 0 in shape:
    return x  # nothing to select: JAX stages no select_n
  return ew.select_n_p.bind(cond_b, y, x)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  if x is None and y is None:
    check_arraylike("where", condition)
    return _above["nonzero"](condition, size=size, fill_value=fill_value)
  check_arraylike("where", condition, x, y)  # a lone None is a non-array: JAX's TypeError
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value arguments cannot be used in three-term where "
                     "function.")
  return _where(condition, x, y)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None, out_sharding=None):
  if shape is None:
    shape = newshape
  from jaxlite._src.numpy.creation import asarray
  if not isinstance(a, (core.Tracer, core.array_type)):
    check_arraylike("reshape", a)  # a list is refused, as by JAX's ensure_arraylike
    a = asarray(a)
  if order != "C":
    if order == "A":
      raise NotImplementedError("np.reshape order=A is not implemented.")
    if order != "F":
      raise ValueError(f"Unexpected value for 'order' argument: {order}.")
    # Column-major, as JAX stages it: a reshape reading the axes reversed, to the reversed
    # shape, then the result's axes reversed.
    shape = _compute_newshape(a.shape, shape)
    flipped = shape_prims.reshape_p.bind(a, new_sizes=tuple(shape[::-1]),
                                         dimensions=tuple(range(a.ndim))[::-1], sharding=None)
    return transpose(flipped)
  shape = _compute_newshape(a.shape, shape)
  if a.ndim and tuple(shape) == tuple(a.shape) and out_sharding is None:
    return a  # (as lax.reshape: a 0-d array's reshape to () is an eqn, as JAX stages it)
  if out_sharding is not None:
    from jaxlite._src.sharding.rules import resolve_out_sharding
    out_sharding = resolve_out_sharding(out_sharding, fun_name="reshape")
  return shape_prims.reshape_p.bind(a, new_sizes=shape, dimensions=None, sharding=out_sharding)


def _compute_newshape(old, new):
  if isinstance(new, (int, np.integer)) or (isinstance(new, core.Tracer) and new.ndim == 0):
    new = (new,)
  if isinstance(new, (float, np.floating, str)) or any(
      isinstance(d, (float, np.floating, str)) for d in new):
    shown = list(new) if isinstance(new, (tuple, list)) else [new]
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got {shown}.")
  if any(isinstance(d, core.Tracer) and d.to_concrete_value() is None for d in new):
    # JAX's TypeError (not a ConcretizationTypeError) for a traced size
    shown = list(new) if not isinstance(new, tuple) else new
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{shown}.\nIf using `jit`, try using `static_argnums` or applying `jit` to "
                    "smaller subfunctions.")
  new = [core.concrete_or_error(int, d, "The shape argument of reshape must be concrete.")
         for d in new]
  size = math.prod(old)
  if new.count(-1) > 1:
    raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {tuple(new)}")
  if -1 in new:
    rest = math.prod(d for d in new if d != -1)
    if rest == 0 or size % rest:
      raise TypeError(f"cannot reshape array of shape {tuple(old)} (size {size}) into shape "
                      f"{tuple(new)}")
    new[new.index(-1)] = size // rest
  if math.prod(new) != size:
    raise TypeError(f"cannot reshape array of shape {tuple(old)} (size {size}) into shape "
                    f"{tuple(new)} (size {math.prod(new)})")
  return tuple(new)


def ravel(a, order="C"):
  check_arraylike("ravel", a)
  return reshape(a, (-1,), order)


def transpose(a, axes=None):
  from jaxlite._src.numpy.creation import asarray
  if not isinstance(a, (core.Tracer, core.array_type)):
    check_arraylike("transpose", a)  # a list is refused, as by JAX's ensure_arraylike
    a = asarray(a)
  nd = a.ndim
  axes = tuple(range(nd))[::-1] if axes is None else tuple(canonicalize_axis(i, nd)
                                                            for i in axes)
  if axes == tuple(range(nd)):
    return a
  return shape_prims.transpose_p.bind(a, permutation=axes)


def permute_dims(a, /, axes):
  check_arraylike("permute_dims", a)
  return transpose(a, axes)


def matrix_transpose(x, /):
  check_arraylike("matrix_transpose", x)
  nd = x.ndim
  if nd < 2:
    raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={nd}")
  return transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def squeeze(a, axis=None):
  from jaxlite._src.numpy.creation import asarray
  if not isinstance(a, (core.Tracer, core.array_type)):
    check_arraylike("squeeze", a)  # a list is refused, as by JAX's ensure_arraylike
    a = asarray(a)
  if axis is None:
    dims = tuple(i for i, d in enumerate(a.shape) if d == 1)
  else:
    axis = (axis,) if isinstance(axis, (int, np.integer)) else axis
    dims = tuple(sorted(canonicalize_axis(i, a.ndim) for i in axis))
    for d in dims:
      if a.shape[d] != 1:
        raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={a.shape} and dimensions={dims}")
  if not dims:
    return a
  return shape_prims.squeeze_p.bind(a, dimensions=dims)


def expand_dims(a, axis):
  from jaxlite._src.numpy.creation import asarray
  if not isinstance(a, (core.Tracer, core.array_type)):
    check_arraylike("expand_dims", a)  # a list is refused, as by JAX's ensure_arraylike
    a = asarray(a)
  axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  out_nd = a.ndim + len(axis)
  axes = sorted(canonicalize_axis(i, out_nd) for i in axis)
  if len(set(axes)) != len(axes):
    raise ValueError(f"repeated axis in expand_dims: {axis}")
  shape = list(a.shape)
  for ax in axes:
    shape.insert(ax, 1)
  bdims = tuple(i for i in range(out_nd) if i not in axes)
  return shape_prims.broadcast_in_dim_p.bind(a, shape=tuple(shape), broadcast_dimensions=bdims,
                                             sharding=None)


def shape(a):
  return tuple(shape_of(a))


def ndim(a):
  return ndim_of(a)


def size(a, axis=None):
  s = shape_of(a)
  return math.prod(s) if axis is None else s[axis]


def result_type(*args):
  return dtypes.result_type(*args)


_ = promote_shapes


creation.register_above(reshape=reshape, broadcast_to=broadcast_to, transpose=transpose)
