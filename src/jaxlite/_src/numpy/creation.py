"""Array creation: array/asarray, zeros/ones/full and their *_like forms, arange, eye.

Concrete inputs become Arrays right away (a copy, like JAX); traced inputs stay traced, and
filled arrays are a `broadcast_in_dim` of a scalar so that jaxprs match JAX's.
"""
from __future__ import annotations

import functools

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.rng import prng
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.elementwise_functions import check_python_int
from jaxlite._src.numpy import util as _util
from jaxlite._src.numpy.util import dtype_weak, scalar_to_dtype

# What array construction needs from the jnp modules that stand on this one (reshape,
# broadcast_to, transpose: where_reshape; power, log10, ...: ufuncs; moveaxis: shape_ops),
# registered by them at their import (issue 29: this module never imports them).
_above = {}


def register_above(**fns):
  _above.update(fns)

_PY = (int, float, complex, bool)


def _leaf_dtype_weak(x):
  """(dtype, weak) that NumPy-style nesting of `x` contributes."""
  if isinstance(x, (list, tuple)):
    if not x:
      return dtypes.default_float_dtype(), False
    sigs = {_leaf_dtype_weak(e) for e in x}
    d, w = dtypes.promote_signature(tuple(sigs)) if len(sigs) > 1 else next(iter(sigs))
    return d, False
  reject_none(x)  # nested in a list: JAX asks it for its value, as for a bare None
  return dtype_weak(x)


def _contains_tracer(x) -> bool:
  if isinstance(x, (list, tuple)):
    return any(_contains_tracer(e) for e in x)
  return isinstance(x, core.Tracer)


def _check_int_range(x, dtype, explicit: bool = False):
  if isinstance(x, (list, tuple)):
    for e in x:
      _check_int_range(e, dtype, explicit)
  elif explicit and type(x) in (int, float, complex) and dtype.kind in "iu":
    _python_to_int(x, dtype)
  elif type(x) is int and dtype.kind in "iu":
    check_python_int(x, dtype)


def _python_to_int(x, dtype):
  """A Python number converted to an explicitly requested integer dtype as JAX does: truncated
  by `int()` and handed to NumPy, so out-of-range values raise NumPy's OverflowError ("Python
  integer 300 out of bounds for uint8"), inf OverflowError, NaN ValueError and complex TypeError
  (Python's own `int()` errors) instead of saturating."""
  return np.array(int(x), dtype)


def array(object, dtype=None, copy: bool = True, order=None, ndmin: int = 0, *, device=None,
          out_sharding=None):
  """jnp.array: NumPy-style construction with JAX's dtype and weak-type rules."""
  if out_sharding is not None:
    from jaxlite._src.sharding.reshard import reshard
    return reshard(array(object, dtype, copy, order, ndmin, device=device), out_sharding)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "array")
  if hasattr(object, "__jax_array__"):
    object = object.__jax_array__()
  t = type(object)
  if t is core.array_type or isinstance(object, core.Array):  # tracers and typed key arrays too
    if copy and isinstance(object, core.Tracer):  # JAX stages the copy (a `copy` eqn)
      from jaxlite._src.lax.identity_ops import copy_p
      object = copy_p.bind(object)
    out = object if dtype is None else _cast(object, dtype)
    if dtype is None and t is core.array_type and copy:
      if array_lib.is_non_addressable(object) or not array_lib.numpy_eager(object) or \
          array_lib.off_context_mesh(object):
        # shards in other processes: each copies its own; another backend's buffer: its copy;
        # one device beside set_mesh's mesh: JAX's copy raises its incompatible-devices error
        from jaxlite._src.lax.identity_ops import copy_p
        out = copy_p.bind(object)
      else:
        out = array_lib.like(object, object._host_value(), object.weak_type)
  elif isinstance(object, (list, tuple)) and _contains_tracer(object):
    out = _stacked(object, dtype)
  else:
    out = _from_concrete(object, dtype)
  if ndmin > out.ndim:
    reshape = _above["reshape"]
    out = reshape(out, (1,) * (ndmin - out.ndim) + tuple(out.shape))
  if out is not object and getattr(object, "_device", None) is None and \
      array_lib.is_context_placement(getattr(out, "_device", None), out.ndim):
    # made under `jax.set_mesh` from a value on no mesh: JAX puts it there as P(), not as
    # computed results' P(None, ...)
    out._device = out._device._replicated()
  return out


