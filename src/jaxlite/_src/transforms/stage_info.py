"""What the AOT stages (`jax.jit(f).trace(...)`, `.lower()`, `.compile()`) tell of their
function, as JAX's Stage: the input and output pytrees and types, and once compiled, where
its inputs and results are placed."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core, devices, dtypes, tree_util
from jaxlite._src.state.types import AbstractRef
from jaxlite._src.transforms.call_primitives import as_traceable_arg


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
    return abstract_type_sharding(aval)


def abstract_type_sharding(aval):
  """The sharding an output's type carries (Explicit mesh axes), over the abstract mesh, as JAX's
  `eval_shape` and `out_info` report it; None for an unsharded type."""
  s = getattr(aval, "sharding", None)
  if s is None:
    return None
  from jaxlite._src.sharding.mesh import AbstractMesh
  mesh = getattr(s, "mesh", None)
  if mesh is not None and not isinstance(mesh, AbstractMesh):
    return type(s)(mesh.abstract_mesh, s.spec)
  return s


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


class ShapeDtypeStruct:
  """A shape and dtype standing in for an array (`jax.ShapeDtypeStruct`)."""
  __slots__ = ("shape", "dtype", "sharding", "weak_type")

  def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
    self.shape = tuple(shape)
    self.dtype = np.dtype(dtype) if not hasattr(dtype, "_is_extended") else dtype
    self.sharding = sharding
    self.weak_type = weak_type

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @property
  def aval(self):
    return core.ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    sh = f", sharding={self.sharding}" if self.sharding is not None else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={dtypes.dtype_name(self.dtype)}{sh}{weak})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))

  @classmethod
  def like(cls, x):
    """The shape, dtype and weak type of `x` (an array, a tracer, a scalar or anything with
    them), with its sharding when it is committed to one, as JAX's."""
    aval = core.get_aval(as_traceable_arg(x))
    if type(aval) is AbstractRef:
      raise NotImplementedError("Ref/AbstractRef support is not implemented. Please file an "
                                "issue at https://github.com/jax-ml/jax/issues")
    sharding = aval.sharding
    if type(x) is core.array_type:
      sharding = x.sharding if x.committed else None
    elif hasattr(x, "sharding") and not isinstance(x, core.Tracer):
      sharding = x.sharding
    return cls(aval.shape, aval.dtype, sharding=sharding, weak_type=aval.weak_type)
