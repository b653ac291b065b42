"""select_n and clamp: choosing elements by a predicate or between bounds (split from
elementwise.py, which re-exports both primitives)."""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax import shape as shape_prims
# elementwise imports this module at its end, once these helpers exist.
from jaxlite._src.lax.elementwise import _const, _full_like, _maybe_broadcast, _op, _select
from jaxlite._src.compiler.xla import lowering as hlo
from jaxlite._src.lax.families import numpy_eqn_templates


def _select_n_abstract(which, *cases):
  if len(cases) == 2:  # the common case, settled without the error checks' generators
    x, y = cases
    if which.dtype == np.bool_ and x.dtype == y.dtype and x.shape == y.shape \
        and (not which.shape or which.shape == x.shape):
      return ShapedArray(x.shape, x.dtype, x.weak_type and y.weak_type)
  if not cases:
    raise TypeError("select_n() must have at least one case")
  if any(c.dtype != cases[0].dtype for c in cases):
    raise TypeError("select_n requires all cases to have the same dtype, got "
                    f"{[c.dtype.name for c in cases]}.")
  if any(c.shape != cases[0].shape for c in cases):
    raise TypeError("select_n requires all cases to have the same shape, got "
                    f"{[c.shape for c in cases]}.")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError("select_n requires that which be a scalar or have the same shape as "
                    f"cases, got which shape {which.shape} and case shape {cases[0].shape}.")
  if which.dtype != np.bool_ and which.dtype.kind != "i" and which.dtype.kind != "u":
    raise TypeError(f"select_n requires which to be a boolean or integer type, got "
                    f"{which.dtype.name}")
  if which.dtype == np.bool_ and len(cases) > 2:
    raise TypeError("select_n with a boolean predicate supports at most two cases")
  return ShapedArray(cases[0].shape, cases[0].dtype, all(c.weak_type for c in cases))


# np.where branches on each element: on an unpredictable mask (relu's gradient, dropout) it
# mispredicts about half of them and a 128x512 float32 select takes ~250 us. Selecting bits
# through an all-ones/all-zeros mask has no branches (~30 us) and is exact for every dtype, so
# big selects take it; small ones keep np.where's lower fixed cost.
_BITWISE_SELECT_MIN = 2048
_SAME_WIDTH_INT = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32),
                   8: np.dtype(np.int64)}


def _zero_bits(x) -> bool:
  """`x` is one value, spread by strides of 0 (a broadcast literal) or of size 1 (a tier-1
  tile's lazily broadcast literal), whose bits are all zero (+0.0, 0, False): selecting it is
  a bitwise and with the mask."""
  return (x.size == 1 or (not any(x.strides) and x.size > 0)) and \
      not x.reshape(-1)[:1].view(np.uint8).any()


def _select_bits(which, on_false, on_true):
  """np.where(which, on_true, on_false) through the bits: both cases of the predicate's shape,
  or one of them a zero (`_zero_bits`) and the other of that shape; else None."""
  shape = which.shape
  # relu's gradient: select(x > 0, 0, g) is g's bits and the mask
  zero_false = on_true.shape == shape and (on_false.shape == shape or on_false.size == 1) \
      and _zero_bits(on_false)
  zero_true = not zero_false and on_false.shape == shape \
      and (on_true.shape == shape or on_true.size == 1) and _zero_bits(on_true)
  if not (zero_false or zero_true or on_true.shape == shape == on_false.shape):
    return None
  as_int = _SAME_WIDTH_INT[on_true.dtype.itemsize]
  mask = which.view(np.int8).astype(as_int)
  if zero_false:
    np.negative(mask, out=mask)  # True -> all ones
    return np.bitwise_and(on_true.view(as_int), mask, out=mask).view(on_true.dtype)
  if zero_true:
    np.subtract(mask, 1, out=mask)  # False -> all ones
    return np.bitwise_and(on_false.view(as_int), mask, out=mask).view(on_true.dtype)
  np.negative(mask, out=mask)  # True -> all ones
  low = on_false.view(as_int)
  out = np.bitwise_xor(on_true.view(as_int), low)
  np.bitwise_and(out, mask, out=out)
  np.bitwise_xor(out, low, out=out)
  return out.view(on_true.dtype)


