"""Still more of `jax.scipy.special`, composed in jnp (trace, vmap and differentiate): spence,
sici, fresnel, owens_t, bessel_jn, hyp1f1 and hyp2f1."""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.numpy.util import check_arraylike
from jaxlite._src.scipy.special import _real_float, gammaln, ndtr


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


# 64-point Gauss-Legendre rule on [-1, 1]: exact for polynomials of degree 127, so it integrates
# the smooth integrands below (a few oscillations at most on the ranges they are used) to
# float32 precision.
_GL_U, _GL_W = np.polynomial.legendre.leggauss(64)


def _gauss_legendre(f, upper):
  """Integral of f over [0, upper] (upper broadcast against the nodes on a new last axis)."""
  jnp = _jnp()
  half = upper[..., None] / 2
  t = half * (jnp.asarray(_GL_U, upper.dtype) + 1)
  return jnp.sum(half * jnp.asarray(_GL_W, upper.dtype) * f(t), axis=-1)


# --- dilogarithm ------------------------------------------------------------------------------

_PI2_6 = math.pi ** 2 / 6


def _li2_series(w, terms=40):
  """Li2(w) = sum w^k / k^2, for |w| <= 1/2 (the tail is below 2^-40)."""
  jnp = _jnp()
  total, power = jnp.zeros_like(w), jnp.ones_like(w)
  for k in range(1, terms + 1):
    power = power * w
    total = total + power / (k * k)
  return total


def _li2_le_half(w):
  """Li2(w) for -1 <= w <= 1/2: the series, or Landen's identity
  Li2(w) = -Li2(w / (w - 1)) - log(1 - w)^2 / 2, which maps [-1, -1/2) into (1/3, 1/2]."""
  jnp = _jnp()
  near = w >= -0.5
  landen = w / (w - 1)
  log1m = jnp.log1p(-jnp.where(near, 0., w))
  return jnp.where(near, _li2_series(jnp.where(near, w, 0.)),
                   -_li2_series(jnp.where(near, 0., landen)) - 0.5 * log1m * log1m)


def spence(x):
  """Spence's function (scipy's convention) integral_1^x log(t) / (1 - t) dt = Li2(1 - x), for
  x >= 0 (NaN below)."""
  jnp = _jnp()
  (x,) = _real_float("spence", x)
  z = 1 - x
  # 1/2 < z <= 1 (0 <= x < 1/2): reflection Li2(z) = pi^2/6 - log z log(1 - z) - Li2(1 - z)
  refl_x = jnp.where((x > 0) & (x < 0.5), x, 0.25)
  reflected = _PI2_6 - jnp.log1p(-refl_x) * jnp.log(refl_x) - _li2_series(refl_x)
  # z < -1 (x > 2): inversion Li2(z) = -pi^2/6 - log(-z)^2 / 2 - Li2(1/z), with 1/z in (-1, 0)
  inv_z = jnp.where(x > 2, z, -2.)
  log_mz = jnp.log(-inv_z)
  inverted = -_PI2_6 - 0.5 * log_mz * log_mz - _li2_le_half(1 / inv_z)
  middle = _li2_le_half(jnp.where((x >= 0.5) & (x <= 2), z, 0.))
  out = jnp.where(x < 0.5, reflected, jnp.where(x > 2, inverted, middle))
  out = jnp.where(x == 0, jnp.asarray(_PI2_6, x.dtype), out)
  return jnp.where(x < 0, jnp.nan, out).astype(x.dtype)


# --- sine/cosine and Fresnel integrals ---------------------------------------------------------

_EULER = 0.57721566490153286


def _nonzero(t):
  return _jnp().where(t == 0, 1., t)


