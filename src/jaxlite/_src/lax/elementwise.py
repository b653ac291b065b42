"""Elementwise primitives: unary math, binary arithmetic, bitwise ops and comparisons (the casts
are in casts.py, select_n and clamp in select.py).

Each is one row through the family helpers; NumPy computes them, with JAX's integer-division,
shift, rounding and saturating-cast semantics where NumPy differs.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import dtypes
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.compiler.xla import lowering as hlo
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.casts import cast, convert_element_type_p
from jaxlite._src.lax.families import (binop, check_dtype_kinds, dtype_kind_error, first_weak,
                                       kind_of, numpy_eqn_templates, numpy_templates,
                                       numpy_quiet_primitives, unop,
                                       broadcast_shapes_lax)

def _err():
  return np.errstate(all="ignore")


def _quiet(fn):
  def wrapped(*args):
    with _err():
      return fn(*args)
  wrapped.__name__ = getattr(fn, "__name__", "fn")
  return wrapped


# --- unary -------------------------------------------------------------------------------------

def _round_away(x):
  # From the truncation, so that 0.49999997 stays 0 and -0.3 rounds to -0.0 as in XLA.
  whole = np.trunc(x)
  return np.copysign(np.abs(whole) + (np.abs(x - whole) >= 0.5), x).astype(x.dtype)


def _rsqrt(x):
  return 1 / np.sqrt(x)


def _logistic(x):
  # float16/bfloat16 in float32, rounded once at the end (as XLA computes it; each NumPy op on
  # a half dtype rounds, and the formula's three roundings are a half ulp off: bf16 at -3)
  wide = x.astype(np.float32) if x.dtype.itemsize == 2 else x
  out = np.where(wide >= 0, 1 / (1 + np.exp(-wide)), np.exp(wide) / (1 + np.exp(wide)))
  return out.astype(x.dtype)


def _sign(x):
  if x.dtype.kind == "c":
    a = np.abs(x)
    return np.where(a == 0, 0, x / np.where(a == 0, 1, a)).astype(x.dtype)
  if dtypes.kind_of_dtype(x.dtype) == "f":  # sign(±0) is ±0 and sign(NaN) is NaN, as in XLA
    return np.where(x == 0, x, np.sign(x)).astype(x.dtype)
  return np.sign(x)


def _popcount(x):
  bits = x.dtype.itemsize * 8
  u = x.view(np.dtype(f"u{x.dtype.itemsize}")) if isinstance(x, np.ndarray) else \
      np.asarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))
  return np.bitwise_count(u).astype(x.dtype) if bits else u


def _clz(x):
  # Bit length by halving on the unsigned view (exact for 64 bits, unlike a float log2).
  width = x.dtype.itemsize * 8
  u = np.asarray(x).view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
  length = np.zeros(u.shape, np.int64)
  for step in (32, 16, 8, 4, 2, 1):
    high = u >> np.uint64(step)
    has = high != 0
    length += np.where(has, step, 0)
    u = np.where(has, high, u)
  length += (u != 0)
  return (width - length).astype(x.dtype)


def _expm1(x):
  out = np.expm1(x)
  if out.dtype.kind == "c":
    # On the real axis XLA (hence JAX) returns expm1(re) + 0j, also for re = inf or nan where
    # NumPy's inf * sin(0) gives a nan imaginary part (the standard's expm1(+inf + 0j) = inf + 0j).
    on_axis = np.imag(x) == 0
    if on_axis.any():
      out = np.where(on_axis, np.expm1(np.real(x)).astype(out.dtype), out)
  return out


def _cbrt(x):
  return np.cbrt(x)


def _square(x):
  return np.multiply(x, x)


def _real_dtype(dt):
  return np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)


def _abs_dtype(dt):
  return _real_dtype(dt) if dt.kind == "c" else dt


FLOAT = "f"
INEXACT = "fc"
NUM = "fciu"
SIGNED_NUM = "fci"
INT = "iu"
INT_BOOL = "iub"

neg_p = unop("neg", np.negative, NUM, template="np.negative({0})", hlo="negate")
sign_p = unop("sign", _sign, NUM)
floor_p = unop("floor", np.floor, FLOAT, template="np.floor({0})", hlo="floor")
ceil_p = unop("ceil", np.ceil, FLOAT, template="np.ceil({0})", hlo="ceil")
is_finite_p = unop("is_finite", np.isfinite, FLOAT, out_dtype=lambda d: dtypes.bool_,
                   hlo="is_finite")
exp_p = unop("exp", _quiet(np.exp), INEXACT, template="np.exp({0})", hlo="exponential")
exp2_p = unop("exp2", _quiet(np.exp2), INEXACT, template="np.exp2({0})")
log_p = unop("log", _quiet(np.log), INEXACT, template="np.log({0})", hlo="log")
log1p_p = unop("log1p", _quiet(np.log1p), INEXACT, template="np.log1p({0})", hlo="log_plus_one")
expm1_p = unop("expm1", _quiet(_expm1), INEXACT, hlo="exponential_minus_one")
tanh_p = unop("tanh", np.tanh, INEXACT, template="np.tanh({0})", hlo="tanh")
logistic_p = unop("logistic", _quiet(_logistic), INEXACT, hlo="logistic")
sin_p = unop("sin", _quiet(np.sin), INEXACT, template="np.sin({0})", hlo="sine")
cos_p = unop("cos", _quiet(np.cos), INEXACT, template="np.cos({0})", hlo="cosine")
tan_p = unop("tan", _quiet(np.tan), INEXACT, hlo="tan")
asin_p = unop("asin", _quiet(np.arcsin), INEXACT, hlo="chlo.asin")
acos_p = unop("acos", _quiet(np.arccos), INEXACT, hlo="chlo.acos")
atan_p = unop("atan", np.arctan, INEXACT, hlo="chlo.atan")
sinh_p = unop("sinh", _quiet(np.sinh), INEXACT, hlo="chlo.sinh")
cosh_p = unop("cosh", _quiet(np.cosh), INEXACT, hlo="chlo.cosh")
asinh_p = unop("asinh", np.arcsinh, INEXACT, hlo="chlo.asinh")
acosh_p = unop("acosh", _quiet(np.arccosh), INEXACT, hlo="chlo.acosh")
atanh_p = unop("atanh", _quiet(np.arctanh), INEXACT, hlo="chlo.atanh")
sqrt_p = unop("sqrt", _quiet(np.sqrt), INEXACT, template="np.sqrt({0})", hlo="sqrt")
rsqrt_p = unop("rsqrt", _quiet(_rsqrt), INEXACT, hlo="rsqrt")
cbrt_p = unop("cbrt", _cbrt, FLOAT, hlo="cbrt")
for _p in (exp_p, exp2_p, log_p, log1p_p, expm1_p, tanh_p, logistic_p, sin_p, cos_p, tan_p,
           sqrt_p, rsqrt_p, cbrt_p):
  pp.param_rules[_p] = pp.ACCURACY_RULE
del _p
abs_p = unop("abs", np.abs, SIGNED_NUM, out_dtype=_abs_dtype, template="np.abs({0})", hlo="abs")
not_p = unop("not", np.invert, INT_BOOL, template="np.invert({0})", hlo="not")
population_count_p = unop("population_count", _popcount, INT, hlo="popcnt")
clz_p = unop("clz", _clz, INT, hlo="count_leading_zeros")
real_p = unop("real", np.real, "c", out_dtype=_real_dtype, fuse=False, hlo="real")
imag_p = unop("imag", np.imag, "c", out_dtype=_real_dtype, fuse=False, hlo="imag")
class _Conj(core.Primitive):
  """conj, bound with JAX's `input_dtype` param (jaxprs print `conj[input_dtype=complex64]`)."""
  __slots__ = ()

  def bind(self, *args, **params):
    if "input_dtype" not in params:
      params["input_dtype"] = core.get_aval(args[0]).dtype
    return core.Primitive.bind(self, *args, **params)


