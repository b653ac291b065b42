"""`jax.experimental.multihost_utils` over MPI: gather, broadcast, barrier, equality checks
across processes, and conversions between host-local and global arrays."""
from __future__ import annotations

import zlib

import numpy as np

from jaxlite._src.base import array as array_mod
from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import tree_util
from jaxlite._src.distributed import global_arrays
from jaxlite._src.distributed import mpi_collectives as mc


def _np(x):
  return np.asarray(x._host_value() if isinstance(x, core.Array) else x)


def _gather_global(x):
  """The whole value of an Array whose shards live in several processes, in every process:
  each writes its first replicas into a zero buffer and a bitwise-OR Allreduce merges them
  (exact for every dtype and bit pattern, -0.0 and NaN payloads included)."""
  if x.is_fully_replicated:  # every process holds the value
    return np.array(array_mod.host_value(x))
  buf = np.zeros(x.shape, x.dtype)
  for _, idx, rid, block in array_mod.shard_views(x):
    if rid == 0:
      buf[idx] = block
  if devices.process_count() == 1:
    return buf
  comm = mc.communicator()
  raw = buf.reshape(-1).view(np.uint8)
  words = raw.view(np.uint64) if raw.size % 8 == 0 else raw
  out = np.empty_like(words)
  comm.Allreduce(words, out, op=mc.global_state.MPI.BOR)
  return out.view(np.uint8).view(x.dtype).reshape(x.shape)


def _allgather_leaf(x, tiled):
  if isinstance(x, core.Array) and not x.is_fully_addressable:
    if not tiled:
      raise ValueError("Gathering global non-fully-addressable arrays only supports tiled=True")
    return _gather_global(x)
  v = _np(x)
  if v.ndim == 0 or not tiled:
    v = v[None]
  if devices.process_count() == 1:
    return np.array(v)
  g = mc.allgather(v)
  return g.reshape((-1,) + v.shape[1:])


def process_allgather(in_tree, tiled: bool = False):
  """Every process's leaves, stacked on a new axis 0 (`tiled=True`: concatenated along axis 0)
  as NumPy arrays; a non-fully-addressable Array gives its global value (tiled=True only)."""
  return tree_util.tree_map(lambda x: _allgather_leaf(x, tiled), in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
  """The source process's leaves (process 0's by default) in every process, as NumPy arrays.
  Several sources give the sum of their values and none zeros (JAX computes it as a psum)."""
  if devices.process_count() == 1:
    return tree_util.tree_map(_np, in_tree)
  if is_source is None:
    is_source = devices.process_index() == 0
  sources = np.flatnonzero(mc.allgather(np.array(bool(is_source))))
  leaves, treedef = tree_util.tree_flatten(in_tree)
  out = []
  for x in leaves:
    v = _np(x)
    if len(sources) == 1:
      out.append(mc.broadcast(v, root=int(sources[0])))
    else:
      out.append(mc.allreduce(v if is_source else np.zeros_like(v), "sum"))
  return tree_util.tree_unflatten(treedef, out)


def assert_equal(in_tree, fail_message: str = ""):
  """Raises AssertionError (in every process) unless every process holds the same leaves."""
  def expected(x):
    if isinstance(x, core.Array) and not x.is_fully_addressable:
      return _gather_global(x)
    v = _np(x)
    if v.ndim == 0:
      v = v[None]
    return np.concatenate([v] * devices.process_count())
  out = process_allgather(in_tree, tiled=True)
  want = tree_util.tree_map(expected, in_tree)
  if not tree_util.tree_all(tree_util.tree_map(lambda a, b: bool(np.all(np.equal(a, b))),
                                               want, out)):
    raise AssertionError(f"{fail_message}. Expected: {out}; got: {in_tree}.")


def sync_global_devices(name: str):
  """A barrier across all processes; raises AssertionError if they passed different names."""
  h = np.uint32(zlib.crc32(name.encode()))
  assert_equal(h, f"sync_global_devices name mismatch ('{name}')")


def _is_spec(x):
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  return x is None or isinstance(x, PartitionSpec)


def _spec_leaves(name, tree, pspecs):
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  if _is_spec(pspecs):
    pspecs = PartitionSpec() if pspecs is None else pspecs
    return [pspecs] * len(tree_util.tree_leaves(tree))
  return [PartitionSpec() if p is None else p
          for p in tree_util._broadcast_leaves(pspecs, tree, _is_spec)]


def local_mesh(global_mesh):
  """The sub-mesh of `global_mesh` holding this process's devices (the same axis names),
  as JAX's `Mesh.local_mesh`."""
  from jaxlite._src.sharding.mesh import Mesh
  me = devices.process_index()
  mask = np.vectorize(lambda d: d.process_index == me, otypes=[bool])(global_mesh.devices)
  where = np.argwhere(mask)
  if where.size == 0:
    raise ValueError(f"the mesh {global_mesh} has no device of process {me}")
  box = tuple(slice(lo, hi + 1) for lo, hi in zip(where.min(0), where.max(0)))
  if not mask[box].all():
    raise ValueError(f"process {me}'s devices do not form a sub-block of the mesh "
                     f"{global_mesh}, so it has no local mesh")
  return Mesh(global_mesh.devices[box], global_mesh.axis_names, global_mesh.axis_types)


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
  """Each process's host-local arrays (its block of each global array) made into Arrays over
  `global_mesh` laid out by `pspecs` (a prefix tree of PartitionSpecs)."""
  from jaxlite._src.sharding.named_sharding import NamedSharding
  leaves, treedef = tree_util.tree_flatten(local_inputs)
  specs = _spec_leaves("host_local_array_to_global_array", local_inputs, pspecs)
  out = []
  for x, spec in zip(leaves, specs):
    s = NamedSharding(global_mesh, spec)
    if isinstance(x, core.Array) and not x.is_fully_addressable:
      out.append(x)  # already global
      continue
    out.append(global_arrays.make_array_from_process_local_data(s, x))
  return tree_util.tree_unflatten(treedef, out)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
  """The inverse: each global Array's block held by this process, as an Array over the local
  mesh laid out by the same PartitionSpec."""
  from jaxlite._src.sharding.named_sharding import NamedSharding
  leaves, treedef = tree_util.tree_flatten(global_inputs)
  specs = _spec_leaves("global_array_to_host_local_array", global_inputs, pspecs)
  lmesh = local_mesh(global_mesh)
  out = []
  for x, spec in zip(leaves, specs):
    if not isinstance(x, core.Array):
      x = array_mod.from_host(np.asarray(x), False, NamedSharding(global_mesh, spec))
    views = array_mod.shard_views(x)
    ndim = len(x.shape)
    starts = [min(v[1][i].indices(x.shape[i])[0] for v in views) for i in range(ndim)]
    stops = [max(v[1][i].indices(x.shape[i])[1] for v in views) for i in range(ndim)]
    buf = np.empty(tuple(b - a for a, b in zip(starts, stops)), x.dtype)
    for _, idx, _, block in views:
      rel = tuple(slice(s.indices(n)[0] - a, s.indices(n)[1] - a)
                  for s, n, a in zip(idx, x.shape, starts))
      buf[rel] = block
    out.append(array_mod.from_host(buf, x.weak_type, NamedSharding(lmesh, spec)))
  return tree_util.tree_unflatten(treedef, out)
