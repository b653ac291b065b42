"""jnp's argument handling: dtype promotion with weak types, rank promotion, validation.

`promote_args` is on the path of every eager binary op, so the common cases (same dtype, a
Python scalar next to an array) are settled with a few type checks and one cached lookup.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.elementwise_functions import check_python_int
from jaxlite._src.state.types import AbstractRef

# `array` (for list and tuple arguments), registered by creation at its import: it stands on
# this module (issue 29).
_above = {}


def register_above(**fns):
  _above.update(fns)

_ArrayImpl = None
_PY = (int, float, complex, bool)
_typed = dtypes.typed_scalar_types


# dtype_weak, ndim_of, shape_of and promote_args are eager dispatch (every `x + 1` runs them):
# like core's eval trace they read an Array's buffer field directly, sparing an accessor call
# (see array.py's docstring).
def dtype_weak(x):
  """(dtype, weak_type) of a jnp argument; lists and tuples count as strong arrays."""
  t = type(x)
  if t is core.array_type:
    return x._value.dtype, x.weak_type
  if t is float:
    return dtypes.default_float_dtype(), True
  if t is int:
    return dtypes.default_int_dtype(), True
  if t is bool:
    return dtypes.bool_, False
  if t is complex:
    return dtypes.default_complex_dtype(), True
  if isinstance(x, core.Tracer):
    a = x.aval
    return a.dtype, a.weak_type
  if t in _typed:
    return x.dtype, True
  if isinstance(x, (np.ndarray, np.generic)):
    return dtypes.canonicalize_dtype(x.dtype), False
  if isinstance(x, (list, tuple)):
    array = _above["array"]
    a = array(x)
    return a.dtype, a.weak_type
  if hasattr(x, "__jax_array__"):
    return dtype_weak(x.__jax_array__())
  if isinstance(x, core.Array):  # typed PRNG key arrays: an extended dtype, never weak
    return x.dtype, False
  raise TypeError(f"Value {x!r} with type {type(x)} is not a valid JAX type")


def check_arraylike(fun_name: str, *args) -> None:
  for i, a in enumerate(args):
    t = type(a)
    if t is core.array_type or t in _PY or t in _typed or isinstance(
        a, (np.ndarray, np.generic)) or (isinstance(a, core.Array) and not (
            isinstance(a, core.Tracer) and type(a.aval) is AbstractRef)) or hasattr(
                a, "__jax_array__"):
      continue
    msg = f"{fun_name} requires ndarray or scalar arguments, got {t} at position {i}."
    raise TypeError(msg)


def scalar_to_dtype(x, dtype, weak: bool):
  """A Python scalar converted for an op computing in `dtype` (stays a literal when traced)."""
  t = type(x)
  if t is int:
    check_python_int(x, dtypes.default_int_dtype() if dtype.kind in "iu" else np.int64)
  if weak and t is bool:
    x, t = int(x), int  # True entering a weak result (weak f32 * True) is the weak number 1
  if weak:
    if dtype == dtypes.default_float_dtype():
      if t is int:  # JAX rounds an int to the float dtype (2147483647 is 2147483648.0:f32[])
        x = float(np.asarray(x, dtype))
      return dtypes.TypedFloat(x, dtype) if t is not complex else x
    if dtype == dtypes.default_int_dtype() and t is int:
      return dtypes.TypedInt(x, dtype)
    if dtype == dtypes.default_complex_dtype():
      return dtypes.TypedComplex(x, dtype)
  return casts.convert_value(np.asarray(x), dtype)[()]


def convert(x, dtype, weak: bool):
  """`x` as (dtype, weak): Python scalars in Python, arrays and tracers through a cast eqn."""
  t = type(x)
  if t in _PY:
    return scalar_to_dtype(x, dtype, weak)
  if t is not core.array_type and not isinstance(x, core.Tracer) and hasattr(x, "__jax_array__"):
    # Unwrapped first, as JAX's jnp functions do: else the wrapper itself (an nnx Variable
    # holding a tracer) would be bound, and a trace would capture it as a constant.
    x = x.__jax_array__()
    t = type(x)
  xd, xw = dtype_weak(x)
  if xd == dtype and xw == weak:
    if t is core.array_type or isinstance(x, core.Array) or t in _typed:
      return x
  if t in _typed:
    py = int(x) if t is dtypes.TypedInt else float(x) if t is dtypes.TypedFloat else complex(x)
    return scalar_to_dtype(py, dtype, weak)
  if isinstance(x, np.ndarray) and x.ndim and \
      getattr(core.current_trace(), "stages_constants", False):
    # While staging, JAX folds casts of scalar constants only: an array constant is lifted to a
    # constvar in its own dtype and cast by an eqn (`x + np.array([3], np.int32)`).
    if dtypes.canonicalize_dtype(x.dtype) == dtype and not weak:
      return x
    return casts.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak)
  if isinstance(x, (np.ndarray, np.generic)):
    v = casts.convert_value(np.asarray(x), dtype)
    if v.ndim == 0:
      v = v[()]
    if weak:
      return core.array_from_numpy(np.asarray(v), True)
    return v
  if isinstance(x, (list, tuple)):
    array = _above["array"]
    x = array(x)
  return casts.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=bool(weak))


def _promotion_sigs(args):
  """(dtype, weak) per argument for promotion: a weak bool (from comparing weak values) promotes
  as a strong bool in JAX; the lattice has no weak boolean."""
  return tuple((d, w and d != np.bool_) for d, w in map(dtype_weak, args))


def promote_dtypes(*args):
  """Converts args to their common (dtype, weak type)."""
  if len(args) == 1:
    x = args[0]
    d, w = dtype_weak(x)
    return [convert(x, d, w)]
  sigs = _promotion_sigs(args)
  first = sigs[0]
  if all(s == first for s in sigs[1:]):
    dtype, weak = first
  else:
    dtype, weak = dtypes.promote_signature(sigs)
  return [convert(a, dtype, weak) for a, s in zip(args, sigs)]


def promote_dtypes_inexact(*args):
  """Promotes, then moves integer and bool results to the default float (sin of an int)."""
  sigs = _promotion_sigs(args)
  dtype, weak = dtypes.promote_signature(sigs) if len(sigs) > 1 else sigs[0]
  if not dtypes.is_inexact(dtype):
    dtype = dtypes.to_inexact_dtype(dtype)
  return [convert(a, dtype, weak) for a in args]


def promote_dtypes_numeric(*args):
  sigs = _promotion_sigs(args)
  dtype, weak = dtypes.promote_signature(sigs) if len(sigs) > 1 else sigs[0]
  if dtype == np.bool_:
    dtype = np.dtype(np.int32)  # int32 even with x64 on, as in JAX
  return [convert(a, dtype, weak) for a in args]


def promote_dtypes_complex(*args):
  sigs = _promotion_sigs(args)
  dtype, weak = dtypes.promote_signature(sigs) if len(sigs) > 1 else sigs[0]
  if dtype.kind != "c":
    dtype = dtypes.complex128 if dtype == np.float64 else dtypes.default_complex_dtype()
  return [convert(a, dtype, weak) for a in args]


def ndim_of(x) -> int:
  t = type(x)
  if t is core.array_type:
    return x._value.ndim
  if t in _PY or t in _typed:
    return 0
  return len(np.shape(x)) if not isinstance(x, core.Tracer) else x.ndim


def shape_of(x) -> tuple:
  t = type(x)
  if t is core.array_type:
    return x._value.shape
  if t in _PY or t in _typed:
    return ()
  if isinstance(x, core.Tracer):
    return x.aval.shape
  return np.shape(x)


def promote_shapes(fun_name: str, *args):
  """Rank promotion: lower-rank non-scalar operands get leading size-1 axes."""
  if len(args) < 2:
    return list(args)
  ranks = [ndim_of(a) for a in args]
  top = max(ranks)
  if all(r == top or r == 0 for r in ranks):
    return list(args)
  if dtypes.config.jax_numpy_rank_promotion != "allow":
    _rank_promotion_check(fun_name, args)
  # JAX's error names the operands' own shapes (before the leading 1s)
  _check_broadcastable(fun_name, [shape_of(a) for a in args], top)
  out = []
  for a, r in zip(args, ranks):
    if r == top or r == 0:
      out.append(a)
    else:
      shp = shape_of(a)
      new = (1,) * (top - r) + tuple(shp)
      out.append(shape_prims.broadcast_in_dim_p.bind(
          a, shape=new, broadcast_dimensions=tuple(range(top - r, top)), sharding=None))
  return out


def _rank_promotion_check(fun_name, args):
  """`jax_numpy_rank_promotion` 'raise' or 'warn': JAX's error or warning, word for word."""
  shapes = " ".join(str(tuple(shape_of(a))) for a in args)
  doc = "https://docs.jax.dev/en/latest/rank_promotion_warning.html."
  if dtypes.config.jax_numpy_rank_promotion == "raise":
    raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes {shapes} "
                     f"and with the config option jax_numpy_rank_promotion='raise'. For more "
                     f"information, see {doc}")
  import warnings
  warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes {shapes}. "
                "Set the jax_numpy_rank_promotion config option to 'allow' to disable this "
                f"warning; for more information, see {doc}", stacklevel=4)


