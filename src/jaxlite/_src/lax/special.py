"""Special-function primitives: erf, erfc, erf_inv, lgamma, digamma, igamma, igammac,
bessel_i0e, bessel_i1e, computed in NumPy float64 to about one ulp and rounded to the input dtype.

The polynomial tables are Chebyshev least-squares fits (made for jaxlite with mpmath at 50
digits) on the interval each one names, written in the variable t = (x - mid) / half_width.
erf_inv in float32 follows Giles' single-precision algorithm step by step, because JAX's
normal sampler depends on its exact bits.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.compiler import giles_erf_inv
from jaxlite._src.base import core
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import special_lowering
from jaxlite._src.lax.families import binop, broadcast_shapes_lax, check_dtype_kinds, unop
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.sharding import rules as sharding_rules

_F32_LIKE = ("float16", "bfloat16", "float32")

# --- polynomial tables ---------------------------------------------------------------------------

# erf(x) / x as a polynomial in s = x**2 on [0, 0.5625] (|x| < 0.75).
_ERF_SMALL = (
    1.0309528156012642, -0.0896037671090999, 0.0073144852345747415, -0.000480872478031549,
    2.5991645203459882e-05, -1.1865684217980021e-06, 4.678550558410494e-08, -1.62179326733242e-09,
    5.021834713014888e-11, -1.3996878435265052e-12,)
# exp(x**2) * erfc(x) on (lo, hi) pieces covering [0.75, 10].
_ERFC_PIECES = (
    (0.75, 1.5, (
        0.3956980795529959, -0.08927193303797692, 0.017983445686743534, -0.003311399622913732,
        0.0005659626668907939, -9.076002875087378e-05, 1.3766370967365316e-05,
        -1.987268941624413e-06, 2.7437920839813194e-07, -3.6379099396691376e-08,
        4.64742793469225e-09, -5.736766054749621e-10, 6.858883756140258e-11,
        -7.950947163862947e-12, 8.973123322066049e-13, -1.0354905345351944e-13,
        1.1076684337558005e-14,)),
    (1.5, 2.5, (
        0.25539567631050575, -0.0533982309267448, 0.010450688150881637, -0.0019325797205364107,
        0.00034004615859202107, -5.7239508616337115e-05, 9.257343676999363e-06,
        -1.443580996570628e-06, 2.176887318152635e-07, -3.182366011581627e-08,
        4.519701266061009e-09, -6.247858207594854e-10, 8.419550792602017e-11,
        -1.105585983819779e-11, 1.4220522208718966e-12, -1.9104751081971532e-13,
        2.3499047873035464e-14,)),
    (2.5, 4, (
        0.16633534842682188, -0.03539955174087778, 0.007277226121697713, -0.0014493394550706613,
        0.0002803373858604941, -5.277242617299875e-05, 9.685663579535812e-06,
        -1.7359099524373456e-06, 3.042263321720137e-07, -5.219939846136253e-08,
        8.778203678928047e-09, -1.4483904328516424e-09, 2.3463366250483014e-10,
        -3.718585146658852e-11, 5.823211570968011e-12, -9.924766123756205e-13,
        1.50140381414803e-13,)),
    (4, 6.5, (
        0.1056127354688918, -0.024306805840185734, 0.005506485843924044, -0.0012287138496960832,
        0.0002702247462629382, -5.860619706882041e-05, 1.2540999136882907e-05,
        -2.6491077741526512e-06, 5.526359283840055e-07, -1.1390061868231103e-07,
        2.320257176767305e-08, -4.6752780634676905e-09, 9.313264437575312e-10,
        -1.81388986302334e-10, 3.539674468776196e-11, -8.072865583913236e-12,
        1.5389877390326176e-12,)),
    (6.5, 10, (
        0.06789491988272056, -0.014197730803590733, 0.002948453663990167, -0.0006081672080935607,
        0.0001246126395681804, -2.536683639194467e-05, 5.130836008043694e-06,
        -1.0312834132875519e-06, 2.0600813829303753e-07, -4.09025334344524e-08,
        8.072867694443373e-09, -1.5846516983932435e-09, 3.0913606865363994e-10,
        -5.92693682645908e-11, 1.1435848178280005e-11, -2.591979873940363e-12,
        4.937357641836065e-13,)),
)
# x * sqrt(pi) * exp(x**2) * erfc(x) as a polynomial in w = 100 / x**2 on [0, 1] (x >= 10).
_ERFC_TAIL = (
    0.9975185196367357, -0.0024631871655024697, 1.807059794112275e-05, -2.1884356865685218e-07,
    3.6755187117578022e-09, -7.863210232162636e-11, 2.0372121058092587e-12, -6.181355859499697e-14,
    2.15389769802959e-15, -8.403190621857324e-17,)
# lgamma(x) / ((x - 1) * (x - 2)) on [1, 2].
_LGAMMA_Q = (
    0.4831289505409809, -0.07297994795715297, 0.01572785026864121, -0.003913560937631659,
    0.0010498186644508718, -0.0002945507014009265, 8.510090378468051e-05, -2.509432984849446e-05,
    7.5113915317296576e-06, -2.274240971132041e-06, 6.948440187550096e-07, -2.138843561161159e-07,
    6.623601939725099e-08, -2.057761163373013e-08, 6.434152357291201e-09, -2.0732827842398214e-09,
    6.533268528434416e-10, -1.6393816009998903e-10, 5.18198984494436e-11, -3.533898162275879e-11,
    1.1273354955165048e-11,)
# digamma(x) / (x - x0) on [1, 2], x0 = _DIGAMMA_ROOT[0] + _DIGAMMA_ROOT[1] its positive root.
_DIGAMMA_Q = (
    0.951055876031833, -0.21181371064073026, 0.06013562106019355, -0.018550615381738605,
    0.005936795278433826, -0.0019350666647832667, 0.000636888028319074, -0.00021074841215733007,
    6.995020484160625e-05, -2.325823828431376e-05, 7.741156881253708e-06, -2.578107848270217e-06,
    8.591324222417666e-07, -2.8628755280038686e-07, 9.500926192924096e-08, -3.166618072027162e-08,
    1.10370884388543e-08, -3.6788868183645545e-09, 8.668257373761658e-10, -2.889363639216111e-10,
    2.4765474440031764e-10, -8.25512972008104e-11,)
_DIGAMMA_ROOT = (1.4616321449683622, 9.549995429965697e-17)


def _poly(coefs, t):
  """Horner evaluation of sum(coefs[k] * t**k), on an array or a Python float (the small-input
  kernels below): the coefficients meet `t` as Python floats, in `t`'s dtype."""
  p = coefs[-1]
  for c in coefs[-2::-1]:
    p = p * t + c
  return p


