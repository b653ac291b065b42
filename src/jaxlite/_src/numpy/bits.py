"""jnp's bit packing and counting: packbits, unpackbits, bitwise_count.

Compositions of jnp/lax functions, staged as named internal jits where JAX stages them.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import namespace as lax
from jaxlite._src.numpy import shape_ops
from jaxlite._src.numpy import where_reshape as lnp
from jaxlite._src.numpy import reductions as red
from jaxlite._src.numpy import ufuncs as uf
from jaxlite._src.numpy.util import (
  canonicalize_axis,
  check_arraylike,
  promote_dtypes,
)
from jaxlite._src.numpy.elementwise_extra import _arr, _dtype


# ---- bits -------------------------------------------------------------------------------------

@internal_jit(static_argnames=("axis", "bitorder"), name="packbits")
def _packbits(a, axis, bitorder):
  bits = uf.not_equal(a, 0).astype(np.uint8)
  if axis is None:
    bits, axis = lnp.ravel(bits), 0
  bits = shape_ops.moveaxis(bits, axis, -1)
  n = bits.shape[-1]
  pad = (-n) % 8
  if pad:
    bits = shape_ops.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
  bits = lnp.reshape(bits, bits.shape[:-1] + ((n + pad) // 8, 8))
  shifts = np.arange(8, dtype=np.uint8)
  if bitorder == "big":
    shifts = shifts[::-1].copy()
  packed = red.sum(uf.left_shift(bits, shifts), axis=-1, dtype=np.uint8)
  return shape_ops.moveaxis(packed, -1, axis)


def packbits(a, axis=None, bitorder="big"):
  check_arraylike("packbits", a)
  if _dtype(a).kind not in "iub":
    raise TypeError("Expected an input array of integer or boolean data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  return _packbits(_arr(a), axis, bitorder)


def unpackbits(a, axis=None, count=None, bitorder="big"):
  check_arraylike("unpackbits", a)
  a = _arr(a)
  if _dtype(a) != np.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  return _unpackbits(a, axis, count, bitorder)


@internal_jit(static_argnames=("axis", "count", "bitorder"), name="unpackbits")
def _unpackbits(a, axis, count, bitorder):
  shifts = np.arange(8, dtype=np.uint8)
  if bitorder == "big":
    shifts = shifts[::-1].copy()
  bits = uf.bitwise_and(uf.right_shift(a[..., None], shifts), np.uint8(1))
  if axis is None:
    bits, axis = lnp.ravel(bits), 0
  else:
    axis = canonicalize_axis(axis, a.ndim)
    bits = _unpack_axis(bits, a, axis)
  if count is not None:
    bits = lax.slice_in_dim(bits, 0, count, axis=axis)
  return bits


def _unpack_axis(bits, a, axis):
  """bits (..., 8) of `a`: the 8 bits of each byte follow each other along `axis`."""
  bits = shape_ops.moveaxis(bits, -1, axis + 1)
  shape = a.shape[:axis] + (a.shape[axis] * 8,) + a.shape[axis + 1:]
  return lnp.reshape(bits, shape)


@internal_jit(name="bitwise_count")
def _bitwise_count(x):
  return lax.population_count(uf.abs(x)).astype(np.uint8)


def bitwise_count(x, /):
  check_arraylike("bitwise_count", x)
  if _dtype(x).kind not in "iub":
    raise TypeError("bitwise_count requires integer or boolean arguments")
  (x,) = promote_dtypes(x)
  return _bitwise_count(_arr(x))
