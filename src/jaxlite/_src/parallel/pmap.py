"""`jax.pmap`: maps a function over a leading array axis, one slice per device, on the same
machinery as shard_map (a 1-d mesh over the devices, each device's program run concurrently)."""
from __future__ import annotations

import functools
import itertools

import numpy as np

from jaxlite._src.base import core, tree_util
from jaxlite._src.base import devices as devices_lib

_fresh_names = itertools.count()


def _as_tuple(x) -> tuple:
  return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
  """Runs `fun` on each device on one slice of its mapped arguments (`in_axes`); collectives
  inside see the mapped axis as `axis_name`. Outputs are stacked along `out_axes`."""
  if fun is None:
    return lambda f: pmap(f, axis_name, in_axes=in_axes, out_axes=out_axes,
                          static_broadcasted_argnums=static_broadcasted_argnums,
                          devices=devices, backend=backend, axis_size=axis_size)
  static = set(_as_tuple(static_broadcasted_argnums))

  def prepare(args, kwargs):
    """What a call runs on: (args, dynamic positions, flat dynamic leaves, their tree, each
    leaf's mapped axis, the number of devices, the devices)."""
    dyn_idx = [i for i in range(len(args)) if i not in static]
    dyn = tuple(args[i] for i in dyn_idx)
    axes = in_axes
    if isinstance(in_axes, tuple) and static and len(in_axes) == len(args):
      axes = tuple(in_axes[i] for i in dyn_idx)
    if kwargs:  # as JAX: in_axes covers the positional arguments; keywords map over axis 0
      axes = (axes if isinstance(axes, tuple) else (axes,) * len(dyn)) + (0,)
      dyn = dyn + (kwargs,)
    flat_axes = _in_axes_leaves(axes, dyn)
    leaves, tree = tree_util.tree_flatten(dyn)
    _check_ranks(leaves, flat_axes)
    mapped_sizes = [np.shape(x)[a] for x, a in zip(leaves, flat_axes) if a is not None]
    if not mapped_sizes:
      raise ValueError("pmap requires at least one argument with a mapped axis")
    devs = list(devices) if devices is not None else devices_lib.devices()
    # As JAX: one device per element of the first mapped axis, at most all of them; arguments
    # whose mapped axis does not split evenly over those devices raise IndivisibleError.
    n = min(mapped_sizes[0], len(devs))
    return args, dyn_idx, leaves, tree, flat_axes, n, devs[:n]

  @functools.wraps(fun)
  def mapped(*args, **kwargs):
    return _run(*prepare(args, kwargs))

  cache = {}

  def _entry(args, dyn_idx, leaves, tree, flat_axes, n, devs):
    """(cache key, the built call) for a prepared call."""
    statics = tuple((i, args[i]) for i in sorted(static) if i < len(args))
    key = (statics, tree, tuple(flat_axes), tuple(devs))
    jitted = cache.get(key)
    if jitted is None:
      _check_divisible(leaves, flat_axes, devs, axis_name)
      jitted = cache[key] = _build(fun, args, dyn_idx, tree, flat_axes, devs)
    return key, jitted

  def _run(args, dyn_idx, leaves, tree, flat_axes, n, devs):
    _, jitted = _entry(args, dyn_idx, leaves, tree, flat_axes, n, devs)
    otree, flat_out = jitted(*leaves)
    return tree_util.tree_unflatten(otree(), flat_out)

  def lower(*args, **kwargs):
    """`pmap(f).lower(*args)`: the program a call on these arguments runs (the jit of its
    shard_map over the devices), to print or compile; the compiled program is called with
    arguments like these."""
    prepared = prepare(args, kwargs)
    key, call = _entry(*prepared)
    leaves = prepared[2]

    def run(*args, **kwargs):
      again = prepare(args, kwargs)
      if _entry(*again)[0] != key:
        raise TypeError("Function compiled with input pytree does not match the input pytree "
                        "it was called with: the compiled pmap was lowered for other arguments "
                        "(their tree, mapped axes, static values or devices differ).")
      return _run(*again)
    return PmapLowered(call.jitted.lower(*leaves), run)

  mapped.lower = lower

  def _build(fun, args, dyn_idx, tree, flat_axes, devs):
    from jaxlite._src.transforms.jit import jit
    from jaxlite._src.lax import parallel_comm
    from jaxlite._src.lax import shape as shape_prims
    from jaxlite._src.parallel.shard_map import shard_map
    from jaxlite._src.sharding.mesh import AxisType, Mesh
    from jaxlite._src.sharding.partition_spec import PartitionSpec as P
    name = axis_name if axis_name is not None else "_internal_pmap_axis_name"
    mesh = Mesh(np.array(devs, dtype=object), (name,), (AxisType.Auto,))
    specs = tuple(P() if a is None else P(name) for a in flat_axes)
    out_tree_box = []
    template = list(args)

    def body(*blocks):
      blocks = [b if a is None else shape_prims.squeeze_p.bind(b, dimensions=(0,))
                for b, a in zip(blocks, flat_axes)]
      full = list(template)
      vals = tree_util.tree_unflatten(tree, blocks)
      for i, v in zip(dyn_idx, vals):
        full[i] = v
      kw = vals[len(dyn_idx)] if len(vals) > len(dyn_idx) else {}  # the keyword arguments
      outs, otree = tree_util.tree_flatten(fun(*full, **kw))
      out_tree_box.append(otree)
      return [parallel_comm._insert_axis(o, 0) for o in outs]

    def _fun(*leaves):
      moved = [x if a in (None, 0) else _moveaxis(x, a) for x, a in zip(leaves, flat_axes)]
      flat_out = shard_map(body, mesh=mesh, in_specs=specs, out_specs=P(name),
                           check_vma=False)(*moved)
      otree = out_tree_box[-1]
      oaxes = tree_util._broadcast_leaves(out_axes, tree_util.tree_unflatten(
          otree, [0] * otree.num_leaves), lambda x: x is None or isinstance(x, int))
      res = []
      for o, a in zip(flat_out, oaxes):
        if a is None:  # an unmapped output: every device holds the same value
          res.append(shape_prims.squeeze_p.bind(_first(o), dimensions=(0,)))
        else:
          res.append(o if a == 0 else _moveaxis(o, 0, a))
      return res

    jitted = jit(_fun)

    def call(*leaves):
      outs = jitted(*leaves)
      otree = out_tree_box[-1]
      oaxes = tree_util._broadcast_leaves(out_axes, tree_util.tree_unflatten(
          otree, [0] * otree.num_leaves), lambda x: x is None or isinstance(x, int))
      return (lambda: otree), [_place(o, a, mesh, name) for o, a in zip(outs, oaxes)]
    call.jitted = jitted  # (what `lower` lowers)
    return call

  return mapped


