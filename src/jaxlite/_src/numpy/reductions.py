"""jnp reductions: sum, prod, max, min, all, any, mean, var, std, argmax/argmin, cumulative ops,
quantiles, the nan-ignoring variants and logsumexp, composed from the lax reduction primitives.

Result dtypes follow JAX: bool and small integers sum in the default integer, means of integers
are floats, half-precision sums accumulate in float32, and every result is strongly typed.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_arguments import hashable_static
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import reductions as red
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.elementwise_functions import _convert_element_type
from jaxlite._src.numpy.where_reshape import _where, expand_dims, reshape
from jaxlite._src.numpy.util import check_arraylike, convert, dtype_weak, promote_dtypes, shape_of


def _is_half(dtype) -> bool:
  # Not `dtype.name in (...)`: the name property costs microseconds on every eager call.
  return dtype.itemsize == 2 and (dtype.kind == "f" or dtypes.is_bfloat16(dtype))


# --- argument handling -------------------------------------------------------------------------

def _as_array(name, a):
  check_arraylike(name, a)
  if isinstance(a, (core.Tracer, core.array_type)):
    return a
  from jaxlite._src.numpy.creation import asarray
  return asarray(a)


def reduction_axes(axis, ndim) -> tuple:
  """`axis` (None, an int or a sequence) as a tuple of non-negative axes, in the caller's order
  (as JAX's reductions stage them: `reduce_sum[axes=(1, 0)]` for `axis=(1, 0)`)."""
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (tuple, list, range)):  # (JAX takes a range too: sum(x, axis=range(2, n)))
    axes = tuple(_canonical_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
      raise ValueError(f"duplicate value in 'axis': {tuple(axis)}")
    return axes
  return (_canonical_axis(axis, ndim),)


def _as_spelled(axis, ndim, tuple_lists=True, strict_0d=False):
  """`axis` checked against `ndim` but kept as the caller spelled it, for a jitted reduction's
  static argument (JAX's `_ensure_optional_axes`): `axis=1` and `axis=-1` are two cache entries
  there, so a program using both prints two jaxprs (`_var`, `_var1`). The body canonicalizes.
  Where JAX passes the axis on untouched (`tuple_lists=False`: the nan reductions,
  count_nonzero) a list is its jit's unhashable static argument, a ValueError; those (and
  `strict_0d`: ptp) canonicalize strictly, so a 0-d array has no axis 0 (JAX's ValueError)."""
  if axis is None:
    return None
  if not tuple_lists and isinstance(axis, list):
    hashable_static(axis)  # raises JAX's "Non-hashable static arguments" ValueError
  if (strict_0d or not tuple_lists) and ndim == 0:
    _no_axis_of_0d(axis)
  reduction_axes(axis, ndim)  # its errors, before the jit
  try:
    return operator.index(axis)
  except TypeError:
    return tuple(operator.index(i) for i in axis)


def _no_axis_of_0d(axis) -> None:
  """JAX's error for an axis of a 0-d array where it canonicalizes strictly (the reductions
  themselves take axis 0 of a 0-d array)."""
  spelled = axis if isinstance(axis, (tuple, list, range)) else (axis,)
  if spelled:
    raise ValueError(f"axis {operator.index(spelled[0])} is out of bounds for array of "
                     "dimension 0")


def _canonical_axis(axis, ndim) -> int:
  axis = operator.index(axis)
  if not -ndim <= axis < ndim and not (ndim == 0 and axis in (0, -1)):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim if ndim else 0


def _keep_dims(out, axes):
  return expand_dims(out, axes) if axes else out


def _user_dtype(dtype, name):
  return None if dtype is None else dtypes.check_user_dtype(dtype, name)


def _sum_dtype(dtype, promote_integers: bool):
  """The accumulation dtype of sum/prod: bool and narrow integers widen like JAX."""
  if dtype == np.bool_:
    return dtypes.default_int_dtype()
  if promote_integers and dtype.kind in "iu":
    # Up to the default width (64 bits under x64, else 32), as JAX's _promote_integer_dtype.
    default = dtypes.default_int_dtype() if dtype.kind == "i" else dtypes.default_uint_dtype()
    return default if dtype.itemsize < default.itemsize else dtype
  return dtype


def _strong(x, dtype):
  return convert(x, dtype, False)


def _literal(value, dtype):
  """A strongly typed NumPy scalar (a jaxpr literal) of `value` in `dtype`. (An infinite
  `initial` cast to an integer dtype takes NumPy's value, as JAX's does, without its warning.)"""
  with np.errstate(invalid="ignore", over="ignore"):
    return np.asarray(value).astype(dtype)[()]


def _check_no_out(out, name):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


# --- eager fast paths --------------------------------------------------------------------------
# A strongly typed concrete array needs no argument handling: the general path would convert
# nothing and bind the same primitives, so these shortcuts give identical results.

def _plain_array(a) -> bool:
  return type(a) is core.array_type and not a.weak_type


def _keeps_dtype(dtype) -> bool:
  """Whether sum/prod compute and return in `dtype` itself (no widening)."""
  if dtype.kind in "fc":
    return dtype.itemsize >= 4
  return dtype.kind in "iu" and dtype.itemsize >= dtypes.default_int_dtype().itemsize


def _bind_reduction(prim, a, axes, keepdims):
  out = prim.bind(a, **prim.params_of(axes))
  return _keep_dims(out, axes) if keepdims else out


# --- the monoid reductions ---------------------------------------------------------------------

def _init_val(value, dtype):
  """JAX's _reduction_init_val: `value` as a NumPy scalar of `dtype`, an infinity clipped to an
  integer dtype's range (bool: value > 0)."""
  if dtype == np.bool_:
    return np.array(value > 0, dtype)[()]
  if dtype.kind in "iu" and not np.isfinite(value):
    info = dtypes.iinfo(dtype)
    return np.array(info.min if value < 0 else info.max, dtype)[()]
  return _literal(value, dtype)


def _reduce(name, prim, a, axis, keepdims, initial, where, identity, combine, init=None):
  """Reduces an already-converted `a` with `prim`; `identity` (else the reduction's `init`,
  which needs `initial`) fills masked-out elements, and `initial` is folded in with `combine`
  afterwards."""
  nd = len(shape_of(a))
  axes = reduction_axes(axis, nd)
  dtype = dtype_weak(a)[0]
  if where is not None:
    if identity is None and initial is None:
      raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                       "where mask one has to specify 'initial'")
    fill = identity if identity is not None else init
    a = _where(where, a, _init_val(fill, dtype))
  # (an out-of-range axis is left to the primitive's ValueError, as JAX's)
  if identity is None and initial is None and 0 in [shape_of(a)[i] for i in axes if i < nd]:
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
  out = prim.bind(a, **prim.params_of(axes))
  if initial is not None:
    out = combine(_literal_or_array(initial, dtype), out)
  return _keep_dims(out, axes) if keepdims else out


