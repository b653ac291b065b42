"""`jaxlite.sharding`: how arrays are laid out across devices."""
from jaxlite._src.sharding import (  # noqa: F401
  AbstractDevice, AbstractMesh, AxisType, ManualAxisType, Mesh, NamedSharding, PartitionSpec,
  Sharding, SingleDeviceSharding, get_abstract_mesh, get_mesh, make_single_device_sharding,
  set_mesh, use_abstract_mesh)
from jaxlite._src.sharding.reshard import auto_axes, explicit_axes, reshard  # noqa: F401

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh", "NamedSharding",
           "PartitionSpec", "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
           "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "reshard", "set_mesh",
           "use_abstract_mesh"]