def _stacked(elems, dtype):
  """A sequence holding tracers as JAX stages it: each element cast to the common (strong)
  dtype, given a leading axis, and the pieces concatenated."""
  if dtype is None:  # the type of all leaves together (nested sequences too), as JAX
    leaves = []
    todo = list(elems)
    while todo:
      e = todo.pop()
      if isinstance(e, (list, tuple)):
        todo.extend(e)
      else:
        reject_none(e)  # JAX's ValueError, as for a list without tracers (jnp.clip under jit)
        leaves.append(e)
    dtype = dtypes.canonicalize_dtype(dtypes.result_type(*leaves))
  parts = []
  for e in elems:  # (one element after the other, as JAX stages them)
    e = _cast(array(e, dtype, copy=False), dtype)
    shape = tuple(e.shape)
    parts.append(shape_prims.broadcast_in_dim_p.bind(
        e, shape=(1,) + shape, broadcast_dimensions=tuple(range(1, len(shape) + 1)),
        sharding=None))
  return shape_prims.concatenate(parts, 0)


def _strong(x):
  d, w = dtype_weak(x)
  return casts.convert_element_type_p.bind(x, new_dtype=d, weak_type=False) if w else x


def _cast(x, dtype):
  d, w = dtype_weak(x)
  if d == dtype and not w:
    return x
  casts.check_convertible(d, dtype)
  return casts.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)


def _from_concrete(obj, dtype):
  t = type(obj)
  if t in _PY:
    d = dtypes.python_scalar_dtype(obj)
    weak = t is not bool and dtype is None
    target = dtype or d
    if dtype is not None and t is not bool and target.kind in "iu":
      return core.array_from_numpy(_python_to_int(obj, target), False)
    if t is int and dtype is None:  # a weak int must fit the default int dtype
      check_python_int(obj, target if target.kind in "iu" else dtypes.default_int_dtype())
    if t is int and target.kind in "fc":  # asarray(2**32, float): float32 4.29e9, as JAX
      obj = float(obj)
    val = casts.convert_value(np.asarray(obj), target) if t is not int or target.kind not in "iu" \
        else np.asarray(obj, target)
    return core.array_from_numpy(np.asarray(val), weak)
  if isinstance(obj, (list, tuple)):
    try:
      d, _ = _leaf_dtype_weak(obj)
    except TypeError:
      if not _string_leaves(obj):
        raise
      return _from_strings(obj, dtype)
    target = dtype or d
    _check_int_range(obj, target, dtype is not None)
    vals = _nested_values(obj)
    val = np.array(vals)
    if val.dtype == object:
      raise TypeError(f"Cannot convert {obj!r} to a JAX array: inhomogeneous or "
                      "non-numeric values")
    return core.array_from_numpy(casts.convert_value(val, target), False)
  if isinstance(obj, (np.ndarray, np.generic)):
    if obj.dtype == object:
      raise TypeError(f"Cannot convert object array {obj!r} to a JAX array")
    target = dtype or dtypes.canonicalize_dtype(obj.dtype)
    return core.array_from_numpy(np.array(casts.convert_value(np.asarray(obj), target)), False)
  if t in dtypes.typed_scalar_types:
    return core.array_from_numpy(np.asarray(obj, dtype or obj.dtype), dtype is None)
  if hasattr(obj, "__array__"):
    return _from_concrete(np.asarray(obj), dtype)
  if t is str:
    return _from_strings(obj, dtype)
  raise TypeError(f"Value {obj!r} of type {type(obj)} is not a valid JAX array-like")


def _string_leaves(x) -> list:
  if isinstance(x, (list, tuple)):
    return [s for e in x for s in _string_leaves(e)]
  return [x] if isinstance(x, str) else []


def _from_strings(obj, dtype):
  """Strings in array data, as JAX treats them: it hands them to NumPy. With a dtype NumPy
  converts them (`'1'` reads as 1.0, `'a'` raises NumPy's ValueError). Without one JAX reads
  each string leaf of a sequence as a dtype name (`np.dtype('b')` is int8) and NumPy then
  fails to convert the data to that type (ValueError); a bare string, or one naming no numeric
  dtype, is not array data (TypeError)."""
  if dtype is not None:
    return _from_concrete(np.asarray(obj, dtype), dtype)
  not_numeric = TypeError(f"Value {obj!r} with dtype {np.asarray(obj).dtype} is not a valid "
                          "JAX array type. Only arrays of numeric types are supported by JAX.")
  if isinstance(obj, str):
    raise not_numeric
  try:
    named = np.result_type(*(np.dtype(s) for s in _string_leaves(obj)))
  except TypeError:
    raise not_numeric from None
  if named.kind not in "biufc":
    raise not_numeric
  return _from_concrete(np.asarray(obj, named), None)