conj_p = unop("conj", np.conjugate, "fc", out_dtype=lambda d: d if d.kind == "c" else
              dtypes.complex128 if d == np.float64 else dtypes.complex64, primitive_type=_Conj,
              fuse=False)  # complex parts: not in tests/test_tier1.py's table yet
square_p = unop("square", _quiet(_square), NUM, template="np.multiply({0}, {0})")


def _wrap_conj(rule):
  """JAX's conj takes float32, float64 and complex operands only (not float16/bfloat16)."""
  def checked(x, **params):
    d = x.dtype  # an aval's while tracing, an ndarray's eagerly
    if d.kind != "c" and d not in (np.float32, np.float64):
      raise dtype_kind_error("conj", d, "float32, complexfloating, float64")
    return rule(x, **params)
  return checked


conj_p.def_abstract_eval(_wrap_conj(conj_p.abstract_eval))
conj_p.def_impl(_wrap_conj(conj_p.impl))


# Their templates may warn on overflow or domain errors: generated code silences NumPy there,
# since JAX returns inf/nan without warnings.
# sin/cos of +-inf: NaN, which NumPy warns about ("invalid value") and XLA does not.
numpy_quiet_primitives.update({exp_p, exp2_p, log_p, log1p_p, expm1_p, sqrt_p, sin_p, cos_p})


# round carries a rounding_method param: 0 = away from zero, 1 = to nearest even.
def _round_impl(x, rounding_method=0):
  check_dtype_kinds("round", x.dtype, FLOAT)
  if int(rounding_method) == 1:
    return np.round(x)
  with _err():
    return _round_away(np.asarray(x))


round_p = core.Primitive("round")
round_p.def_impl(_round_impl)
round_p.def_abstract_eval(lambda x, rounding_method=0: (
    check_dtype_kinds("round", x.dtype, FLOAT), x)[1])
round_p.eager_weak_type = first_weak
batching.defvectorized(round_p)


class RoundingMethod(int):
  """lax.RoundingMethod: AWAY_FROM_ZERO = 0, TO_NEAREST_EVEN = 1."""
  def __repr__(self):
    return f"{int(self)}"


RoundingMethod.AWAY_FROM_ZERO = RoundingMethod(0)
RoundingMethod.TO_NEAREST_EVEN = RoundingMethod(1)


# --- binary ------------------------------------------------------------------------------------

def _div(x, y):
  if x.dtype.kind in "iu":
    return _int_div(x, y)
  with _err():
    return np.true_divide(x, y)


def _int_div(x, y):
  """C-style truncating division; division by zero gives -1 like XLA on CPU."""
  x, y = np.asarray(x), np.asarray(y)
  zero = y == 0
  safe = np.where(zero, 1, y).astype(x.dtype)
  with _err():
    # x - fmod(x, y) is an exact multiple of y, so floor division of it truncates.
    q = np.floor_divide(x - np.fmod(x, safe), safe).astype(x.dtype)
  if x.dtype.kind == "u":
    return np.where(zero, np.array(-1).astype(x.dtype), q)
  return np.where(zero, np.array(-1, x.dtype), q)


def _rem(x, y):
  """C-style remainder (sign of the dividend); x rem 0 is x for integers."""
  x, y = np.asarray(x), np.asarray(y)
  if x.dtype.kind in "iu":
    zero = y == 0
    safe = np.where(zero, 1, y).astype(x.dtype)
    with _err():
      r = np.fmod(x, safe)
    return np.where(zero, x, r).astype(x.dtype)
  with _err():
    return np.fmod(x, y)


