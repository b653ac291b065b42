"""Scalar helpers the generated native kernels call (imports numba: loaded only by a compile).

Everything here is written so that a loop calling it vectorizes: no libm calls (numba has no
SVML here, and a scalar libm call keeps LLVM from vectorizing the whole loop), selects where
libm would branch. `bitcast` reinterprets a scalar's bits; `radd`, `fmaximum`/`fminimum` and
`fma` are single LLVM instructions (a reassociable add, NaN-propagating max/min, a fused
multiply-add); `exp_f32`, `log_f32`, `log1p_f32` are float32 transcendentals within 1 ulp of
the correctly rounded result; `fma_f32`/`fma_f64` are tier 0's fma (random.fused_multiply_add)
op for op; `erf_inv_f32` is tier 0's float32 erf_inv (Giles, with XLA's fused Horner steps).
"""
from __future__ import annotations

import math
import platform

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba import njit
from numba.core import cgutils
from numba.core import config as numba_config
from numba.extending import intrinsic

from jaxlite._src.compiler import giles_erf_inv


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


@intrinsic
def fma(typingctx, a, b, c):
  """a * b + c rounded once (llvm.fma: one instruction where the CPU has FMA)."""
  def codegen(context, builder, signature, args):
    ty = args[0].type
    fnty = ir.FunctionType(ty, [ty, ty, ty])
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.fma.{ty.intrinsic_name}")
    return builder.call(fn, args)
  return a(a, b, c), codegen


fmaximum = _nan_propagating("maximum")
fminimum = _nan_propagating("minimum")


# --- vectorizable transcendentals ------------------------------------------------------------
# numba has no SVML here: math.exp & co. are scalar libm calls, which stop LLVM from vectorizing
# a kernel's loop. These are arithmetic and bit manipulation only, with selects where libm would
# branch, so a loop calling them vectorizes. float32 runs in float32 (8-16 lanes); each is
# within 2 ulp of the correctly rounded result (tests/test_native.py sweeps them against NumPy).
# They are `inline="always"` (numba inlines them into the kernel before typing): as plain
# njit functions the kernels compile ~25% faster, but LLVM's inliner leaves the bigger ones
# (expm1_f32 without FMA, measured) as calls, and a call in the loop stops it vectorizing.
# Every constant is typed: a bare Python float would widen the float32 arithmetic to float64,
# and numba computes int32 op int32 in int64, so integer steps are cast back before a bitcast.



def _target_has_fma() -> bool:
  """numba's target CPU fuses multiply-adds (llvm.fma is then one instruction; elsewhere a
  libm call, so the polynomials keep separate multiplies and adds). numba targets the host
  unless NUMBA_CPU_NAME / NUMBA_CPU_FEATURES say otherwise (portable caches: then only the
  features named count)."""
  if platform.machine().lower() in ("aarch64", "arm64"):
    return True  # fused multiply-add is part of the base architecture
  features = numba_config.CPU_FEATURES
  if features is None:
    if numba_config.CPU_NAME:
      return False  # a named CPU without a feature list: assume the least
    features = llvm.get_host_cpu_features().flatten()
  return "+fma" in features.split(",")


_HAS_FMA = _target_has_fma()

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
def _madd(a, b, c):
  """a * b + c: fused where the CPU has FMA (_HAS_FMA is a compile-time constant)."""
  return fma(a, b, c) if _HAS_FMA else a * b + c


@njit(inline="always")
def _poly(coefs, x):
  """Horner's rule, highest coefficient first."""
  p = coefs[0]
  for c in coefs[1:]:
    p = _madd(p, x, c)
  return p


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
  p = _madd(_poly(_EXP_P_F32, r), r * r, r) + _F32(1)
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
  y = _madd(_poly(_LOG_P_F32, f) * f, z, c + k * _LN2_LO_F32)
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



_TANH_P_F32 = tuple(_F32(c) for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
                                      1.33314422036e-1, -3.33332819422e-1))


@njit(inline="always")
def tanh_f32(x):
  """tanh in float32 (Cephes' tanhf): an odd polynomial below |x| = 0.625, 1 - 2 / (e**2|x| + 1)
  above (e**2|x| overflows to inf past 44: the result is then 1). Both, then a select."""
  z = abs(x)
  big = _F32(1) - _F32(2) / (exp_f32(z + z) + _F32(1))
  big = -big if x < _F32(0) else big
  s = x * x
  small = _madd(_poly(_TANH_P_F32, s) * s, x, x)
  y = big if z >= _F32(0.625) else small
  return y if x != _F32(0) else x  # -0.0 keeps its sign


# 1/11! .. 1/2!: e**x - 1 = x + x**2 (1/2! + x (1/3! + ...)), to 2**-28 for |x| <= 1
_EXPM1_P_F32 = tuple(_F32(1.0 / math.factorial(k)) for k in range(11, 1, -1))


@njit(inline="always")
def expm1_f32(x):
  """e**x - 1 in float32: the Taylor polynomial where |x| <= 1 (no cancellation), exp_f32(x) - 1
  beyond. Both, then a select."""
  small = _madd(x * x, _poly(_EXPM1_P_F32, x), x)
  y = exp_f32(x) - _F32(1)
  y = small if abs(x) <= _F32(1) else y
  return y if x != _F32(0) else x