def _select_n_impl(which, *cases):
  if len(cases) == 1:
    return cases[0]
  if type(which) is not np.ndarray:  # a Python bool predicate (jnp.where(step < 3, ...))
    which = np.asarray(which)
  if which.dtype == np.bool_:
    on_false, on_true = cases
    if which.size >= _BITWISE_SELECT_MIN and type(on_true) is np.ndarray \
        and type(on_false) is np.ndarray and on_true.dtype == on_false.dtype \
        and on_true.dtype.kind in "biufc" and on_true.dtype.itemsize in _SAME_WIDTH_INT:
      out = _select_bits(which, on_false, on_true)
      if out is not None:
        return out
    return np.where(which, on_true, on_false)
  return np.choose(np.asarray(which), [np.asarray(c) for c in cases])


select_n_p = core.Primitive("select_n")
select_n_p.def_impl(_select_n_impl)
select_n_p.def_abstract_eval(_select_n_abstract)


def _select_n_template(eqn):
  """np.where for a boolean two-case select below the bitwise select's size: what the kernel
  runs then, without its per-call dispatch (a loop body's selects run every iteration)."""
  which = eqn.invars[0].aval
  if len(eqn.invars) == 3 and which.dtype == np.bool_ \
      and math.prod(which.shape) < _BITWISE_SELECT_MIN:
    out = eqn.outvars[0].aval
    if not which.shape and not out.shape and not isinstance(out.dtype, np.dtype):
      # One PRNG key of two (a 0-d structured array): the chosen operand itself, where
      # np.where promotes the key's fields on every call (~3 us, in diffrax's Brownian-tree
      # loop every iteration). Generated code never writes into a value a select returned.
      return "({2} if {0} else {1})"
    return "np.where({0}, {2}, {1})"
  return None


numpy_eqn_templates[select_n_p] = _select_n_template


def _select_n_batcher(vals, dims):
  which, cases, wdim, cdims = vals[0], vals[1:], dims[0], dims[1:]
  shape_of, size = batching.shape_of, batching.mapped_size(vals, dims)
  cshape = shape_of(cases[0])
  cases_agree = cdims[0] is not None and all(
      d == cdims[0] and shape_of(c) == cshape for c, d in zip(cases, cdims))
  scalar_which = wdim is None and not shape_of(which)
  if cases_agree and (scalar_which or (wdim == cdims[0] and shape_of(which) == cshape)):
    return select_n_p.bind(which, *cases), cdims[0]
  if scalar_which:
    return select_n_p.bind(which, *batching.all_at_front(cases, cdims, size)), 0
  if wdim is not None and not batching.example_ndim(which, wdim) \
      and batching.example_ndim(cases[0], cdims[0]):
    # A per-example scalar predicate: align the cases, then spread it over their shape.
    cases = batching.all_at_front(cases, cdims, size)
    which = shape_prims.broadcast_in_dim_p.bind(which, shape=shape_of(cases[0]),
                                                broadcast_dimensions=(0,), sharding=None)
    return select_n_p.bind(which, *cases), 0
  which = batching.bdim_at_front(which, wdim, size)
  return select_n_p.bind(which, *batching.all_at_front(cases, cdims, size)), 0


batching.primitive_batchers[select_n_p] = _select_n_batcher


def _select_n_jvp(primals, tangents):
  which, cases = primals[0], primals[1:]
  out = select_n_p.bind(which, *cases)
  case_tangents = tangents[1:]
  nonzero = [t for t in case_tangents if type(t) is not ad.Zero]
  if not nonzero:
    return out, ad.Zero.from_primal_value(out)
  zero = _full_like(nonzero[0], 0)
  return out, select_n_p.bind(which, *[zero if type(t) is ad.Zero else t for t in case_tangents])


def _select_n_transpose(ct, which, *cases):
  if ad.is_undefined_primal(which):
    raise NotImplementedError("select_n is not linear in its predicate")
  zero = _full_like(ct, 0)
  if core.get_aval(which).dtype == np.bool_:
    return [None] + [select_n_p.bind(which, *((ct, zero) if i == 0 else (zero, ct)))
                     if ad.is_undefined_primal(c) else None for i, c in enumerate(cases)]
  # an integer predicate: case i's cotangent where which == i, as JAX's rule stages it
  return [None] + [_select(_op.eq(which, _const(which, i)), ct, zero)
                   if ad.is_undefined_primal(c) else None for i, c in enumerate(cases)]


ad.deflinear(select_n_p, _select_n_transpose)  # linear in the cases, given the predicate
ad.jvp_rules[select_n_p] = _select_n_jvp


