"""Sorting primitives: sort (several operands ordered by the first `num_keys`) and top_k.

NumPy's stable sorts already order like XLA's: NaNs last (of either sign), -0.0 equal to 0.0,
complex numbers lexicographically; so one stable argsort serves every dtype.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import dtypes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax.families import first_weak
from jaxlite._src.lax.elementwise_functions import asarg

# --- sort --------------------------------------------------------------------------------------

sort_p = core.Primitive("sort")
sort_p.multiple_results = True


def _sort_abstract(*operands, dimension, is_stable, num_keys):
  shape = operands[0].shape
  if any(o.shape != shape for o in operands[1:]):
    raise TypeError("Arguments to sort must have equal shapes, got: "
                    + " ".join(str(o.shape) for o in operands))
  if not 0 <= dimension < len(shape):
    raise ValueError(f"dimension {dimension} out of bounds for sort of shape {shape}")
  if not 1 <= num_keys <= len(operands):
    raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)="
                     f"{len(operands)}")
  return list(operands)


def orderable(x):
  """`x` as NumPy orders it as XLA does. ml_dtypes' types (bfloat16, float8s, int4s: kind "V")
  sort through their own compare function, and the ml_dtypes versions differ on where NaNs go
  (a 13-core host's placed a bfloat16 NaN first); float32 holds each of their values exactly
  and NumPy's float sort puts NaNs last."""
  x = np.asarray(x)
  return x.astype(np.float32) if x.dtype.kind == "V" else x


def sort_permutation(keys, axis):
  """Indices that stably sort `keys` (primary first) along `axis`."""
  if len(keys) == 1:
    return np.argsort(orderable(keys[0]), axis=axis, kind="stable")
  return np.lexsort([orderable(k) for k in keys[::-1]], axis=axis)


def _sort_impl(*operands, dimension, is_stable, num_keys):
  _sort_abstract(*(core.get_aval(o) for o in operands), dimension=dimension,
                 is_stable=is_stable, num_keys=num_keys)
  if len(operands) == 1 and np.asarray(operands[0]).dtype.kind != "V":
    return [np.sort(operands[0], axis=dimension, kind="stable")]
  perm = sort_permutation(operands[:num_keys], dimension)
  return [np.take_along_axis(np.asarray(o), perm, axis=dimension) for o in operands]


sort_p.def_impl(_sort_impl)
sort_p.def_abstract_eval(_sort_abstract)
sort_p.eager_weak_type = lambda args, params: [getattr(a, "weak_type", False) for a in args]


def _sort_batcher(vals, dims, *, dimension, **params):
  # Every operand joins the first batched one's batch axis; the sorted axis shifts past it.
  bdim = next(d for d in dims if d is not None)
  size = batching.shape_of(vals[dims.index(bdim)])[bdim]
  vals = [batching.moveaxis(batching.broadcast_front(v, size), 0, bdim) if d is None
          else batching.moveaxis(v, d, bdim) for v, d in zip(vals, dims)]
  outs = sort_p.bind(*vals, dimension=dimension + (dimension >= bdim), **params)
  return outs, [bdim] * len(outs)


batching.primitive_batchers[sort_p] = _sort_batcher


def _canonical_dimension(dimension, ndim):
  dimension = int(dimension)
  if not -ndim <= dimension < ndim:
    raise ValueError(f"axis {dimension} is out of bounds for array of dimension {ndim}")
  return dimension % ndim


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
  """Sorts `operand` (an array or a sequence of arrays ordered by the first `num_keys`)."""
  single = not isinstance(operand, (tuple, list))
  operands = [asarg(operand)] if single else [asarg(o) for o in operand]
  if single and num_keys != 1:
    raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
  if not 1 <= num_keys <= len(operands):
    raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(operands)}")
  dim = _canonical_dimension(dimension, core.get_aval(operands[0]).ndim)
  outs = sort_p.bind(*operands, dimension=dim, is_stable=bool(is_stable),
                     num_keys=int(num_keys))
  return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
  """Sorts `keys` along `dimension` and reorders `values` the same way."""
  k, v = sort((keys, values), dimension, is_stable, 1)
  return k, v


# --- top_k -------------------------------------------------------------------------------------

top_k_p = core.Primitive("top_k")
top_k_p.multiple_results = True


def _top_k_abstract(x, *, k, axis):
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  if not 0 <= axis < x.ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
  if x.shape[axis] < k:
    raise ValueError("k argument to top_k must be no larger than size along axis; got "
                     f"k={k} with shape={list(x.shape)} and axis={axis}")
  shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
  return [ShapedArray(shape, x.dtype, x.weak_type),
          ShapedArray(shape, dtypes.canonicalize_dtype(np.int32), False)]