def _literal_or_array(x, dtype):
  if isinstance(x, (core.Tracer, core.array_type)):
    return _strong(x, dtype)
  return _literal(x, dtype)


def _add(x, y):
  return ew.add_p.bind(x, y)


def _mul(x, y):
  return ew.mul_p.bind(x, y)


def _max(x, y):
  return ew.max_p.bind(x, y)


def _min(x, y):
  return ew.min_p.bind(x, y)


def _and(x, y):
  return ew.and_p.bind(x, y)


def _or(x, y):
  return ew.or_p.bind(x, y)


def _sum_like(name, prim, unit, combine, bool_prim, bool_combine):
  """sum/prod; an explicit dtype=bool reduces in bool with `bool_prim` (or/and), as JAX's."""
  def reduce(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
             promote_integers=True):
    if _plain_array(a) and dtype is None and out is None and initial is None \
        and where is None and _keeps_dtype(a.dtype):
      return _bind_reduction(prim, a, reduction_axes(axis, a.ndim), keepdims)
    _check_no_out(out, name)
    a = _as_array(name, a)
    in_dtype = dtype_weak(a)[0]
    if in_dtype == np.bool_:  # JAX counts bools as int32 before any dtype cast or promotion
      a = _strong(a, dtypes.int32)
      in_dtype = dtypes.int32
    target = _user_dtype(dtype, name) or _sum_dtype(in_dtype, promote_integers)
    # Half precision accumulates in float32 unless the dtype was asked for (JAX's
    # upcast_f16_for_computation is `dtype is None`).
    compute = dtypes.float32 if _is_half(target) and dtype is None else target
    bool_out = target == np.bool_
    result = _reduce(name, bool_prim if bool_out else prim, _strong(a, compute), axis, keepdims,
                     initial, where, unit, bool_combine if bool_out else combine)
    return _strong(result, target)
  reduce.__name__ = reduce.__qualname__ = name
  reduce.__doc__ = f"jnp.{name}: the {name} over `axis` (all axes when None)."
  return reduce


sum = _sum_like("sum", red.reduce_sum_p, 0, _add, red.reduce_or_p, _or)  # noqa: A001
prod = _sum_like("prod", red.reduce_prod_p, 1, _mul, red.reduce_and_p, _and)


