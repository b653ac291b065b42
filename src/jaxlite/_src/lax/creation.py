"""Array-producing primitives without array operands: iota (counting along one dimension).

`lax.iota` and `lax.broadcasted_iota` bind it; jnp.arange of traced code lowers to it.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.lax.families import never_weak, numpy_templates
from jaxlite._src.compiler.xla import lowering as hlo

iota_p = core.Primitive("iota")


def _iota_abstract(*, dtype, shape, dimension, sharding=None):
  if any(d < 0 for d in shape):
    raise TypeError(f"iota shape must have every element be nonnegative, got {shape}.")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota dimension must be between 0 and len(shape), got dimension="
                     f"{dimension} for shape={shape}")
  return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype, shape, dimension, sharding=None):
  _iota_abstract(dtype=dtype, shape=shape, dimension=dimension)
  count = np.arange(shape[dimension]).astype(dtype)
  if len(shape) == 1:
    return count
  expanded = [1] * len(shape)
  expanded[dimension] = shape[dimension]
  return np.broadcast_to(count.reshape(expanded), shape)


iota_p.def_impl(_iota_impl)
iota_p.def_abstract_eval(_iota_abstract)
iota_p.eager_weak_type = never_weak


def _iota_template(*, dtype, shape, dimension, sharding=None):
  if len(shape) != 1 or dtype.kind not in "iuf":
    return None
  return f"np.arange({shape[0]}, dtype=np.{dtype.name})"


numpy_templates[iota_p] = _iota_template


def iota(dtype, size: int, *, sharding=None):
  """[0, 1, ..., size - 1] of `dtype`."""
  dtype = dtypes.check_user_dtype(dtype, "iota")
  shape = core.canonicalize_shape((size,))
  return iota_p.bind(dtype=dtype, shape=shape, dimension=0, sharding=sharding)


def broadcasted_iota(dtype, shape, dimension: int, *, sharding=None):
  """An array of `shape` whose values count along `dimension`."""
  dtype = dtypes.check_user_dtype(dtype, "broadcasted_iota")
  shape = core.canonicalize_shape(shape)
  return iota_p.bind(dtype=dtype, shape=shape, dimension=int(dimension),
                     sharding=sharding)


hlo.register(iota_p, lambda ctx, *, dtype, shape, dimension, sharding=None: ctx.op(
    "iota", [], ctx.aval_out, {"iota_dimension": f"{int(dimension)} : i64"}))
