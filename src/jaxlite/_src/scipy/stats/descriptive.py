"""`jax.scipy.stats` summaries of samples: mode, rankdata and sem."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxlite._src.scipy.stats._util import jnp as _jnp


class ModeResult(NamedTuple):
  mode: object
  count: object


def _check_nan_policy(name, nan_policy):
  if nan_policy not in ("propagate", "omit", "raise"):
    raise ValueError(f"{name}: nan_policy must be 'propagate', 'omit' or 'raise', got "
                     f"{nan_policy!r}")
  if nan_policy != "propagate":
    raise NotImplementedError(f"In {name}, nan_policy={nan_policy!r} is not supported")


def _along_last(a, axis):
  """`a` with `axis` moved last (flattened when None), and the axis it came from."""
  jnp = _jnp()
  a = jnp.asarray(a)
  if axis is None:
    return jnp.ravel(a), None
  return jnp.moveaxis(a, axis, -1), axis


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
  """The most frequent value along `axis` (the smallest among ties) and how often it occurs."""
  jnp = _jnp()
  _check_nan_policy("mode", nan_policy)
  a = jnp.asarray(a)
  if a.ndim == 0:
    a = a[None]
    axis = 0 if axis is not None else None
  x, axis = _along_last(a, axis)
  if x.shape[-1] == 0:
    raise ValueError("mode: input must not be empty along the reduced axis")
  s = jnp.sort(x, axis=-1)
  counts = jnp.sum(s[..., :, None] == s[..., None, :], axis=-1, dtype=jnp.int32)
  best = jnp.argmax(counts, axis=-1)  # first maximum: the smallest value, as s is sorted
  value = jnp.take_along_axis(s, best[..., None], axis=-1)[..., 0]
  count = jnp.take_along_axis(counts, best[..., None], axis=-1)[..., 0]
  if keepdims:
    if axis is None:
      value, count = value.reshape((1,) * a.ndim), count.reshape((1,) * a.ndim)
    else:
      value, count = jnp.expand_dims(value, axis), jnp.expand_dims(count, axis)
  return ModeResult(value, count)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
  """Ranks from 1 along `axis` (all elements when None); ties by `method`."""
  jnp = _jnp()
  if method not in _RANK_METHODS:
    raise ValueError(f"unknown method '{method}'")
  _check_nan_policy("rankdata", nan_policy)
  a = jnp.asarray(a)
  x, axis = _along_last(a, axis)
  if method == "ordinal":
    ranks = jnp.argsort(jnp.argsort(x, axis=-1, stable=True), axis=-1) + 1
  else:
    less = jnp.sum(x[..., None, :] < x[..., :, None], axis=-1)
    less_eq = jnp.sum(x[..., None, :] <= x[..., :, None], axis=-1)
    if method == "min":
      ranks = less + 1
    elif method == "max":
      ranks = less_eq
    elif method == "average":
      ranks = (less + 1 + less_eq) / 2
    else:  # dense: distinct values below, plus one
      s = jnp.sort(x, axis=-1)
      first = jnp.concatenate([jnp.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]],
                              axis=-1)
      ranks = jnp.sum((s[..., None, :] < x[..., :, None]) & first[..., None, :], axis=-1) + 1
  ranks = ranks.astype(jnp.zeros(()).dtype)  # JAX gives every method's ranks as floats
  return ranks if axis is None else jnp.moveaxis(ranks, -1, axis)


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False):
  """The standard error of the mean: std(a, ddof) / sqrt(n) along `axis`."""
  jnp = _jnp()
  _check_nan_policy("sem", nan_policy)
  a = jnp.asarray(a)
  if not jnp.issubdtype(a.dtype, jnp.inexact):
    a = a.astype(jnp.result_type(a.dtype, 1.0))
  n = a.size if axis is None else a.shape[axis]
  return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(n)
