"""jnp's elementwise functions: NumPy names over lax primitives, with JAX's promotion.

Most are one table row: (name, primitive, promotion). Functions with integer special cases
(`floor_divide`, `remainder`, `power`) are written out and jitted under JAX's eqn names.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import PjitFunction, internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import elementwise_functions as lax
from jaxlite._src.numpy import creation
from jaxlite._src.state.types import Ref
from jaxlite._src.numpy.util import (promote_args, promote_args_inexact, promote_args_numeric,
                                     promote_dtypes_inexact, promote_dtypes, dtype_weak,
                                     check_arraylike, promote_shapes)

_PROMOTERS = {"same": promote_args, "inexact": promote_args_inexact,
              "numeric": promote_args_numeric}


_FAST_KINDS = {"same": "biufc", "inexact": "fc", "numeric": "iufc"}


def _unary_ufunc(name, prim, promote="same", kinds=None, identity_kinds=""):
  """`identity_kinds`: dtype kinds returned as they are (floor of an integer is itself)."""
  promoter = _PROMOTERS[promote]
  fast_kinds = _FAST_KINDS[promote]

  def fn(x, /):
    if type(x) is core.array_type and x.dtype.kind in fast_kinds:
      return prim.bind(x)  # already of an accepted dtype: nothing to promote
    if type(x) is Ref:
      # JAX's unary ufuncs are jit functions: a ref reaches their argument check traced (and
      # is refused there, named as the tracer it then is)
      return PjitFunction(fn, (), ())(x)
    check_arraylike(name, x)
    if identity_kinds and dtype_weak(x)[0].kind in identity_kinds:
      return _as_array(promote_args(name, x)[0])
    (x,) = promoter(name, x)
    if kinds is not None:
      d = dtype_weak(x)[0]
      if ew.kind_of(d) not in kinds:
        raise TypeError(f"{name} does not accept dtype {d.name}.")
    return prim.bind(x)
  fn.__name__ = fn.__qualname__ = name
  return fn


def _as_array(x):
  """`x` as an Array: a Python or NumPy scalar an identity path returns as it came (floor of an
  int) becomes one of its dtype and weak type, as JAX's functions always return Arrays."""
  if isinstance(x, core.Array):
    return x
  d, w = dtype_weak(x)
  return core.array_from_numpy(np.asarray(x, d), w)


def _binary_ufunc(name, prim, promote="same"):
  promoter = _PROMOTERS[promote]

  def fn(x, y, /):
    x, y = promoter(name, x, y)
    return prim.bind(x, y)
  fn.__name__ = fn.__qualname__ = name
  return fn


negative = _unary_ufunc("negative", ew.neg_p)
floor = _unary_ufunc("floor", ew.floor_p, "inexact", identity_kinds="iub")
ceil = _unary_ufunc("ceil", ew.ceil_p, "inexact", identity_kinds="iub")
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


def conjugate(x, /):
  (x,) = promote_args("conjugate", x)
  return ew.conj_p.bind(x) if dtype_weak(x)[0].kind == "c" else x


conj = conjugate
real_prim = ew.real_p

_add = _binary_ufunc("add", ew.add_p)


def add(x, y, /):
  x, y = promote_args("add", x, y)
  if type(x) is not core.array_type and dtype_weak(x)[0] == np.bool_:
    return ew.or_p.bind(x, y)
  # Eager dispatch of every `x + 1`: reads the buffer field directly (see array.py).
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


def _ordering(name, prim):
  """An order comparison; complex numbers compare by real part, then imaginary part."""
  def fn(x, y, /):
    x, y = promote_args(name, x, y)
    if dtype_weak(x)[0].kind != "c":
      return prim.bind(x, y)
    same_real = ew.eq_p.bind(ew.real_p.bind(x), ew.real_p.bind(y))
    by_imag = prim.bind(ew.imag_p.bind(x), ew.imag_p.bind(y))
    return ew.select_n_p.bind(same_real, prim.bind(ew.real_p.bind(x), ew.real_p.bind(y)),
                              by_imag)
  fn.__name__ = fn.__qualname__ = name
  return fn