# XLA orders -0 below +0 in max and min; NumPy returns its second operand on a tie of zeros. The
# result of max is negative only where both operands are (of min, where either is), so the sign
# is restored from the max (min) of the operands' signs.
_SIGNED_EXTREMUM = "np.copysign(np.{0}({{0}}, {{1}}), np.{0}(np.copysign(1, {{0}}), " \
                   "np.copysign(1, {{1}})))"


def _max(x, y):
  if kind_of(np.result_type(x)) == "f":
    return np.copysign(np.maximum(x, y), np.maximum(np.copysign(1, x), np.copysign(1, y)))
  return np.maximum(x, y)


def _min(x, y):
  if kind_of(np.result_type(x)) == "f":
    return np.copysign(np.minimum(x, y), np.minimum(np.copysign(1, x), np.copysign(1, y)))
  return np.minimum(x, y)


def _extremum_template(ufunc: str, safe_zero_sign: bool):
  """One ufunc call unless float zeros of both signs can meet: a literal operand that is not
  zero, or a second one that is the zero NumPy's tie-break already returns right (relu's
  max(x, 0.0))."""
  plain, signed = f"np.{ufunc}({{0}}, {{1}})", _SIGNED_EXTREMUM.format(ufunc)

  def rule(eqn):
    if kind_of(eqn.outvars[0].aval.dtype) != "f":
      return plain
    if eqn.outvars[0].aval.dtype == np.float16:
      return signed  # NumPy's float16 loop breaks ties the other way (max(-0., 0.) is -0.)
    x, y = eqn.invars
    if type(y) is core.Literal and (np.asarray(y.val) != 0
                                    or bool(np.signbit(y.val)) == safe_zero_sign):
      return plain
    if type(x) is core.Literal and np.asarray(x.val) != 0:  # (uniform's lower bound)
      return plain
    return signed
  return rule


def _pow(x, y):
  with _err():
    return np.power(x, y)


def _in_range_shift(y, width) -> bool:
  """A scalar shift amount within [0, width): NumPy shifts need no masking then."""
  return np.ndim(y) == 0 and 0 <= y < width


def _shift_left(x, y):
  width = x.dtype.itemsize * 8
  ux = np.asarray(x)
  if _in_range_shift(y, width):
    return np.left_shift(ux, np.asarray(y).astype(x.dtype))
  big = (y < 0) | (y >= width)
  with _err():
    out = np.left_shift(ux, np.where(big, 0, y).astype(x.dtype))
  return np.where(big, np.zeros((), x.dtype), out).astype(x.dtype)


def _shift_right_arithmetic(x, y):
  width = x.dtype.itemsize * 8
  sx = np.asarray(x).view(np.dtype(f"i{x.dtype.itemsize}")) if x.dtype.kind == "u" else \
      np.asarray(x)
  if _in_range_shift(y, width):
    out = np.right_shift(sx, np.asarray(y).astype(sx.dtype))
    return np.asarray(out).view(x.dtype) if x.dtype.kind == "u" else out
  big = (y < 0) | (y >= width)
  yy = np.where(big, width - 1, y).astype(sx.dtype)
  out = np.right_shift(sx, yy)
  return np.asarray(out).view(x.dtype) if x.dtype.kind == "u" else out.astype(x.dtype)


def _shift_right_logical(x, y):
  width = x.dtype.itemsize * 8
  ux = np.asarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))
  if _in_range_shift(y, width):
    return np.asarray(np.right_shift(ux, np.asarray(y).astype(ux.dtype))).view(x.dtype)
  big = (y < 0) | (y >= width)
  yy = np.where(big, 0, y).astype(ux.dtype)
  out = np.where(big, np.zeros((), ux.dtype), np.right_shift(ux, yy)).astype(ux.dtype)
  return out.view(x.dtype)


def _nextafter(x, y):
  # Equal operands give y (so nextafter(0, -0) is -0); NumPy's float16 loop returns x.
  return np.where(x == y, y, np.nextafter(x, y)).astype(np.result_type(x, y))


def _complex(x, y):
  # Built from its parts: x + 1j * y would turn an infinite y into a NaN real part.
  out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)),
                 np.complex128 if np.result_type(x, y) == np.float64 else np.complex64)
  out.real, out.imag = x, y
  return out


def _mulhi(x, y):
  """The high half of the double-width product (two's complement for signed types)."""
  bits = x.dtype.itemsize * 8
  x, y = np.asarray(x), np.asarray(y)
  if bits < 64:
    wide = np.int64 if x.dtype.kind == "i" else np.uint64
    return (x.astype(wide) * y.astype(wide) >> bits).astype(x.dtype)
  # 64 bits: schoolbook product of 32-bit halves on the unsigned patterns.
  u64, lo32 = np.uint64, np.uint64(0xFFFFFFFF)
  ux, uy = x.view(u64), y.view(u64)
  xl, xh, yl, yh = ux & lo32, ux >> u64(32), uy & lo32, uy >> u64(32)
  ll, lh, hl, hh = xl * yl, xl * yh, xh * yl, xh * yh
  mid = (ll >> u64(32)) + (lh & lo32) + (hl & lo32)
  hi = hh + (lh >> u64(32)) + (hl >> u64(32)) + (mid >> u64(32))
  if x.dtype.kind == "i":  # signed high half: subtract y where x < 0 and x where y < 0
    hi = hi - np.where(x < 0, uy, u64(0)) - np.where(y < 0, ux, u64(0))
  return hi.view(x.dtype)


