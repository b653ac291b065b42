"""Sharding types: meshes, partition specs and named shardings (pure data), and the sharding
rules of primitives. Names load on first use, so that `import jaxlite` (whose primitives register
their sharding rules in `rules`) does not import the mesh machinery."""
import importlib

_NAMES = {
  "Sharding": "jaxlite._src.base.devices", "SingleDeviceSharding": "jaxlite._src.base.devices",
  **{n: "jaxlite._src.sharding.mesh" for n in (
    "AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "get_abstract_mesh", "get_mesh",
    "make_mesh", "set_mesh", "use_abstract_mesh")},
  **{n: "jaxlite._src.sharding.named_sharding" for n in (
    "IndivisibleError", "NamedSharding", "make_single_device_sharding")},
  **{n: "jaxlite._src.sharding.partition_spec" for n in ("UNCONSTRAINED", "P", "PartitionSpec")},
  "ManualAxisType": "jaxlite._src.sharding.manual_axis_type",
}


def __getattr__(name):
  mod = _NAMES.get(name)
  if mod is None:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
  value = getattr(importlib.import_module(mod), name)
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_NAMES))
