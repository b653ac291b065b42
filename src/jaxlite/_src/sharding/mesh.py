"""Mesh, AbstractMesh and AxisType: named N-d arrays of devices, and the ambient mesh.

Pure data plus a context stack; nothing here moves arrays (arrays made under `set_mesh` are
committed to its mesh: `_context_placement` is the placement they get)."""
import collections
import contextlib
import enum
import threading
import warnings

import numpy as np


class AxisType(enum.Enum):
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self):
    return self.name


def _check_axis_types(axis_types, n, fn):
  # Mesh and AbstractMesh default to Auto axes (as JAX 0.10.2); make_mesh to Explicit.
  if axis_types is None:
    return (AxisType.Auto,) * n
  if isinstance(axis_types, AxisType):
    axis_types = (axis_types,)
  axis_types = tuple(axis_types)
  if not all(isinstance(t, AxisType) for t in axis_types):
    raise TypeError(f"{fn}: axis_types must be AxisType values, got {axis_types}")
  if len(axis_types) != n:
    raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                     f"axis_names={n} and axis_types={len(axis_types)}")
  return axis_types


def _axes_str(names, sizes, types):
  body = ", ".join(f"'{n}': {s}" for n, s in zip(names, sizes))
  return f"{body}, axis_types={tuple(types)!r}"


class AbstractDevice:
  """A device without identity: only its kind and core count, as meshes know it."""
  def __init__(self, device_kind, num_cores=None):
    self.device_kind, self.num_cores = device_kind, num_cores

  def __repr__(self):
    return f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores})"

  def __eq__(self, o):
    return (isinstance(o, AbstractDevice) and (self.device_kind, self.num_cores)
            == (o.device_kind, o.num_cores))

  def __hash__(self):
    return hash((AbstractDevice, self.device_kind, self.num_cores))


class _MeshBase:
  @property
  def shape(self):
    return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

  @property
  def shape_tuple(self):
    return tuple(zip(self.axis_names, self.axis_sizes))

  @property
  def size(self):
    return int(np.prod(self.axis_sizes, dtype=int))

  @property
  def empty(self):
    return len(self.axis_names) == 0

  @property
  def _name_to_type(self):
    return dict(zip(self.axis_names, self.axis_types))

  def _axes_of(self, t):
    return tuple(n for n, ty in zip(self.axis_names, self.axis_types) if ty == t)

  explicit_axes = property(lambda self: self._axes_of(AxisType.Explicit))
  auto_axes = property(lambda self: self._axes_of(AxisType.Auto))
  manual_axes = property(lambda self: self._axes_of(AxisType.Manual))

  def _all_axes_are(self, t):  # False for a mesh without axes, as in JAX
    return bool(self.axis_types) and all(ty == t for ty in self.axis_types)

  # flax's sharding helpers pick reshard or with_sharding_constraint by these.
  are_all_axes_explicit = property(lambda self: self._all_axes_are(AxisType.Explicit))
  are_all_axes_auto = property(lambda self: self._all_axes_are(AxisType.Auto))
  are_all_axes_manual = property(lambda self: self._all_axes_are(AxisType.Manual))


class Mesh(_MeshBase, contextlib.ContextDecorator):
  """Named N-d array of concrete devices."""

  def __init__(self, devices, axis_names, axis_types=None):
    if isinstance(axis_names, str):
      axis_names = (axis_names,)
    axis_names = tuple(axis_names)
    devices = np.asarray(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
    if devices.ndim != len(axis_names):
      raise ValueError(
        "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
        f"second argument (`axis_names`), but got devices.ndim == {devices.ndim} and "
        f"len(axis_names) == {len(axis_names)}.")
    if len(set(axis_names)) != len(axis_names):
      raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
    self.devices = devices.copy()
    self.devices.flags.writeable = False
    self.axis_names = axis_names
    self.axis_types = _check_axis_types(axis_types, len(axis_names), "Mesh")

  axis_sizes = property(lambda self: tuple(self.devices.shape))

  def __eq__(self, o):
    return (isinstance(o, Mesh) and self.axis_names == o.axis_names
            and self.axis_types == o.axis_types and self.devices.shape == o.devices.shape
            and all(a is b or a == b for a, b in zip(self.devices.flat, o.devices.flat)))

  def __hash__(self):
    h = self.__dict__.get("_hash")
    if h is None:  # a Mesh does not change: hashed once (jit's plan caches key on it)
      h = self._hash = hash((self.axis_names, self.axis_types,
                             tuple(getattr(d, "id", None) for d in self.devices.flat),
                             self.devices.shape))
    return h

  def __reduce__(self):
    return (Mesh, (self.devices, self.axis_names, self.axis_types))

  def __repr__(self):
    if self.empty:
      return "Mesh(axis_sizes=(), axis_names=())"
    return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"axis_types={self.axis_types!r})")

  def __str__(self):
    return f"Mesh({_axes_str(self.axis_names, self.axis_sizes, self.axis_types)})"

  @property
  def device_ids(self):
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  @property
  def local_devices(self):
    return list(self.devices.flat)

  local_mesh = property(lambda self: self)
  is_multi_process = False

  @property
  def _flat_devices_tuple(self):
    return tuple(self.devices.flat)

  @property
  def abstract_mesh(self):
    d = self.devices.flat[0] if self.devices.size else None
    return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                        abstract_device=AbstractDevice(getattr(d, "device_kind", "cpu")))

  # `with mesh:` is JAX's deprecated legacy resource env: it does not set get_mesh() or
  # get_abstract_mesh() (only `set_mesh` does), so it only records the mesh.
  def __enter__(self):
    warnings.warn("`with mesh:` context manager has been deprecated. Please use "
                  "`with jax.set_mesh(mesh):` instead.", DeprecationWarning, stacklevel=2)
    _stack.legacy.append(self)
    return self

  def __exit__(self, *exc):
    _stack.legacy.pop()
    return False


