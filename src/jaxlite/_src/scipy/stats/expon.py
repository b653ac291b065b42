"""The exponential distribution."""
from __future__ import annotations

from jaxlite._src.scipy.stats._util import jnp, promote, standardize


def logpdf(x, loc=0, scale=1):
  np_ = jnp()
  z, scale, _ = standardize("expon.logpdf", x, loc, scale)
  return np_.where(z < 0, -np_.inf, -z - np_.log(scale))


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  np_ = jnp()
  z, _, _ = standardize("expon.cdf", x, loc, scale)
  return np_.where(z < 0, 0.0, -np_.expm1(-z)).astype(z.dtype)


def logcdf(x, loc=0, scale=1):
  np_ = jnp()
  z, _, _ = standardize("expon.logcdf", x, loc, scale)
  return np_.where(z < 0, -np_.inf, np_.log(-np_.expm1(-np_.maximum(z, 0))))


def sf(x, loc=0, scale=1):
  return jnp().exp(logsf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  np_ = jnp()
  z, _, _ = standardize("expon.logsf", x, loc, scale)
  return np_.where(z < 0, 0.0, -z).astype(z.dtype)


def ppf(q, loc=0, scale=1):
  np_ = jnp()
  q, loc, scale = promote("expon.ppf", q, loc, scale)
  out = loc - scale * np_.log1p(-q)
  return np_.where((q < 0) | (q > 1), np_.nan, out)
