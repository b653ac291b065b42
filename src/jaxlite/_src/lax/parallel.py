"""Collectives over named axes: psum, pmax, pmin, pmean, all_gather and axis_index (the data
movers ppermute, all_to_all, psum_scatter, pbroadcast and pvary are in parallel_comm.py).

Under `vmap(axis_name=...)` a collective over that axis is a reduction, gather or iota along the
batch axis (its batching rule). Inside shard_map bodies names are mesh axes: while the body is
traced `spmd.runtime.bind_axes` binds them, and when each device's program runs its impl meets
the group's other devices through `runtime.exchange`.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds, dtypes, tree_util
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.creation import iota_p
from jaxlite._src.lax.elementwise_functions import asarg, weak_scalar
from jaxlite._src.lax.reductions import _check_axes
from jaxlite._src.spmd import runtime


def _axes_tuple(axis_name) -> tuple:
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _split_axes(axes) -> tuple[tuple, tuple]:
  """(named axes, positional axes) of a collective's `axes` param."""
  named = tuple(a for a in axes if not isinstance(a, (int, np.integer)))
  return named, tuple(int(a) for a in axes if isinstance(a, (int, np.integer)))


def axis_is_bound(name) -> bool:
  """Whether `name` is a vmap axis in scope or a mesh axis of a shard_map (traced or running)."""
  return batching.axis_is_bound(name) or runtime.spmd_axis_size(name) is not None


def axis_size(axis_name) -> int:
  """The size of the named axis (the product over a tuple of names), as `jax.lax.axis_size`."""
  size = 1
  for name in _axes_tuple(axis_name):
    n = runtime.spmd_axis_size(name) if not batching.axis_is_bound(name) else \
        batching.axis_size(name)
    if n is None:
      raise NameError(f"unbound axis name: {name}")
    size *= n
  return size


def index_groups(axis_index_groups, names, fun_name: str):
  """`axis_index_groups` as a collective's params hold them (a tuple of tuples, as JAX
  canonicalizes them), checked: indices along the named axes, each listed once, in groups of
  one size that split the whole axis (XLA's replica groups; JAX 0.10.2 checks the first
  itself and leaves the rest to XLA's verifier, which fails with an internal error)."""
  if axis_index_groups is None:
    return None
  groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
  flat = sorted(i for g in groups for i in g)
  if flat != list(range(len(flat))):
    raise ValueError("axis_index_groups must cover all indices exactly once")  # JAX's words
  named = _split_axes(names)[0]
  if named and all(axis_is_bound(a) for a in named):
    n = math.prod(axis_size(a) for a in named)
    if len(flat) != n or len({len(g) for g in groups}) != 1:
      raise ValueError(f"{fun_name}: axis_index_groups={groups} must split the {n} indices "
                       f"of axis {named if len(named) > 1 else named[0]} into groups of one "
                       "size")
  return groups


def groups_in_vmap(axis_index_groups, message="axis_index_groups not supported in vmap"):
  """JAX's vmap rules refuse a collective over the vmap axis with axis_index_groups."""
  if axis_index_groups is not None:
    raise NotImplementedError(message)


def _check_bound(axes, fun_name: str) -> None:
  for name in _split_axes(axes)[0]:
    if not axis_is_bound(name):
      raise NameError(f"Found an unbound axis name: {name}. To fix this, please call "
                      f"{fun_name} under `jax.shard_map`.")


# --- psum, pmax, pmin --------------------------------------------------------------------------

_PARALLEL_MIN = 1 << 16  # elements; below this one member reducing is cheaper than two barriers


def reduce_blocks(group, x, ufunc):
  """The elementwise `ufunc` reduction of every member's `x`, shared (read-only) by all: each
  member reduces its own slice of the flattened blocks into one result buffer."""
  def prepare(blocks):
    return np.empty(x.shape, np.result_type(*blocks))

  def work(blocks, out, rank, size):
    flat = out.reshape(-1)
    lo, hi = rank * flat.size // size, (rank + 1) * flat.size // size
    mine = flat[lo:hi]
    np.copyto(mine, blocks[0].reshape(-1)[lo:hi])
    for b in blocks[1:]:
      ufunc(mine, b.reshape(-1)[lo:hi], out=mine)

  if x.size < _PARALLEL_MIN or group.size == 1 or group.layout is not None:
    kind = {np.add: "psum", np.maximum: "pmax", np.minimum: "pmin"}.get(ufunc)
    return runtime.exchange(group, x, lambda blocks: _readonly(functools.reduce(ufunc, blocks)),
                            kind=kind)
  return _readonly(runtime.exchange_parallel(group, x, prepare, work))