def _atan2(x, y):
  x, y = np.asarray(x), np.asarray(y)
  if x.dtype.kind != "c":
    return np.arctan2(x, y)
  # NumPy has no complex arctan2; XLA (and so JAX) defines it as -i log(w), w = (y + ix) /
  # sqrt(x² + y²). Split as arg(w) - i log|w|, with log|w| = ½ log1p((|y + ix|² - |x² + y²|) /
  # |x² + y²|) so that real inputs give an exact zero imaginary part; in complex128 so that
  # complex64 results round once.
  x2, y2 = x.astype(np.complex128), y.astype(np.complex128)
  with np.errstate(all="ignore"):
    num, den2 = y2 + 1j * x2, x2 * x2 + y2 * y2
    mod_num2, mod_den2 = num.real ** 2 + num.imag ** 2, np.abs(den2)
    real = np.angle(num) - 0.5 * np.angle(den2)  # arg(w), brought back to (-pi, pi]
    real = np.where(real > np.pi, real - 2 * np.pi, np.where(real <= -np.pi, real + 2 * np.pi,
                                                             real))
    imag = -0.5 * np.log1p((mod_num2 - mod_den2) / mod_den2)
    return (real + 1j * imag).astype(x.dtype)


add_p = binop("add", np.add, "fciu", template="np.add({0}, {1})", hlo="add")
sub_p = binop("sub", np.subtract, "fciu", template="np.subtract({0}, {1})", hlo="subtract")
mul_p = binop("mul", np.multiply, "fciu", template="np.multiply({0}, {1})", hlo="multiply")
pp.param_rules[mul_p] = pp.ParamRule(drop={"out_dtype": pp.is_none})
div_p = binop("div", _div, "fciu", hlo="divide")


def _plain_inexact(dtype) -> bool:
  """A NumPy float or complex dtype (not an ml_dtypes float, whose ufunc loops differ)."""
  return isinstance(dtype, np.dtype) and dtype.kind in "fc"


# Generated code calls ufuncs where the kernel's dtype dispatch is decided by the eqn's avals
# (a loop body pays the kernel's checks on every iteration otherwise).
numpy_eqn_templates[div_p] = lambda eqn: (
    "np.true_divide({0}, {1})" if _plain_inexact(eqn.outvars[0].aval.dtype) else None)
numpy_quiet_primitives.add(div_p)
rem_p = binop("rem", _rem, "fiu", hlo="remainder")
pow_p = binop("pow", _pow, "fc")
# Complex max/min order by real part, then imaginary part (as NumPy's maximum/minimum do).
max_p = binop("max", _max, "fciub", template="np.maximum({0}, {1})", hlo="maximum")
min_p = binop("min", _min, "fciub", template="np.minimum({0}, {1})", hlo="minimum")
numpy_eqn_templates[max_p] = _extremum_template("maximum", False)
numpy_eqn_templates[min_p] = _extremum_template("minimum", True)


def _pow_abstract(x, y, **params):
  """pow takes an integer exponent too (x ** 3 for float x keeps x's dtype)."""
  check_dtype_kinds("pow", x.dtype, "fc", 0)
  check_dtype_kinds("pow", y.dtype, "fciu", 1)
  if kind_of(y.dtype) not in "iu" and y.dtype != x.dtype:
    raise TypeError(
        "the first argument to pow must have an inexact dtype (float or complex), and the "
        "second argument must have an inexact or integer dtype, and two inexact dtypes must "
        f"match, but got {dtypes.dtype_name(x.dtype)} and {dtypes.dtype_name(y.dtype)} "
        "respectively.")
  shape = broadcast_shapes_lax("pow", x.shape, y.shape)
  return core.ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


def _pow_impl(x, y):
  _pow_abstract(core.get_aval(x), core.get_aval(y))
  return np.asarray(_pow(x, y)).astype(x.dtype, copy=False)


pow_p.def_abstract_eval(_pow_abstract)
pow_p.def_impl(_pow_impl)


def _pow_template(eqn):
  """np.power where NumPy's result already has the base's dtype (float64 ** int32): the kernel's
  cast back would be a no-op."""
  x, y = (v.aval.dtype for v in eqn.invars)
  if _plain_inexact(x) and isinstance(y, np.dtype) and np.result_type(x, y) == x:
    return "np.power({0}, {1})"
  return None


numpy_eqn_templates[pow_p] = _pow_template
numpy_quiet_primitives.add(pow_p)
atan2_p = binop("atan2", _atan2, "fc", hlo="atan2")
nextafter_p = binop("nextafter", _nextafter, "f", hlo="chlo.next_after")
and_p = binop("and", np.bitwise_and, "iub", template="np.bitwise_and({0}, {1})", hlo="and")
or_p = binop("or", np.bitwise_or, "iub", template="np.bitwise_or({0}, {1})", hlo="or")
xor_p = binop("xor", np.bitwise_xor, "iub", template="np.bitwise_xor({0}, {1})", hlo="xor")
shift_left_p = binop("shift_left", _shift_left, "iu", hlo="shift_left")
shift_right_arithmetic_p = binop("shift_right_arithmetic", _shift_right_arithmetic, "iu",
                                 hlo="shift_right_arithmetic")
shift_right_logical_p = binop("shift_right_logical", _shift_right_logical, "iu",
                              hlo="shift_right_logical")
mulhi_p = binop("mulhi", _quiet(_mulhi), "iu", fuse=False)


def _shift_right_logical_template(eqn):
  """An unsigned operand shifted by a literal amount below its width: NumPy's own shift (the
  kernel's masking and signed views are for the other cases)."""
  x, y = eqn.invars
  dtype = x.aval.dtype
  if isinstance(dtype, np.dtype) and dtype.kind == "u" and type(y) is core.Literal \
      and not np.ndim(y.val) and 0 <= int(y.val) < dtype.itemsize * 8:
    return "np.right_shift({0}, {1})"
  return None


numpy_eqn_templates[shift_right_logical_p] = _shift_right_logical_template
complex_p = binop("complex", _complex, "f",
                  out_dtype=None, fuse=False, hlo="complex")
eq_p = binop("eq", np.equal, "fciub", out_dtype=dtypes.bool_, template="np.equal({0}, {1})",
             keys=True, hlo=hlo.compare_rule("EQ"))
ne_p = binop("ne", np.not_equal, "fciub", out_dtype=dtypes.bool_,
             template="np.not_equal({0}, {1})", keys=True, hlo=hlo.compare_rule("NE"))
