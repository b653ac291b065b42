"""The wrapped Cauchy distribution on [0, 2π) with shape 0 < c < 1."""
from __future__ import annotations

import math
import numpy as np

from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, c):
  np_ = jnp()
  x, c = promote("wrapcauchy.logpdf", x, c)
  out = np_.log(1 - c * c) - math.log(2 * math.pi) - np_.log(1 + c * c - 2 * c * np_.cos(x))
  inside = (x >= 0) & (x <= 2 * np.pi) & (c > 0) & (c < 1)
  return np_.where(inside, out, np_.where((c > 0) & (c < 1), -np_.inf, np_.nan))


def pdf(x, c):
  return jnp().exp(logpdf(x, c))