def descending_permutation(x, axis):
  """Indices that sort `x` in decreasing order along `axis`: NaNs first, ties in index order.

  A stable ascending sort of the reversed array, read backwards, gives exactly that.
  """
  n = x.shape[axis]
  asc = np.argsort(np.flip(orderable(x), axis), axis=axis, kind="stable")
  return (n - 1) - np.flip(asc, axis)


def _total_order_key(x):
  """Integers ordered as XLA's TopK orders floats: by their bits' total order, so -NaN is the
  smallest value and +NaN the largest, and -0 < +0 (x86 makes -NaN, e.g. sin(inf))."""
  if x.dtype.kind != "f" and x.dtype.name not in ("bfloat16",) and \
      not x.dtype.name.startswith("float8"):
    return x
  signed = np.dtype(f"i{x.dtype.itemsize}")
  bits = np.ascontiguousarray(x).view(signed)
  return bits ^ ((bits >> (8 * x.dtype.itemsize - 1)) & np.iinfo(signed).max)


def _top_k_impl(x, *, k, axis):
  x = np.asarray(x)
  _top_k_abstract(core.get_aval(x), k=k, axis=axis)
  perm = np.take(descending_permutation(_total_order_key(x), axis), np.arange(k), axis=axis)
  return [np.take_along_axis(x, perm, axis=axis), perm.astype(np.int32)]


top_k_p.def_impl(_top_k_impl)
top_k_p.def_abstract_eval(_top_k_abstract)
top_k_p.eager_weak_type = lambda args, params: [first_weak(args, params), False]


def _top_k_batcher(vals, dims, *, k, axis):
  (x,), (bdim,) = vals, dims
  return top_k_p.bind(x, k=k, axis=axis + (axis >= bdim)), [bdim, bdim]


batching.primitive_batchers[top_k_p] = _top_k_batcher


# --- autodiff: tangents follow the values to their sorted places ---------------------------------

def _gather_along(t, indices, axis):
  """`t`'s entries at `indices` along `axis` (an index array of t's shape but that axis), the
  other axes as gather batching dims: JAX's top_k JVP, so that its jaxpr is JAX's."""
  from jaxlite._src.lax import slicing
  from jaxlite._src.lax.shape import reshape_p
  shape = core.get_aval(indices).shape
  batch_dims = tuple(d for d in range(len(shape)) if d != axis)
  dn = slicing.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                      start_index_map=(axis,), operand_batching_dims=batch_dims,
                                      start_indices_batching_dims=batch_dims)
  starts = reshape_p.bind(indices, new_sizes=shape + (1,), dimensions=None, sharding=None)
  return slicing.gather_p.bind(t, starts, dimension_numbers=dn, slice_sizes=(1,) * len(shape),
                               indices_are_sorted=False, unique_indices=False,
                               mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  """The values sorted with an unsigned iota riding along; each tangent is gathered by the
  resulting permutation, the other axes as gather batching dims (JAX's rule, so that its
  jaxpr is JAX's)."""
  from jaxlite._src.lax import slicing
  from jaxlite._src.lax.creation import iota_p
  from jaxlite._src.lax.shape import broadcast_in_dim_p
  shape = core.get_aval(primals[0]).shape
  index_dtype = np.dtype(np.uint64 if any(d > np.iinfo(np.uint32).max for d in shape)
                         else np.uint32)
  positions = iota_p.bind(dtype=index_dtype, shape=shape, dimension=dimension, sharding=None)
  outs = sort_p.bind(*primals, positions, dimension=dimension, is_stable=is_stable,
                     num_keys=num_keys)
  # NumPy integers, as JAX's (its jaxpr prints them as np.int64(d))
  batch_dims = tuple(np.delete(np.arange(len(shape), dtype=np.int64), dimension))
  dn = slicing.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(dimension,),
                                      start_index_map=(dimension,),
                                      operand_batching_dims=batch_dims,
                                      start_indices_batching_dims=batch_dims)
  idx = broadcast_in_dim_p.bind(outs[-1], shape=shape + (1,),
                                broadcast_dimensions=tuple(range(len(shape))), sharding=None)
  if 0 in shape:  # nothing to reorder (a gather's slice size 1 does not fit a size-0 axis)
    return outs[:-1], list(tangents)
  t_outs = [t if type(t) is ad.Zero else slicing.gather_p.bind(
      t, idx, dimension_numbers=dn, slice_sizes=(1,) * len(shape), indices_are_sorted=False,
      unique_indices=False, mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)
      for t in tangents]
  return outs[:-1], t_outs