lt_p = binop("lt", np.less, "fiub", out_dtype=dtypes.bool_, template="np.less({0}, {1})",
             hlo=hlo.compare_rule("LT"))
le_p = binop("le", np.less_equal, "fiub", out_dtype=dtypes.bool_,
             template="np.less_equal({0}, {1})", hlo=hlo.compare_rule("LE"))
gt_p = binop("gt", np.greater, "fiub", out_dtype=dtypes.bool_, template="np.greater({0}, {1})",
             hlo=hlo.compare_rule("GT"))
ge_p = binop("ge", np.greater_equal, "fiub", out_dtype=dtypes.bool_,
             template="np.greater_equal({0}, {1})", hlo=hlo.compare_rule("GE"))


# complex(x, y) makes a complex dtype out of two floats: its own abstract eval.
def _complex_abstract(x, y):
  for i, d in enumerate((x.dtype, y.dtype)):  # JAX's complex takes float32/float64 only
    if d not in (np.float32, np.float64):
      raise dtype_kind_error("complex", d, "float32, float64", i)
  if x.dtype != y.dtype:
    raise TypeError(f"lax.complex requires arguments to have the same dtypes, got "
                    f"{x.dtype.name}, {y.dtype.name}.")
  shape = broadcast_shapes_lax("complex", x.shape, y.shape)
  dt = dtypes.complex128 if x.dtype == np.float64 else dtypes.complex64
  return ShapedArray(shape, dt, x.weak_type and y.weak_type)


def _complex_impl(x, y):
  _complex_abstract(core.get_aval(x), core.get_aval(y))
  return _complex(x, y)


complex_p.def_abstract_eval(_complex_abstract)
complex_p.def_impl(_complex_impl)


# --- autodiff rules of the unary and binary primitives: one line each ---------------------------
# t: tangent, y: primal output, x (and z): primal inputs. The forms follow JAX's rules so that
# differentiated jaxprs print the same eqns.

_PY_TYPE_OF_KIND = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def _const(x, v):
  """`v` in `x`'s dtype, a literal in jaxprs (JAX's `_const`): weak like `x` when `x` is a
  weak scalar whose dtype is the default one for `v`'s Python type."""
  aval = core.get_aval(x)
  if aval.weak_type and not aval.shape:
    val = dtypes.weak_scalar(_PY_TYPE_OF_KIND[kind_of(aval.dtype)](v))
    if getattr(val, "dtype", None) == aval.dtype:
      return val
  return np.array(v, aval.dtype)[()]


def _full_like(x, v):
  """`v` spread over `x`'s shape: a literal for scalars, else one broadcast_in_dim eqn."""
  aval = core.get_aval(x)
  scalar = core.array_from_numpy(np.array(v, aval.dtype), aval.weak_type)
  if not aval.shape:
    return scalar
  return shape_prims.broadcast_in_dim_p.bind(scalar, shape=aval.shape, broadcast_dimensions=(),
                                             sharding=None)


def _maybe_broadcast(shape, x):
  """`x` broadcast to `shape` with lax's rules (rank-0, or size-1 dims stretching)."""
  xs = core.get_aval(x).shape
  if xs == tuple(shape):
    return x
  keep = tuple(i for i, (a, b) in enumerate(zip(xs, shape)) if a == b) if xs else ()
  if len(keep) != len(xs):
    x = shape_prims.reshape_p.bind(x, new_sizes=tuple(xs[i] for i in keep), dimensions=None,
                                   sharding=None)
  return shape_prims.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=keep,
                                             sharding=None)


def _unbroadcast(aval, x):
  """The cotangent `x` summed back down to an operand of type `aval` that lax broadcast."""
  reduce_sum_p = shape_prims._above["reduce_sum_p"]  # registered by lax.reductions
  xs = core.get_aval(x).shape
  if xs == aval.shape:
    return x
  if not aval.shape:
    return reduce_sum_p.bind(x, axes=tuple(range(len(xs))), out_sharding=None)
  dims = tuple(i for i, (a, b) in enumerate(zip(xs, aval.shape)) if a != b)
  summed = reduce_sum_p.bind(x, axes=dims, out_sharding=None)
  return shape_prims.reshape_p.bind(summed, new_sizes=aval.shape, dimensions=None, sharding=None)


def _select(pred, on_true, on_false):
  return select_n_p.bind(pred, on_false, on_true)


def _replace_zero(x):
  return _select(_op.eq(x, _const(x, 0)), _full_like(x, 1), x)


def _balanced_eq(x, z, y):
  """1 where x alone attains the extremum z, 1/2 where x and y tie, else 0 (max/min JVPs)."""
  return _op.div(_select(_op.eq(x, z), _full_like(z, 1), _full_like(z, 0)),
                 _select(_op.eq(y, z), _full_like(z, 2), _full_like(z, 1)))


def _is_complex(x) -> bool:
  return core.get_aval(x).dtype.kind == "c"


def _abs_jvp(t, y, x):
  if _is_complex(x):
    conj = _op.conj(x)
    ans = convert_element_type_p.bind(y, new_dtype=core.get_aval(x).dtype, weak_type=False)
    return _op.real(_op.mul(t, _op.div(conj, _replace_zero(ans))))
  return _select(_op.ge(x, _const(x, 0)), t, _op.neg(t))


