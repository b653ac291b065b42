"""jnp's extra elementwise functions (frexp, ldexp, gcd, nan_to_num, angle, i0, ...), complex/real
predicates, astype/copy/from_dlpack/broadcast_shapes and the Array-API trigonometric spellings.

All are compositions of jnp/lax functions, so they trace under jit and differentiate.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import namespace as lax
from jaxlite._src.numpy import creation
from jaxlite._src.numpy import where_reshape as lnp
from jaxlite._src.numpy import reductions as red
from jaxlite._src.numpy import ufuncs as uf
from jaxlite._src.numpy.util import broadcast_shapes as _broadcast_shapes
from jaxlite._src.numpy.util import (
  check_arraylike,
  dtype_weak,
  promote_dtypes,
  promote_dtypes_inexact,
)

# Array-API spellings of the inverse trigonometric functions.
acos, acosh, asin, asinh = uf.arccos, uf.arccosh, uf.arcsin, uf.arcsinh
atan, atan2, atanh = uf.arctan, uf.arctan2, uf.arctanh

ComplexWarning = np.exceptions.ComplexWarning


def _arr(x):
  return creation.asarray(x)


def _dtype(x):
  return dtype_weak(x)[0]


def astype(x, dtype, /, *, copy=False, device=None):
  check_arraylike("astype", x)
  return _arr(x).astype(dtype)


def copy(a, order=None):
  return creation.array(a, copy=True)


def from_dlpack(x, /, *, device=None, copy=None):
  from jaxlite._src.base import dlpack
  return dlpack.from_dlpack(x, device=device, copy=copy)


def broadcast_shapes(*shapes):
  if not shapes:
    return ()
  shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
  return _broadcast_shapes(*shapes)


# ---- elementwise ------------------------------------------------------------------------------

def _float_int(dtype):
  return np.dtype(f"int{dtype.itemsize * 8}")


def _normalize_float(x):
  """x's bits as an integer, subnormals scaled up by 2**nmant, and the exponent that undoes it."""
  info = dtypes.finfo(_dtype(x))
  itype = _float_int(_dtype(x))
  tiny = uf.less(uf.abs(x), info.tiny)  # a strong scalar: a weak x is cast for it
  # lax._const: a strong scalar unless x is a weak scalar (so a weak array is cast for it)
  bits = lnp.where(tiny, x * ew._const(x, 1 << info.nmant), x)
  shift = lnp.where(tiny, itype.type(-info.nmant), itype.type(0))
  return lax.bitcast_convert_type(bits, itype), shift


def _frexp(x):
  """Mantissa in [0.5, 1) and exponent from the bits (JAX stages this as a custom_jvp)."""
  dt = _dtype(x)
  info = dtypes.finfo(dt)
  exp_mask = (1 << info.nexp) - 1
  bias = 1 - int(info.minexp)
  bits, e = _normalize_float(x)
  e = e + (((bits >> info.nmant) & exp_mask) - bias + 1)
  bits = (bits & ~(exp_mask << info.nmant)) | ((bias - 1) << info.nmant)
  m = lax.bitcast_convert_type(bits, dt)
  special = uf.isinf(x) | uf.isnan(x) | (x == 0)
  e = lnp.where(special, lax.full_like(e, 0), e)
  return lnp.where(special, x, m), lax.convert_element_type(e, np.int32)


def _frexp_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  m, e = frexp(x)
  mdot = t * uf.exp2(-e.astype(_dtype(t)))
  return (m, e), (mdot, np.zeros(np.shape(e), dtypes.float0))  # an integer's tangent


_FREXP = []


def _frexp_rule():
  """_frexp as a custom_jvp (made on first use: custom_derivatives imports jnp)."""
  if not _FREXP:
    from jaxlite._src.transforms.custom_derivatives import custom_jvp
    rule = custom_jvp(_frexp)
    rule.defjvp(_frexp_jvp)
    _FREXP.append(rule)
  return _FREXP[0]


@internal_jit(name="frexp")
def _frexp_jit(x):
  (x,) = promote_dtypes_inexact(x)
  if _dtype(x).kind == "c":
    raise TypeError("frexp does not support complex-valued inputs")
  return _frexp_rule()(x)


def frexp(x, /):
  check_arraylike("frexp", x)
  return _frexp_jit(x)


