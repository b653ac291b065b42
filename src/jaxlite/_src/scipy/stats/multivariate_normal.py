"""The multivariate normal distribution N(mean, cov) over the last axis."""
from __future__ import annotations

import math
import numpy as np

from jaxlite._src.lax import linalg as lax_linalg
from jaxlite._src.numpy.util import check_arraylike, promote_dtypes_inexact
from jaxlite._src.scipy.stats._util import jnp


def _promote(x, mean, cov):
  check_arraylike("multivariate_normal.logpdf", x, mean, cov)
  np_ = jnp()
  return [np_.asarray(a) for a in promote_dtypes_inexact(x, mean, cov)]


def logpdf(x, mean, cov, allow_singular=None):
  """log N(x; mean, cov) through the Cholesky factor of cov (a scalar cov: isotropic)."""
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
  np_ = jnp()
  x, mean, cov = _promote(x, mean, cov)
  if not mean.shape:
    return -0.5 * (x - mean) ** 2 / cov - 0.5 * (math.log(2 * math.pi) + np_.log(cov))
  n = mean.shape[-1]
  diff = x - mean
  if not cov.shape:
    return (-0.5 * np_.sum(diff * diff, axis=-1) / cov
            - n / 2 * (math.log(2 * math.pi) + np_.log(cov)))
  if cov.ndim < 2 or cov.shape[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes: mean "
                     f"{mean.shape}, cov {cov.shape}")
  L = lax_linalg.cholesky(cov)
  batch = np.broadcast_shapes(L.shape[:-2], diff.shape[:-1])
  L_b = np_.broadcast_to(L, batch + (n, n))
  d_b = np_.broadcast_to(diff, batch + (n,))
  y = lax_linalg.triangular_solve(L_b, d_b, left_side=True, lower=True)
  log_diag = np_.sum(np_.log(np_.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
  return -0.5 * np_.sum(y * y, axis=-1) - log_diag - n / 2 * math.log(2 * math.pi)


def pdf(x, mean, cov):
  return jnp().exp(logpdf(x, mean, cov))
