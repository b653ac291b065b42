"""Arrays on XLA devices, on jaxlib's CPU client (the paths a TPU takes, on the device at hand):
device-to-host readback of every dtype without importing jax, arrays created on the default
device (`jax.default_device`), device_put between XLA devices and NumPy's CPU device,
delete / is_deleted / block_until_ready / copy_to_host_async.

benchmarks/tpu_probe.py runs the same checks on a TPU (BENCHMARKS.md, issue 30's section).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from conftest import configured

pytest.importorskip("jaxlib")
ml_dtypes = pytest.importorskip("ml_dtypes")

from jaxlite._src.base import devices as devices_lib  # noqa: E402
from jaxlite._src.compiler.xla import backend as xla_backend  # noqa: E402

SRC = os.path.join(os.path.dirname(__file__), "..", "src")


@pytest.fixture
def on_xla():
  with configured(jax_jaxlite_backend="xla"):
    yield jaxlite.devices()[0]


def _run(code, **env):
  e = {k: v for k, v in os.environ.items() if k not in ("JAXLITE_BACKEND", "JAX_PLATFORMS")}
  e.update(env)
  e["PYTHONPATH"] = os.pathsep.join([SRC, e.get("PYTHONPATH", "")])
  return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                        timeout=300)


DTYPES = ["float32", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float16", "int8", "uint32",
          "bool", "complex64", "int4"]


def _dtype(name):
  return np.dtype(getattr(ml_dtypes, name, None) or name)


@pytest.mark.parametrize("name", DTYPES)
def test_readback_of_every_dtype(on_xla, name):
  d = _dtype(name)
  src = np.array([[0.0, 0.5, 1.0], [1.5, 2.0, 3.0]], np.float32)  # x2 fits every dtype
  y = jaxlite.jit(lambda a: (a * 2).astype(d))(src)
  assert type(y._value) is xla_backend.DeviceBuffer
  h = np.asarray(y)
  assert h.dtype == d and not h.flags.writeable
  np.testing.assert_array_equal(h, (src * 2).astype(d))
  kept = y._value._host
  assert kept is not None and np.shares_memory(np.asarray(y), kept)  # copied once, kept


def test_readback_never_imports_jax():
  # jax is installed in the test environment: jaxlib's readback would import it if let.
  r = _run("import sys, numpy as np, ml_dtypes, jaxlite, jaxlite.numpy as jnp\n"
           "f = jaxlite.jit(lambda a: (a * 3, (a * 2).astype(ml_dtypes.bfloat16)))\n"
           "a, b = f(np.arange(4, dtype=np.float32))\n"
           "a.copy_to_host_async()\n"
           "print(np.asarray(a).tolist(), np.asarray(b).dtype, str(b), 'jax' in sys.modules)",
           JAXLITE_BACKEND="xla")
  assert r.returncode == 0, r.stderr
  assert r.stdout.split("\n")[0] == "[0.0, 3.0, 6.0, 9.0] bfloat16 [0 2 4 6] False"


def test_readback_leaves_an_imported_jax_alone():
  r = _run("import sys, numpy as np, jax, jaxlite\n"
           "y = jaxlite.jit(lambda a: a + 1)(np.ones(2, np.float32))\n"
           "print(np.asarray(y).tolist(), sys.modules['jax'] is jax,\n"
           "      float(jax.numpy.ones(2).sum()))", JAXLITE_BACKEND="xla")
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["[2.0,", "2.0]", "True", "2.0"]


def test_copy_to_host_async_then_read(on_xla):
  y = jaxlite.jit(lambda a: a - 1)(np.arange(5, dtype=np.float32))
  assert y.copy_to_host_async() is None
  np.testing.assert_array_equal(np.asarray(y), np.arange(5, dtype=np.float32) - 1)
  y.copy_to_host_async()  # the host copy exists: nothing to start
  assert y._value._host is not None


def test_created_arrays_go_to_the_default_xla_device(on_xla):
  dev = on_xla
  with jaxlite.default_device(dev):
    x = jnp.ones((2, 3))
    y = jnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    z = jnp.array([1, 2, 3])
  for a in (x, y, z):
    assert type(a._value) is xla_backend.DeviceBuffer and a._value.device == dev
    assert not a.committed and a.devices() == {dev}
  # the host copy made at creation is kept: reading costs no transfer
  assert y._value._host is not None
  np.testing.assert_array_equal(np.asarray(y), np.arange(6, dtype=np.float32).reshape(2, 3))
  s = x + y  # an eager op on the device
  assert type(s._value) is xla_backend.DeviceBuffer
  np.testing.assert_array_equal(s, np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
  assert z.dtype == np.int32 and np.asarray(z).tolist() == [1, 2, 3]


def test_numpy_cpu_device_under_an_xla_default(on_xla):
  """An accelerator as the default and NumPy's CPU device beside it (as on the TPU): arrays
  put on the CPU device stay host arrays and their eager ops run in NumPy there."""
  cpu = devices_lib.cpu_devices()[0]  # NumPy's CPU device
  assert type(cpu) is devices_lib.CpuDevice
  with jaxlite.default_device(on_xla):  # created arrays go to the XLA device, as on a TPU
    y = jaxlite.jit(lambda a: a * 2)(np.arange(3, dtype=np.float32))
    c = jaxlite.device_put(y, cpu)
    assert type(c._value) is np.ndarray and c.committed and c.devices() == {cpu}
    d = c + 1  # the Python scalar follows the CPU operand
    assert type(d._value) is np.ndarray and d.devices() == {cpu}
    e = jnp.sin(c) * 2.0
    assert type(e._value) is np.ndarray and e.devices() == {cpu}
  np.testing.assert_array_equal(d, [1.0, 3.0, 5.0])
  np.testing.assert_allclose(e, np.sin([0.0, 2.0, 4.0]) * 2, rtol=1e-6)
  back = jaxlite.device_put(c, on_xla)
  assert type(back._value) is xla_backend.DeviceBuffer and back.devices() == {on_xla}
  np.testing.assert_array_equal(back * 3, [0.0, 6.0, 12.0])
  g = jaxlite.jit(lambda a: a * 4)
  on_cpu = g(c)  # jit on an array committed to NumPy's CPU device runs there
  assert type(on_cpu._value) is np.ndarray and on_cpu.devices() == {cpu}
  np.testing.assert_array_equal(on_cpu, [0.0, 8.0, 16.0])
  on_dev = g(back)
  assert type(on_dev._value) is xla_backend.DeviceBuffer
  np.testing.assert_array_equal(on_dev, [0.0, 8.0, 16.0])
  with jaxlite.default_device(cpu):
    h = jnp.ones(2)
    assert type(h._value) is np.ndarray
    assert type((h + 1)._value) is np.ndarray


def test_device_put_between_xla_devices():
  r = _run("import numpy as np, jaxlite, jaxlite.numpy as jnp\n"
           "d0, d1 = jaxlite.devices()\n"
           "x = jaxlite.device_put(np.arange(4, dtype=np.float32), d1)\n"
           "y = jaxlite.device_put(x, d0)\n"
           "z = jaxlite.device_put(y, d1) * 2\n"
           "print(x._value.device.id, y._value.device.id, z._value.device.id,\n"
           "      z.devices() == {d1}, np.asarray(z).tolist())",
           JAXLITE_BACKEND="xla", XLA_FLAGS="--xla_force_host_platform_device_count=2")
  assert r.returncode == 0, r.stderr
  assert r.stdout.split("\n")[0] == "1 0 1 True [0.0, 2.0, 4.0, 6.0]"


def test_delete_and_block_until_ready(on_xla):
  y = jaxlite.jit(lambda a: a + 1)(np.ones(3, np.float32))
  assert y.block_until_ready() is y and not y.is_deleted()
  buf = y._value.buf
  y.delete()
  assert y.is_deleted() and buf.is_deleted()  # the device memory is freed
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(y)
  y.delete()  # idempotent


def test_small_transfers_are_reused(on_xla):
  """`x + 1` transfers its scalar once per device (then reuses the buffer), and a jit call
  on a typed PRNG key transfers the key's data once: a transfer synchronizes with the device."""
  with jaxlite.default_device(on_xla):
    x = jnp.arange(4.0)
  backend = on_xla.backend
  np.testing.assert_array_equal(x + 1, [1.0, 2.0, 3.0, 4.0])
  n = len(backend._transfers)
  np.testing.assert_array_equal(x + 1, [1.0, 2.0, 3.0, 4.0])
  # another scalar, one no earlier test transferred: one more entry
  np.testing.assert_array_equal(x + 7.25, [7.25, 8.25, 9.25, 10.25])
  assert len(backend._transfers) == n + 1
  key = jaxlite.random.key(3)
  f = jaxlite.jit(lambda k: jaxlite.random.bits(k, (3,), np.uint32))
  a = f(key)
  m = len(backend._transfers)
  b = f(key)
  assert len(backend._transfers) == m
  np.testing.assert_array_equal(a, b)