def _check_broadcastable(fun_name, shapes, ndim=None):
  """JAX's error for `shapes` (of `ndim` dims after rank promotion, aligned at the right)
  that do not broadcast together."""
  nonscalar = [s for s in shapes if len(s)]
  if ndim is not None:
    nonscalar = [(1,) * (ndim - len(s)) + tuple(s) for s in nonscalar]
  for dims in zip(*nonscalar):
    big = {d for d in dims if d != 1}
    if len(big) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes="
                       f"{[tuple(s) for s in shapes]}")


_PY_NUM = (int, float)
# (Python scalar type, array dtype, array weak) -> scalar converter, or None when the array
# itself must be cast (then the general path runs).
_scalar_partner_cache: dict = {}


def _scalar_partner(scalar_type, dt, weak):
  key = (scalar_type, dt, weak, dtypes.config.jax_enable_x64)
  conv = _scalar_partner_cache.get(key, False)
  if conv is False:
    sdt = dtypes.python_scalar_dtype(scalar_type(0))
    out_dt, out_weak = dtypes.promote_signature(((dt, weak), (sdt, True)))
    if out_dt != dt or out_weak != weak:
      conv = None
    elif weak:
      conv = None  # weak partners keep Python values: rare, handled by the general path
    elif scalar_type is float or dt.kind not in "iu":
      conv = dt.type
    else:
      conv = _int_converter(dt)
    _scalar_partner_cache[key] = conv
  return conv


