"""`jax.memory.Space`: the memory spaces an array or ref may live in (device memory, pinned host
memory, or any). jaxlite's buffers are all host NumPy memory; the enum names placements in params
(`empty2`, `new_ref`) as JAX prints them."""
import enum
import types


class MemorySpace(enum.Enum):
  Device = enum.auto()
  Host = enum.auto()
  Any = enum.auto()

  def __repr__(self):
    return f"MemorySpace.{self.name}"


memory = types.SimpleNamespace(Space=MemorySpace)
