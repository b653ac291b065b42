"""What the AOT stages (`jax.jit(f).trace(...)`, `.lower()`, `.compile()`) tell of their
function, as JAX's Stage: the input and output pytrees and types, and once compiled, where
its inputs and results are placed."""
from __future__ import annotations

from jaxlite._src.base import devices, tree_util


class StageInfo:
  """What every AOT stage tells of its function (JAX's Stage): the input and output pytrees
  and types."""
  args_info = property(lambda self: self._args_info)
  in_tree = property(lambda self: tree_util.tree_structure(self._args_info))
  out_tree = property(lambda self: self._entry.out_tree)

  @property
  def in_avals(self):
    return tree_util.tree_map(lambda info: info._aval, self._args_info)

  @property
  def out_info(self):
    return self._entry.out_tree.unflatten([
        _sds()(a.shape, a.dtype, weak_type=a.weak_type, sharding=self._out_sharding(a))
        for a in self._entry.out_avals])

  def _out_sharding(self, aval):
    return None


class CompiledInfo(StageInfo):
  """A compiled stage: its inputs and results are placed."""

  def _out_sharding(self, aval):
    # a compiled program's results are placed: over their type's mesh, else on the device
    if aval.sharding is not None:
      from jaxlite._src.sharding.rules import concrete_sharding
      return concrete_sharding(aval.sharding) or aval.sharding
    return devices.SingleDeviceSharding(devices.default_device())

  @property
  def input_shardings(self):
    return tree_util.tree_map(lambda info: self._out_sharding(info._aval), self._args_info)

  @property
  def output_shardings(self):
    return self._entry.out_tree.unflatten([self._out_sharding(a)
                                           for a in self._entry.out_avals])


def _sds():
  from jaxlite._src.transforms.jit_function import ShapeDtypeStruct
  return ShapeDtypeStruct


class ArgInfo:
  """An argument's abstract value and whether it is donated."""
  __slots__ = ("_aval", "donated")

  def __init__(self, _aval, donated: bool):
    self._aval, self.donated = _aval, donated

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)

  def __eq__(self, other):
    return (isinstance(other, ArgInfo) and self._aval == other._aval
            and self.donated == other.donated)

  def __hash__(self):
    return hash((self._aval, self.donated))

  def __repr__(self):
    return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"
