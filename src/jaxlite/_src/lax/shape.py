"""Shape primitives: broadcast_in_dim, reshape, squeeze, transpose (more join them here).

Params are hashable tuples of Python ints; abstract evals raise JAX's TypeErrors.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src import core
from jaxlite._src.core import ShapedArray
from jaxlite._src.interpreters import batching
from jaxlite._src.lax.families import first_weak, numpy_templates


def _prim(name, impl, abstract_eval, weak=first_weak):
  p = core.Primitive(name)
  p.def_impl(impl)
  p.def_abstract_eval(abstract_eval)
  p.eager_weak_type = weak
  return p


# --- broadcast_in_dim --------------------------------------------------------------------------

def _broadcast_in_dim_abstract(x, shape, broadcast_dimensions, sharding=None):
  shape = tuple(shape)
  bdims = tuple(broadcast_dimensions)
  if len(bdims) != x.ndim:
    raise TypeError("broadcast_in_dim broadcast_dimensions must have length equal to operand "
                    f"ndim; got broadcast_dimensions {bdims} for operand ndim {x.ndim}.")
  if len(shape) < x.ndim:
    raise TypeError(f"broadcast_in_dim target broadcast shape must have equal or higher rank "
                    f"to the operand shape; got operand ndim {x.ndim} and target broadcast "
                    f"ndim {len(shape)}.")
  for i, d in enumerate(bdims):
    if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
      raise TypeError("broadcast_in_dim operand dimension sizes must either be 1, or be equal "
                      "to their corresponding dimensions in the target broadcast shape; got "
                      f"operand of shape {x.shape}, target broadcast shape {shape}, "
                      f"broadcast_dimensions {bdims} ")
  if list(bdims) != sorted(bdims) or len(set(bdims)) != len(bdims):
    raise TypeError("broadcast_in_dim broadcast_dimensions must be strictly increasing; got "
                    f"broadcast_dimensions {bdims}")
  return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, shape, broadcast_dimensions, sharding=None):
  x = np.asarray(x)
  expanded = [1] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    expanded[d] = x.shape[i]
  return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = _prim("broadcast_in_dim", _broadcast_in_dim_impl,
                           _broadcast_in_dim_abstract)


def _broadcast_in_dim_batcher(vals, dims, *, shape, broadcast_dimensions, sharding=None):
  (x,), (bdim,) = vals, dims
  x = batching.moveaxis(x, bdim, 0)
  new_dims = (0,) + tuple(np.add(1, broadcast_dimensions))
  return broadcast_in_dim_p.bind(x, shape=(x.shape[0],) + tuple(shape),
                                 broadcast_dimensions=new_dims, sharding=sharding), 0


batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batcher


# --- reshape -----------------------------------------------------------------------------------

def _reshape_abstract(x, new_sizes, dimensions=None, sharding=None):
  new_sizes = tuple(new_sizes)
  if int(np.prod(new_sizes, dtype=np.int64)) != x.size or any(d < 0 for d in new_sizes):
    raise TypeError("reshape total size must be unchanged, got new_sizes "
                    f"{new_sizes} (of total size {int(np.prod(new_sizes, dtype=np.int64))}) for "
                    f"shape {x.shape} (of total size {x.size}).")
  if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
    raise TypeError("reshape dimensions must be a permutation of operand dimensions, got "
                    f"dimensions {dimensions} for shape {x.shape}.")
  return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, new_sizes, dimensions=None, sharding=None):
  x = np.asarray(x)
  if dimensions is not None:
    x = np.transpose(x, dimensions)
  return x.reshape(new_sizes)


reshape_p = _prim("reshape", _reshape_impl, _reshape_abstract)
numpy_templates[reshape_p] = lambda new_sizes, dimensions=None, sharding=None: (
    f"np.reshape({{0}}, {tuple(new_sizes)})" if dimensions is None else None)


def _reshape_batcher(vals, dims, *, new_sizes, dimensions=None, sharding=None):
  (x,), (bdim,) = vals, dims
  x = batching.moveaxis(x, bdim, 0)
  if dimensions is not None:
    dimensions = (0,) + tuple(d + 1 for d in dimensions)
  return reshape_p.bind(x, new_sizes=(x.shape[0],) + tuple(new_sizes), dimensions=dimensions,
                        sharding=sharding), 0


batching.primitive_batchers[reshape_p] = _reshape_batcher


# --- squeeze -----------------------------------------------------------------------------------

def _squeeze_abstract(x, dimensions):
  dims = tuple(dimensions)
  for d in dims:
    if not 0 <= d < x.ndim:
      raise ValueError(f"squeeze dimensions {dims} out of range for shape {x.shape}")
    if x.shape[d] != 1:
      raise TypeError("cannot select an axis to squeeze out which has size not equal to one, "
                      f"got shape={x.shape} and dimensions={dims}")
  shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
  return ShapedArray(shape, x.dtype, x.weak_type)


def _squeeze_impl(x, dimensions):
  return np.squeeze(np.asarray(x), axis=tuple(dimensions)) if dimensions else x


squeeze_p = _prim("squeeze", _squeeze_impl, _squeeze_abstract)


def _squeeze_batcher(vals, dims, *, dimensions):
  (x,), (bdim,) = vals, dims
  x = batching.moveaxis(x, bdim, 0)
  return squeeze_p.bind(x, dimensions=tuple(d + 1 for d in dimensions)), 0


batching.primitive_batchers[squeeze_p] = _squeeze_batcher


# --- transpose ---------------------------------------------------------------------------------

def _transpose_abstract(x, permutation):
  perm = tuple(permutation)
  if sorted(perm) != list(range(x.ndim)):
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {perm} for operand shape {x.shape}.")
  return ShapedArray(tuple(x.shape[p] for p in perm), x.dtype, x.weak_type)


def _transpose_impl(x, permutation):
  return np.transpose(x, permutation)


transpose_p = _prim("transpose", _transpose_impl, _transpose_abstract)
numpy_templates[transpose_p] = lambda permutation: f"np.transpose({{0}}, {tuple(permutation)})"


def _transpose_batcher(vals, dims, *, permutation):
  # The batch axis leads the result; the example's axes keep their order behind it.
  (x,), (bdim,) = vals, dims
  perm = (bdim,) + tuple(p if p < bdim else p + 1 for p in permutation)
  return transpose_p.bind(x, permutation=perm), 0


batching.primitive_batchers[transpose_p] = _transpose_batcher
