"""The Laplace (double exponential) distribution."""
from __future__ import annotations

import math

from jaxlite._src.scipy.stats._util import jnp, standardize


def logpdf(x, loc=0, scale=1):
  np_ = jnp()
  z, scale, _ = standardize("laplace.logpdf", x, loc, scale)
  return -math.log(2.0) - np_.log(scale) - np_.abs(z)


def pdf(x, loc=0, scale=1):
  return jnp().exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  np_ = jnp()
  z, _, _ = standardize("laplace.cdf", x, loc, scale)
  return np_.where(z < 0, 0.5 * np_.exp(z), 1 - 0.5 * np_.exp(-z))