@internal_jit(name="ldexp")
def _ldexp(x1, x2):
  """x1 * 2**x2 through frexp's mantissa and exponent, so a tiny x1 with a large x2 (or the
  reverse) does not overflow on the way, as JAX computes it."""
  d1, d2 = _dtype(x1), _dtype(x2)
  if d1.kind == "c" or dtypes.issubdtype(d2, np.inexact):
    raise ValueError(f"ldexp not supported for input types {(d1, d2)}")
  (x1,) = promote_dtypes_inexact(x1)
  x2 = lax.convert_element_type(x2, _dtype(x1))
  m, e = frexp(x1)
  e = (e.astype(_dtype(x2)) + x2).astype(_dtype(x1))
  m = lnp.where(e > 0, m * 2, m)  # the exponent may overflow by one with a finite result
  e = lnp.where(e > 0, e - 1, e)
  x = m * (2 ** e.astype(_dtype(m)))
  return lnp.where(uf.isinf(x1) | (x1 == 0), x1, x)


def ldexp(x1, x2, /):
  check_arraylike("ldexp", x1, x2)
  return _ldexp(x1, x2)


@internal_jit(name="modf")
def _modf(x):
  (x,) = promote_dtypes_inexact(x)  # inside the jit, as JAX's
  whole = lnp.where(uf.greater_equal(x, 0), uf.floor(x), uf.ceil(x))  # inf - inf is nan, as JAX
  return x - whole, whole


def modf(x, /, out=None):
  check_arraylike("modf", x)
  return _modf(_arr(x))


def _gcd_loop(a, b):
  def cond(ab):
    return red.any(uf.not_equal(ab[1], 0))

  def body(ab):
    a, b = ab
    nz = uf.not_equal(b, 0)
    safe_b = lnp.where(nz, b, 1)
    return lnp.where(nz, b, a), lnp.where(nz, uf.remainder(a, safe_b), creation.zeros_like(b))
  from jaxlite._src.lax.control_flow.loops import while_loop
  return while_loop(cond, body, (a, b))[0]


