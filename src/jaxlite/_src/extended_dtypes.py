"""`jax._src.dtypes.ExtendedDType` and friends, the base classes libraries subclass to define
their own extended dtypes (flax's fp8 meta dtype does at import time).

jaxlite recognises an extended dtype by its `_is_extended` attribute (see dtypes.py); instances
of `ExtendedDType` subclasses carry it, and jaxlite's own key dtype counts as one.
"""
from __future__ import annotations

import abc

from jaxlite._src.prng import extended  # noqa: F401  (the abstract scalar type, re-exported)


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
