"""`jax.scipy.stats.gaussian_kde`: a weighted Gaussian kernel density estimate (a pytree), with
SciPy's bandwidth rules and its evaluate / logpdf / integrate_* / resample methods."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import tree_util
from jaxlite._src.scipy.stats._util import jnp as _jnp


def _bandwidth_factor(kde, bw_method, neff, d):
  jnp = _jnp()
  if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
    return jnp.power(neff, -1.0 / (d + 4))
  if isinstance(bw_method, str) and bw_method == "silverman":
    return jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
  if np.ndim(bw_method) == 0 and not isinstance(bw_method, str) and not callable(bw_method):
    return bw_method
  if callable(bw_method):
    return bw_method(kde)
  raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")


@tree_util.register_pytree_node_class
class gaussian_kde:
  """Kernel density estimate of `dataset` (shape (d, n), or (n,) for d = 1)."""

  def __init__(self, dataset, bw_method=None, weights=None):
    jnp = _jnp()
    dataset = jnp.atleast_2d(jnp.asarray(dataset))
    if jnp.iscomplexobj(dataset):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if not dataset.size > 1:
      raise ValueError("`dataset` input should have multiple elements.")
    d, n = dataset.shape
    if weights is None:
      dataset = dataset.astype(jnp.result_type(dataset.dtype, 1.0))
      weights = jnp.full(n, 1.0 / n, dataset.dtype)
    else:
      dtype = jnp.result_type(dataset, jnp.asarray(weights), 1.0)
      dataset, weights = dataset.astype(dtype), jnp.atleast_1d(jnp.asarray(weights, dtype))
      if weights.ndim != 1:
        raise ValueError("`weights` input should be one-dimensional.")
      if weights.shape[0] != n:
        raise ValueError("`weights` input should be of length n")
      weights = weights / jnp.sum(weights)
    self.dataset, self.weights = dataset, weights
    self.neff = 1 / jnp.sum(weights ** 2)
    factor = _bandwidth_factor(self, bw_method, self.neff, d)
    data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
    self.covariance = data_cov * factor ** 2
    self.inv_cov = jnp.linalg.inv(data_cov) / factor ** 2

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux, children):
    kde = cls.__new__(cls)
    kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
    return kde

  d = property(lambda self: self.dataset.shape[0])
  n = property(lambda self: self.dataset.shape[1])

  def _points(self, points):
    jnp = _jnp()
    points = jnp.atleast_2d(jnp.asarray(points))
    if jnp.iscomplexobj(points):
      raise NotImplementedError("gaussian_kde does not support complex coordinates")
    d, m = points.shape
    if d != self.d:
      if d == 1 and m == self.d:
        return points.reshape(self.d, 1)
      raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
    return points.astype(jnp.result_type(points.dtype, self.dataset.dtype))

  def _log_terms(self, points):
    """log(w_i N(point_j; x_i, covariance)) for every data point i and query j: (n, m)."""
    jnp = _jnp()
    diff = self.dataset[:, :, None] - points[:, None, :]
    maha = jnp.einsum("inm,ij,jnm->nm", diff, self.inv_cov, diff)
    _, logdet = jnp.linalg.slogdet(2 * np.pi * self.covariance)
    return jnp.log(self.weights)[:, None] - 0.5 * (maha + logdet)

  def evaluate(self, points):
    """The estimated density at each column of `points`."""
    return _jnp().exp(self.logpdf(points))

  __call__ = pdf = evaluate

  def logpdf(self, x):
    """The log density at each column of `x`."""
    from jaxlite._src.scipy.special import logsumexp
    return logsumexp(self._log_terms(self._points(x)), axis=0)

  def integrate_gaussian(self, mean, cov):
    """The integral of the density times the Gaussian N(mean, cov)."""
    jnp = _jnp()
    mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean)))
    cov = jnp.atleast_2d(jnp.asarray(cov))
    if mean.shape != (self.d,):
      raise ValueError(f"mean does not have dimension {self.d}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"covariance does not have dimension {self.d}")
    return _gaussian_overlap(self.dataset, self.weights, mean[:, None],
                             jnp.ones((1,), self.weights.dtype), self.covariance + cov)

  def integrate_box_1d(self, low, high):
    """The probability mass in [low, high] (1-D estimates only)."""
    jnp = _jnp()
    from jaxlite._src.scipy.special import ndtr
    if self.d != 1:
      raise ValueError("integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("the limits of integration in integrate_box_1d must be scalars")
    sigma = jnp.sqrt(self.covariance[0, 0])
    x = self.dataset[0]
    return jnp.sum(self.weights * (ndtr((high - x) / sigma) - ndtr((low - x) / sigma)))

  def integrate_kde(self, other):
    """The integral of the product of two estimates."""
    if other.d != self.d:
      raise ValueError("KDEs are not the same dimensionality")
    return _gaussian_overlap(self.dataset, self.weights, other.dataset, other.weights,
                             self.covariance + other.covariance)

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

  def set_bandwidth(self, bw_method=None):
    raise NotImplementedError("dynamically changing the bandwidth method is not supported")

  def resample(self, key, shape=()):
    """`shape` draws (as columns, result (d,) + shape): a data point chosen by weight, plus a
    kernel-covariance normal, with JAX's key splitting."""
    jnp = _jnp()
    from jaxlite._src.rng import random
    ind_key, eps_key = random.split(key)
    ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
    eps = random.multivariate_normal(eps_key, jnp.zeros(self.d, self.covariance.dtype),
                                     self.covariance, shape=shape, dtype=self.dataset.dtype).T
    return self.dataset[:, ind] + eps


def _gaussian_overlap(x, wx, y, wy, cov):
  """sum_ij wx_i wy_j N(x_i - y_j; 0, cov)."""
  jnp = _jnp()
  diff = x[:, :, None] - y[:, None, :]
  maha = jnp.einsum("inm,ij,jnm->nm", diff, jnp.linalg.inv(cov), diff)
  _, logdet = jnp.linalg.slogdet(2 * np.pi * cov)
  return jnp.sum(wx[:, None] * wy[None, :] * jnp.exp(-0.5 * (maha + logdet)))
