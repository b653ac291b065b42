"""The binomial distribution of n trials with success probability p."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpmf(k, n, p, loc=0):
  np_ = jnp()
  k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
  y = k - loc
  comb = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
  out = comb + special.xlogy(y, p) + special.xlog1py(n - y, -p)
  return np_.where((y < 0) | (y > n), -np_.inf, out)  # non-integers evaluate, as JAX's


def pmf(k, n, p, loc=0):
  return jnp().exp(logpmf(k, n, p, loc))