def _pow_jvp_lhs(t, y, x, z):
  dt = core.get_aval(y).dtype
  integer_exponent = kind_of(core.get_aval(z).dtype) in "iu"
  x, z = cast(x, dt), cast(z, dt)
  if not integer_exponent:
    return _op.mul(t, _op.mul(z, _op.pow(x, _op.sub(z, _full_like(z, 1)))))
  # JAX's rule for an integer exponent: the derivative is 0 where the exponent is 0, not
  # 0 * x**-1 (NaN at x = 0, inf or NaN); operands made in JAX's order, for the same jaxpr,
  # broadcast to one shape first (lax.pow stretches a size-1 operand)
  xs, zs = core.get_aval(x).shape, core.get_aval(z).shape
  if xs != zs:
    shape = np.broadcast_shapes(xs, zs)
    x, z = _maybe_broadcast(shape, x), _maybe_broadcast(shape, z)
  is_zero, zero = _op.eq(z, _const(z, 0)), _full_like(z, 0)
  jac = _op.mul(_replace_zero(z), _op.pow(x, _op.sub(z, _full_like(z, 1))))
  return _op.mul(t, _select(is_zero, zero, jac))


def _pow_jvp_rhs(t, y, x, z):
  return _op.mul(t, _op.mul(_op.log(_replace_zero(x)), y))


def _add_jvp(primals, tangents):
  out = add_p.bind(*primals)
  tx, ty = tangents
  return out, _linear_sum(out, tx, ty, lambda: add_p.bind(tx, ty), lambda: ty)


def _sub_jvp(primals, tangents):
  out = sub_p.bind(*primals)
  tx, ty = tangents
  return out, _linear_sum(out, tx, ty, lambda: sub_p.bind(tx, ty), lambda: _op.neg(ty))


def _linear_sum(out, tx, ty, both, y_only):
  if type(tx) is ad.Zero and type(ty) is ad.Zero:
    return ad.Zero.from_primal_value(out)
  shape = core.get_aval(out).shape
  if type(tx) is ad.Zero:
    return _maybe_broadcast(shape, y_only())
  if type(ty) is ad.Zero:
    return _maybe_broadcast(shape, tx)
  return both()


def _transpose_each(*rules):
  """A transpose giving cotangent `rule_i(ct)` to each linear operand i."""
  def transpose(ct, *args, **params):
    return [_unbroadcast(a.aval, rule(ct)) if ad.is_undefined_primal(a) else None
            for a, rule in zip(args, rules)]
  return transpose


def _conj_transpose(ct, x, **params):
  return [_op.conj(ct) if x.aval.dtype.kind == "c" else _op.real(ct)]


def _div_transpose(ct, x, y):
  if ad.is_undefined_primal(y):
    raise NotImplementedError("div is not linear in its divisor and cannot be transposed")
  return [_unbroadcast(x.aval, _op.div(ct, y)), None]


def _rem_jvp_x(t, x, y):
  shape = broadcast_shapes_lax("rem", core.get_aval(x).shape, core.get_aval(y).shape)
  return _maybe_broadcast(shape, t)


def _rem_jvp_y(t, x, y):
  # the quotient twice, as JAX's rule stages it (its jaxpr is JAX's; compiling dedups it)
  return _op.mul(_op.neg(t), _op.mul(_op.sign(_op.div(x, y)), _op.floor(_op.abs(_op.div(x, y)))))


def _atan2_jvp(num):
  return lambda t, x, y: _op.mul(t, _op.div(num(x, y), _op.add(_op.square(x), _op.square(y))))


class _Ops:
  """Short names for binding the primitives inside rule bodies."""
  neg, exp, log, sin, cos, sinh, cosh = (p.bind for p in (neg_p, exp_p, log_p, sin_p, cos_p,
                                                          sinh_p, cosh_p))
  add, sub, mul, div, pow, eq, ge = (p.bind for p in (add_p, sub_p, mul_p, div_p, pow_p, eq_p,
                                                      ge_p))
  square, rsqrt, real, conj, abs, sign, floor = (p.bind for p in (square_p, rsqrt_p, real_p,
                                                                  conj_p, abs_p, sign_p, floor_p))
  complex, imag, gt, lt, bitand = complex_p.bind, imag_p.bind, gt_p.bind, lt_p.bind, and_p.bind

  @staticmethod
  def ipow(x, y):
    return integer_pow_p.bind(x, y=y)


_op = _Ops


ad.deflinear(neg_p, lambda ct, x: [_op.neg(ct)])
ad.defjvp2(exp_p, lambda t, y, x: _op.mul(t, y))
ad.defjvp2(exp2_p, lambda t, y, x: _op.mul(_op.log(_const(x, 2)), _op.mul(t, y)))
ad.defjvp(log_p, lambda t, x: _op.div(t, x))
ad.defjvp(log1p_p, lambda t, x: _op.div(t, _op.add(x, _const(x, 1))))
ad.defjvp2(expm1_p, lambda t, y, x: _op.mul(t, _op.add(y, _const(y, 1))))
ad.defjvp2(tanh_p, lambda t, y, x: _op.mul(_op.add(t, _op.mul(t, y)), _op.sub(_const(x, 1), y)))
ad.defjvp2(logistic_p, lambda t, y, x: _op.mul(t, _op.mul(y, _op.sub(_const(y, 1), y))))
ad.defjvp(sin_p, lambda t, x: _op.mul(t, _op.cos(x)))
ad.defjvp(cos_p, lambda t, x: _op.neg(_op.mul(t, _op.sin(x))))
ad.defjvp2(tan_p, lambda t, y, x: _op.mul(t, _op.add(_const(x, 1), _op.square(y))))
ad.defjvp(asin_p, lambda t, x: _op.mul(t, _op.rsqrt(_op.sub(_const(x, 1), _op.square(x)))))
ad.defjvp(acos_p,
          lambda t, x: _op.mul(t, _op.neg(_op.rsqrt(_op.sub(_const(x, 1), _op.square(x))))))
