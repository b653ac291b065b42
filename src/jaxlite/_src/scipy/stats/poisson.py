"""The Poisson distribution with mean mu, shifted by loc."""
from __future__ import annotations

from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp, promote


def logpmf(k, mu, loc=0):
  np_ = jnp()
  k, mu, loc = promote("poisson.logpmf", k, mu, loc)
  x = k - loc
  out = special.xlogy(x, mu) - special.gammaln(x + 1) - mu
  return np_.where((x < 0) | (np_.floor(x) != x), -np_.inf, out)


def pmf(k, mu, loc=0):
  return jnp().exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  np_ = jnp()
  k, mu, loc = promote("poisson.cdf", k, mu, loc)
  x = np_.floor(k - loc)
  return np_.where(x < 0, 0.0, special.gammaincc(np_.maximum(x + 1, 1), mu)).astype(k.dtype)


def entropy(mu, loc=0):
  """The entropy, summed over the support until the terms vanish (mu up to a few hundred)."""
  np_ = jnp()
  mu, loc = promote("poisson.entropy", mu, loc)
  ks = np_.arange(0, 1000, dtype=mu.dtype)
  logp = logpmf(ks, mu[..., None], 0)
  return -np_.sum(np_.where(np_.isfinite(logp), np_.exp(logp) * logp, 0.0), axis=-1)
