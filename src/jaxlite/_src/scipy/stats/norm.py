"""The normal distribution N(loc, scale²)."""
from __future__ import annotations

import math

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote, standardize


def logpdf(x, loc=0, scale=1):
  z, scale, _ = standardize("norm.logpdf", x, loc, scale)
  return -0.5 * z * z - jnp().log(scale) - 0.5 * math.log(2 * math.pi)


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  z, _, _ = standardize("norm.cdf", x, loc, scale)
  return special.ndtr(z)


def logcdf(x, loc=0, scale=1):
  z, _, _ = standardize("norm.logcdf", x, loc, scale)
  return special.log_ndtr(z)


def sf(x, loc=0, scale=1):
  z, _, _ = standardize("norm.sf", x, loc, scale)
  return special.ndtr(-z)


def logsf(x, loc=0, scale=1):
  z, _, _ = standardize("norm.logsf", x, loc, scale)
  return special.log_ndtr(-z)


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote("norm.ppf", q, loc, scale)
  return special.ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
  q, loc, scale = promote("norm.isf", q, loc, scale)
  return -special.ndtri(q) * scale + loc
