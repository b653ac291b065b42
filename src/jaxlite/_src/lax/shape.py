"""Shape primitives (broadcast_in_dim, reshape, squeeze, transpose, rev, pad, concatenate, split,
stack, unstack, tile) and their lax functions.

Params are hashable tuples of Python ints; abstract evals raise JAX's TypeErrors.
"""
from __future__ import annotations

import operator

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import dtypes
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax import families
from jaxlite._src.lax.families import numpy_templates
from jaxlite._src.compiler.xla import lowering as hlo

# What this module's transpose/batching rules need from the lax modules that stand on it
# (reductions, elementwise, slicing_primitives, elementwise_functions): registered by them at
# their import, so this bottom lax module never imports up (issue 29). Also what lax rules
# written over jnp need from numpy (take_along_axis, for approx_top_k's JVP).
_above = {}


def register_above(**names):
  _above.update(names)

_prim = families.primitive


# --- broadcast_in_dim --------------------------------------------------------------------------

def _broadcast_in_dim_abstract(x, shape, broadcast_dimensions, sharding=None):
  shape = tuple(shape)
  bdims = tuple(broadcast_dimensions)
  if len(bdims) != x.ndim:
    raise TypeError("broadcast_in_dim broadcast_dimensions must have length equal to operand "
                    f"ndim; got broadcast_dimensions {bdims} for operand ndim {x.ndim}.")
  if len(shape) < x.ndim:
    raise TypeError(f"broadcast_in_dim target broadcast shape must have equal or higher rank "
                    f"to the operand shape; got operand ndim {x.ndim} and target broadcast "
                    f"ndim {len(shape)}.")
  for i, d in enumerate(bdims):
    if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
      raise TypeError("broadcast_in_dim operand dimension sizes must either be 1, or be equal "
                      "to their corresponding dimensions in the target broadcast shape; got "
                      f"operand of shape {x.shape}, target broadcast shape {shape}, "
                      f"broadcast_dimensions {bdims} ")
  if list(bdims) != sorted(bdims) or len(set(bdims)) != len(bdims):
    raise TypeError("broadcast_in_dim broadcast_dimensions must be strictly increasing; got "
                    f"broadcast_dimensions {bdims}")
  return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, shape, broadcast_dimensions, sharding=None):
  x = np.asarray(x)
  expanded = [1] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    expanded[d] = x.shape[i]
  return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = _prim("broadcast_in_dim", _broadcast_in_dim_impl,
                           _broadcast_in_dim_abstract)
pp.param_rules[broadcast_in_dim_p] = pp.ParamRule(drop={
    "shape": pp.always, "sharding": pp.always, "broadcast_dimensions": pp.is_empty})


def _broadcast_in_dim_batcher(vals, dims, *, shape, broadcast_dimensions, sharding=None):
  (x,), (bdim,) = vals, dims
  x = batching.moveaxis(x, bdim, 0)
  new_dims = (0,) + tuple(np.add(1, broadcast_dimensions))
  return broadcast_in_dim_p.bind(x, shape=(x.shape[0],) + tuple(shape),
                                 broadcast_dimensions=new_dims, sharding=sharding), 0


batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batcher


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions, sharding=None):
  # Sum over the new dims and the stretched size-1 dims, then restore the size-1 dims.
  reduce_sum_p = _above["reduce_sum_p"]
  unit = [i for i, d in enumerate(x.aval.shape) if d == 1]
  kept = tuple(d for i, d in enumerate(broadcast_dimensions) if i not in unit)
  axes = tuple(i for i in range(len(shape)) if i not in kept)
  summed = reduce_sum_p.bind(ct, axes=axes, out_sharding=None) if axes else ct
  return [_expand_dims(summed, unit)]


def _expand_dims(x, dims):
  """`x` with size-1 axes inserted at `dims` (one broadcast_in_dim, like lax.expand_dims)."""
  if not dims:
    return x
  shape = list(core.get_aval(x).shape)
  for d in sorted(dims):
    shape.insert(d, 1)
  bdims = tuple(i for i in range(len(shape)) if i not in dims)
  return broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=bdims, sharding=None)


ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)


