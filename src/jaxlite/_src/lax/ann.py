"""`approx_top_k_p`: the primitive of `approx_max_k`/`approx_min_k`. On CPU XLA computes it
exactly (recall 1): the k extreme values along a dimension with their int32 indices, ties in
index order; with `aggregate_to_topk=False` the whole dimension comes back sorted."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax import sort as sort_lib


def _out_size(aval, k, reduction_dimension, aggregate_to_topk):
  return k if aggregate_to_topk else aval.shape[reduction_dimension]


def _approx_top_k_abstract_eval(operand, *, k, reduction_dimension, recall_target, is_max_k,
                                reduction_input_size_override, aggregate_to_topk):
  if k <= 0:
    raise ValueError(f"k must be positive, got {k}")
  if not -operand.ndim <= reduction_dimension < operand.ndim:
    raise ValueError(f"reduction_dimension {reduction_dimension} is out of range for an "
                     f"operand of rank {operand.ndim}")
  dims = list(operand.shape)
  if dims[reduction_dimension] < k:
    raise ValueError(f"k must be smaller than the size of reduction_dim "
                     f"{dims[reduction_dimension]}, got {k}")
  if not (dtypes.is_ml_float(operand.dtype) or operand.dtype.kind == "f"):
    raise ValueError("operand must be a floating type")
  dims[reduction_dimension] = _out_size(operand, k, reduction_dimension, aggregate_to_topk)
  return [ShapedArray(dims, operand.dtype, operand.weak_type),
          ShapedArray(dims, np.dtype(np.int32))]


def _approx_top_k_impl(operand, *, k, reduction_dimension, recall_target, is_max_k,
                       reduction_input_size_override, aggregate_to_topk):
  x = np.moveaxis(np.asarray(operand), reduction_dimension, -1)
  n = _out_size(core.get_aval(operand), k, reduction_dimension, aggregate_to_topk)
  # A stable sort of the negated keys puts ties in index order, as XLA's top-k does.
  keys = -x if is_max_k else x
  idx = np.argsort(sort_lib.orderable(keys), axis=-1, kind="stable")[..., :n]
  vals = np.take_along_axis(x, idx, axis=-1)
  return [np.moveaxis(vals, -1, reduction_dimension),
          np.moveaxis(idx.astype(np.int32), -1, reduction_dimension)]


approx_top_k_p = core.Primitive("approx_top_k")
approx_top_k_p.multiple_results = True
approx_top_k_p.def_impl(_approx_top_k_impl)
approx_top_k_p.def_abstract_eval(_approx_top_k_abstract_eval)


def _approx_top_k_hlo(ctx, x, *, k, reduction_dimension, recall_target, is_max_k,
                      reduction_input_size_override, aggregate_to_topk):
  """Exact on CPU, as the impl: a stable sort of the (negated, for max) keys carrying the
  values and their indices, then the first n along the axis."""
  dim = reduction_dimension % len(x.shape)
  idx_aval = ShapedArray(x.shape, np.dtype(np.int32))
  iota = ctx.op("stablehlo.iota", [], idx_aval, {"iota_dimension": f"{dim} : i64"})
  keys = ctx.op("stablehlo.negate", [x], x.aval) if is_max_k else x
  _, vals, idx = ctx.op("stablehlo.sort", [keys, x, iota], [x.aval, x.aval, idx_aval],
                        {"dimension": f"{dim} : i64", "is_stable": "true"},
                        regions=[sort_lib.sort_comparator(ctx, [keys, x, iota], 1)])
  limits = list(x.shape)
  limits[dim] = ctx.avals_out[0].shape[dim]
  cut = lambda v, a: ctx.op("stablehlo.slice", [v], a, {  # noqa: E731
      "start_indices": xla.i64_array([0] * len(limits)), "limit_indices": xla.i64_array(limits),
      "strides": xla.i64_array([1] * len(limits))})
  return [cut(vals, ctx.avals_out[0]), cut(idx, ctx.avals_out[1])]


xla.register(approx_top_k_p, _approx_top_k_hlo)


def _approx_top_k_jvp(primals, tangents, **params):
  # The values are the operand gathered at the indices: their tangent is the tangent gathered
  # there too (linear, so grad transposes the gather); the indices have none.
  take_along_axis = shape_prims._above["take_along_axis"]
  vals, idx = approx_top_k_p.bind(*primals, **params)
  t, = tangents
  idx_zero = ad.Zero.from_primal_value(idx)
  if type(t) is ad.Zero:
    return [vals, idx], [ad.Zero.from_primal_value(vals), idx_zero]
  return [vals, idx], [take_along_axis(t, idx, axis=params["reduction_dimension"]), idx_zero]


def _approx_top_k_batch(vals, dims, *, reduction_dimension, **params):
  x, d = vals[0], dims[0]
  ndim = len(batching.shape_of(x)) - 1
  rd = reduction_dimension % ndim
  x = batching.moveaxis(x, d, 0)
  out = approx_top_k_p.bind(x, reduction_dimension=rd + 1, **params)
  return out, [0, 0]


ad.jvp_rules[approx_top_k_p] = _approx_top_k_jvp
batching.primitive_batchers[approx_top_k_p] = _approx_top_k_batch


def approx_k(operand, k, reduction_dimension, recall_target, is_max_k,
             reduction_input_size_override, aggregate_to_topk):
  from jaxlite._src.base.operands import asarg
  return approx_top_k_p.bind(
      asarg(operand), k=int(k), reduction_dimension=int(reduction_dimension),
      recall_target=float(recall_target), is_max_k=bool(is_max_k),
      reduction_input_size_override=int(reduction_input_size_override),
      aggregate_to_topk=bool(aggregate_to_topk))