less = _ordering("less", ew.lt_p)
less_equal = _ordering("less_equal", ew.le_p)
greater = _ordering("greater", ew.gt_p)
greater_equal = _ordering("greater_equal", ew.ge_p)
bitwise_and = _binary_ufunc("bitwise_and", ew.and_p)
bitwise_or = _binary_ufunc("bitwise_or", ew.or_p)
bitwise_xor = _binary_ufunc("bitwise_xor", ew.xor_p)
arccosh = internal_jit(_unary_ufunc("arccosh", ew.acosh_p, "inexact"))
def positive(x, /):
  """+x: the promoted operand itself, an Array even for a Python scalar (JAX's lax.asarray)."""
  return creation.asarray(promote_args("positive", x)[0])


def _bool_array(x) -> bool:
  return getattr(x, "dtype", None) == np.bool_ and not isinstance(x, (bool, np.bool_))


def multiply(x, y, /):
  x_bool, y_bool = _bool_array(x), _bool_array(y)
  pred_operand = x if x_bool else y
  x, y = promote_args("multiply", x, y)
  if dtype_weak(x)[0] == np.bool_:
    return ew.and_p.bind(x, y)
  out = ew.mul_p.bind(x, y)
  if x_bool != y_bool and type(out) is core.array_type and array_lib.numpy_eager(out):
    # JAX runs jnp.multiply compiled, and XLA computes a product with a converted bool array as
    # a select: `inf * False` is 0, not NaN (numpyro's binary_cross_entropy_with_logits relies
    # on it); traced products are rewritten the same way by compiler.passes.
    pred = np.asarray(pred_operand)
    out = array_lib.like(out, np.where(pred, out._value, out._value.dtype.type(0)),
                         out.weak_type)
  elif x_bool != y_bool and _eager_batched(out, pred_operand):
    # An eager vmap: JAX runs the batched jnp.multiply as one XLA program, the same select
    # (where the bool is batched as the product is: a broadcast bool is not rewritten by XLA)
    from jaxlite._src.numpy.where_reshape import where
    out = where(pred_operand, out, 0)  # (a Python 0: the product keeps its weak type)
  return out


def _eager_batched(out, pred) -> bool:
  """Whether `out` and the bool `pred` are a vmap's tracers of one shape, batched, over
  concrete arrays (an eager vmap: nothing is staged)."""
  from jaxlite._src.interpreters.batching import BatchTracer
  if not (isinstance(out, BatchTracer) and isinstance(pred, BatchTracer)
          and pred._trace is out._trace and pred.aval.shape == out.aval.shape):
    return False
  while isinstance(out, BatchTracer):
    out = out.val
  return type(out) is core.array_type


def true_divide(x, y, /):
  x, y = promote_args_inexact("true_divide", x, y)
  return ew.div_p.bind(x, y)


divide = true_divide


def logical_and(x, y, /):
  return ew.and_p.bind(*_as_bool("logical_and", x, y))


def logical_or(x, y, /):
  return ew.or_p.bind(*_as_bool("logical_or", x, y))


def logical_xor(x, y, /):
  return ew.xor_p.bind(*_as_bool("logical_xor", x, y))


def logical_not(x, /):
  return ew.not_p.bind(*_as_bool("logical_not", x))


def _as_bool(name, *args):
  # Promotion to bool casts weak boolean operands to strong unless all are weak (JAX's cast
  # eqn). Other dtypes are compared with zero as JAX's _const makes it: weak (a Python literal)
  # for a weakly typed scalar, strong otherwise; so logical_and(True, 1) and logical_not(1) are
  # weak booleans (Python bools themselves are strong), a weak array operand gives a strong one.
  args = promote_args(name, *args)
  if dtype_weak(args[0])[0] == np.bool_:
    if all(dtype_weak(a)[1] for a in args):
      return list(args)
    return [casts.convert_element_type_p.bind(a, new_dtype=np.dtype(np.bool_), weak_type=False)
            if dtype_weak(a)[1] else a for a in args]
  return [ew.ne_p.bind(a, ew._const(a, 0)) for a in args]


def _strong_scalar(value, like):
  """`value` as a strong scalar of `like`'s dtype (a literal when traced)."""
  return np.asarray(value, dtype_weak(like)[0])[()]


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
  return ew.ne_p.bind(x, x)  # integers too: JAX stages `ne x x` (weak inputs stay weak)


@internal_jit
def isinf(x, /):
  (x,) = promote_args("isinf", x)
  d = dtype_weak(x)[0]
  if not dtypes.is_inexact(d):
    return _full_bool(x, False)
  if d.kind == "c":
    re, im = ew.real_p.bind(x), ew.imag_p.bind(x)
    return ew.or_p.bind(_abs_is_inf(re), _abs_is_inf(im))
  return _abs_is_inf(x)


