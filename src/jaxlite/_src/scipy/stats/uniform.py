"""The uniform distribution on [loc, loc + scale]."""
from __future__ import annotations

from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, loc=0, scale=1):
  np_ = jnp()
  x, loc, scale = promote("uniform.logpdf", x, loc, scale)
  inside = (x >= loc) & (x <= loc + scale)
  return np_.where(inside, -np_.log(scale), -np_.inf)


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  np_ = jnp()
  x, loc, scale = promote("uniform.cdf", x, loc, scale)
  return np_.clip((x - loc) / scale, 0, 1)


def ppf(q, loc=0, scale=1):
  np_ = jnp()
  q, loc, scale = promote("uniform.ppf", q, loc, scale)
  return np_.where((q < 0) | (q > 1), np_.nan, loc + q * scale)
