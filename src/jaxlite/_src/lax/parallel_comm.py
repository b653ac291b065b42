"""Collectives that move data between the members of named axes: ppermute (pshuffle), all_to_all,
psum_scatter (reduce_scatter), pbroadcast, and the varying-manual-axes casts pvary and
psum_invariant that shard_map's check_vma inserts.

Each primitive's rules sit under it: impl (a device program meeting its peers through
`runtime.exchange`), abstract eval, JVP (all are linear), transpose, and the batching rule that
makes it a data movement along the batch axis under `vmap(axis_name=...)`.
"""
from __future__ import annotations

import sys

import numpy as np

from jaxlite._src.base import core, tree_util
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.lax.parallel import (_axes_tuple, _check_bound, _readonly, axis_index,
                                       axis_is_bound, axis_size, groups_in_vmap, index_groups,
                                       psum_p)
from jaxlite._src.spmd import runtime


def _group(names, axis_index_groups=None):
  return runtime.group_of(_axes_tuple(names), axis_index_groups)


def _define(name, abstract_eval, impl, transpose, batcher, vma_rule="same", meets_peers=True):
  """A linear collective: its impl, abstract eval, linear JVP, transpose and vmap rule.
  `meets_peers`: whether its impl rendezvous with its group (runtime.meets_peers)."""
  prim = core.Primitive(name)
  prim.meets_peers = meets_peers
  prim.def_impl(impl)
  prim.def_abstract_eval(abstract_eval)
  ad.deflinear(prim, transpose)
  batching.axis_primitive_batchers[prim] = batcher
  prim.vma_rule = vma_rule  # how shard_map's check_vma types its result (shard_map.py)
  return prim


def _rebind_other_axis(prim, x, bdim, params, shift):
  """A collective over axes this vmap does not own: bind with the batch axis in front and the
  per-example dimension params shifted past it."""
  if bdim is None:
    return prim.bind(x, **params), None
  x = batching.moveaxis(x, bdim, 0)
  return prim.bind(x, **{**params, **{k: params[k] + 1 for k in shift}}), 0


def _own_axis(axis_data, names) -> bool:
  names = _axes_tuple(names)
  if axis_data.name is None or axis_data.name not in names:
    return False
  if len(names) > 1:
    raise NotImplementedError(f"collective over axes {names} mixing a vmap axis with others")
  return True


# --- ppermute ----------------------------------------------------------------------------------

def _ppermute_abstract(x, *, axis_name, perm):
  _check_bound(_axes_tuple(axis_name), "ppermute")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


def _ppermute_impl(x, *, axis_name, perm):
  _check_bound(_axes_tuple(axis_name), "ppermute")
  g = _group(axis_name)
  x = np.asarray(x)

  def combine(blocks):  # one new buffer per receiver; members no pair sends to get zeros
    out = [None] * len(blocks)
    for src, dst in perm:
      out[dst] = _readonly(np.array(blocks[src]))
    return out
  got = runtime.exchange(g, x, combine)[g.rank]
  return np.zeros_like(x) if got is None else got


def _ppermute_transpose(ct, x, *, axis_name, perm):
  return [ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))]


def _ppermute_batcher(axis_data, vals, dims, *, axis_name, perm):
  (x,), (bdim,) = vals, dims
  if not _own_axis(axis_data, axis_name):
    return _rebind_other_axis(ppermute_p, x, bdim, dict(axis_name=axis_name, perm=perm), ())
  n = axis_data.size
  x = batching.bdim_at_front(x, bdim, n)
  src_of = dict((d, s) for s, d in perm)
  rows = []
  shape = batching.shape_of(x)
  for dst in range(n):
    s = src_of.get(dst)
    if s is None:
      rows.append(ew.mul_p.bind(_row(x, 0, shape), _zero_like(x)))
    else:
      rows.append(_row(x, s, shape))
  return shape_prims.concatenate_p.bind(*rows, dimension=0), 0


def _row(x, i, shape):
  from jaxlite._src.lax import slicing
  return slicing.slice_p.bind(x, start_indices=(i,) + (0,) * (len(shape) - 1),
                              limit_indices=(i + 1,) + shape[1:], strides=None)


def _zero_like(x):
  dt = core.get_aval(x).dtype
  return np.zeros((), dt)


ppermute_p = _define("ppermute", _ppermute_abstract, _ppermute_impl, _ppermute_transpose,
                     _ppermute_batcher)