def reject_none(value):
  """JAX's jnp.array asks a None for its value and raises ValueError; the jnp functions that
  check their arguments first (most) raise TypeError, which the internal `asarray` keeps."""
  if value is None:
    raise ValueError("None is not a valid value for jnp.array")


def user_array(object, dtype=None, copy: bool = True, order=None, ndmin: int = 0, *,  # noqa: A002
               device=None, out_sharding=None):
  """jnp.array as the user calls it: `array`, with JAX's ValueError for None."""
  reject_none(object)
  return array(object, dtype, copy, order, ndmin, device=device, out_sharding=out_sharding)


def user_asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
  """jnp.asarray as the user calls it: `asarray`, with JAX's ValueError for None."""
  reject_none(a)
  return asarray(a, dtype, order, copy=copy, device=device, out_sharding=out_sharding)


def _nested_values(x):
  if isinstance(x, (list, tuple)):
    return [_nested_values(e) for e in x]
  if type(x) is core.array_type:
    return x._host_value()
  return x


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
  if out_sharding is not None:
    return array(a, dtype=dtype, copy=False, device=device, out_sharding=out_sharding)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "asarray")
  t = type(a)
  if t is core.array_type and (dtype is None or a.dtype == dtype):
    if dtype is not None and a.weak_type and array_lib.numpy_eager(a):
      return array_lib.like(a, a._host_value(), False)
    if dtype is not None and a.weak_type:
      return _cast(a, dtype)
    return a
  return array(a, dtype=dtype, copy=False)


def _fill_value(value, dtype, weak):
  if type(value) in _PY:
    return scalar_to_dtype(value, dtype, weak)
  d, w = dtype_weak(value)
  if d == dtype and w == weak:
    return value
  return casts.convert_element_type_p.bind(asarray(value), new_dtype=dtype, weak_type=weak)


def _placed(like=False):
  """Decorates a creation function to honour `device=` (committing the result there) and, for
  the `*_like` family, to keep a committed input's device, as JAX does."""
  def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, device=None, out_sharding=None, **kw):
      out = fn(*args, **kw)
      if like and args and core.vma_typing is not None:  # varies where its input does (JAX)
        from jaxlite._src.parallel.shard_map_vma import cast_like
        out = cast_like(out, args[0])
      if out_sharding is None and like and args and kw.get("shape") is None:
        # Under a trace a `*_like` result has the input's type, its sharding included.
        out_sharding = getattr(core.get_aval(args[0]), "sharding", None) \
            if isinstance(args[0], core.Tracer) else None
      if out_sharding is not None:
        from jaxlite._src.sharding.reshard import reshard
        return reshard(out, out_sharding, _fun_name=f"jnp.{fn.__name__}")
      if device is None and like and args:
        device = getattr(args[0], "_device", None)
      if device is None or isinstance(out, core.Tracer):
        return out
      from jaxlite._src.transforms.api import device_put
      return device_put(out, device)
    return wrapper
  return deco


@_placed()
def full(shape, fill_value, dtype=None, *, device=None):
  broadcast_to = _above["broadcast_to"]
  shape = _shape_arg(shape)
  if isinstance(fill_value, (list, tuple)):
    raise TypeError(f"full requires ndarray or scalar arguments, got {type(fill_value)} at "
                    "position 0.")
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
  if core.current_trace() is core.eval_trace or (shape == () and not isinstance(x, core.Tracer)):
    d, w = dtype_weak(x)
    v = x._host_value() if type(x) is core.array_type else x
    return core.array_from_numpy(np.full(shape, v, dtype=d), w)
  if shape == ():
    return x  # broadcasting to a scalar is no eqn in JAX
  return shape_prims.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=(),
                                             sharding=None)


def _shape_arg(shape):
  shape = core.canonicalize_shape(shape)
  if any(d < 0 for d in shape):  # JAX's check, from the broadcast_in_dim its creators bind
    raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got {shape}.")
  return shape


