"""Sharding types: meshes, partition specs and named shardings (pure data).

Placement of data on devices builds on these elsewhere."""
from jaxlite._src.devices import Sharding, SingleDeviceSharding  # noqa: F401
from jaxlite._src.sharding.mesh import (  # noqa: F401
  AbstractDevice, AbstractMesh, AxisType, Mesh, get_abstract_mesh, get_mesh, make_mesh,
  set_mesh, use_abstract_mesh)
from jaxlite._src.sharding.named_sharding import (  # noqa: F401
  IndivisibleError, NamedSharding, make_single_device_sharding)
from jaxlite._src.sharding.partition_spec import UNCONSTRAINED, P, PartitionSpec  # noqa: F401
