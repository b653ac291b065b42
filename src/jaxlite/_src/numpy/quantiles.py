"""jnp's order statistics: quantile, percentile, median and their NaN-ignoring variants.

Staged as JAX stages them (each a jit with its static arguments; median and percentile call
quantile's jit inside their own): the data sorted along the reduced axis, the two neighbours of
each fractional position fetched by gathers (lax.gather of clamped float positions, or jnp
indexing by iotas when NaNs are squashed to the end), then mixed by the method. `inverted_cdf`,
the one method that takes weights, counts cumulative weights below each target instead.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise
from jaxlite._src.lax import namespace as lax
from jaxlite._src.lax.gather_dnums import GatherDimensionNumbers
from jaxlite._src.numpy import creation
from jaxlite._src.numpy import reductions as red
from jaxlite._src.numpy.where_reshape import _where
from jaxlite._src.numpy.util import (canonicalize_axis, check_arraylike, dtype_weak,
                                     promote_dtypes_inexact, shape_of)

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _const(like, value):
  """`value` in like's dtype, as lax._const makes it (weak when `like` is a weak scalar)."""
  return elementwise._const(like, value)


def _isnan(x):
  return lax.ne(x, x)


def _axis_tuple(axis, ndim):
  return tuple(canonicalize_axis(ax, ndim) for ax in axis)


def _check_weights(a, weights, axis, method):
  """Weights (inverted_cdf only) promoted with `a` and broadcast along the reduced axes."""
  if dtype_weak(weights)[0].kind == "c":
    raise ValueError("Weights cannot be complex types.")
  if method != "inverted_cdf":
    raise NotImplementedError(f"{method} doesn't support weights. Only method 'inverted_cdf' "
                              "supports weights.")
  a, weights = promote_dtypes_inexact(a, weights)
  a_shape = tuple(shape_of(a))
  if tuple(shape_of(weights)) != a_shape:
    if axis is None:
      raise ValueError("Weights shape must match 'a' shape when axis is None.")
    axes = _axis_tuple(axis if isinstance(axis, tuple) else (axis,), len(a_shape))
    reduced = tuple(a_shape[ax] for ax in axes)
    if tuple(shape_of(weights)) != reduced:
      raise ValueError(f"Weights shape {tuple(shape_of(weights))} must match reduction axes "
                       f"{reduced}")
    weights = lax.broadcast_in_dim(weights, a_shape, broadcast_dimensions=axes)
  return a, weights


