"""Array creation: array/asarray, zeros/ones/full and their *_like forms, arange, eye.

Concrete inputs become Arrays right away (a copy, like JAX); traced inputs stay traced, and
filled arrays are a `broadcast_in_dim` of a scalar so that jaxprs match JAX's.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src import core
from jaxlite._src import dtypes
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.lax import check_python_int
from jaxlite._src.numpy.util import dtype_weak, scalar_to_dtype

_PY = (int, float, complex, bool)


def _leaf_dtype_weak(x):
  """(dtype, weak) that NumPy-style nesting of `x` contributes."""
  if isinstance(x, (list, tuple)):
    if not x:
      return dtypes.default_float_dtype(), False
    sigs = {_leaf_dtype_weak(e) for e in x}
    d, w = dtypes.promote_signature(tuple(sigs)) if len(sigs) > 1 else next(iter(sigs))
    return d, False
  return dtype_weak(x)


def _contains_tracer(x) -> bool:
  if isinstance(x, (list, tuple)):
    return any(_contains_tracer(e) for e in x)
  return isinstance(x, core.Tracer)


def _check_int_range(x, dtype):
  if isinstance(x, (list, tuple)):
    for e in x:
      _check_int_range(e, dtype)
  elif type(x) is int and dtype.kind in "iu":
    check_python_int(x, dtype)


def array(object, dtype=None, copy: bool = True, order=None, ndmin: int = 0, *, device=None):
  """jnp.array: NumPy-style construction with JAX's dtype and weak-type rules."""
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "array")
  if hasattr(object, "__jax_array__"):
    object = object.__jax_array__()
  t = type(object)
  if t is core.array_type or isinstance(object, core.Tracer):
    out = object if dtype is None else _cast(object, dtype)
    if dtype is None and t is core.array_type and copy:
      out = core.array_from_numpy(object._value, object.weak_type)
  elif isinstance(object, (list, tuple)) and _contains_tracer(object):
    from jaxlite._src.numpy.lax_numpy import stack
    out = stack([array(e) for e in object])
    if dtype is not None:
      out = _cast(out, dtype)
    else:
      out = _strong(out)
  else:
    out = _from_concrete(object, dtype)
  if ndmin > out.ndim:
    from jaxlite._src.numpy.lax_numpy import reshape
    out = reshape(out, (1,) * (ndmin - out.ndim) + tuple(out.shape))
  return out


def _strong(x):
  d, w = dtype_weak(x)
  return ew.convert_element_type_p.bind(x, new_dtype=d, weak_type=False) if w else x


def _cast(x, dtype):
  d, w = dtype_weak(x)
  if d == dtype and not w:
    return x
  return ew.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)


def _from_concrete(obj, dtype):
  t = type(obj)
  if t in _PY:
    d = dtypes.python_scalar_dtype(obj)
    weak = t is not bool and dtype is None
    target = dtype or d
    if t is int:
      check_python_int(obj, target if target.kind in "iu" else dtypes.default_int_dtype())
    val = ew.convert_value(np.asarray(obj), target) if t is not int or target.kind not in "iu" \
        else np.asarray(obj, target)
    return core.array_from_numpy(np.asarray(val), weak)
  if isinstance(obj, (list, tuple)):
    d, _ = _leaf_dtype_weak(obj)
    target = dtype or d
    _check_int_range(obj, target)
    vals = _nested_values(obj)
    val = np.array(vals)
    if val.dtype == object:
      raise TypeError(f"Cannot convert {obj!r} to a JAX array: inhomogeneous or "
                      "non-numeric values")
    return core.array_from_numpy(ew.convert_value(val, target), False)
  if isinstance(obj, (np.ndarray, np.generic)):
    if obj.dtype == object:
      raise TypeError(f"Cannot convert object array {obj!r} to a JAX array")
    target = dtype or dtypes.canonicalize_dtype(obj.dtype)
    return core.array_from_numpy(np.array(ew.convert_value(np.asarray(obj), target)), False)
  if t in dtypes.typed_scalar_types:
    return core.array_from_numpy(np.asarray(obj, dtype or obj.dtype), dtype is None)
  if hasattr(obj, "__array__"):
    return _from_concrete(np.asarray(obj), dtype)
  raise TypeError(f"Value {obj!r} of type {type(obj)} is not a valid JAX array-like")