def _poly_on(coefs, lo, hi, x):
  """A table fitted on [lo, hi], evaluated at x."""
  mid, half = (lo + hi) / 2, (hi - lo) / 2
  return _poly(coefs, (x - mid) / half)


def _in_f64(fn):
  """Runs a float64 kernel on any float input and returns the input's dtype."""
  def wrapped(*args):
    dtype = np.result_type(*args)
    vals = [np.asarray(a, np.float64) for a in args]
    with np.errstate(all="ignore"):
      out = fn(*vals) if len(vals) > 1 else fn(vals[0])
    return out.astype(dtype)
  wrapped.__name__ = fn.__name__
  return wrapped


# --- erf, erfc ---------------------------------------------------------------------------------

def _exp_minus_square(a):
  """exp(-a*a) without the rounding error of a*a: a = hi + lo with hi*hi exact."""
  a = np.minimum(a, 30.0)
  hi = a.astype(np.float32).astype(np.float64)
  return np.exp(-hi * hi) * np.exp(-(a - hi) * (a + hi))


def _erfc_large(a):
  """erfc(a) for a >= 0.75."""
  scaled = np.empty_like(a)
  for lo, hi, coefs in _ERFC_PIECES:
    m = (a >= lo) & (a < hi)
    if m.any():
      scaled[m] = _poly_on(coefs, lo, hi, a[m])
  tail = a >= 10
  if tail.any():
    at = a[tail]
    scaled[tail] = _poly_on(_ERFC_TAIL, 0, 1, 100 / (at * at)) / (at * np.sqrt(np.pi))
  return np.where(a > 27, 0.0, scaled * _exp_minus_square(a))


def _erf_small(x):
  s = x * x
  return x * _poly_on(_ERF_SMALL, 0, 0.5625, s)


def _erf64(x):
  out = np.full_like(x, np.nan)
  a = np.abs(x)
  small = a < 0.75
  out[small] = _erf_small(x[small])
  big = a >= 0.75
  out[big] = np.copysign(1 - _erfc_large(a[big]), x[big])
  return out


def _erfc64(x):
  out = np.full_like(x, np.nan)
  a = np.abs(x)
  small = a < 0.75
  out[small] = 1 - _erf_small(x[small])
  big = a >= 0.75
  tail = _erfc_large(a[big])
  out[big] = np.where(x[big] > 0, tail, 2 - tail)
  return out




# --- erf_inv -----------------------------------------------------------------------------------

# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision.
_GILES_CENTRAL = giles_erf_inv.GILES_CENTRAL
_GILES_TAIL = giles_erf_inv.GILES_TAIL


def _fma_horner_f32(coefs, w, out):
  """Horner in float32 with each step fused (p*w + c rounded once), as XLA's CPU code does,
  written into `out`.

  A float32 product is exact in float64, so one float64 add and one rounding emulate the fma.
  The steps run in place on two buffers: the float64 accumulator and the float32 result.
  """
  if w.size <= _HORNER_PYTHON_MAX:
    return _fma_horner_f32_python(coefs, w, out)
  w64 = w.astype(np.float64)
  acc = np.multiply(w64, np.float64(np.float32(coefs[0])))
  for i, c in enumerate(coefs[1:]):
    if i:
      np.multiply(out, w64, out=acc)  # float32 `out` widens exactly
    np.add(acc, np.float64(np.float32(c)), out=acc)
    np.copyto(out, acc, casting="same_kind")  # the one rounding to float32
  return out


# Up to this many elements the Horner steps run on Python floats (IEEE doubles, rounded to
# float32 by np.float32 like the array path): cheaper than two dozen tiny NumPy calls.
_HORNER_PYTHON_MAX = 4


def _fma_horner_f32_python(coefs, w, out):
  cs = [float(np.float32(c)) for c in coefs]
  for i, wi in enumerate(w.tolist()):
    p = cs[0]
    for c in cs[1:]:
      p = float(np.float32(p * wi + c))
    out[i] = p
  return out


# Elements per block of erf_inv's float32 path: its float64 temporaries stay in the L2 cache.
_ERF_INV_BLOCK = 1 << 14


def _erf_inv_f32(x):
  x = np.asarray(x, np.float32)
  out = np.empty(x.shape, np.float32)
  flat_x, flat_out = x.reshape(-1), out.reshape(-1)
  with np.errstate(all="ignore"):
    for i in range(0, flat_x.size, _ERF_INV_BLOCK):
      _erf_inv_f32_block(flat_x[i:i + _ERF_INV_BLOCK], flat_out[i:i + _ERF_INV_BLOCK])
  return out