# float64: the same shapes with float64 constants (Cephes' exp, fdlibm's log); 4 lanes of AVX2.
_ROUND_F64 = 6755399441055744.0  # 1.5 * 2**52
_LN2_HI_F64, _LN2_LO_F64 = 6.93145751953125e-1, 1.42860682030941723212e-6
_EXP_P_F64 = (1.26177193074810590878e-4, 3.02994407707441961300e-2, 9.99999999999999999910e-1)
_EXP_Q_F64 = (3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1,
              2.00000000000000000009e0)
_LG_F64 = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
           2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
           1.479819860511658591e-01)


@njit(inline="always")
def _pow2_f64(n):
  """2.0**n for int64 n in [-1022, 1023], from its bits."""
  return bitcast(_I64((n + _I64(1023)) << _I64(52)), _F64(0))


@njit(inline="always")
def exp_f64(x):
  """e**x in float64 (Cephes' exp: a Pade form of e**r), scaled by 2**n in two factors."""
  xc = x if x > -746.0 else -746.0
  xc = xc if xc < 710.0 else 710.0
  t = xc * 1.4426950408889634073599 + _ROUND_F64
  fn = t - _ROUND_F64
  n = _I64(bitcast(t, _I64(0)) - bitcast(_F64(_ROUND_F64), _I64(0)))
  r = (xc - fn * _LN2_HI_F64) - fn * _LN2_LO_F64
  rr = r * r
  p = (_EXP_P_F64[0] * rr + _EXP_P_F64[1]) * rr + _EXP_P_F64[2]
  p = r * p
  q = ((_EXP_Q_F64[0] * rr + _EXP_Q_F64[1]) * rr + _EXP_Q_F64[2]) * rr + _EXP_Q_F64[3]
  e = 1.0 + 2.0 * (p / (q - p))
  n1 = _I64(n >> _I64(1))
  y = (e * _pow2_f64(n1)) * _pow2_f64(_I64(n - n1))
  return y if x == x else x


@njit(inline="always")
def _log_f64(u, c, k0):
  """log(2**k0 * u) + c (fdlibm's log) for u > 0 finite normal, small c."""
  ix = _I64(bitcast(u, _I64(0)) + _I64(0x3FF0000000000000 - 0x3FE6A09E667F3BCD))
  k = _F64(_I64(ix >> _I64(52)) - _I64(0x3FF)) + k0
  m = bitcast(_I64(_I64(ix & _I64(0x000FFFFFFFFFFFFF)) + _I64(0x3FE6A09E667F3BCD)), _F64(0))
  f = m - 1.0
  hfsq = 0.5 * f * f
  s = f / (2.0 + f)
  z = s * s
  w = z * z
  t1 = w * (_LG_F64[1] + w * (_LG_F64[3] + w * _LG_F64[5]))
  t2 = z * (_LG_F64[0] + w * (_LG_F64[2] + w * (_LG_F64[4] + w * _LG_F64[6])))
  return s * (hfsq + (t2 + t1)) + (k * 1.90821492927058770002e-10 + c) - hfsq + f + \
      k * 6.93147180369123816490e-01


@njit(inline="always")
def log_f64(x):
  """Natural log in float64: -inf at +-0, NaN below 0, inf at inf; subnormals scaled first."""
  sub = x < 2.2250738585072014e-308
  xs = x * 18014398509481984.0 if sub else x  # 2**54
  y = _log_f64(xs, 0.0, -54.0 if sub else 0.0)
  y = y if x < np.inf else x
  y = y if x > 0.0 else (-np.inf if x == 0.0 else np.nan)
  return y if x == x else x


@njit(inline="always")
def log1p_f64(x):
  """log(1 + x) in float64, as log1p_f32."""
  u = x + 1.0
  c = (x - (u - 1.0)) / u
  y = _log_f64(u, c, 0.0)
  y = y if x < np.inf else x
  y = y if u > 0.0 else (-np.inf if u == 0.0 else np.nan)
  return y if (x == x and x != 0.0) else x

# --- fma: tier 0's random.fused_multiply_add, element by element -------------------------------

_F64 = np.float64
_I64 = np.int64


@njit(inline="always")
def _is_pow2_or_zero(b, mant_bits, exp_max, itype):
  """frexp(b)'s mantissa is +-0.5 (a power of two, subnormal ones included) or b == 0."""
  bits = bitcast(b, itype(0))
  m = bits & itype((1 << mant_bits) - 1)
  e = (bits >> itype(mant_bits)) & itype(exp_max)
  normal = (e > 0) & (e < exp_max) & (m == 0)
  sub = (e == 0) & ((m & (m - itype(1))) == 0)  # m == 0 too: b == +-0
  return normal | sub