class PmapLowered:
  """`pmap(f).lower(...)`: the lowered jit of the mapped program; `compile` gives the function
  to call with the pmapped function's own arguments."""

  def __init__(self, lowered, run):
    self._lowered, self._run = lowered, run

  def as_text(self, dialect=None) -> str:
    return self._lowered.as_text(dialect)

  def cost_analysis(self):
    return self._lowered.cost_analysis()

  def compile(self, compiler_options=None):
    return PmapCompiled(self._lowered.compile(compiler_options), self._run)


class PmapCompiled:
  """A compiled pmap: called as the pmapped function is, on arguments like those lowered."""

  def __init__(self, compiled, run):
    self._compiled, self._run = compiled, run

  def as_text(self) -> str:
    return self._compiled.as_text()

  def cost_analysis(self):
    return self._compiled.cost_analysis()

  def __call__(self, *args, **kwargs):
    return self._run(*args, **kwargs)


_IN_AXES_HINT = (
    "\n\nThe 'full pytree' here is the tuple of arguments passed positionally to the pmapped "
    "function, and the value of `in_axes` must be a tree prefix of that tuple. But it was not "
    "a prefix.\n\nCheck that the value of the `in_axes` argument to `pmap` is a tree prefix of "
    "the tuple of arguments passed positionally to the pmapped function.")


def _axis_leaf(x) -> bool:
  return x is None or isinstance(x, int)


def _in_axes_leaves(in_axes, dyn) -> list:
  """One mapped axis (or None) per argument leaf, with JAX's prefix error."""
  try:
    return tree_util._broadcast_leaves((in_axes,), (dyn,), _axis_leaf)
  except ValueError:
    err = next(tree_util._prefix_error((), (in_axes,), (dyn,), _axis_leaf), None)
    if err is None:
      raise
    raise ValueError(str(err("pmap in_axes")) + _IN_AXES_HINT) from None


def _check_ranks(leaves, flat_axes):
  """Every mapped leaf must have the axis `in_axes` names. As JAX 0.10.2: the first mapped leaf
  sizes the map, so a bad one there is an IndexError (JAX indexes its shape); a later one is the
  ValueError of JAX's jit-level sharding check."""
  first = True
  for i, (x, a) in enumerate(zip(leaves, flat_axes)):
    if a is None:
      continue
    ndim = np.ndim(x)
    if not -ndim <= a < ndim:
      msg = (f"pmap: argument flat_args[{i}] of rank {ndim} (shape {np.shape(x)}) is mapped over "
             f"axis {a} (in_axes), which it does not have; pass an array with a leading axis "
             f"to map, or mark the argument unmapped (in_axes None or static_broadcasted_argnums)")
      raise (IndexError if first else ValueError)(msg)
    first = False


def _check_divisible(leaves, flat_axes, devs, axis_name):
  from jaxlite._src.sharding.mesh import AxisType, Mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  from jaxlite._src.sharding.partition_spec import PartitionSpec as P
  name = axis_name if axis_name is not None else "_internal_pmap_axis_name"
  sharding = NamedSharding(Mesh(np.array(devs, dtype=object), (name,), (AxisType.Auto,)), P(name))
  for x, a in zip(leaves, flat_axes):
    if a is not None:
      shape = list(np.shape(x))
      shape.insert(0, shape.pop(a))
      sharding.shard_shape(tuple(shape))


def _place(out, axis, mesh, name):
  """A mapped output as JAX gives it: sharded over the pmap mesh along `axis`."""
  from jaxlite._src.base import array
  from jaxlite._src.sharding.named_sharding import NamedSharding
  from jaxlite._src.sharding.partition_spec import PartitionSpec as P
  if axis is None or not isinstance(out, array.ArrayImpl):
    return out
  spec = P(*([None] * axis), name)
  return array.from_host(array.host_value(out), out.weak_type, NamedSharding(mesh, spec))


def _first(x):
  from jaxlite._src.lax import slicing
  shape = core.get_aval(x).shape
  return slicing.slice_p.bind(x, start_indices=(0,) * len(shape),
                              limit_indices=(1,) + shape[1:], strides=None)


def _moveaxis(x, src, dst=0):
  from jaxlite._src.interpreters import batching
  return batching.moveaxis(x, src, dst)
