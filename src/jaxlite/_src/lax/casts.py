"""The cast primitives: `convert_element_type` (XLA's saturating float-to-int semantics, the folding
of scalar literal casts), `bitcast_convert_type` and `reduce_precision`, each with its rules,
StableHLO lowering and kind; `convert_value` is the NumPy cast every eager path shares.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base import extended_dtypes
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.compiler.xla import lowering as hlo
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.lax.families import first_weak, kind_of, numpy_eqn_templates


# --- convert_element_type ---------------------------------------------------------------------

def convert_value(x, new_dtype):
  """NumPy cast with XLA semantics: float->int saturates and maps NaN to 0."""
  x = np.asarray(x)
  if extended_dtypes.has_rules(new_dtype):  # a user extended dtype: stored as its physical type
    new_dtype = extended_dtypes.physical_dtype(new_dtype)
  old = x.dtype
  if old == new_dtype:
    return x
  if new_dtype == dtypes.float0:
    return np.zeros(x.shape, dtypes.float0)
  if old == dtypes.float0:  # a zero tangent of an integer value (jacfwd's unravel casts it)
    return np.zeros(x.shape, new_dtype)
  if new_dtype == np.bool_:
    return x != 0
  if old.kind == "c" and new_dtype.kind != "c":
    x = x.real
    old = x.dtype
  if kind_of(old) == "f" and new_dtype.kind in "iu":
    info = np.iinfo(new_dtype)
    with np.errstate(all="ignore"):
      xf = x.astype(np.float64)
      out = np.where(np.isnan(xf), 0, np.clip(np.trunc(xf), info.min, info.max))
      # float64 cannot hold int64's max exactly; build the extremes as integers.
      res = out.astype(new_dtype)
      if new_dtype.itemsize == 8:
        res = np.where(xf >= float(info.max), info.max, res).astype(new_dtype)
        res = np.where(xf <= float(info.min), info.min, res).astype(new_dtype)
      return res
  with np.errstate(all="ignore"):
    return x.astype(new_dtype)


def check_convertible(old_dtype, new_dtype) -> None:
  """Typed PRNG keys (extended dtypes) convert to nothing else, with JAX's error; a user extended
  dtype converts as its `_rules` allow."""
  if old_dtype != new_dtype and (hasattr(old_dtype, "_is_extended")
                                 or hasattr(new_dtype, "_is_extended")) \
      and not extended_dtypes.can_convert(old_dtype, new_dtype):
    raise ValueError(f"Cannot convert_element_type from {dtypes.dtype_name(old_dtype)} to "
                     f"{dtypes.dtype_name(new_dtype)}")


def _convert_abstract(x, new_dtype, weak_type=False, sharding=None):
  check_convertible(x.dtype, new_dtype)
  return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, new_dtype, weak_type=False, sharding=None):
  return convert_value(x, new_dtype)


class _ConvertElementType(core.Primitive):
  """convert_element_type; an eager cast to a user extended dtype (extended_dtypes.py) makes an
  Array typed by it (the eager weak-type path would type the result by its NumPy value)."""
  __slots__ = ()

  def bind(self, *args, **params):
    dt = params["new_dtype"]  # (the isinstance test first: NumPy dtypes pass it at no cost)
    if not isinstance(dt, np.dtype) and getattr(dt, "_rules", None) is not None and \
        core.current_trace() is core.eval_trace:
      (x,) = args
      check_convertible(core.get_aval(x).dtype, params["new_dtype"])
      value = convert_value(np.asarray(x), params["new_dtype"])
      return core.make_array(value, ShapedArray(value.shape, params["new_dtype"]))
    return core._state.trace.process_primitive(self, args, params)  # Primitive.bind, inlined


convert_element_type_p = _ConvertElementType("convert_element_type")
pp.param_rules[convert_element_type_p] = pp.ParamRule(drop={"sharding": pp.always})
convert_element_type_p.def_impl(_convert_impl)
convert_element_type_p.def_abstract_eval(_convert_abstract)
convert_element_type_p.eager_weak_type = lambda args, params: params["weak_type"]
batching.defvectorized(convert_element_type_p)


def _convert_fold(atoms, params, out_aval):
  """A scalar literal operand is cast while tracing (the eqn is never staged), as JAX folds
  convert_element_type of Python and NumPy scalar constants. The cast is NumPy's, as JAX's fold:
  an out-of-range float becomes what NumPy gives (int32 min for 1e10), not XLA's saturation."""
  (x,) = atoms
  new_dtype = params["new_dtype"]
  if type(x) is not core.Literal or x.aval.shape or hasattr(new_dtype, "_is_extended") \
      or hasattr(x.aval.dtype, "_is_extended"):
    return None
  val = np.asarray(x.val)
  if val.dtype.kind == "c" and new_dtype.kind != "c":
    val = val.real
  with np.errstate(invalid="ignore", over="ignore"):
    return core.Literal(val.astype(new_dtype)[()], out_aval)