# --- reshape -----------------------------------------------------------------------------------

def _reshape_abstract(x, new_sizes, dimensions=None, sharding=None):
  new_sizes = tuple(new_sizes)
  if int(np.prod(new_sizes, dtype=np.int64)) != x.size or any(d < 0 for d in new_sizes):
    raise TypeError("reshape total size must be unchanged, got new_sizes "
                    f"{new_sizes} (of total size {int(np.prod(new_sizes, dtype=np.int64))}) for "
                    f"shape {x.shape} (of total size {x.size}).")
  if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
    raise TypeError("reshape dimensions must be a permutation of operand dimensions, got "
                    f"dimensions {dimensions} for shape {x.shape}.")
  return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_impl(x, new_sizes, dimensions=None, sharding=None):
  x = np.asarray(x)
  if dimensions is not None:
    x = np.transpose(x, dimensions)
  return x.reshape(new_sizes)


reshape_p = _prim("reshape", _reshape_impl, _reshape_abstract)
numpy_templates[reshape_p] = lambda new_sizes, dimensions=None, sharding=None: (
    f"np.reshape({{0}}, {tuple(new_sizes)})" if dimensions is None else None)


def _reshape_batcher(vals, dims, *, new_sizes, dimensions=None, sharding=None):
  (x,), (bdim,) = vals, dims
  x = batching.moveaxis(x, bdim, 0)
  if dimensions is not None:
    dimensions = (0,) + tuple(d + 1 for d in dimensions)
  return reshape_p.bind(x, new_sizes=(x.shape[0],) + tuple(new_sizes), dimensions=dimensions,
                        sharding=sharding), 0


batching.primitive_batchers[reshape_p] = _reshape_batcher


def _reshape_transpose(ct, x, *, new_sizes, dimensions=None, sharding=None):
  if dimensions is None:
    return [reshape_p.bind(ct, new_sizes=x.aval.shape, dimensions=None, sharding=None)]
  permuted = tuple(x.aval.shape[d] for d in dimensions)
  out = reshape_p.bind(ct, new_sizes=permuted, dimensions=None, sharding=None)
  return [transpose_p.bind(out, permutation=tuple(int(i) for i in np.argsort(dimensions)))]


ad.deflinear(reshape_p, _reshape_transpose)


# --- squeeze -----------------------------------------------------------------------------------

def _squeeze_abstract(x, dimensions):
  dims = tuple(dimensions)
  for d in dims:
    if not 0 <= d < x.ndim:
      raise ValueError(f"squeeze dimensions {dims} out of range for shape {x.shape}")
    if x.shape[d] != 1:  # ValueError, as JAX's
      raise ValueError("cannot select an axis to squeeze out which has size not equal to one, "
                      f"got shape={x.shape} and dimensions={dims}")
  shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
  return ShapedArray(shape, x.dtype, x.weak_type)


def _squeeze_impl(x, dimensions):
  return np.squeeze(np.asarray(x), axis=tuple(dimensions)) if dimensions else x


squeeze_p = _prim("squeeze", _squeeze_impl, _squeeze_abstract)
numpy_templates[squeeze_p] = lambda dimensions: (
    f"np.squeeze({{0}}, {tuple(dimensions)})" if dimensions else "{0}")


def _squeeze_batcher(vals, dims, *, dimensions):
  (x,), (bdim,) = vals, dims
  x = batching.moveaxis(x, bdim, 0)
  return squeeze_p.bind(x, dimensions=tuple(d + 1 for d in dimensions)), 0


batching.primitive_batchers[squeeze_p] = _squeeze_batcher

ad.deflinear(squeeze_p, lambda ct, x, *, dimensions: [_expand_dims(ct, tuple(dimensions))])


# --- transpose ---------------------------------------------------------------------------------

