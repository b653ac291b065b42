"""The right-skewed Gumbel (extreme value) distribution."""
from __future__ import annotations

from jaxlite._src.scipy.stats._util import jnp, promote, standardize


def logpdf(x, loc=0, scale=1):
  np_ = jnp()
  z, scale, _ = standardize("gumbel_r.logpdf", x, loc, scale)
  return -z - np_.exp(-z) - np_.log(scale)


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  z, _, _ = standardize("gumbel_r.logcdf", x, loc, scale)
  return -jnp().exp(-z)


def cdf(x, loc=0, scale=1):
  return jnp().exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  np_ = jnp()
  z, _, _ = standardize("gumbel_r.logsf", x, loc, scale)
  return np_.log(-np_.expm1(-np_.exp(-z)))


def sf(x, loc=0, scale=1):
  np_ = jnp()
  z, _, _ = standardize("gumbel_r.sf", x, loc, scale)
  return -np_.expm1(-np_.exp(-z))


def ppf(p, loc=0, scale=1):
  np_ = jnp()
  p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
  out = loc - scale * np_.log(-np_.log(p))
  return np_.where((p < 0) | (p > 1), np_.nan, out)
