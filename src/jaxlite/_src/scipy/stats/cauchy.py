"""The Cauchy distribution."""
from __future__ import annotations

import math
import numpy as np

from jaxlite._src.scipy.stats._util import jnp, promote, standardize


def logpdf(x, loc=0, scale=1):
  np_ = jnp()
  z, scale, _ = standardize("cauchy.logpdf", x, loc, scale)
  return -math.log(math.pi) - np_.log(scale) - np_.log1p(z * z)


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  z, _, _ = standardize("cauchy.cdf", x, loc, scale)
  return 0.5 + jnp().arctan(z) / np.pi


def logcdf(x, loc=0, scale=1):
  return jnp().log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  z, _, _ = standardize("cauchy.sf", x, loc, scale)
  return 0.5 - jnp().arctan(z) / np.pi


def logsf(x, loc=0, scale=1):
  return jnp().log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote("cauchy.ppf", q, loc, scale)
  return loc + scale * jnp().tan(np.pi * (q - 0.5))


def isf(q, loc=0, scale=1):
  q, loc, scale = promote("cauchy.isf", q, loc, scale)
  return loc + scale * jnp().tan(np.pi * (0.5 - q))