def _extremum(name, prim, combine):
  def reduce(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    if _plain_array(a) and out is None and initial is None and where is None \
        and a.size:
      return _bind_reduction(prim, a, reduction_axes(axis, a.ndim), keepdims)
    _check_no_out(out, name)
    a = _as_array(name, a)
    a = _strong(a, dtype_weak(a)[0])
    return _reduce(name, prim, a, axis, keepdims, initial, where, None, combine,
                   -np.inf if name == "max" else np.inf)
  reduce.__name__ = reduce.__qualname__ = name
  reduce.__doc__ = f"jnp.{name}: the {name}imum over `axis`; NaN propagates."
  return reduce


max = _extremum("max", red.reduce_max_p, _max)  # noqa: A001
min = _extremum("min", red.reduce_min_p, _min)  # noqa: A001
amax = max
amin = min


def _logical(name, prim, unit, combine):
  def reduce(a, axis=None, out=None, keepdims=False, *, where=None):
    if _plain_array(a) and out is None and where is None and a.dtype == np.bool_:
      return _bind_reduction(prim, a, reduction_axes(axis, a.ndim), keepdims)
    _check_no_out(out, name)
    a = _strong(_as_array(name, a), dtypes.bool_)
    return _reduce(name, prim, a, axis, keepdims, None, where, unit, combine)
  reduce.__name__ = reduce.__qualname__ = name
  reduce.__doc__ = f"jnp.{name}: whether {name} elements along `axis` are true."
  return reduce


all = _logical("all", red.reduce_and_p, True, _and)  # noqa: A001
any = _logical("any", red.reduce_or_p, False, _or)  # noqa: A001


# --- mean, var, std ----------------------------------------------------------------------------

def _inexact(dtype):
  return dtypes.to_inexact_dtype(dtype)


def _count(a, axes, where, dtype):
  """How many elements each reduction sees: a Python number, or a traced sum under `where`."""
  shape = shape_of(a)
  if where is None:
    return float(math.prod(shape[i] for i in axes))
  from jaxlite._src.numpy.where_reshape import broadcast_to
  mask = broadcast_to(where, shape) if tuple(shape_of(where)) != tuple(shape) else where
  ones = _strong(_strong(mask, dtypes.int32), dtype)  # JAX's sum counts bools as int32 (x64 too)
  return red.reduce_sum_p.bind(ones, axes=axes, out_sharding=None)


def _divide(total, count, dtype):
  if isinstance(count, float):
    count = _literal(count, dtype)
  return ew.div_p.bind(total, count)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None, upcast_f16=True):
  """jnp.mean: integers average as the default float; half floats accumulate in float32."""
  if _plain_array(a) and dtype is None and out is None and where is None:
    in_dtype = a.dtype
    if in_dtype.kind in "fc" and in_dtype.itemsize >= 4:
      axes = reduction_axes(axis, a.ndim)
      total = _bind_reduction(red.reduce_sum_p, a, axes, keepdims)
      return _divide(total, _count(a, axes, None, in_dtype), in_dtype)
  _check_no_out(out, "mean")
  a = _as_array("mean", a)
  target = _user_dtype(dtype, "mean") or _inexact(dtype_weak(a)[0])
  compute = dtypes.float32 if _is_half(target) and dtype is None else target
  axes = reduction_axes(axis, len(shape_of(a)))
  # the count first (under `where`, a sum of the mask), then the data cast: JAX's order
  count = _count(a, axes, where, compute)
  if dtype_weak(a)[0] == np.bool_:
    a = _strong(a, dtypes.int32)  # JAX's sum counts bools as int32 before any dtype cast
  a = _strong(a, compute)
  if keepdims and not isinstance(count, float):  # a traced count under `where`
    count = _keep_dims(count, axes)
  total = _reduce("mean", red.reduce_sum_p, a, axis, keepdims, None, where, 0, _add)
  return _strong(_divide(total, count, compute), target)


