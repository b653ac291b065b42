"""The Dirichlet distribution over the simplex (the first axis of x indexes the categories)."""
from __future__ import annotations

from jaxlite._src.numpy.util import check_arraylike, promote_dtypes_inexact
from jaxlite._src.scipy import special
from jaxlite._src.scipy.stats._util import jnp


def logpdf(x, alpha):
  np_ = jnp()
  check_arraylike("dirichlet.logpdf", x, alpha)
  x, alpha = (np_.asarray(a) for a in promote_dtypes_inexact(x, alpha))
  if alpha.ndim != 1:
    raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
  if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                     f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
  if x.shape[0] != alpha.shape[0]:
    x = np_.concatenate([x, (1 - np_.sum(x, axis=0))[None]], axis=0)
  a = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
  normalize = np_.sum(special.gammaln(alpha)) - special.gammaln(np_.sum(alpha))
  log_p = np_.sum(special.xlogy(a - 1, x), axis=0) - normalize
  on_simplex = np_.all(x >= 0, axis=0) & (np_.abs(np_.sum(x, axis=0) - 1) < 1e-6)
  return np_.where(on_simplex, log_p, -np_.inf)


def pdf(x, alpha):
  return jnp().exp(logpdf(x, alpha))