def _erf_inv_f32_block(x, out):
  """Giles' float32 erf_inv of a 1-D block into `out`: the central polynomial everywhere,
  the tail one only where w = -log1p(-x^2) is 5 or more (|x| > 0.9966, or NaN)."""
  w = np.multiply(x, x)
  np.negative(w, out=w)
  np.log1p(w, out=w)
  np.negative(w, out=w)
  _fma_horner_f32(_GILES_CENTRAL, np.subtract(w, np.float32(2.5)), out)
  tail = np.flatnonzero(~(w < np.float32(5)))
  if tail.size:
    s = np.sqrt(w[tail])
    out[tail] = _fma_horner_f32(_GILES_TAIL, np.subtract(s, np.float32(3), out=s),
                                np.empty_like(s))
  np.multiply(out, x, out=out)
  edge = np.flatnonzero(np.abs(x) == 1)
  if edge.size:
    out[edge] = x[edge] * np.float32(np.inf)


def _erf_inv64(x):
  """float64 erf_inv: Giles' guess, polished by Halley steps on erf in the middle and by
  Newton steps on log(erfc) towards +-1, where erf itself is too flat to converge fast."""
  a = np.abs(x)
  w = -np.log1p(-a * a)
  y = np.where(w < 5, _poly(_GILES_CENTRAL[::-1], w - 2.5),
               _poly(_GILES_TAIL[::-1], np.sqrt(w) - 3)) * a
  y = np.where(np.isfinite(y), y, 0.0)
  mid = a <= 0.5
  if mid.any():
    y[mid] = _halley_erf(y[mid], a[mid])
  tail = (a > 0.5) & (a < 1)
  if tail.any():  # (five Newton steps of masked NumPy calls, worth skipping when empty)
    y[tail] = _newton_log_erfc(y[tail], a[tail])
  y = np.where(a == 1, np.inf, np.where((a > 1) | np.isnan(a), np.nan, y))
  return np.copysign(y, x)


def _halley_erf(y, a):
  for _ in range(2):
    u = (_erf64(y) - a) / (2 / np.sqrt(np.pi) * _exp_minus_square(y))
    y = y - u / (1 + y * u)
  return y


def _newton_log_erfc(y, a):
  target = np.log(1 - a)
  for _ in range(5):
    tail = _erfc64(y)
    slope = -2 / np.sqrt(np.pi) * _exp_minus_square(y) / tail
    y = y - (np.log(tail) - target) / slope
  return y


_GILES_CENTRAL_F64 = tuple(float(c) for c in _GILES_CENTRAL[::-1])
_GILES_TAIL_F64 = tuple(float(c) for c in _GILES_TAIL[::-1])
# --- the same float64 kernels on Python floats, element by element ----------------------------
# A loop body or a single normal draw calls erf_inv on one element: the array kernels' two dozen
# masked NumPy calls per Newton step then cost ~0.5 ms, the same steps on Python floats ~30 us.
# Every arithmetic step is the array kernel's own, in the same order (IEEE float64 either way),
# and exp/log/log1p are NumPy's ufuncs, so both paths agree bit for bit (test_fast_paths).

# Up to this many elements the float64 kernels run element by element on Python floats.
_SCALAR_MAX = 8
_TWO_OVER_SQRT_PI = float(2 / np.sqrt(np.pi))
_MINUS_TWO_OVER_SQRT_PI = float(-2 / np.sqrt(np.pi))
_SQRT_PI = float(np.sqrt(np.pi))


def _exp_minus_square_py(a):
  if a > 30.0:
    a = 30.0
  hi = float(np.float32(a))
  return float(np.exp(-hi * hi)) * float(np.exp(-(a - hi) * (a + hi)))


def _erfc_large_py(a, gauss=None):
  """erfc(a) for a >= 0.75; `gauss`: exp(-a*a) when the caller has it already."""
  if a > 27:
    return 0.0
  if a >= 10:
    scaled = _poly_on(_ERFC_TAIL, 0, 1, 100 / (a * a)) / (a * _SQRT_PI)
  else:
    lo, hi, coefs = next(piece for piece in _ERFC_PIECES if piece[0] <= a < piece[1])
    scaled = _poly_on(coefs, lo, hi, a)
  return scaled * (_exp_minus_square_py(a) if gauss is None else gauss)


def _erf_small_py(x):
  return x * _poly_on(_ERF_SMALL, 0, 0.5625, x * x)


def _erf64_py(x):
  a = abs(x)
  if a < 0.75:
    return _erf_small_py(x)
  if a >= 0.75:
    return math.copysign(1 - _erfc_large_py(a), x)
  return math.nan


def _erfc64_py(x):
  a = abs(x)
  if a < 0.75:
    return 1 - _erf_small_py(x)
  if a >= 0.75:
    tail = _erfc_large_py(a)
    return tail if x > 0 else 2 - tail
  return math.nan


