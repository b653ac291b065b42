"""`jax.scipy.special`: special functions over the lax special primitives (erf, lgamma, igamma,
Bessel), with the rest (zeta, ndtri, log_ndtr, xlogy, …) composed in jnp so they trace and diff.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import special as lax_special
from jaxlite._src.numpy.util import check_arraylike, promote_args_inexact


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _inexact(name, *args):
  """Arguments promoted to one inexact dtype and broadcast together (as jnp ufuncs)."""
  check_arraylike(name, *args)
  jnp = _jnp()
  out = promote_args_inexact(name, *args)
  out = [a if isinstance(a, (core.Tracer, core.array_type)) else jnp.asarray(a) for a in out]
  if len(out) > 1:
    try:
      out = jnp.broadcast_arrays(*out)
    except ValueError:  # JAX's arguments meet in a lax op first: its TypeError
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(str(tuple(a.shape)) for a in out)}.") from None
  return out


def _real_float(name, *args):
  out = _inexact(name, *args)
  for a in out:
    if a.dtype.kind == "c":
      raise TypeError(f"{name} does not accept complex inputs")
  return out


# --- error function family --------------------------------------------------------------------

def erf(x):
  (x,) = _real_float("erf", x)
  return lax_special.erf_p.bind(x)


def erfc(x):
  (x,) = _real_float("erfc", x)
  return lax_special.erfc_p.bind(x)


def erfinv(x):
  (x,) = _real_float("erfinv", x)
  return lax_special.erf_inv_p.bind(x)


def ndtr(x):
  """The standard normal CDF, through erf near 0 and erfc in the tails (no cancellation)."""
  jnp = _jnp()
  (x,) = _real_float("ndtr", x)
  half_sqrt_2 = np.asarray(np.sqrt(0.5), x.dtype)
  z = jnp.abs(x) * half_sqrt_2
  y = jnp.where(z < half_sqrt_2, 1 + erf(x * half_sqrt_2),
                jnp.where(x > 0, 2 - erfc(z), erfc(z)))
  return 0.5 * y


def _log_ndtr_bounds(dtype):
  return (-10.0, 5.0) if dtype == np.float32 or dtype == np.float16 else (-20.0, 8.0)


def log_ndtr(x, series_order: int = 3):
  """log ndtr(x): direct in the middle, log1p(-ndtr(-x)) above, an asymptotic series below."""
  jnp = _jnp()
  (x,) = _real_float("log_ndtr", x)
  series_order = operator.index(series_order)
  if not 0 <= series_order <= 30:
    raise ValueError(f"series_order must be in [0, 30], got {series_order}")
  lower, upper = _log_ndtr_bounds(x.dtype)
  # Clamps by where, not max/min: at a tie those split the gradient between the two sides.
  direct = jnp.log(ndtr(jnp.where(x > lower, x, lower)))
  upper_tail = jnp.log1p(-ndtr(-jnp.where(x > upper, x, upper)))
  x_low = jnp.where(x <= lower, x, lower)
  lower_tail = (-0.5 * x_low * x_low - jnp.log(-x_low) - 0.5 * math.log(2 * math.pi)
                + jnp.log(_ndtr_asymptotic_series(x_low, series_order)))
  return jnp.where(x > upper, upper_tail, jnp.where(x > lower, direct, lower_tail))


def _ndtr_asymptotic_series(x, order):
  """1 + Σ_{n=1}^{order} (-1)^n (2n-1)!! / x^{2n}."""
  x2_inv = 1 / (x * x)
  total = 1.0
  term = 1.0
  power = 1.0
  for n in range(1, order + 1):
    term *= 2 * n - 1
    power = power * x2_inv
    total = total + (-1) ** n * term * power
  return total


def ndtri(p):
  """The inverse of ndtr: Abramowitz & Stegun's 26.2.23 guess, polished by Newton steps on
  log ndtr (accurate in both tails)."""
  jnp = _jnp()
  (p,) = _real_float("ndtri", p)
  q = jnp.minimum(p, 1 - p)
  t = jnp.sqrt(-2 * jnp.log(jnp.where(q > 0, q, 1)))
  guess = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
            / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
  log_q = jnp.log(jnp.where(q > 0, q, 1))
  x = guess
  for _ in range(3):
    log_cdf = log_ndtr(x)
    log_pdf = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
    x = x - (log_cdf - log_q) * jnp.exp(log_cdf - log_pdf)
  x = jnp.where(p > 0.5, -x, x)
  x = jnp.where(q == 0.5, 0.0, x)
  x = jnp.where(p == 0, -jnp.inf, jnp.where(p == 1, jnp.inf, x))
  return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), jnp.nan, x).astype(p.dtype)


# --- gamma family -----------------------------------------------------------------------------

def gammaln(x):
  (x,) = _real_float("gammaln", x)
  return lax_special.lgamma_p.bind(x)


loggamma = gammaln


def digamma(x):
  (x,) = _real_float("digamma", x)
  return lax_special.digamma_p.bind(x)


def gammasgn(x):
  """The sign of Γ(x): +1 for x > 0; alternating between the poles for x < 0."""
  jnp = _jnp()
  (x,) = _real_float("gammasgn", x)
  floor_x = jnp.floor(x)
  odd = jnp.remainder(floor_x, 2) == 1
  sign = jnp.where((x > 0) | ~odd, 1.0, -1.0)
  sign = jnp.where(x == 0, jnp.where(jnp.signbit(x), -1.0, 1.0), sign)
  return jnp.where((x < 0) & (floor_x == x) | jnp.isnan(x), jnp.nan, sign).astype(x.dtype)


def gamma(x):
  (x,) = _real_float("gamma", x)
  return gammasgn(x) * _jnp().exp(gammaln(x))


def factorial(n, exact: bool = False):
  if exact:
    raise NotImplementedError("factorial with exact=True")
  jnp = _jnp()
  (n,) = _real_float("factorial", n)
  return jnp.where(n < 0, 0, gamma(n + 1))


def betaln(a, b):
  """log |B(a, b)| = log Γ(a) + log Γ(b) - log Γ(a + b)."""
  a, b = _real_float("betaln", a, b)
  return gammaln(a) + gammaln(b) - gammaln(a + b)


def beta(a, b):
  a, b = _real_float("beta", a, b)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign * _jnp().exp(betaln(a, b))


def gammainc(a, x):
  """The regularized lower incomplete gamma function P(a, x)."""
  a, x = _real_float("gammainc", a, x)
  return lax_special.igamma_p.bind(a, x)


def gammaincc(a, x):
  """The regularized upper incomplete gamma function Q(a, x)."""
  a, x = _real_float("gammaincc", a, x)
  return lax_special.igammac_p.bind(a, x)


def multigammaln(a, d: int):
  """The log of the multivariate gamma function of dimension d."""
  jnp = _jnp()
  d = core.concrete_or_error(operator.index, d, "d argument of multigammaln")
  (a,) = _real_float("multigammaln", a)
  constant = 0.25 * d * (d - 1) * math.log(math.pi)
  terms = [gammaln(a - 0.5 * j) for j in range(d)]
  total = terms[0]
  for t in terms[1:]:
    total = total + t
  return jnp.asarray(constant, a.dtype) + total


def poch(z, m):
  """The rising factorial Γ(z + m) / Γ(z)."""
  z, m = _real_float("poch", z, m)
  return gammasgn(z + m) * gammasgn(z) * _jnp().exp(gammaln(z + m) - gammaln(z))


# --- zeta and polygamma: Euler–Maclaurin summation ---------------------------------------------

# B_{2j} / (2j)! for j = 1..12: the Euler–Maclaurin tail coefficients.
_EM_COEFFS = [1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160,
              -691 / 1307674368000, 1 / 74724249600, -3617 / 10670622842880000,
              43867 / 5109094217170944000, -174611 / 802857662698291200000,
              77683 / 14101100039391805440000, -236364091 / 1693824136731743669452800000]
_EM_TERMS = 12  # direct terms before the tail: enough for float64 with 12 corrections


def zeta(x, q=None):
  """The Hurwitz zeta function Σ_k (k + q)^(-x) (Riemann's when q is None)."""
  jnp = _jnp()
  if q is None:
    q = 1.0
  x, q = _real_float("zeta", x, q)
  n = _EM_TERMS
  total = 0.0
  for k in range(n):
    total = total + jnp.power(q + k, -x)
  a = q + n
  total = total + jnp.power(a, 1 - x) / (x - 1) + 0.5 * jnp.power(a, -x)
  rising = x  # x (x+1) … (x + 2j - 2)
  a_pow = jnp.power(a, -x - 1)
  for j, coef in enumerate(_EM_COEFFS):
    total = total + coef * rising * a_pow
    rising = rising * (x + 2 * j + 1) * (x + 2 * j + 2)
    a_pow = a_pow / (a * a)
  out = jnp.where(x == 1, jnp.inf, total)
  out = jnp.where(x < 1, jnp.nan, out)
  # Non-positive integer q is a pole of the sum.
  out = jnp.where((q <= 0) & (jnp.floor(q) == q), jnp.inf, out)
  return jnp.where((q <= 0) & (jnp.floor(q) != q) & (jnp.floor(x) != x), jnp.nan, out)


def polygamma(n, x):
  """The n-th derivative of digamma: (-1)^(n+1) n! ζ(n + 1, x)."""
  jnp = _jnp()
  n_arr, x = _real_float("polygamma", n, x)
  sign = jnp.where(jnp.remainder(n_arr, 2) == 1, 1.0, -1.0)
  higher = sign * jnp.exp(gammaln(n_arr + 1)) * zeta(n_arr + 1, x)
  return jnp.where(n_arr == 0, digamma(x), higher).astype(x.dtype)


# --- logs and entropies -----------------------------------------------------------------------

def xlogy(x, y):
  """x log y, 0 where x == 0 (also for y == 0), with finite gradients there."""
  jnp = _jnp()
  x, y = _inexact("xlogy", x, y)
  safe_y = jnp.where(x == 0, jnp.ones_like(y), y)
  return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log(safe_y))