pe.const_fold_rules[convert_element_type_p] = _convert_fold


def _convert_jvp(t, y, x, **params):
  if ad.tangent_dtype(params["new_dtype"]) == dtypes.float0:
    return ad.Zero.from_primal_value(y)
  return convert_element_type_p.bind(t, **params)


def _convert_transpose(ct, x, **params):
  old = x.aval
  if ad.tangent_dtype(old.dtype) == dtypes.float0:
    return [ad.Zero(ad.tangent_aval(old))]
  return [cast(ct, old.dtype, old.weak_type)]


ad.defjvp2(convert_element_type_p, _convert_jvp)
ad.primitive_transposes[convert_element_type_p] = _convert_transpose


def _bitcast_abstract(x, new_dtype):
  old, new = x.dtype.itemsize, np.dtype(new_dtype).itemsize
  if old == new:
    shape = x.shape
  elif old > new:
    shape = x.shape + (old // new,)
  else:
    if not x.shape or x.shape[-1] != new // old:
      raise TypeError(f"Attempting to convert array of shape {x.shape} from "
                      f"{x.dtype.name} to {np.dtype(new_dtype).name}: last dimension must be "
                      f"{new // old}.")
    shape = x.shape[:-1]
  return ShapedArray(shape, np.dtype(new_dtype), False)


def _bitcast_impl(x, new_dtype):
  x = np.asarray(x, order="C")  # ascontiguousarray would make a 0-d value 1-d
  out_aval = _bitcast_abstract(core.get_aval(x), new_dtype)
  return x.view(new_dtype).reshape(out_aval.shape)


bitcast_convert_type_p = core.Primitive("bitcast_convert_type")
bitcast_convert_type_p.def_impl(_bitcast_impl)
bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract)


def _bitcast_template(eqn):
  """A same-width bitcast between NumPy dtypes: a view of the operand's buffer."""
  old, new = eqn.invars[0].aval.dtype, eqn.outvars[0].aval.dtype
  if isinstance(old, np.dtype) and isinstance(new, np.dtype) and old.itemsize == new.itemsize \
      and old.kind in "biufc" and new.kind in "biufc":
    return f"np.asarray({{0}}).view('{new.name}')"
  return None


numpy_eqn_templates[bitcast_convert_type_p] = _bitcast_template


def _bitcast_batcher(vals, dims, *, new_dtype):
  # A narrowing cast eats the last axis: keep the batch axis out of its way.
  (x,), (bdim,) = vals, dims
  if bdim == len(x.shape) - 1 and np.dtype(new_dtype).itemsize > x.dtype.itemsize:
    x, bdim = batching.moveaxis(x, bdim, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), bdim


batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_batcher
ad.defjvp_zero(bitcast_convert_type_p)


