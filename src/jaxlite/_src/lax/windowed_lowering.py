"""StableHLO lowering rules of the windowed primitives: reduce_window (its sum/max/min forms
and any computation), the generic variadic reduce, the cumulative ops (a reduce_window whose
window spans the whole axis, as JAX lowers them on CPU) and conv_general_dilated. The
primitives' modules register them next to their definitions.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.compiler.xla.lowering import shaped_aval as _aval


def identity(kind: str, dtype):
  """The init value of a sum/prod/max/min window in `dtype` (also the padding it implies)."""
  dtype = np.dtype(dtype)
  if kind in ("sum", "prod"):
    return np.asarray(0 if kind == "sum" else 1).astype(dtype)
  if dtypes.is_inexact(dtype):
    return np.asarray(-np.inf if kind == "max" else np.inf).astype(dtype)
  if dtype == np.bool_:
    return np.asarray(kind == "min")
  info = np.iinfo(dtype)
  return np.asarray(info.min if kind == "max" else info.max, dtype)


_OPS = {"sum": "stablehlo.add", "prod": "stablehlo.multiply", "max": "stablehlo.maximum",
        "min": "stablehlo.minimum"}


def reduce_window_op(ctx, operands, inits, region, out_avals, *, window_dimensions,
                     window_strides, padding, base_dilation, window_dilation):
  return ctx.op("stablehlo.reduce_window", [*operands, *inits], out_avals,
                {"window_dimensions": xla.i64_array(window_dimensions),
                 "window_strides": xla.i64_array(window_strides),
                 "base_dilations": xla.i64_array(base_dilation),
                 "window_dilations": xla.i64_array(window_dilation),
                 "padding": xla.dense_i64(padding, (len(padding), 2))},
                regions=[region])


def reduce_window_monoid_rule(kind: str):
  """reduce_window_sum / _max / _min: one reduce_window with the monoid's op and identity."""
  def rule(ctx, x, **params):
    init = ctx.constant(identity(kind, x.dtype))
    region = ctx.scalar_region(x.dtype, _OPS[kind])
    return reduce_window_op(ctx, [x], [init], region, ctx.aval_out, **params)
  return rule


def reduce_window_rule(ctx, *args, jaxpr, consts, **params):
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  scalars = [_aval((), x.dtype) for x in operands]
  region = ctx.region(scalars * 2, lambda c, *xs: c.lower_jaxpr(jaxpr, consts, list(xs)))
  outs = reduce_window_op(ctx, operands, inits, region, list(ctx.avals_out), **params)
  return outs


def reduce_rule(ctx, *args, computation, jaxpr, dimensions):
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  scalars = [_aval((), x.dtype) for x in operands]
  region = ctx.region(scalars * 2, lambda c, *xs: c.lower_jaxpr(jaxpr, None, list(xs)))
  return ctx.op("stablehlo.reduce", [*operands, *inits], list(ctx.avals_out),
                {"dimensions": xla.i64_array(dimensions)}, regions=[region])


# --- cumulative ops ---------------------------------------------------------------------------

def _logaddexp_region(ctx, dtype) -> str:
  """log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)); a - b is NaN only when both are the
  same infinity (or a NaN), where a + b is the answer."""
  av = _aval((), dtype)

  def body(c, a, b):
    big = c.op("stablehlo.maximum", [a, b], av)
    diff = c.op("stablehlo.subtract", [a, b], av)
    nan = c.compare(diff, diff, "NE")
    tail = c.op("stablehlo.log_plus_one", [c.op("stablehlo.exponential", [
        c.op("stablehlo.negate", [c.op("stablehlo.abs", [diff], av)], av)], av)], av)
    return c.select(nan, c.op("stablehlo.add", [a, b], av),
                    c.op("stablehlo.add", [big, tail], av))
  return ctx.region([av, av], body)


def cumulative_rule(kind: str):
  """cumsum/cumprod/cummax/cummin/cumlogsumexp along `axis`: a window of the whole axis padded
  by n-1 in front (behind when `reverse`), stride 1."""
  def rule(ctx, x, *, axis, reverse):
    rank, n = len(x.shape), x.shape[axis]
    if 0 in x.shape:  # nothing to accumulate (XLA rejects a window of size 0): the empty result
      return ctx.convert(x, ctx.aval_out.dtype)
    window = [1] * rank
    window[axis] = n
    padding = [(0, 0)] * rank
    padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
    if kind == "logsumexp":
      init, region = identity("max", x.dtype), _logaddexp_region(ctx, x.dtype)
    else:
      init, region = identity(kind, x.dtype), ctx.scalar_region(x.dtype, _OPS[kind])
    return reduce_window_op(ctx, [x], [ctx.constant(init)], region, ctx.aval_out,
                            window_dimensions=window, window_strides=[1] * rank,
                            padding=padding, base_dilation=[1] * rank,
                            window_dilation=[1] * rank)
  return rule


# --- convolution ------------------------------------------------------------------------------

def _layout(spec, first: str, second: str) -> str:
  """`[b, f, 0, 1]`: the role of each dimension of one operand, from its spec (the positions
  of the two named dims, then the spatial dims in order)."""
  roles = [""] * len(spec)
  roles[spec[0]], roles[spec[1]] = first, second
  for i, d in enumerate(spec[2:]):
    roles[d] = str(i)
  return f"[{', '.join(roles)}]"


def conv_dnums_text(dn) -> str:
  lhs, rhs, out = dn
  return (f"#stablehlo.conv<{_layout(lhs, 'b', 'f')}x{_layout(rhs, 'o', 'i')}->"
          f"{_layout(out, 'b', 'f')}>")


def _precision_text(precision) -> str | None:
  if precision is None:
    return None
  pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
  names = [getattr(p, "name", None) or str(p).upper() for p in pair]
  return "[" + ", ".join(f"#stablehlo<precision {n}>" for n in names) + "]"


def conv_rule(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
              dimension_numbers, feature_group_count, batch_group_count, precision,
              preferred_element_type, **_):
  out = ctx.aval_out
  lhs, rhs = ctx.convert(lhs, out.dtype), ctx.convert(rhs, out.dtype)
  nsp = len(lhs.shape) - 2
  attrs = {"dimension_numbers": conv_dnums_text(dimension_numbers),
           "window_strides": xla.i64_array(window_strides),
           "padding": xla.dense_i64(padding, (nsp, 2)),
           "lhs_dilation": xla.i64_array(lhs_dilation),
           "rhs_dilation": xla.i64_array(rhs_dilation),
           "feature_group_count": f"{int(feature_group_count)} : i64",
           "batch_group_count": f"{int(batch_group_count)} : i64"}
  prec = _precision_text(precision)
  if prec is not None:
    attrs["precision_config"] = prec
  return ctx.op("stablehlo.convolution", [lhs, rhs], out, attrs)