@internal_jit(static_argnames=("axis", "dtype", "keepdims"))
def _var(a, correction, axis=None, dtype=None, keepdims=False, where=None):
  in_dtype = dtype_weak(a)[0]
  compute = _inexact(in_dtype) if dtype is None else dtype
  out_dtype = compute
  if in_dtype.kind == "c" and dtype is None:
    out_dtype = np.dtype(np.float64 if in_dtype == np.complex128 else np.float32)
  half = _is_half(compute)  # float16/bfloat16 accumulate in float32, as JAX's _upcast_f16
  if half:
    compute = dtypes.float32
  norm_dtype = dtypes.float32 if half else out_dtype
  a = _strong(a, compute if compute.kind == "c" or in_dtype.kind != "c" else in_dtype)
  axes = reduction_axes(axis, len(shape_of(a)))
  count = _count(a, axes, where, norm_dtype)
  centered = ew.sub_p.bind(a, _mean_keepdims(a, axes, where, count))
  squared = _abs_square(centered)
  if where is not None:  # JAX's var counts the `where` entries again for its normalizer
    count = _count(a, axes, where, norm_dtype)
  kept = _keep_dims(count, axes) if keepdims and not isinstance(count, float) else count
  normalizer = ew.sub_p.bind(_literal_or_array(kept, norm_dtype)
                             if not isinstance(kept, float) else _literal(kept, norm_dtype),
                             _strong(correction, norm_dtype))
  total = _reduce("var", red.reduce_sum_p, squared, axis, keepdims, None, where, 0, _add)
  result = ew.div_p.bind(total, normalizer)
  if half:
    result = _strong(result, out_dtype)
  positive = ew.gt_p.bind(normalizer, _literal(0, norm_dtype))
  return _where(positive, result, np.nan)


def _mean_keepdims(a, axes, where, count):
  dtype = dtype_weak(a)[0]
  # (a traced count keeps its dims before the sum is taken, as JAX's mean orders them)
  count = _literal(count, dtype) if isinstance(count, float) else _strong(
      _keep_dims(count, axes), dtype)
  total = _reduce("mean", red.reduce_sum_p, a, axes, True, None, where, 0, _add)
  return _divide(total, count, dtype)


def _abs_square(x):
  if dtype_weak(x)[0].kind == "c":
    return ew.real_p.bind(ew.mul_p.bind(x, ew.conj_p.bind(x)))
  return ew.square_p.bind(x)


def _ddof(ddof, correction):
  if correction is None:
    return ddof
  if ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
  """jnp.var: the mean squared deviation, divided by (count - ddof); nan when that is <= 0."""
  _check_no_out(out, "var")
  a = _as_array("var", a)
  return _var(a, _ddof(ddof, correction), axis=_as_spelled(axis, len(shape_of(a))),
              dtype=_user_dtype(dtype, "var"), keepdims=bool(keepdims), where=where)


@internal_jit(static_argnames=("axis", "dtype", "keepdims"))
def _std(a, correction, axis=None, dtype=None, keepdims=False, where=None):
  return ew.sqrt_p.bind(_var(a, correction, axis=axis, dtype=dtype, keepdims=keepdims, where=where))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
  """jnp.std: the square root of var."""
  _check_no_out(out, "std")
  a = _as_array("std", a)
  return _std(a, _ddof(ddof, correction), axis=_as_spelled(axis, len(shape_of(a))),
              dtype=_user_dtype(dtype, "std"),
              keepdims=bool(keepdims), where=where)


# --- argmax, argmin ----------------------------------------------------------------------------

def _arg_extremum(name, prim):
  def fn(a, axis=None, out=None, keepdims=None):
    _check_no_out(out, name)
    a = _as_array(name, a)
    shape = shape_of(a)
    if axis is None:
      size = math.prod(shape)
      if size == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
      flat = a if len(shape) == 1 else shape_prims.reshape_p.bind(
          a, new_sizes=(size,), dimensions=None, sharding=None)
      out = prim.bind(flat, axes=(0,), index_dtype=dtypes.default_int_dtype())
      return expand_dims(out, tuple(range(len(shape)))) if keepdims and shape else out
    ax = _canonical_axis(axis, len(shape))
    out = prim.bind(a, axes=(ax,), index_dtype=dtypes.default_int_dtype())
    return expand_dims(out, (ax,)) if keepdims else out
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"jnp.{name}: indices of the first {name[3:]}imum along `axis` (NaN wins)."
  return fn


argmax = _arg_extremum("argmax", red.argmax_p)
argmin = _arg_extremum("argmin", red.argmin_p)


# --- cumulative reductions ---------------------------------------------------------------------

