"""jnp's elementwise functions: NumPy names over lax primitives, with JAX's promotion.

Most are one table row: (name, primitive, promotion). Functions with integer special cases
(`floor_divide`, `remainder`, `power`) are written out and jitted under JAX's eqn names.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src import core
from jaxlite._src import dtypes
from jaxlite._src.jit import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import lax
from jaxlite._src.numpy.util import (promote_args, promote_args_inexact, promote_args_numeric,
                                     promote_dtypes_inexact, promote_dtypes, dtype_weak,
                                     check_arraylike)

_PROMOTERS = {"same": promote_args, "inexact": promote_args_inexact,
              "numeric": promote_args_numeric}


_FAST_KINDS = {"same": "biufc", "inexact": "fc", "numeric": "iufc"}


def _unary_ufunc(name, prim, promote="same", kinds=None):
  promoter = _PROMOTERS[promote]
  fast_kinds = _FAST_KINDS[promote]

  def fn(x, /):
    if type(x) is core.array_type and x._value.dtype.kind in fast_kinds:
      return prim.bind(x)  # already of an accepted dtype: nothing to promote
    check_arraylike(name, x)
    (x,) = promoter(name, x)
    if kinds is not None:
      d = dtype_weak(x)[0]
      if ew.kind_of(d) not in kinds:
        raise TypeError(f"{name} does not accept dtype {d.name}.")
    return prim.bind(x)
  fn.__name__ = fn.__qualname__ = name
  return fn


def _binary_ufunc(name, prim, promote="same"):
  promoter = _PROMOTERS[promote]

  def fn(x, y, /):
    x, y = promoter(name, x, y)
    return prim.bind(x, y)
  fn.__name__ = fn.__qualname__ = name
  return fn


negative = _unary_ufunc("negative", ew.neg_p)
floor = _unary_ufunc("floor", ew.floor_p, "inexact")
ceil = _unary_ufunc("ceil", ew.ceil_p, "inexact")
exp = _unary_ufunc("exp", ew.exp_p, "inexact")
exp2 = _unary_ufunc("exp2", ew.exp2_p, "inexact")
log = _unary_ufunc("log", ew.log_p, "inexact")
log1p = _unary_ufunc("log1p", ew.log1p_p, "inexact")
expm1 = _unary_ufunc("expm1", ew.expm1_p, "inexact")
tanh = _unary_ufunc("tanh", ew.tanh_p, "inexact")
sin = _unary_ufunc("sin", ew.sin_p, "inexact")
cos = _unary_ufunc("cos", ew.cos_p, "inexact")
tan = _unary_ufunc("tan", ew.tan_p, "inexact")
arcsin = _unary_ufunc("arcsin", ew.asin_p, "inexact")
arccos = _unary_ufunc("arccos", ew.acos_p, "inexact")
arctan = _unary_ufunc("arctan", ew.atan_p, "inexact")
sinh = _unary_ufunc("sinh", ew.sinh_p, "inexact")
cosh = _unary_ufunc("cosh", ew.cosh_p, "inexact")
arcsinh = _unary_ufunc("arcsinh", ew.asinh_p, "inexact")
arctanh = _unary_ufunc("arctanh", ew.atanh_p, "inexact")
sqrt = _unary_ufunc("sqrt", ew.sqrt_p, "inexact")
cbrt = _unary_ufunc("cbrt", ew.cbrt_p, "inexact")
conjugate = conj = _unary_ufunc("conjugate", ew.conj_p)
real_prim = ew.real_p

_add = _binary_ufunc("add", ew.add_p)


def add(x, y, /):
  x, y = promote_args("add", x, y)
  if type(x) is not core.array_type and dtype_weak(x)[0] == np.bool_:
    return ew.or_p.bind(x, y)
  if type(x) is core.array_type and x._value.dtype == np.bool_:
    return ew.or_p.bind(x, y)
  return ew.add_p.bind(x, y)
subtract = _binary_ufunc("subtract", ew.sub_p)
maximum = _binary_ufunc("maximum", ew.max_p)
minimum = _binary_ufunc("minimum", ew.min_p)
arctan2 = _binary_ufunc("arctan2", ew.atan2_p, "inexact")
nextafter = _binary_ufunc("nextafter", ew.nextafter_p, "inexact")
equal = _binary_ufunc("equal", ew.eq_p)
not_equal = _binary_ufunc("not_equal", ew.ne_p)
less = _binary_ufunc("less", ew.lt_p)
less_equal = _binary_ufunc("less_equal", ew.le_p)
greater = _binary_ufunc("greater", ew.gt_p)
greater_equal = _binary_ufunc("greater_equal", ew.ge_p)
bitwise_and = _binary_ufunc("bitwise_and", ew.and_p)
bitwise_or = _binary_ufunc("bitwise_or", ew.or_p)
bitwise_xor = _binary_ufunc("bitwise_xor", ew.xor_p)
arccosh = internal_jit(_unary_ufunc("arccosh", ew.acosh_p, "inexact"))
positive = lambda x, /: promote_args("positive", x)[0]  # noqa: E731


def multiply(x, y, /):
  x, y = promote_args("multiply", x, y)
  if dtype_weak(x)[0] == np.bool_:
    return ew.and_p.bind(x, y)
  return ew.mul_p.bind(x, y)


def true_divide(x, y, /):
  x, y = promote_args_inexact("true_divide", x, y)
  return ew.div_p.bind(x, y)


divide = true_divide


def logical_and(x, y, /):
  return ew.and_p.bind(*_as_bool(x, y))


def logical_or(x, y, /):
  return ew.or_p.bind(*_as_bool(x, y))


def logical_xor(x, y, /):
  return ew.xor_p.bind(*_as_bool(x, y))


def logical_not(x, /):
  return ew.not_p.bind(*_as_bool(x))


def _as_bool(*args):
  args = promote_args("logical", *args)
  return [a if dtype_weak(a)[0] == np.bool_ else ew.ne_p.bind(a, _zero_like(a)) for a in args]


def _zero_like(x):
  d, w = dtype_weak(x)
  from jaxlite._src.numpy.util import scalar_to_dtype
  return scalar_to_dtype(0, d, w)


def invert(x, /):
  (x,) = promote_args("invert", x)
  return ew.not_p.bind(x)


bitwise_not = bitwise_invert = invert


def left_shift(x, y, /):
  x, y = promote_args_numeric("left_shift", x, y)
  return ew.shift_left_p.bind(x, y)


def right_shift(x, y, /):
  x, y = promote_args_numeric("right_shift", x, y)
  d = dtype_weak(x)[0]
  prim = ew.shift_right_logical_p if d.kind == "u" else ew.shift_right_arithmetic_p
  return prim.bind(x, y)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def absolute(x, /):
  (x,) = promote_args("absolute", x)
  d = dtype_weak(x)[0]
  if d.kind in "ub":
    return x
  return ew.abs_p.bind(x)


abs = absolute  # noqa: A001


def sign(x, /):
  (x,) = promote_args("sign", x)
  return ew.sign_p.bind(x)


def square(x, /):
  (x,) = promote_args_numeric("square", x)
  return ew.square_p.bind(x)


def reciprocal(x, /):
  (x,) = promote_args_inexact("reciprocal", x)
  return ew.integer_pow_p.bind(x, y=-1)


def isfinite(x, /):
  (x,) = promote_args("isfinite", x)
  d = dtype_weak(x)[0]
  if not dtypes.is_inexact(d):
    return _full_bool(x, True)
  if d.kind == "c":
    return logical_and(ew.is_finite_p.bind(ew.real_p.bind(x)),
                       ew.is_finite_p.bind(ew.imag_p.bind(x)))
  return ew.is_finite_p.bind(x)


def isnan(x, /):
  (x,) = promote_args("isnan", x)
  d = dtype_weak(x)[0]
  if not dtypes.is_inexact(d):
    return _full_bool(x, False)
  return ew.ne_p.bind(x, x)


@internal_jit
def isinf(x, /):
  (x,) = promote_args("isinf", x)
  d = dtype_weak(x)[0]
  if not dtypes.is_inexact(d):
    return _full_bool(x, False)
  if d.kind == "c":
    return logical_or(isinf(ew.real_p.bind(x)), isinf(ew.imag_p.bind(x)))
  return ew.eq_p.bind(ew.abs_p.bind(x), np.asarray(np.inf, d)[()])


def isposinf(x, /):
  (x,) = promote_args("isposinf", x)
  return equal(x, np.inf)


def isneginf(x, /):
  (x,) = promote_args("isneginf", x)
  return equal(x, -np.inf)


def _full_bool(x, value):
  from jaxlite._src.numpy.creation import full_like
  return full_like(x, value, dtype=np.bool_)


@internal_jit
def floor_divide(x1, x2, /):
  x1, x2 = promote_args_numeric("floor_divide", x1, x2)
  d = dtype_weak(x1)[0]
  if d.kind in "iu":
    q = ew.div_p.bind(x1, x2)
    if d.kind == "u":
      return q
    r = ew.rem_p.bind(x1, x2)
    zero = _zero_like(x1)
    # Round toward -inf where the remainder's sign differs from the divisor's (x // 0 too).
    fix = logical_and(ew.ne_p.bind(r, zero),
                      ew.ne_p.bind(ew.sign_p.bind(r), ew.sign_p.bind(x2)))
    return ew.select_n_p.bind(fix, q, ew.sub_p.bind(q, _one_like(q)))
  if d.kind == "c":
    raise TypeError("floor_divide does not support complex-valued inputs")
  return ew.floor_p.bind(ew.div_p.bind(x1, x2))


def _one_like(x):
  d, w = dtype_weak(x)
  from jaxlite._src.numpy.util import scalar_to_dtype
  return scalar_to_dtype(1, d, w)


@internal_jit
def remainder(x1, x2, /):
  x1, x2 = promote_args_numeric("remainder", x1, x2)
  zero = _zero_like(x1)
  r = ew.rem_p.bind(x1, x2)
  d = dtype_weak(x1)[0]
  if d.kind == "u":
    return r
  fix = logical_and(ew.ne_p.bind(r, zero), ew.ne_p.bind(ew.lt_p.bind(r, zero),
                                                        ew.lt_p.bind(x2, zero)))
  out = ew.select_n_p.bind(fix, r, ew.add_p.bind(r, x2))
  if d.kind in "iu":
    # x % 0 is 0 in JAX (XLA's rem gives x; the sign fix-up then cancels).
    out = ew.select_n_p.bind(ew.eq_p.bind(x2, zero), out, ew.mul_p.bind(out, zero))
  return out


mod = remainder


@internal_jit
def fmod(x1, x2, /):
  x1, x2 = promote_args_numeric("fmod", x1, x2)
  return ew.rem_p.bind(x1, x2)


def divmod(x1, x2, /):  # noqa: A001
  return floor_divide(x1, x2), remainder(x1, x2)


def power(x1, x2, /):
  """x1 ** x2; a static integer exponent lowers to integer_pow like JAX."""
  t2 = type(x2)
  if t2 is int or (isinstance(x2, (np.integer,)) and not isinstance(x1, (int, float))):
    (x1,) = promote_args_numeric("power", x1)
    d = dtype_weak(x1)[0]
    if d.kind in "iu" and x2 < 0:
      raise ValueError("Integers cannot be raised to negative powers.")
    return ew.integer_pow_p.bind(x1, y=int(x2))
  x1, x2 = promote_args_numeric("power", x1, x2)
  d = dtype_weak(x1)[0]
  if d.kind in "iub":
    return _integer_power(x1, x2)
  return ew.pow_p.bind(x1, x2)


pow = power  # noqa: A001


@internal_jit
def _integer_power(x1, x2):
  # Exponentiation by squaring over the bits of a traced integer exponent.
  d = dtype_weak(x1)[0]
  acc = ew.mul_p.bind(_one_like(x1), ew.convert_element_type_p.bind(
      ew.ge_p.bind(x2, _zero_like(x2)), new_dtype=d, weak_type=False))
  base = x1
  e = x2
  for _ in range(d.itemsize * 8):
    bit = ew.ne_p.bind(ew.and_p.bind(e, _one_like(e)), _zero_like(e))
    acc = ew.select_n_p.bind(bit, acc, ew.mul_p.bind(acc, base))
    base = ew.mul_p.bind(base, base)
    e = ew.shift_right_logical_p.bind(e, _one_like(e))
  return acc


def float_power(x1, x2, /):
  x1, x2 = promote_args_inexact("float_power", x1, x2)
  return ew.pow_p.bind(x1, x2)


def log2(x, /):
  (x,) = promote_args_inexact("log2", x)
  d = dtype_weak(x)[0]
  return ew.div_p.bind(ew.log_p.bind(x), np.asarray(np.log(2), d)[()])


def log10(x, /):
  (x,) = promote_args_inexact("log10", x)
  d = dtype_weak(x)[0]
  return ew.div_p.bind(ew.log_p.bind(x), np.asarray(np.log(10), d)[()])


def logaddexp(x1, x2, /):
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  amax = ew.max_p.bind(x1, x2)
  delta = ew.sub_p.bind(x1, x2)
  out = ew.add_p.bind(amax, ew.log1p_p.bind(ew.exp_p.bind(ew.neg_p.bind(ew.abs_p.bind(delta)))))
  return ew.select_n_p.bind(ew.ne_p.bind(delta, delta), out, ew.add_p.bind(x1, x2))


def deg2rad(x, /):
  (x,) = promote_args_inexact("deg2rad", x)
  return multiply(x, np.pi / 180)


def rad2deg(x, /):
  (x,) = promote_args_inexact("rad2deg", x)
  return multiply(x, 180 / np.pi)


radians, degrees = deg2rad, rad2deg


@internal_jit
def round(a, decimals: int = 0, out=None):  # noqa: A001
  (a,) = promote_args("round", a)
  d = dtype_weak(a)[0]
  if d.kind in "iub":
    return a
  if decimals == 0:
    return ew.round_p.bind(a, rounding_method=ew.RoundingMethod.TO_NEAREST_EVEN)
  factor = np.asarray(10.0 ** decimals, d)[()]
  return ew.div_p.bind(ew.round_p.bind(ew.mul_p.bind(a, factor),
                                       rounding_method=ew.RoundingMethod.TO_NEAREST_EVEN),
                       factor)


around = round
round.__wrapped_name__ = "round"


@internal_jit
def rint(x, /):
  (x,) = promote_args_inexact("rint", x)
  return ew.round_p.bind(x, rounding_method=ew.RoundingMethod.TO_NEAREST_EVEN)


@internal_jit
def trunc(x, /):
  (x,) = promote_args("trunc", x)
  d = dtype_weak(x)[0]
  if d.kind in "iub":
    return x
  return ew.select_n_p.bind(ew.lt_p.bind(x, _zero_like(x)), ew.floor_p.bind(x),
                            ew.ceil_p.bind(x))


fix = trunc


def real(x, /):
  (x,) = promote_args("real", x)
  return ew.real_p.bind(x) if dtype_weak(x)[0].kind == "c" else x


def imag(x, /):
  (x,) = promote_args("imag", x)
  if dtype_weak(x)[0].kind == "c":
    return ew.imag_p.bind(x)
  return multiply(x, 0)


@internal_jit
def signbit(x, /):
  (x,) = promote_args("signbit", x)
  d = dtype_weak(x)[0]
  if d.kind == "i":
    return ew.lt_p.bind(x, _zero_like(x))
  if d.kind in "ub":
    return _full_bool(x, False)
  bits = {2: np.int16, 4: np.int32, 8: np.int64}[d.itemsize]
  return ew.lt_p.bind(ew.bitcast_convert_type_p.bind(x, new_dtype=np.dtype(bits)),
                      np.asarray(0, bits)[()])


@internal_jit
def copysign(x1, x2, /):
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  return ew.select_n_p.bind(signbit(x2), absolute(x1), negative(absolute(x1)))


@internal_jit
def hypot(x1, x2, /):
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  return sqrt(add(multiply(x1, x1), multiply(x2, x2)))


@internal_jit
def heaviside(x1, x2, /):
  x1, x2 = promote_args_inexact("heaviside", x1, x2)
  zero = _zero_like(x1)
  return ew.select_n_p.bind(ew.lt_p.bind(x1, zero),
                            ew.select_n_p.bind(ew.eq_p.bind(x1, zero), _one_like_full(x1), x2),
                            ew.mul_p.bind(x1, zero))


def _one_like_full(x):
  return add(multiply(x, 0), 1)


@internal_jit
def fmax(x1, x2):
  x1, x2 = promote_args("fmax", x1, x2)
  return ew.select_n_p.bind(isnan(x2), ew.select_n_p.bind(isnan(x1), ew.max_p.bind(x1, x2), x2),
                            x1)


@internal_jit
def fmin(x1, x2):
  x1, x2 = promote_args("fmin", x1, x2)
  return ew.select_n_p.bind(isnan(x2), ew.select_n_p.bind(isnan(x1), ew.min_p.bind(x1, x2), x2),
                            x1)


def sinc(x, /):
  (x,) = promote_args_inexact("sinc", x)
  pix = multiply(x, np.pi)
  safe = ew.select_n_p.bind(ew.eq_p.bind(x, _zero_like(x)), pix, _one_like_full(x))
  return ew.select_n_p.bind(ew.eq_p.bind(x, _zero_like(x)),
                            ew.div_p.bind(ew.sin_p.bind(safe), safe), _one_like_full(x))


_ = (core, lax, promote_dtypes, promote_dtypes_inexact)
