"""The gamma distribution with shape a."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, a, loc=0, scale=1):
  np_ = jnp()
  x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
  y = (x - loc) / scale
  ok = y >= 0
  safe_y = np_.where(ok, y, 1)
  out = special.xlogy(a - 1, safe_y) - safe_y - special.gammaln(a) - np_.log(scale)
  return np_.where(ok, out, -np_.inf)


def pdf(x, a, loc=0, scale=1):
  return jnp().exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  np_ = jnp()
  x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
  return special.gammainc(a, np_.maximum((x - loc) / scale, 0))


def logcdf(x, a, loc=0, scale=1):
  return jnp().log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  np_ = jnp()
  x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
  return special.gammaincc(a, np_.maximum((x - loc) / scale, 0))


def logsf(x, a, loc=0, scale=1):
  return jnp().log(sf(x, a, loc, scale))
