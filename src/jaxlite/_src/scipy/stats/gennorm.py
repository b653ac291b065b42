"""The generalized normal distribution with shape beta (beta = 2: a normal, 1: Laplace)."""
from __future__ import annotations

import numpy as np

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, beta):
  np_ = jnp()
  x, beta = promote("gennorm.logpdf", x, beta)
  return np_.log(0.5 * beta) - special.gammaln(1 / beta) - np_.abs(x) ** beta


def pdf(x, beta):
  return jnp().exp(logpdf(x, beta))


def cdf(x, beta):
  np_ = jnp()
  x, beta = promote("gennorm.cdf", x, beta)
  half = 0.5 * special.gammaincc(1 / beta, np_.abs(x) ** beta)
  return np_.where(x < 0, half, 1 - half)


_ = np
