"""`vmap`: map a function over an axis of its arguments by running it once on batched values.

Argument handling lives here (in_axes/out_axes as pytree prefixes, the mapped size and JAX's
errors for bad specs); the interpretation itself is `interpreters.batching`.
"""
from __future__ import annotations

import collections
import functools
import inspect

import numpy as np

from jaxlite._src.compat import traceback_util
from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.transforms.call_primitives import as_traceable_arg

_IN_AXES_TOP = ("vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                "positional arguments passed to the function, but got")


def _is_none(x) -> bool:
  return x is None


def _check_axes_leaves(axes, which: str) -> None:
  leaves = tree_util.tree_leaves(axes, is_leaf=_is_none)
  if not all(type(a) is int or a is None for a in leaves):
    raise TypeError(f"vmap {which} must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {axes}.")


def _wraps(fun):
  """functools.wraps that, as JAX's, skips the metadata of a callable whose `__name__` is not a
  string (an equinox Module inside a traced body answers a sentinel)."""
  def deco(f):
    try:
      return functools.wraps(fun)(f)
    except TypeError:
      return f
  return deco


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
  """Vectorizes `fun` over the axes `in_axes` of its arguments; results mapped at `out_axes`."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  if not (in_axes is None or type(in_axes) in (int, tuple)):
    raise TypeError(f"{_IN_AXES_TOP} {in_axes}.")
  _check_axes_leaves(in_axes, "in_axes")
  _check_axes_leaves(out_axes, "out_axes")

  @_wraps(fun)
  @traceback_util.api_boundary
  def vmap_f(*args, **kwargs):
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError(f"{_IN_AXES_TOP} len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    flat_axes = _flat_in_axes(in_axes, args, kwargs)
    vals = [_mapped_arg(x) if ax is not None else x for x, ax in zip(flat, flat_axes)]
    size = _mapped_axis_size(fun, flat, flat_axes, args, kwargs, axis_size)
    dims = [None if ax is None else ax % len(batching.shape_of(v))
            for v, ax in zip(vals, flat_axes)]
    out_tree_box = []

    def flat_fun(*flat_in):
      a, kw = tree_util.tree_unflatten(in_tree, flat_in)
      out_flat, out_tree = tree_util.tree_flatten(fun(*a, **kw))
      out_tree_box.append(out_tree)
      return [_check_output(o) for o in out_flat]

    axis_data = batching.AxisData(axis_name, size, spmd_axis_name)
    out_vals, out_dims = batching.batch_flat(flat_fun, axis_data, vals, dims)
    out_tree = out_tree_box[0]
    dests = _flat_out_axes(out_axes, out_tree)
    outs = [_to_out_axis(v, d, dest, size, out_tree, dests, i)
            for i, (v, d, dest) in enumerate(zip(out_vals, out_dims, dests))]
    return tree_util.tree_unflatten(out_tree, outs)

  vmap_f.__doc__ = f"Vectorized version of {getattr(fun, '__name__', fun)}."
  return vmap_f


# --- in_axes -----------------------------------------------------------------------------------

def _flat_in_axes(in_axes, args, kwargs) -> list:
  """One axis (or None) per flat leaf of (args, kwargs); keyword arguments map along 0."""
  kw_axes = [0] * len(tree_util.tree_leaves(kwargs))
  if not isinstance(in_axes, tuple):
    return [in_axes] * len(tree_util.tree_leaves(args)) + kw_axes
  return _broadcast_prefix("vmap in_axes", in_axes, args) + kw_axes


def _broadcast_prefix(name: str, prefix, full) -> list:
  out = []

  def spread(axis, subtree):
    out.extend([axis] * len(tree_util.tree_leaves(subtree)))

  try:
    tree_util.tree_map(spread, prefix, full, is_leaf=_is_none)
  except ValueError:
    errors = tree_util.prefix_errors(prefix, full, is_leaf=_is_none)
    if not errors:
      raise
    details = "\n".join(f"  {e(name)}" for e in errors)
    raise ValueError(f"{name} specification must be a tree prefix of the corresponding value; "
                     f"\n  Mismatch details ({len(errors)} found):\n{details}") from None
  return out


def _mapped_arg(x):
  if not core.valid_jaxtype(x):
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")
  return as_traceable_arg(x)


def _mapped_axis_size(fun, flat, flat_axes, args, kwargs, axis_size) -> int:
  mapped = [(i, ax) for i, ax in enumerate(flat_axes) if ax is not None]
  if not mapped:
    if axis_size is not None:
      return axis_size
    if not flat:
      raise ValueError("vmap wrapped function must be passed at least one argument containing an "
                       f"array or axis_size must be specified, got empty *args={args} and "
                       f"**kwargs={kwargs}")
    raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must "
                     "be specified")
  sizes = []
  for i, ax in mapped:
    shape = np.shape(flat[i])
    if not -len(shape) <= ax < len(shape):
      min_rank = ax + 1 if ax >= 0 else -ax
      raise ValueError(f"vmap was requested to map its argument along axis {ax}, which implies "
                       f"that its rank should be at least {min_rank}, but is only {len(shape)} "
                       f"(its shape is {shape})")
    sizes.append(shape[ax])
  if len(set(sizes)) == 1 and axis_size in (None, sizes[0]):
    return sizes[0]
  raise ValueError(_inconsistent_sizes_msg(fun, flat, mapped, sizes, args, kwargs, axis_size))


def _inconsistent_sizes_msg(fun, flat, mapped, sizes, args, kwargs, axis_size) -> str:
  paths = [p for p, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]]
  names = _param_names(fun)
  lines = [] if axis_size is None else [f"the `axis_size` argument was {axis_size}"]
  by_size = collections.Counter(sizes)
  first_of = {}
  for (i, ax), sz in zip(mapped, sizes):
    first_of.setdefault(sz, (i, ax))
  for rank, (sz, count) in enumerate(by_size.most_common()):
    i, ax = first_of[sz]
    where = (f"axis {ax} of {_arg_desc(paths[i], names)} of type "
             f"{core.get_aval(as_traceable_arg(flat[i])).str_short(short_dtypes=False)}")
    if count == 1:
      lines.append(f"one axis had size {sz}: {where}")
    else:
      many = "most" if rank == 0 else "some"
      lines.append(f"{many} axes ({count} of them) had size {sz}, e.g. {where}")
  return ("vmap got inconsistent sizes for array axes to be mapped:\n"
          + ";\n".join(f"  * {line}" for line in lines))


def _param_names(fun) -> tuple:
  try:
    return tuple(inspect.signature(fun).parameters)
  except (TypeError, ValueError):
    return ()


def _arg_desc(path, names) -> str:
  """`argument x['a']` for positional arguments, `kwargs['b']` for keyword ones."""
  top, idx, rest = path[0], path[1], path[2:]
  if top.idx == 1:
    return "kwargs" + tree_util.keystr((idx,) + tuple(rest))
  if idx.idx < len(names):
    return f"argument {names[idx.idx]}" + tree_util.keystr(tuple(rest))
  return f"args[{idx.idx}]" + tree_util.keystr(tuple(rest))


# --- outputs -----------------------------------------------------------------------------------

def _check_output(x):
  if isinstance(x, core.Array):  # tracers, ArrayImpl and typed PRNG key arrays
    return x
  if type(x) is ad.Zero:  # a symbolic zero passes through unbatched, as in JAX (equinox's
    return x              # vprim JVP rules vmap functions returning them)
  if type(x) in (int, float, complex, bool) or isinstance(x, (np.ndarray, np.generic)) \
      or type(x) in dtypes.typed_scalar_types:
    return as_traceable_arg(x)
  raise TypeError(f"Output from batched function {x!r} with type {type(x)} is not a valid JAX "
                  "type")


class PytreeLeaf:
  """Stands for an output leaf when explaining an out_axes mismatch."""

  def __repr__(self):
    return "pytree leaf"


def _flat_out_axes(out_axes, out_tree) -> list:
  if out_axes is None or type(out_axes) is int:
    return [out_axes] * out_tree.num_leaves
  skeleton = tree_util.tree_unflatten(out_tree, [PytreeLeaf() for _ in range(out_tree.num_leaves)])
  return _broadcast_prefix("vmap out_axes", out_axes, skeleton)


def _to_out_axis(x, bdim, dest, size, out_tree, dests, i):
  """A batched output moved to its requested axis; an unbatched one broadcast there."""
  if type(x) is ad.Zero:
    return x
  if dest is None:
    if bdim is not None:
      # JAX names the leaf by its path in the outputs (flax's nnx tests match on it).
      full = tree_util.tree_unflatten(out_tree, dests)
      paths = tree_util.tree_flatten_with_path(full, is_leaf=lambda a: a is None)[0]
      raise ValueError(f"at vmap out_axes{tree_util.keystr(paths[i][0])}, got axis spec None "
                       f"but output was batched on axis {bdim}")
    return x
  nd = len(batching.shape_of(x)) + (bdim is None)
  if not -nd <= dest < nd:
    raise ValueError(f"axis {dest} is out of bounds for array of dimension {nd}")
  return batching.bdim_to(x, bdim, dest % nd, size)