def xlog1py(x, y):
  """x log(1 + y), 0 where x == 0."""
  jnp = _jnp()
  x, y = _inexact("xlog1py", x, y)
  safe_y = jnp.where(x == 0, jnp.zeros_like(y), y)
  return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log1p(safe_y))


def entr(x):
  """-x log x for x > 0, 0 at 0 and -inf below."""
  jnp = _jnp()
  (x,) = _real_float("entr", x)
  safe = jnp.where(x > 0, x, 1)
  return jnp.where(x > 0, -safe * jnp.log(safe), jnp.where(x == 0, 0.0, -jnp.inf)).astype(
      x.dtype)


def rel_entr(p, q):
  jnp = _jnp()
  p, q = _real_float("rel_entr", p, q)
  both = (p > 0) & (q > 0)
  safe_p, safe_q = jnp.where(both, p, 1), jnp.where(both, q, 1)
  out = jnp.where(both, safe_p * jnp.log(safe_p / safe_q), jnp.inf)
  return jnp.where((p == 0) & (q >= 0), 0.0, out).astype(p.dtype)


def kl_div(p, q):
  jnp = _jnp()
  p, q = _real_float("kl_div", p, q)
  both = (p > 0) & (q > 0)
  safe_p, safe_q = jnp.where(both, p, 1), jnp.where(both, q, 1)
  out = jnp.where(both, safe_p * jnp.log(safe_p / safe_q) - safe_p + safe_q, jnp.inf)
  return jnp.where((p == 0) & (q >= 0), q, out).astype(p.dtype)