def _erf_inv64_py(x):
  a = abs(x)
  w = float(-np.log1p(-a * a))
  if w < 5:
    y = _poly(_GILES_CENTRAL_F64, w - 2.5) * a
  else:
    y = _poly(_GILES_TAIL_F64, math.sqrt(w) - 3) * a
  if not math.isfinite(y):
    y = 0.0
  if a <= 0.5:
    for _ in range(2):  # _halley_erf
      u = (_erf64_py(y) - a) / (_TWO_OVER_SQRT_PI * _exp_minus_square_py(y))
      y = y - u / (1 + y * u)
  elif a < 1:
    target = float(np.log(1 - a))
    for _ in range(5):  # _newton_log_erfc
      # erfc(y) for y >= 0.75 scales the same exp(-y*y) the slope needs: computed once
      gauss = _exp_minus_square_py(y)
      tail = _erfc_large_py(y, gauss) if y >= 0.75 else _erfc64_py(y)
      slope = _MINUS_TWO_OVER_SQRT_PI * gauss / tail
      y = y - (float(np.log(tail)) - target) / slope
  if a == 1:
    y = math.inf
  elif not a <= 1:  # above 1 or NaN
    y = math.nan
  return math.copysign(y, x)


def _elementwise_py(kernel_py, kernel):
  """`kernel` (float64 arrays) computed by `kernel_py` element by element on small inputs; the
  array kernel where an element's Python arithmetic would raise (a division by zero, which
  NumPy turns into inf or nan)."""
  def run(x):
    if x.size > _SCALAR_MAX:
      return kernel(x)
    try:
      out = [kernel_py(v) for v in x.reshape(-1).tolist()]
    except (ZeroDivisionError, OverflowError, ValueError):
      return kernel(x)
    return np.array(out, np.float64).reshape(x.shape)
  run.__name__ = kernel.__name__
  return run


erf_p = unop("erf", _in_f64(_elementwise_py(_erf64_py, _erf64)), "f", hlo="chlo.erf")
erfc_p = unop("erfc", _in_f64(_elementwise_py(_erfc64_py, _erfc64)), "f", hlo="chlo.erfc")
_erf_inv64_small = _elementwise_py(_erf_inv64_py, _erf_inv64)


def _erf_inv(x):
  # (float64 first: `dtype.name` builds a string on every call, ~1-2 us in a loop body)
  if x.dtype != np.float64 and (x.dtype == np.float32 or x.dtype.name in _F32_LIKE):
    return _erf_inv_f32(x).astype(x.dtype)
  with np.errstate(all="ignore"):
    return _erf_inv64_small(np.asarray(x, np.float64))


erf_inv_p = unop("erf_inv", _erf_inv, "f", hlo="chlo.erf_inv")


# --- lgamma, digamma ---------------------------------------------------------------------------

def _sin_pi_abs(x):
  """|sin(pi * x)|, exact-argument reduced so it stays accurate next to integers."""
  r = x - np.round(x)
  return np.abs(np.sin(np.pi * r))


def _lgamma_pos(x):
  """lgamma for x > 0 (inf at inf)."""
  out = np.empty_like(x)
  # (0, 1): lgamma(x + 1) - log(x), with lgamma(x + 1) = x (x - 1) Q(x + 1) kept exact in x.
  m = x < 1
  xm = x[m]
  out[m] = xm * (xm - 1) * _poly_on(_LGAMMA_Q, 1, 2, xm + 1) - np.log(xm)
  m = (x >= 1) & (x <= 2)
  xm = x[m]
  out[m] = (xm - 1) * (xm - 2) * _poly_on(_LGAMMA_Q, 1, 2, xm) + 0.0  # lgamma(1) is +0
  m = (x > 2) & (x < 10)
  out[m] = _lgamma_shifted_down(x[m])
  m = x >= 10
  out[m] = _stirling(x[m])
  return out


def _lgamma_shifted_down(x):
  """lgamma on (2, 10): lgamma(y) + log((y)(y+1)...(x-1)) with y in (1, 2]."""
  y = x.copy()
  prod = np.ones_like(x)
  while True:
    m = y > 2
    if not m.any():
      break
    y[m] -= 1
    prod[m] *= y[m]
  return (y - 1) * (y - 2) * _poly_on(_LGAMMA_Q, 1, 2, y) + np.log(prod)


_HALF_LOG_2PI = 0.9189385332046728
# B_{2k} / (2k (2k - 1)) for k = 1..8: the Stirling series of lgamma.
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)


def _stirling(x):
  inv = 1 / x
  series = inv * _poly(_STIRLING, inv * inv)
  return (x - 0.5) * np.log(x) - x + _HALF_LOG_2PI + series


def _lgamma64(x):
  out = np.full_like(x, np.nan)
  pos = x > 0
  out[pos] = _lgamma_pos(x[pos])
  neg = x <= 0
  xn = x[neg]
  # Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); poles give +inf.
  out[neg] = np.log(np.pi / _sin_pi_abs(xn)) - _lgamma_pos(1 - xn)
  out[np.isinf(x)] = np.inf
  return out


lgamma_p = unop("lgamma", _in_f64(_lgamma64), "f", hlo="chlo.lgamma")

# B_{2k} / (2k) for k = 1..8: the asymptotic series of digamma in 1 / x**2.
_DIGAMMA_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12,
                       -3617 / 8160)


def _digamma_1_2(y):
  root_hi, root_lo = _DIGAMMA_ROOT
  return ((y - root_hi) - root_lo) * _poly_on(_DIGAMMA_Q, 1, 2, y)


def _digamma_pos(x):
  out = np.empty_like(x)
  m = x < 1
  out[m] = _digamma_1_2(x[m] + 1) - 1 / x[m]
  m = (x >= 1) & (x < 10)
  y = x[m].copy()
  acc = np.zeros_like(y)
  while True:
    k = y > 2
    if not k.any():
      break
    y[k] -= 1
    acc[k] += 1 / y[k]
  out[m] = _digamma_1_2(y) + acc
  m = x >= 10
  xm = x[m]
  inv2 = 1 / (xm * xm)
  out[m] = np.log(xm) - 0.5 / xm - inv2 * _poly(_DIGAMMA_ASYMPTOTIC, inv2)
  return out