def _cumulative(name, prim, promote_bool, staged_as_jit=True):
  """jnp's running reduction; `staged_as_jit=False` traces it inline (JAX's cumulative_prod
  calls its reduction body directly, where cumsum and cumprod are jits)."""
  def body(a, axis=None, dtype=None):
    if axis is None:
      a = reshape(a, (-1,))
      axis = 0
    in_dtype = dtype_weak(a)[0]
    target = dtype or (dtypes.default_int_dtype() if promote_bool and in_dtype == np.bool_
                       else in_dtype)
    nd = len(shape_of(a))
    if target == np.bool_:
      # lax accumulates numbers only: nonzero-ness first (so [-1, 1] cannot cancel), counted
      # in the default integer, then back to bool, as JAX's _cumulative_reduction.
      if in_dtype != np.bool_:
        a = ew.ne_p.bind(a, _literal(0, in_dtype))
      out = prim.bind(_strong(a, dtypes.default_int_dtype()), axis=_canonical_axis(axis, nd),
                      reverse=False)
      return _strong(out, target)
    a = _strong(a, target)
    return prim.bind(a, axis=_canonical_axis(axis, nd), reverse=False)

  jitted = internal_jit(static_argnames=("axis", "dtype"), name=name)(body) if staged_as_jit \
      else body

  def fn(a, axis=None, dtype=None, out=None):
    _check_no_out(out, name)
    a = _as_array(name, a)
    if axis is not None:
      _canonical_axis(axis, len(shape_of(a)))
    return jitted(a, axis=None if axis is None else operator.index(axis),
                  dtype=_user_dtype(dtype, name))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"jnp.{name}: the running {name[3:]} along `axis` (flattened when None)."
  return fn


cumsum = _cumulative("cumsum", red.cumsum_p, True)
cumprod = _cumulative("cumprod", red.cumprod_p, True)
# The jit JAX's cumulative_sum calls (its integer promotion is the dtype passed in here).
_cumsum_with_promotion = _cumulative("_cumsum_with_promotion", red.cumsum_p, True)
_cumulative_prod = _cumulative("cumulative_prod", red.cumprod_p, True, staged_as_jit=False)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative_sum: like cumsum, optionally starting with a zero.

  Unlike cumsum, narrow integers accumulate in the default integer type, as `sum` does (JAX's
  `_cumsum_with_promotion`)."""
  if dtype is None:
    dtype = _sum_dtype(dtype_weak(_as_array("cumulative_sum", x))[0], True)
  return _cumulative_with_initial(_cumsum_with_promotion, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative_prod: like cumprod, optionally starting with a one."""
  return _cumulative_with_initial(_cumulative_prod, x, axis, dtype, include_initial, 1)


def _cumulative_with_initial(fn, x, axis, dtype, include_initial, unit):
  x = _as_array(fn.__name__, x)
  nd = len(shape_of(x))
  if nd == 0:
    raise ValueError("The input must be non-scalar to take a cumulative "
                     f"{'sum' if unit == 0 else 'product'}, however a scalar value or scalar "
                     "array was given.")
  if axis is None:
    if nd > 1:
      raise ValueError(f"The input array has rank {nd}, however axis was not set to an explicit "
                       "value. The axis argument is only optional for one-dimensional arrays.")
    axis = 0
  out = fn(x, axis=axis, dtype=dtype)
  if not include_initial:
    return out
  from jaxlite._src.lax import shape as lax_shape
  ax = _canonical_axis(axis, nd)
  pad_shape = list(shape_of(out))
  pad_shape[ax] = 1
  from jaxlite._src.numpy.creation import full
  first = full(pad_shape, unit, dtype_weak(out)[0])
  return lax_shape.concatenate([first, out], ax)


# --- nan-ignoring variants ---------------------------------------------------------------------

def _isnan(a):
  return ew.ne_p.bind(a, a)


def _nan_to(a, value):
  """`a` with NaNs replaced by `value` (a no-op for non-float inputs). The fill is a strong
  NumPy scalar of a's dtype (JAX's _reduction_init_val), so a weak `a` is the operand that
  `_where` converts, inside its jaxpr."""
  dtype = dtype_weak(a)[0]
  if not dtypes.is_inexact(dtype):
    return a
  return _where(_isnan(a), np.array(value, dtype), a)