def _quantile(a, q, axis, method, keepdims, squash_nans, weights=None):
  if method not in _METHODS:
    raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' "
                     "or 'inverted_cdf'")
  if weights is not None:
    a, weights = _check_weights(a, weights, axis, method)
  else:
    (a,) = promote_dtypes_inexact(a)
  if dtype_weak(a)[0].kind == "c":
    raise ValueError("quantile does not support complex input, as the operation is poorly "
                     "defined.")
  keepdim = []
  if axis is None:
    if keepdims:
      keepdim = [1] * len(shape_of(a))
    a = a.ravel()
    weights = None if weights is None else weights.ravel()
    axis = 0
  elif isinstance(axis, tuple):
    # The reduced axes merge into one last axis (a reshape that transposes the kept ones first).
    shape = tuple(shape_of(a))
    nd = len(shape)
    keepdim = list(shape)
    axis = _axis_tuple(axis, nd)
    if len(set(axis)) != len(axis):
      raise ValueError("repeated axis")
    for ax in axis:
      keepdim[ax] = 1
    dimensions = list(range(nd))
    for i, kept in enumerate(sorted(set(range(nd)) - set(axis))):
      dimensions[i], dimensions[kept] = dimensions[kept], dimensions[i]
    untouched = tuple(s for i, s in enumerate(shape) if i not in axis)
    merged = untouched + (math.prod(s for i, s in enumerate(shape) if i in axis),)
    a = lax.reshape(a, merged, dimensions)
    if weights is not None:
      weights = lax.reshape(weights, merged, dimensions)
    axis = len(merged) - 1
  else:
    axis = canonicalize_axis(axis, len(shape_of(a)))

  q_shape = tuple(shape_of(q))
  q_ndim = len(q_shape)
  if q_ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q_shape}")
  a_shape = tuple(shape_of(a))
  q_orig = q
  q_dtype = dtype_weak(q)[0]
  if squash_nans:
    a = _where(_isnan(a), np.nan, a)  # every NaN positive, so that they sort last
    if weights is not None:
      a, weights = lax.sort_key_val(a, weights, dimension=axis)
    else:
      a = lax.sort(a, dimension=axis)
    counts = red.sum(lax.bitwise_not(_isnan(a)), axis=axis, dtype=q_dtype, keepdims=keepdims)
    reduced_shape = tuple(shape_of(counts))
    q = lax.expand_dims(q, tuple(range(q_ndim, len(reduced_shape) + q_ndim)))
    counts = lax.expand_dims(counts, tuple(range(q_ndim)))
    q = lax.mul(q, lax.sub(counts, _const(q, 1)))
    low, high = lax.floor(q), lax.ceil(q)
    high_weight = lax.sub(q, low)
    low_weight = lax.sub(_const(high_weight, 1), high_weight)
    low = lax.max(_const(low, 0), lax.min(low, counts - 1))
    high = lax.max(_const(high, 0), lax.min(high, counts - 1))
    low = lax.convert_element_type(low, int)
    high = lax.convert_element_type(high, int)
    out_shape = q_shape + reduced_shape
    index = [lax.broadcasted_iota(int, out_shape, dim + q_ndim)
             for dim in range(len(reduced_shape))]
    if keepdims:
      index[axis] = low
    else:
      index.insert(axis, low)
    low_value = a[tuple(index)]
    index[axis] = high
    high_value = a[tuple(index)]
  else:
    a = _where(red.any(_isnan(a), axis=axis, keepdims=True), np.nan, a)
    if weights is not None:
      a, weights = lax.sort_key_val(a, weights, dimension=axis)
    else:
      a = lax.sort(a, dimension=axis)
    n = creation.asarray(np.asarray(a_shape[axis], q_dtype))  # an Array: n - 1 is staged
    q = lax.mul(q, n - 1)
    low, high = lax.floor(q), lax.ceil(q)
    high_weight = lax.sub(q, low)
    low_weight = lax.sub(_const(high_weight, 1), high_weight)
    low = lax.clamp(_const(low, 0), low, n - 1)
    high = lax.clamp(_const(high, 0), high, n - 1)
    low = lax.convert_element_type(low, int)
    high = lax.convert_element_type(high, int)
    slice_sizes = list(a_shape)
    slice_sizes[axis] = 1
    last = len(a_shape) + q_ndim if keepdims else len(a_shape) + q_ndim - 1
    dnums = GatherDimensionNumbers(offset_dims=tuple(range(q_ndim, last)),
                                   collapsed_slice_dims=() if keepdims else (axis,),
                                   start_index_map=(axis,))
    low_value = lax.gather(a, low[..., None], dimension_numbers=dnums,
                           slice_sizes=tuple(slice_sizes))
    high_value = lax.gather(a, high[..., None], dimension_numbers=dnums,
                            slice_sizes=tuple(slice_sizes))
    if q_ndim == 1:
      low_weight = lax.broadcast_in_dim(low_weight, tuple(shape_of(low_value)),
                                        broadcast_dimensions=(0,))
      high_weight = lax.broadcast_in_dim(high_weight, tuple(shape_of(high_value)),
                                         broadcast_dimensions=(0,))

  if method == "linear":
    result = lax.add(lax.mul(low_value.astype(q_dtype), low_weight),
                     lax.mul(high_value.astype(q_dtype), high_weight))
  elif method == "lower":
    result = low_value
  elif method == "higher":
    result = high_value
  elif method == "nearest":
    result = lax.select(lax.le(high_weight, _const(high_weight, 0.5)), low_value, high_value)
  elif method == "midpoint":
    result = lax.mul(lax.add(low_value, high_value), _const(low_value, 0.5))
  else:
    result = _inverted_cdf(a, q_orig, axis, keepdims, squash_nans, weights, a_shape)
  if keepdims and keepdim:
    if q_ndim > 0:
      keepdim = [q_shape[0], *keepdim]
    result = result.reshape(keepdim)
  return lax.convert_element_type(result, dtype_weak(a)[0])


def _inverted_cdf(a, q, axis, keepdims, squash_nans, weights, a_shape):
  """The first sorted value whose cumulative weight reaches q of the total (NumPy's
  inverted_cdf); NaN where a weight is negative or NaN, or the data has NaNs (all NaNs, when
  they are squashed)."""
  from jaxlite._src.numpy.indexing import take_along_axis
  q_ndim = len(shape_of(q))
  if weights is None:
    weights = lax.full_like(a, 1.0)
  zeros = lax.full_like(weights, 0)
  bad_weights = lax.bitwise_or(lax.lt(weights, zeros), _isnan(weights))
  nan_data = _isnan(a)
  clean_weights = lax.select(lax.bitwise_or(bad_weights, nan_data), zeros, weights)
  cum_weights = red.cumsum(clean_weights, axis=axis)
  total_weight = lax.index_in_dim(cum_weights, -1, axis=axis, keepdims=keepdims)
  tw_f = lax.expand_dims(total_weight, tuple(range(q_ndim)))
  q_f = lax.reshape(q, tuple(shape_of(q)) + (1,) * len(shape_of(total_weight)))
  target_w = lax.mul(q_f, tw_f)
  target_w_aligned = target_w if keepdims else lax.expand_dims(target_w, (axis + q_ndim,))
  cw_f = lax.expand_dims(cum_weights, tuple(range(q_ndim)))
  is_less = lax.lt(cw_f, target_w_aligned)
  int_dtype = dtypes.default_int_dtype()
  idx = red.sum(lax.convert_element_type(is_less, int_dtype), axis=axis + q_ndim,
                keepdims=keepdims)
  q_dtype = dtype_weak(q)[0]
  if squash_nans:
    valid_counts = red.sum(lax.bitwise_not(nan_data), axis=axis, dtype=q_dtype,
                           keepdims=keepdims)
  else:
    valid_counts = lax.full_like(total_weight, a_shape[axis], dtype=q_dtype)
  limit = lax.sub(valid_counts, _const(valid_counts, 1))
  max_idx = lax.convert_element_type(lax.expand_dims(
      lax.convert_element_type(limit, int_dtype), tuple(range(q_ndim))), dtype_weak(idx)[0])
  idx = lax.max(_const(idx, 0), lax.min(idx, max_idx))
  idx_take = lax.squeeze(idx, (q_ndim + axis,)) if keepdims else idx
  if q_ndim == 0:
    result = take_along_axis(a, lax.expand_dims(idx_take, (axis,)), axis=axis)
    result = lax.squeeze(result, (axis,))
  else:
    perm = [*range(q_ndim, q_ndim + axis), *range(q_ndim),
            *range(q_ndim + axis, len(shape_of(idx_take)))]
    result = take_along_axis(a, lax.transpose(idx_take, perm), axis=axis)
    result = lax.transpose(result, [perm.index(i) for i in range(len(perm))])
  if keepdims:
    result = lax.expand_dims(result, (q_ndim + axis,))
  all_nan_data = lax.eq(valid_counts, lax.full_like(valid_counts, 0))
  any_bad_weight = red.any(bad_weights, axis=axis, keepdims=keepdims)
  if squash_nans:
    force_nan = lax.bitwise_or(any_bad_weight, all_nan_data)
  else:
    force_nan = lax.bitwise_or(any_bad_weight, red.any(nan_data, axis=axis, keepdims=keepdims))
  force_nan = lax.expand_dims(force_nan, tuple(range(q_ndim)))
  return _where(force_nan, lax.full_like(result, np.nan), result)