@_placed()
def zeros(shape, dtype=None, *, device=None):
  dtype = dtypes.check_user_dtype(dtype, "zeros") if dtype is not None else \
      dtypes.default_float_dtype()
  shape = _shape_arg(shape)
  if core.current_trace() is core.eval_trace:
    return core.array_from_numpy(np.zeros(shape, dtype), False)
  return _broadcast_scalar(np.zeros((), dtype)[()], shape)


@_placed()
def ones(shape, dtype=None, *, device=None):
  dtype = dtypes.check_user_dtype(dtype, "ones") if dtype is not None else \
      dtypes.default_float_dtype()
  shape = _shape_arg(shape)
  if core.current_trace() is core.eval_trace:
    return core.array_from_numpy(np.ones(shape, dtype), False)
  return _broadcast_scalar(np.ones((), dtype)[()], shape)


@_placed()
def empty(shape, dtype=None, *, device=None):
  return zeros(shape, dtype)


def _like(name, x, dtype, shape):
  from jaxlite._src.transforms.api import ShapeDtypeStruct
  if isinstance(x, ShapeDtypeStruct):  # JAX's *_like take any shape/dtype carrier (optax does)
    d, w, xs = np.dtype(x.dtype), bool(getattr(x, "weak_type", False)), tuple(x.shape)
  else:
    from jaxlite._src.numpy.util import check_arraylike, shape_of
    if not (hasattr(x, "dtype") and hasattr(x, "shape")):
      check_arraylike(name, x)  # JAX's *_like refuse a list
    (d, w), xs = dtype_weak(x), None
  if dtype is not None:
    d, w = dtypes.check_user_dtype(dtype), False
  if shape is not None:
    return d, w, _shape_arg(shape)
  return d, w, shape_of(x) if xs is None else xs


@_placed(like=True)
def zeros_like(a, dtype=None, shape=None, *, device=None):
  d, w, s = _like("zeros_like", a, dtype, shape)
  return _broadcast_scalar(_scalar(0, d, w), s)


@_placed(like=True)
def ones_like(a, dtype=None, shape=None, *, device=None):
  d, w, s = _like("ones_like", a, dtype, shape)
  return _broadcast_scalar(_scalar(1, d, w), s)


@_placed(like=True)
def empty_like(a, dtype=None, shape=None, *, device=None):
  _like("ones_like", a, dtype, shape)  # JAX's empty_like checks its argument as ones_like
  return zeros_like(a, dtype, shape)


@_placed(like=True)
def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
  d, w, s = _like("full_like", a, dtype, shape)
  if dtype is None:
    # JAX: a scalar fill goes through lax.full_like (weak when `a` is, whatever the fill), an
    # array fill through asarray(fill, dtype=a's dtype) (strong)
    w = w and np.ndim(fill_value) == 0
  fill = _fill_value(fill_value, d, w)
  if (fill.ndim if isinstance(fill, core.Tracer) else np.ndim(fill)):
    broadcast_to = _above["broadcast_to"]
    return broadcast_to(fill, s)
  return _broadcast_scalar(fill, s)


def _scalar(v, dtype, weak):
  if weak:
    return scalar_to_dtype(v, dtype, True)
  return np.asarray(v).astype(dtype)[()]


# --- ranges, grids and triangular masks --------------------------------------------------------
# Concrete arguments build NumPy values; under a trace, counting is an `iota` eqn like in JAX.


def _concrete_bound(x, name):
  if x is None:
    return None
  if isinstance(x, (str, bytes)):
    raise TypeError(f"arange: argument '{name}' must be a number, got {x!r} of type "
                    f"{type(x).__name__}. Only arrays of numeric types are supported by JAX.")
  return core.concrete_or_error(None, x, f"It arose in the jnp.arange argument '{name}'")


def _as_python_scalar(x):
  if type(x) is core.array_type:
    return x._host_value().item()
  if isinstance(x, (np.ndarray, np.generic)):
    return np.asarray(x).item()
  return x


