"""CPU devices and the single-device sharding that every plain array carries.

Device count comes from `jax_num_cpu_devices` or JAXLITE_NUM_CPU_DEVICES (or XLA_FLAGS'
host-platform count) and is frozen once the first array is made, as in JAX.
"""
from __future__ import annotations

import os
import re

from jaxlite._src.base import config as config_lib
from jaxlite._src.base.config import config

_backend_initialized = False
_devices_cache = None
_local_cache = None
# Set by `jaxlite.distributed.initialize` before any device exists: (this process's index, the
# local device count of every process). None: a single process.
_topology = None
# JAX's CPU client packs a process's devices at ids process_index * 2048 + local index.
CPU_IDS_PER_PROCESS = 2048


class Device:
  """The base of device classes (NumPy's `CpuDevice`, the XLA backend's devices): an Array's
  placement is a Device (one device) or a multi-device `Sharding`."""
  __slots__ = ()


def is_device(placement) -> bool:
  """Whether an Array's placement (`_device`) is one device rather than a Sharding."""
  return isinstance(placement, Device)


class CpuDevice(Device):
  __slots__ = ("id", "process_index")
  platform = "cpu"
  device_kind = "cpu"
  client = None
  local_hardware_id = None

  def __init__(self, id: int, process_index: int = 0):
    self.id = id
    self.process_index = process_index

  host_id = property(lambda self: self.process_index)

  def __repr__(self):
    return f"CpuDevice(id={self.id})"

  def __str__(self):
    return f"cpu:{self.id}"

  def __eq__(self, other):
    return type(other) is CpuDevice and other.id == self.id

  def __hash__(self):
    return hash(("cpu", self.id))

  @property
  def coords(self):
    return (self.id,)

  def memory(self, kind=None):
    return "device"

  def addressable_memories(self):
    return ["device"]


def _requested_count() -> int:
  n = config.jax_num_cpu_devices
  if n is not None and int(n) > 0:
    return int(n)
  m = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
  return int(m.group(1)) if m else 1


def check_can_set_device_count():
  if _backend_initialized:
    raise RuntimeError(
        "jax_num_cpu_devices config should be updated before backends are initialized i.e. "
        "before any JAX operation is executed. You should initialize this config immediately "
        "after `import jax`.")


def _initialize():
  """Creates the devices once: every process's, process 0's first (JAX's global order)."""
  global _backend_initialized, _devices_cache, _local_cache
  _backend_initialized = True
  if _topology is None:
    _devices_cache = [CpuDevice(i) for i in range(_requested_count())]
    _local_cache = _devices_cache
  else:
    me, counts = _topology
    _devices_cache = [CpuDevice(p * CPU_IDS_PER_PROCESS + i, p)
                      for p, n in enumerate(counts) for i in range(n)]
    _local_cache = [d for d in _devices_cache if d.process_index == me]
  return _devices_cache


# Set by compiler/xla/platforms.py: (devices(backend) -> list or None, default XLA device or
# None, default backend name or None). XLA devices answer where it returns them.
xla_hooks = None
# Set by compiler/xla/platforms.py while an XLA backend is the default: that backend, whose
# first device is where an uncommitted Array lives (`jax.devices()[0]`, as in JAX).
default_xla_backend = None


def devices(backend=None) -> list:
  if xla_hooks is not None:
    if hasattr(backend, "platform") and not isinstance(backend, str):  # a client/backend object
      backend = backend.platform
    found = xla_hooks[0](backend)
    if found is not None:
      global _backend_initialized
      _backend_initialized = True  # XLA's client exists: too late to set the device count
      return list(found)
  if backend not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {backend}. Available backends are ['cpu']")
  return list(_devices_cache or _initialize())


def cpu_devices() -> list:
  """NumPy's CPU devices (every process's), whichever backend is the default: with an
  accelerator the default, `jax.devices("cpu")` and `device_put` still reach them."""
  return list(_devices_cache or _initialize())


