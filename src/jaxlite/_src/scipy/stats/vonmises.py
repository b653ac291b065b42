"""The von Mises distribution on the circle with concentration kappa."""
from __future__ import annotations

import math

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, kappa):
  np_ = jnp()
  x, kappa = promote("vonmises.logpdf", x, kappa)
  # log I0(κ) = log i0e(κ) + κ: stable for large κ.
  out = kappa * (np_.cos(x) - 1) - math.log(2 * math.pi) - np_.log(special.i0e(kappa))
  return np_.where(kappa > 0, out, np_.nan)


def pdf(x, kappa):
  return jnp().exp(logpdf(x, kappa))