def _transpose_abstract(x, permutation):
  perm = tuple(permutation)
  if sorted(perm) != list(range(x.ndim)):
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {perm} for operand shape {x.shape}.")
  return ShapedArray(tuple(x.shape[p] for p in perm), x.dtype, x.weak_type)


def _transpose_impl(x, permutation):
  return np.transpose(x, permutation)


transpose_p = _prim("transpose", _transpose_impl, _transpose_abstract)
numpy_templates[transpose_p] = lambda permutation: f"np.transpose({{0}}, {tuple(permutation)})"


def _transpose_batcher(vals, dims, *, permutation):
  # The batch axis leads the result; the example's axes keep their order behind it.
  (x,), (bdim,) = vals, dims
  perm = (bdim,) + tuple(p if p < bdim else p + 1 for p in permutation)
  return transpose_p.bind(x, permutation=perm), 0


batching.primitive_batchers[transpose_p] = _transpose_batcher

ad.deflinear(transpose_p, lambda ct, x, *, permutation: [transpose_p.bind(
    ct, permutation=tuple(int(i) for i in np.argsort(permutation)))])


def _all_weak(args, params) -> bool:
  return all(getattr(a, "weak_type", False) for a in args)


def checked_by_abstract_eval(*prims):
  """Eager binds of these run their abstract eval first, so bad arguments raise JAX's errors."""
  for p in prims:
    p.eager_weak_type = None


def _each_first_weak(args, params) -> list:
  return [getattr(args[0], "weak_type", False)] * _num_pieces(args, params)


def _num_pieces(args, params) -> int:
  if "sizes" in params:
    return len(params["sizes"])
  return np.shape(args[0])[params["axis"]]


def _same_dtypes(name, avals, tip=None):
  dts = [a.dtype for a in avals]
  if any(d != dts[0] for d in dts[1:]):
    names = ", ".join(dtypes.dtype_name(d) for d in dts)
    tip = "" if tip is None else (f" (Tip: jnp.{tip} is a similar function that does automatic "
                                  "type promotion on inputs).")
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {names}.{tip}")


# --- rev ---------------------------------------------------------------------------------------

def _rev_abstract(x, dimensions):
  dims = tuple(dimensions)
  if len(set(dims)) != len(dims):
    raise TypeError(f"rev dimensions must be unique, got {dims}.")
  if dims and not all(0 <= d < x.ndim for d in dims):
    raise TypeError(f"rev dimensions must all be less than operand ndim, got dimensions {dims} "
                    f"for operand ndim {x.ndim}.")
  return x


def _rev_impl(x, dimensions):
  return np.flip(x, dimensions) if dimensions else x


rev_p = _prim("rev", _rev_impl, _rev_abstract)
numpy_templates[rev_p] = lambda dimensions: (
    f"np.flip({{0}}, {tuple(dimensions)})" if dimensions else "{0}")


def _rev_batcher(vals, dims, *, dimensions):
  (x,), (bdim,) = vals, dims
  return rev_p.bind(x, dimensions=tuple(d + (d >= bdim) for d in dimensions)), bdim


batching.primitive_batchers[rev_p] = _rev_batcher

ad.deflinear(rev_p, lambda ct, x, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])


# --- pad ---------------------------------------------------------------------------------------

def _pad_abstract(x, padding_value, padding_config):
  if x.dtype != padding_value.dtype:
    raise TypeError("pad operand and padding_value must be same dtype: got "
                    f"{dtypes.dtype_name(x.dtype)} and {dtypes.dtype_name(padding_value.dtype)}.")
  if padding_value.ndim:
    raise ValueError(f"padding_value must be a scalar; got np.shape(padding_value)="
                     f"{padding_value.shape}")
  config = tuple(tuple(c) for c in padding_config)
  if len(config) != x.ndim:
    raise ValueError("length of padding_config must equal the number of axes of operand, got "
                     f"padding_config {config} for operand shape {x.shape}")
  if any(interior < 0 for _, _, interior in config):
    raise ValueError("interior padding in padding_config must be nonnegative, got "
                     f"padding_config {config}")
  shape = tuple(_padded_size(d, *c) for d, c in zip(x.shape, config))
  if any(d < 0 for d in shape):
    raise ValueError(f"Dimension size after padding is not at least 0, got result shape {shape}, "
                     f"for padding_config {config} and operand shape {x.shape}")
  return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


