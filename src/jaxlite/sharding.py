"""`jaxlite.sharding`: how arrays are laid out across devices."""
from jaxlite._src.devices import Sharding, SingleDeviceSharding  # noqa: F401

__all__ = ["Sharding", "SingleDeviceSharding"]