def _nested_values(x):
  if isinstance(x, (list, tuple)):
    return [_nested_values(e) for e in x]
  if type(x) is core.array_type:
    return x._value
  return x


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "asarray")
  t = type(a)
  if t is core.array_type and (dtype is None or a._value.dtype == dtype):
    if dtype is not None and a.weak_type:
      return core.array_from_numpy(a._value, False)
    return a
  return array(a, dtype=dtype, copy=False)


def _fill_value(value, dtype, weak):
  if type(value) in _PY:
    return scalar_to_dtype(value, dtype, weak)
  d, w = dtype_weak(value)
  if d == dtype and w == weak:
    return value
  return ew.convert_element_type_p.bind(asarray(value), new_dtype=dtype, weak_type=weak)


def full(shape, fill_value, dtype=None, *, device=None):
  from jaxlite._src.numpy.lax_numpy import broadcast_to
  shape = _shape_arg(shape)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "full")
    weak = False
  else:
    dtype, weak = dtype_weak(fill_value)
  fill = _fill_value(fill_value, dtype, weak)
  if np.ndim(fill) if not isinstance(fill, core.Tracer) else fill.ndim:
    return broadcast_to(fill, shape)
  return _broadcast_scalar(fill, shape)


def _broadcast_scalar(x, shape):
  if core.current_trace() is core.eval_trace:
    d, w = dtype_weak(x)
    v = x._value if type(x) is core.array_type else x
    return core.array_from_numpy(np.full(shape, v, dtype=d), w)
  return shape_prims.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=(),
                                             sharding=None)


def _shape_arg(shape):
  return core.canonicalize_shape(shape)


def zeros(shape, dtype=None, *, device=None):
  dtype = dtypes.check_user_dtype(dtype, "zeros") if dtype is not None else \
      dtypes.default_float_dtype()
  shape = _shape_arg(shape)
  if core.current_trace() is core.eval_trace:
    return core.array_from_numpy(np.zeros(shape, dtype), False)
  return _broadcast_scalar(np.zeros((), dtype)[()], shape)


def ones(shape, dtype=None, *, device=None):
  dtype = dtypes.check_user_dtype(dtype, "ones") if dtype is not None else \
      dtypes.default_float_dtype()
  shape = _shape_arg(shape)
  if core.current_trace() is core.eval_trace:
    return core.array_from_numpy(np.ones(shape, dtype), False)
  return _broadcast_scalar(np.ones((), dtype)[()], shape)


def empty(shape, dtype=None, *, device=None):
  return zeros(shape, dtype)


def _like(x, dtype, shape):
  d, w = dtype_weak(x)
  if dtype is not None:
    d, w = dtypes.check_user_dtype(dtype), False
  from jaxlite._src.numpy.util import shape_of
  return d, w, shape_of(x) if shape is None else _shape_arg(shape)


def zeros_like(a, dtype=None, shape=None, *, device=None):
  d, w, s = _like(a, dtype, shape)
  return _broadcast_scalar(_scalar(0, d, w), s)


def ones_like(a, dtype=None, shape=None, *, device=None):
  d, w, s = _like(a, dtype, shape)
  return _broadcast_scalar(_scalar(1, d, w), s)


def empty_like(a, dtype=None, shape=None, *, device=None):
  return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
  d, w, s = _like(a, dtype, shape)
  if dtype is None:
    w = w and dtype_weak(fill_value)[1]
  fill = _fill_value(fill_value, d, w)
  if (fill.ndim if isinstance(fill, core.Tracer) else np.ndim(fill)):
    from jaxlite._src.numpy.lax_numpy import broadcast_to
    return broadcast_to(fill, s)
  return _broadcast_scalar(fill, s)


def _scalar(v, dtype, weak):
  if weak:
    return scalar_to_dtype(v, dtype, True)
  return np.asarray(v).astype(dtype)[()]
