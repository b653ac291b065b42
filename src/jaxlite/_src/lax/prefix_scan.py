"""`lax.associative_scan`: all prefix combinations under an associative function in O(log n)
rounds (odd/even recursion) of lax slices, pads and adds; below control flow, as the cumulative
reductions' JVPs differentiate through it.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import dtypes, tree_util
from jaxlite._src.lax import elementwise_functions as lax
from jaxlite._src.lax import shape as shape_ops
from jaxlite._src.lax import slicing

def associative_scan(fn, elems, reverse=False, axis=0):
  """All prefix combinations of `elems` along `axis` under the associative `fn`, in
  O(log n) rounds of elementwise `fn` calls (odd/even recursion)."""
  ops = _slicing_ops()
  if not callable(fn):
    raise TypeError("lax.associative_scan: fn argument should be callable.")
  flat, tree = tree_util.tree_flatten(elems)
  if not flat:
    return elems
  axis = _normalize_axis(axis, np.ndim(flat[0]))
  if reverse:
    flat = [ops.rev(x, (axis,)) for x in flat]
  sizes = {int(np.shape(x)[axis]) for x in flat}
  if len(sizes) != 1:
    raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[np.shape(x) for x in flat]})")

  def combine(a, b):
    out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
    out_flat, out_tree = tree_util.tree_flatten(out)
    if out_tree != tree:
      raise ValueError("The pytree structure of the output of fn must match the structure of "
                       f"its inputs, got {out_tree} and {tree}.")
    return out_flat

  scanned = _prefix_scan(combine, flat, axis, ops)
  if reverse:
    scanned = [ops.rev(x, (axis,)) for x in scanned]
  return tree_util.tree_unflatten(tree, scanned)


def _prefix_scan(combine, xs, axis, ops):
  """Prefix combination: pairs combine into half as many, recurse, then fill in the evens."""
  n = np.shape(xs[0])[axis]
  if n < 2:
    return xs
  sl = ops.slice_in_dim
  pairs = combine([sl(x, 0, -1, stride=2, axis=axis) for x in xs],
                  [sl(x, 1, None, stride=2, axis=axis) for x in xs])
  odd = _prefix_scan(combine, pairs, axis, ops)
  # Element 2k (k >= 1) is the prefix up to 2k-1 combined with element 2k.
  prev = odd if n % 2 else [sl(o, 0, -1, axis=axis) for o in odd]
  even = combine(prev, [sl(x, 2, None, stride=2, axis=axis) for x in xs])
  even = [ops.concatenate([sl(x, 0, 1, axis=axis), e], axis) for x, e in zip(xs, even)]
  return [_interleave(e, o, axis, ops) for e, o in zip(even, odd)]


def _interleave(even, odd, axis, ops):
  """e0 o0 e1 o1 ...: both padded with holes where the other goes, then added (or or-ed)."""
  ne, no = np.shape(even)[axis], np.shape(odd)[axis]
  zero_pad = [(0, 0, 0)] * np.ndim(even)
  even_pad, odd_pad = list(zero_pad), list(zero_pad)
  even_pad[axis] = (0, 1 if ne == no else 0, 1)
  odd_pad[axis] = (1, 0 if ne == no else 1, 1)
  combine = ops.bitwise_or if dtypes.dtype_and_weak(even)[0] == np.bool_ else ops.add
  zero = np.zeros((), dtypes.dtype_and_weak(even)[0])
  return combine(ops.pad(even, zero, even_pad), ops.pad(odd, zero, odd_pad))


def _normalize_axis(axis, ndim) -> int:
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


class _SlicingOps:
  """The lax functions the Python scan and associative_scan slice and join with."""
  index_in_dim = staticmethod(slicing.index_in_dim)
  slice_in_dim = staticmethod(slicing.slice_in_dim)
  concatenate = staticmethod(shape_ops.concatenate)
  expand_dims = staticmethod(shape_ops.expand_dims)
  rev, pad = staticmethod(shape_ops.rev), staticmethod(shape_ops.pad)
  add, bitwise_or = staticmethod(lax.add), staticmethod(lax.bitwise_or)


def _slicing_ops():
  return _SlicingOps