def reduce_many(group, xs, ufunc):
  """`reduce_blocks` of several operands in one rendezvous (two barriers instead of two per
  operand): operands of at least _PARALLEL_MIN elements are split among the members, smaller
  ones go whole to one member each (round robin)."""
  if group.layout is not None and len(xs) > 1:
    return _reduce_packed(group, xs, ufunc)
  if group.size == 1 or group.layout is not None:
    return [reduce_blocks(group, x, ufunc) for x in xs]

  def prepare(blocks):
    return [np.empty(x.shape, np.result_type(*(b[i] for b in blocks)))
            for i, x in enumerate(xs)]

  def work(blocks, outs, rank, size):
    for i, out in enumerate(outs):
      # Split along the leading dim, not the flattened one: an operand may be a strided view
      # (a transposed gradient), which reshape(-1) would copy whole on every member.
      if out.size < _PARALLEL_MIN or out.shape[0] < size:
        if i % size != rank:
          continue
        lo, hi = 0, (out.shape[0] if out.ndim else None)
      else:
        lo, hi = rank * out.shape[0] // size, (rank + 1) * out.shape[0] // size
      if hi is None:  # a scalar
        ufunc(blocks[0][i], blocks[1][i], out=out)
        for b in blocks[2:]:
          ufunc(out, b[i], out=out)
        continue
      mine = out[lo:hi]
      ufunc(blocks[0][i][lo:hi], blocks[1][i][lo:hi], out=mine)
      for b in blocks[2:]:
        ufunc(mine, b[i][lo:hi], out=mine)

  return [_readonly(o) for o in runtime.exchange_parallel(group, xs, prepare, work)]


def _reduce_packed(group, xs, ufunc):
  """`reduce_many` over a group spanning processes: the operands of each dtype packed into one
  contiguous buffer reduced by one exchange (one MPI Allreduce per process, after the
  in-process combine): `runtime.reduce_packed`."""
  reduce = lambda x: reduce_blocks(group, x, ufunc)  # noqa: E731
  return runtime.reduce_packed(xs, reduce, single=reduce)


# psum of several operands over the same axes at once: not a public primitive, only what
# shard_map's device programs run for a run of psums (spmd/programs.py), one rendezvous.
psum_fused_p = core.Primitive("psum_fused")
psum_fused_p.multiple_results = True
psum_fused_p.meets_peers = True
psum_fused_p.def_abstract_eval(
    lambda *xs, axes: [ShapedArray(x.shape, x.dtype, x.weak_type) for x in xs])
psum_fused_p.def_impl(lambda *xs, axes: reduce_many(runtime.group_of(axes),
                                                    [np.asarray(x) for x in xs], np.add))


def _psum_fused_batcher(axis_data, vals, dims, *, axes):
  # Each operand as its own psum (what the fused eqn stands for).
  rule = batching.axis_primitive_batchers[psum_p]
  outs = [rule(axis_data, [v], [d], axes=axes, axis_index_groups=None)
          for v, d in zip(vals, dims)]
  return [o for o, _ in outs], [d for _, d in outs]


_VMAP_GROUPS = "axis_index_groups not supported in vmap collectives. Please open a feature " \
    "request!"  # (JAX's words)


def _reduction_collective(name, np_reduce, ufunc, replicated):
  """A reduction over named and positional axes. `replicated(x, n)` is its value for an operand
  that is the same on each of the n members of a named axis (psum: n * x; pmax/pmin: x)."""
  prim = core.Primitive(name)

  def abstract_eval(x, *, axes, axis_index_groups):
    _check_bound(axes, "psum")
    positional = _split_axes(axes)[1]
    _check_axes(x, positional)
    shape = tuple(d for i, d in enumerate(x.shape) if i not in positional)
    return ShapedArray(shape, x.dtype, x.weak_type)

  def impl(x, *, axes, axis_index_groups):
    _check_bound(axes, "psum")
    named, positional = _split_axes(axes)
    x = np_reduce(x, axis=positional) if positional else x
    if not named:
      return x
    return reduce_blocks(runtime.group_of(named, axis_index_groups), np.asarray(x), ufunc)

  def batcher(axis_data, vals, dims, *, axes, axis_index_groups):
    (x,), (bdim,) = vals, dims
    if axis_data.name is None or axis_data.name not in axes:
      if bdim is None:
        return prim.bind(x, axes=axes, axis_index_groups=axis_index_groups), None
      x, axes = batching.moveaxis(x, bdim, 0), _shift_positional(axes)
      return prim.bind(x, axes=axes, axis_index_groups=axis_index_groups), 0
    groups_in_vmap(axis_index_groups, _VMAP_GROUPS)
    others = tuple(a for a in axes if a != axis_data.name)
    if bdim is None:
      out = replicated(x, axis_data.size)
      return (prim.bind(out, axes=others, axis_index_groups=None) if others else out), None
    # Reducing over the batch axis: the result is the same for every example (unbatched).
    x = batching.moveaxis(x, bdim, 0)
    return prim.bind(x, axes=(0,) + _shift_positional(others), axis_index_groups=None), None

  prim.def_impl(impl)
  prim.def_abstract_eval(abstract_eval)
  batching.axis_primitive_batchers[prim] = batcher
  prim.meets_peers = True  # its impl rendezvous with the group (runtime.meets_peers)
  return prim


