"""`jax.sharding.ManualAxisType`: how a value inside shard_map relates to the manual mesh axes
(varying over them, unreduced or reduced): an immutable, interned value type, as JAX 0.10.2's."""
from __future__ import annotations

import weakref

_interned: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


class ManualAxisType:
  """Which manual axes a value varies over (`varying`) or holds partial sums over
  (`unreduced`, `reduced`). Equal values are the same object (interned), so identity is
  equality, as in JAX."""
  __slots__ = ("varying", "unreduced", "reduced", "__weakref__")

  def __new__(cls, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
    varying, unreduced, reduced = frozenset(varying), frozenset(unreduced), frozenset(reduced)
    if varying & unreduced:
      raise ValueError("varying and unreduced cannot have common mesh axes. Got "
                       f"varying={set(varying)} and unreduced={set(unreduced)}")
    if varying & reduced:
      raise ValueError("varying and reduced cannot have common mesh axes. Got "
                       f"varying={set(varying)} and reduced={set(reduced)}")
    key = (varying, unreduced, reduced)
    obj = _interned.get(key)
    if obj is None:
      obj = object.__new__(cls)
      for name, value in zip(cls.__slots__, key):
        object.__setattr__(obj, name, value)
      _interned[key] = obj
    return obj

  def __setattr__(self, name, value):
    raise AttributeError(f"cannot assign to field {name!r}")

  def __repr__(self):
    return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
            f"reduced={self.reduced})")

  def __getnewargs_ex__(self):
    return (), {"varying": self.varying, "unreduced": self.unreduced, "reduced": self.reduced}

  def __reduce__(self):
    return (_make, (self.varying, self.unreduced, self.reduced))

  def update(self, **kwargs) -> "ManualAxisType":
    for name in ("varying", "unreduced", "reduced"):
      kwargs.setdefault(name, getattr(self, name))
    return ManualAxisType(**kwargs)

  def to_ct_mat(self) -> "ManualAxisType":
    """The type of this value's cotangent: unreduced and reduced swap."""
    return self.update(unreduced=self.reduced, reduced=self.unreduced)

  @property
  def empty(self) -> bool:
    return not (self.varying or self.unreduced or self.reduced)

  def invarying(self, mesh) -> frozenset:
    """The manual axes of `mesh` this value neither varies over nor is (un)reduced over."""
    return frozenset(mesh.manual_axes) - self.vur

  @property
  def vur(self) -> frozenset:
    return self.varying | self.unreduced | self.reduced


def _make(varying, unreduced, reduced):
  return ManualAxisType(varying=varying, unreduced=unreduced, reduced=reduced)
