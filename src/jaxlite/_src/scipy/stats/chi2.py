"""The chi-squared distribution with df degrees of freedom (a gamma with a = df / 2)."""
from __future__ import annotations

from jaxlite._src.scipy.stats import gamma
from jaxlite._src.scipy.stats._util import jnp, promote


def _as_gamma(name, x, df, loc, scale):
  x, df, loc, scale = promote(name, x, df, loc, scale)
  return x, df / 2, loc, scale * 2


def logpdf(x, df, loc=0, scale=1):
  return gamma.logpdf(*_as_gamma("chi2.logpdf", x, df, loc, scale))


def pdf(x, df, loc=0, scale=1):
  return jnp().exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
  return gamma.cdf(*_as_gamma("chi2.cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
  return gamma.logcdf(*_as_gamma("chi2.logcdf", x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
  return gamma.sf(*_as_gamma("chi2.sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
  return gamma.logsf(*_as_gamma("chi2.logsf", x, df, loc, scale))