def _digamma64(x):
  out = np.full_like(x, np.nan)
  pos = x > 0
  out[pos] = _digamma_pos(x[pos])
  neg = (x <= 0) & (x != np.round(x)) & np.isfinite(x)
  xn = x[neg]
  # Reflection: digamma(x) = digamma(1 - x) - pi / tan(pi x); poles give nan like JAX.
  out[neg] = _digamma_pos(1 - xn) - np.pi / np.tan(np.pi * (xn - np.round(xn)))
  return out


digamma_p = unop("digamma", _in_f64(_digamma64), "f", hlo="chlo.digamma")


# --- igamma, igammac: regularized incomplete gamma functions ---------------------------------

_MAX_TERMS = 2000


def _igamma_series(a, x):
  """P(a, x) by its power series (converges fast for x < a + 1)."""
  term = np.ones_like(x) / a
  total = term.copy()
  n = a.copy()
  for _ in range(_MAX_TERMS):
    n += 1
    term = term * x / n
    total += term
    if np.all(np.abs(term) <= np.abs(total) * 1e-17):
      break
  return total * np.exp(a * np.log(x) - x - _lgamma64(a))


def _igammac_fraction(a, x):
  """Q(a, x) by Legendre's continued fraction (modified Lentz; for x >= a + 1)."""
  tiny = 1e-300
  b = x + 1 - a
  c = np.full_like(x, 1 / tiny)
  d = 1 / b
  h = d.copy()
  for i in range(1, _MAX_TERMS):
    an = -i * (i - a)
    b = b + 2
    d = an * d + b
    d = np.where(np.abs(d) < tiny, tiny, d)
    c = b + an / c
    c = np.where(np.abs(c) < tiny, tiny, c)
    d = 1 / d
    delta = d * c
    h = h * delta
    if np.all(np.abs(delta - 1) <= 1e-16):
      break
  return np.exp(a * np.log(x) - x - _lgamma64(a)) * h


def _igamma_pair(a, x):
  """(P, Q) with the better-converging method for each element."""
  a, x = np.broadcast_arrays(a, x)
  p = np.full(a.shape, np.nan)
  q = np.full(a.shape, np.nan)
  ok = (a > 0) & (x > 0) & np.isfinite(x)
  series = ok & (x < a + 1)
  frac = ok & ~series
  if series.any():
    p[series] = _igamma_series(a[series], x[series])
    q[series] = 1 - p[series]
  if frac.any():
    q[frac] = _igammac_fraction(a[frac], x[frac])
    p[frac] = 1 - q[frac]
  zero_x = (x == 0) & (a >= 0)
  p[zero_x], q[zero_x] = 0.0, 1.0
  done = ((a == 0) & (x > 0)) | ((x == np.inf) & (a >= 0))
  p[done], q[done] = 1.0, 0.0
  return p, q


def _igamma64(a, x):
  return _igamma_pair(a, x)[0]


def _igammac64(a, x):
  return _igamma_pair(a, x)[1]


igamma_p = binop("igamma", _in_f64(_igamma64), "f", fuse=False,
                 hlo=special_lowering.igamma_rule)
igammac_p = binop("igammac", _in_f64(_igammac64), "f", fuse=False,
                  hlo=special_lowering.igammac_rule)


# --- bessel_i0e, bessel_i1e: exponentially scaled modified Bessel functions ------------------

_BESSEL_SERIES_MAX = 20.0


def _bessel_series(a, order):
  """exp(-a) * I_order(a) by the power series sum (a/2)^(2k+order) / (k! (k+order)!)."""
  q = (a / 2) ** 2
  term = np.ones_like(a) if order == 0 else a / 2
  total = term.copy()
  for k in range(1, 80):
    term = term * q / (k * (k + order))
    total += term
  return total * np.exp(-a)


def _bessel_asymptotic(a, order):
  """exp(-a) * I_order(a) ~ sum_k (-1)^k prod_j (4 order^2 - (2j-1)^2) / (8 j a) / sqrt(2 pi a)."""
  term = np.ones_like(a)
  total = term.copy()
  mu = 4 * order * order
  for j in range(1, 40):
    term = -term * (mu - (2 * j - 1) ** 2) / (8 * j * a)
    total += term
  return total / np.sqrt(2 * np.pi * a)


def _bessel_scaled(x, order):
  a = np.abs(x)
  out = np.full_like(x, np.nan)
  small = a <= _BESSEL_SERIES_MAX
  out[small] = _bessel_series(a[small], order)
  big = a > _BESSEL_SERIES_MAX
  out[big] = _bessel_asymptotic(a[big], order)
  out[np.isinf(a)] = 0.0
  return out if order == 0 else np.copysign(out, x)


def _bessel_i0e64(x):
  return _bessel_scaled(x, 0)


def _bessel_i1e64(x):
  return _bessel_scaled(x, 1)


bessel_i0e_p = unop("bessel_i0e", _in_f64(_bessel_i0e64), "f", fuse=False,
                    hlo=lambda ctx, x: _i0e_hlo(ctx, x))
bessel_i1e_p = unop("bessel_i1e", _in_f64(_bessel_i1e64), "f", fuse=False, hlo="chlo.bessel_i1e")


