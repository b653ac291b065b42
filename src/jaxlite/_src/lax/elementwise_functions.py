"""The `jax.lax` functions over the elementwise primitives: strict dtypes, no promotion.

Python scalars become weak typed scalars of the default dtype (`lax.add(1., 2.)` is weak f32);
NumPy inputs are canonicalized for x64 mode; everything else is a bind.
"""
from __future__ import annotations

import builtins

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base import operands
from jaxlite._src.base.config import config
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


# Defined with the dtypes (jit's argument handling needs them below the lax layer).
check_python_int = dtypes.check_python_int
weak_scalar = dtypes.weak_scalar
# Below the lax layer, as the transformations that take operands as lax functions do need it.
asarg = operands.asarg


def _unary(prim):
  def fn(x):
    return prim.bind(asarg(x, prim.name, 0))
  fn.__name__ = prim.name
  return fn


def _binary(prim):
  def fn(x, y):
    return prim.bind(asarg(x, prim.name, 0), asarg(y, prim.name, 1))
  fn.__name__ = prim.name
  return fn


neg = _unary(ew.neg_p)
sign = _unary(ew.sign_p)
floor = _unary(ew.floor_p)
ceil = _unary(ew.ceil_p)
is_finite = _unary(ew.is_finite_p)
exp2 = _unary(ew.exp2_p)
log1p = _unary(ew.log1p_p)
expm1 = _unary(ew.expm1_p)
logistic = _unary(ew.logistic_p)
tan = _unary(ew.tan_p)
asin = _unary(ew.asin_p)
acos = _unary(ew.acos_p)
atan = _unary(ew.atan_p)
sinh = _unary(ew.sinh_p)
cosh = _unary(ew.cosh_p)
asinh = _unary(ew.asinh_p)
acosh = _unary(ew.acosh_p)
atanh = _unary(ew.atanh_p)
rsqrt = _unary(ew.rsqrt_p)
cbrt = _unary(ew.cbrt_p)
abs = _unary(ew.abs_p)  # noqa: A001 - lax's name
bitwise_not = _unary(ew.not_p)
population_count = _unary(ew.population_count_p)
clz = _unary(ew.clz_p)
real = _unary(ew.real_p)
imag = _unary(ew.imag_p)
conj = _unary(ew.conj_p)
square = _unary(ew.square_p)
sqrt = _unary(ew.sqrt_p)
sin = _unary(ew.sin_p)
cos = _unary(ew.cos_p)
tanh = _unary(ew.tanh_p)


def exp(x, accuracy=None):
  return ew.exp_p.bind(asarg(x, "exp", 0))


def log(x, accuracy=None):
  return ew.log_p.bind(asarg(x, "log", 0))


add = _binary(ew.add_p)
sub = _binary(ew.sub_p)
mul = _binary(ew.mul_p)
div = _binary(ew.div_p)
rem = _binary(ew.rem_p)
pow = _binary(ew.pow_p)  # noqa: A001
max = _binary(ew.max_p)  # noqa: A001
min = _binary(ew.min_p)  # noqa: A001
atan2 = _binary(ew.atan2_p)
nextafter = _binary(ew.nextafter_p)
bitwise_and = _binary(ew.and_p)
bitwise_or = _binary(ew.or_p)
bitwise_xor = _binary(ew.xor_p)
shift_left = _binary(ew.shift_left_p)
shift_right_arithmetic = _binary(ew.shift_right_arithmetic_p)
shift_right_logical = _binary(ew.shift_right_logical_p)
eq = _binary(ew.eq_p)
ne = _binary(ew.ne_p)
lt = _binary(ew.lt_p)
le = _binary(ew.le_p)
gt = _binary(ew.gt_p)
ge = _binary(ew.ge_p)
complex = _binary(ew.complex_p)  # noqa: A001
mulhi = _binary(ew.mulhi_p)

RoundingMethod = ew.RoundingMethod


