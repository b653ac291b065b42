"""The sizes that decide between the tiers: below the tier modules, which all read them (tiers.py
selects the tier; tier 1 and the native tier tile and draw by them).
"""
from __future__ import annotations

import math

from jaxlite._src.base import primitive_kinds as kinds

# Kernels whose largest value has fewer elements run inline as tier 0 code: below this, a pool
# hand-off (tens of microseconds) costs more than the cache and the second core win. Tier 1
# reads it as `tiled_executor.SMALL_ELEMENTS` (tests lower it there).
SMALL_ELEMENTS = 1 << 17

# The native tier's threefry runs draws of this many elements or more (native/backend.py): a
# program with such a draw needs the native tier's tables even when nothing in it is tiled.
THREEFRY_MIN = 1 << 16

# Primitives never in a kernel (BLAS keeps them: kind "product"): a big value that only they
# read or make gives tier 1 nothing to tile (an MLP's weights read only by its matmuls).
_NEVER_FUSED = kinds.never_fused


def has_big_values(jaxpr, small: int = SMALL_ELEMENTS) -> bool:
  """Whether a kernel could be tiled: some eqn that may join one (any but a matmul or
  convolution) reads or makes a value of `small` or more elements (a kernel's size is its
  largest operand or result)."""
  for e in jaxpr.eqns:
    if e.primitive in _NEVER_FUSED:
      continue
    for v in (*e.invars, *e.outvars):
      shape = getattr(v.aval, "shape", None)
      if shape and math.prod(shape) >= small:
        return True
  return False