def _padded_size(d, lo, hi, interior):
  return lo + hi + d + max(0, d - 1) * interior


def _pad_dim_slices(d, lo, hi, interior):
  """(destination slice, source slice) placing `d` elements spaced by `interior` after `lo`."""
  step = interior + 1
  out = _padded_size(d, lo, hi, interior)
  first = 0 if lo >= 0 else (-lo + step - 1) // step
  last = min(d - 1, (out - 1 - lo) // step)
  if last < first:
    return slice(0, 0), slice(0, 0)
  return slice(lo + first * step, lo + last * step + 1, step), slice(first, last + 1)


def _pad_impl(x, padding_value, padding_config):
  x = np.asarray(x)
  shape = tuple(_padded_size(d, *c) for d, c in zip(x.shape, padding_config))
  out = np.full(shape, padding_value, dtype=x.dtype)
  pairs = [_pad_dim_slices(d, *c) for d, c in zip(x.shape, padding_config)]
  out[tuple(p[0] for p in pairs)] = x[tuple(p[1] for p in pairs)]
  return out


pad_p = _prim("pad", _pad_impl, _pad_abstract, weak=_all_weak)


def _pad_batcher(vals, dims, *, padding_config):
  (x, padding_value), (bdim, pv_dim) = vals, dims
  if bdim is None:
    x, bdim = batching.broadcast_front(x, batching.shape_of(padding_value)[0]), 0
  config = list(padding_config)
  config.insert(bdim, (0, 0, 0))
  if pv_dim is None:
    return pad_p.bind(x, padding_value, padding_config=tuple(config)), bdim
  # A batched padding value: pad with zeros, then select the value where the mask says padding.
  padded = pad_p.bind(x, np.zeros((), core.get_aval(x).dtype)[()], padding_config=tuple(config))
  inside = broadcast_in_dim_p.bind(np.True_, shape=batching.shape_of(x), broadcast_dimensions=(),
                                   sharding=None)
  mask = pad_p.bind(inside, np.False_, padding_config=tuple(config))
  fill = broadcast_in_dim_p.bind(padding_value, shape=batching.shape_of(padded),
                                 broadcast_dimensions=(bdim,), sharding=None)
  select_n_p = _above["select_n_p"]
  return select_n_p.bind(mask, fill, padded), bdim


batching.primitive_batchers[pad_p] = _pad_batcher


def _pad_transpose(ct, x, padding_value, *, padding_config):
  # The operand's cotangent is `ct` un-padded (negative edge padding, then a strided slice);
  # the padding value's is everything else.
  reduce_sum_p = _above["reduce_sum_p"]
  slice_p = _above["slice_p"]
  lo, hi, interior = (np.array(c) for c in zip(*padding_config)) if padding_config else \
      (np.zeros(0, int),) * 3
  dt = core.get_aval(ct).dtype
  unpad = tuple(zip(np.negative(lo), np.negative(hi), np.zeros_like(interior)))
  unpadded = pad_p.bind(ct, np.zeros((), dt)[()], padding_config=unpad)
  shape = tuple(int(d) for d in core.get_aval(unpadded).shape)
  t_x = slice_p.bind(unpadded, start_indices=tuple(np.zeros_like(lo)), limit_indices=shape,
                     strides=tuple(np.add(interior, 1)))
  t_pad = None
  if ad.is_undefined_primal(padding_value):
    def total(v):
      return reduce_sum_p.bind(v, axes=tuple(range(len(core.get_aval(v).shape))),
                               out_sharding=None)
    sub_p = _above["sub_p"]
    t_pad = sub_p.bind(total(ct), total(t_x))
  return [t_x if ad.is_undefined_primal(x) else None, t_pad]


ad.deflinear(pad_p, _pad_transpose)


# --- concatenate -------------------------------------------------------------------------------

def _concatenate_abstract(*xs, dimension):
  shapes = ", ".join(str(x.shape) for x in xs)
  if len({x.ndim for x in xs}) != 1:
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{shapes}.")
  if not 0 <= dimension < xs[0].ndim:
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                    f"{shapes}.")
  rest = [x.shape[:dimension] + x.shape[dimension + 1:] for x in xs]
  if any(r != rest[0] for r in rest[1:]):
    raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other than "
                    f"the one being concatenated: concatenating along dimension {dimension} for "
                    f"shapes {shapes}.")
  _same_dtypes("concatenate", xs, "concatenate")
  shape = list(xs[0].shape)
  shape[dimension] = sum(x.shape[dimension] for x in xs)
  return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