def sici(x):
  """(Si(x), Ci(x)): integral_0^x sin t / t dt and gamma + log|x| + integral_0^|x| (cos t - 1)/t
  dt. Quadrature up to |x| = 16, the asymptotic auxiliary series f, g beyond."""
  jnp = _jnp()
  (x,) = _real_float("sici", x)
  ax = jnp.abs(x)
  near = jnp.minimum(ax, 16.)
  # at x = 0 every node is 0: the integrands' limits there are 1 and 0
  si_q = _gauss_legendre(lambda t: jnp.where(t == 0, 1., jnp.sin(t) / _nonzero(t)), near)
  ci_q = _EULER + jnp.log(near) + _gauss_legendre(
      lambda t: jnp.where(t == 0, 0., (jnp.cos(t) - 1) / _nonzero(t)), near)
  far = jnp.maximum(ax, 16.)
  inv2 = 1 / (far * far)
  f, g, fact_f, fact_g, p = 0., 0., 1., 1., 1.
  for k in range(8):
    f = f + (-1) ** k * fact_f * p
    g = g + (-1) ** k * fact_g * p
    fact_f *= (2 * k + 1) * (2 * k + 2)
    fact_g *= (2 * k + 2) * (2 * k + 3)
    p = p * inv2
  f, g = f / far, g * inv2
  si_a = math.pi / 2 - f * jnp.cos(far) - g * jnp.sin(far)
  ci_a = f * jnp.sin(far) - g * jnp.cos(far)
  si = jnp.where(ax <= 16., si_q, si_a)
  ci = jnp.where(ax <= 16., ci_q, ci_a)
  return (jnp.sign(x) * si).astype(x.dtype), ci.astype(x.dtype)


def fresnel(x):
  """(S(x), C(x)): integral_0^x sin(pi t^2 / 2) dt and the same with cos. Quadrature up to
  |x| = 5, the asymptotic auxiliary series beyond."""
  jnp = _jnp()
  (x,) = _real_float("fresnel", x)
  ax = jnp.abs(x)
  near = jnp.minimum(ax, 5.)
  s_q = _gauss_legendre(lambda t: jnp.sin(math.pi / 2 * t * t), near)
  c_q = _gauss_legendre(lambda t: jnp.cos(math.pi / 2 * t * t), near)
  far = jnp.maximum(ax, 5.)
  y = math.pi * far * far
  inv = 1 / (y * y)
  # f ~ (1/(pi x)) sum (-1)^k (4k-1)!! / y^2k ; g ~ (1/(pi^2 x^3)) sum (-1)^k (4k+1)!! / y^2k
  f_coef, g_coef = (1., -3., 105., -10395., 2027025.), (1., -15., 945., -135135., 34459425.)
  f, g, p = 0., 0., 1.
  for cf, cg in zip(f_coef, g_coef):
    f, g, p = f + cf * p, g + cg * p, p * inv
  f = f / (math.pi * far)
  g = g / (math.pi ** 2 * far ** 3)
  phase = math.pi / 2 * far * far
  s_a = 0.5 - f * jnp.cos(phase) - g * jnp.sin(phase)
  c_a = 0.5 + f * jnp.sin(phase) - g * jnp.cos(phase)
  sign = jnp.sign(x)
  s = jnp.where(ax <= 5., s_q, s_a)
  c = jnp.where(ax <= 5., c_q, c_a)
  return (sign * s).astype(x.dtype), (sign * c).astype(x.dtype)


# --- Owen's T ----------------------------------------------------------------------------------

def owens_t(h, a):
  """Owen's T(h, a) = (1/2pi) integral_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt: quadrature
  for |a| <= 1; for |a| > 1, T(h, a) = (Phi(h) Q(ah) + Phi(ah) Q(h)) / 2 - T(ah, 1/a)."""
  jnp = _jnp()
  h, a = _real_float("owens_t", h, a)
  h = jnp.abs(h)  # T is even in h and odd in a
  aa = jnp.abs(a)

  def quad(hh, upper):
    return _gauss_legendre(
        lambda t: jnp.exp(-0.5 * hh[..., None] ** 2 * (1 + t * t)) / (1 + t * t),
        upper) / (2 * math.pi)

  small = quad(h, jnp.minimum(aa, 1.))
  big_a = jnp.maximum(aa, 1.)
  ah = big_a * h
  phi_h, phi_ah = ndtr(h), ndtr(ah)
  q_h, q_ah = ndtr(-h), ndtr(-ah)
  large = 0.5 * (phi_h * q_ah + phi_ah * q_h) - quad(ah, 1 / big_a)
  return (jnp.sign(a) * jnp.where(aa <= 1., small, large)).astype(h.dtype)


# --- Bessel J of integer orders -----------------------------------------------------------------

