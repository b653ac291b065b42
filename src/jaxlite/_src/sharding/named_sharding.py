"""NamedSharding: an array laid out over a Mesh by a PartitionSpec.

Computes shard shapes and per-device index slices; shardings in types read `_dim_axes`."""
import itertools

import numpy as np

from jaxlite._src.base.devices import Sharding
from jaxlite._src.sharding.mesh import AbstractMesh, AxisType, Mesh
from jaxlite._src.sharding.partition_spec import UNCONSTRAINED, PartitionSpec


class IndivisibleError(ValueError):
  """A sharded dimension is not divisible by its number of shards."""


class DuplicateSpecError(Exception):
  """A spec maps one mesh axis to two dimensions (or twice to one): JAX's class (not a
  ValueError), raised by NamedSharding and by the APIs that take PartitionSpecs."""


def check_unique_axes(spec, what="NamedSharding spec"):
  """JAX's DuplicateSpecError when `spec` names a mesh axis more than once; `what` names the
  argument as JAX's message does (NamedSharding spec, in_shardings, shardings...)."""
  seen = set()
  for entry in spec:
    for n in _names(entry):
      if n in seen:
        raise DuplicateSpecError(
            f"A single {what} specification can map every mesh axis to at most one "
            f"positional dimension, but {spec!r} has duplicate entries for `{n}`")
      seen.add(n)


def _names(entry):
  if entry is None or entry is UNCONSTRAINED:
    return ()
  return entry if isinstance(entry, tuple) else (entry,)


def check_type_divisible(sharding, shape):
  """JAX's ValueError for a sharding in a type (explicit axes) that does not evenly divide
  `shape`: a type cannot describe uneven shards (IndivisibleError is the placement's error)."""
  sizes = sharding.mesh.shape
  for d, (entry, n) in enumerate(zip(sharding.spec, shape)):
    names = _names(entry)
    k = int(np.prod([sizes[a] for a in names], dtype=int))
    if n % k:
      raise ValueError(
          f"Sharding spec {tuple(names)} implies that array axis {d} is partitioned {k} times, "
          f"but does not evenly divide the dimension size {n}. Got shape: {tuple(shape)} and "
          f"sharding {sharding}")


