"""The logistic distribution."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote, standardize


def logpdf(x, loc=0, scale=1):
  np_ = jnp()
  z, scale, _ = standardize("logistic.logpdf", x, loc, scale)
  a = np_.abs(z)
  return -a - 2 * np_.log1p(np_.exp(-a)) - np_.log(scale)


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  z, _, _ = standardize("logistic.cdf", x, loc, scale)
  return special.expit(z)


def sf(x, loc=0, scale=1):
  z, _, _ = standardize("logistic.sf", x, loc, scale)
  return special.expit(-z)


def ppf(x, loc=0, scale=1):
  x, loc, scale = promote("logistic.ppf", x, loc, scale)
  return loc + scale * special.logit(x)


def isf(x, loc=0, scale=1):
  x, loc, scale = promote("logistic.isf", x, loc, scale)
  return loc - scale * special.logit(x)
