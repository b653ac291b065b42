"""Devices and shardings of plain arrays (JAX-COMPAT §9)."""
import subprocess
import sys

import pytest

import jaxlite as jax
import jaxlite.numpy as jnp


def test_default_device():
  d = jax.devices()[0]
  assert repr(jax.devices()) == "[CpuDevice(id=0)]" or len(jax.devices()) >= 1
  assert (repr(d), str(d), d.id, d.platform, d.device_kind, d.process_index) == (
      "CpuDevice(id=0)", "cpu:0", 0, "cpu", "cpu", 0)
  assert jax.default_backend() == "cpu" and jax.process_count() == 1
  assert jax.device_count() == jax.local_device_count() == len(jax.devices())


def test_device_put_commits():
  x = jax.device_put(jnp.ones(3), jax.devices()[0])
  assert x.committed and not jnp.ones(3).committed
  assert repr(x.sharding) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
  assert jax.device_put({"a": 1.0})["a"].tolist() == 1.0


_SCRIPT = """
import jaxlite as jax, jaxlite.numpy as jnp
jax.config.update('jax_num_cpu_devices', 4)
print(jax.devices(), jax.device_count())
x = jax.device_put(jnp.ones(2), jax.devices()[3])
print(x.sharding)
try:
  jax.config.update('jax_num_cpu_devices', 2)
except RuntimeError as e:
  print(str(e).splitlines()[0])
"""


def test_num_cpu_devices_config():
  out = subprocess.check_output([sys.executable, "-c", _SCRIPT], text=True)
  assert out.splitlines() == [
      "[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2), CpuDevice(id=3)] 4",
      "SingleDeviceSharding(device=CpuDevice(id=3), memory_kind=device)",
      "jax_num_cpu_devices config should be updated before backends are initialized i.e. "
      "before any JAX operation is executed. You should initialize this config immediately "
      "after `import jax`."]


def test_unknown_config_option():
  with pytest.raises(AttributeError, match="Unrecognized config option"):
    jax.config.update("jax_no_such_flag", 1)