def _int_args(name, x1, x2):
  check_arraylike(name, x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  if _dtype(x1).kind not in "iu":
    raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
  shape = _broadcast_shapes(np.shape(x1), np.shape(x2))
  return lnp.broadcast_to(x1, shape), lnp.broadcast_to(x2, shape)


@internal_jit(name="gcd")
def _gcd(x1, x2):
  return _gcd_loop(uf.abs(x1), uf.abs(x2))


def gcd(x1, x2, /):
  return _gcd(*_int_args("gcd", x1, x2))


@internal_jit(name="lcm")
def _lcm(x1, x2):
  x1, x2 = uf.abs(x1), uf.abs(x2)
  d = _gcd(x1, x2)
  return lnp.where(uf.equal(d, 0), creation.zeros_like(d),
                   uf.multiply(x1, uf.floor_divide(x2, lnp.where(uf.equal(d, 0), 1, d))))


def lcm(x1, x2, /):
  return _lcm(*_int_args("lcm", x1, x2))


def fabs(x, /):
  check_arraylike("fabs", x)
  (x,) = promote_dtypes_inexact(x)
  if _dtype(x).kind == "c":
    raise TypeError("ufunc 'fabs' does not support complex dtypes")
  return uf.abs(x)


def spacing(x, /):
  check_arraylike("spacing", x)
  (x,) = promote_dtypes_inexact(x)
  dt = _dtype(x)
  if dt.kind == "c":
    raise ValueError("jnp.spacing is not defined for complex inputs.")
  # As JAX stages it: lax.nextafter (no promotion) toward an infinity weak like x, then x
  # subtracted, so a weak x stays weak until the final where
  inf = ew._const(x, np.inf)
  if dt == np.float16:  # JAX follows NumPy's float16 here: the step toward +inf
    return uf.subtract(lax.nextafter(x, inf), x)
  # the step away from zero, and the signed smallest subnormal where that step is 0
  step = uf.subtract(lax.nextafter(x, uf.copysign(inf, x)), x)
  zero_step = uf.equal(step, 0)
  smallest = uf.copysign(np.array(dtypes.finfo(dt).smallest_subnormal, dt), x)
  return lnp.where(zero_step, smallest, step)


def _fill(value, dtype):
  """`asarray(value, dtype=dtype)` as JAX's nan_to_num takes its fills: a Python or NumPy number
  is a literal of `dtype`, an array or tracer is cast to it (and broadcasts in `where`)."""
  if isinstance(value, core.Array):
    from jaxlite._src.numpy.creation import asarray
    return asarray(value, dtype=dtype)
  return np.array(value, dtype)


@internal_jit(name="nan_to_num")
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  # A jit with no static arguments, as JAX's: the fills it was given are its operands (arrays
  # broadcast against `x`); those left out are Python numbers of its body.
  dtype = _dtype(x)
  kind = dtypes.kind_of_dtype(dtype)  # (bfloat16's NumPy kind is "V")
  if kind not in "fc":
    return x
  if kind == "c":
    return lax.complex(_nan_to_num(uf.real(x), nan=nan, posinf=posinf, neginf=neginf),
                       _nan_to_num(uf.imag(x), nan=nan, posinf=posinf, neginf=neginf))
  info = dtypes.finfo(dtype)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  out = lnp.where(uf.isnan(x), _fill(nan, dtype), x)
  out = lnp.where(uf.isposinf(out), _fill(posinf, dtype), out)
  return lnp.where(uf.isneginf(out), _fill(neginf, dtype), out)


class _NotPassed(float):
  """nan_to_num's default `nan`: 0.0, told apart from a 0.0 the caller passes (which JAX's jit
  stages as an argument, where the default stays a Python number inside the body)."""


_NAN_DEFAULT = _NotPassed(0.0)


def nan_to_num(x, copy=True, nan=_NAN_DEFAULT, posinf=None, neginf=None):
  check_arraylike("nan_to_num", x)
  given = {}  # JAX's jit leaves out the arguments not passed (defaults stay Python numbers)
  if nan is not _NAN_DEFAULT:
    given["nan"] = nan
  if posinf is not None:
    given["posinf"] = posinf
  if neginf is not None:
    given["neginf"] = neginf
  return _nan_to_num(_arr(x), **given)


def _nan_cumulative(name, fn, unit):
  @internal_jit(static_argnames=("axis", "dtype"), name=name)
  def jitted(a, axis, dtype):
    if dtypes.kind_of_dtype(_dtype(a)) in "fc":
      a = lnp.where(uf.isnan(a), creation.full_like(a, unit), a)
    return fn(a, axis=axis, dtype=dtype)

  def wrapper(a, axis=None, dtype=None, out=None):
    check_arraylike(name, a)
    if out is not None:
      raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    return jitted(_arr(a), axis, None if dtype is None else np.dtype(dtype))
  wrapper.__name__ = wrapper.__qualname__ = name
  return wrapper


nancumsum = _nan_cumulative("nancumsum", red.cumsum, 0)
nancumprod = _nan_cumulative("nancumprod", red.cumprod, 1)


@internal_jit(static_argnames=("deg",), name="angle")
def _angle(z, deg):
  re, im = (uf.real(z), uf.imag(z)) if _dtype(z).kind == "c" else (z, creation.zeros_like(z))
  out = uf.arctan2(im, re)
  return uf.rad2deg(out) if deg else out


def angle(z, deg=False):
  check_arraylike("angle", z)
  (z,) = promote_dtypes_inexact(_arr(z))
  return _angle(z, bool(deg))


def _i0(x):
  abs_x = lax.abs(x)
  return lax.mul(lax.exp(abs_x), lax.bessel_i0e(abs_x))


def _i0_jvp(primals, tangents):
  from jaxlite._src.transforms.ad_api import jvp
  out, t_out = jvp(_i0, primals, tangents)
  return out, lnp.where(primals[0] == 0, 0.0, t_out)


_I0 = []


@internal_jit(name="i0")
def _i0_jit(x):
  (x,) = promote_dtypes_inexact(x)
  if not dtypes.issubdtype(_dtype(x), np.floating):
    raise ValueError(f"Unsupported input type to jax.numpy.i0: {_dtype(x)}")
  if not _I0:  # made on first use: custom_derivatives imports jnp
    from jaxlite._src.transforms.custom_derivatives import custom_jvp
    rule = custom_jvp(_i0)
    rule.defjvp(_i0_jvp)
    _I0.append(rule)
  return _I0[0](x)


def i0(x):
  check_arraylike("i0", x)
  return _i0_jit(x)


# ---- predicates -------------------------------------------------------------------------------

@internal_jit(name="iscomplex")
def _iscomplex(x):
  return uf.not_equal(uf.imag(x), 0)


def iscomplex(x):
  return _iscomplex(_arr(x))


@internal_jit(name="isreal")
def _isreal(x):
  return uf.equal(uf.imag(x), 0)


def isreal(x):
  return _isreal(_arr(x))


def iscomplexobj(x):
  if x is None:
    return False
  typ = getattr(getattr(x, "dtype", None), "type", None)
  if isinstance(typ, type):  # as JAX: anything with a dtype (jnp.complex64, ShapeDtypeStruct)
    return issubclass(typ, np.complexfloating)
  if isinstance(x, (bool, int, float, complex)):
    return isinstance(x, complex)
  # JAX converts anything else with jnp.asarray, so its errors are asarray's (ValueError for a
  # list holding None: jnp.clip(x, [1.0, None]) fails here, in clip's complex check)
  return creation.asarray(x).dtype.kind == "c"


def isrealobj(x):
  return not iscomplexobj(x)


def isscalar(element):
  if isinstance(element, (np.ndarray, core.Array)) or hasattr(element, "__jax_array__") \
      or np.isscalar(element):
    return _arr(element).ndim == 0
  return False


iterable = np.iterable