def _top_k_jvp(primals, tangents, *, k, axis):
  values, indices = top_k_p.bind(*primals, k=k, axis=axis)
  (t,) = tangents
  # k = 0 still gathers (nothing), as JAX's: its transpose is an instantiated zero cotangent,
  # so a NaN factor upstream makes the gradient NaN as in JAX
  t_values = _gather_along(t, indices, axis % len(core.get_aval(values).shape))
  return [values, indices], [t_values, ad.Zero.from_primal_value(indices)]


ad.jvp_rules[sort_p] = _sort_jvp
ad.jvp_rules[top_k_p] = _top_k_jvp


def top_k(operand, k: int, *, axis: int = -1):
  """The `k` largest entries along `axis` (NaN counts as largest) and their indices."""
  operand = asarg(operand)
  ndim = core.get_aval(operand).ndim
  k = int(core.concrete_or_error(int, k, "The k argument of top_k"))
  axis = _canonical_dimension(axis, ndim)
  values, indices = top_k_p.bind(operand, k=k, axis=axis)
  return [values, indices]



# --- StableHLO lowering -------------------------------------------------------------------------

def _sort_key(c, x):
  """x as compared by the sort: -0.0 as 0.0 and every NaN as one NaN, so that a total-order
  compare puts NaNs last and keeps -0.0 and 0.0 in input order, as the NumPy impl does."""
  if not dtypes.is_inexact(x.dtype) or np.dtype(x.dtype).kind == "c":
    return x
  zero = c.constant(np.zeros((), x.dtype))
  x = c.select(c.compare(x, zero, "EQ"), zero, x)
  return c.select(c.compare(x, x, "NE"), c.constant(np.full((), np.nan, x.dtype)), x)


def _sort_parts(c, x):
  """A key as the scalars compared in turn (a complex key: its real then imaginary part)."""
  if np.dtype(x.dtype).kind != "c":
    return [_sort_key(c, x)]
  part = ShapedArray((), np.finfo(x.dtype).dtype)
  return [_sort_key(c, c.op(op, [x], part)) for op in ("stablehlo.real", "stablehlo.imag")]


def _less(c, a, b):
  kind = "TOTALORDER" if dtypes.is_inexact(a.dtype) else None
  return c.compare(a, b, "LT", kind), c.compare(a, b, "EQ", kind)


def sort_comparator(ctx, operands, num_keys):
  """Lexicographic less-than over the first `num_keys` operands (their parts)."""
  scalars = [ShapedArray((), x.dtype) for x in operands for _ in (0, 1)]

  def body(c, *args):
    pairs = []
    for i in range(num_keys):
      a, b = _sort_parts(c, args[2 * i]), _sort_parts(c, args[2 * i + 1])
      pairs += [_less(c, x, y) for x, y in zip(a, b)]
    out = pairs[-1][0]
    for lt, eq in reversed(pairs[:-1]):
      out = c.op("stablehlo.or", [lt, c.op("stablehlo.and", [eq, out], out.aval)], out.aval)
    return [out]
  return ctx.region(scalars, body)


def _sort_rule(ctx, *operands, dimension, is_stable, num_keys):
  return ctx.op("stablehlo.sort", list(operands), list(ctx.avals_out),
                {"dimension": f"{int(dimension)} : i64",
                 "is_stable": "true" if is_stable else "false"},
                regions=[sort_comparator(ctx, operands, num_keys)])


def _top_k_rule(ctx, x, *, k, axis):
  """chlo.top_k works on the last axis: other axes are moved there and back."""
  last = len(x.shape) - 1
  perm = list(range(len(x.shape)))
  perm[axis], perm[last] = last, axis
  values_aval, index_aval = ctx.avals_out
  if axis != last:
    x = ctx.op("stablehlo.transpose", [x], ShapedArray(tuple(x.shape[p] for p in perm), x.dtype),
               {"permutation": xla.i64_array(perm)})
  moved = tuple(values_aval.shape[p] for p in perm)
  outs = ctx.op("chlo.top_k", [x], [ShapedArray(moved, values_aval.dtype),
                                    ShapedArray(moved, index_aval.dtype)],
                {"k": f"{int(k)} : i64"})
  if axis == last:
    return outs
  return [ctx.op("stablehlo.transpose", [o], a, {"permutation": xla.i64_array(perm)})
          for o, a in zip(outs, ctx.avals_out)]


xla.register(sort_p, _sort_rule)
xla.register(top_k_p, _top_k_rule)


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(sort_p, pk.SHAPE, dims=lambda params: {params["dimension"]})
