"""How a lax function canonicalizes one operand (`asarg`): Arrays and typed scalars pass, Python
scalars become weak typed scalars, NumPy values take the canonical dtype. Below the lax layer, as
the transformations that take operands as lax functions do (linear_call, with_sharding_constraint)
need it too.
"""
from __future__ import annotations

import builtins

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes

weak_scalar = dtypes.weak_scalar


def asarg(x, name=None, position=None):
  """Canonicalizes one argument of a lax function (`name` and `position` name it in the error
  for a value that is no array, as JAX's do)."""
  t = type(x)
  if t is core.array_type or isinstance(x, core.Array) or t in dtypes.typed_scalar_types:
    return x
  if t in (int, float, builtins.complex, bool):
    return weak_scalar(x)
  if isinstance(x, (np.ndarray, np.generic)):
    canon = dtypes.canonicalize_dtype(x.dtype)
    return x if canon == x.dtype else np.asarray(x, canon)
  if hasattr(x, "__jax_array__"):
    return asarg(x.__jax_array__(), name, position)
  if isinstance(x, (int, float, builtins.complex)):
    return weak_scalar(type(x).__mro__[1](x)) if not isinstance(x, np.generic) else x
  if name is not None:
    raise TypeError(f"Error interpreting argument to {name} as a JAX value. The problematic "
                    f"value is of type {type(x)} and was passed to {name} at position "
                    f"{position}.\n")
  raise TypeError(f"Value {x!r} with type {type(x)} is not a valid JAX type")
