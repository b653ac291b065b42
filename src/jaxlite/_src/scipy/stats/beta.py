"""The beta distribution on [loc, loc + scale]."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, a, b, loc=0, scale=1):
  np_ = jnp()
  x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
  y = (x - loc) / scale
  inside = (y >= 0) & (y <= 1)
  log_linear = special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y)
  out = log_linear - special.betaln(a, b) - np_.log(scale)
  return np_.where(inside, out, -np_.inf)


def pdf(x, a, b, loc=0, scale=1):
  return jnp().exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
  np_ = jnp()
  x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
  y = np_.clip((x - loc) / scale, 0, 1)
  return special.betainc(a, b, y)


def logcdf(x, a, b, loc=0, scale=1):
  return jnp().log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  np_ = jnp()
  x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
  y = np_.clip((x - loc) / scale, 0, 1)
  return special.betainc(b, a, 1 - y)


def logsf(x, a, b, loc=0, scale=1):
  return jnp().log(sf(x, a, b, loc, scale))