def _concatenate_impl(*xs, dimension):
  return np.concatenate(xs, axis=dimension)


concatenate_p = _prim("concatenate", _concatenate_impl, _concatenate_abstract, weak=_all_weak)


def _concatenate_batcher(vals, dims, *, dimension):
  size = batching.mapped_size(vals, dims)
  vals = [batching.broadcast_front(v, size) if d is None else batching.moveaxis(v, d, 0)
          for v, d in zip(vals, dims)]
  return concatenate_p.bind(*vals, dimension=dimension + 1), 0


batching.primitive_batchers[concatenate_p] = _concatenate_batcher


def _concatenate_transpose(ct, *xs, dimension):
  sizes = tuple(ad.aval_of(x).shape[dimension] for x in xs)
  pieces = split_p.bind(ct, sizes=sizes, axis=dimension)
  return [p if ad.is_undefined_primal(x) else None for p, x in zip(pieces, xs)]


ad.deflinear(concatenate_p, _concatenate_transpose)


# --- split -------------------------------------------------------------------------------------

def _split_abstract(x, sizes, axis):
  if not 0 <= axis < x.ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
  if any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
  if sum(sizes) != x.shape[axis]:
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                     f"operand shape {list(x.shape)}")
  return [x.update(shape=x.shape[:axis] + (int(s),) + x.shape[axis + 1:]) for s in sizes]


def _split_impl(x, sizes, axis):
  cuts = np.cumsum(sizes[:-1]) if len(sizes) > 1 else []
  return np.split(x, cuts, axis=axis)


split_p = _prim("split", _split_impl, _split_abstract, weak=_each_first_weak)
split_p.multiple_results = True


def _split_batcher(vals, dims, *, sizes, axis):
  (x,), (bdim,) = vals, dims
  outs = split_p.bind(x, sizes=sizes, axis=axis + (axis >= bdim))
  return outs, [bdim] * len(outs)


batching.primitive_batchers[split_p] = _split_batcher

ad.deflinear(split_p, lambda cts, x, *, sizes, axis: [concatenate_p.bind(
    *[ad.instantiate_zeros(c) for c in cts], dimension=axis)])


# --- stack, unstack, tile ----------------------------------------------------------------------

def _stack_abstract(*xs, axis):
  shapes = ", ".join(str(x.shape) for x in xs)
  if len({x.ndim for x in xs}) != 1:
    raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got {shapes}.")
  if len({x.shape for x in xs}) != 1:
    raise ValueError(f"Cannot stack arrays with different shapes: got {shapes}.")
  if not 0 <= axis <= xs[0].ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {xs[0].ndim + 1}")
  _same_dtypes("stack", xs)
  shape = xs[0].shape[:axis] + (len(xs),) + xs[0].shape[axis:]
  return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


def _stack_impl(*xs, axis):
  return np.stack(xs, axis=axis)


stack_p = _prim("stack", _stack_impl, _stack_abstract, weak=_all_weak)


def _stack_batcher(vals, dims, *, axis):
  d = dims[0]
  if d is not None and all(e == d for e in dims):
    # Every operand batched alike: stack around the batch axis, which may shift right.
    return stack_p.bind(*vals, axis=axis if axis <= d else axis + 1), d + (axis <= d)
  size = batching.mapped_size(vals, dims)
  return stack_p.bind(*batching.all_at_front(vals, dims, size), axis=axis + 1), 0