def _no_out(name, out, overwrite_input):
  if overwrite_input or out is not None:
    raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or out != None")


def _checked(name, a, q, weights):
  check_arraylike(name, a, q)
  if weights is not None:
    check_arraylike(name, weights)


def _static_axis(axis):
  return tuple(axis) if isinstance(axis, list) else axis


@internal_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"), name="quantile")
def _quantile_jit(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
  _checked("quantile", a, q, weights)
  if overwrite_input or out is not None:
    raise ValueError("jax.numpy.quantile does not support overwrite_input=True or out != None")
  return _quantile(creation.asarray(a), creation.asarray(q), axis, method, keepdims, False,
                   weights)


@internal_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"),
              name="nanquantile")
def _nanquantile_jit(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                     keepdims=False, *, weights=None):
  _checked("nanquantile", a, q, weights)
  if overwrite_input or out is not None:
    raise ValueError("jax.numpy.nanquantile does not support overwrite_input=True or "
                     "out != None")
  return _quantile(creation.asarray(a), creation.asarray(q), axis, method, keepdims, True,
                   weights)


@internal_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"),
              name="percentile")
def _percentile_jit(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                    keepdims=False, *, weights=None):
  _checked("percentile", a, q, weights)
  (q,) = promote_dtypes_inexact(q)
  return quantile(a, q / 100, axis=axis, out=out, overwrite_input=overwrite_input,
                  method=method, keepdims=keepdims, weights=weights)


@internal_jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"),
              name="nanpercentile")
def _nanpercentile_jit(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                       keepdims=False, *, weights=None):
  _checked("nanpercentile", a, q, weights)
  (q,) = promote_dtypes_inexact(q)
  q = q / 100
  return nanquantile(a, q, axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                     weights=weights, keepdims=keepdims)


@internal_jit(static_argnames=("axis", "overwrite_input", "keepdims"), name="median")
def _median_jit(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  check_arraylike("median", a)
  return quantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                  keepdims=keepdims, method="midpoint")


@internal_jit(static_argnames=("axis", "overwrite_input", "keepdims"), name="nanmedian")
def _nanmedian_jit(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  check_arraylike("nanmedian", a)
  return nanquantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                     keepdims=keepdims, method="midpoint")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
  """jnp.quantile: the q-th quantiles of `a` along `axis` (linear by default)."""
  return _quantile_jit(a, q, axis=_static_axis(axis), out=out, overwrite_input=overwrite_input,
                       method=method, keepdims=keepdims, weights=weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
  """jnp.nanquantile: quantile ignoring NaNs."""
  return _nanquantile_jit(a, q, axis=_static_axis(axis), out=out,
                          overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                          weights=weights)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
  """jnp.percentile: quantile with q in percent."""
  return _percentile_jit(a, q, axis=_static_axis(axis), out=out,
                         overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                         weights=weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
  """jnp.nanpercentile: nanquantile with q in percent."""
  return _nanpercentile_jit(a, q, axis=_static_axis(axis), out=out,
                            overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                            weights=weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """jnp.median: the middle value along `axis` (the midpoint of the two middle ones)."""
  return _median_jit(a, axis=_static_axis(axis), out=out, overwrite_input=overwrite_input,
                     keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """jnp.nanmedian: median ignoring NaNs."""
  return _nanmedian_jit(a, axis=_static_axis(axis), out=out, overwrite_input=overwrite_input,
                        keepdims=keepdims)