def _i0e_hlo(ctx, x):
  """bessel_i0e in StableHLO (chlo has only i1e): the impl's power series for |x| <= 20 and its
  asymptotic series beyond, in the operand's precision."""
  av = x.aval
  op = lambda name, *xs: ctx.op(name, list(xs), av)  # noqa: E731
  c = lambda v: ctx.constant(np.asarray(v, x.dtype), shape=x.shape)  # noqa: E731
  a = op("abs", x)
  q = op("multiply", op("multiply", a, c(0.5)), op("multiply", a, c(0.5)))
  term = total = c(1.0)
  for k in range(1, 60):
    term = op("multiply", term, op("multiply", q, c(1.0 / (k * k))))
    total = op("add", total, term)
  small = op("multiply", total, op("exponential", op("negate", a)))
  term = total = c(1.0)
  for j in range(1, 20):
    term = op("divide", op("multiply", term, c((2 * j - 1) ** 2 / (8.0 * j))), a)
    total = op("add", total, term)
  big = op("divide", total, op("sqrt", op("multiply", a, c(2 * np.pi))))
  return ctx.select(ctx.compare(a, c(_BESSEL_SERIES_MAX), "LE"), small, big)


# --- autodiff rules: one line per primitive (t: tangent, y: output, x, a: inputs) ----------------

def _trigamma(x):
  """polygamma(1, x) for x > 0 as a composite of differentiable primitives: six recurrence
  steps then the asymptotic series, so digamma has derivatives of every order."""
  acc = _c(x, 0)
  for _ in range(6):
    acc = ew.add_p.bind(acc, ew.integer_pow_p.bind(x, y=-2))
    x = ew.add_p.bind(x, _c(x, 1))
  r = ew.integer_pow_p.bind(x, y=-1)
  r2 = ew.mul_p.bind(r, r)
  series = _c(x, 0)
  for coef in (-1 / 30, 1 / 42, -1 / 30, 1 / 6):
    series = ew.mul_p.bind(ew.add_p.bind(series, _c(x, coef)), r2)
  tail = ew.mul_p.bind(r, ew.add_p.bind(ew.add_p.bind(_c(x, 1), ew.mul_p.bind(_c(x, 0.5), r)),
                                        series))
  return ew.add_p.bind(acc, tail)


def _c(x, v):
  return np.array(v, core.get_aval(x).dtype)[()]


def _exp_neg_square(x):
  return ew.exp_p.bind(ew.neg_p.bind(ew.square_p.bind(x)))


def _igamma_dx(t, a, x):
  # d/dx P(a, x) = exp(-x + (a - 1) log x - lgamma(a))
  log_density = ew.sub_p.bind(
      ew.sub_p.bind(ew.mul_p.bind(ew.sub_p.bind(a, _c(a, 1)), ew.log_p.bind(x)), x),
      lgamma_p.bind(a))
  return ew.mul_p.bind(t, ew.exp_p.bind(log_density))


def _igamma_da(t, a, x):
  return ew.mul_p.bind(t, igamma_grad_a_p.bind(a, x))


def _bessel_i1e_jvp(t, y, x):
  eps = np.finfo(core.get_aval(x).dtype).eps
  big = ew.gt_p.bind(ew.abs_p.bind(x), _c(x, eps))
  safe_x = ew.select_n_p.bind(big, _full(x, eps), x)
  dy = ew.sub_p.bind(bessel_i0e_p.bind(safe_x),
                     ew.mul_p.bind(y, ew.add_p.bind(ew.sign_p.bind(safe_x),
                                                    ew.integer_pow_p.bind(safe_x, y=-1))))
  return ew.mul_p.bind(t, ew.select_n_p.bind(big, _full(x, 0.5), dy))


def _full(x, v):
  return ew._full_like(x, v)


ad.defjvp(erf_p, lambda t, x: ew.mul_p.bind(_c(x, 2 / np.sqrt(np.pi)),
                                             ew.mul_p.bind(t, _exp_neg_square(x))))
ad.defjvp(erfc_p, lambda t, x: ew.mul_p.bind(_c(x, -2 / np.sqrt(np.pi)),
                                              ew.mul_p.bind(t, _exp_neg_square(x))))
ad.defjvp2(erf_inv_p, lambda t, y, x: ew.mul_p.bind(t, ew.mul_p.bind(
    _c(x, np.sqrt(np.pi) / 2), ew.exp_p.bind(ew.square_p.bind(y)))))
ad.defjvp(lgamma_p, lambda t, x: ew.mul_p.bind(t, digamma_p.bind(x)))
ad.defjvp(digamma_p, lambda t, x: ew.mul_p.bind(t, _trigamma(x)))
ad.defjvp(igamma_p, _igamma_da, _igamma_dx)
ad.defjvp(igammac_p, lambda t, a, x: ew.neg_p.bind(_igamma_da(t, a, x)),
          lambda t, a, x: ew.neg_p.bind(_igamma_dx(t, a, x)))
ad.defjvp2(bessel_i0e_p, lambda t, y, x: ew.mul_p.bind(t, ew.sub_p.bind(
    bessel_i1e_p.bind(x), ew.mul_p.bind(ew.sign_p.bind(x), y))))
ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)


# --- the lax functions -------------------------------------------------------------------------

def _unary(prim):
  def fn(x):
    return prim.bind(asarg(x))
  fn.__name__ = fn.__qualname__ = prim.name
  return fn


erf = _unary(erf_p)
erfc = _unary(erfc_p)
erf_inv = _unary(erf_inv_p)
lgamma = _unary(lgamma_p)
digamma = _unary(digamma_p)
bessel_i0e = _unary(bessel_i0e_p)
bessel_i1e = _unary(bessel_i1e_p)