def _readonly(a):
  a = np.asarray(a)
  a.flags.writeable = False
  return a


def _shift_positional(axes) -> tuple:
  return tuple(a + 1 if isinstance(a, (int, np.integer)) else a for a in axes)


def _times_size(x, n):
  return ew.mul_p.bind(_scalar_like(n, x), x)


def _scalar_like(n, x):
  """`n` as a weak scalar of `x`'s dtype: it prints as a literal (`mul 4.0:f32[] a`)."""
  dt = core.get_aval(x).dtype
  kind = dt.kind
  cls = dtypes.TypedInt if kind in "iu" else dtypes.TypedComplex if kind == "c" else \
      dtypes.TypedFloat
  return cls(n, dt)


psum_p = _reduction_collective("psum", np.sum, np.add, _times_size)
batching.axis_primitive_batchers[psum_fused_p] = _psum_fused_batcher
pmax_p = _reduction_collective("pmax", np.max, np.maximum, lambda x, n: x)
pmin_p = _reduction_collective("pmin", np.min, np.minimum, lambda x, n: x)
for _p in (psum_p, pmax_p, pmin_p):  # the partitioner completes split reductions with them
  kinds.set_role(_p, _p.name)


def _psum_transpose(ct, x, *, axes, axis_index_groups):
  # Every member's output reads every member's input: the cotangent is summed back the same
  # way; positional axes that were summed away are broadcast back.
  named, positional = _split_axes(axes)
  vma = getattr(ad.aval_of(x), "vma", None) or frozenset()
  if named and axis_index_groups is None and vma and frozenset(named) <= vma:
    # Typed by check_vma, a psum of a value varying over the axes gives an invariant one (JAX's
    # psum_invariant): its transpose hands every device the cotangent, unsummed (pvary). A
    # psum here would count it once per device (an N-times gradient of a pmean-ed loss).
    from jaxlite._src.lax import parallel_comm
    have = getattr(core.get_aval(ct), "vma", None) or frozenset()
    missing = tuple(a for a in named if a not in have)
    if missing:
      ct = parallel_comm.pvary_p.bind(ct, axes=missing)
  elif named:
    ct = psum_p.bind(ct, axes=named, axis_index_groups=axis_index_groups)
  if positional:
    shape = ad.aval_of(x).shape
    kept = tuple(i for i in range(len(shape)) if i not in positional)
    ct = shape_prims.broadcast_in_dim_p.bind(ct, shape=shape, broadcast_dimensions=kept,
                                             sharding=None)
  return [ct]


ad.deflinear(psum_p, _psum_transpose)


def _named_size(axes) -> int:
  return math.prod(axis_size(a) for a in _split_axes(axes)[0])


def _bool_to_int(x):
  if dtypes.dtype_and_weak(x)[0] == np.bool_:
    return casts.convert_element_type_p.bind(x, new_dtype=np.dtype(np.int32), weak_type=False)
  return x