def local_devices(process_index=None, backend=None) -> list:
  """This process's devices (or process `process_index`'s)."""
  all_devices = devices(backend)
  if all_devices and type(all_devices[0]) is not CpuDevice:  # XLA devices
    me = (0 if _topology is None else _topology[0]) if process_index is None else process_index
    return [d for d in all_devices if d.process_index == me]
  if process_index is None:
    return list(_local_cache)
  return [d for d in all_devices if d.process_index == process_index]


def device_count(backend=None) -> int:
  return len(devices(backend))


def local_device_count(backend=None) -> int:
  return len(local_devices(backend=backend))


def default_backend() -> str:
  name = xla_hooks[2]() if xla_hooks is not None else None
  return "cpu" if name is None else name


def process_count(backend=None) -> int:
  return 1 if _topology is None else len(_topology[1])


def process_index(backend=None) -> int:
  return 0 if _topology is None else _topology[0]


def spans_processes(mesh) -> bool:
  """Whether `mesh` has devices of other processes."""
  if process_count() == 1:
    return False
  me = process_index()
  return any(d.process_index != me for d in mesh.devices.flat)


def default_device():
  """The device of an uncommitted Array: `jax.devices()[0]`."""
  if default_xla_backend is not None:
    return default_xla_backend.default_device()
  if _devices_cache is None:
    _initialize()
  return _local_cache[0]


class Sharding:
  """Base of shardings: how an array's elements are laid out across devices."""

  @property
  def device_set(self) -> set:
    raise NotImplementedError("Subclasses should implement this method.")  # JAX's abstract base

  @property
  def num_devices(self) -> int:
    return len(self.device_set)

  is_fully_addressable = True
  memory_kind = "device"


class SingleDeviceSharding(Sharding):
  __slots__ = ("_device", "_memory_kind")

  def __init__(self, device, *, memory_kind: str | None = None):
    self._device = device
    self._memory_kind = memory_kind or "device"

  memory_kind = property(lambda self: self._memory_kind)
  is_fully_replicated = True
  is_fully_addressable = True

  @property
  def device_set(self) -> set:
    return {self._device}

  @property
  def _device_assignment(self):
    return (self._device,)

  def shard_shape(self, global_shape):
    return tuple(global_shape)

  def devices_indices_map(self, global_shape):
    return {self._device: (slice(None),) * len(global_shape)}

  def addressable_devices_indices_map(self, global_shape):
    return self.devices_indices_map(global_shape)

  @property
  def addressable_devices(self):
    return {self._device}

  def with_memory_kind(self, kind):
    return SingleDeviceSharding(self._device, memory_kind=kind)

  def is_equivalent_to(self, other, ndim):
    """JAX's test of two shardings laying an `ndim`-dim array out alike: the whole array on
    this one device, in the same memory, as a replicated sharding over exactly that device
    (a NamedSharding over a 1x1 mesh of it) also does."""
    del ndim  # one device holds every element whatever the rank
    return (isinstance(other, Sharding) and self.memory_kind == other.memory_kind
            and bool(getattr(other, "is_fully_replicated", False))
            and tuple(other._device_assignment) == (self._device,))

  def __repr__(self):
    return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"

  def __eq__(self, other):
    return (isinstance(other, SingleDeviceSharding) and other._device == self._device
            and other._memory_kind == self._memory_kind)

  def __hash__(self):
    return hash((SingleDeviceSharding, self._device, self._memory_kind))


# Primitives whose operands are a variadic list: JAX names them args[i] in placement errors; the
# others (x, y) as their lax functions do.
_VARIADIC_OPERANDS = frozenset({"concatenate", "sort", "select_n", "jit", "pjit"})


def primitive_arg_names(primitive, n: int) -> list:
  if n <= 2 and primitive.name not in _VARIADIC_OPERANDS:
    return ["x", "y"][:n]
  return [f"args[{i}]" for i in range(n)]


def placement_devices(p) -> tuple:
  """The devices of an Array's placement (a device or a multi-device sharding), in order."""
  return (p,) if isinstance(p, Device) else p._device_assignment