def _clamp_abstract(lo, x, hi):
  for name, a in (("min", lo), ("max", hi)):
    if a.dtype != x.dtype:
      raise TypeError(f"lax.clamp requires arguments to have the same dtypes, got "
                      f"{lo.dtype.name}, {x.dtype.name}, {hi.dtype.name}.")
    if a.shape and a.shape != x.shape:
      raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == (), "
                      f"got {name}.shape={a.shape}, operand.shape={x.shape}.")
  # weak only when all three are (JAX's standard rule): clamp(f32, 0.5, 2.0) is strong
  return ShapedArray(x.shape, x.dtype, lo.weak_type and x.weak_type and hi.weak_type)


def _clamp_impl(lo, x, hi):
  return np.minimum(np.maximum(x, lo), hi).astype(x.dtype)


clamp_p = core.Primitive("clamp")
clamp_p.def_impl(_clamp_impl)
clamp_p.def_abstract_eval(_clamp_abstract)


def _clamp_batcher(vals, dims):
  """JAX's rule, so that vmap stages what JAX stages: bounds stay scalars where they can, an
  unbatched scalar operand is broadcast to a batched bound's shape."""
  (lo, x, hi), (lo_d, x_d, hi_d) = vals, dims
  nd = lambda v: len(batching.shape_of(v))  # noqa: E731
  if lo_d == x_d == hi_d:
    if batching.shape_of(lo) == batching.shape_of(x) == batching.shape_of(hi):
      return clamp_p.bind(lo, x, hi), x_d
    if nd(lo) == nd(hi) == 1:
      lo, hi = (_bcast(v, batching.shape_of(x), (d,)) for v, d in ((lo, lo_d), (hi, hi_d)))
      return clamp_p.bind(lo, x, hi), x_d
  elif nd(lo) == 0 and nd(hi) == 0 and x_d is not None:
    return clamp_p.bind(lo, x, hi), x_d
  size = batching.mapped_size(vals, dims)
  lo, hi, x = (batching.bdim_at_front(v, d, size) if batching.shape_of(v) else v
               for v, d in ((lo, lo_d), (hi, hi_d), (x, x_d)))
  shape = batching.shape_of(x)
  if shape:  # (scalar bounds are spread first, then batched 1-D ones, in JAX's order)
    lo, hi = (_bcast(v, shape, ()) if nd(v) == 0 else v for v in (lo, hi))
    lo, hi = (_bcast(v, shape, (0,)) if nd(v) < len(shape) else v for v in (lo, hi))
  if nd(lo) > nd(x):
    x = _bcast(x, batching.shape_of(lo), ())
  return clamp_p.bind(lo, x, hi), 0


def _bcast(v, shape, dims):
  return shape_prims.broadcast_in_dim_p.bind(v, shape=tuple(shape), broadcast_dimensions=dims,
                                             sharding=None)


batching.primitive_batchers[clamp_p] = _clamp_batcher


def _clamp_jvp_rule(pred):
  def rule(t, lo, x, hi):
    shape = core.get_aval(x).shape
    return _select(pred(lo, x, hi), _maybe_broadcast(shape, t), _full_like(x, 0))
  return rule


ad.defjvp(clamp_p,
          _clamp_jvp_rule(lambda lo, x, hi: _op.bitand(_op.gt(lo, x), _op.lt(lo, hi))),
          _clamp_jvp_rule(lambda lo, x, hi: _op.bitand(_op.gt(x, lo), _op.lt(x, hi))),
          _clamp_jvp_rule(lambda lo, x, hi: _op.lt(hi, x)))


# --- StableHLO lowering --------------------------------------------------------------------------

def _hlo_select_n(ctx, which, *cases):
  """cases[which]: one select for a boolean `which`, else a chain of selects on which == i."""
  shape = cases[0].shape
  if which.dtype == np.bool_:
    return ctx.select(which, cases[1], cases[0]) if len(cases) == 2 else cases[0]
  out = cases[-1]
  for i in range(len(cases) - 2, -1, -1):
    pred = ctx.compare(which, ctx.constant(np.asarray(i, which.dtype)), "EQ")
    out = ctx.select(ctx.broadcast_to(pred, shape), cases[i], out)
  return out


hlo.register(select_n_p, _hlo_select_n)
hlo.register(clamp_p, lambda ctx, lo, x, hi: ctx.op("clamp", [lo, x, hi], ctx.aval_out))


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(select_n_p, pk.ELEMENTWISE, fuse=True, role="select_n")
pk.register(clamp_p, pk.ELEMENTWISE, fuse=True, op="clamp")


shape_prims.register_above(select_n_p=select_n_p)
