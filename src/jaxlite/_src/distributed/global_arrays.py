"""Arrays over a mesh that spans several processes: `make_array_from_callback`,
`make_array_from_single_device_arrays`, `make_array_from_process_local_data`.

Each process builds only its own shards (see array.py's docstring: `_value` None plus
`_local_shards`); a replicated sharding keeps the whole value in every process. They work for a
single process too, but there `sharding/arrays.py` is the entry point, which calls these when
`jax.process_count() > 1` or the sharding is not fully addressable.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import array as array_mod
from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import dtypes


def _canonical(value, dtype=None):
  value = np.asarray(value, dtype)
  canon = dtypes.canonicalize_dtype(value.dtype)
  return value if canon == value.dtype else value.astype(canon)


def _local_devices_in_order(sharding):
  me = devices.process_index()
  return [d for d in sharding._device_assignment if d.process_index == me]


def _assemble(shape, sharding, local_data, weak_type=False):
  """The Array over `sharding` whose local shards are `local_data` {device: NumPy block}."""
  shape = tuple(int(d) for d in shape)
  index_map = sharding.devices_indices_map(shape)
  me = devices.process_index()
  first = next(iter(local_data.values()))
  if sharding.is_fully_replicated:
    return array_mod.from_host(first, weak_type, sharding)
  if sharding.is_fully_addressable:
    glob = np.empty(shape, first.dtype)
    for d, block in local_data.items():
      glob[index_map[d]] = block
    return array_mod.from_host(glob, weak_type, sharding)
  seen, shards = {}, []
  for d in sharding._device_assignment:
    idx = index_map[d]
    key = tuple((s.start, s.stop) for s in idx)
    rid = seen.get(key, 0)
    seen[key] = rid + 1
    if d.process_index == me:
      shards.append((d, idx, rid, local_data[d]))
  aval = core.ShapedArray(shape, first.dtype, weak_type,
                          sharding if devices.sharding_in_type(sharding) else None)
  return array_mod.from_local_shards(shards, aval, sharding)


def _check_block(fn, d, idx, block, shape, dtype):
  want = tuple(len(range(*s.indices(n))) for s, n in zip(idx, shape))
  if block.shape != want:
    raise ValueError(f"{fn}: the data for device {d} has shape {block.shape}, but the sharding "
                     f"gives its shard of the global shape {shape} the shape {want}")
  if dtype is not None and block.dtype != dtype:
    raise ValueError(f"{fn}: the data for device {d} has dtype {block.dtype}, expected {dtype}")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """Calls `data_callback(index)` for each of this process's devices' index into the global
  array of `shape`, and makes the Array from the blocks."""
  shape = tuple(int(d) for d in shape)
  index_map = sharding.devices_indices_map(shape)
  local, by_key = {}, {}
  for d in _local_devices_in_order(sharding):
    idx = index_map[d]
    key = tuple((s.start, s.stop) for s in idx)
    if key not in by_key:  # replicas of one index share one callback's result
      block = data_callback(idx)
      block = block._host_value() if isinstance(block, core.Array) else block
      by_key[key] = _canonical(block, dtype)
      _check_block("make_array_from_callback", d, idx, by_key[key], shape, None)
    local[d] = by_key[key]
  return _assemble(shape, sharding, local)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """An Array from one single-device Array per addressable device of `sharding` (matched by
  each array's committed device, else taken in the sharding's device order)."""
  shape = tuple(int(d) for d in shape)
  order = _local_devices_in_order(sharding)
  arrays = list(arrays)
  if len(arrays) != len(order):
    raise ValueError(
        f"make_array_from_single_device_arrays: expected {len(order)} arrays, one per "
        f"addressable device of the sharding, got {len(arrays)}")
  index_map = sharding.devices_indices_map(shape)
  local = {}
  for pos, a in enumerate(arrays):
    p = getattr(a, "_device", None)
    d = p if type(p) is devices.CpuDevice else order[pos]
    if d not in index_map or d.process_index != devices.process_index():
      raise ValueError(f"make_array_from_single_device_arrays: array {pos} is on {d}, which "
                       "is not an addressable device of the sharding")
    block = a._host_value() if isinstance(a, core.Array) else _canonical(a)
    _check_block("make_array_from_single_device_arrays", d, index_map[d], block, shape, dtype)
    local[d] = block
  return _assemble(shape, sharding, local, getattr(arrays[0], "weak_type", False))


def _blocks_per_dim(sharding, ndim):
  """Per dimension: (block number of each device along it, number of blocks along it), read
  off a probe shape that every factor divides."""
  m = max(1, int(np.prod(sharding.mesh.devices.shape)))
  probe = (m,) * ndim
  index_map = sharding.devices_indices_map(probe)
  out = []
  for i in range(ndim):
    nums = {d: (idx[i].start or 0) // ((idx[i].stop or m) - (idx[i].start or 0))
            for d, idx in index_map.items()}
    out.append((nums, len(set(nums.values()))))
  return out


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """An Array whose part held by this process's devices is `local_data` (the block of the
  global array those devices cover, each process passing its own). `global_shape` defaults to
  the local shape scaled by how many processes' blocks tile each dimension."""
  local_data = _canonical(local_data._host_value() if isinstance(local_data, core.Array)
                          else local_data)
  ndim = local_data.ndim
  per_dim = _blocks_per_dim(sharding, ndim)
  mine = _local_devices_in_order(sharding)
  local_counts = [len({nums[d] for d in mine}) for nums, _ in per_dim]
  if global_shape is None:
    global_shape = tuple(n * total // k for n, (_, total), k
                         in zip(local_data.shape, per_dim, local_counts))
  global_shape = tuple(int(d) for d in global_shape)
  index_map = sharding.devices_indices_map(global_shape)
  # The process's box: from the smallest start of its devices' indices, per dimension.
  starts = [min(index_map[d][i].indices(global_shape[i])[0] for d in mine) for i in range(ndim)]
  box = tuple(max(index_map[d][i].indices(global_shape[i])[1] for d in mine) - starts[i]
              for i in range(ndim))
  if box != local_data.shape:
    raise ValueError(
        f"make_array_from_process_local_data: local_data has shape {local_data.shape}, but "
        f"this process's devices hold a block of shape {box} of the global shape "
        f"{global_shape} under {sharding}")
  local = {}
  for d in mine:
    rel = tuple(slice(s.indices(n)[0] - st, s.indices(n)[1] - st)
                for s, n, st in zip(index_map[d], global_shape, starts))
    local[d] = np.array(local_data[rel])
  return _assemble(global_shape, sharding, local)