class AbstractMesh(_MeshBase):
  """A mesh's axis names, sizes and types, without devices: what tracing sees."""

  def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
    self.axis_sizes = tuple(axis_sizes)
    self.axis_names = tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"AbstractMesh: axis_sizes {self.axis_sizes} and axis_names "
                       f"{self.axis_names} must have the same length")
    self.axis_types = _check_axis_types(axis_types, len(self.axis_names), "AbstractMesh")
    self.abstract_device = abstract_device

  def _key(self):
    return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

  def __eq__(self, o):
    return isinstance(o, AbstractMesh) and self._key() == o._key()

  def __hash__(self):
    return hash(self._key())

  def __reduce__(self):
    return (_abstract_mesh, self._key())

  def __repr__(self):
    if self.empty:
      return "AbstractMesh((), axis_types=())"
    d = self.abstract_device
    tail = "" if d is None else (f", device_kind={d.device_kind}, num_cores={d.num_cores}, "
                                  f"platform={d.device_kind}")
    return f"AbstractMesh({_axes_str(self.axis_names, self.axis_sizes, self.axis_types)}{tail})"

  abstract_mesh = property(lambda self: self)

  def update_axis_types(self, name_to_type):
    types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
    return AbstractMesh(self.axis_sizes, self.axis_names, types,
                        abstract_device=self.abstract_device)


def _abstract_mesh(sizes, names, types, device):
  return AbstractMesh(sizes, names, types, abstract_device=device)


class _Stack(threading.local):
  def __init__(self):
    self.concrete, self.abstract, self.legacy = [], [], []


_stack = _Stack()
_EMPTY_ABSTRACT = AbstractMesh((), ())
_EMPTY_MESH = Mesh(np.empty((), dtype=object), ())


def get_abstract_mesh():
  return _stack.abstract[-1] if _stack.abstract else _EMPTY_ABSTRACT


def get_mesh():
  return _stack.concrete[-1] if _stack.concrete else _EMPTY_MESH


@contextlib.contextmanager
def use_abstract_mesh(mesh):
  if not isinstance(mesh, AbstractMesh):
    raise ValueError(f"use_abstract_mesh: expected an AbstractMesh, got {type(mesh).__name__}")
  _stack.abstract.append(mesh)
  try:
    yield
  finally:
    _stack.abstract.pop()


class set_mesh:
  """Set the ambient mesh; usable as a plain call or a context manager that restores it."""

  def __init__(self, mesh):
    if not isinstance(mesh, Mesh):
      raise ValueError(f"set_mesh: expected a jax.sharding.Mesh, got {type(mesh).__name__}")
    self._prev = (list(_stack.concrete), list(_stack.abstract))
    _stack.concrete[:] = [mesh]
    _stack.abstract[:] = [mesh.abstract_mesh]
    # Arrays made from now on live on `mesh`, replicated (base/devices.py: the context mesh's
    # placement); a plain call's mesh stays counted, as it stays set.
    _count_context_mesh(1)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    _stack.concrete[:], _stack.abstract[:] = self._prev
    _count_context_mesh(-1)
    return False


_replicated_placements: dict = {}  # id(mesh) -> (mesh, {ndim: its replicated NamedSharding})


def _context_placement(ndim):
  """The placement of an Array of rank `ndim` made under this thread's context mesh (None
  when it has none, or an empty one): replicated over it, each dim unsplit. Its spec is the
  type's, P(None, ...), where an axis is Explicit or Manual; over Auto axes alone it is P(), as
  JAX reads the placement XLA chose back (`jax.typeof` still shows P(None, ...))."""
  if not _stack.concrete:
    return None
  mesh = _stack.concrete[-1]
  entry = _replicated_placements.get(id(mesh))
  if entry is None or entry[0] is not mesh:
    if mesh.empty:
      return None
    if len(_replicated_placements) > 64:
      _replicated_placements.clear()
    entry = _replicated_placements[id(mesh)] = (mesh, {})
  hit = entry[1].get(ndim)
  if hit is None:
    from jaxlite._src.sharding.named_sharding import NamedSharding
    from jaxlite._src.sharding.partition_spec import PartitionSpec
    auto = all(t == AxisType.Auto for t in mesh.axis_types)
    hit = entry[1][ndim] = NamedSharding(mesh, PartitionSpec(*(None,) * (0 if auto else ndim)))
  return hit


def _count_context_mesh(delta):
  from jaxlite._src.base import core, devices
  devices.context_placement = _context_placement
  devices.context_meshes += delta
  core.context_meshes = devices.context_meshes  # the eager dispatch's test (core.py)


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
  """`jax.make_mesh`: a Mesh over the first prod(axis_shapes) devices, Explicit by default."""
  from jaxlite._src.base import devices as _devices
  axis_shapes, axis_names = tuple(axis_shapes), tuple(axis_names)
  if len(axis_shapes) != len(axis_names):
    raise ValueError(f"make_mesh: axis_shapes {axis_shapes} and axis_names {axis_names} "
                     "must have the same length")
  devs = list(devices) if devices is not None else _devices.devices()
  n = int(np.prod(axis_shapes, dtype=int))
  if n > len(devs):
    raise ValueError(f"Number of devices {len(devs)} must be >= the product of mesh_shape "
                     f"{axis_shapes}")
  arr = np.empty(n, dtype=object)
  arr[:] = devs[:n]
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(axis_names)
  return Mesh(arr.reshape(axis_shapes), axis_names, axis_types)
