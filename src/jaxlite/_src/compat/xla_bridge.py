"""`jax._src.xla_bridge` as far as JAX libraries read it: which backends are up, and getting one.

chex reads `xla_bridge._backends` to learn whether the CPU backend is already initialised (the
device count is frozen from then on). jaxlite's one backend is the CPU device list of devices.py;
it counts as initialised once that list has been made (the first array or `jax.devices()`).
"""
from __future__ import annotations

from jaxlite._src.base import devices as _devices


class CpuBackend:
  """The CPU client: its platform name and its devices."""
  platform = "cpu"
  platform_version = "jaxlite numpy"

  def devices(self):
    return _devices.devices()

  def local_devices(self):
    return _devices.local_devices()

  def device_count(self):
    return _devices.device_count()

  local_device_count = device_count

  def process_index(self):
    return 0

  def __repr__(self):
    return "CpuBackend(platform='cpu')"


_CPU = CpuBackend()


def backends() -> dict:
  """The initialised backends by platform (initialising the CPU one, as JAX's does)."""
  _devices.devices()
  return {"cpu": _CPU}


def get_backend(platform=None) -> CpuBackend:
  if platform not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {platform}. Available backends are ['cpu']")
  _devices.devices()
  return _CPU


def __getattr__(name):
  if name == "_backends":  # {} until the device list exists, as JAX's dict before init
    return {"cpu": _CPU} if _devices._backend_initialized else {}
  raise AttributeError(f"module 'jaxlite._src.compat.xla_bridge' has no attribute {name!r}")
