"""The Pareto distribution with shape b on [loc + scale, ∞)."""
from __future__ import annotations

from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, b, loc=0, scale=1):
  np_ = jnp()
  x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
  z = (x - loc) / scale
  out = np_.log(b) - np_.log(scale) - (b + 1) * np_.log(np_.where(z >= 1, z, 1))
  return np_.where(z >= 1, out, -np_.inf)


def pdf(x, b, loc=0, scale=1):
  return jnp().exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
  np_ = jnp()
  x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
  z = (x - loc) / scale
  return np_.where(z >= 1, -b * np_.log(np_.where(z >= 1, z, 1)), 0.0).astype(z.dtype)


def sf(x, b, loc=0, scale=1):
  return jnp().exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  return -jnp().expm1(logsf(x, b, loc, scale))


def logcdf(x, b, loc=0, scale=1):
  return jnp().log1p(-sf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
  np_ = jnp()
  q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
  out = loc + scale * np_.power(1 - q, -1 / b)
  return np_.where((q < 0) | (q > 1), np_.nan, out)
