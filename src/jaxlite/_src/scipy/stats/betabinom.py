"""The beta-binomial distribution."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpmf(k, n, a, b, loc=0):
  np_ = jnp()
  k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
  y = np_.floor(k - loc)  # JAX evaluates non-integer counts at their floor
  comb = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
  out = comb + special.betaln(y + a, n - y + b) - special.betaln(a, b)
  return np_.where((y < 0) | (y > n), -np_.inf, out)


def pmf(k, n, a, b, loc=0):
  return jnp().exp(logpmf(k, n, a, b, loc))
