"""The Bernoulli distribution with success probability p."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpmf(k, p, loc=0):
  np_ = jnp()
  k, p, loc = promote("bernoulli.logpmf", k, p, loc)
  x = k - loc
  out = special.xlogy(x, p) + special.xlog1py(1 - x, -p)
  return np_.where((x < 0) | (x > 1), -np_.inf, out)  # as JAX: between 0 and 1 evaluates


def pmf(k, p, loc=0):
  return jnp().exp(logpmf(k, p, loc))


def cdf(k, p):
  np_ = jnp()
  k, p = promote("bernoulli.cdf", k, p)
  out = np_.where(k < 0, 0.0, np_.where(k < 1, 1 - p, 1.0))
  return np_.where(np_.isnan(k) | (p < 0) | (p > 1), np_.nan, out).astype(k.dtype)


def ppf(q, p):
  np_ = jnp()
  q, p = promote("bernoulli.ppf", q, p)
  out = np_.where(q <= 1 - p, 0.0, 1.0)
  return np_.where(np_.isnan(q) | (q < 0) | (q > 1) | (p < 0) | (p > 1), np_.nan,
                   out).astype(q.dtype)
