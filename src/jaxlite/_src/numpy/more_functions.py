"""jnp's remaining elementwise, bit, predicate, construction and utility functions.

All are compositions of jnp/lax functions, so they trace under jit and differentiate.
"""
from __future__ import annotations

import builtins

import numpy as np

from jaxlite._src import core, dtypes
from jaxlite._src.jit import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import namespace as lax
from jaxlite._src.numpy import creation, shape_ops
from jaxlite._src.numpy import lax_numpy as lnp
from jaxlite._src.numpy import reductions as red
from jaxlite._src.numpy import ufuncs as uf
from jaxlite._src.numpy.util import broadcast_shapes as _broadcast_shapes
from jaxlite._src.numpy.util import (
  canonicalize_axis,
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
  return creation.asarray(np.from_dlpack(x))


def broadcast_shapes(*shapes):
  if not shapes:
    return ()
  shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
  return _broadcast_shapes(*shapes)


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
  else:
    hi, lo = _slice_axis(a, 1, n, axis), _slice_axis(a, 0, n - 1, axis)
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


# ---- elementwise ------------------------------------------------------------------------------

def _float_int(dtype):
  return np.dtype(f"int{dtype.itemsize * 8}")


@internal_jit(name="frexp")
def _frexp(x):
  """Mantissa in [0.5, 1) and exponent from the bits; subnormals are scaled up first."""
  dt = _dtype(x)
  if dt.kind == "c":
    raise TypeError("frexp does not support complex-valued inputs")
  info = np.finfo(dt)
  nmant, itype = info.nmant, _float_int(dt)
  bias = -int(info.minexp) + 1  # 127 for f32
  sub = uf.less(uf.abs(x), info.tiny)
  scaled = lnp.where(sub, x * float(2.0 ** (nmant + 1)), x)
  bits = lax.bitcast_convert_type(scaled, itype)
  exp_mask = (1 << (dt.itemsize * 8 - 1 - nmant)) - 1
  raw = uf.bitwise_and(uf.right_shift(bits, nmant), exp_mask)
  e = raw - (bias - 1) - lnp.where(sub, nmant + 1, 0).astype(itype)
  mant_bits = uf.bitwise_or(uf.bitwise_and(bits, ~(exp_mask << nmant)), (bias - 1) << nmant)
  m = lax.bitcast_convert_type(mant_bits.astype(itype), dt)
  special = uf.logical_or(uf.equal(x, 0), uf.logical_not(uf.isfinite(x)))
  return lnp.where(special, x, m), lnp.where(special, 0, e).astype(np.int32)


def frexp(x, /):
  check_arraylike("frexp", x)
  (x,) = promote_dtypes_inexact(x)
  return _frexp(x)


@internal_jit(name="ldexp")
def _ldexp(x1, x2):
  # two half-steps keep 2**x2 representable when x1 is tiny or huge
  half = uf.floor_divide(x2, 2)
  dt = _dtype(x1)
  return x1 * uf.exp2(half.astype(dt)) * uf.exp2((x2 - half).astype(dt))


def ldexp(x1, x2, /):
  check_arraylike("ldexp", x1, x2)
  if _dtype(x2).kind not in "iub":
    raise ValueError(f"ldexp got second argument of type {_dtype(x2)}, expected int.")
  (x1,) = promote_dtypes_inexact(x1)
  x2 = _arr(x2).astype(np.int32) if _dtype(x2).kind != "i" else x2
  return _ldexp(x1, x2)


@internal_jit(name="modf")
def _modf(x):
  whole = lnp.where(uf.greater_equal(x, 0), uf.floor(x), uf.ceil(x))  # inf - inf is nan, as JAX
  return x - whole, whole


def modf(x, /, out=None):
  check_arraylike("modf", x)
  (x,) = promote_dtypes_inexact(x)
  return _modf(x)


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
    raise TypeError("spacing does not support complex-valued inputs")
  toward = uf.copysign(np.array(np.inf, dt), x)
  smallest = uf.copysign(np.array(np.finfo(dt).smallest_subnormal, dt), x)
  return lnp.where(uf.equal(x, 0), smallest, uf.nextafter(x, toward) - x)


def logaddexp2(x1, x2, /):
  """Like jnp.logaddexp: plain primitives (JAX wraps them in a custom_jvp, not a jit)."""
  check_arraylike("logaddexp2", x1, x2)
  x1, x2 = promote_dtypes_inexact(x1, x2)
  amax = uf.maximum(x1, x2)
  delta = x1 - x2
  ln2 = np.array(np.log(2), _dtype(amax))
  out = amax + uf.log1p(uf.exp2(-uf.abs(delta))) / ln2
  return ew.select_n_p.bind(uf.not_equal(delta, delta), out, x1 + x2)


def _nan_to_num_real(x, nan, posinf, neginf):
  info = dtypes.finfo(_dtype(x))
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  out = lnp.where(uf.isnan(x), np.array(nan, x.dtype), x)
  out = lnp.where(uf.isposinf(out), np.array(posinf, x.dtype), out)
  return lnp.where(uf.isneginf(out), np.array(neginf, x.dtype), out)


@internal_jit(static_argnames=("nan", "posinf", "neginf"), name="nan_to_num")
def _nan_to_num(x, nan, posinf, neginf):
  if _dtype(x).kind == "c":
    re = _nan_to_num_real(uf.real(x), nan, posinf, neginf)
    im = _nan_to_num_real(uf.imag(x), nan, posinf, neginf)
    return lax.complex(re, im)
  return _nan_to_num_real(x, nan, posinf, neginf)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  check_arraylike("nan_to_num", x)
  x = _arr(x)
  if dtypes.kind_of_dtype(_dtype(x)) not in "fc":
    return x
  as_float = lambda v: None if v is None else float(v)
  return _nan_to_num(x, as_float(nan), as_float(posinf), as_float(neginf))


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


@internal_jit(name="i0")
def _i0(x):
  return uf.exp(uf.abs(x)) * lax.bessel_i0e(x)


def i0(x):
  check_arraylike("i0", x)
  (x,) = promote_dtypes_inexact(x)
  if _dtype(x).kind == "c":
    raise ValueError("i0 does not support complex-valued inputs")
  return _i0(x)


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
  try:
    dt = _dtype(x) if not isinstance(x, (list, tuple)) else np.asarray(x).dtype
  except (TypeError, AttributeError):
    dt = np.asarray(x).dtype
  return dt.kind == "c"


def isrealobj(x):
  return not iscomplexobj(x)


def isscalar(element):
  if isinstance(element, (np.ndarray, core.Array)) or hasattr(element, "__jax_array__") \
      or np.isscalar(element):
    return _arr(element).ndim == 0
  return False


iterable = np.iterable


# ---- bits -------------------------------------------------------------------------------------

@internal_jit(static_argnames=("axis", "bitorder"), name="packbits")
def _packbits(a, axis, bitorder):
  bits = uf.not_equal(a, 0).astype(np.uint8)
  if axis is None:
    bits, axis = lnp.ravel(bits), 0
  bits = shape_ops.moveaxis(bits, axis, -1)
  n = bits.shape[-1]
  pad = (-n) % 8
  if pad:
    bits = shape_ops.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
  bits = lnp.reshape(bits, bits.shape[:-1] + ((n + pad) // 8, 8))
  shifts = np.arange(8, dtype=np.uint8)
  if bitorder == "big":
    shifts = shifts[::-1].copy()
  packed = red.sum(uf.left_shift(bits, shifts), axis=-1, dtype=np.uint8)
  return shape_ops.moveaxis(packed, -1, axis)


def packbits(a, axis=None, bitorder="big"):
  check_arraylike("packbits", a)
  if _dtype(a).kind not in "iub":
    raise TypeError("Expected an input array of integer or boolean data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  return _packbits(_arr(a), axis, bitorder)


def unpackbits(a, axis=None, count=None, bitorder="big"):
  check_arraylike("unpackbits", a)
  a = _arr(a)
  if _dtype(a) != np.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  return _unpackbits(a, axis, count, bitorder)


@internal_jit(static_argnames=("axis", "count", "bitorder"), name="unpackbits")
def _unpackbits(a, axis, count, bitorder):
  shifts = np.arange(8, dtype=np.uint8)
  if bitorder == "big":
    shifts = shifts[::-1].copy()
  bits = uf.bitwise_and(uf.right_shift(a[..., None], shifts), np.uint8(1))
  if axis is None:
    bits, axis = lnp.ravel(bits), 0
  else:
    axis = canonicalize_axis(axis, a.ndim)
    bits = _unpack_axis(bits, a, axis)
  if count is not None:
    bits = lax.slice_in_dim(bits, 0, count, axis=axis)
  return bits


def _unpack_axis(bits, a, axis):
  """bits (..., 8) of `a`: the 8 bits of each byte follow each other along `axis`."""
  bits = shape_ops.moveaxis(bits, -1, axis + 1)
  shape = a.shape[:axis] + (a.shape[axis] * 8,) + a.shape[axis + 1:]
  return lnp.reshape(bits, shape)


@internal_jit(name="bitwise_count")
def _bitwise_count(x):
  return lax.population_count(uf.abs(x)).astype(np.uint8)


def bitwise_count(x, /):
  check_arraylike("bitwise_count", x)
  if _dtype(x).kind not in "iub":
    raise TypeError("bitwise_count requires integer or boolean arguments")
  (x,) = promote_dtypes(x)
  return _bitwise_count(_arr(x))
