"""`jax.interpreters.batching`: register vmap rules of new primitives.

`primitive_batchers[p](vals, dims, **params) -> (out, out_dim)` is jaxlite's own table;
`fancy_primitive_batchers[p](axis_data, vals, dims, **params)` is its axis-aware table;
`axis_primitive_batchers[p] = rule(axis_size, axis_name, None, vals, dims, **params)` is JAX's
older form, adapted on assignment.
"""
from __future__ import annotations

import numpy as _np

from jaxlite._src.interpreters import batching as _b
from jaxlite._src.interpreters.batching import (  # noqa: F401
    BatchTrace, BatchTracer, AxisData, defbroadcasting, defvectorized, not_mapped,
    primitive_batchers)

fancy_primitive_batchers = _b.axis_primitive_batchers


class _AxisPrimitiveBatchers:
  """Accepts JAX's older axis-rule signature and stores the adapted rule in jaxlite's table."""

  def __setitem__(self, prim, rule):
    def adapted(axis_data, vals, dims, **params):
      # tuples, as JAX passes them (equinox's vprim keeps the dims as a vmap out_axes)
      return rule(axis_data.size, axis_data.name, None, tuple(vals), tuple(dims), **params)
    fancy_primitive_batchers[prim] = adapted

  def __contains__(self, prim):
    return prim in fancy_primitive_batchers


axis_primitive_batchers = _AxisPrimitiveBatchers()


def defreducer(prim, ident=None) -> None:
  """A reduction over an `axes` param; `ident` (JAX's identity element) is not needed here."""
  del ident
  _b.defreducer(prim)


def bdim_at_front(x, bdim, size: int, mesh_axis=None):
  del mesh_axis
  ndim = len(_np.shape(x))
  if bdim is not not_mapped and not -ndim <= bdim < ndim:  # JAX's error, before NumPy's
    raise ValueError(f"axis {bdim} is out of bounds for array of dimension {ndim}")
  return _b.bdim_at_front(x, bdim, size)


def broadcast(x, sz: int, axis: int, mesh_axis=None):
  del mesh_axis
  return _b.broadcast(x, sz, axis)


# Custom vmappable container types (`register_vmappable`): the handlers, by data type.
vmappables: dict = {}


def register_vmappable(data_type, spec_type, axis_size_type, to_elt, from_elt,
                       make_iota) -> None:
  """Records a container type's vmap handlers (jaxlite's vmap maps only arrays and pytrees)."""
  vmappables[data_type] = (spec_type, axis_size_type, to_elt, from_elt, make_iota)


def unregister_vmappable(data_type) -> None:
  del vmappables[data_type]