def _abs_is_inf(x):
  return ew.eq_p.bind(ew.abs_p.bind(x), _strong_scalar(np.inf, x))


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
  if d.kind == "u":
    return ew.div_p.bind(x1, x2)
  if d.kind == "i":
    # Truncated quotient, one less where the signs differ and the division is inexact.
    q = ew.div_p.bind(x1, x2)
    signs_differ = ew.ne_p.bind(ew.sign_p.bind(x1), ew.sign_p.bind(x2))
    inexact = ew.ne_p.bind(ew.rem_p.bind(x1, x2), _zero_like(x1))
    return _where()(logical_and(signs_differ, inexact), ew.sub_p.bind(q, _one_like(q)), q)
  if d.kind == "c":
    raise TypeError("floor_divide does not support complex-valued inputs")
  return _float_divmod(x1, x2)[0]


def _float_divmod(x1, x2):
  """Python's float divmod: the quotient of x1 - mod, rounded, so 1 // 0.1 is 9 and inf // 1
  is nan (floor(x1 / x2) is not). JAX computes the adjusted mod too; its eqns print."""
  mod = ew.rem_p.bind(x1, x2)
  div = ew.div_p.bind(_where()(ew.eq_p.bind(x2, _zero_like(x2)), x1, ew.sub_p.bind(x1, mod)),
                      x2)
  fix = ew.and_p.bind(ew.ne_p.bind(mod, _zero_like(mod)),
                      ew.ne_p.bind(ew.sign_p.bind(x2), ew.sign_p.bind(mod)))
  mod = ew.select_n_p.bind(fix, mod, ew.add_p.bind(mod, x2))
  div = ew.select_n_p.bind(fix, div, ew.sub_p.bind(div, _one_like(div)))
  return ew.round_p.bind(div, rounding_method=ew.RoundingMethod.AWAY_FROM_ZERO), mod


def _where():
  from jaxlite._src.numpy.where_reshape import where
  return where


def _one_like(x):
  d, w = dtype_weak(x)
  from jaxlite._src.numpy.util import scalar_to_dtype
  return scalar_to_dtype(1, d, w)


@internal_jit
def remainder(x1, x2, /):
  x1, x2 = promote_args_numeric("remainder", x1, x2)
  if dtype_weak(x1)[0].kind in "iu":
    x2 = _nonzero_divisor(x2)
  trunc_mod = ew.rem_p.bind(x1, x2)
  zero = _zero_like(trunc_mod)
  nonzero = ew.ne_p.bind(trunc_mod, zero)
  signs_differ = ew.ne_p.bind(ew.lt_p.bind(trunc_mod, zero), ew.lt_p.bind(x2, _zero_like(x2)))
  return ew.select_n_p.bind(ew.and_p.bind(signs_differ, nonzero), trunc_mod,
                            ew.add_p.bind(trunc_mod, x2))


mod = remainder


def _nonzero_divisor(x2):
  """x2 with zeros replaced by ones: integer x % 0 and fmod(x, 0) are 0 in JAX."""
  if type(x2) in (int, bool):
    return x2 or 1
  from jaxlite._src.numpy.creation import full_like
  # `x2 == 0` with jnp's promotion: a boolean divisor is compared as a weak int32, as in JAX
  return _where()(equal(x2, 0), full_like(x2, 1), x2)


@internal_jit
def fmod(x1, x2, /):
  check_arraylike("fmod", x1, x2)
  if np.dtype(dtypes.result_type(x1, x2)).kind in "iu":
    x2 = _nonzero_divisor(x2)  # before promotion, as JAX stages it
  x1, x2 = promote_args_numeric("fmod", x1, x2)
  return ew.rem_p.bind(x1, x2)


@internal_jit
def divmod(x1, x2, /):  # noqa: A001
  # promoted once up front, and floats share one quotient/modulus computation, as JAX stages it
  x1, x2 = promote_args_numeric("divmod", x1, x2)
  d = dtype_weak(x1)[0]
  if d.kind in "iu":
    return floor_divide(x1, x2), remainder(x1, x2)
  if d.kind == "c":
    raise TypeError("floor_divide does not support complex-valued inputs")
  return _float_divmod(x1, x2)