def igamma(a, x):
  """The regularized lower incomplete gamma function P(a, x)."""
  return igamma_p.bind(asarg(a), asarg(x))


def igammac(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
  return igammac_p.bind(asarg(a), asarg(x))


# --- zeta, polygamma, igamma_grad_a, random_gamma_grad -------------------------------------

# B_2j / (2j)! for the Euler-Maclaurin tail of the Hurwitz zeta sum.
_EM_COEFFS = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000,
              1 / 74724249600, -3617 / 10670622842880000, 43867 / 5109094217170944000,
              -174611 / 802857662698291200000, 77683 / 14101100039391805440000)
_EM_TERMS = 12


def _zeta64(x, q):
  """Hurwitz zeta sum_k (k + q)^-x by Euler-Maclaurin after _EM_TERMS direct terms."""
  x, q = np.broadcast_arrays(x, q)
  total = sum(np.power(q + k, -x) for k in range(_EM_TERMS))
  a = q + _EM_TERMS
  total = total + np.power(a, 1 - x) / (x - 1) + 0.5 * np.power(a, -x)
  rising, a_pow = x, np.power(a, -x - 1)
  for j, coef in enumerate(_EM_COEFFS):
    total = total + coef * rising * a_pow
    rising = rising * (x + 2 * j + 1) * (x + 2 * j + 2)
    a_pow = a_pow / (a * a)
  pole = (q <= 0) & (np.floor(q) == q)
  out = np.where(x == 1, np.inf, np.where(x < 1, np.nan, total))
  return np.where(pole, np.inf, np.where((q <= 0) & (np.floor(x) != x), np.nan, out))


def _polygamma64(m, x):
  """psi^(m)(x) = (-1)^(m+1) m! zeta(m + 1, x); digamma at m = 0; nan for non-integer m."""
  m, x = np.broadcast_arrays(m, x)
  sign = np.where(np.remainder(m, 2) == 1, 1.0, -1.0)
  higher = sign * np.exp(_lgamma64(m + 1)) * _zeta64(m + 1, x)
  out = np.where(m == 0, _digamma64(np.array(x, np.float64)), higher)
  return np.where((m < 0) | (m != np.floor(m)), np.nan, out)


def _igamma_grad_a64(a, x):
  """dP(a, x)/da from the series P = sum_n x^(a+n) e^-x / Gamma(a+n+1), term by term:
  each term's derivative is itself times (log x - digamma(a+n+1))."""
  a, x = (np.array(v, np.float64) for v in np.broadcast_arrays(a, x))
  ok = (a > 0) & (x > 0) & np.isfinite(x) & np.isfinite(a)
  aa, xx = np.where(ok, a, 1.0), np.where(ok, x, 1.0)
  log_x = np.log(xx)
  log_term = aa * log_x - xx - _lgamma64(aa + 1)
  psi = _digamma64(aa + 1)
  total = np.exp(log_term) * (log_x - psi)
  for n in range(1, 6000):
    log_term = log_term + log_x - np.log(aa + n)
    psi = psi + 1 / (aa + n)
    step = np.exp(log_term) * (log_x - psi)
    total = total + step
    if n > xx.max() and np.all(np.abs(step) <= 1e-17 * np.maximum(np.abs(total), 1e-300)):
      break
  out = np.where(ok, total, 0.0)
  return np.where(np.isnan(a) | np.isnan(x) | (a <= 0) | (x < 0), np.nan, out)


def _random_gamma_grad64(a, x):
  """d sample / d alpha of a Gamma(alpha) sample x, by implicit differentiation of P(a, x) = u:
  -(dP/da) / (dP/dx)."""
  a, x = np.broadcast_arrays(a, x)
  log_density = (a - 1) * np.log(x) - x - _lgamma64(a)
  return -_igamma_grad_a64(a, x) / np.exp(log_density)


zeta_p = binop("zeta", _in_f64(_zeta64), "f", fuse=False, hlo="chlo.zeta")
polygamma_p = binop("polygamma", _in_f64(_polygamma64), "f", fuse=False, hlo="chlo.polygamma")
igamma_grad_a_p = binop("igamma_grad_a", _in_f64(_igamma_grad_a64), "f", fuse=False,
                        hlo=special_lowering.igamma_grad_a_rule)
random_gamma_grad_p = binop("random_gamma_grad", _in_f64(_random_gamma_grad64), "f",
                            fuse=False, hlo=special_lowering.random_gamma_grad_rule)


def _polygamma_dm(t, m, x):
  raise ValueError("polygamma gradient with respect to m is not supported")


# zeta and igamma_grad_a have no derivative rule in JAX either (NotImplementedError).
ad.defjvp(polygamma_p, _polygamma_dm, lambda t, m, x: ew.mul_p.bind(
    t, polygamma_p.bind(ew.add_p.bind(m, _full(m, 1)), x)))


def zeta(x, q):
  """The Hurwitz zeta function sum_k (k + q)^-x."""
  return zeta_p.bind(asarg(x), asarg(q))


def polygamma(m, x):
  """The m-th derivative of digamma at x (m a float holding an integer)."""
  return polygamma_p.bind(asarg(m), asarg(x))


def igamma_grad_a(a, x):
  """The derivative of igamma(a, x) with respect to a."""
  return igamma_grad_a_p.bind(asarg(a), asarg(x))


def random_gamma_grad(a, x):
  """The derivative with respect to `a` of a Gamma(a, 1) sample `x` (for reparameterized grads)."""
  return random_gamma_grad_p.bind(asarg(a), asarg(x))