@_placed()
def arange(start, stop=None, step=None, dtype=None, *, device=None):
  """jnp.arange: int32 for integer bounds, float32 otherwise (x64 off)."""
  from jaxlite._src.lax.creation import iota_p
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "arange")
  names = ("start", "stop", "step") if stop is not None else ("stop", "start", "step")
  bounds = [_as_python_scalar(_concrete_bound(v, n))
            for v, n in zip((start, stop, step), names)]
  if bounds[1] is None:
    bounds = [0, bounds[0], bounds[2]]
  first, last, stride = bounds[0], bounds[1], 1 if bounds[2] is None else bounds[2]
  if dtype is None:
    dtype = dtypes.result_type(*(b for b in (start, stop, step) if b is not None))
    dtype = dtypes.canonicalize_dtype(dtype)
  if stride == 0:
    raise ZeroDivisionError("arange: step cannot be zero (JAX divides by it).")
  values = _arange_values(first, last, None if bounds[2] is None else stride, np.dtype(dtype))
  if core.current_trace() is core.eval_trace or not _is_integer_range(first, stride):
    return core.array_from_numpy(values, False)
  count = iota_p.bind(dtype=dtype, shape=values.shape, dimension=0, sharding=None)
  if stride != 1:
    count = ew.mul_p.bind(np.asarray(stride, dtype)[()], count)
  if first != 0:
    count = ew.add_p.bind(np.asarray(first, dtype)[()], count)
  return count


def _arange_values(first, last, step, dtype):
  """JAX's arange values: with a step, start + step * iota in the dtype (float32 for narrower
  floats), start and step first cast to it; the length is ceil((stop - start) / step)."""
  with np.errstate(all="ignore"):
    if step is None:
      size = max(0, int(np.ceil(last - first)))
      return (np.asarray(first).astype(dtype) + np.arange(size).astype(dtype)).astype(dtype)
    size = max(0, int(np.ceil((last - first) / step)))
    work = np.dtype(np.float32) if dtypes.is_ml_float(dtype) or dtype == np.float16 else dtype
    cast = (lambda v: np.asarray(v).astype(work)) if work.kind != "c" else \
        (lambda v: np.asarray(v, work))
    return (cast(first) + cast(step) * np.arange(size).astype(work)).astype(dtype)


def _is_integer_range(first, stride) -> bool:
  return float(first).is_integer() and float(stride).is_integer()


def _linspace_impl(start, stop, num, endpoint, dtype, axis):
  from jaxlite._src.lax.creation import iota_p
  broadcast_to, reshape = _above["broadcast_to"], _above["reshape"]
  from jaxlite._src.numpy.util import convert, promote_dtypes, shape_of
  start, stop = promote_dtypes(start, stop)
  compute = dtypes.to_inexact_dtype(dtype_weak(start)[0])
  start, stop = convert(start, compute, False), convert(stop, compute, False)
  bshape = tuple(np.broadcast_shapes(shape_of(start), shape_of(stop)))
  start, stop = broadcast_to(start, bshape), broadcast_to(stop, bshape)
  div = (num - 1) if endpoint else num
  n_iota = num - 1 if endpoint and num > 0 else num
  delta = ew.sub_p.bind(stop, start)
  step = ew.div_p.bind(delta, np.asarray(div, compute)[()]) if div > 0 else \
      ew.mul_p.bind(delta, np.asarray(np.nan, compute)[()])
  out_shape = (n_iota,) + bshape
  frac = iota_p.bind(dtype=compute, shape=out_shape, dimension=0, sharding=None)
  if div > 0:
    frac = ew.div_p.bind(frac, np.asarray(div, compute)[()])
  lead = tuple(range(1, len(out_shape)))
  one, bounds = np.asarray(1, compute)[()], (1,) + bshape
  # As JAX: bounds reshaped to a leading 1, which lax ops broadcast against the iota's length.
  out = ew.add_p.bind(ew.mul_p.bind(reshape(start, bounds), ew.sub_p.bind(one, frac)),
                      ew.mul_p.bind(reshape(stop, bounds), frac))
  if endpoint and num > 0:
    from jaxlite._src.lax import shape as lax_shape
    last = shape_prims.broadcast_in_dim_p.bind(stop, shape=(1,) + bshape,
                                               broadcast_dimensions=lead, sharding=None)
    out = lax_shape.concatenate([out, last], 0)
  if axis != 0:
    transpose = _above["transpose"]
    nd = len(out_shape)
    ax = axis % nd
    out = transpose(out, tuple(range(1, ax + 1)) + (0,) + tuple(range(ax + 1, nd)))
  out = convert(out, dtype, False)
  return out, convert(step, dtype, False)


def _linspace_jitted():

  @internal_jit(static_argnames=("num", "endpoint", "dtype", "axis"), name="_linspace")
  def _linspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    return _linspace_impl(start, stop, num, endpoint, dtype, axis)[0]
  return _linspace