def expit(x):
  (x,) = _real_float("expit", x)
  return ew.logistic_p.bind(x)


def logit(x):
  jnp = _jnp()
  (x,) = _real_float("logit", x)
  return jnp.log(x / (1 - x))


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
  from jaxlite._src.numpy import reductions
  return reductions.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign,
                              where=where)


def softmax(x, /, *, axis=None):
  from jaxlite._src.nn import functions
  return functions.softmax(x, axis=-1 if axis is None else axis)


def log_softmax(x, /, *, axis=None):
  from jaxlite._src.nn import functions
  return functions.log_softmax(x, axis=-1 if axis is None else axis)


# --- Bessel functions -------------------------------------------------------------------------

def i0e(x):
  (x,) = _real_float("i0e", x)
  return lax_special.bessel_i0e_p.bind(x)


def i1e(x):
  (x,) = _real_float("i1e", x)
  return lax_special.bessel_i1e_p.bind(x)


def i0(x):
  (x,) = _real_float("i0", x)
  return _jnp().exp(_jnp().abs(x)) * i0e(x)


def i1(x):
  (x,) = _real_float("i1", x)
  return _jnp().exp(_jnp().abs(x)) * i1e(x)


# --- exponential integrals, erfcx, comb, Bernoulli numbers ------------------------------------

_EULER_GAMMA = 0.5772156649015329


def _e1_series(x, terms=40):
  """E1(x) = -γ - log x - Σ (-x)^k / (k k!), for 0 < x <= 1."""
  jnp = _jnp()
  total = 0.0
  term = 1.0
  for k in range(1, terms + 1):
    term = term * (-x) / k
    total = total + term / k
  return -_EULER_GAMMA - jnp.log(x) - total


def _e1_fraction(x, iterations=60):
  """E1(x) = e^(-x) / (x + 1 - 1²/(x + 3 - 2²/(x + 5 - …))), for x > 1 (modified Lentz)."""
  jnp = _jnp()
  b = x + 1
  c = 1e30
  d = 1 / b
  h = d
  for i in range(1, iterations + 1):
    an = -float(i * i)
    b = b + 2
    d = 1 / (an * d + b)
    c = b + an / c
    h = h * c * d
  return h * jnp.exp(-x)