def power(x1, x2, /):
  """x1 ** x2. A concrete integer scalar exponent is integer_pow of x1 alone (x1's dtype, even
  eagerly: jnp.power(int8, int32 scalar) is int8); integer bases otherwise square and multiply."""
  if _concrete_int_scalar(x2):
    (x1,) = promote_args_numeric("power", x1)
    return ew.integer_pow_p.bind(x1, y=int(x2))  # its abstract eval rejects int ** -n
  check_arraylike("power", x1, x2)
  # As JAX's _power: ranks first, in the operands' own dtypes, then the dtypes.
  x1, x2 = promote_shapes("power", x1, x2)
  x1_, x2_ = promote_args_numeric("power", x1, x2)  # JAX stages the exponent's cast even unused
  d = dtype_weak(x1_)[0]
  if d.kind in "iub":
    return _integer_power(x1_, x2_)
  # An inexact base with an integer exponent: pow takes the exponent as it is. An integer base
  # that promotion made inexact (int64 with uint64 is a weak float) takes the promoted pair.
  if dtypes.issubdtype(dtype_weak(x1)[0], np.inexact) and dtype_weak(x2)[0].kind in "iu" \
      and not isinstance(x2, (int, np.integer)):
    return ew.pow_p.bind(x1_, x2)
  return ew.pow_p.bind(x1_, x2_)


pow = power  # noqa: A001


