"""`jax._src.dtypes.ExtendedDType` and friends, the base classes libraries subclass to define
their own extended dtypes (flax's fp8 meta dtype does at import time).

jaxlite recognises an extended dtype by its `_is_extended` attribute (see dtypes.py); instances
of `ExtendedDType` subclasses carry it, and jaxlite's own key dtype counts as one.

A user-defined extended dtype names its behaviour in `_rules` (a class of static methods):
`physical_element_aval(dt)` (the NumPy element type its values are stored in), `convert_from` /
`convert_to` (which casts are allowed), and, for autodiff, `tangent_dtype`, `zero(dt)` and
`add(dt, x, y)` (how cotangents start and accumulate: flax's fp8 meta dtype accumulates by max).
jaxlite stores such a value as a NumPy array of the physical dtype; only avals carry the
extended dtype. The rules only ever bind ordinary primitives, so the core needs three small
hooks (casts in lax/casts.py, zeros and accumulation in interpreters/ad.py) and nothing
else. Rules for sharding and lowering (`physical_sharding`, `global_sharded_result_handler`, ...)
are never called: the XLA backend lowers such values as their physical data
(`compiler/xla/lowering.storage_dtype`), and an array of such a dtype does not leave a jit
(`jax._src.earray` does not exist, so libraries keep them inside, as flax's fp8 ops do).
"""
from __future__ import annotations

import abc

import numpy as np


class extended(np.generic):
  """Abstract parent of extended dtypes (`jax.dtypes.extended`)."""


class ExtendedDType(abc.ABC):
  """Abstract base of extended dtypes: subclasses name their scalar `type` (and `_rules`)."""
  _is_extended = True
  _rules = None

  @property
  @abc.abstractmethod
  def type(self) -> type: ...

  @classmethod
  def __subclasshook__(cls, other):
    if cls is ExtendedDType and getattr(other, "_is_extended", False) is True:
      return True
    return NotImplemented


def has_rules(dtype) -> bool:
  """Whether `dtype` is a user-defined extended dtype that brings its own `_rules`."""
  return getattr(dtype, "_is_extended", False) is True and \
      getattr(dtype, "_rules", None) is not None


def physical_dtype(dtype) -> np.dtype:
  """The NumPy dtype a value of the rules-bearing extended `dtype` is stored in."""
  return np.dtype(dtype._rules.physical_element_aval(dtype).dtype)


def can_convert(old, new) -> bool:
  """A cast between a rules-bearing extended dtype and another dtype, as its rules allow."""
  if has_rules(new) and not (has_rules(old) and old == new):
    return bool(new._rules.convert_to(old, new))
  if has_rules(old):
    return bool(old._rules.convert_from(old, new))
  return False
