"""More of `jax.scipy.special`, composed in jnp so they trace and differentiate: dawsn (Rybicki's
sampling-theorem sum) and expn (series below x = 1, continued fraction above)."""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.scipy.special import _real_float, digamma, gammaln


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


# Rybicki: D(x) ~ (1/sqrt(pi)) sum_{n odd} exp(-(x0 - n h)^2) / n around the nearest even grid
# point x0; h = 0.4 with six terms each side is good to about 2e-7.
_H, _TERMS = 0.4, 6
_C = tuple(math.exp(-((2 * i + 1) * _H) ** 2) for i in range(_TERMS))


def dawsn(x):
  """Dawson's integral exp(-x^2) * integral_0^x exp(t^2) dt."""
  jnp = _jnp()
  (x,) = _real_float("dawsn", x)
  ax = jnp.abs(x)
  x2 = x * x
  small = x * (1 - (2 / 3) * x2 * (1 - 0.4 * x2 * (1 - (2 / 7) * x2)))
  n0 = 2 * jnp.round(0.5 * ax / _H)
  xp = ax - n0 * _H
  e1 = jnp.exp(2 * xp * _H)
  e2 = e1 * e1
  d1, d2, total = n0 + 1, n0 - 1, jnp.zeros_like(x)
  for c in _C:
    total = total + c * (e1 / d1 + 1 / (d2 * e1))
    d1, d2, e1 = d1 + 2, d2 - 2, e1 * e2
  big = (1 / np.sqrt(np.pi)) * jnp.sign(x) * jnp.exp(-xp * xp) * total
  return jnp.where(ax < 0.2, small, big)


_SERIES_TERMS = 40
_FRACTION_STEPS = 60


def _expn_series(n, x):
  """E_n(x) for x <= 1: (-x)^(n-1)/(n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k/((k-n+1) k!)."""
  jnp = _jnp()
  safe_n = jnp.maximum(n, 1)
  total = jnp.zeros_like(x)
  term = jnp.ones_like(x)  # (-x)^k / k!
  for k in range(_SERIES_TERMS):
    denom = k - safe_n + 1
    total = total - jnp.where(denom == 0, 0.0, term / jnp.where(denom == 0, 1.0, denom))
    term = term * (-x) / (k + 1)
  log_part = jnp.exp((safe_n - 1) * jnp.log(x) - gammaln(safe_n)) * (digamma(safe_n) - jnp.log(x))
  sign = jnp.where(jnp.remainder(safe_n - 1, 2) == 1, -1.0, 1.0)
  return total + sign * log_part


def _expn_fraction(n, x):
  """E_n(x) for x > 1 by the modified Lentz continued fraction."""
  jnp = _jnp()
  tiny = 1e-30
  b = x + n
  c = jnp.full_like(x, 1 / tiny)
  d = 1 / b
  h = d
  for i in range(1, _FRACTION_STEPS):
    a = -i * (n - 1 + i)
    b = b + 2
    d = 1 / (a * d + b)
    c = b + a / c
    h = h * c * d
  return h * jnp.exp(-x)


def expn(n, x):
  """The generalized exponential integral E_n(x) = integral_1^inf exp(-x t) / t^n dt."""
  jnp = _jnp()
  n, x = _real_float("expn", n, x)
  safe_x = jnp.where(x > 0, x, 1.0)
  out = jnp.where(safe_x > 1, _expn_fraction(n, safe_x), _expn_series(n, safe_x))
  out = jnp.where(n == 0, jnp.exp(-safe_x) / safe_x, out)
  at_zero = jnp.where(n > 1, 1 / jnp.where(n > 1, n - 1, 1.0), jnp.inf)
  out = jnp.where(x == 0, at_zero, out)
  return jnp.where((n < 0) | (x < 0) | (jnp.floor(n) != n), jnp.nan, out)
