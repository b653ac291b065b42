"""The geometric distribution on {1, 2, …} (shifted by loc)."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpmf(k, p, loc=0):
  np_ = jnp()
  k, p, loc = promote("geom.logpmf", k, p, loc)
  x = k - loc
  out = special.xlog1py(x - 1, -p) + np_.log(p)
  return np_.where(x <= 0, -np_.inf, out)  # non-integers evaluate, as JAX's


def pmf(k, p, loc=0):
  return jnp().exp(logpmf(k, p, loc))