def _collective(prim, replicated, x, axis_name, axis_index_groups):
  axes = _axes_tuple(axis_name)
  if axis_index_groups is not None and _split_axes(axes)[1]:
    raise ValueError("axis_index_groups only supported for sums over just named axes")
  groups = index_groups(axis_index_groups, axes, prim.name)
  leaves, tree = tree_util.tree_flatten(x)
  leaves = [_bool_to_int(asarg(leaf)) for leaf in leaves]
  if any(isinstance(leaf, core.Tracer) for leaf in leaves):
    if prim is psum_p and groups is not None and core.vma_typing is not None:
      # JAX's psum of a traced value under check_vma is psum_invariant, which has no groups
      raise NotImplementedError(
          f"psum with axis_index_groups={groups} in a shard_map body with check_vma=True "
          "(JAX 0.10.2 raises a bare NotImplementedError here); shard_map(..., "
          "check_vma=False) sums within the groups")
    outs = [prim.bind(leaf, axes=axes, axis_index_groups=groups) for leaf in leaves]
    return tree_util.tree_unflatten(tree, outs)
  # Values known in Python are the same on every member of the named axes (of its group).
  if prim is not psum_p:  # JAX's wording for an unbound pmax/pmin (psum's is axis_size's)
    _check_bound(axes, "psum")
  n = _named_size(axes) if groups is None else len(groups[0])
  positional = _split_axes(axes)[1]
  if positional:
    leaves = [prim.bind(leaf, axes=positional, axis_index_groups=None) for leaf in leaves]
  return tree_util.tree_unflatten(tree, [replicated(leaf, n) for leaf in leaves])


def _const_times(x, n):
  """n * x for a value known in Python; a Python scalar stays one (psum(1, 'i') is the size)."""
  if type(x) in dtypes.typed_scalar_types:
    return type(x)(x * n, x.dtype)
  return _times_size(x, n)


def psum(x, axis_name, *, axis_index_groups=None):
  """The sum of `x` over the members of the named axis (or axes) `axis_name`."""
  return _collective(psum_p, _const_times, x, axis_name, axis_index_groups)