def _concrete_int_scalar(x) -> bool:
  # JAX tries operator.index: a Python bool is an int (x ** True is integer_pow[y=1]); NumPy's
  # bool and 0-d bool arrays refuse it and take the general path.
  if isinstance(x, np.bool_):
    return False
  if isinstance(x, (int, np.integer)):
    return True
  # operator.index accepts 0-d integer arrays, NumPy's included, as JAX's power tries it
  return type(x) in (core.array_type, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iu"


def _integer_power(x1, x2):
  # Six squarings, as in JAX: more would overflow for any base beyond -1, 0 and 1.
  where = _where()
  zero, one = _strong_scalar(0, x2), _strong_scalar(1, x2)
  acc = where(ew.and_p.bind(ew.eq_p.bind(x1, zero), ew.ne_p.bind(x2, zero)), zero, one)
  for _ in range(6):
    acc = where(ew.and_p.bind(x2, one), ew.mul_p.bind(acc, x1), acc)
    x1 = ew.mul_p.bind(x1, x1)
    x2 = ew.shift_right_logical_p.bind(x2, one)
  return acc


def float_power(x1, x2, /):
  x1, x2 = promote_args_inexact("float_power", x1, x2)
  return ew.pow_p.bind(x1, x2)


def log2(x, /):
  (x,) = promote_args_inexact("log2", x)
  # JAX stages log(2) as an eqn of the real dtype and divides each part of a complex log.
  return _per_part(ew.log_p.bind(x), lambda *parts: [
      ew.div_p.bind(p, log_2) for log_2 in [ew.log_p.bind(_strong_scalar(2, parts[0]))]
      for p in parts])


def log10(x, /):
  (x,) = promote_args_inexact("log10", x)
  return _per_part(ew.log_p.bind(x), lambda *parts: [
      ew.mul_p.bind(p, _strong_scalar(1 / np.log(10), p)) for p in parts])


def _per_part(z, fn):
  """fn(*parts) -> parts, on a real array or the real and imaginary parts of a complex one."""
  if dtype_weak(z)[0].kind != "c":
    return fn(z)[0]
  return ew.complex_p.bind(*fn(ew.real_p.bind(z), ew.imag_p.bind(z)))


@internal_jit(inline=True)
def logaddexp(x1, x2, /):
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  return _logaddexp_custom(np.e)(x1, x2)


@internal_jit(inline=True)
def logaddexp2(x1, x2, /):
  x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
  return _logaddexp_custom(2)(x1, x2)


class _Base:
  """What logaddexp in one base uses: its exponential, the factor on log1p (1/ln 2 in base 2),
  the imaginary period complex results wrap into, and the names JAX's jaxprs show."""

  def __init__(self, exp, inv_log, period, name):
    self.exp, self.inv_log, self.period, self.name = exp, inv_log, period, name

  def scale(self, v):
    return v if self.inv_log is None else ew.mul_p.bind(ew._const(v, self.inv_log), v)


_BASES = {np.e: _Base(ew.exp_p, None, np.pi, "logaddexp"),
          2: _Base(ew.exp2_p, 1 / np.log(2), np.pi / np.log(2), "logaddexp2")}


def _logaddexp_value(x1, x2, b):
  """log(base**x1 + base**x2) as JAX computes it: the max plus log1p of the smaller term (in
  base 2 times 1/ln 2), NaNs and same-signed infinities through x1 + x2."""
  amax = ew.max_p.bind(x1, x2)
  if np.issubdtype(dtype_weak(x1)[0], np.complexfloating):
    # JAX's complex form: log1p(base**(x1 + x2 - 2 max)) added to the max (lexicographic on
    # complex), its imaginary part wrapped into [-period, period]
    delta = ew.sub_p.bind(ew.add_p.bind(x1, x2), ew.mul_p.bind(amax, ew._const(amax, 2)))
    out = ew.add_p.bind(amax, b.scale(ew.log1p_p.bind(b.exp.bind(delta))))
    im = ew.imag_p.bind(out)
    pi, two_pi, zero = (ew._const(im, v) for v in (b.period, 2 * b.period, 0))
    rem = ew.rem_p.bind(ew.add_p.bind(im, pi), two_pi)
    rem = ew.select_n_p.bind(ew.lt_p.bind(rem, zero), rem, ew.add_p.bind(rem, two_pi))
    return ew.complex_p.bind(ew.real_p.bind(out), ew.sub_p.bind(rem, pi))
  delta = ew.sub_p.bind(x1, x2)
  isnan = ew.ne_p.bind(delta, delta)
  both = ew.add_p.bind(x1, x2)  # NaNs, or infinities of the same sign
  smaller = b.exp.bind(ew.neg_p.bind(ew.abs_p.bind(delta)))
  out = ew.add_p.bind(amax, b.scale(ew.log1p_p.bind(smaller)))
  return ew.select_n_p.bind(isnan, out, both)


_LOGADDEXP = {}  # base -> its custom_jvp function


def _logaddexp_custom(base):
  """jnp.logaddexp (base e) and logaddexp2 (base 2): custom_jvps as in JAX (their jaxprs are
  custom_jvp_calls, and at ties each operand's derivative is base**(x - out) = 1/2). The rule
  replaces +inf by 0 before base**(x - out), as JAX does: d/dx logaddexp(inf, x) is then exp(x),
  JAX's answer (made on first use: custom_derivatives imports jnp)."""
  if base not in _LOGADDEXP:
    from jaxlite._src.transforms.custom_derivatives import custom_jvp
    from jaxlite._src.lax.namespace import full_like
    b = _BASES[base]

    def logaddexp(x1, x2):
      return _logaddexp_value(x1, x2, b)
    logaddexp.__name__ = logaddexp.__qualname__ = b.name
    fn = custom_jvp(logaddexp)

    def replace_inf(x):
      re_x = ew.real_p.bind(x) if dtype_weak(x)[0].kind == "c" else x
      is_inf = ew.eq_p.bind(re_x, ew._const(re_x, np.inf))
      return ew.select_n_p.bind(is_inf, x, full_like(x, 0))  # lax._zeros(x): weak like x

    def jvp(primals, tangents):
      (x1, x2), (t1, t2) = primals, tangents
      out = fn(x1, x2)
      with np.errstate(invalid="ignore"):  # -inf - -inf is NaN, as in JAX (no warning there)
        d1 = b.exp.bind(ew.sub_p.bind(replace_inf(x1), replace_inf(out)))
        d2 = b.exp.bind(ew.sub_p.bind(replace_inf(x2), replace_inf(out)))
        return out, ew.add_p.bind(ew.mul_p.bind(t1, d1), ew.mul_p.bind(t2, d2))
    jvp.__name__ = jvp.__qualname__ = f"_{b.name}_jvp"
    fn.defjvp(jvp)
    _LOGADDEXP[base] = fn
  return _LOGADDEXP[base]


def deg2rad(x, /):
  (x,) = promote_args_inexact("deg2rad", x)
  # JAX's `_lax_const`: the factor takes x's dtype and weak type (a weak x stays weak)
  return ew.mul_p.bind(x, ew._const(x, np.pi / 180))


def rad2deg(x, /):
  (x,) = promote_args_inexact("rad2deg", x)
  return ew.mul_p.bind(x, ew._const(x, 180 / np.pi))


radians, degrees = deg2rad, rad2deg


@internal_jit(static_argnames=("decimals",))
def round(a, decimals: int = 0, out=None):  # noqa: A001
  if not isinstance(decimals, (int, np.integer)):  # JAX: operator.index(decimals)
    raise TypeError(f"round: decimals must be an integer, got {decimals!r} of type "
                    f"{type(decimals).__name__}")
  (a,) = promote_args("round", a)
  d = dtype_weak(a)[0]
  if d.kind == "b":  # JAX's own check on booleans
    raise ValueError(f"data type {np.bool_} not inexact")
  if d.kind in "iu":
    if decimals < 0:
      raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return _as_array(a)
  if decimals > np.log10(dtypes.finfo(d).max):
    return _as_array(a)  # rounding beyond the dtype's precision changes nothing
  if d.kind == "c":  # real and imaginary parts separately
    return ew.complex_p.bind(_round_real(ew.real_p.bind(a), decimals),
                             _round_real(ew.imag_p.bind(a), decimals))
  return _round_real(a, decimals)


def _round_real(a, decimals):
  d = dtype_weak(a)[0]
  if decimals == 0:
    return ew.round_p.bind(a, rounding_method=ew.RoundingMethod.TO_NEAREST_EVEN)
  # float16 is scaled in float32, as JAX does (10**decimals * x leaves float16's range early)
  half = d == np.float16
  x = lax._convert_element_type(a, np.dtype(np.float32)) if half else a
  factor = ew._const(x, 10 ** decimals)
  out = ew.div_p.bind(ew.round_p.bind(ew.mul_p.bind(x, factor),
                                      rounding_method=ew.RoundingMethod.TO_NEAREST_EVEN),
                      factor)
  return lax._convert_element_type(out, d) if half else out


@internal_jit(static_argnames=("decimals",))
def around(a, decimals: int = 0, out=None):
  return round(a, decimals, out)  # JAX stages `around` as its own jit around `round`


round.__wrapped_name__ = "round"


@internal_jit
def rint(x, /):
  (x,) = promote_args("rint", x)
  d = dtype_weak(x)[0]
  if d.kind in "iub":  # already whole: only the float conversion, to a strong default float
    return casts.convert_element_type_p.bind(x, new_dtype=dtypes.default_float_dtype(),
                                          weak_type=False)
  if d.kind == "c":
    return ew.complex_p.bind(rint(ew.real_p.bind(x)), rint(ew.imag_p.bind(x)))
  return ew.round_p.bind(x, rounding_method=ew.RoundingMethod.TO_NEAREST_EVEN)


@internal_jit
def trunc(x, /):
  (x,) = promote_args("trunc", x)
  d = dtype_weak(x)[0]
  if d.kind in "iub":
    return _as_array(x)
  from jaxlite._src.numpy.where_reshape import where
  return where(ew.lt_p.bind(x, _zero_like(x)), ew.ceil_p.bind(x), ew.floor_p.bind(x))


def real(x, /):
  (x,) = promote_args("real", x)
  return ew.real_p.bind(x) if dtype_weak(x)[0].kind == "c" else x


def imag(x, /):
  (x,) = promote_args("imag", x)
  if dtype_weak(x)[0].kind == "c":
    return ew.imag_p.bind(x)
  from jaxlite._src.numpy.creation import full_like
  return full_like(x, 0)


@internal_jit
def signbit(x, /):
  (x,) = promote_args("signbit", x)
  d = dtype_weak(x)[0]
  if d.kind in "iu":
    return ew.lt_p.bind(x, _strong_scalar(0, x))
  if d.kind == "b":
    return _full_bool(x, False)
  if d.kind == "c":
    raise ValueError(f"jax.numpy.signbit is not well defined for {d.name}")
  # The sign bit, spread by an arithmetic shift of the same-width integer, as a boolean.
  bits = np.dtype({2: np.int16, 4: np.int32, 8: np.int64}[d.itemsize])
  spread = ew.shift_right_arithmetic_p.bind(casts.bitcast_convert_type_p.bind(x, new_dtype=bits),
                                            np.asarray(bits.itemsize * 8 - 1, bits)[()])
  return casts.convert_element_type_p.bind(spread, new_dtype=np.dtype(np.bool_), weak_type=False)


@internal_jit
def copysign(x1, x2, /):
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  if dtype_weak(x1)[0].kind == "c":
    raise TypeError("copysign does not support complex-valued inputs")
  return _where()(signbit(x2), negative(absolute(x1)), absolute(x1))


@internal_jit
def hypot(x1, x2, /):
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  if dtype_weak(x1)[0].kind == "c":
    raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please convert "
                     "to real values first, such as by using abs(x)")
  # Scaled by the larger magnitude so that squares neither overflow nor underflow.
  x1, x2 = ew.abs_p.bind(x1), ew.abs_p.bind(x2)
  any_inf = ew.or_p.bind(*(ew.eq_p.bind(v, _strong_scalar(np.inf, v)) for v in (x1, x2)))
  big, small = ew.max_p.bind(x1, x2), ew.min_p.bind(x1, x2)
  where = _where()
  from jaxlite._src.numpy.creation import ones_like
  is_zero = ew.eq_p.bind(big, _zero_like(big))
  ratio = ew.div_p.bind(small, where(ew.eq_p.bind(big, _zero_like(big)), ones_like(big), big))
  scaled = ew.mul_p.bind(big, ew.sqrt_p.bind(ew.add_p.bind(
      _one_like(ratio), ew.square_p.bind(ratio))))
  x = where(is_zero, big, scaled)
  return where(any_inf, ew._const(x, np.inf), x)  # JAX's _lax_const: weak like a weak x