class NamedSharding(Sharding):
  """Sharding of an array over `mesh`, dimension i split over the axes `spec[i]`."""

  def __init__(self, mesh, spec=PartitionSpec(), *, memory_kind=None):
    if not isinstance(mesh, (Mesh, AbstractMesh)):
      raise TypeError(f"NamedSharding: mesh must be a Mesh or AbstractMesh, got "
                      f"{type(mesh).__name__}")
    if isinstance(spec, (tuple, list)) or spec is None:
      spec = PartitionSpec(*(spec or ()))
    if not isinstance(spec, PartitionSpec):
      raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {type(spec).__name__}")
    self.mesh, self.spec = mesh, spec
    self._memory_kind = memory_kind
    for entry in spec:
      for n in _names(entry):
        if n not in mesh.axis_names:
          raise ValueError(f"Resource axis: {n} of {spec!r} is not found in mesh: "
                           f"{mesh.axis_names}.")
    check_unique_axes(spec)

  # Over a concrete mesh the memory kind defaults to "device" (as JAX canonicalizes it); a
  # sharding in a type, over an AbstractMesh, names none.
  memory_kind = property(lambda self: self._memory_kind or (
      None if isinstance(self.mesh, AbstractMesh) else "device"))

  def __repr__(self):
    kind = self.memory_kind
    mem = "" if kind is None else f", memory_kind={kind}"
    return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}{mem})"

  def _key(self):
    return (self.mesh, self.spec, self.memory_kind)

  def _unsharded_type(self) -> bool:
    """Whether this is the sharding `jax.typeof` shows for an unsharded value (the empty
    AbstractMesh): what an aval's sharding None stands for, so it compares (and hashes) equal
    to None, keeping `jax.typeof(x) == ShapedArray(shape, dtype)` true, as in JAX."""
    return isinstance(self.mesh, AbstractMesh) and self.mesh.empty

  def __eq__(self, o):
    if o is None:
      return self._unsharded_type()
    return isinstance(o, NamedSharding) and (self is o or self._key() == o._key()
                                             or self._unsharded_type() and o._unsharded_type())

  def __hash__(self):
    h = self.__dict__.get("_hash")
    if h is None:  # hashed once: jit's plan caches key on the arguments' shardings
      h = self._hash = hash(None) if self._unsharded_type() else \
          hash((NamedSharding,) + self._key())
    return h

  def __reduce__(self):
    return (_make_named, (self.mesh, self.spec, self._memory_kind))

  # Shardings in types: which explicit mesh axes each dimension is split over.
  @property
  def _dim_axes(self):
    types = self.mesh._name_to_type
    out = []
    for entry in self.spec:
      ns = [n for n in _names(entry) if types[n] == AxisType.Explicit]
      out.append(None if not ns else ns[0] if len(ns) == 1 else "(" + ",".join(ns) + ")")
    return tuple(out) + (None,) * 64

  def _factors(self, ndim):
    if len(self.spec) > ndim:
      raise ValueError(f"Sharding {self!r} is only valid for values of rank at least "
                       f"{len(self.spec)}, but was applied to a value of rank {ndim}")
    sizes = self.mesh.shape
    return [int(np.prod([sizes[n] for n in _names(e)], dtype=int)) for e in self.spec] + \
        [1] * (ndim - len(self.spec))

  def shard_shape(self, global_shape):
    global_shape = tuple(global_shape)
    factors = self._factors(len(global_shape))
    for i, (d, f) in enumerate(zip(global_shape, factors)):
      if d % f:
        raise IndivisibleError(
          f"Sharding {self!r} implies that array axis {i} is partitioned {f} times, but the "
          f"dimension size is {d} (full shape: {global_shape}, per-dimension tiling factors: "
          f"{factors} should evenly divide the shape)")
    return tuple(d // f for d, f in zip(global_shape, factors))

  def devices_indices_map(self, global_shape):
    if not isinstance(self.mesh, Mesh):
      raise ValueError("devices_indices_map needs a concrete Mesh, not an AbstractMesh")
    global_shape = tuple(global_shape)
    shard = self.shard_shape(global_shape)
    names = self.mesh.axis_names
    out = {}
    for pos in itertools.product(*(range(s) for s in self.mesh.axis_sizes)):
      coord = dict(zip(names, pos))
      idx = []
      for i, d in enumerate(global_shape):
        ns = _names(self.spec[i]) if i < len(self.spec) else ()
        if not ns or shard[i] == d:  # unsplit (axes of size 1 too): JAX gives slice(None)
          idx.append(slice(None))
          continue
        k = 0  # row-major block number over this dimension's axes
        for n in ns:
          k = k * self.mesh.shape[n] + coord[n]
        idx.append(slice(k * shard[i], (k + 1) * shard[i]))
      out[self.mesh.devices[pos]] = tuple(idx)
    return out

  def addressable_devices_indices_map(self, global_shape):
    m = self.devices_indices_map(global_shape)
    if self.is_fully_addressable:
      return m
    me = _process_index()
    return {d: idx for d, idx in m.items() if d.process_index == me}

  @property
  def device_set(self):
    return set(self.mesh.devices.flat)

  @property
  def addressable_devices(self):
    """The mesh's devices that this process drives (all of them in a single process)."""
    if self.is_fully_addressable:
      return self.device_set
    me = _process_index()
    return {d for d in self.mesh.devices.flat if d.process_index == me}

  @property
  def _device_assignment(self):
    return tuple(self.mesh.devices.flat)

  @property
  def num_devices(self):
    return self.mesh.size

  @property
  def is_fully_addressable(self):
    me = _process_index()
    return all(getattr(d, "process_index", 0) == me for d in self.mesh.devices.flat)

  @property
  def is_fully_replicated(self):
    return all(self.mesh.shape[n] == 1 for e in self.spec for n in _names(e))

  def is_equivalent_to(self, other, ndim):
    if not isinstance(other, Sharding) or self.memory_kind != other.memory_kind:
      return False
    if self.is_fully_replicated and getattr(other, "is_fully_replicated", False):
      return self._device_assignment == other._device_assignment
    if isinstance(other, NamedSharding):
      return (self.mesh == other.mesh and self.spec._normalized_spec_for_aval(ndim)
              == other.spec._normalized_spec_for_aval(ndim))
    return False

  def with_memory_kind(self, kind):
    return NamedSharding(self.mesh, self.spec, memory_kind=kind)

  def with_spec(self, spec):
    if not isinstance(spec, PartitionSpec):
      spec = PartitionSpec(*spec)
    return NamedSharding(self.mesh, spec, memory_kind=self._memory_kind)

  def _replicated(self):
    """The same mesh with every dimension replicated."""
    return NamedSharding(self.mesh, PartitionSpec(), memory_kind=self._memory_kind)

  def update(self, **kw):
    return NamedSharding(kw.get("mesh", self.mesh), kw.get("spec", self.spec),
                         memory_kind=kw.get("memory_kind", self._memory_kind))


def _process_index():
  from jaxlite._src.base.devices import process_index
  return process_index()


def _make_named(mesh, spec, memory_kind):
  return NamedSharding(mesh, spec, memory_kind=memory_kind)


def make_single_device_sharding(device):
  from jaxlite._src.base.devices import SingleDeviceSharding
  return SingleDeviceSharding(device)


_unsharded_types: dict = {}


def type_sharding(aval, placement=None):
  """The sharding `jax.typeof` shows for an aval whose sharding is None (an unsharded type):
  over the abstract mesh of the value's multi-device `placement` (a NamedSharding over Auto
  axes: not in the type), else over the empty AbstractMesh, with every dim unsplit."""
  ndim = len(aval.shape)
  mesh = getattr(placement, "mesh", None)
  if isinstance(mesh, Mesh) and mesh.devices.size > 1:
    return NamedSharding(mesh.abstract_mesh, PartitionSpec(*(None,) * ndim))
  hit = _unsharded_types.get(ndim)
  if hit is None:
    hit = _unsharded_types[ndim] = NamedSharding(AbstractMesh((), ()),
                                                  PartitionSpec(*(None,) * ndim))
  return hit


def without_trivial_axes(s):
  """NamedSharding `s` as JAX reads it back from an XLA sharding: mesh axes of size 1 dropped
  from its spec, trailing unsplit dims too."""
  sizes = s.mesh.shape
  entries = []
  for e in s.spec:
    axes = tuple(n for n in (e if isinstance(e, tuple) else (e,))
                 if n is not None and sizes[n] != 1)
    entries.append(None if not axes else axes[0] if len(axes) == 1 else axes)
  while entries and entries[-1] is None:
    entries.pop()
  return s.with_spec(PartitionSpec(*entries)) if tuple(entries) != tuple(s.spec) else s
