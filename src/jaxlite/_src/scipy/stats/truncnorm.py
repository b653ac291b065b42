"""The normal distribution truncated to [a, b] (in standard units: (x - loc) / scale)."""
from __future__ import annotations

import math

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def _log_mass(a, b):
  """log(Φ(b) - Φ(a)), evaluated on the tail side where it is accurate."""
  np_ = jnp()
  # Mirror to the left tail when the interval is right of zero: Φ(b) - Φ(a) = Φ(-a) - Φ(-b).
  right = a > 0
  lo, hi = np_.where(right, -b, a), np_.where(right, -a, b)
  log_hi, log_lo = special.log_ndtr(hi), special.log_ndtr(lo)
  return log_hi + np_.log1p(-np_.exp(log_lo - log_hi))


def logpdf(x, a, b, loc=0, scale=1):
  np_ = jnp()
  x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
  z = (x - loc) / scale
  out = -0.5 * z * z - 0.5 * math.log(2 * math.pi) - np_.log(scale) - _log_mass(a, b)
  return np_.where((z < a) | (z > b), -np_.inf, out)


def pdf(x, a, b, loc=0, scale=1):
  return jnp().exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  np_ = jnp()
  x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
  z = np_.clip((x - loc) / scale, a, b)
  out = _log_mass(a, z) - _log_mass(a, b)
  return np_.where(z <= a, -np_.inf, out)


def cdf(x, a, b, loc=0, scale=1):
  return jnp().exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  np_ = jnp()
  x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
  z = np_.clip((x - loc) / scale, a, b)
  out = _log_mass(z, b) - _log_mass(a, b)
  return np_.where(z >= b, -np_.inf, out)


def sf(x, a, b, loc=0, scale=1):
  return jnp().exp(logsf(x, a, b, loc, scale))
