"""The collectives' XLA lowering, inside shard_map's manual regions (compiler/xla/spmd.py): each
becomes the StableHLO collective JAX emits, over the replica groups of its named axes (logical
device ids, `use_global_device_ids`, a fresh channel handle per op):
psum/pmax/pmin -> `all_reduce`, all_gather -> `all_gather`, psum_scatter -> `reduce_scatter`,
ppermute -> `collective_permute`, all_to_all -> `all_to_all`, axis_index -> `partition_id`
arithmetic. Positional axes of psum/pmax/pmin reduce locally first.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.compiler.xla import lowering as hlo
from jaxlite._src.compiler.xla import spmd


def _axes_tuple(name) -> tuple:
  return tuple(name) if isinstance(name, (tuple, list)) else (name,)


def _named(axes):
  return tuple(a for a in axes if not isinstance(a, (int, np.integer)))


def _positional(axes):
  return tuple(int(a) for a in axes if isinstance(a, (int, np.integer)))


def _group_attrs(ctx, names, axis_index_groups=None) -> dict:
  # axis_index_groups: each named axis' row of devices split into the groups (JAX's groups)
  groups = spmd.replica_groups(ctx, names, axis_index_groups)
  return {"channel_handle": spmd.channel_attr(ctx), "replica_groups": spmd.groups_attr(groups),
          "use_global_device_ids": "unit"}


def _all_reduce(ctx, x, names, op, axis_index_groups=None):
  if not names:
    return x
  aval = hlo.shaped_aval(x.shape, x.dtype)
  body = ctx.scalar_region(x.dtype, op)
  attrs = _group_attrs(ctx, names, axis_index_groups)
  return hlo.with_aval(ctx.op("all_reduce", [x], aval, attrs, [body]), x.aval)


def _reduction_rule(op):
  def rule(ctx, x, *, axes, axis_index_groups):
    positional = _positional(axes)
    if positional:
      out = hlo.shaped_aval([d for i, d in enumerate(x.shape) if i not in positional], x.dtype)
      init = {"add": 0, "maximum": -np.inf, "minimum": np.inf}[op]
      if x.dtype.kind in "iub" and op != "add":
        info = np.iinfo(x.dtype) if x.dtype.kind != "b" else None
        init = (info.min if op == "maximum" else info.max) if info else op == "minimum"
      c = ctx.with_avals([x.aval], [out])
      x = c.op("reduce", [x, c.constant(np.array(init, x.dtype))], out,
               {"dimensions": hlo.i64_array(positional)}, [c.scalar_region(x.dtype, op)])
    return _all_reduce(ctx, x, _named(axes), op, axis_index_groups)
  return rule


def _psum_fused_rule(ctx, *xs, axes):
  return [_all_reduce(ctx, x, _named(axes), "add") for x in xs]


def _psum_invariant_rule(ctx, x, *, axes):
  return _all_reduce(ctx, x, _named(axes), "add")


def _axis_index_rule(ctx, *, axis_name):
  coord = spmd.axis_coordinate(ctx, axis_name)
  return ctx.convert(coord, np.int32)


def _all_gather_rule(ctx, x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                     tiled):
  names = _axes_tuple(axis_name)
  dim = all_gather_dimension
  if not tiled:  # a new dimension of size 1 to gather along
    shape = x.shape[:dim] + (1,) + x.shape[dim:]
    x = ctx.broadcast_to(x, shape, [i for i in range(len(shape)) if i != dim])
  out = list(x.shape)
  out[dim] *= axis_size
  attrs = {"all_gather_dim": f"{dim} : i64", **_group_attrs(ctx, names, axis_index_groups)}
  return ctx.op("all_gather", [x], hlo.shaped_aval(out, x.dtype), attrs)


def _reduce_scatter_rule(ctx, x, *, scatter_dimension, axis_name, axis_index_groups, axis_size,
                         tiled):
  names = _axes_tuple(axis_name)
  dim = scatter_dimension
  out = list(x.shape)
  out[dim] //= axis_size
  attrs = {"scatter_dimension": f"{dim} : i64",
           **_group_attrs(ctx, names, axis_index_groups)}
  body = ctx.scalar_region(x.dtype, "add")
  y = ctx.op("reduce_scatter", [x], hlo.shaped_aval(out, x.dtype), attrs, [body])
  return y if tiled else ctx.reshape(y, ctx.aval_out.shape)


def _ppermute_rule(ctx, x, *, axis_name, perm):
  groups = spmd.replica_groups(ctx, _axes_tuple(axis_name))
  pairs = [[g[s], g[d]] for g in groups for s, d in perm]
  attrs = {"channel_handle": spmd.channel_attr(ctx),
           "source_target_pairs": hlo.dense_i64(pairs, (len(pairs), 2)) if pairs else
           "dense<> : tensor<0x2xi64>"}
  return ctx.op("collective_permute", [x], hlo.shaped_aval(x.shape, x.dtype), attrs)


def _all_to_all_rule(ctx, x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled):
  names = _axes_tuple(axis_name)
  groups = spmd.replica_groups(ctx, names, axis_index_groups)
  n = len(groups[0])
  attrs = {"channel_handle": spmd.channel_attr(ctx),
           "replica_groups": spmd.groups_attr(groups),
           "split_dimension": f"{split_axis} : i64", "concat_dimension": f"{concat_axis} : i64",
           "split_count": f"{n} : i64"}
  return ctx.op("all_to_all", [x], hlo.shaped_aval(ctx.aval_out.shape, x.dtype), attrs)


def _pbroadcast_rule(ctx, x, *, axis_name, source):
  # source's value, everyone else's zeros, summed over the axis
  names = _axes_tuple(axis_name)
  idx = ctx.convert(spmd.axis_coordinate(ctx, names[0]), np.int32) if len(names) == 1 else None
  if idx is None:
    raise hlo.LoweringError("pbroadcast over several axes on the xla backend")
  is_src = ctx.compare(idx, ctx.constant(np.int32(source)), "EQ")
  pred = ctx.broadcast_to(is_src, x.shape)
  kept = ctx.select(pred, x, ctx.zeros(x.shape, x.dtype))
  return _all_reduce(ctx, kept, names, "add" if x.dtype != np.bool_ else "or")



def register_rules(parallel, comm) -> None:
  """Registers the rules of lax/parallel.py's and lax/parallel_comm.py's collectives (the two
  modules, passed by parallel_comm once its primitives exist: this module imports neither, so
  it stays out of their import cycle)."""
  hlo.register(parallel.psum_p, _reduction_rule("add"))
  hlo.register(parallel.pmax_p, _reduction_rule("maximum"))
  hlo.register(parallel.pmin_p, _reduction_rule("minimum"))
  hlo.register(parallel.psum_fused_p, _psum_fused_rule)
  hlo.register(parallel.axis_index_p, _axis_index_rule)
  hlo.register(parallel.all_gather_p, _all_gather_rule)
  hlo.register(comm.psum_invariant_p, _psum_invariant_rule)
  hlo.register_identity(comm.pvary_p)
  hlo.register(comm.reduce_scatter_p, _reduce_scatter_rule)
  hlo.register(comm.ppermute_p, _ppermute_rule)
  hlo.register(comm.all_to_all_p, _all_to_all_rule)
  hlo.register(comm.pbroadcast_p, _pbroadcast_rule)