def round(x, rounding_method=ew.RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
  return ew.round_p.bind(asarg(x), rounding_method=ew.RoundingMethod(int(rounding_method)))


def integer_pow(x, y: int):
  if not isinstance(y, (int, np.integer)):  # int(1.5) would silently truncate
    raise TypeError(f"integer_pow: exponent y must be a Python int, got {y!r} of type "
                    f"{type(y).__name__}")
  return ew.integer_pow_p.bind(asarg(x, "integer_pow", 0), y=int(y))


def convert_element_type(operand, new_dtype):
  """Casts to `new_dtype` (canonicalized); the result is strong."""
  new_dtype = dtypes.check_user_dtype(new_dtype, "convert_element_type")
  if operand is None:  # JAX asks None for its dtype first, hence its ValueError
    raise ValueError("Invalid argument to dtype: None.")
  out = _convert_element_type(operand, new_dtype, weak_type=False)
  if isinstance(out, np.generic):
    # A jax Array, as JAX's (internal casts keep NumPy scalars): one made before a trace is a
    # constvar there, one made while staging a literal (core.staging_trace)
    return core.array_from_numpy(np.asarray(out), False)
  return out


def _convert_element_type(operand, new_dtype=None, weak_type=False):
  """Casts, keeping the value unchanged when dtype and weak type already match."""
  operand = asarg(operand)
  old_dtype, old_weak = dtypes.dtype_and_weak(operand)
  if new_dtype is None:
    new_dtype = old_dtype
  new_dtype = dtypes.canonicalize_dtype(new_dtype)
  casts.check_convertible(old_dtype, new_dtype)
  if old_dtype == new_dtype and old_weak == weak_type and not isinstance(operand, np.generic):
    if type(operand) not in dtypes.typed_scalar_types:
      return operand
  if (type(operand) in dtypes.typed_scalar_types or isinstance(operand, (np.generic,))
      or (isinstance(operand, np.ndarray) and operand.ndim == 0)) \
      and getattr(new_dtype, "_rules", None) is None:  # a user extended dtype types an Array
    # Scalar constants are converted in Python so they stay literals when traced.
    if weak_type and new_dtype in (dtypes.default_int_dtype(), dtypes.default_float_dtype(),
                                   dtypes.default_complex_dtype()) \
        and type(operand) in dtypes.typed_scalar_types:
      return _typed_like(operand, new_dtype)
    val = casts.convert_value(np.asarray(operand), new_dtype)[()]
    if weak_type:
      return core.array_from_numpy(np.asarray(val), True) if core.current_trace() is \
          core.eval_trace else _weak_literal(val)
    return val
  return casts.convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def _typed_like(x, dtype):
  # `builtins.complex`: this module defines `lax.complex`, which shadows the builtin.
  k = dtype.kind
  if k in "iu":
    return dtypes.TypedInt(int(x.real if isinstance(x, builtins.complex) else x), dtype)
  if k == "f":
    return dtypes.TypedFloat(float(x.real if isinstance(x, builtins.complex) else x), dtype)
  return dtypes.TypedComplex(builtins.complex(x), dtype)


def _weak_literal(val):
  """A 0-d weak array constant (prints as a NumPy-valued literal when traced)."""
  return core.array_from_numpy(np.asarray(val), True)


def bitcast_convert_type(operand, new_dtype):
  return casts.bitcast_convert_type_p.bind(asarg(operand), new_dtype=np.dtype(new_dtype))


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  return casts.reduce_precision_p.bind(asarg(operand), exponent_bits=exponent_bits,
                                    mantissa_bits=mantissa_bits)


def select_n(which, *cases):
  return ew.select_n_p.bind(asarg(which, "select_n", 0),
                            *(asarg(c, "select_n", i + 1) for i, c in enumerate(cases)))


def select(pred, on_true, on_false):
  return ew.select_n_p.bind(asarg(pred, "select_n", 0), asarg(on_false, "select_n", 1),
                            asarg(on_true, "select_n", 2))


def clamp(min, x, max):  # noqa: A002
  return ew.clamp_p.bind(asarg(min, "clamp", 0), asarg(x, "clamp", 1), asarg(max, "clamp", 2))


def dtype(x, canonicalize: bool = False):
  return dtypes.dtype_and_weak(x)[0]


_ = config


shape_prims.register_above(asarg=asarg)