def test_float64_with_x64_on_an_xla_device(on_xla):
  # JAX 0.10.2 on the TPU v5e keeps float64 too (benchmarks/tpu_probe.py): no platform refusal
  with jaxlite.enable_x64(True), jaxlite.default_device(on_xla):
    z = jnp.ones(3, jnp.float64)
    assert z.dtype == np.float64 and type(z._value) is xla_backend.DeviceBuffer
    np.testing.assert_array_equal(z * 2, [2.0, 2.0, 2.0])


def test_jit_results_on_the_device_are_not_copied_back(on_xla, monkeypatch):
  """A jit call on device arrays returns its result buffer as it is: no readback and no
  upload per call (the result passes `core.array_from_numpy` on the fast path)."""
  with jaxlite.default_device(on_xla):
    x = jnp.arange(1000.0)
    f = jaxlite.jit(lambda a: a * 2 + 1)
    f(x)
    calls = []
    backend = on_xla.backend
    for name in ("to_host", "to_device"):
      real = getattr(backend, name)
      monkeypatch.setattr(backend, name, lambda *a, _r=real, _n=name, **k: (calls.append(_n),
                                                                            _r(*a, **k))[1])
    y = f(x)
    # a scalar no other test sends (the transfer cache keeps scalars for the process)
    z = x + 1.8372551
    assert calls == ["to_device"]  # the scalar, once; then reused
    assert type(y._value) is xla_backend.DeviceBuffer and y._value._host is None
  np.testing.assert_array_equal(y, np.arange(1000.0, dtype=np.float32) * 2 + 1)
  np.testing.assert_array_equal(z, np.arange(1000.0, dtype=np.float32) + np.float32(1.8372551))