def ppermute(x, axis_name, perm):
  """Sends each member's `x` to another: `perm` lists (source, destination) index pairs along
  `axis_name`; members that receive nothing get zeros."""
  perm = tuple((int(s), int(d)) for s, d in perm)
  names = _axes_tuple(axis_name)
  if not all(axis_is_bound(a) for a in names):
    if core.current_trace() is core.eval_trace and not any(
        isinstance(leaf, core.Tracer) for leaf in tree_util.tree_leaves(x)):
      # JAX evaluates an unbound ppermute eagerly and has no rule for it
      raise NotImplementedError("Evaluation rule for 'ppermute' not implemented")
    if core.vma_typing is not None:  # in a check_vma shard_map body: JAX's AssertionError
      core.vma_typing.check_bound(ppermute_p, names)
    _check_bound(names, "ppermute")
  n = axis_size(names)
  srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
  for s, d in perm:
    if not (0 <= s < n and 0 <= d < n):
      raise ValueError(f"ppermute permutation pair {(s, d)} is out of range for axis "
                       f"{axis_name} of size {n}")
  return tree_util.tree_map(
      lambda leaf: ppermute_p.bind(asarg(leaf), axis_name=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
  """Member i receives member perm[i]'s `x` (a ppermute with the pairs (perm[i], i))."""
  perm = [int(p) for p in perm]
  if sorted(perm) != list(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


# --- all_to_all --------------------------------------------------------------------------------

def _a2a_shape(shape, split_axis, concat_axis, n):
  shape = list(shape)
  shape[split_axis] //= n
  shape[concat_axis] *= n
  return tuple(shape)


def _a2a_abstract(x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled):
  _check_bound(_axes_tuple(axis_name), "all_to_all")
  n = axis_size(axis_name) if axis_index_groups is None else len(axis_index_groups[0])
  return ShapedArray(_a2a_shape(x.shape, split_axis, concat_axis, n), x.dtype, x.weak_type)


def _a2a_impl(x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled):
  _check_bound(_axes_tuple(axis_name), "all_to_all")
  g = _group(axis_name, axis_index_groups)

  def combine(blocks):  # receiver j joins chunk j of every sender, in sender order
    chunks = [np.split(np.asarray(b), g.size, axis=split_axis) for b in blocks]
    return [_readonly(np.concatenate([c[j] for c in chunks], axis=concat_axis))
            for j in range(g.size)]
  return runtime.exchange(g, np.asarray(x), combine)[g.rank]


def _a2a_transpose(ct, x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled):
  return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                            concat_axis=split_axis, axis_index_groups=axis_index_groups,
                            tiled=tiled)]


def _a2a_batcher(axis_data, vals, dims, *, axis_name, split_axis, concat_axis,
                 axis_index_groups, tiled):
  # JAX's all_to_all rule refuses groups under any vmap, over its axis or not
  groups_in_vmap(axis_index_groups, "all_to_all with axis_index_groups under vmap: not "
                 "supported (as in JAX 0.10.2). Please open a feature request!")
  (x,), (bdim,) = vals, dims
  params = dict(axis_name=axis_name, split_axis=split_axis, concat_axis=concat_axis,
                axis_index_groups=axis_index_groups, tiled=tiled)
  if not _own_axis(axis_data, axis_name):
    return _rebind_other_axis(all_to_all_p, x, bdim, params, ("split_axis", "concat_axis"))
  n = axis_data.size
  x = batching.bdim_at_front(x, bdim, n)  # (sender i, *example)
  shape = batching.shape_of(x)
  s, c = split_axis + 1, concat_axis + 1
  # Split the split axis into (receiver j, chunk), then bring j to the front and the sender
  # axis next to the concat axis, and merge the two.
  x = _reshape(x, shape[:s] + (n, shape[s] // n) + shape[s + 1:])
  c1 = c if c < s else c + 1  # the concat axis after that split (the chunk axis when c == s)
  x = batching.moveaxis(x, s, 0)  # (j, i, ...)
  c2 = c1 + 1 if c1 < s else c1
  x = batching.moveaxis(x, 1, c2 - 1)  # the sender axis just before the concat axis
  out_example = _a2a_shape(shape[1:], split_axis, concat_axis, n)
  return _reshape(x, (n,) + out_example), 0


def _reshape(x, shape):
  return shape_prims.reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


all_to_all_p = _define("all_to_all", _a2a_abstract, _a2a_impl, _a2a_transpose, _a2a_batcher)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Splits `x` along `split_axis` into one chunk per member, sends chunk j to member j, and
  joins what each member receives along `concat_axis` (a new axis unless `tiled`)."""
  groups = index_groups(axis_index_groups, _axes_tuple(axis_name), "all_to_all")
  n = axis_size(axis_name) if groups is None else len(groups[0])  # (JAX's: the group's size)

  def one(leaf):
    leaf = asarg(leaf)
    nd = len(core.get_aval(leaf).shape)
    s, c = split_axis % nd, concat_axis % nd
    size = core.get_aval(leaf).shape[s]
    if tiled:
      if size % n:
        raise ValueError(f"all_to_all: the size of split_axis {s} ({size}) must be divisible "
                         f"by the size of axis {axis_name} ({n})")
    elif size != n:
      raise ValueError(f"all_to_all: the size of split_axis {s} ({size}) must equal the size "
                       f"of axis {axis_name} ({n}) when tiled=False")
    if not tiled and s != c:
      if s < c:
        c += 1
      else:
        s += 1
      leaf = _insert_axis(leaf, c)
    out = all_to_all_p.bind(leaf, axis_name=axis_name, split_axis=s, concat_axis=c,
                            axis_index_groups=groups, tiled=bool(tiled))
    if not tiled and s != c:
      out = shape_prims.squeeze_p.bind(out, dimensions=(s,))
    return out
  return tree_util.tree_map(one, x)



def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swaps the named axis `axis_name` with the positional axis `axis` (whose size must equal the
  named axis's): `all_to_all` with the split and concat axes both `axis`."""
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)

def _insert_axis(x, axis):
  shape = core.get_aval(x).shape
  new = shape[:axis] + (1,) + shape[axis:]
  return shape_prims.broadcast_in_dim_p.bind(
      x, shape=new, broadcast_dimensions=tuple(i for i in range(len(new)) if i != axis),
      sharding=None)


# --- psum_scatter (reduce_scatter) -------------------------------------------------------------

def _rs_shape(shape, dim, n, tiled):
  if tiled:
    return shape[:dim] + (shape[dim] // n,) + shape[dim + 1:]
  return shape[:dim] + shape[dim + 1:]


def _rs_abstract(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size, tiled):
  _check_bound(_axes_tuple(axis_name), "psum_scatter")
  return ShapedArray(_rs_shape(x.shape, scatter_dimension, axis_size, tiled), x.dtype,
                     x.weak_type)


def _rs_impl(x, *, scatter_dimension, axis_name, axis_index_groups, axis_size, tiled):
  _check_bound(_axes_tuple(axis_name), "psum_scatter")
  g = _group(axis_name, axis_index_groups)

  def combine(blocks):  # sum once; each member's piece is a view of the sum
    total = _readonly(np.sum(np.stack(blocks), axis=0))
    pieces = np.split(total, g.size, axis=scatter_dimension)
    return pieces if tiled else [np.squeeze(p, scatter_dimension) for p in pieces]
  return runtime.exchange(g, np.asarray(x), combine)[g.rank]


def _rs_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups, axis_size, tiled):
  from jaxlite._src.lax.parallel import all_gather_p
  return [all_gather_p.bind(ct, all_gather_dimension=scatter_dimension, axis_name=axis_name,
                            axis_index_groups=axis_index_groups, axis_size=axis_size,
                            tiled=tiled)]


def _rs_batcher(axis_data, vals, dims, *, scatter_dimension, axis_name, axis_index_groups,
                axis_size, tiled):
  (x,), (bdim,) = vals, dims
  params = dict(scatter_dimension=scatter_dimension, axis_name=axis_name,
                axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  if not _own_axis(axis_data, axis_name):
    return _rebind_other_axis(reduce_scatter_p, x, bdim, params, ("scatter_dimension",))
  groups_in_vmap(axis_index_groups)
  n = axis_data.size
  if bdim is None:
    total = ew.mul_p.bind(x, np.array(n, core.get_aval(x).dtype))
  else:
    total = psum_p.bind(batching.moveaxis(x, bdim, 0), axes=(0,), axis_index_groups=None)
  shape = batching.shape_of(total)
  d = scatter_dimension
  if tiled:
    total = _reshape(total, shape[:d] + (n, shape[d] // n) + shape[d + 1:])
  return batching.moveaxis(total, d, 0), 0


reduce_scatter_p = _define("reduce_scatter", _rs_abstract, _rs_impl, _rs_transpose, _rs_batcher)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """The sum over the members of `axis_name`, scattered along `scatter_dimension`: member i
  keeps piece i (a slice when `tiled`, else the dimension, of size the axis size, indexed)."""
  names = _axes_tuple(axis_name)
  groups = index_groups(axis_index_groups, names, "psum_scatter")
  n = axis_size(names) if groups is None else len(groups[0])  # (JAX's: the group's size)

  def one(leaf):
    leaf = asarg(leaf)
    shape = core.get_aval(leaf).shape
    d = scatter_dimension % max(len(shape), 1)
    if tiled and shape[d] % n:
      raise ValueError(f"psum_scatter: scatter_dimension {d} of size {shape[d]} must be "
                       f"divisible by the size of axis {axis_name} ({n}) when tiled=True")
    if not tiled and shape[d] != n:
      raise ValueError(f"psum_scatter: scatter_dimension {d} of size {shape[d]} must equal "
                       f"the size of axis {axis_name} ({n}) when tiled=False")
    return reduce_scatter_p.bind(leaf, scatter_dimension=d, axis_name=names,
                                 axis_index_groups=groups, axis_size=n,
                                 tiled=bool(tiled))
  return tree_util.tree_map(one, x)


# --- pbroadcast --------------------------------------------------------------------------------

def _pb_abstract(x, *, axis_name, source):
  _check_bound(_axes_tuple(axis_name), "pbroadcast")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


def _pb_impl(x, *, axis_name, source):
  _check_bound(_axes_tuple(axis_name), "pbroadcast")
  g = _group(axis_name)
  return runtime.exchange(g, np.asarray(x), lambda blocks: _readonly(np.array(blocks[source])))


def _pb_transpose(ct, x, *, axis_name, source):
  # Every member read the source's value: the source gets the sum of all cotangents.
  total = psum_p.bind(ct, axes=_axes_tuple(axis_name), axis_index_groups=None)
  is_source = ew.eq_p.bind(axis_index(axis_name), np.int32(source))
  mask = casts.convert_element_type_p.bind(is_source, new_dtype=core.get_aval(ct).dtype,
                                        weak_type=False)
  return [ew.mul_p.bind(total, mask)]


def _pb_batcher(axis_data, vals, dims, *, axis_name, source):
  (x,), (bdim,) = vals, dims
  if not _own_axis(axis_data, axis_name):
    return _rebind_other_axis(pbroadcast_p, x, bdim, dict(axis_name=axis_name, source=source),
                              ())
  if bdim is None:
    return x, None
  x = batching.moveaxis(x, bdim, 0)
  return shape_prims.squeeze_p.bind(_row(x, source, batching.shape_of(x)), dimensions=(0,)), \
      None


pbroadcast_p = _define("pbroadcast", _pb_abstract, _pb_impl, _pb_transpose, _pb_batcher)


def pbroadcast(x, axis_name, source):
  """Every member of `axis_name` gets member `source`'s `x`."""
  return tree_util.tree_map(
      lambda leaf: pbroadcast_p.bind(asarg(leaf), axis_name=axis_name, source=int(source)), x)


# --- pvary and psum_invariant: casts between invariant and varying values ------------------------

def _pvary_abstract(x, *, axes):
  _check_bound(axes, "pvary")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


def _pvary_batcher(axis_data, vals, dims, *, axes):
  # Marking a value as varying does not change it.
  (x,), (bdim,) = vals, dims
  others = tuple(a for a in axes if a != axis_data.name)
  return (pvary_p.bind(x, axes=others) if others else x), bdim


pvary_p = _define("pvary", _pvary_abstract, lambda x, *, axes: x,
                  lambda ct, x, *, axes: [psum_invariant_p.bind(ct, axes=axes)],
                  _pvary_batcher, vma_rule="add", meets_peers=False)


def _psum_invariant_abstract(x, *, axes):
  _check_bound(axes, "psum")
  return ShapedArray(x.shape, x.dtype, x.weak_type)


def _psum_invariant_impl(x, *, axes):
  return psum_p.impl(x, axes=axes, axis_index_groups=None)


def _psum_invariant_batcher(axis_data, vals, dims, *, axes):
  out, dim = batching.axis_primitive_batchers[psum_p](axis_data, vals, dims, axes=axes,
                                                      axis_index_groups=None)
  return out, dim


psum_invariant_p = _define("psum_invariant", _psum_invariant_abstract, _psum_invariant_impl,
                           lambda ct, x, *, axes: [pvary_p.bind(ct, axes=axes)],
                           _psum_invariant_batcher, vma_rule="remove")


def pcast(x, axis_name, *, to: str):
  """`to='varying'`: marks `x` as varying over `axis_name` inside shard_map (a pvary)."""
  if to != "varying":
    raise ValueError(f"pcast: only to='varying' is supported, got to={to!r}")
  names = _axes_tuple(axis_name)
  return tree_util.tree_map(lambda leaf: pvary_p.bind(asarg(leaf), axes=names), x)


from jaxlite._src.lax import parallel as _parallel  # noqa: E402
from jaxlite._src.lax import parallel_lowering  # noqa: E402  (the collectives' XLA rules)
parallel_lowering.register_rules(_parallel, sys.modules[__name__])

from jaxlite._src.transforms import ad_api as _ad_api  # noqa: E402
_ad_api.register_above(pvary_p=pvary_p)