def _int_converter(dt):
  lo, hi = np.iinfo(dt).min, np.iinfo(dt).max

  def conv(x):
    if lo <= x <= hi:
      return dt.type(x)
    return scalar_to_dtype(x, dt, False)
  return conv


def capture_in_order(args) -> None:
  """Takes the values an outer trace owns into the staging trace in argument order. JAX's jnp
  functions are jits: their bind captures every operand before the body converts any, so
  closed-over values become consts in argument order (`x + c` with a weak `c`: x, then c)."""
  trace = core.current_trace()
  to_atom = getattr(trace, "to_atom", None)
  if to_atom is not None:
    for a in args:
      if isinstance(a, core.Tracer) and a._trace is not trace:
        to_atom(a)


def promote_args(fun_name: str, *args):
  """Dtype then rank promotion of jnp arguments (the common path of every binary ufunc)."""
  if len(args) == 2:
    # Fast paths for eager code: two equal arrays, or an array and a Python number.
    x, y = args
    tx, ty = type(x), type(y)
    at = core.array_type
    if tx is at:
      if ty is at:
        xv, yv = x._value, y._value
        if xv.dtype == yv.dtype and x.weak_type == y.weak_type and xv.ndim == yv.ndim \
            and not (x.weak_type and xv.dtype == np.bool_):
          return args
      elif ty in _PY_NUM:
        conv = _scalar_partner(ty, x._value.dtype, x.weak_type)
        if conv is not None:
          return x, conv(y)
    elif ty is at and tx in _PY_NUM:
      conv = _scalar_partner(tx, y._value.dtype, y.weak_type)
      if conv is not None:
        return conv(x), y
  if any(type(a) in (list, tuple) for a in args):
    check_arraylike(fun_name, *args)  # JAX's ensure_arraylike refuses a list or tuple
  capture_in_order(args)
  try:
    promoted = promote_dtypes(*args)
  except TypeError as e:  # typed PRNG keys beside other dtypes: say which function refused
    check_arraylike(fun_name, *args)  # or a non-array argument: JAX's message naming it
    if not str(e).startswith("Cannot promote extended dtypes"):
      raise
    names = ", ".join(dtypes.dtype_name(dtype_weak(a)[0]) for a in args)
    raise TypeError(f"{fun_name} does not accept dtypes {names}.") from None
  return promote_shapes(fun_name, *promoted)


def promote_args_inexact(fun_name: str, *args):
  if any(type(a) in (list, tuple) for a in args):
    check_arraylike(fun_name, *args)
  capture_in_order(args)
  try:
    promoted = promote_dtypes_inexact(*args)
  except TypeError:
    check_arraylike(fun_name, *args)  # a non-array argument: JAX's message naming it
    raise
  return promote_shapes(fun_name, *promoted)


def promote_args_numeric(fun_name: str, *args):
  if any(type(a) in (list, tuple) for a in args):
    check_arraylike(fun_name, *args)
  capture_in_order(args)
  try:
    promoted = promote_dtypes_numeric(*args)
  except TypeError:
    check_arraylike(fun_name, *args)
    raise
  return promote_shapes(fun_name, *promoted)


def canonicalize_axis(axis: int, ndim: int) -> int:
  axis = int(axis)
  if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def broadcast_shapes(*shapes) -> tuple:
  """NumPy broadcasting of shapes, with jnp's error text."""
  try:
    return tuple(np.broadcast_shapes(*shapes))
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}")
