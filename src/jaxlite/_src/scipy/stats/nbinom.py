"""The negative binomial distribution: failures before the n-th success."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpmf(k, n, p, loc=0):
  np_ = jnp()
  k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
  y = k - loc
  comb = special.gammaln(n + y) - special.gammaln(y + 1) - special.gammaln(n)
  out = comb + special.xlogy(n, p) + special.xlog1py(y, -p)
  return np_.where(y < 0, -np_.inf, out)  # non-integers evaluate, as JAX's


def pmf(k, n, p, loc=0):
  return jnp().exp(logpmf(k, n, p, loc))
