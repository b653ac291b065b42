"""Primitives that are identities or constants in value but keep JAX's eqns: `copy`,
`device_put`, `stage`, `empty2`, the dimension comparisons `eq_to`/`le_to`/`lt_to`, and
`shape_as_value`."""
from __future__ import annotations

import enum

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax import families
from jaxlite._src.lax.elementwise_functions import asarg

# copy: a fresh buffer with the operand's value (what `jnp.array(x, copy=True)` stages in JAX).
copy_p = families.primitive("copy", lambda x: np.array(x, copy=True), lambda x: x)
batching.defvectorized(copy_p)
ad.deflinear(copy_p, lambda ct, x: [copy_p.bind(ct)])


class ArrayCopySemantics(enum.Enum):
  """How `device_put` treats its input buffer (JAX's names and printed forms)."""
  ALWAYS_COPY = 0
  REUSE_INPUT = 1
  DONATE_INPUT = 2

  def __repr__(self):
    return f"{type(self).__name__}.{self.name}"

  __str__ = __repr__


def _device_put_impl(*xs, devices, srcs, copy_semantics):
  return [np.array(x, copy=True) if c is ArrayCopySemantics.ALWAYS_COPY else x
          for x, c in zip(xs, copy_semantics)]


def _device_put_abstract_eval(*avals, devices, srcs, copy_semantics):
  if not len(avals) == len(devices) == len(srcs) == len(copy_semantics):
    raise ValueError(f"device_put: {len(avals)} operands need as many devices, srcs and "
                     f"copy_semantics, got {len(devices)}, {len(srcs)} and "
                     f"{len(copy_semantics)}")
  return list(avals)


# device_put: moves each operand to its device (one host here), copying where asked.
device_put_p = core.Primitive("device_put")
device_put_p.multiple_results = True
device_put_p.def_impl(_device_put_impl)
device_put_p.def_abstract_eval(_device_put_abstract_eval)
batching.primitive_batchers[device_put_p] = (
    lambda vals, dims, **params: (device_put_p.bind(*vals, **params), list(dims)))


def _device_put_transpose(cts, *args, devices, srcs, copy_semantics):
  # The cotangent goes back where the operand came from (`srcs`), as in JAX.
  cts = [ad.instantiate_zeros(c) for c in cts]
  return device_put_p.bind(*cts, devices=srcs, srcs=devices, copy_semantics=copy_semantics)


ad.deflinear(device_put_p, _device_put_transpose)

# stage: the identity that lifts a constant into the current trace: an array at the top level;
# under a trace the value itself, which the trace sees as its constant or literal (JAX's jaxpr
# holds no stage eqn either).
stage_p = families.primitive("stage", lambda x: x, lambda x: x)
batching.defvectorized(stage_p)
ad.deflinear(stage_p, lambda ct, x: [ct])


def stage(x, /):
  """Lifts `x` (a Python scalar, NumPy array or array) into the active trace."""
  x = asarg(x)
  return stage_p.bind(x) if core.current_trace() is core.eval_trace else x


# empty2: a scalar of `dtype` with unspecified contents (zero here, as XLA on CPU gives).
empty2_p = core.Primitive("empty2")
empty2_p.def_impl(lambda *, dtype, memory_space: np.zeros((), dtype))
empty2_p.def_abstract_eval(lambda *, dtype, memory_space: ShapedArray((), np.dtype(dtype)))


def empty2(dtype, *, memory_space):
  return empty2_p.bind(dtype=np.dtype(dtype), memory_space=memory_space)


# eq_to/le_to/lt_to: comparisons in the total order of each dtype (XLA's TOTALORDER compare,
# as JAX lowers them; its sort comparators and searchsorted use them): for floats
# -NaN < -inf < ... < -0 < 0 < ... < inf < NaN, by the sign-magnitude bits; integers and bools
# compare as eq/le/lt do (no tangent: booleans).
def _total_order_key(x):
  x = np.asarray(x)
  if not dtypes.issubdtype(x.dtype, np.floating):
    return x
  itype = np.dtype(f"int{x.dtype.itemsize * 8}")
  bits = x.view(itype)  # a negative float's magnitude bits count down in this order
  return np.where(bits < 0, bits ^ np.iinfo(itype).max, bits)


def _total_order(compare):
  def fn(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "c":
      return compare(x, y)
    return compare(_total_order_key(x), _total_order_key(y))
  return fn


eq_to_p = families.binop("eq_to", _total_order(np.equal), "fciub", out_dtype=dtypes.bool_,
                         fuse=False)
le_to_p = families.binop("le_to", _total_order(np.less_equal), "fiub", out_dtype=dtypes.bool_,
                         fuse=False)
lt_to_p = families.binop("lt_to", _total_order(np.less), "fiub", out_dtype=dtypes.bool_,
                         fuse=False)
for _p in (eq_to_p, le_to_p, lt_to_p, empty2_p):
  ad.defjvp_zero(_p)
# empty2 has no operands, so vmap never reaches it with a batched one; its rule binds it as is.
batching.primitive_batchers[empty2_p] = lambda vals, dims, **params: (empty2_p.bind(**params),
                                                                      batching.not_mapped)


# StableHLO: values are immutable, so copies, device_put on the one device of an executable and
# stage are the operands themselves; empty2 is a zero (as XLA on CPU gives).
xla.register(copy_p, lambda ctx, x: x)
xla.register(stage_p, lambda ctx, x: x)
xla.register(device_put_p, lambda ctx, *xs, **_: list(xs))
xla.register(empty2_p, lambda ctx, **_: ctx.zeros((), ctx.aval_out.dtype))


def _total_order_compare_rule(direction):
  def rule(ctx, x, y, **params):
    total = dtypes.issubdtype(x.dtype, np.floating)
    return ctx.compare(x, y, direction, "TOTALORDER" if total else None)
  return rule


for _p, _direction in ((eq_to_p, "EQ"), (le_to_p, "LE"), (lt_to_p, "LT")):
  xla.register(_p, _total_order_compare_rule(_direction))


def shape_as_value(shape):
  """`shape` as a NumPy int32 vector, as JAX gives for concrete dimensions (jaxlite's always
  are); under a trace it becomes a constant."""
  return np.asarray(core.canonicalize_shape(shape, "shape_as_value"), np.int32)


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(copy_p, pk.ELEMENTWISE, hoist=True)
