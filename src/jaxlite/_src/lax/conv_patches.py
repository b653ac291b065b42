"""`lax.conv_general_dilated_patches` (each output position's receptive field as channels, by
a grouped conv with an identity kernel, as JAX builds it), `conv_general_dilated_local`
(unshared weights: patches contracted per position) and `ragged_dot` (grouped matmul)."""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.lax import elementwise_functions as lax
from jaxlite._src.lax import shape as shape_ops
from jaxlite._src.lax.creation import broadcasted_iota
from jaxlite._src.lax.windowed import conv_dimension_numbers
from jaxlite._src.lax.windowed import conv_general_dilated


def _identity_kernel(n_channels, filter_shape, dtype, rhs_spec):
  """An OIHW kernel (C * prod(filter), 1, *filter) that copies input channel c's window offset
  k into output channel c * prod(filter) + k; laid out as `rhs_spec` says."""
  size = math.prod(filter_shape)
  eye = lax.convert_element_type(lax.eq(broadcasted_iota(np.int32, (size, size), 0),
                                        broadcasted_iota(np.int32, (size, size), 1)), dtype)
  kernel = shape_ops.broadcast_in_dim(eye, (n_channels, size, size), (1, 2))
  kernel = shape_ops.reshape(kernel, (n_channels * size, 1) + tuple(filter_shape))
  perm = tuple(int(i) for i in np.argsort(rhs_spec))
  return kernel if perm == tuple(range(len(perm))) else shape_ops.transpose(kernel, perm)


def conv_general_dilated_patches(lhs, filter_shape: Sequence[int], window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                                 precision=None, preferred_element_type=None):
  """The patches a `filter_shape` convolution would read, as the output's feature axis
  (input channel major, window offset minor)."""
  lhs = lax.asarg(lhs)
  aval = core.get_aval(lhs)
  filter_shape = tuple(int(d) for d in filter_shape)
  if len(filter_shape) != aval.ndim - 2:
    raise ValueError(f"conv_general_dilated_patches: filter_shape {filter_shape} must have "
                     f"one entry per spatial dimension of lhs of shape {aval.shape}")
  dn = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
  n_channels = aval.shape[dn.lhs_spec[1]]
  rhs = _identity_kernel(n_channels, filter_shape, aval.dtype, dn.rhs_spec)
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              dn, feature_group_count=n_channels, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """A convolution whose kernel differs at every output position (a locally connected layer):
  `rhs` has the output's spatial shape, I = in_features * prod(filter_shape), O = out_features."""
  from jaxlite._src.lax.dot import dot_general
  lhs, rhs = lax.asarg(lhs), lax.asarg(rhs)
  lhs_shape = core.get_aval(lhs).shape
  dn = conv_dimension_numbers(lhs_shape, (1, 1) + tuple(filter_shape), dimension_numbers)
  patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                         lhs_dilation, rhs_dilation, dn, precision)
  nd = len(lhs_shape)
  # Both to canonical layouts: patches (N, I, *S), rhs (O, I, *S).
  patches = shape_ops.transpose(patches, tuple(dn.out_spec))
  rhs = shape_ops.transpose(rhs, tuple(dn.rhs_spec))
  spatial = tuple(range(2, nd))
  # Batch over spatial positions, contract I: result (*S, N, O).
  out = dot_general(patches, rhs, (((1,), (1,)), (spatial, spatial)), precision=precision)
  canonical = shape_ops.transpose(out, (nd - 2, nd - 1) + tuple(range(nd - 2)))
  return shape_ops.transpose(canonical, tuple(int(i) for i in np.argsort(dn.out_spec)))


class RaggedDotDimensionNumbers(NamedTuple):
  """Which dims of a ragged dot contract/batch, which lhs dims are ragged, which rhs dims
  index the groups."""
  dot_dimension_numbers: tuple
  lhs_ragged_dimensions: Sequence[int]
  rhs_group_dimensions: Sequence[int]


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
  """Grouped matmul: rows of `lhs` [m, k] are split into consecutive groups of
  `group_sizes` [g]; group j is multiplied by `rhs[j]` [k, n]. Rows past the groups give 0."""
  from jaxlite._src.numpy import namespace as jnp
  if group_offset is not None:
    raise NotImplementedError("ragged_dot: group_offset is not supported")
  lhs, rhs, group_sizes = jnp.asarray(lhs), jnp.asarray(rhs), jnp.asarray(group_sizes)
  if lhs.ndim != 2 or rhs.ndim != 3 or group_sizes.ndim != 1:
    raise TypeError(f"ragged_dot expects lhs [m, k], rhs [g, k, n] and group_sizes [g], got "
                    f"{lhs.shape}, {rhs.shape} and {group_sizes.shape}")
  if lhs.shape[1] != rhs.shape[1] or rhs.shape[0] != group_sizes.shape[0]:
    raise TypeError(f"ragged_dot: incompatible shapes lhs {lhs.shape}, rhs {rhs.shape}, "
                    f"group_sizes {group_sizes.shape}")
  if not jnp.issubdtype(group_sizes.dtype, jnp.integer):
    raise TypeError(f"ragged_dot: group_sizes must be integers, got {group_sizes.dtype}")
  ends = jnp.cumsum(group_sizes)
  row_group = jnp.sum(jnp.arange(lhs.shape[0])[:, None] >= ends[None, :], axis=1)
  per_group = jnp.einsum("mk,gkn->gmn", lhs, rhs, precision=precision,
                         preferred_element_type=preferred_element_type)
  mask = (row_group[None, :] == jnp.arange(rhs.shape[0])[:, None])[:, :, None]
  return jnp.sum(jnp.where(mask, per_group, jnp.zeros((), per_group.dtype)), axis=0)