batching.primitive_batchers[stack_p] = _stack_batcher


def _stack_transpose(ct, *xs, axis):
  pieces = unstack_p.bind(ct, axis=axis)
  return [p if ad.is_undefined_primal(x) else None for p, x in zip(pieces, xs)]


ad.deflinear(stack_p, _stack_transpose)


def _unstack_abstract(x, axis):
  if not 0 <= axis < x.ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
  return [x.update(shape=x.shape[:axis] + x.shape[axis + 1:])] * x.shape[axis]


def _unstack_impl(x, axis):
  return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


unstack_p = _prim("unstack", _unstack_impl, _unstack_abstract, weak=_each_first_weak)
unstack_p.multiple_results = True


def _unstack_batcher(vals, dims, *, axis):
  (x,), (bdim,) = vals, dims
  outs = unstack_p.bind(x, axis=axis + (axis >= bdim))
  return outs, [bdim - (axis < bdim)] * len(outs)


batching.primitive_batchers[unstack_p] = _unstack_batcher

ad.deflinear(unstack_p, lambda cts, x, *, axis: [stack_p.bind(
    *[ad.instantiate_zeros(c) for c in cts], axis=axis)])


def _tile_abstract(x, reps):
  if len(reps) != x.ndim:
    raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and "
                    f"x.ndim={x.ndim}.")
  if any(r < 0 for r in reps):
    raise ValueError(f"reps must be nonnegative, got reps={tuple(reps)}")
  return x.update(shape=tuple(d * r for d, r in zip(x.shape, reps)))


def _tile_impl(x, reps):
  return np.tile(x, reps)


tile_p = _prim("tile", _tile_impl, _tile_abstract)
numpy_templates[tile_p] = lambda reps: f"np.tile({{0}}, {tuple(reps)})"


def _tile_batcher(vals, dims, *, reps):
  (x,), (bdim,) = vals, dims
  reps = list(reps)
  reps.insert(bdim, 1)
  return tile_p.bind(x, reps=tuple(reps)), bdim


batching.primitive_batchers[tile_p] = _tile_batcher


def _tile_transpose(ct, x, *, reps):
  # Each output dim is reps[i] copies of operand dim i: fold them apart and sum the copies.
  reduce_sum_p = _above["reduce_sum_p"]
  pairs = tuple(n for r, d in zip(reps, x.aval.shape) for n in (r, d))
  folded = reshape_p.bind(ct, new_sizes=pairs, dimensions=None, sharding=None)
  return [reduce_sum_p.bind(folded, axes=tuple(range(0, len(pairs), 2)), out_sharding=None)]


ad.deflinear(tile_p, _tile_transpose)


# --- public lax functions ----------------------------------------------------------------------

def _asarg(x):
  return _above["asarg"](x)


def _ndim(x) -> int:
  return len(np.shape(x)) if not isinstance(x, core.Array) else x.ndim


def _canonical_axis(axis: int, ndim: int) -> int:
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def _is_array(x) -> bool:
  return isinstance(x, core.Array)


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  operand = _asarg(operand)
  shape = core.canonicalize_shape(shape)
  if min(shape, default=0) < 0:
    raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got {shape}.")
  bdims = tuple(operator.index(d) for d in broadcast_dimensions)
  if _is_array(operand) and tuple(operand.shape) == shape \
      and bdims == tuple(range(len(shape))):
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=bdims,
                                 sharding=out_sharding)


def broadcast(operand, sizes, *, out_sharding=None):
  operand = _asarg(operand)
  sizes = core.canonicalize_shape(sizes)
  if not sizes and out_sharding is None:  # nothing to add: the operand as an array (no eqn)
    if _is_array(operand):
      return operand
    aval = core.get_aval(operand)
    return core.array_from_numpy(np.asarray(operand, aval.dtype), aval.weak_type)
  nd = _ndim(operand)
  return broadcast_in_dim(operand, sizes + tuple(np.shape(operand) if not _is_array(operand)
                                                 else operand.shape),
                          tuple(range(len(sizes), len(sizes) + nd)), out_sharding=out_sharding)