_LINSPACE = []


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
  """jnp.linspace: `num` evenly spaced values from start to stop."""
  num = core.concrete_or_error(int, num, "'num' argument of jnp.linspace")
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "linspace")
  else:
    dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  if retstep:
    return _linspace_impl(start, stop, num, bool(endpoint), dtype, axis)
  if not _LINSPACE:
    _LINSPACE.append(_linspace_jitted())
  return _LINSPACE[0](start, stop, num=num, endpoint=bool(endpoint), dtype=dtype, axis=axis)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  """jnp.logspace: base ** linspace(start, stop), staged as JAX's `_logspace` (base traced)."""
  num = core.concrete_or_error(int, num, "'num' argument of jnp.logspace")
  axis = core.concrete_or_error(int, axis, "'axis' argument of jnp.logspace")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "logspace")
  return _spaced("_logspace")(start, stop, num=num, endpoint=bool(endpoint), base=base,
                              dtype=dtype, axis=axis)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
  """jnp.geomspace: sign(start) * logspace(log10 |start|, log10 |stop|), as JAX's `_geomspace`."""
  num = core.concrete_or_error(int, num, "'num' argument of jnp.geomspace")
  axis = core.concrete_or_error(int, axis, "'axis' argument of jnp.geomspace")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "geomspace")
  return _spaced("_geomspace")(start, stop, num=num, endpoint=bool(endpoint), dtype=dtype,
                               axis=axis)


def _logspace(start, stop, num, endpoint, base, dtype, axis):
  power = _above["power"]
  dtype = dtype or dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  compute = dtypes.to_inexact_dtype(dtype)
  lin = linspace(asarray(start, compute), asarray(stop, compute), num, endpoint, axis=axis)
  return _cast(power(base, lin), dtype)


def _geomspace(start, stop, num, endpoint, dtype, axis):
  moveaxis = _above["moveaxis"]
  log10, multiply, sign, true_divide = (_above[n] for n in ("log10", "multiply", "sign",
                                                          "true_divide"))
  dtype = dtype or dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  compute = dtypes.to_inexact_dtype(dtype)
  start, stop = asarray(start, compute), asarray(stop, compute)
  sgn = sign(start)
  res = multiply(sgn, logspace(log10(true_divide(start, sgn)), log10(true_divide(stop, sgn)),
                               num, endpoint, base=10.0, dtype=compute))
  return _cast(res if axis == 0 else moveaxis(res, 0, axis), dtype)


_SPACED = {"_logspace": _logspace, "_geomspace": _geomspace}


def _spaced(name):
  """The jitted `_logspace`/`_geomspace`, made on first use."""
  fun = _SPACED[name]
  if not hasattr(fun, "jitted"):
    fun.jitted = internal_jit(fun, static_argnames=("num", "endpoint", "dtype", "axis"),
                              name=name)
  return fun.jitted


def _triangle_mask(n, m, k):
  """(n, m) boolean mask of j <= i + k (jnp.tri's), built from iotas."""
  from jaxlite._src.lax.creation import iota_p
  int_t = dtypes.default_int_dtype()
  rows = iota_p.bind(dtype=int_t, shape=(n, m), dimension=0, sharding=None)
  rows = ew.add_p.bind(rows, dtypes.TypedInt(k, int_t))
  cols = iota_p.bind(dtype=int_t, shape=(n, m), dimension=1, sharding=None)
  return ew.ge_p.bind(rows, cols)


def _eye_mask(n, m, k):
  from jaxlite._src.lax.creation import iota_p
  int_t = dtypes.default_int_dtype()
  rows = iota_p.bind(dtype=int_t, shape=(n, m), dimension=0, sharding=None)
  cols = iota_p.bind(dtype=int_t, shape=(n, m), dimension=1, sharding=None)
  return ew.eq_p.bind(ew.add_p.bind(rows, dtypes.TypedInt(k, int_t)), cols)


def _dims(N, M):
  for v in (N, M):  # JAX: a float N or M is a non-integer shape
    if isinstance(v, (float, np.floating)):
      raise TypeError("Shapes must be 1D sequences of concrete values of integer type, got "
                      f"({N}, {N if M is None else M}). argument of 'N' jnp.eye().")
  n = core.concrete_or_error(int, N, "'N' argument of jnp.eye()")
  m = n if M is None else core.concrete_or_error(int, M, "'M' argument of jnp.eye()")
  if n < 0 or m < 0:
    raise ValueError(f"negative dimensions are not allowed, got {n} and {m}")
  return n, m


