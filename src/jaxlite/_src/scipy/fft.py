"""`jax.scipy.fft`: the type-II discrete cosine transform and its inverse (1-D and N-D), as
products with the (normalized) DCT matrix built in float64 NumPy."""
from __future__ import annotations

import functools

import numpy as np

_NORMS = (None, "backward", "ortho")


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


@functools.lru_cache(maxsize=64)
def _dct_matrix(n: int, norm, inverse: bool) -> np.ndarray:
  k = np.arange(n)[:, None]
  m = np.arange(n)[None, :]
  d = 2 * np.cos(np.pi * k * (2 * m + 1) / (2 * n))
  if norm == "ortho":
    d = d * np.where(k == 0, np.sqrt(1 / (4 * n)), np.sqrt(1 / (2 * n)))
  return np.linalg.inv(d) if inverse else d


def _check(name, type, norm):
  if type != 2:
    raise NotImplementedError(f"{name}: only DCT type 2 is implemented, got type={type}")
  if norm not in _NORMS:
    raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")


def _apply(x, n, axis, norm, inverse):
  jnp = _jnp()
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.inexact):
    x = x.astype(jnp.result_type(x.dtype, 1.0))
  axis = axis % x.ndim
  if n is not None:
    size = x.shape[axis]
    if n < size:
      x = jnp.take(x, jnp.arange(n), axis=axis)
    elif n > size:
      pad = [(0, 0)] * x.ndim
      pad[axis] = (0, n - size)
      x = jnp.pad(x, pad)
  mat = _dct_matrix(x.shape[axis], norm, inverse)
  real = np.asarray(mat, jnp.finfo(x.dtype).dtype)
  y = jnp.tensordot(x, jnp.asarray(real.T), axes=([axis], [0]), precision="highest")
  return jnp.moveaxis(y, -1, axis)


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The type-II DCT along `axis`: y[k] = 2 sum_m x[m] cos(pi k (2m + 1) / 2N)."""
  _check("dct", type, norm)
  return _apply(x, n, axis, norm, False)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
  """The inverse of the type-II DCT (with the same `norm`)."""
  _check("idct", type, norm)
  return _apply(x, n, axis, norm, True)


def _nd(name, x, type, s, axes, norm, inverse):
  _check(name, type, norm)
  ndim = np.ndim(x)
  axes = tuple(range(ndim)) if axes is None else tuple(axes)
  if s is not None and len(s) != len(axes):
    raise ValueError(f"{name}: s and axes must have the same length, got {s} and {axes}")
  for i, ax in enumerate(axes):
    x = _apply(x, None if s is None else s[i], ax, norm, inverse)
  return x


def dctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
  """The type-II DCT over `axes` (all by default)."""
  return _nd("dctn", x, type, s, axes, norm, False)


def idctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
  """The inverse type-II DCT over `axes`."""
  return _nd("idctn", x, type, s, axes, norm, True)
