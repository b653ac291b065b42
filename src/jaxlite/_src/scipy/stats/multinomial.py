"""The multinomial distribution of n draws over the categories of the last axis."""
from __future__ import annotations

from jaxlite._src.numpy.util import check_arraylike, promote_dtypes_inexact
from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp


def logpmf(x, n, p):
  np_ = jnp()
  check_arraylike("multinomial.logpmf", x, n, p)
  x, n = np_.asarray(x), np_.asarray(n)
  if not (np_.issubdtype(x.dtype, np_.integer) and np_.issubdtype(n.dtype, np_.integer)):
    raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}")
  x, n, p = (np_.asarray(v) for v in promote_dtypes_inexact(x, n, p))
  out = (special.gammaln(n + 1) + np_.sum(special.xlogy(x, p) - special.gammaln(x + 1),
                                          axis=-1))
  valid = np_.all((x >= 0) & (np_.floor(x) == x), axis=-1) & (np_.sum(x, axis=-1) == n)
  return np_.where(valid, out, -np_.inf)


def pmf(x, n, p):
  return jnp().exp(logpmf(x, n, p))