def bessel_jn(z, *, v: int, n_iter: int = 50):
  """J_0(z) ... J_v(z), stacked on a new leading axis, by Miller's backward recurrence
  J_{k-1} = (2k/z) J_k - J_{k+1} from order ~n_iter + v down, normalised by
  J_0 + 2 (J_2 + J_4 + ...) = 1 (rescaling on the way down so float32 does not overflow)."""
  jnp = _jnp()
  if not isinstance(v, (int, np.integer)) or v < 0:
    raise ValueError(f"bessel_jn: v must be a non-negative integer, got {v!r}")
  (z,) = _real_float("bessel_jn", z)
  az = jnp.abs(z)
  safe = jnp.where(az == 0, 1., az)
  top = int(n_iter + v)
  top += top % 2
  j_next, j_cur = jnp.zeros_like(safe), jnp.full_like(safe, 1e-30)
  orders = [None] * (v + 1)
  norm = jnp.zeros_like(safe)
  for k in range(top, 0, -1):
    # j_cur is J_k: record it, add it to the normalisation, step down to J_{k-1}
    if k <= v:
      orders[k] = j_cur
    if k % 2 == 0:
      norm = norm + 2 * j_cur
    j_next, j_cur = j_cur, (2 * k / safe) * j_cur - j_next
    scale = jnp.where(jnp.abs(j_cur) > 1e10, 1e-10, 1.)
    j_next, j_cur, norm = j_next * scale, j_cur * scale, norm * scale
    orders = [o * scale if o is not None else None for o in orders]
  orders[0] = j_cur
  norm = norm + j_cur
  out = jnp.stack([o / norm for o in orders])
  signs = jnp.asarray([(-1.) ** n for n in range(v + 1)], z.dtype).reshape((v + 1,) + (1,) * z.ndim)
  out = jnp.where(z < 0, signs * out, out)
  at_zero = jnp.asarray([1.] + [0.] * v, z.dtype).reshape((v + 1,) + (1,) * z.ndim)
  return jnp.where(az == 0, at_zero, out).astype(z.dtype)


# --- confluent and Gauss hypergeometric functions ---------------------------------------------

def _series(term_ratio, shape_like, max_terms):
  """sum_k t_k with t_0 = 1 and t_{k+1} = t_k * term_ratio(k), stopped when every term is below
  float precision relative to the sum (or after max_terms)."""
  jnp = _jnp()
  from jaxlite._src.lax import namespace as lax
  eps = float(jnp.finfo(shape_like.dtype).eps) / 4

  def cond(state):
    k, term, total = state
    return (k < max_terms) & jnp.any(jnp.abs(term) > eps * jnp.abs(total))

  def body(state):
    k, term, total = state
    term = term * term_ratio(k)
    return k + 1, term, total + term

  one = jnp.ones_like(shape_like)
  return lax.while_loop(cond, body, (0, one, one))[2]


def hyp1f1(a, b, x):
  """Kummer's confluent hypergeometric M(a, b, x) = sum (a)_k / (b)_k x^k / k!; for x < 0 by
  Kummer's transformation e^x M(b - a, b, -x), so the summed terms do not cancel."""
  jnp = _jnp()
  a, b, x = _real_float("hyp1f1", a, b, x)
  neg = x < 0
  aa = jnp.where(neg, b - a, a)
  ax = jnp.abs(x)
  total = _series(lambda k: (aa + k) / (b + k) * ax / (k + 1), x, 2000)
  return jnp.where(neg, jnp.exp(x) * total, total).astype(x.dtype)


def hyp2f1(a, b, c, x):
  """Gauss's 2F1(a, b; c; x) for x <= 1: the series for 0 <= x < 1, Pfaff's transformation
  (1 - x)^-a 2F1(a, c - b; c; x / (x - 1)) for x < 0, Gauss's theorem at x = 1; NaN for x > 1."""
  jnp = _jnp()
  a, b, c, x = _real_float("hyp2f1", a, b, c, x)
  neg = x < 0
  bb = jnp.where(neg, c - b, b)
  w = jnp.where(neg, x / (x - 1), jnp.where(x < 1, x, 0.))
  total = _series(lambda k: (a + k) * (bb + k) / ((c + k) * (k + 1)) * w, x, 20000)
  total = jnp.where(neg, total * (1 - x) ** (-a), total)
  s = c - a - b
  gauss = jnp.exp(gammaln(c) + gammaln(jnp.where(s > 0, s, 1.)) - gammaln(c - a) - gammaln(c - b))
  at_one = jnp.where(s > 0, gauss, jnp.inf)
  out = jnp.where(x == 1, at_one, total)
  return jnp.where(x > 1, jnp.nan, out).astype(x.dtype)


# --- Faddeeva function ---------------------------------------------------------------------------