def _reduce_precision_impl(x, exponent_bits, mantissa_bits):
  """XLA's ReducePrecision on the bits, for any bit counts: the mantissa rounded to nearest even,
  then exponents past the narrower range become inf (overflow) or a signed zero (underflow,
  subnormals included, as XLA flushes them); NaNs stay NaN."""
  x = np.asarray(x)
  info = np.finfo(x.dtype)
  src_m, src_e = info.nmant, info.nexp
  uint = np.dtype(f"u{x.dtype.itemsize}").type
  bits = x.view(uint)
  one = uint(1)
  if mantissa_bits < src_m:
    last_bit = one << uint(src_m - mantissa_bits)
    bias = (last_bit >> one) - one + ((bits & last_bit) >> uint(src_m - mantissa_bits))
    bits = (bits + bias) & ~(last_bit - one)
  if exponent_bits < src_e:
    exponent_mask = ((one << uint(src_e)) - one) << uint(src_m)
    src_bias, reduced_bias = (1 << (src_e - 1)) - 1, (1 << (exponent_bits - 1)) - 1
    exponent = bits & exponent_mask
    sign = bits & (one << uint(src_e + src_m))
    bits = np.where(exponent > uint(src_bias + reduced_bias) << uint(src_m), sign | exponent_mask,
                    np.where(exponent <= uint(src_bias - reduced_bias) << uint(src_m), sign,
                             bits))
  out = np.asarray(bits, dtype=uint).view(x.dtype)
  return np.where(np.isnan(x), x, out)


reduce_precision_p = core.Primitive("reduce_precision")
reduce_precision_p.def_impl(_reduce_precision_impl)
reduce_precision_p.def_abstract_eval(lambda x, **_: x)
reduce_precision_p.eager_weak_type = first_weak
batching.defvectorized(reduce_precision_p)
ad.deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])


def cast(x, dtype, weak_type=False):
  """`x` cast to `dtype`; a concrete operand is cast right away (JAX folds such casts)."""
  aval = core.get_aval(x)
  if aval.dtype == dtype and aval.weak_type == weak_type:
    return x
  if type(x) is core.array_type and array_lib.numpy_eager(x):
    return array_lib.like(x, np.asarray(convert_value(x._host_value(), dtype)), weak_type)
  if type(x) in dtypes.typed_scalar_types or isinstance(x, np.generic):
    return convert_value(np.asarray(x, aval.dtype), dtype)[()]
  return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


# StableHLO lowerings (bitcast and reduce_precision are one op each).
def _hlo_convert(ctx, x, *, new_dtype, weak_type=False, sharding=None):
  out = ctx.aval_out
  # (a user-defined extended dtype converts as the data it is stored in)
  x_dtype, out_dtype = hlo.storage_dtype(x.dtype), hlo.storage_dtype(out.dtype)
  if x_dtype.kind == "c" and out_dtype.kind != "c":  # the real part, as JAX converts
    x = ctx.op("real", [x], ShapedArray(x.shape, np.finfo(x_dtype).dtype))
    x_dtype = x.dtype
  if out_dtype == np.bool_ and x_dtype != np.bool_:
    return ctx.compare(x, ctx.zeros(x.shape, x_dtype), "NE")
  return ctx.convert(x, out_dtype)


hlo.register(convert_element_type_p, _hlo_convert)
hlo.register(bitcast_convert_type_p, lambda ctx, x, new_dtype: ctx.op(
    "bitcast_convert", [x], ctx.aval_out))
hlo.register(reduce_precision_p, lambda ctx, x, exponent_bits, mantissa_bits: ctx.op(
    "reduce_precision", [x], x.aval, {"exponent_bits": f"{int(exponent_bits)} : i32",
                                      "mantissa_bits": f"{int(mantissa_bits)} : i32"}))


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

for _p in (bitcast_convert_type_p, reduce_precision_p):
  pk.register(_p, pk.ELEMENTWISE, fuse=True, op=_p.name)
pk.register(convert_element_type_p, pk.ELEMENTWISE, fuse=True, role="convert_element_type")
