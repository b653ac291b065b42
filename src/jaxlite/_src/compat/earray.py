"""`jax._src.earray`: arrays of user-defined extended dtypes (dtypes with `_rules`).

jaxlite has no separate class for them: such an array is an ordinary Array holding the physical
NumPy value, whose type names the extended dtype (`array._from_numpy_aval`). `EArray(aval,
physical)` builds one, and `isinstance(x, EArray)` holds for them. flax's fp8 rules import this
module to know that eager arrays of their dtype exist (and name `EArray` in a result handler that
only XLA lowering calls, which jaxlite never does).
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core


class _EArrayMeta(type):
  def __instancecheck__(cls, x):
    return isinstance(x, core.Array) and not isinstance(x, core.Tracer) and \
        getattr(getattr(x, "dtype", None), "_rules", None) is not None


class EArray(metaclass=_EArrayMeta):
  """Constructor and isinstance target of arrays of user extended dtypes (see module doc)."""

  def __new__(cls, aval, data):
    return core.make_array(np.asarray(data), aval)