ad.defjvp(atan_p, lambda t, x: _op.div(t, _op.add(_const(x, 1), _op.square(x))))
ad.defjvp(sinh_p, lambda t, x: _op.mul(t, _op.cosh(x)))
ad.defjvp(cosh_p, lambda t, x: _op.mul(t, _op.sinh(x)))
ad.defjvp(asinh_p, lambda t, x: _op.mul(t, _op.rsqrt(_op.add(_op.square(x), _const(x, 1)))))
ad.defjvp(acosh_p, lambda t, x: _op.mul(t, _op.rsqrt(_op.sub(_op.square(x), _const(x, 1)))))
ad.defjvp(atanh_p, lambda t, x: _op.mul(_op.ipow(_op.add(_const(x, 1), x), -1),
                                        _op.div(t, _op.sub(_const(x, 1), x))))
ad.defjvp2(sqrt_p, lambda t, y, x: _op.mul(t, _op.div(_const(x, 0.5), y)))
ad.defjvp2(rsqrt_p, lambda t, y, x: _op.mul(t, _op.mul(_const(x, -0.5), _op.div(y, x))))
ad.defjvp2(cbrt_p, lambda t, y, x: _op.mul(t, _op.mul(_const(x, 1 / 3), _op.ipow(y, -2))))
ad.defjvp2(square_p, lambda t, y, x: _op.mul(t, _op.mul(_const(x, 2), x)))
ad.defjvp2(abs_p, _abs_jvp)
# The zero imaginary (real) part is a strong NumPy zero, as in JAX: the cotangent is strong.
ad.deflinear(real_p, lambda ct, x: [_op.complex(ct, np.zeros((), core.get_aval(ct).dtype))])
ad.deflinear(imag_p, lambda ct, x: [_op.complex(np.zeros((), core.get_aval(ct).dtype),
                                                _op.neg(ct))])
ad.deflinear(conj_p, _conj_transpose)
ad.deflinear(complex_p, _transpose_each(_op.real, lambda ct: _op.imag(_op.neg(ct))))
ad.jvp_rules[add_p] = _add_jvp
ad.primitive_transposes[add_p] = _transpose_each(lambda ct: ct, lambda ct: ct)
ad.python_cotangent_primitives.add(add_p)  # hands a float cotangent on as it is, as JAX's
ad.jvp_rules[sub_p] = _sub_jvp
ad.primitive_transposes[sub_p] = _transpose_each(lambda ct: ct, _op.neg)
ad.defbilinear(mul_p, lambda ct, x, y: _unbroadcast(x.aval, _op.mul(ct, y)),
               lambda ct, x, y: _unbroadcast(y.aval, _op.mul(x, ct)))
ad.defjvp(div_p, lambda t, x, y: _op.div(t, y),
          lambda t, x, y: _op.mul(_op.mul(_op.neg(t), x), _op.ipow(y, -2)))
ad.primitive_transposes[div_p] = _div_transpose
ad.defjvp(rem_p, _rem_jvp_x, _rem_jvp_y)
ad.defjvp2(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)
ad.defjvp2(max_p, lambda t, y, a, b: _op.mul(t, _balanced_eq(a, y, b)),
           lambda t, y, a, b: _op.mul(t, _balanced_eq(b, y, a)))
ad.defjvp2(min_p, lambda t, y, a, b: _op.mul(t, _balanced_eq(a, y, b)),
           lambda t, y, a, b: _op.mul(t, _balanced_eq(b, y, a)))
ad.defjvp(atan2_p, _atan2_jvp(lambda x, y: y), _atan2_jvp(lambda x, y: _op.neg(x)))
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, population_count_p, clz_p,
           and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
           mulhi_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
  ad.defjvp_zero(_p)


# --- integer_pow: x ** y for a static integer y ------------------------------------------------

def _integer_pow_impl(x, y):
  if x.dtype.kind == "b" or (y < 0 and x.dtype.kind in "iu"):
    _integer_pow_abstract(core.get_aval(x), y)  # rejected with the message jit gives
  if y == 0:
    return np.ones_like(x)
  with _err():
    if x.dtype.kind in "iu":
      acc = np.ones_like(x)
      base = np.asarray(x)
      e = y
      while e:
        if e & 1:
          acc = acc * base
        base = base * base
        e >>= 1
      return acc
    # Square-and-multiply in XLA's order (the rounding of floats depends on it), in log2(|y|)
    # steps: a linear chain of |y| - 1 products hung on exponents like 2**31 - 1.
    acc, base, e = None, x, abs(y)
    while e:
      if e & 1:
        acc = base if acc is None else acc * base
      e >>= 1
      if e:
        base = base * base
    return (np.ones((), x.dtype) / acc).astype(x.dtype) if y < 0 else acc


def _integer_pow_abstract(x, y):
  check_dtype_kinds("integer_pow", x.dtype, "fciu")
  if y < 0 and kind_of(x.dtype) in "iu":
    raise TypeError(f"Integers cannot be raised to negative powers, got integer_pow({x}, {y})")
  return x


integer_pow_p = core.Primitive("integer_pow")
integer_pow_p.def_impl(_integer_pow_impl)
integer_pow_p.def_abstract_eval(_integer_pow_abstract)
integer_pow_p.eager_weak_type = first_weak
batching.defvectorized(integer_pow_p)


def _integer_pow_template(y):
  if y == 2:
    return "np.multiply({0}, {0})"
  return None


numpy_templates[integer_pow_p] = _integer_pow_template


def _integer_pow_jvp(t, x, *, y):
  if y == 0:
    return ad.Zero.from_primal_value(t)
  if y == 1:
    return t
  power = x if y == 2 else _op.ipow(x, y - 1)
  return _op.mul(t, _op.mul(_const(x, y), power))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


# StableHLO lowerings of the elementwise primitives that are not one op (the others pass `hlo=`).
def _hlo_exp2(ctx, x):  # 2**x = exp(x * ln 2), as XLA has no exp2
  return ctx.op("exponential", [ctx.op("multiply", [x, ctx.constant(
      np.log(2).astype(x.dtype), shape=x.shape)], x.aval)], x.aval)