# --- the regularized incomplete beta function (lax.betainc; jax.scipy.special.betainc over it) --
# NumPy has none, so it is a primitive here: Lentz's continued fraction on the convergent side
# (x < (a + 1) / (a + b + 2)), the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) on the other.

def _betainc_fraction(a, b, x):
  tiny = 1e-300
  qab, qap, qam = a + b, a + 1, a - 1
  c = np.ones_like(x)
  d = 1 - qab * x / qap
  d = np.where(np.abs(d) < tiny, tiny, d)
  d = 1 / d
  h = d
  for m in range(1, 300):
    m2 = 2 * m
    aa = m * (b - m) * x / ((qam + m2) * (a + m2))
    d = 1 + aa * d
    d = np.where(np.abs(d) < tiny, tiny, d)
    c = 1 + aa / c
    c = np.where(np.abs(c) < tiny, tiny, c)
    d = 1 / d
    h = h * d * c
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
    d = 1 + aa * d
    d = np.where(np.abs(d) < tiny, tiny, d)
    c = 1 + aa / c
    c = np.where(np.abs(c) < tiny, tiny, c)
    d = 1 / d
    delta = d * c
    h = h * delta
    if np.all(np.abs(delta - 1) < 1e-15):
      break
  return h


def _log_beta64(a, b):
  lg = np.vectorize(math.lgamma, otypes=[np.float64])
  return lg(a) + lg(b) - lg(a + b)


def _betainc_impl(a, b, x):
  dtype = x.dtype
  a, b, x = (np.asarray(v, np.float64) for v in np.broadcast_arrays(a, b, x))
  with np.errstate(all="ignore"):
    swap = x > (a + 1) / (a + b + 2)
    aa, bb, xx = np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1 - x, x)
    inner = (0 < xx) & (xx < 1)
    safe_x = np.where(inner, xx, 0.5)
    log_front = (aa * np.log(safe_x) + bb * np.log1p(-safe_x) - _log_beta64(aa, bb)
                 - np.log(aa))
    frac = _betainc_fraction(aa, bb, safe_x) if aa.size else aa
    val = np.exp(log_front) * frac
    val = np.where(swap, 1 - val, val)
    val = np.where(x <= 0, 0.0, np.where(x >= 1, 1.0, val))
    val = np.where((a <= 0) | (b <= 0) | np.isnan(a) | np.isnan(b) | np.isnan(x)
                   | (x < 0) | (x > 1), np.nan, val)
  return val.astype(dtype)


def _betainc_abstract(a, b, x):
  for i, v in enumerate((a, b, x)):
    check_dtype_kinds("regularized_incomplete_beta", v.dtype, "f", i)
  if not a.dtype == b.dtype == x.dtype:
    raise TypeError("regularized_incomplete_beta requires arguments of one dtype, got "
                    f"{a.dtype.name}, {b.dtype.name}, {x.dtype.name}")
  shape = broadcast_shapes_lax("regularized_incomplete_beta", a.shape, b.shape, x.shape)
  return ShapedArray(shape, x.dtype, a.weak_type and b.weak_type and x.weak_type)


regularized_incomplete_beta_p = core.Primitive("regularized_incomplete_beta")
sharding_rules.elementwise(regularized_incomplete_beta_p)  # its sharding rule
regularized_incomplete_beta_p.def_impl(_betainc_impl)
regularized_incomplete_beta_p.def_abstract_eval(_betainc_abstract)
xla.register(regularized_incomplete_beta_p, special_lowering.betainc_rule)


def _betainc_jvp_x(t, a, b, x):
  """∂I_x(a, b)/∂x = x^(a-1) (1-x)^(b-1) / B(a, b), in log space, where (a-1) log x and
  (b-1) log1p(-x) are 0 where their factor is (scipy's xlogy and xlog1py)."""
  shape = broadcast_shapes_lax("regularized_incomplete_beta", *(np.shape(v) for v in (a, b, x)))
  t, a, b, x = (ew._maybe_broadcast(shape, v) for v in (t, a, b, x))
  dtype = core.get_aval(x).dtype
  zeros, ones = np.zeros(shape, dtype), np.ones(shape, dtype)
  am1, bm1 = ew.sub_p.bind(a, ones), ew.sub_p.bind(b, ones)
  a_one, b_one = ew.eq_p.bind(am1, zeros), ew.eq_p.bind(bm1, zeros)
  xlogy = ew.select_n_p.bind(a_one, ew.mul_p.bind(am1, ew.log_p.bind(
      ew.select_n_p.bind(a_one, x, ones))), zeros)
  neg_x = ew.neg_p.bind(x)
  xlog1py = ew.select_n_p.bind(b_one, ew.mul_p.bind(bm1, ew.log1p_p.bind(
      ew.select_n_p.bind(b_one, neg_x, zeros))), zeros)
  betaln = ew.sub_p.bind(ew.add_p.bind(lgamma_p.bind(a), lgamma_p.bind(b)),
                         lgamma_p.bind(ew.add_p.bind(a, b)))
  log_density = ew.sub_p.bind(ew.add_p.bind(xlogy, xlog1py), betaln)
  return ew.mul_p.bind(t, ew.exp_p.bind(log_density))


def _betainc_jvp_ab(t, a, b, x):
  raise ValueError("Betainc gradient with respect to a and b not supported.")


ad.defjvp(regularized_incomplete_beta_p, _betainc_jvp_ab, _betainc_jvp_ab, _betainc_jvp_x)
batching.defbroadcasting(regularized_incomplete_beta_p)


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b) (strict dtypes)."""
  return regularized_incomplete_beta_p.bind(asarg(a), asarg(b), asarg(x))