# The context mesh (issue 34). Under `jax.set_mesh(mesh)` with a concrete mesh, JAX commits
# every array it makes (eager results, creation and random functions, jit outputs) replicated
# over that mesh. `sharding.mesh.set_mesh` counts here the meshes it set (never 0 while one is
# set in some thread) and fills `context_placement(ndim)`: this thread's mesh's replicated
# placement for that rank, one object per (mesh, rank), or None when this thread has none.
# `array._from_numpy` asks it only while the count is not 0.
context_meshes = 0
context_placement = None


def sharding_in_type(sharding) -> bool:
  """Whether `sharding` splits some dimension over an Explicit mesh axis: then it is part of
  the array's type (its aval), as in JAX's explicit-sharding mode."""
  dim_axes = getattr(sharding, "_dim_axes", None)
  return dim_axes is not None and any(a is not None for a in dim_axes)


def output_placement(p, shape):
  """Placement of a result computed from arguments placed at `p` (a multi-device sharding)
  when no sharding rule gave one: replicated over the same devices."""
  replicated = getattr(p, "_replicated", None)
  return replicated() if replicated is not None else p


def output_placements(p, outs, primitive, args, params) -> list:
  """Placements of the results `outs` of an eager `primitive` on `args` placed at the
  multi-device sharding `p`: by the primitive's sharding rule when an argument is sharded (in
  its type over explicit axes; over Auto axes the rule only proposes a layout, replicated when
  it finds none), else replicated over the same devices."""
  for a in args:
    d = getattr(a, "_device", None)
    if d is not None and not isinstance(d, Device) and not d.is_fully_replicated:
      from jaxlite._src.sharding import rules
      if any(sharding_in_type(getattr(b, "_device", None)) for b in args):
        return rules.eager_placements(primitive, args, params, outs, p)
      return rules.auto_placements(primitive, args, params, outs, p)
  return [output_placement(p, getattr(o, "shape", ())) for o in outs]


def common_device(args, names, fun_name: str):
  """The placement every committed Array among `args` shares (None when none is committed): a
  device, or a multi-device sharding (the first argument's, when several shardings cover the
  same devices). Raises JAX's ValueError when two are committed to different device sets, or,
  under `jax.set_mesh` with a concrete mesh, when one is committed off that mesh's devices (JAX
  checks every committed argument of a computation against the context mesh).
  `names()` gives the arguments' names (called only to raise)."""
  context = _context_devices() if context_meshes else None
  dev = first = None
  for i, a in enumerate(args):
    d = getattr(a, "_device", None)
    if d is None:
      continue
    if context is not None and placement_devices(d) != context:
      raise ValueError("Received incompatible devices for jitted computation. Got "
                       f"{_arg_devices_str(args, names(), i, d, fun_name)} and jit's context "
                       f"mesh {_devices_str(context)}")
    if dev is None:
      dev, first = d, i
    elif d != dev and (isinstance(d, Device) and isinstance(dev, Device)
                       or placement_devices(d) != placement_devices(dev)):
      names = names()
      raise ValueError("Received incompatible devices for jitted computation. Got "
                       f"{_arg_devices_str(args, names, first, dev, fun_name)} and "
                       f"{_arg_devices_str(args, names, i, d, fun_name)}")
  return dev


def _context_devices():
  """The devices of this thread's concrete context mesh (`jax.set_mesh`), or None."""
  placement = context_placement(0)
  return None if placement is None else placement_devices(placement)


def _devices_str(devices) -> str:
  ids = ", ".join(str(x.id) for x in devices)
  return f"with device ids [{ids}] on platform {devices[0].platform.upper()}"


def _arg_devices_str(args, names, i, placement, fun_name) -> str:
  """Argument `i` as JAX's incompatible-devices errors name it."""
  return (f"argument {names[i]} of {fun_name} with shape "
          f"{args[i].aval.str_short(short_dtypes=False)} and "
          f"{_devices_str(placement_devices(placement))}")


class Shard:
  """One addressable piece of an array: its device, index into the global array, and data."""
  __slots__ = ("device", "index", "replica_id", "data")

  def __init__(self, device, index, replica_id, data):
    self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

  def __repr__(self):
    return (f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, "
            f"data={self.data})")


config_lib._update_checks["jax_num_cpu_devices"] = check_can_set_device_count