def expand_dims(array, dimensions):
  array = _asarg(array)
  nd_out = _ndim(array) + len(dimensions)
  dims = [_canonical_axis(d, nd_out) for d in dimensions]
  if len(set(dims)) != len(dims):
    raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
  shape = list(np.shape(array) if not _is_array(array) else array.shape)
  for d in sorted(dims):
    shape.insert(d, 1)
  kept = tuple(i for i in range(nd_out) if i not in dims)
  return broadcast_in_dim(array, tuple(shape), kept)


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  operand = _asarg(operand)
  new_sizes = core.canonicalize_shape(new_sizes)
  nd = _ndim(operand)
  dims = None if dimensions is None else tuple(_canonical_axis(d, nd) for d in dimensions)
  same_dims = dims is None or dims == tuple(range(nd))
  if _is_array(operand) and nd and tuple(operand.shape) == new_sizes and same_dims:
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=None if same_dims else dims,
                        sharding=out_sharding)


def squeeze(array, dimensions):
  array = _asarg(array)
  nd = _ndim(array)
  dims = tuple(sorted(_canonical_axis(d, nd) for d in dimensions))
  if not dims and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dims)


def transpose(operand, permutation):
  operand = _asarg(operand)
  perm = tuple(operator.index(d) for d in permutation)
  if perm == tuple(range(_ndim(operand))) and _is_array(operand):
    return operand
  return transpose_p.bind(operand, permutation=perm)


def collapse(operand, start_dimension, stop_dimension=None):
  operand = _asarg(operand)
  shape = tuple(operand.shape) if _is_array(operand) else np.shape(operand)
  lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
  if hi < lo:
    raise ValueError(f"Invalid dimension range passed to collapse: {shape}"
                     f"[{start_dimension}:{stop_dimension}]")
  size = int(np.prod(shape[lo:hi], dtype=np.int64))
  return reshape(operand, shape[:lo] + (size,) + shape[hi:])


def rev(operand, dimensions):
  return rev_p.bind(_asarg(operand), dimensions=tuple(operator.index(d) for d in dimensions))


def pad(operand, padding_value, padding_config):
  config = tuple(tuple(c) for c in padding_config)  # kept as given: JAX prints np.int64s
  return pad_p.bind(_asarg(operand), _asarg(padding_value), padding_config=config)


def concatenate(operands, dimension):
  operands = list(operands)
  if not operands:
    raise ValueError("concatenate requires a non-empty sequences of arrays")
  if len(operands) == 1:
    op = operands[0]
    op = op.__jax_array__() if hasattr(op, "__jax_array__") else op
    if _is_array(op):
      return op
  return concatenate_p.bind(*(_asarg(o) for o in operands), dimension=operator.index(dimension))


def split(operand, sizes, axis: int = 0):
  operand = _asarg(operand)
  return split_p.bind(operand, sizes=tuple(sizes), axis=_canonical_axis(axis, _ndim(operand)))


def stack(operands, axis: int = 0):
  operands = [_asarg(o) for o in operands]
  if not operands:
    raise ValueError("Need at least one array to stack.")
  return stack_p.bind(*operands, axis=_canonical_axis(axis, _ndim(operands[0]) + 1))


def unstack(x, axis: int = 0):
  x = _asarg(x)
  return tuple(unstack_p.bind(x, axis=_canonical_axis(axis, _ndim(x))))


core.register(unstack=unstack)  # iterating a concrete Array while staging (array.ArrayImpl)


def tile(operand, reps):
  return tile_p.bind(_asarg(operand), reps=tuple(operator.index(r) for r in reps))


checked_by_abstract_eval(rev_p, pad_p, concatenate_p, split_p, stack_p, unstack_p, tile_p)


# --- StableHLO lowering --------------------------------------------------------------------------

