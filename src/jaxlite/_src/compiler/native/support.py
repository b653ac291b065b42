"""Scalar helpers the generated native kernels call (imports numba: loaded only by a compile).

`bitcast` reinterprets a scalar's bits; `erf_inv_f32` is tier 0's float32 erf_inv (Giles, with
XLA's fused Horner steps emulated exactly in float64), so that random.normal keeps its bits.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from jaxlite._src.lax import special


@intrinsic
def bitcast(typingctx, x, like):
  """`x`'s bits as the type of `like` (same width)."""
  def codegen(context, builder, signature, args):
    return builder.bitcast(args[0], context.get_value_type(signature.return_type))
  return like(x, like), codegen


@intrinsic
def radd(typingctx, acc, val):
  """acc + val (one float type) with LLVM's `reassoc` flag on this add only: a loop summing
  through it vectorizes (lanes of partial sums, added at the end). A plain `+` chain has to
  stay in order, one add at a time."""
  def codegen(context, builder, signature, args):
    add = builder.fadd(args[0], args[1])
    add.flags.append("reassoc")
    return add
  return acc(acc, val), codegen


def _nan_propagating(name):
  def extremum(typingctx, a, b):
    """llvm.maximum / llvm.minimum: NaN if either is NaN, -0 below +0. A reduction through it
    vectorizes; the select of `a > b or a != a` does not."""
    def codegen(context, builder, signature, args):
      ty = args[0].type
      fnty = ir.FunctionType(ty, [ty, ty])
      fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.{name}.{ty.intrinsic_name}")
      return builder.call(fn, args)
    return a(a, b), codegen
  extremum.__name__ = extremum.__qualname__ = f"f{name}"
  return intrinsic(extremum)


fmaximum = _nan_propagating("maximum")
fminimum = _nan_propagating("minimum")


_CENTRAL = tuple(float(np.float32(c)) for c in special._GILES_CENTRAL)
_TAIL = tuple(float(np.float32(c)) for c in special._GILES_TAIL)


@njit(inline="always")
def _horner(coefs, w):
  w64 = np.float64(w)
  out = np.float32(w64 * coefs[0] + coefs[1])
  for c in coefs[2:]:
    out = np.float32(np.float64(out) * w64 + c)  # the product is exact: one rounding, an fma
  return out


@njit(inline="always")
def erf_inv_f32(x):
  w = -math.log1p(-(x * x))
  if w < np.float32(5):
    p = _horner(_CENTRAL, w - np.float32(2.5))
  else:
    p = _horner(_TAIL, np.float32(math.sqrt(w)) - np.float32(3))
  if abs(x) == np.float32(1):
    return x * np.float32(np.inf)
  return p * x


# --- vectorizable transcendentals ------------------------------------------------------------
# numba has no SVML here: math.exp & co. are scalar libm calls, which stop LLVM from vectorizing
# a kernel's loop. These are arithmetic and bit manipulation only, with selects where libm would
# branch, so a loop calling them vectorizes. float32 runs in float32 (8-16 lanes); each is
# within 2 ulp of the correctly rounded result (tests/test_native.py sweeps them against NumPy).
# Every constant is typed: a bare Python float would widen the float32 arithmetic to float64,
# and numba computes int32 op int32 in int64, so integer steps are cast back before a bitcast.

_F32 = np.float32
_I32 = np.int32
_LOG2E_F32 = _F32(1.44269504088896341)
_ROUND_F32 = _F32(12582912.0)  # 1.5 * 2**23: x + it - it rounds x to an integer (|x| < 2**22)
_LN2_HI_F32 = _F32(0.693359375)  # ln 2 = HI + LO, HI with few bits: n * HI is exact
_LN2_LO_F32 = _F32(-2.12194440e-4)
_EXP_P_F32 = tuple(_F32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                     4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_LOG_P_F32 = tuple(_F32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                                     -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                                     2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))


@njit(inline="always")
def _pow2_f32(n):
  """2.0**n for int32 n in [-126, 127], from its bits."""
  return bitcast(_I32((n + _I32(127)) << _I32(23)), _F32(0))


@njit(inline="always")
def exp_f32(x):
  """e**x in float32 (Cephes' expf): n = round(x / ln 2), r = x - n ln 2 in two parts, a degree-7
  polynomial for e**r, then 2**n in two factors so that results in the subnormal range round
  once. Overflows to inf past 88.72, underflows to +0 below -103.97."""
  xc = x if x > _F32(-104.0) else _F32(-104.0)  # n stays in [-151, 129]; NaN is fixed below
  xc = xc if xc < _F32(89.0) else _F32(89.0)
  t = xc * _LOG2E_F32 + _ROUND_F32
  fn = t - _ROUND_F32
  n = _I32(bitcast(t, _I32(0)) - bitcast(_ROUND_F32, _I32(0)))
  r = (xc - fn * _LN2_HI_F32) - fn * _LN2_LO_F32
  p = _EXP_P_F32[0]
  for c in _EXP_P_F32[1:]:
    p = p * r + c
  p = (p * (r * r) + r) + _F32(1)
  n1 = _I32(n >> _I32(1))
  y = (p * _pow2_f32(n1)) * _pow2_f32(_I32(n - n1))
  return y if x == x else x


@njit(inline="always")
def _log_parts_f32(x):
  """(k, f) with x = 2**k * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), for x > 0 finite normal."""
  ix = _I32(bitcast(x, _I32(0)) + _I32(0x3F800000 - 0x3F3504F3))
  k = _I32(ix >> _I32(23)) - _I32(0x7F)
  m = bitcast(_I32(_I32(ix & _I32(0x007FFFFF)) + _I32(0x3F3504F3)), _F32(0))
  return _F32(k), m - _F32(1)


@njit(inline="always")
def _log_core_f32(k, f, c):
  """log(2**k * (1 + f)) + c (Cephes' logf polynomial), for |f| <= 0.415, small c."""
  z = f * f
  p = _LOG_P_F32[0]
  for co in _LOG_P_F32[1:]:
    p = p * f + co
  y = (p * f) * z + (c + k * _LN2_LO_F32)
  y = y - _F32(0.5) * z
  return (f + y) + k * _LN2_HI_F32


@njit(inline="always")
def log_f32(x):
  """Natural log in float32: -inf at +-0, NaN below 0, inf at inf; subnormals scaled first."""
  sub = x < _F32(1.1754943508222875e-38)
  xs = x * _F32(8388608.0) if sub else x  # 2**23
  k, f = _log_parts_f32(xs)
  k = k - _F32(23) if sub else k
  y = _log_core_f32(k, f, _F32(0))
  y = y if x < _F32(np.inf) else x  # inf, NaN
  y = y if x > _F32(0) else (_F32(-np.inf) if x == _F32(0) else _F32(np.nan))
  return y if x == x else x


@njit(inline="always")
def log1p_f32(x):
  """log(1 + x) in float32: log(u) of u = 1 + x, plus (x - (u - 1)) / u, the first-order term
  of the rounding of u (exact where |x| < 2**-24: u = 1 and the result is x)."""
  u = x + _F32(1)
  c = (x - (u - _F32(1))) / u
  k, f = _log_parts_f32(u)
  y = _log_core_f32(k, f, c)
  y = y if x < _F32(np.inf) else x
  y = y if u > _F32(0) else (_F32(-np.inf) if u == _F32(0) else _F32(np.nan))
  return y if (x == x and x != _F32(0)) else x  # NaN, and -0.0 keeps its sign