@internal_jit
def heaviside(x1, x2, /):
  # Dtypes only, as JAX: x2 is broadcast by the innermost _where, not up front.
  check_arraylike("heaviside", x1, x2)
  x1, x2 = promote_dtypes_inexact(x1, x2)
  where = _where()
  zero = ew._const(x1, 0)  # JAX's _lax_const: weak like a weak scalar x1
  negative_, positive_ = ew.lt_p.bind(x1, zero), ew.gt_p.bind(x1, zero)
  at_zero = where(isnan(x1), x1, x2)  # NaN stays NaN, 0 takes x2
  return where(negative_, zero, where(positive_, ew._const(x1, 1), at_zero))


@internal_jit
def fmax(x1, x2):
  # x1 where it is larger or x2 is NaN: a NaN loses to a number (NaN only if both are).
  return _where()(logical_or(greater(x1, x2), isnan(x2)), x1, x2)


@internal_jit
def fmin(x1, x2):
  return _where()(logical_or(less(x1, x2), isnan(x2)), x1, x2)


@internal_jit
def sinc(x, /):
  """sin(pi x) / (pi x); at 0 the Maclaurin terms of `_sinc_maclaurin` give the value and every
  derivative (grad of grad is -pi^2/3 there), as JAX stages it."""
  (x,) = promote_args_inexact("sinc", x)
  # Constants follow x's weak type (JAX's _lax_const): a weak x keeps pi a Python float, which
  # make_jaxpr prints unrounded (3.141592653589793:f32[]).
  eq_zero = ew.eq_p.bind(x, ew._const(x, 0))
  pi_x = ew.mul_p.bind(ew._const(x, np.pi), x)
  safe_pi_x = _where()(eq_zero, ew._const(x, 1), pi_x)
  return _where()(eq_zero, _sinc_maclaurin()(0, pi_x),
                  ew.div_p.bind(ew.sin_p.bind(safe_pi_x), safe_pi_x))


_SINC_MACLAURIN = []


def _sinc_maclaurin():
  """custom_jvp `(k, x) -> k-th derivative of sin(x)/x at 0`, shaped like x (made on first use:
  custom_derivatives imports jnp)."""
  if not _SINC_MACLAURIN:
    from jaxlite._src.transforms.custom_derivatives import custom_jvp

    def _sinc_maclaurin(k, x):
      return x * 0 if k % 2 else x * 0 + (-1) ** (k // 2) / (k + 1)  # odd terms vanish
    maclaurin = custom_jvp(_sinc_maclaurin, nondiff_argnums=(0,))

    def _sinc_maclaurin_jvp(k, primals, tangents):
      (x,), (t,) = primals, tangents
      return maclaurin(k, x), maclaurin(k + 1, x) * t
    maclaurin.defjvp(_sinc_maclaurin_jvp)
    _SINC_MACLAURIN.append(maclaurin)
  return _SINC_MACLAURIN[0]


_ = (core, lax, promote_dtypes, promote_dtypes_inexact)


creation.register_above(power=power, log10=log10, multiply=multiply, sign=sign,
                        true_divide=true_divide)