def _hlo_reshape(ctx, x, *, new_sizes, dimensions=None, sharding=None):
  if dimensions is not None and tuple(dimensions) != tuple(range(len(x.shape))):
    x = _hlo_transpose(ctx, x, permutation=dimensions)
  return ctx.reshape(x, ctx.aval_out.shape)


def _hlo_transpose(ctx, x, *, permutation):
  shape = tuple(x.shape[p] for p in permutation)
  return ctx.op("transpose", [x], ShapedArray(shape, x.dtype),
                {"permutation": hlo.i64_array(permutation)})


def _hlo_pad(ctx, x, padding_value, *, padding_config):
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  return ctx.op("pad", [x, padding_value], ctx.aval_out,
                {"edge_padding_low": hlo.i64_array(lo), "edge_padding_high": hlo.i64_array(hi),
                 "interior_padding": hlo.i64_array(interior)})


def _hlo_slice(ctx, x, start, limit):
  shape = tuple(b - a for a, b in zip(start, limit))
  return ctx.op("slice", [x], ShapedArray(shape, x.dtype),
                {"start_indices": hlo.i64_array(start), "limit_indices": hlo.i64_array(limit),
                 "strides": hlo.i64_array([1] * len(start))})


def _hlo_split(ctx, x, *, sizes, axis):
  outs, at = [], 0
  for n in sizes:
    start = [0] * len(x.shape)
    limit = list(x.shape)
    start[axis], limit[axis] = at, at + n
    outs.append(_hlo_slice(ctx, x, start, limit))
    at += n
  return outs


def _hlo_stack(ctx, *xs, axis):
  out = ctx.aval_out
  parts = [ctx.reshape(x, x.shape[:axis] + (1,) + x.shape[axis:]) for x in xs]
  return ctx.op("concatenate", parts, out, {"dimension": f"{int(axis)} : i64"})


def _hlo_unstack(ctx, x, *, axis):
  return [ctx.reshape(part, aval.shape) for part, aval in
          zip(_hlo_split(ctx, x, sizes=[1] * x.shape[axis], axis=axis), ctx.avals_out)]


hlo.register(broadcast_in_dim_p, lambda ctx, x, *, shape, broadcast_dimensions, sharding=None:
             ctx.broadcast_to(x, shape, broadcast_dimensions))
hlo.register(reshape_p, _hlo_reshape)
hlo.register(squeeze_p, lambda ctx, x, *, dimensions: ctx.reshape(x, ctx.aval_out.shape))
hlo.register(transpose_p, _hlo_transpose)
hlo.register(rev_p, lambda ctx, x, *, dimensions: ctx.op(
    "reverse", [x], x.aval, {"dimensions": hlo.i64_array(dimensions)}))
hlo.register(pad_p, _hlo_pad)
hlo.register(concatenate_p, lambda ctx, *xs, dimension: ctx.op(
    "concatenate", xs, ctx.aval_out, {"dimension": f"{int(dimension)} : i64"}))
hlo.register(split_p, _hlo_split)
hlo.register(stack_p, _hlo_stack)
hlo.register(unstack_p, _hlo_unstack)


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

# Views keep the leading axis and may alias their operand (tier 1 tiles through them).
for _p, _shape in ((broadcast_in_dim_p, "shape"), (reshape_p, "new_sizes"), (squeeze_p, None)):
  pk.register(_p, pk.VIEW, hoist=True, role=_p.name, propagation_rule=_p.name,
              result_shape_param=_shape)
pk.register(transpose_p, pk.SHAPE, hoist=True, propagation_rule="transpose", role="transpose")
for _p in (rev_p, pad_p):
  pk.register(_p, pk.SHAPE, hoist=True)
pk.register(concatenate_p, pk.SHAPE, hoist=True, dims=lambda params: {params["dimension"]})
for _p in (split_p, stack_p, unstack_p, tile_p):
  pk.register(_p, pk.SHAPE)
batching.register_shape_primitives(transpose_p=transpose_p, broadcast_in_dim_p=broadcast_in_dim_p)
