"""Student's t distribution with df degrees of freedom."""
from __future__ import annotations

import numpy as np

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpdf(x, df, loc=0, scale=1):
  np_ = jnp()
  x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
  z = (x - loc) / scale
  half = (df + 1) / 2
  normalize = (special.gammaln(half) - special.gammaln(df / 2)
               - 0.5 * np_.log(df * np.pi) - np_.log(scale))
  return normalize - half * np_.log1p(z * z / df)


def pdf(x, df, loc=0, scale=1):
  return jnp().exp(logpdf(x, df, loc, scale))