@_placed()
def eye(N, M=None, k=0, dtype=None, *, device=None):
  """jnp.eye: ones on the k-th diagonal."""
  n, m = _dims(N, M)
  k = core.concrete_or_error(int, k, "'k' argument of jnp.eye()")
  dtype = dtypes.check_user_dtype(dtype, "eye") if dtype is not None else \
      dtypes.default_float_dtype()
  if core.current_trace() is core.eval_trace:
    return core.array_from_numpy(np.eye(n, m, k, dtype=dtype), False)
  return casts.convert_element_type_p.bind(_eye_mask(n, m, k), new_dtype=dtype, weak_type=False)


def identity(n, dtype=None):
  """jnp.identity: the n x n identity matrix."""
  return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
  """jnp.tri: ones at and below the k-th diagonal."""
  n, m = _dims(N, M)
  dtype = dtypes.check_user_dtype(dtype, "tri") if dtype is not None else \
      dtypes.default_float_dtype()
  if core.current_trace() is core.eval_trace:
    return core.array_from_numpy(np.tri(n, m, k, dtype=dtype), False)
  return casts.convert_element_type_p.bind(_triangle_mask(n, m, k), new_dtype=dtype,
                                        weak_type=False)


def _triangular(name, lower):

  @internal_jit(static_argnames=("k",), name=name)
  def jitted(m, k=0):
    from jaxlite._src.numpy.util import shape_of
    shape = tuple(shape_of(m))
    # As JAX: both take the lower mask jnp.tri(k) (triu's of k - 1, selecting the other way)
    mask = _triangle_mask(shape[-2], shape[-1], k if lower else k - 1)
    if len(shape) > 2:
      mask = shape_prims.broadcast_in_dim_p.bind(
          mask, shape=shape, broadcast_dimensions=(len(shape) - 2, len(shape) - 1),
          sharding=None)
    # lax.full_like(m, 0), as JAX's: weak when m is (so is the select, a weak input's result)
    zeros_ = _broadcast_scalar(_fill_value(0, *dtype_weak(m)), shape)
    return ew.select_n_p.bind(mask, zeros_, m) if lower else ew.select_n_p.bind(mask, m, zeros_)

  def fn(m, k=0):
    m = asarray(m) if not isinstance(m, (core.Tracer, core.array_type)) else m
    if m.ndim < 2:
      raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    return jitted(m, k=int(k))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"jnp.{name}: the {'lower' if lower else 'upper'} triangle, zeros elsewhere."
  return fn


tril = _triangular("tril", True)
triu = _triangular("triu", False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
  """jnp.meshgrid: coordinate arrays from 1-D coordinate vectors."""
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  broadcast_to, reshape = _above["broadcast_to"], _above["reshape"]
  arrays = [reshape(asarray(x) if not isinstance(x, (core.Tracer, core.array_type)) else x,
                    (-1,)) for x in xi]
  shape = [a.shape[0] for a in arrays]
  if indexing == "xy" and len(arrays) > 1:
    shape[0], shape[1] = shape[1], shape[0]
  out = []
  for i, a in enumerate(arrays):
    axis = i
    if indexing == "xy" and len(arrays) > 1 and i < 2:
      axis = 1 - i
    s = [1] * len(arrays)
    s[axis] = a.shape[0]
    a = reshape(a, tuple(s))
    out.append(a if sparse else broadcast_to(a, tuple(shape)))
  return out


def indices(dimensions, dtype=None, sparse=False):
  """jnp.indices: the index grid of an array of shape `dimensions`."""
  from jaxlite._src.lax.creation import iota_p
  dims = core.canonicalize_shape(dimensions)
  dtype = dtypes.check_user_dtype(dtype, "indices") if dtype is not None else \
      dtypes.default_int_dtype()
  out = []
  for i, d in enumerate(dims):
    shape = tuple(d if j == i else (1 if sparse else dims[j]) for j in range(len(dims)))
    out.append(iota_p.bind(dtype=dtype, shape=shape, dimension=i, sharding=None))
  if sparse:
    return tuple(out)
  if not out:
    return zeros((0,), dtype)
  from jaxlite._src.lax import shape as lax_shape
  return lax_shape.stack(out, 0)


prng.register_above(asarray=asarray)
core.register(asarray=asarray)
_util.register_above(array=array)
