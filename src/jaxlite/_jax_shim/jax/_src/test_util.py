"""`jax._src.test_util` (JAX's internal test helpers): the ones JAX's docs use, over jaxlite's
public `jax.test_util` and `jax.make_mesh`."""
from __future__ import annotations

from jaxlite.test_util import *  # noqa: F401,F403


def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
  """A Mesh of the first prod(mesh_shape) devices, its axes Auto unless `axis_types` says
  (device order is the identity on CPU, so `iota_order` changes nothing)."""
  import jaxlite
  from jaxlite.sharding import AxisType
  del iota_order
  if axis_types is None:
    axis_types = (AxisType.Auto,) * len(mesh_shape)
  return jaxlite.make_mesh(tuple(mesh_shape), tuple(axis_names), axis_types=axis_types)