@njit(inline="always")
def _nextafter64(s, t):
  """np.nextafter(s, t) for finite s != 0 (t == s or NaN: s)."""
  bits = bitcast(s, _I64(0))
  up = (t > s) == (s > _F64(0))  # away from zero
  step = bitcast(_I64(bits + _I64(1)) if up else _I64(bits - _I64(1)), _F64(0))
  return step if (t != s and t == t) else s


@njit(inline="always")
def _round_to_odd_sum(a, b):
  """random._round_to_odd_sum of two float64s, op for op."""
  s = a + b
  bb = s - a
  err = (a - (s - bb)) + (b - bb)
  even = (bitcast(s, _I64(0)) & _I64(1)) == 0
  fix = (err != _F64(0)) and even and (s - s == _F64(0))  # s - s == 0: s is finite
  # towards the exact sum (`s + err` itself rounds back to s)
  return _nextafter64(s, _F64(np.inf) if err > _F64(0) else _F64(-np.inf)) if fix else s


@njit(inline="always")
def fma_f32(a, b, c):
  """random.fused_multiply_add for float32: a * b + c where b is a power of two or zero (tier 0
  decides for the whole array; here per element, the same where b is one value, as in the
  samplers); else the float64 product (exact) and sum rounded to odd, then to float32."""
  if _is_pow2_or_zero(b, 23, 255, _I32):
    return a * b + c
  return _F32(_round_to_odd_sum(_F64(a) * _F64(b), _F64(c)))


@njit(inline="always")
def _split(a):
  c = a * _F64(134217729.0)  # 2**27 + 1
  hi = c - (c - a)
  return hi, a - hi


@njit(inline="always")
def fma_f64(a, b, c):
  """random.fused_multiply_add for float64 (Boldo-Melquiond's emulation), op for op."""
  if _is_pow2_or_zero(b, 52, 2047, _I64):
    return a * b + c
  p = a * b
  ah, al = _split(a)
  bh, bl = _split(b)
  p_err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
  th = c + p
  bb = th - c
  tl = (c - (th - bb)) + (p - bb)
  out = th + _round_to_odd_sum(tl, p_err)
  return out if p - p == _F64(0) else p + c


# --- erf_inv: tier 0's float32 erf_inv ----------------------------------------------------------

_CENTRAL = tuple(np.float32(c) for c in giles_erf_inv.GILES_CENTRAL)
_TAIL = tuple(np.float32(c) for c in giles_erf_inv.GILES_TAIL)


@njit(inline="always")
def _horner(coefs, w):
  # Tier 0 emulates XLA's fused steps in float64 (the product is exact there, then one float64
  # add and the rounding to float32); the float32 fma rounds once. The two differ only where
  # the float64 sum lands exactly on a float32 tie it did not start on (about 2**-29 of
  # steps), and the fma takes one packed instruction where the emulation takes four.
  out = fma(w, coefs[0], coefs[1])
  for c in coefs[2:]:
    out = fma(out, w, c)
  return out


@njit(inline="always")
def erf_inv_f32(x):
  # Both polynomials, then a select: no branch, no libm call, so a loop over it vectorizes.
  # log1p_f32 is within 1 ulp of the correctly rounded log1p, as NumPy's float32 log1p is
  # (a different implementation: the two differ by an ulp on some inputs, and that shows as an
  # ulp or two of erf_inv's result).
  w = -log1p_f32(-(x * x))
  central = _horner(_CENTRAL, w - np.float32(2.5))
  tail = _horner(_TAIL, np.float32(math.sqrt(w)) - np.float32(3))
  p = central if w < np.float32(5) else tail
  return x * np.float32(np.inf) if abs(x) == np.float32(1) else p * x


@intrinsic
def cblas_gemm(typingctx, addr, m, n, k, alpha, a, b, beta, c):
  """c = alpha * a @ b + beta * c through the CBLAS `?gemm` at address `addr` (NumPy's own BLAS,
  found by `fused_scan.gemm_symbol`): row-major, no transposes, every matrix C-contiguous (lda
  k, ldb n, ldc n). The integer width of `m`, `n`, `k` is the library's (int64 for an ILP64
  build). The call NumPy's matmul makes for the same operands, so the same bits."""
  def codegen(context, builder, signature, args):
    fn_addr, m_, n_, k_, alpha_, a_, b_, beta_, c_ = args
    a_t, b_t, _, c_t = signature.args[5:9]
    ptrs = [context.make_array(t)(context, builder, v).data
            for t, v in ((a_t, a_), (b_t, b_), (c_t, c_))]
    enum = ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [enum, enum, enum, m_.type, n_.type, k_.type,
                                           alpha_.type, ptrs[0].type, k_.type, ptrs[1].type,
                                           n_.type, beta_.type, ptrs[2].type, n_.type])
    fn = builder.inttoptr(fn_addr, fnty.as_pointer())
    row_major, no_trans = ir.Constant(enum, 101), ir.Constant(enum, 111)
    builder.call(fn, [row_major, no_trans, no_trans, m_, n_, k_, alpha_, ptrs[0], k_, ptrs[1],
                      n_, beta_, ptrs[2], n_])
    return context.get_dummy_value()
  from numba.core import types
  return types.void(addr, m, n, k, alpha, a, b, beta, c), codegen