def pmax(x, axis_name, *, axis_index_groups=None):
  """The maximum of `x` over the members of the named axis `axis_name`."""
  return _collective(pmax_p, lambda v, n: v, x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
  """The minimum of `x` over the members of the named axis `axis_name`."""
  return _collective(pmin_p, lambda v, n: v, x, axis_name, axis_index_groups)


def pmean(x, axis_name, *, axis_index_groups=None):
  """The mean of `x` over the members of the named axis `axis_name`."""
  total = psum(x, axis_name, axis_index_groups=axis_index_groups)  # first, as JAX: its errors
  n = psum(1, axis_name, axis_index_groups=axis_index_groups)
  return tree_util.tree_map(lambda v: v / n, total)  # jnp.true_divide: the Array's operator


# --- axis_index --------------------------------------------------------------------------------

axis_index_p = core.Primitive("axis_index")


def _axis_index_abstract(*, axis_name):
  _check_bound((axis_name,), "axis_index")
  return ShapedArray((), np.dtype(np.int32), False)


def _axis_index_impl(*, axis_name):
  _check_bound((axis_name,), "axis_index")
  return np.int32(runtime.group_of((axis_name,)).rank)


def _axis_index_batcher(axis_data, vals, dims, *, axis_name):
  if axis_name != axis_data.name:
    return axis_index_p.bind(axis_name=axis_name), None
  return iota_p.bind(dtype=np.dtype(np.int32), shape=(axis_data.size,), dimension=0,
                     sharding=None), 0


axis_index_p.def_impl(_axis_index_impl)
axis_index_p.def_abstract_eval(_axis_index_abstract)
batching.axis_primitive_batchers[axis_index_p] = _axis_index_batcher


def axis_index(axis_name):
  """The index of this member along the named axis (row-major over a tuple of names)."""
  names = _axes_tuple(axis_name)
  index = axis_index_p.bind(axis_name=names[-1])
  stride = 1
  for inner, outer in zip(names[::-1], names[-2::-1]):
    stride *= axis_size(inner)
    term = ew.mul_p.bind(axis_index_p.bind(axis_name=outer), weak_scalar(stride))
    index = ew.add_p.bind(term, index)
  return index


# --- all_gather --------------------------------------------------------------------------------

all_gather_p = core.Primitive("all_gather")
all_gather_p.meets_peers = True  # its impl rendezvous with the group (runtime.meets_peers)


def _gathered_shape(shape, dim, size, tiled) -> tuple:
  if tiled:
    return shape[:dim] + (shape[dim] * size,) + shape[dim + 1:]
  return shape[:dim] + (size,) + shape[dim:]


def _all_gather_abstract(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
  _check_bound(_axes_tuple(axis_name), "all_gather")
  shape = _gathered_shape(x.shape, all_gather_dimension, axis_size, tiled)
  return ShapedArray(shape, x.dtype, x.weak_type)


def _all_gather_impl(x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                     tiled):
  names = _axes_tuple(axis_name)
  _check_bound(names, "all_gather")
  join = np.concatenate if tiled else np.stack
  return runtime.exchange(runtime.group_of(names, axis_index_groups), np.asarray(x),
                          lambda blocks: _readonly(join(blocks, axis=all_gather_dimension)))


def _all_gather_batcher(axis_data, vals, dims, *, all_gather_dimension, axis_name,
                        axis_index_groups, axis_size, tiled):
  (x,), (bdim,) = vals, dims
  dim = all_gather_dimension
  names = _axes_tuple(axis_name)
  if axis_data.name is None or axis_data.name not in names:
    params = {"axis_name": axis_name, "axis_index_groups": axis_index_groups,
              "axis_size": axis_size, "tiled": tiled}
    if bdim is None:
      return all_gather_p.bind(x, all_gather_dimension=dim, **params), None
    x = batching.moveaxis(x, bdim, 0)
    return all_gather_p.bind(x, all_gather_dimension=dim + 1, **params), 0
  groups_in_vmap(axis_index_groups)
  if len(names) > 1:
    raise NotImplementedError(f"all_gather over axes {names} mixing a vmap axis with others")
  # Gathering along the batch axis: every example sees the whole batch (unbatched).
  if bdim is None:
    shape = batching.shape_of(x)
    out = shape_prims.broadcast_in_dim_p.bind(
        x, shape=shape[:dim] + (axis_data.size,) + shape[dim:],
        broadcast_dimensions=tuple(i for i in range(len(shape) + 1) if i != dim), sharding=None)
  else:
    out = batching.moveaxis(x, bdim, dim)
  if tiled:
    shape = batching.shape_of(out)
    out = shape_prims.reshape_p.bind(
        out, new_sizes=shape[:dim] + (shape[dim] * shape[dim + 1],) + shape[dim + 2:],
        dimensions=None, sharding=None)
  return out, None


all_gather_p.def_impl(_all_gather_impl)
all_gather_p.def_abstract_eval(_all_gather_abstract)
batching.axis_primitive_batchers[all_gather_p] = _all_gather_batcher


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  # Each member's piece went to every member: sum the cotangents and keep this member's piece,
  # which is what a reduce-scatter does (as in JAX).
  from jaxlite._src.lax.parallel_comm import reduce_scatter_p
  return [reduce_scatter_p.bind(ct, scatter_dimension=all_gather_dimension,
                                axis_name=_axes_tuple(axis_name),
                                axis_index_groups=axis_index_groups, axis_size=axis_size,
                                tiled=tiled)]


ad.deflinear(all_gather_p, _all_gather_transpose)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
  """Every member's `x`, stacked (or concatenated when `tiled`) along `axis`."""
  # with axis_index_groups, each group gathers its own members (JAX's size: the group's)
  groups = index_groups(axis_index_groups, _axes_tuple(axis_name), "all_gather")
  size = _named_size(_axes_tuple(axis_name)) if groups is None else len(groups[0])

  def gather(leaf):
    leaf = asarg(leaf)
    nd = len(core.get_aval(leaf).shape)
    dim = axis + nd + (not tiled) if axis < 0 else axis
    if not 0 <= dim < nd + (not tiled):
      raise ValueError(f"axis {axis} is out of bounds for array of dimension {nd}")
    return all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=_axes_tuple(axis_name),
                             axis_index_groups=groups, axis_size=size,
                             tiled=bool(tiled))
  return tree_util.tree_map(gather, x)


def _reshard_block(x, src, dst, global_shape, mesh_shape):
  """Block `x` of a value laid out by `src` brought to layout `dst` (dim by dim: gathered over
  the axes it leaves, then sliced at this device's index over the axes it gains)."""
  from jaxlite._src.lax import slicing
  for d, (s, t) in enumerate(zip(src, dst)):
    if s == t:
      continue
    for a in reversed(s):  # innermost axis first: blocks are row-major over the axes
      n = mesh_shape[a]
      x = all_gather_p.bind(x, all_gather_dimension=d, axis_name=a,
                            axis_index_groups=None, axis_size=n, tiled=True)
    if t:
      width = global_shape[d] // int(math.prod(mesh_shape[a] for a in t))
      index = axis_index(tuple(t))
      start = index * np.int32(width)
      x = slicing.dynamic_slice_in_dim(x, start, width, axis=d)
  return x


core.register(reshard_block=_reshard_block)
