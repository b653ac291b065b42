"""Building sharded Arrays from pieces: `make_array_from_callback`, `..._single_device_arrays`,
`..._process_local_data` (one process), and the shared validation of a sharding against a shape.

On one host the pieces are written into one global NumPy buffer (see array.py's docstring)."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import dtypes


def _placement(sharding, shape):
  """The `_device` an Array of `shape` laid out by `sharding` carries (validated as device_put
  validates: JAX's IndivisibleError / ValueError)."""
  from jaxlite._src.transforms import api
  if isinstance(sharding, devices.SingleDeviceSharding):
    return api._checked_placement(sharding._device, shape)
  if isinstance(sharding, devices.Sharding):
    if hasattr(sharding, "shard_shape"):
      sharding.shard_shape(tuple(shape))  # the IndivisibleError JAX raises
    return api._checked_placement(sharding, shape)
  raise TypeError(f"sharding should be an instance of jax.sharding.Sharding, got {sharding!r} "
                  f"of type {type(sharding).__name__}")


def _multiprocess(sharding):
  """Whether `sharding` spans several processes (jaxlite.distributed builds those Arrays)."""
  return devices.process_count() > 1 and not sharding.is_fully_addressable


def _global():
  from jaxlite._src.distributed import global_arrays
  return global_arrays


def _shard_mismatch(expected, got, dtype, shape, sharding):
  aval = core.ShapedArray(tuple(shape), dtype)
  return ValueError(f"Expected shard shape {tuple(expected)} doesn't match the single device "
                    f"array shape {tuple(got)}. Shape of Array is "
                    f"{aval.str_short(short_dtypes=False)} with sharding {sharding}")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """A sharded Array of global `shape`: `data_callback(index)` gives the data of the shard at
  `index` (a tuple of slices), called once per distinct index."""
  if _multiprocess(sharding):
    return _global().make_array_from_callback(shape, sharding, data_callback, dtype)
  shape = tuple(int(d) for d in shape)
  placement = _placement(sharding, shape)
  index_map = sharding.devices_indices_map(shape)
  expected = sharding.shard_shape(shape)
  buf, done = None, {}
  for d in sharding._device_assignment:
    idx = index_map[d]
    key = tuple((s.start, s.stop) for s in idx)
    if key in done:
      continue
    piece = data_callback(idx)
    if isinstance(piece, core.Array):
      piece = piece._host_value()
    piece = np.asarray(piece)
    if dtype is not None:
      piece = piece.astype(dtype)
    piece = piece.astype(dtypes.canonicalize_dtype(piece.dtype), copy=False)
    if piece.shape != tuple(expected):
      raise _shard_mismatch(expected, piece.shape, piece.dtype, shape, sharding)
    if buf is None:
      buf = np.empty(shape, piece.dtype)
    buf[idx] = piece
    done[key] = True
  if buf is None:
    buf = np.empty(shape, dtypes.canonicalize_dtype(dtype or np.float32))
  return array_lib.from_host(buf, False, placement)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """A sharded Array of global `shape` from one Array per device of `sharding` (in its
  addressable devices' order, as JAX takes them)."""
  if _multiprocess(sharding):
    return _global().make_array_from_single_device_arrays(shape, sharding, arrays, dtype=dtype)
  shape = tuple(int(d) for d in shape)
  arrays = list(arrays)
  assignment = sharding._device_assignment
  if len(arrays) != len(assignment):
    raise ValueError(f"Expected {len(assignment)} per-device arrays (this is how many devices "
                     f"are addressable by the sharding), but got {len(arrays)}")
  placement = _placement(sharding, shape)
  expected = tuple(sharding.shard_shape(shape))
  index_map = sharding.devices_indices_map(shape)
  buf = None
  weak = True
  for a in arrays:
    value = a._host_value() if isinstance(a, core.Array) else np.asarray(a)
    weak = weak and getattr(a, "weak_type", False)
    if value.shape != expected:
      raise _shard_mismatch(expected, value.shape, value.dtype, shape, sharding)
    if buf is None:
      buf = np.empty(shape, dtype or value.dtype)
  # Each array goes where its own device's index says (arrays sit on their devices in JAX).
  by_device = {}
  for a in arrays:
    d = getattr(a, "_device", None)
    if type(d) is devices.CpuDevice:
      by_device.setdefault(d, a)
  written = set()
  for i, d in enumerate(assignment):
    idx = index_map[d]
    key = tuple((s.start, s.stop) for s in idx)
    if key in written:  # replicas: the global value is replica 0's, as JAX reads it
      continue
    written.add(key)
    a = by_device.get(d, arrays[i])
    buf[idx] = a._host_value() if isinstance(a, core.Array) else np.asarray(a)
  return array_lib.from_host(buf, weak and buf.ndim == 0, placement)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """On one process the local data is the whole array: it is laid out by `sharding`."""
  if _multiprocess(sharding):
    return _global().make_array_from_process_local_data(sharding, local_data, global_shape)
  value = local_data._host_value() if isinstance(local_data, core.Array) \
      else np.asarray(local_data)
  if global_shape is not None and tuple(global_shape) != value.shape:
    raise ValueError(
        "When calling `make_array_from_process_local_data` on a single process, global_shape "
        "should be None or equal to local_data.shape.Got global_shape="
        f"{tuple(global_shape)} and local_data.shape={value.shape}.")
  value = value.astype(dtypes.canonicalize_dtype(value.dtype), copy=False)
  return array_lib.from_host(value, False, _placement(sharding, value.shape))


def unreduced_shards(value, src, dst):
  """The per-device blocks of `value` placed by `dst`, a NamedSharding whose spec leaves mesh
  axes unreduced: the devices along those axes hold partial values summing to `value` (JAX's
  device_put keeps what each device held under `src`, zeros elsewhere; a value they all held
  goes to the first of them). (device, index, replica id, block) per device, in order."""
  mesh, unreduced = dst.mesh, dst.spec.unreduced
  src_map = src.devices_indices_map(value.shape) if hasattr(src, "devices_indices_map") \
      and getattr(src, "mesh", None) is not None else None
  dst_map = dst.devices_indices_map(value.shape)
  names = mesh.axis_names
  groups: dict = {}
  for pos in np.ndindex(*mesh.axis_sizes):
    key = tuple(c for n, c in zip(names, pos) if n not in unreduced)
    groups.setdefault(key, []).append(mesh.devices[pos])
  out = {}
  for members in groups.values():  # in row-major order of the unreduced axes' coordinates
    claimed = np.zeros(value.shape, bool)
    for d in members:
      own = np.zeros(value.shape, bool)
      own[src_map[d] if src_map is not None else ()] = True
      take = own & ~claimed
      claimed |= own
      idx = dst_map[d]
      out[d] = (idx, np.where(take, value, np.zeros((), value.dtype))[idx])
  return [(d, out[d][0], 0, out[d][1]) for d in dst._device_assignment]
