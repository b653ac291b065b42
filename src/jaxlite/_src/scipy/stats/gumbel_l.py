"""The left-skewed Gumbel distribution: the mirror image of gumbel_r."""
from __future__ import annotations

from jaxlite._src.scipy.stats import gumbel_r
from jaxlite._src.scipy.stats._util import jnp, promote


def _mirror(name, x, loc, scale):
  x, loc, scale = promote(name, x, loc, scale)
  return -x, -loc, scale


def logpdf(x, loc=0, scale=1):
  return gumbel_r.logpdf(*_mirror("gumbel_l.logpdf", x, loc, scale))


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  return gumbel_r.logsf(*_mirror("gumbel_l.logcdf", x, loc, scale))


def cdf(x, loc=0, scale=1):
  return gumbel_r.sf(*_mirror("gumbel_l.cdf", x, loc, scale))


def logsf(x, loc=0, scale=1):
  return gumbel_r.logcdf(*_mirror("gumbel_l.logsf", x, loc, scale))


def sf(x, loc=0, scale=1):
  return gumbel_r.cdf(*_mirror("gumbel_l.sf", x, loc, scale))


def ppf(p, loc=0, scale=1):
  p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
  return -gumbel_r.ppf(1 - p, -loc, scale)