def _weideman_coefficients(n=32):
  """Weideman (1994): w(z) ~ 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)), Z = (L + iz)/(L - iz),
  with the degree-(n-1) polynomial p from the FFT of exp(-t^2) (L^2 + t^2) sampled at
  t = L tan(theta / 2). Highest degree first (for polyval)."""
  m = 2 * n
  big_l = math.sqrt(n / math.sqrt(2))
  theta = np.arange(-m + 1, m) * np.pi / m
  t = big_l * np.tan(theta / 2)
  f = np.concatenate([[0.], np.exp(-t * t) * (big_l ** 2 + t * t)])
  a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
  return big_l, a[1:n + 1][::-1].copy()


_W_L, _W_A = _weideman_coefficients()


def wofz(z):
  """The Faddeeva function w(z) = exp(-z^2) erfc(-iz): Weideman's rational expansion in the
  upper half-plane, and w(z) = 2 exp(-z^2) - w(-z) below it."""
  jnp = _jnp()
  check_arraylike("wofz", z)
  z = jnp.asarray(z)
  if not jnp.issubdtype(z.dtype, jnp.complexfloating):
    z = z.astype(jnp.result_type(z.dtype, jnp.complex64))
  lower = z.imag < 0
  zu = jnp.where(lower, -z, z)
  denom = _W_L - 1j * zu
  big_z = (_W_L + 1j * zu) / denom
  p = jnp.zeros_like(zu)
  for c in _W_A:  # Horner
    p = p * big_z + c
  w = 2 * p / (denom * denom) + (1 / math.sqrt(math.pi)) / denom
  return jnp.where(lower, 2 * jnp.exp(-z * z) - w, w).astype(z.dtype)


# --- spherical harmonics -------------------------------------------------------------------------

def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
  """Y_n^m(theta, phi) = N P_n^m(cos theta) e^{i m phi} (orthonormal on the sphere, with the
  Condon-Shortley phase), theta the colatitude. The normalised Legendre functions come from the
  stable three-term recurrence in the degree, up to `n_max` (default: the largest n given,
  which must then be concrete)."""
  jnp = _jnp()
  if diff_n:
    raise NotImplementedError("sph_harm_y: the derivatives (diff_n) are not supported "
                              "(JAX does not support them either)")
  n, m = jnp.asarray(n), jnp.asarray(m)
  theta, phi = _real_float("sph_harm_y", theta, phi)
  n, m, theta, phi = jnp.broadcast_arrays(n, m, theta, phi)
  if n_max is None:
    n_max = int(np.max(np.asarray(n))) if n.size else 0
  am = jnp.abs(m).astype(theta.dtype)
  x, s = jnp.cos(theta), jnp.sin(theta)
  # P_mm = (-1)^m sqrt((2m+1)/(4 pi) (2m)!) / (2^m m!) sin^m theta, in logs for large m
  log_pmm = 0.5 * (jnp.log((2 * am + 1) / (4 * math.pi)) + gammaln(2 * am + 1)) \
      - am * math.log(2.) - gammaln(am + 1)
  sign_m = jnp.where(jnp.asarray(jnp.abs(m)) % 2 == 1, -1., 1.).astype(theta.dtype)
  p_mm = sign_m * jnp.exp(log_pmm) * jnp.where(am == 0, 1., s ** am)
  p_prev, p_cur = jnp.zeros_like(x), jnp.zeros_like(x)
  out = jnp.zeros_like(x)
  for lvl in range(n_max + 1):
    a = jnp.sqrt((4. * lvl * lvl - 1) / jnp.maximum(lvl * lvl - am * am, 1.))
    a_prev = jnp.sqrt((4. * (lvl - 1) ** 2 - 1) / jnp.maximum((lvl - 1) ** 2 - am * am, 1.))
    rec = a * (x * p_cur - p_prev / a_prev)
    new = jnp.where(lvl < am, 0., jnp.where(lvl == am, p_mm,
                    jnp.where(lvl == am + 1, x * math.sqrt(2 * lvl + 1) * p_cur, rec)))
    # the "+1" step uses sqrt(2m + 3) = sqrt(2 l + 1) at l = m + 1
    p_prev, p_cur = p_cur, new
    out = jnp.where(n == lvl, new, out)
  # Y_n^{-m} = (-1)^m conj(Y_n^m): the |m| function times (-1)^m, with e^{i m phi} for m < 0
  out = jnp.where(m < 0, sign_m * out, out)
  ctype = jnp.result_type(theta.dtype, jnp.complex64)
  return (out * jnp.exp(1j * m.astype(theta.dtype) * phi)).astype(ctype)
