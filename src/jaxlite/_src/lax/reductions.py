"""Reduction primitives: reduce_sum/prod/max/min/and/or/xor, argmax/argmin, the cumulative ops
and the general `reduce` with a user computation, plus the `lax` functions that bind them.

Each family is defined by one helper, so one rule body serves every member of the family.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import dtypes
from jaxlite._src.base.config import config
from jaxlite._src.compiler import backend
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax.families import first_weak, kind_of, never_weak
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax import windowed_lowering
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.sharding import rules as sharding_rules
from jaxlite._src.compiler.xla import lowering as hlo

_KIND_WORDS = {"fciu": "number", "fciub": "number or bool", "fiub": "number or bool",
               "fc": "inexact", "f": "floating"}


def _check_kinds(name, dtype, kinds):
  if kind_of(dtype) not in kinds:
    raise TypeError(f"{name} does not accept dtype {dtypes.dtype_name(dtype)}. Accepted dtypes "
                    f"are subtypes of {_KIND_WORDS[kinds]}.")


def _check_axes(x, axes):
  if any(not 0 <= a < x.ndim for a in axes):
    raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for "
                     f"{x.str_short(short_dtypes=False)}.")
  if len(set(axes)) != len(axes):
    raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")


def _reduced_shape(shape, axes):
  return tuple(d for i, d in enumerate(shape) if i not in axes)


def _half_precision(dtype) -> bool:
  return dtype == np.float16 or dtypes.is_bfloat16(dtype)


# --- reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or, reduce_xor ----------

def _check_f16_sum(x, axes):
  """reduce_sum (the reduction with `out_sharding`) of half precision over a non-trivial axis
  raises when `jax_allow_f16_reductions` is False, as in JAX."""
  if _half_precision(x.dtype) and any(x.shape[a] != 1 for a in axes) \
      and not config.jax_allow_f16_reductions:
    raise ValueError(f"reduce_sum on operand {x.str_short(True)} is not allowed when "
                     "jax_allow_f16_reductions=False.")


def _reduction(name, np_reduce, kinds, check=_check_kinds, sharding_param=False):
  """A reduction primitive over static `axes` that keeps the operand's dtype and weak type.

  `np_reduce(x, axes)` computes it; `sharding_param` adds the `out_sharding` param that
  JAX's reduce_sum carries (and prints).
  """
  prim = core.Primitive(name)

  def abstract_eval(x, *, axes, out_sharding=None):
    check(name, x.dtype, kinds)
    _check_axes(x, axes)
    if sharding_param:
      _check_f16_sum(x, axes)
    return ShapedArray(_reduced_shape(x.shape, axes), x.dtype, x.weak_type)

  def impl(x, *, axes, out_sharding=None):
    if kind_of(x.dtype) not in kinds:
      check(name, x.dtype, kinds)
    if sharding_param and x.dtype.itemsize == 2:
      _check_f16_sum(core.get_aval(x), axes)
    if not axes:
      return x
    try:
      return np_reduce(x, axes)
    except (ValueError, TypeError, IndexError):
      abstract_eval(core.get_aval(x), axes=axes)  # raises JAX's error for bad axes
      raise

  prim.def_impl(impl)
  prim.def_abstract_eval(abstract_eval)
  prim.eager_weak_type = first_weak
  batching.defreducer(prim)
  sharding_rules.reduction(prim)
  prim.params_of = (lambda axes: dict(axes=axes, out_sharding=None)) if sharding_param else \
      (lambda axes: dict(axes=axes))
  return prim


def _row_major(x):
  """x laid out row-major when its float sum or product would otherwise depend on its strides.

  NumPy adds up a contiguous axis pairwise but a strided one in sequence, and its reductions
  hand back outputs in whatever order their loop ran (summing a (13, 20, 20) stack over axis 1
  gives strides (4, 52)), so the same float32 values summed by a later reduction rounded
  differently by where they came from: slogdet of a stack of matrices differed from slogdet of
  each. XLA's result depends on the logical shape only, so the operand is made row-major first.
  """
  if isinstance(x, np.ndarray) and x.ndim > 1 and kind_of(x.dtype) in "fc" \
      and not x.flags.c_contiguous:
    return np.ascontiguousarray(x)
  return x


def _sum(x, axes):
  x = _row_major(x)
  if _half_precision(x.dtype):
    return np.add.reduce(x, axis=axes, dtype=np.float32).astype(x.dtype)
  return np.add.reduce(x, axis=axes, dtype=x.dtype)


def _prod(x, axes):
  x = _row_major(x)
  if _half_precision(x.dtype):
    return np.multiply.reduce(x, axis=axes, dtype=np.float32).astype(x.dtype)
  with np.errstate(over="ignore", invalid="ignore"):
    return np.multiply.reduce(x, axis=axes, dtype=x.dtype)


def _lowest(dtype):
  if dtype == np.bool_:
    return False
  if kind_of(dtype) == "f":
    return -np.inf
  return np.iinfo(dtype).min


def _highest(dtype):
  if dtype == np.bool_:
    return True
  if kind_of(dtype) == "f":
    return np.inf
  return np.iinfo(dtype).max


def _max(x, axes):
  # An empty reduction gives the identity, like XLA; NumPy would raise.
  initial = _lowest(x.dtype) if x.size == 0 else np._NoValue
  return np.maximum.reduce(x, axis=axes, initial=initial)


def _min(x, axes):
  initial = _highest(x.dtype) if x.size == 0 else np._NoValue
  return np.minimum.reduce(x, axis=axes, initial=initial)


def _bitwise(ufunc, bool_fn, identity):
  def reduce(x, axes):
    if x.dtype == np.bool_:
      return bool_fn(x, axis=axes)
    if x.size == 0:
      return np.full(_reduced_shape(x.shape, axes), identity).astype(x.dtype)
    return ufunc.reduce(x, axis=axes)
  return reduce


def _check_logical(name, dtype, kinds):
  if kind_of(dtype) not in kinds:
    raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                    f"{dtypes.dtype_name(dtype)}.")


def _xor_bool(x, axis):
  return np.logical_xor.reduce(x, axis=axis) if x.size else \
      np.zeros(_reduced_shape(x.shape, axis), np.bool_)


reduce_sum_p = _reduction("reduce_sum", _sum, "fciu", sharding_param=True)
reduce_prod_p = _reduction("reduce_prod", _prod, "fciu")
reduce_max_p = _reduction("reduce_max", _max, "fciub")
reduce_min_p = _reduction("reduce_min", _min, "fciub")
reduce_and_p = _reduction("reduce_and", _bitwise(np.bitwise_and, np.all, -1), "iub",
                          check=_check_logical)
reduce_or_p = _reduction("reduce_or", _bitwise(np.bitwise_or, np.any, 0), "iub",
                         check=_check_logical)
reduce_xor_p = _reduction("reduce_xor", _bitwise(np.bitwise_xor, _xor_bool, 0), "iub",
                          check=_check_logical)


def _axes_tuple(axes) -> tuple:
  return tuple(int(a) for a in axes)


def _reducer(prim):
  def fn(operand, axes):
    return prim.bind(asarg(operand), **prim.params_of(_axes_tuple(axes)))
  fn.__name__ = fn.__qualname__ = prim.name
  return fn


reduce_sum = _reducer(reduce_sum_p)
reduce_prod = _reducer(reduce_prod_p)
reduce_max = _reducer(reduce_max_p)
reduce_min = _reducer(reduce_min_p)
reduce_and = _reducer(reduce_and_p)
reduce_or = _reducer(reduce_or_p)
reduce_xor = _reducer(reduce_xor_p)


def _reduce_sum_transpose(ct, x, *, axes, out_sharding=None):
  shape = x.aval.shape
  kept = tuple(np.delete(np.arange(len(shape)), axes))  # NumPy ints, printed as JAX does
  return [shape_prims.broadcast_in_dim_p.bind(ct, shape=shape, broadcast_dimensions=kept,
                                              sharding=None)]


def _chooser_jvp(t, y, x, *, axes):
  # The tangent is averaged over the positions that attain the extremum.
  shape = tuple(1 if i in axes else d for i, d in enumerate(core.get_aval(x).shape))
  where = ew.eq_p.bind(x, shape_prims.reshape_p.bind(y, new_sizes=shape, dimensions=None,
                                                     sharding=None))
  indicators = casts.convert_element_type_p.bind(where, new_dtype=core.get_aval(t).dtype,
                                              weak_type=False)
  counts = reduce_sum_p.bind(indicators, axes=axes, out_sharding=None)
  picked = reduce_sum_p.bind(ew.mul_p.bind(t, indicators), axes=axes, out_sharding=None)
  return ew.div_p.bind(picked, counts)


def _reduce_prod_jvp(primals, tangents, *, axes):
  # Differentiated as a tree of pairwise products, so zeros in the operand are handled.
  one = np.ones((), core.get_aval(primals[0]).dtype)

  def prod(x):
    return tree_reduce(lambda a, b: [ew.mul_p.bind(a[0], b[0])], [x], [one], axes)
  (out,), (t_out,) = ad.jvp_flat(prod, primals, tangents, instantiate=False)
  return out, t_out


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)
ad.jvp_rules[reduce_prod_p] = _reduce_prod_jvp
ad.defjvp2(reduce_max_p, _chooser_jvp)
ad.defjvp2(reduce_min_p, _chooser_jvp)
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
  ad.defjvp_zero(_p)


# --- argmax, argmin ----------------------------------------------------------------------------

def _arg_reduction(name, np_arg):
  """argmax/argmin over one axis: the first extremum wins, and the first NaN beats all."""
  prim = core.Primitive(name)

  def abstract_eval(x, *, axes, index_dtype):
    (axis,) = axes
    if not 0 <= axis < x.ndim:
      raise ValueError(f"Invalid axis {axis} for operand shape {x.shape}")
    if not dtypes.issubdtype(index_dtype, np.integer):
      raise TypeError(f"index_dtype must be an integer type, but got "
                      f"{dtypes.dtype_name(index_dtype)}")
    if x.shape[axis] == 0:
      raise ValueError("argmin and argmax require non-empty reduced dimension. "
                       f"operand.shape={x.shape} axis={axis}")
    _check_kinds(name, x.dtype, "fiub")
    return ShapedArray(_reduced_shape(x.shape, axes), index_dtype, False)

  def impl(x, *, axes, index_dtype):
    if not 0 <= axes[0] < x.ndim or x.shape[axes[0]] == 0 or x.dtype.kind not in "fiub" \
        or np.dtype(index_dtype).kind not in "iu":
      abstract_eval(core.get_aval(x), axes=axes, index_dtype=index_dtype)
    # NumPy's argmax/argmin already return the first NaN when there is one.
    return np_arg(x, axis=axes[0]).astype(index_dtype)

  prim.def_impl(impl)
  prim.def_abstract_eval(abstract_eval)
  prim.eager_weak_type = never_weak
  batching.defreducer(prim)
  sharding_rules.reduction(prim)
  return prim


argmax_p = _arg_reduction("argmax", np.argmax)
argmin_p = _arg_reduction("argmin", np.argmin)
ad.defjvp_zero(argmax_p)
ad.defjvp_zero(argmin_p)


def argmax(operand, axis: int, index_dtype):
  """Index of the largest element along `axis` (the first one on ties; NaN counts as largest)."""
  return argmax_p.bind(asarg(operand), axes=(int(axis),),
                       index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis: int, index_dtype):
  """Index of the smallest element along `axis` (the first one on ties; NaN wins)."""
  return argmin_p.bind(asarg(operand), axes=(int(axis),),
                       index_dtype=dtypes.canonicalize_dtype(index_dtype))


# --- cumulative ops ----------------------------------------------------------------------------

def _cumulative(name, np_accumulate, kinds):
  """A scan along `axis` (from the end when `reverse`) keeping dtype, shape and weak type."""
  prim = core.Primitive(name)

  def abstract_eval(x, *, axis, reverse):
    if not 0 <= axis < max(x.ndim, 1) or x.ndim == 0:
      raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
    _check_kinds(name, x.dtype, kinds)
    return x

  def impl(x, *, axis, reverse):
    if kind_of(x.dtype) not in kinds or not 0 <= axis < x.ndim:
      abstract_eval(core.get_aval(x), axis=axis, reverse=reverse)
    if reverse:
      return np.flip(np_accumulate(np.flip(x, axis), axis), axis)
    return np_accumulate(x, axis)

  prim.def_impl(impl)
  prim.def_abstract_eval(abstract_eval)
  prim.eager_weak_type = first_weak
  sharding_rules.cumulative(prim)
  batching.primitive_batchers[prim] = lambda vals, dims, *, axis, reverse: (
      prim.bind(vals[0], axis=axis + (axis >= dims[0]), reverse=reverse), dims[0])
  return prim


def _accumulate(ufunc):
  def acc(x, axis):
    # Half-precision partial sums and products are rounded to the dtype at every step, as
    # XLA's are (each op computes in float32 and rounds back), not accumulated in float32.
    with np.errstate(over="ignore", invalid="ignore"):
      return ufunc.accumulate(x, axis=axis, dtype=x.dtype)
  return acc


def _extremum_accumulate(ufunc):
  """Running max/min with XLA's -0 below +0: a running max is negative only while every value
  so far is (a running min once any is), so the sign comes from the running extremum of signs."""
  plain = _accumulate(ufunc)

  def acc(x, axis):
    if kind_of(x.dtype) != "f":
      return plain(x, axis)
    signs = ufunc.accumulate(np.copysign(np.ones((), x.dtype), x), axis=axis, dtype=x.dtype)
    return np.copysign(plain(x, axis), signs)
  return acc


cumsum_p = _cumulative("cumsum", _accumulate(np.add), "fciu")
cumprod_p = _cumulative("cumprod", _accumulate(np.multiply), "fciu")
cummax_p = _cumulative("cummax", _extremum_accumulate(np.maximum), "fciu")
cummin_p = _cumulative("cummin", _extremum_accumulate(np.minimum), "fciu")
cumlogsumexp_p = _cumulative("cumlogsumexp", _accumulate(np.logaddexp), "f")
for _p, _kind in ((cumsum_p, "sum"), (cumprod_p, "prod"), (cummax_p, "max"), (cummin_p, "min"),
                  (cumlogsumexp_p, "logsumexp")):
  xla.register(_p, windowed_lowering.cumulative_rule(_kind))


def _cumulative_fn(prim):
  def fn(operand, axis: int = 0, reverse: bool = False):
    operand = asarg(operand)
    nd = core.get_aval(operand).ndim
    axis = int(axis)
    if axis < 0:  # lax (unlike jnp) takes XLA's axes: checked before rank and dtype, as in JAX
      raise ValueError("XLA operations do not allow negative axes")
    if not axis < nd:
      shape = core.get_aval(operand).shape
      raise ValueError(f"axis {axis} is out of bounds for array of shape {shape}")
    return prim.bind(operand, axis=axis % nd, reverse=bool(reverse))
  fn.__name__ = fn.__qualname__ = prim.name
  fn.__doc__ = f"The {prim.name} of `operand` along `axis` (from the end when `reverse`)."
  return fn


cumsum = _cumulative_fn(cumsum_p)
cumprod = _cumulative_fn(cumprod_p)
cummax = _cumulative_fn(cummax_p)
cummin = _cumulative_fn(cummin_p)
cumlogsumexp = _cumulative_fn(cumlogsumexp_p)


def _logaddexp(a, b):
  # m + log(e^(a-m) + e^(b-m)): exact derivatives even where a == b.
  m = ew.max_p.bind(a, b)
  total = ew.add_p.bind(ew.exp_p.bind(ew.sub_p.bind(a, m)), ew.exp_p.bind(ew.sub_p.bind(b, m)))
  return ew.add_p.bind(m, ew.log_p.bind(total))


def _scan_jvp(combine):
  # JAX differentiates these through lax.associative_scan's odd/even recursion; its tree decides
  # how tied max/min split their derivative (cummin of [2, 2, 2]: [1.75, 0.75, 0.5]).
  def jvp(primals, tangents, *, axis, reverse):
    from jaxlite._src.lax.prefix_scan import associative_scan
    (out,), (t_out,) = ad.jvp_flat(
        lambda x: [associative_scan(combine, x, reverse=reverse, axis=axis)],
        primals, tangents, instantiate=False)
    return out, t_out
  return jvp


ad.deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [
    cumsum_p.bind(ct, axis=axis, reverse=not reverse)])
ad.jvp_rules[cumprod_p] = _scan_jvp(ew.mul_p.bind)
ad.jvp_rules[cummax_p] = _scan_jvp(ew.max_p.bind)
ad.jvp_rules[cummin_p] = _scan_jvp(ew.min_p.bind)
ad.jvp_rules[cumlogsumexp_p] = _scan_jvp(_logaddexp)


# --- reduce: a user computation folded over `dimensions` --------------------------------------

reduce_p = core.Primitive("reduce")
reduce_p.multiple_results = True


def _reduce_abstract(*avals, computation, jaxpr, dimensions):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  for x in operands[1:]:
    if x.shape != operands[0].shape:
      raise ValueError("reduce operands must have the same shape, got "
                       f"{[o.shape for o in operands]}")
  for x in operands:
    _check_axes(x, dimensions)
  shape = _reduced_shape(operands[0].shape, dimensions)
  return [ShapedArray(shape, x.dtype, x.weak_type and i.weak_type)
          for x, i in zip(operands, inits)]


def _reduce_impl(*args, computation, jaxpr, dimensions):
  fn = backend.compile_jaxpr(jaxpr)
  n = len(args) // 2
  operands, inits = [np.asarray(a) for a in args[:n]], args[n:]
  kept = [i for i in range(operands[0].ndim) if i not in dimensions]
  out_shape = tuple(operands[0].shape[i] for i in kept)
  # Reduced axes go in front and are folded one slice at a time, vectorized over the rest.
  folded = [np.moveaxis(x, list(dimensions), list(range(len(dimensions))))
            .reshape((-1,) + out_shape) for x in operands]
  accs = [np.broadcast_to(np.asarray(i, x.dtype), out_shape) for i, x in zip(inits, operands)]
  for k in range(folded[0].shape[0]):
    accs = fn(*accs, *(f[k] for f in folded))
  return [np.asarray(a, x.dtype).reshape(out_shape) for a, x in zip(accs, operands)]


reduce_p.def_impl(_reduce_impl)
reduce_p.def_abstract_eval(_reduce_abstract)
xla.register(reduce_p, windowed_lowering.reduce_rule)


def _reduce_batcher(vals, dims, *, computation, jaxpr, dimensions):
  n = len(vals) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("reduce with batched init values")  # as in JAX
  size = batching.mapped_size(vals, dims)
  operands = batching.all_at_front(vals[:n], dims[:n], size)
  outs = reduce_p.bind(*operands, *vals[n:], computation=computation, jaxpr=jaxpr,
                       dimensions=tuple(d + 1 for d in dimensions))
  return outs, [0] * n


batching.primitive_batchers[reduce_p] = _reduce_batcher


def tree_reduce(combine, operands, inits, axes):
  """`operands` folded over `axes` by `combine` (two lists of arrays -> list) in pairwise
  halving steps; `inits` pad odd lengths. A composite of differentiable primitives."""
  from jaxlite._src.lax.slicing_primitives import slice_p
  shape = core.get_aval(operands[0]).shape
  kept = [i for i in range(len(shape)) if i not in axes]
  rest = tuple(shape[i] for i in kept)
  n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
  xs = [_rows_first(x, list(axes) + kept, (n,) + rest) for x in operands]

  def rows(x, lo, hi):
    return slice_p.bind(x, start_indices=(lo,) + (0,) * len(rest), limit_indices=(hi,) + rest,
                        strides=None)
  while n > 1:
    if n % 2:
      xs = [shape_prims.concatenate_p.bind(x, _filled(i, (1,) + rest), dimension=0)
            for x, i in zip(xs, inits)]
      n += 1
    xs = combine([rows(x, 0, n // 2) for x in xs], [rows(x, n // 2, n) for x in xs])
    n //= 2
  if n == 0:
    return [_filled(i, rest) for i in inits]
  return [shape_prims.reshape_p.bind(x, new_sizes=rest, dimensions=None, sharding=None)
          for x in xs]


def _rows_first(x, perm, shape):
  if perm != sorted(perm):
    x = shape_prims.transpose_p.bind(x, permutation=tuple(perm))
  return shape_prims.reshape_p.bind(x, new_sizes=shape, dimensions=None, sharding=None)


def _filled(init, shape):
  return shape_prims.broadcast_in_dim_p.bind(init, shape=shape, broadcast_dimensions=(),
                                             sharding=None)


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
  n = len(primals) // 2

  def fold(*args):
    return tree_reduce(lambda a, b: core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *a, *b),
                       list(args[:n]), list(args[n:]), dimensions)
  return ad.jvp_flat(fold, primals, tangents, instantiate=False)


ad.jvp_rules[reduce_p] = _reduce_jvp


def _monoid_reducer(computation, init):
  """The reduce_* primitive that `computation` with identity `init` amounts to, if any."""
  from jaxlite._src.lax import elementwise_functions as lax
  try:
    val = core.concrete_or_error(np.asarray, init)
  except Exception:  # noqa: BLE001 - a traced init value is simply not a known monoid
    return None
  if type(val) is not np.ndarray or val.ndim:
    return None
  v = val.item()
  kind = kind_of(val.dtype)
  if computation is lax.add and v == 0:
    return reduce_sum_p
  if computation is lax.mul and v == 1:
    return reduce_prod_p
  if computation is lax.max and v == _lowest(val.dtype):
    return reduce_max_p
  if computation is lax.min and v == _highest(val.dtype):
    return reduce_min_p
  if kind in "iub":
    if computation is lax.bitwise_and and v in (-1, True) or \
        (computation is lax.bitwise_and and kind == "u" and v == np.iinfo(val.dtype).max):
      return reduce_and_p
    if computation is lax.bitwise_or and v in (0, False):
      return reduce_or_p
    if computation is lax.bitwise_xor and v in (0, False):
      return reduce_xor_p
  return None


def reduce(operands, init_values, computation, dimensions):  # noqa: A001 - lax's name
  """Folds `computation` over `dimensions` of each operand, starting from `init_values`."""
  from jaxlite._src.base import tree_util
  flat_ops, tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{tree} vs. {init_tree}")
  dims = _axes_tuple(dimensions)
  flat_ops = [asarg(x) for x in flat_ops]
  flat_inits = [asarg(x) for x in flat_inits]
  if len(flat_ops) == 1:
    prim = _monoid_reducer(computation, flat_inits[0])
    if prim is not None:
      return tree_util.tree_unflatten(tree, [prim.bind(flat_ops[0],
                                                       **prim.params_of(dims))])
  closed = _trace_computation(computation, tree, flat_inits)
  outs = reduce_p.bind(*flat_ops, *flat_inits, computation=computation, jaxpr=closed,
                       dimensions=dims)
  return tree_util.tree_unflatten(tree, outs)


def _trace_computation(computation, tree, flat_inits):
  from jaxlite._src.base import tree_util
  from jaxlite._src.interpreters import partial_eval as pe
  avals = [ShapedArray((), core.get_aval(x).dtype) for x in flat_inits]
  n = len(avals)

  def flat_fun(*args):
    a = tree_util.tree_unflatten(tree, list(args[:n]))
    b = tree_util.tree_unflatten(tree, list(args[n:]))
    return tree_util.tree_leaves(computation(a, b))

  return pe.trace_to_jaxpr(flat_fun, avals + avals)


# --- StableHLO lowering --------------------------------------------------------------------------

def _lowest(dtype):
  if dtype == np.bool_:
    return False
  return -np.inf if kind_of(dtype) in "fc" else np.iinfo(dtype).min


def _highest(dtype):
  if dtype == np.bool_:
    return True
  return np.inf if kind_of(dtype) in "fc" else np.iinfo(dtype).max


def _hlo_reduction(op, identity):
  """A reduction over `axes` by the binary StableHLO op `op`, from `identity(dtype)`."""
  def rule(ctx, x, *, axes, out_sharding=None):
    init = ctx.constant(np.asarray(identity(x.dtype), x.dtype))
    return ctx.op("reduce", [x, init], ctx.aval_out, {"dimensions": hlo.i64_array(axes)},
                  [ctx.scalar_region(x.dtype, op)])
  return rule


hlo.register(reduce_sum_p, _hlo_reduction("add", lambda d: 0))
hlo.register(reduce_prod_p, _hlo_reduction("multiply", lambda d: 1))
hlo.register(reduce_max_p, _hlo_reduction("maximum", _lowest))
hlo.register(reduce_min_p, _hlo_reduction("minimum", _highest))
hlo.register(reduce_and_p, _hlo_reduction("and", lambda d: True if d == np.bool_ else
                                          np.asarray(-1).astype(d)))
hlo.register(reduce_or_p, _hlo_reduction("or", lambda d: 0))
hlo.register(reduce_xor_p, _hlo_reduction("xor", lambda d: 0))


def _hlo_arg_reduction(direction, init):
  """argmax/argmin: a reduce over (value, index) pairs; the first extremum wins and a NaN
  beats every number (NumPy's and JAX's rule)."""
  def rule(ctx, x, *, axes, index_dtype):
    (axis,) = axes
    out = ctx.aval_out
    idx_av = ShapedArray(x.shape, np.dtype(index_dtype))
    idx = ctx.op("iota", [], idx_av, {"iota_dimension": f"{int(axis)} : i64"})
    sv, si = ShapedArray((), x.dtype), ShapedArray((), np.dtype(index_dtype))

    def body(c, xv, xi, yv, yi):
      pick_x = c.compare(xv, yv, direction)
      if kind_of(x.dtype) in "fc":
        pick_x = c.op("or", [pick_x, c.compare(xv, xv, "NE")], pick_x.aval)
      tie = c.op("and", [c.compare(xv, yv, "EQ"), c.compare(xi, yi, "LT")], pick_x.aval)
      pick_i = c.op("or", [pick_x, tie], pick_x.aval)
      return [c.select(pick_x, xv, yv), c.select(pick_i, xi, yi)]
    region = ctx.region([sv, si, sv, si], body)
    vals = ctx.op("reduce", [x, idx, ctx.constant(np.asarray(init(x.dtype), x.dtype)),
                             ctx.constant(np.asarray(0, index_dtype))],
                  [ShapedArray(out.shape, x.dtype), out], {"dimensions": hlo.i64_array(axes)},
                  [region])
    return vals[1]
  return rule


hlo.register(argmax_p, _hlo_arg_reduction("GT", _lowest))
hlo.register(argmin_p, _hlo_arg_reduction("LT", _highest))


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

# Monoid reductions over `axes`: tile by tile the same result; those with a collective are
# completed across devices by it (sharding propagation), the others keep their axes whole.
for _p, _collective in ((reduce_sum_p, "psum"), (reduce_max_p, "pmax"), (reduce_min_p, "pmin")):
  pk.register(_p, pk.REDUCTION, hoist=True, monoid_reduction=True, collective=_collective,
              role=_p.name)
_axes = lambda params: set(params["axes"])  # noqa: E731
for _p in (reduce_prod_p, reduce_and_p, reduce_or_p):
  pk.register(_p, pk.REDUCTION, hoist=True, monoid_reduction=True, dims=_axes, op=_p.name)
pk.register(reduce_xor_p, pk.REDUCTION, dims=_axes)
for _p in (argmax_p, argmin_p):
  pk.register(_p, pk.REDUCTION, hoist=True, dims=_axes)
for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
  pk.register(_p, pk.SHAPE, dims=lambda params: {params["axis"]})


shape_prims.register_above(reduce_sum_p=reduce_sum_p)
