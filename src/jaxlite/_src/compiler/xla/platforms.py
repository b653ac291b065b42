"""Which backend is the default, the XLA devices `jax.devices()` lists, and the eager route.

Imported at `import jaxlite` (it imports no jaxlib): it looks for accelerator plugins on disk
(`client.accelerator_platforms`, no import) and reads `jax_jaxlite_backend` / `JAXLITE_BACKEND`
and `jax_platforms` / `JAX_PLATFORMS`. When an accelerator is present, or the xla backend is
chosen for the CPU, it installs that XLA backend as the compiler of jit and sets
`core.default_eager_route`; jaxlib itself is imported at the first compile or transfer.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import devices as devices_lib
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler.xla import client as client_lib
from jaxlite._src.distributed import state as distributed_state
from jaxlite._src.base.config import config

_state = {"platform": None, "numpy_backend": None, "host_from_numpy": None}


def default_platform() -> str | None:
  """The XLA platform of the default backend ("tpu", "cuda", "cpu"), or None for NumPy."""
  want = client_lib.requested_platforms()
  accel = client_lib.accelerator_platforms()
  if accel and (want is None or want[0] != "cpu"):
    return accel[0]
  if config.jax_jaxlite_backend == "xla":
    if not client_lib.available():
      raise RuntimeError("jax_jaxlite_backend='xla' needs jaxlib: pip install 'jaxlite[xla]'")
    return "cpu"
  return None


def xla_backend(platform: str):
  from jaxlite._src.compiler.xla import backend as xla_backend_lib
  return xla_backend_lib.get_xla_backend(platform)


def refresh(_=None) -> None:
  """Installs the default backend the flags and plugins name (at import and on flag changes)."""
  platform = default_platform()
  if platform == _state["platform"]:
    return
  if _state["platform"] is None:
    _state["numpy_backend"] = backend_lib.installed()
  if _state["host_from_numpy"] is None:
    _state["host_from_numpy"] = core.array_from_numpy
  if platform is None:
    backend_lib.install_backend(_state["numpy_backend"])
    backend_lib.host_backend = None
    core.default_eager_route = None
    core.array_from_numpy = _state["host_from_numpy"]
    devices_lib.default_xla_backend = None
  else:
    from jaxlite._src.compiler.xla import eager
    backend_lib.host_backend = _state["numpy_backend"]
    backend_lib.install_backend(xla_backend(platform))
    core.default_eager_route = eager.route
    core.array_from_numpy = placed_from_numpy
    devices_lib.default_xla_backend = xla_backend(platform)
  _state["platform"] = platform


def creation_device():
  """The XLA device an Array created from a host value (`jnp.array`, `jnp.ones`, ...) is placed
  on, as JAX places it on the default device: `jax_default_device` when it names an XLA
  device, else the default backend's first device (the CPU client's too: a jit call then
  passes the Array's device buffer instead of copying its host value in on every call); None
  to keep it in host memory (NumPy's CPU device chosen by `default_device`)."""
  d = config.jax_default_device
  if d is not None:
    return d if hasattr(d, "pjrt") else None
  platform = _state["platform"]
  if platform is None:
    return None
  return xla_backend(platform).default_device()


def placed_from_numpy(value, weak_type=False):
  """`core.array_from_numpy` while XLA is the default backend: the Array made as on the host,
  then placed on `creation_device()` (its host copy kept: reading it back costs nothing)."""
  a = _state["host_from_numpy"](value, weak_type)
  # Host values only (not a device buffer), and not a weakly typed scalar: a Python number has
  # no device of its own and follows its partner's (`cpu_array + 1` stays on the CPU device);
  # on an XLA device its transfer is made once and reused (XlaBackend.buffer_for).
  if (type(value) is np.ndarray or isinstance(value, np.generic)) and not (
      weak_type and np.ndim(value) == 0) and value.dtype.kind != "V":  # float0, records: host
    device = creation_device()
    if device is not None:
      a._value = device.backend.to_device(value, device, keep_host=True)
  return a


# --- devices ---------------------------------------------------------------------------------

def xla_devices(backend: str | None):
  """`jax.devices(backend)` when XLA answers it: the default XLA platform's devices for None,
  an accelerator's for its name; None where the NumPy backend's CPU devices answer."""
  platform = _state["platform"]
  if backend is None:
    if platform is None:
      want = client_lib.requested_platforms()
      if want and "cpu" not in want:  # JAX_PLATFORMS names only platforms that are missing
        raise RuntimeError(f"Unable to initialize backend '{want[0]}': no PJRT plugin for it "
                           f"is installed (JAX_PLATFORMS={','.join(want)}; jaxlib "
                           f"{'installed' if client_lib.available() else 'not installed'})")
      return None
    return _all_devices(platform)
  backend = backend.lower()
  if backend == "cpu":
    return _all_devices("cpu") if platform is not None and \
        config.jax_jaxlite_backend == "xla" else None
  for p in client_lib.ALIASES.get(backend, (backend,)):
    if p in client_lib.accelerator_platforms():
      return xla_backend(p).devices()
  return None


def _all_devices(platform):
  """The devices of `platform`'s client: every process's where the CPU client spans processes
  (jaxlite.distributed with the xla backend), else this process's."""
  from jaxlite._src.compiler.xla import multiprocess
  if platform == "cpu" and multiprocess.active():
    return multiprocess.global_devices(xla_backend("cpu"))
  return xla_backend(platform).devices()


def default_device():
  """The default XLA device (`jax_default_device` when it is one), or None under NumPy."""
  d = config.jax_default_device
  if d is not None and hasattr(d, "pjrt"):  # an XlaDevice
    return d
  platform = _state["platform"]
  return None if platform is None else xla_backend(platform).default_device()


def default_backend_name() -> str | None:
  p = _state["platform"]
  return None if p is None else ("gpu" if p in ("cuda", "rocm") else p)


def join_processes(comm, process_id, num_processes, local_count, timeout_s):
  """`jaxlite.distributed.initialize`'s hook: with the xla backend the default on the CPU, XLA's
  CPU client over every process's devices (multiprocess.py says how and why), so that programs
  over a mesh spanning processes compile and run as one XLA program."""
  if default_platform() != "cpu":
    return
  from jaxlite._src.compiler.xla import multiprocess
  multiprocess.join(comm, process_id, num_processes, local_count, timeout_s)
  distributed_state.shutdown_hooks.append(multiprocess.leave)


devices_lib.xla_hooks = (xla_devices, default_device, default_backend_name)
distributed_state.joined_hooks.append(join_processes)
config._add_listener("jax_jaxlite_backend", refresh)
config._add_listener("jax_platforms", refresh)
refresh()
