"""`jaxlite.sharding`: how arrays are laid out across devices."""
from jaxlite._src.sharding import (  # noqa: F401
  AbstractDevice, AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec, Sharding,
  SingleDeviceSharding, get_abstract_mesh, get_mesh, make_single_device_sharding, set_mesh,
  use_abstract_mesh)

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding",
           "PartitionSpec", "Sharding", "SingleDeviceSharding", "get_abstract_mesh", "get_mesh",
           "make_single_device_sharding", "set_mesh", "use_abstract_mesh"]