def exp1(x):
  """The exponential integral E1(x) = ∫_x^∞ e^(-t)/t dt (NaN for x < 0)."""
  jnp = _jnp()
  (x,) = _real_float("exp1", x)
  small = jnp.where((x > 0) & (x <= 1), x, 0.5)
  large = jnp.where(x > 1, x, 2.0)
  out = jnp.where(x <= 1, _e1_series(small), _e1_fraction(large))
  out = jnp.where(x == 0, jnp.inf, out)
  return jnp.where(x < 0, jnp.nan, out).astype(x.dtype)


def expi(x):
  """The exponential integral Ei(x) = -PV∫_{-x}^∞ e^(-t)/t dt: a power series for positive x up
  to 40, an asymptotic series beyond, and -E1(-x) for negative x."""
  jnp = _jnp()
  (x,) = _real_float("expi", x)
  mid = jnp.where((x > 0) & (x <= 40), x, 1.0)
  total = 0.0
  term = 1.0
  for k in range(1, 100):
    term = term * mid / k
    total = total + term / k
  series = _EULER_GAMMA + jnp.log(mid) + total
  big = jnp.where(x > 40, x, 50.0)
  asym = 1.0
  term = 1.0
  for k in range(1, 12):
    term = term * k / big
    asym = asym + term
  asymptotic = jnp.exp(big) / big * asym
  negative = -exp1(jnp.where(x < 0, -x, 1.0))
  out = jnp.where(x > 40, asymptotic, series)
  out = jnp.where(x < 0, negative, out)
  return jnp.where(x == 0, -jnp.inf, out).astype(x.dtype)


def erfcx(x):
  """The scaled complementary error function e^(x²) erfc(x), without overflow for large x."""
  jnp = _jnp()
  (x,) = _real_float("erfcx", x)
  direct = jnp.exp(x * x) * erfc(jnp.where(x < 5, x, 0.0))
  big = jnp.where(x >= 5, x, 5.0)
  inv2 = 1 / (2 * big * big)
  # e^(x²) erfc(x) ~ 1/(x √π) (1 - 1/(2x²) + 3/(2x²)² - 15/(2x²)³ + 105/(2x²)⁴)
  series = 1 - inv2 + 3 * inv2 ** 2 - 15 * inv2 ** 3 + 105 * inv2 ** 4
  asymptotic = series / (big * math.sqrt(math.pi))
  return jnp.where(x < 5, direct, asymptotic).astype(x.dtype)


def comb(N, k, *, repetition: bool = False):
  """The binomial coefficient C(N, k) (with repetition: C(N + k - 1, k)); 0 where undefined."""
  jnp = _jnp()
  N, k = _real_float("comb", N, k)
  if repetition:
    N = N + k - 1
  out = jnp.exp(gammaln(N + 1) - gammaln(k + 1) - gammaln(N - k + 1))
  return jnp.where((k < 0) | (N < 0) | (k > N), 0.0, out).astype(N.dtype)


def bernoulli(n: int):
  """The Bernoulli numbers B_0 … B_n (B_1 = -1/2)."""
  n = core.concrete_or_error(operator.index, n, "The n argument of bernoulli")
  if n < 0:
    raise ValueError("n must be a non-negative integer.")
  values = _akiyama_tanigawa(n)
  return _jnp().asarray(np.asarray(values, np.float64).astype(dtypes.default_float_dtype()))


def _akiyama_tanigawa(n):
  """B_0 … B_n exactly, by the Akiyama–Tanigawa algorithm over fractions."""
  from fractions import Fraction
  row = []
  out = []
  for m in range(n + 1):
    row.append(Fraction(1, m + 1))
    for j in range(m, 0, -1):
      row[j - 1] = j * (row[j - 1] - row[j])
    out.append(row[0])
  if n >= 1:
    out[1] = -out[1]  # the algorithm gives B_1 = +1/2; SciPy's convention is -1/2
  return [float(b) for b in out]


# --- Box-Cox ----------------------------------------------------------------------------------

def boxcox(x, lmbda):
  jnp = _jnp()
  x, lmbda = _real_float("boxcox", x, lmbda)
  safe = jnp.where(lmbda == 0, 1, lmbda)
  return jnp.where(lmbda == 0, jnp.log(x), jnp.expm1(safe * jnp.log(x)) / safe)


def boxcox1p(x, lmbda):
  jnp = _jnp()
  x, lmbda = _real_float("boxcox1p", x, lmbda)
  safe = jnp.where(lmbda == 0, 1, lmbda)
  return jnp.where(lmbda == 0, jnp.log1p(x), jnp.expm1(safe * jnp.log1p(x)) / safe)


# --- the regularized incomplete beta function (its primitive is lax's: lax/special.py) -------

regularized_incomplete_beta_p = lax_special.regularized_incomplete_beta_p


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b)."""
  a, b, x = _real_float("betainc", a, b, x)
  return regularized_incomplete_beta_p.bind(a, b, x)


_ = dtypes
