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


# Placement flows through eager ops and jit as in JAX: results of ops on committed arrays are
# committed to the same device; committed arguments on two devices raise JAX's ValueError. Each
# row: (expression over a (uncommitted), b (on device 0), c (on device 1), what JAX 0.10.2 gives).
_PLACEMENT_ROWS = [
    ("c + 1", "True 1"),
    ("a + c", "True 1"),
    ("jnp.sum(c)", "True 1"),
    ("c[0]", "True 1"),
    ("jnp.concatenate([c, a])", "True 1"),
    ("jax.vmap(lambda x: x * 2)(c)", "True 1"),
    ("jax.device_put(c, d0)", "True 0"),
    ("jax.device_put(c)", "True 1"),
    ("jnp.asarray(c)", "True 1"),
    ("jnp.array(c)", "True 1"),
    ("c.astype(jnp.int32)", "True 1"),
    ("c.at[0].set(5.0)", "True 1"),
    ("jax.lax.cond(True, lambda x: x, lambda x: x, c)", "True 1"),
    ("jax.jit(lambda x: x * 2)(c)", "True 1"),
    ("jax.jit(lambda x: (x, jnp.ones(2)))(c)[1]", "True 1"),
    ("jax.jit(lambda: jnp.ones(2))()", "False 0"),
    ("jnp.zeros_like(c)", "True 1"),
    ("jnp.zeros(2, device=d1)", "True 1"),
    ("jnp.stack([c, a])", "True 1"),
    ("jax.random.normal(jax.device_put(jax.random.key(0), d1), (2,))", "True 1"),
    ("jax.grad(lambda x: (x * x).sum())(c)", "True 1"),
    ("jax.device_put(a, 3)", "ValueError: `jax.device_put` only accepts `None`, "
     "`jax.sharding.Sharding`, `jax.Device`, `Format`, `jax.memory.Space` or a pytree of these "
     "values. Received invalid value: 3"),
    ("jnp.concatenate([c, b])", "ValueError: Received incompatible devices for jitted "
     "computation. Got argument args[0] of concatenate with shape float32[2] and with device ids "
     "[1] on platform CPU and argument args[1] of concatenate with shape float32[2] and with "
     "device ids [0] on platform CPU"),
    ("jax.jit(lambda *x: x[0] + x[1])(c, b)", "ValueError: Received incompatible devices for "
     "jitted computation. Got argument x[0] of <lambda> with shape float32[2] and with device ids "
     "[1] on platform CPU and argument x[1] of <lambda> with shape float32[2] and with device ids "
     "[0] on platform CPU"),
    ("a * 2", "False 0"),
    ("c + b", "ValueError: Received incompatible devices for jitted computation. Got argument x "
     "of add with shape float32[2] and with device ids [1] on platform CPU and argument y of add "
     "with shape float32[2] and with device ids [0] on platform CPU"),
    ("jax.jit(lambda x, y: x + y)(c, b)", "ValueError: Received incompatible devices for jitted "
     "computation. Got argument x of <lambda> with shape float32[2] and with device ids [1] on "
     "platform CPU and argument y of <lambda> with shape float32[2] and with device ids [0] on "
     "platform CPU"),
    ("jax.jit(lambda d: d['a'] + d['b'])({'a': c, 'b': b})", "ValueError: Received incompatible "
     "devices for jitted computation. Got argument d['a'] of <lambda> with shape float32[2] and "
     "with device ids [1] on platform CPU and argument d['b'] of <lambda> with shape float32[2] "
     "and with device ids [0] on platform CPU"),
]

_PLACEMENT_SCRIPT = """
import sys
import jaxlite as jax, jaxlite.numpy as jnp
jax.config.update('jax_num_cpu_devices', 2)
d0, d1 = jax.devices()
a = jnp.ones(2)
b, c = jax.device_put(jnp.ones(2), d0), jax.device_put(jnp.ones(2), d1)
traces = []
f = jax.jit(lambda x: traces.append(1) or x + 1)
f(a), f(b), f(c)
print(len(traces))
for expr in sys.argv[1:]:
  try:
    r = eval(expr)
    print(r.committed, r.device.id)
  except ValueError as e:
    print(f"ValueError: {e}")
"""


def test_placement_follows_committed_arrays():
  out = subprocess.run([sys.executable, "-c", _PLACEMENT_SCRIPT] + [e for e, _ in _PLACEMENT_ROWS],
                       capture_output=True, text=True, check=True, timeout=120).stdout
  lines = out.splitlines()
  assert lines[0] == "1"  # one trace for every placement: the aval names no device (as JAX)
  for (expr, want), got in zip(_PLACEMENT_ROWS, lines[1:], strict=True):
    assert got == want, expr
