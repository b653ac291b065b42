"""Effects: the side effects an eqn has (printing, I/O, ordered callbacks) as plain values.

The compiler keeps eqns with effects (DCE, CSE) and the printer shows ordered ones; the
classes follow `jax.extend.core.Effect` and `jax.debug.DebugEffect` by name.
"""
from __future__ import annotations

from collections.abc import Set


class Effect:
  """Base class of effects; instances are hashable and compared by type."""

  def __eq__(self, other):
    return type(self) is type(other)

  def __hash__(self):
    return hash(type(self))


class DebugEffect(Effect):
  def __repr__(self):
    return "Debug"


class OrderedDebugEffect(Effect):
  def __repr__(self):
    return "OrderedDebug"


class IOEffect(Effect):
  def __repr__(self):
    return "IO"


class OrderedIOEffect(Effect):
  def __repr__(self):
    return "OrderedIO"


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()
io_effect = IOEffect()
ordered_io_effect = OrderedIOEffect()

Effects = Set[Effect]
no_effects: frozenset = frozenset()