def test_float0_and_weak_scalars_stay_on_the_host(on_xla):
  from jaxlite._src.base import dtypes
  with jaxlite.default_device(on_xla):
    gx, gn = jaxlite.grad(lambda x, n: x * 2.0, argnums=(0, 1), allow_int=True)(1.0, 3)
    s = jnp.asarray(2.0)  # weakly typed scalar: no device of its own
  assert gn.dtype == dtypes.float0  # (a NumPy array, as JAX returns it)
  assert float(gx) == 2.0
  assert s.weak_type and type(s._value) is np.ndarray


def test_a_donated_scalar_is_not_reused_after_donation(on_xla):
  f = jaxlite.jit(lambda a: a * 2, donate_argnums=0)
  for _ in range(3):  # each call's donated scalar buffer is consumed: the next is a new one
    x = jnp.asarray(np.float32(3.0))  # a host value (the CPU client's default)
    out = f(x)
    assert float(out) == 6.0 and x.is_deleted()
  assert float(jnp.float32(1.0) + np.float32(3.0)) == 4.0


def test_readbacks_in_threads_never_import_jax():
  r = _run("import sys, threading, numpy as np, jaxlite\n"
           "f = jaxlite.jit(lambda a: a * 2)\n"
           "xs = [f(np.full(50000, i, np.float32)) for i in range(16)]\n"
           "out = {}\n"
           "def read(i):\n"
           "  out[i] = float(np.asarray(xs[i])[0])\n"
           "ts = [threading.Thread(target=read, args=(i,)) for i in range(16)]\n"
           "[t.start() for t in ts]; [t.join() for t in ts]\n"
           "print(sorted(out.values()) == [2.0 * i for i in range(16)], 'jax' in sys.modules)",
           JAXLITE_BACKEND="xla")
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["True", "False"]
