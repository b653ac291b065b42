"""`jaxlite.experimental.mesh_utils`: arrange CPU devices into N-d meshes.

All CPU devices are equidistant here, so devices are laid out in id order."""
import numpy as np


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                       allow_split_physical_axes=False):
  from jaxlite._src.base import devices as _devices
  mesh_shape = tuple(mesh_shape)
  devs = list(devices) if devices is not None else _devices.devices()
  n = int(np.prod(mesh_shape, dtype=int))
  if n != len(devs):
    raise ValueError(f"Number of devices {len(devs)} must equal the product of mesh_shape "
                     f"{mesh_shape}")
  arr = np.empty(n, dtype=object)
  arr[:] = devs
  return arr.reshape(mesh_shape)


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
                              process_is_granule=False, should_sort_granules_by_key=True,
                              allow_split_physical_axes=False):
  """One host (one granule): the DCN shape must be all ones; result has shape ici*dcn."""
  mesh_shape, dcn_mesh_shape = tuple(mesh_shape), tuple(dcn_mesh_shape)
  if len(mesh_shape) != len(dcn_mesh_shape):
    raise ValueError(f"create_hybrid_device_mesh: mesh_shape {mesh_shape} and dcn_mesh_shape "
                     f"{dcn_mesh_shape} must have the same length")
  if any(d != 1 for d in dcn_mesh_shape):
    raise ValueError(f"create_hybrid_device_mesh: dcn_mesh_shape {dcn_mesh_shape} needs "
                     f"{int(np.prod(dcn_mesh_shape))} granules, but this host has 1")
  return create_device_mesh(mesh_shape, devices)