def _nan_reduction(name, reduce_fn, fill):
  @internal_jit(static_argnames=("axis", "dtype", "keepdims"), name=name)
  def jitted(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
    kwargs = {} if dtype is None else {"dtype": dtype}
    return reduce_fn(_nan_to(a, fill(dtype_weak(a)[0])), axis=axis, keepdims=keepdims,
                     initial=initial, where=where, **kwargs)

  def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _check_no_out(out, name)
    a = _as_array(name, a)
    axis = _as_spelled(axis, len(shape_of(a)), tuple_lists=False)
    return jitted(a, axis=axis, dtype=_user_dtype(dtype, name), keepdims=bool(keepdims),
                  initial=_initial_operand(name, initial), where=where)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"jnp.{name}: {name[3:]} treating NaNs as absent."
  return fn


def _initial_operand(name, initial):
  """A nan reduction's `initial`: an operand of JAX's jit, so cast to the array's dtype inside
  it as XLA casts (an unsigned nansum from initial=-1.0 starts at 0), eagerly too; a number
  would be NumPy's cast (4294967295) in the eager body."""
  if initial is None or isinstance(initial, core.Tracer):
    return initial
  return _as_array(name, initial)


def _zero(dtype):
  return 0.0


def _one(dtype):
  return 1.0


def _neg_inf(dtype):
  return -np.inf


def _pos_inf(dtype):
  return np.inf


nansum = _nan_reduction("nansum", sum, _zero)
nanprod = _nan_reduction("nanprod", prod, _one)


def _nan_extremum(name, reduce_fn, fill):
  @internal_jit(static_argnames=("axis", "keepdims"), name=name)
  def jitted(a, axis=None, keepdims=False, initial=None, where=None):
    out = reduce_fn(_nan_to(a, fill(None)), axis=axis, keepdims=keepdims, initial=initial,
                    where=where)
    if not dtypes.is_inexact(dtype_weak(a)[0]) or initial is not None:
      return out  # with an `initial`, an all-NaN slice gives it (JAX's nan_if_all_nan)
    # As JAX: every entry NaN, `where` or not; the NaN is lax._const(a, nan): a weak Python
    # float for a weak 0-d `a` (that `_where` casts), a strong NumPy scalar otherwise
    all_nan = all(_isnan(a), axis=axis, keepdims=keepdims)
    return _where(all_nan, ew._const(a, np.nan), out)

  def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _check_no_out(out, name)
    a = _as_array(name, a)
    axis = _as_spelled(axis, len(shape_of(a)), tuple_lists=False)
    return jitted(a, axis=axis, keepdims=bool(keepdims), initial=_initial_operand(name, initial),
                  where=where)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"jnp.{name}: {name[3:]} ignoring NaNs (NaN where a slice is all NaN)."
  return fn


nanmax = _nan_extremum("nanmax", max, _neg_inf)
nanmin = _nan_extremum("nanmin", min, _pos_inf)


@internal_jit(static_argnames=("axis", "dtype", "keepdims"), name="nanmean")
def _nanmean(a, axis=None, dtype=None, keepdims=False, where=None):
  in_dtype = dtype_weak(a)[0]
  if not dtypes.is_inexact(in_dtype):
    return mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
  target = dtype or in_dtype
  # As JAX stages it: the count of non-NaN entries under `where`, divided into nansum's jit.
  count = sum(ew.not_p.bind(_isnan(a)), axis=axis, dtype=target, keepdims=keepdims,
              where=where)
  total = nansum(a, axis, dtype=target, keepdims=keepdims, where=where)
  return ew.div_p.bind(total, count)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
  """jnp.nanmean: the mean of the non-NaN elements."""
  _check_no_out(out, "nanmean")
  a = _as_array("nanmean", a)
  axis = _as_spelled(axis, len(shape_of(a)), tuple_lists=False)
  return _nanmean(a, axis=axis, dtype=_user_dtype(dtype, "nanmean"), keepdims=bool(keepdims),
                  where=where)


@internal_jit(static_argnames=("axis", "dtype", "keepdims"), name="nanvar")
def _nanvar(a, axis=None, dtype=None, keepdims=False, ddof=0, where=None):
  """JAX's staging: nanmean's jit for the mean; NaNs zeroed after centring; the count of
  non-NaN entries (an integer) less `ddof`, and NaN where that is not positive. `ddof` is a
  jit argument only when it was passed (JAX's jit leaves defaults out)."""
  in_dtype = dtype_weak(a)[0]
  if dtype is not None:
    compute = out_dtype = dtype
  elif not dtypes.is_inexact(in_dtype):
    compute = out_dtype = _inexact(in_dtype)
  else:
    compute, out_dtype = in_dtype, np.array(0, in_dtype).real.dtype
  if _is_half(compute):  # half precision accumulates in float32 (JAX's _upcast_f16)
    compute = dtypes.float32
  a = _strong(a, compute)
  a_mean = nanmean(a, axis, dtype=compute, keepdims=True, where=where)
  centered = _abs_square(_where(_isnan(a), 0, ew.sub_p.bind(a, a_mean)))
  from jaxlite._src.numpy import ufuncs
  normalizer = ufuncs.subtract(sum(ew.not_p.bind(_isnan(a)), axis=axis, keepdims=keepdims,
                                   where=where), ddof)
  empty = ew.le_p.bind(normalizer, _literal(0, dtype_weak(normalizer)[0]))
  result = _where(empty, np.nan, sum(centered, axis, keepdims=keepdims, where=where))
  divisor = _where(empty, 1, normalizer)
  result = ew.div_p.bind(result, _strong(divisor, dtype_weak(result)[0]))
  return _strong(result, out_dtype)


def _ddof_kwargs(ddof):
  return {} if type(ddof) is int and ddof == 0 else {"ddof": ddof}


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
  """jnp.nanvar: the variance of the non-NaN elements."""
  _check_no_out(out, "nanvar")
  a = _as_array("nanvar", a)
  axis = _as_spelled(axis, len(shape_of(a)), tuple_lists=False)
  return _nanvar(a, axis=axis, dtype=_user_dtype(dtype, "nanvar"), keepdims=bool(keepdims),
                 where=where, **_ddof_kwargs(ddof))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
  """jnp.nanstd: the square root of nanvar."""
  _check_no_out(out, "nanstd")
  axis = _as_spelled(axis, len(shape_of(a)), tuple_lists=False)
  return _nanstd(_as_array("nanstd", a), axis=axis, dtype=_user_dtype(dtype, "nanstd"),
                 keepdims=bool(keepdims), where=where, **_ddof_kwargs(ddof))


@internal_jit(static_argnames=("axis", "dtype", "keepdims"), name="nanstd")
def _nanstd(a, axis=None, dtype=None, keepdims=False, ddof=0, where=None):
  return ew.sqrt_p.bind(_nanvar(a, axis=axis, dtype=dtype, keepdims=keepdims, ddof=ddof,
                                where=where))


def _nan_arg_extremum(name, arg_fn, fill):
  @internal_jit(static_argnames=("axis", "keepdims"), name=f"_{name}")
  def jitted(a, axis=None, keepdims=None):
    if not dtypes.is_inexact(dtype_weak(a)[0]):
      return arg_fn(a, axis=axis, keepdims=keepdims)
    nan_mask = _isnan(a)
    out = arg_fn(_where(nan_mask, fill, a), axis=axis, keepdims=keepdims)
    return _where(all(nan_mask, axis=axis, keepdims=bool(keepdims)), -1, out)

  def fn(a, axis=None, out=None, keepdims=None):
    _check_no_out(out, name)
    a = _as_array(name, a)
    return jitted(a, axis=None if axis is None else operator.index(axis), keepdims=keepdims)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"jnp.{name}: {name[3:]} ignoring NaNs (-1 where a slice is all NaN)."
  return fn


nanargmax = _nan_arg_extremum("nanargmax", argmax, -np.inf)
nanargmin = _nan_arg_extremum("nanargmin", argmin, np.inf)


# --- count_nonzero, ptp, average ---------------------------------------------------------------

@internal_jit(static_argnames=("axis", "keepdims"), name="count_nonzero")
def _count_nonzero(a, axis=None, keepdims=False):
  nonzero = ew.ne_p.bind(a, _literal(0, dtype_weak(a)[0]))
  return sum(nonzero, axis=axis, keepdims=keepdims)


def count_nonzero(a, axis=None, keepdims=False):
  """jnp.count_nonzero: how many elements along `axis` are not zero."""
  a = _as_array("count_nonzero", a)
  axis = _as_spelled(axis, len(shape_of(a)), tuple_lists=False)
  return _count_nonzero(a, axis=axis, keepdims=bool(keepdims))


@internal_jit(static_argnames=("axis", "keepdims"), name="_ptp")
def _ptp(a, axis=None, keepdims=False):
  return ew.sub_p.bind(max(a, axis=axis, keepdims=keepdims),
                       min(a, axis=axis, keepdims=keepdims))


def ptp(a, axis=None, out=None, keepdims=False):
  """jnp.ptp: max minus min along `axis`."""
  _check_no_out(out, "ptp")
  a = _as_array("ptp", a)
  # (booleans: sub's TypeError, after max's ValueError for an empty reduction, as in JAX)
  axis = _as_spelled(axis, len(shape_of(a)), strict_0d=True)
  return _ptp(a, axis=axis, keepdims=bool(keepdims))


def _average(a, axis=None, weights=None, returned=False, keepdims=False):
  from jaxlite._src.numpy.util import promote_dtypes_inexact
  from jaxlite._src.lax import convenience
  ndim = len(np.shape(a))
  if ndim == 0 and axis is not None:  # JAX's average checks its axes strictly
    _no_axis_of_0d(axis)
  axes = () if axis is None else reduction_axes(axis, ndim)
  if weights is None:  # every weight 1
    check_arraylike("average", a)
    (a,) = promote_dtypes_inexact(a)
    avg = mean(a, axis=axis, keepdims=keepdims)
    count = math.prod(shape_of(a)) if axis is None else math.prod(shape_of(a)[d] for d in axes)
    weights_sum = convenience.full((), count, dtype=dtype_weak(avg)[0])
  else:
    check_arraylike("average", a, weights)
    a, weights = promote_dtypes_inexact(a, weights)
    a_shape, w_shape = tuple(shape_of(a)), tuple(shape_of(weights))
    if a_shape != w_shape:
      if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
      if w_shape != tuple(a_shape[ax] for ax in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along specified "
                         "axis.")
      new_shape = tuple(d if i in axes else 1 for i, d in enumerate(a_shape))
      weights = shape_prims.reshape(weights, new_shape,
                                    dimensions=tuple(int(i) for i in np.argsort(axes)))
    weights_sum = sum(weights, axis=axis, keepdims=keepdims)
    avg = sum(a * weights, axis=axis, keepdims=keepdims) / weights_sum
  if returned:
    if tuple(shape_of(avg)) != tuple(shape_of(weights_sum)):
      from jaxlite._src.numpy.where_reshape import broadcast_to
      weights_sum = broadcast_to(weights_sum, tuple(shape_of(avg)))
    return avg, weights_sum
  return avg


_average_jit = []


def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """jnp.average: the (weighted) mean; with `returned`, also the sum of weights. An inlined jit
  (as JAX's: its arguments are traced, so weak operands promote together, and no jit eqn)."""
  if not _average_jit:
    from jaxlite._src.transforms.jit_function import PjitFunction
    _average_jit.append(PjitFunction(_average, static_argnames=("axis", "returned", "keepdims"),
                                     inline=True))
  axis = tuple(axis) if isinstance(axis, list) else axis
  return _average_jit[0](a, axis, weights, returned, keepdims)


# --- logsumexp ---------------------------------------------------------------------------------

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """log(sum(b * exp(a))) along `axis`, shifted by the max so that it cannot overflow.

  Staged as JAX stages it: reductions without kept dims, the shift expanded back by
  broadcast_in_dim, and lax ops (no broadcast_to) between them."""
  from jaxlite._src.transforms.ad_api import stop_gradient
  from jaxlite._src.lax.convenience import full_like
  from jaxlite._src.numpy.util import promote_args_inexact
  a = _as_array("logsumexp", a)
  if where is not None:
    a = _where(where, a, 0)
  if b is not None:
    a, b = promote_args_inexact("logsumexp", a, _as_array("logsumexp", b))
    from jaxlite._src.numpy.util import broadcast_shapes
    broadcast_shapes(shape_of(b), shape_of(a))  # JAX broadcasts a with b: its ValueError
    a = _where(ew.ne_p.bind(*promote_dtypes(b, 0)), a, -np.inf)
  else:
    (a,) = promote_args_inexact("logsumexp", a)
  dtype = dtype_weak(a)[0]
  complex_ = dtype.kind == "c"
  axes = reduction_axes(axis, len(shape_of(a)))
  amax = max(ew.real_p.bind(a) if complex_ else a, axis=axes, keepdims=keepdims, where=where,
             initial=-np.inf)
  # The shift carries no gradient (as JAX's): it cancels mathematically, and differentiating it
  # through `max` gives NaN second derivatives where terms are left out.
  amax = stop_gradient(ew.select_n_p.bind(ew.is_finite_p.bind(amax), full_like(amax, 0), amax))
  shift = amax if keepdims or not axes else expand_dims(amax, axes)  # (0-d: nothing to expand)
  exp = ew.exp_p.bind(ew.sub_p.bind(a, _convert_to(shift, dtype)))
  if b is not None:
    exp = ew.mul_p.bind(exp, b)
  total = sum(exp, axis=axes, keepdims=keepdims, where=where)
  sign = ew.sign_p.bind(total)
  if return_sign or not complex_:
    total = ew.abs_p.bind(total)
  out = ew.add_p.bind(ew.log_p.bind(total), _convert_to(amax, dtype_weak(total)[0]))
  if return_sign:
    return out, sign
  if b is not None and not complex_:
    out = _where(ew.lt_p.bind(sign, _literal(0, dtype)), _literal(np.nan, dtype), out)
  return out


def _convert_to(x, dtype):
  """`x.astype(dtype)`: no eqn when it already has that dtype."""
  return x if dtype_weak(x)[0] == dtype else _convert_element_type(x, dtype, weak_type=False)