def _hlo_conj(ctx, x, **params):
  if x.dtype.kind != "c":
    x = ctx.op("complex", [x, ctx.zeros(x.shape, x.dtype)], ctx.aval_out)
  re_av = ShapedArray(x.shape, _real_dtype(x.dtype))
  return ctx.op("complex", [ctx.op("real", [x], re_av),
                            ctx.op("negate", [ctx.op("imag", [x], re_av)], re_av)], x.aval)


def _hlo_integer_pow(ctx, x, *, y):
  """x**y by repeated squaring (y a Python int; negative y: the reciprocal)."""
  acc, base, n = None, x, abs(int(y))
  while n:
    if n & 1:
      acc = base if acc is None else ctx.op("multiply", [acc, base], x.aval)
    n >>= 1
    if n:
      base = ctx.op("multiply", [base, base], x.aval)
  if acc is None:
    acc = ctx.constant(np.ones((), x.dtype), shape=x.shape)
  if y < 0:
    acc = ctx.op("divide", [ctx.constant(np.ones((), x.dtype), shape=x.shape), acc], x.aval)
  return acc


def _hlo_pow(ctx, x, y):
  """x**y with an integer exponent `y` converted to x's type first: stablehlo.power takes
  operands of one element type (lax.pow's float-to-integer power is JAX's too)."""
  out = ctx.aval_out
  y = ctx.convert(y, out.dtype)
  return ctx.op("power", [ctx.broadcast_to(x, out.shape), ctx.broadcast_to(y, out.shape)], out)


def _hlo_sign(ctx, x):
  if x.dtype.kind != "u":
    return ctx.op("sign", [x], x.aval)
  zero, one = ctx.zeros(x.shape, x.dtype), ctx.constant(np.ones((), x.dtype), shape=x.shape)
  return ctx.select(ctx.compare(x, zero, "EQ"), zero, one)  # XLA's sign takes no unsigned


def _hlo_mulhi64(ctx, x, y):
  """The high 64 bits of a 64-bit product from 32-bit halves (no 128-bit type in XLA); signed
  operands: the unsigned high half, less y where x < 0 and x where y < 0."""
  u64 = np.dtype(np.uint64)
  av = ShapedArray(ctx.aval_out.shape, u64)
  xu, yu = (ctx.op("bitcast_convert", [ctx.broadcast_to(v, av.shape)], av) if v.dtype != u64
            else ctx.broadcast_to(v, av.shape) for v in (x, y))
  c32, mask = (ctx.constant(np.asarray(v, u64), shape=av.shape) for v in (32, 0xFFFFFFFF))

  def op(name, a, b):
    return ctx.op(name, [a, b], av)
  xl, xh, yl, yh = (op("and", xu, mask), op("shift_right_logical", xu, c32),
                    op("and", yu, mask), op("shift_right_logical", yu, c32))
  ll, lh, hl, hh = op("multiply", xl, yl), op("multiply", xl, yh), op("multiply", xh, yl), \
      op("multiply", xh, yh)
  mid = op("add", op("add", op("shift_right_logical", ll, c32), op("and", lh, mask)),
           op("and", hl, mask))
  hi = op("add", op("add", hh, op("shift_right_logical", lh, c32)),
          op("add", op("shift_right_logical", hl, c32), op("shift_right_logical", mid, c32)))
  if x.dtype.kind == "i":
    zero = ctx.zeros(av.shape, x.dtype)
    xs, ys = ctx.broadcast_to(x, av.shape), ctx.broadcast_to(y, av.shape)
    hi = op("subtract", hi, ctx.select(ctx.compare(xs, zero, "LT"), yu, ctx.zeros(av.shape, u64)))
    hi = op("subtract", hi, ctx.select(ctx.compare(ys, zero, "LT"), xu, ctx.zeros(av.shape, u64)))
    hi = ctx.op("bitcast_convert", [hi], ctx.aval_out)
  return hi


def _hlo_mulhi(ctx, x, y):
  """The high half of the double-width product."""
  if x.dtype.itemsize == 8:
    return _hlo_mulhi64(ctx, x, y)
  wide = np.dtype(f"{x.dtype.kind}{2 * x.dtype.itemsize}")
  w_av = ShapedArray(ctx.aval_out.shape, wide)
  xw, yw = (ctx.convert(ctx.broadcast_to(v, w_av.shape), wide) for v in (x, y))
  prod = ctx.op("multiply", [xw, yw], w_av)
  shift = ctx.constant(np.asarray(8 * x.dtype.itemsize, wide), shape=w_av.shape)
  op = "shift_right_arithmetic" if x.dtype.kind == "i" else "shift_right_logical"
  return ctx.convert(ctx.op(op, [prod, shift], w_av), x.dtype)


hlo.register(exp2_p, _hlo_exp2)
hlo.register(square_p, lambda ctx, x: ctx.op("multiply", [x, x], x.aval))
hlo.register(conj_p, _hlo_conj)
hlo.register(round_p, lambda ctx, x, rounding_method=0: ctx.op(
    "round_nearest_even" if int(rounding_method) == 1 else "round_nearest_afz", [x], x.aval))
hlo.register(integer_pow_p, _hlo_integer_pow)
hlo.register(pow_p, _hlo_pow)
hlo.register(mulhi_p, _hlo_mulhi)
hlo.register(sign_p, _hlo_sign)


# select_n and clamp live in their own module; their names stay importable from here.
from jaxlite._src.lax.select import clamp_p, select_n_p  # noqa: E402,F401


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(round_p, pk.ELEMENTWISE, fuse=True, op=round_p.name)
pk.register(integer_pow_p, pk.ELEMENTWISE, fuse=True, role="integer_pow")
for _p, _role in ((logistic_p, "logistic"), (add_p, "add"), (mul_p, "mul"),
                  (shift_left_p, "shift_left"), (shift_right_logical_p, "shift_right_logical")):
  pk.set_role(_p, _role)

shape_prims.register_above(sub_p=sub_p)
