"""Scalar helpers the generated native kernels call (imports numba: loaded only by a compile).

`bitcast` reinterprets a scalar's bits; `erf_inv_f32` is tier 0's float32 erf_inv (Giles, with
XLA's fused Horner steps emulated exactly in float64), so that random.normal keeps its bits.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import intrinsic

from jaxlite._src.lax import special


@intrinsic
def bitcast(typingctx, x, like):
  """`x`'s bits as the type of `like` (same width)."""
  def codegen(context, builder, signature, args):
    return builder.bitcast(args[0], context.get_value_type(signature.return_type))
  return like(x, like), codegen


_CENTRAL = tuple(float(np.float32(c)) for c in special._GILES_CENTRAL)
_TAIL = tuple(float(np.float32(c)) for c in special._GILES_TAIL)


@njit(inline="always")
def _horner(coefs, w):
  w64 = np.float64(w)
  out = np.float32(w64 * coefs[0] + coefs[1])
  for c in coefs[2:]:
    out = np.float32(np.float64(out) * w64 + c)  # the product is exact: one rounding, an fma
  return out


@njit(inline="always")
def erf_inv_f32(x):
  w = -math.log1p(-(x * x))
  if w < np.float32(5):
    p = _horner(_CENTRAL, w - np.float32(2.5))
  else:
    p = _horner(_TAIL, np.float32(math.sqrt(w)) - np.float32(3))
  if abs(x) == np.float32(1):
    return x * np.float32(np.inf)
  return p * x
