"""The `Layout` and `Format` records that name an array's memory order (`jax.experimental.layout`).

jaxlite stores every array in NumPy's row-major order on its one device; these records are what
programs and libraries (flax's `spmd` checks `isinstance(x, Format)`) build and compare, with
JAX's validation, equality and repr. `Layout.AUTO` is the "let the compiler choose" marker.
"""
from __future__ import annotations

from jaxlite._src.base.devices import Sharding


class AutoLayout:
  """The singleton behind `Layout.AUTO`: the layout is left to the compiler."""

  def __repr__(self):
    return "AUTO"


_AUTO = AutoLayout()


class Layout:
  """An array's memory layout: dimension order from major to minor, optional tiling."""

  AUTO = _AUTO

  def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits: int = 0):
    self.major_to_minor = tuple(major_to_minor)
    self.tiling = None if tiling is None else tuple(map(tuple, tiling))
    self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

  def _key(self):
    return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

  def __repr__(self):
    return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, Layout) and self._key() == other._key()

  def update(self, **kwargs):
    """A copy with some of major_to_minor / tiling / sub_byte_element_size_in_bits replaced."""
    bad = set(kwargs) - {"major_to_minor", "tiling", "sub_byte_element_size_in_bits"}
    if bad:
      raise TypeError(f"Layout.update() got unexpected keyword arguments {sorted(bad)}")
    return Layout(kwargs.get("major_to_minor", self.major_to_minor),
                  kwargs.get("tiling", self.tiling),
                  kwargs.get("sub_byte_element_size_in_bits",
                             self.sub_byte_element_size_in_bits))


class Format:
  """A layout together with a sharding (what `jit`'s in/out_shardings may carry)."""

  __slots__ = ("layout", "sharding")

  def __init__(self, layout=None, sharding=None):
    if isinstance(layout, Layout) and sharding is None:
      raise ValueError(
          f"Format: sharding has to be concrete when layout is of type {type(layout)}. Pass a "
          "`jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` as sharding; got "
          f"sharding {sharding}")
    if not isinstance(layout, (Layout, AutoLayout, type(None))):
      raise TypeError(
          "Format: invalid value for the layout argument; expected None, `Layout.AUTO` or a "
          f"`Layout`, got {layout!r} of type {type(layout)}")
    if not isinstance(sharding, (Sharding, type(None))):
      raise TypeError(
          "Format: invalid value for the sharding argument; expected None or a `jax.Sharding`, "
          f"got {sharding!r} of type {type(sharding)}")
    self.layout = layout
    self.sharding = sharding

  def __repr__(self):
    return f"Format(layout={self.layout}, sharding={self.sharding})"

  def __hash__(self):
    return hash((self.layout, self.sharding))

  def __eq__(self, other):
    return (isinstance(other, Format) and self.layout == other.layout
            and self.sharding == other.sharding)
