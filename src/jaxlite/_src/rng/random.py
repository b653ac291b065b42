"""`jax.random`: explicit, splittable keys and samplers bit-compatible with JAX's threefry2x32.

Samplers are jnp/lax compositions wrapped in named internal jits (`_uniform`, `_normal`, …), so
they trace under jit and print like JAX; only the key primitives (`_src/rng/prng.py`) and the gamma
rejection sampler (`random_gamma`) run NumPy directly.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np

from jaxlite._src.base import array as array_lib
from jaxlite._src.base import core, dtypes
from jaxlite._src.rng import prng, prng_threefry
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base.config import config
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise_functions as _lax
from jaxlite._src.lax import shape as _shape
from jaxlite._src.rng import prng_structural
from jaxlite._src.rng import prng_impls
from jaxlite._src.rng.prng import PRNGKeyArray

# --- namespaces filled in by other modules (looked up at call time) -----------------------------


def _lax_ns():
  from jaxlite._src.lax import namespace as lax
  return lax


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _special(name: str):
  """lax's special function `name` (erf, erf_inv, lgamma)."""
  from jaxlite._src.lax import special
  return getattr(special, name)


# --- keys --------------------------------------------------------------------------------------

def _is_typed_key(x) -> bool:
  return prng.is_key_dtype(getattr(x, "dtype", None))


def _is_arraylike(x) -> bool:
  return isinstance(x, (core.Array, np.ndarray, np.generic, list, tuple))


def _check_prng_key(name: str, key, allow_batched: bool = False):
  """(typed key, whether it was a raw uint32 key) with JAX's errors for misuse."""
  if _is_typed_key(key):
    typed, wrapped = key, False
  elif _is_arraylike(key):
    typed, wrapped = prng.random_wrap(_as_uint_array(key), impl=prng.resolve_impl(None)), True
  else:
    # JAX's words: a key is an array (jax.random.key(0) or a raw uint32[2] PRNGKey), not a seed
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have ndim, "
                    f"shape, and dtype attributes. Got {key}")
  if not allow_batched and typed.ndim:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{np.shape(key)} != (). Use jax.vmap for batching.")
  return typed, wrapped


def _as_uint_array(x):
  if isinstance(x, core.Array):
    return x
  return np.asarray(x)


def _return_keys(wrapped: bool, keys):
  return prng.random_unwrap(keys) if wrapped and not config.jax_enable_custom_prng else keys


def _canonical_seed(seed):
  """An integer seed as JAX's random_seed sees it: Python ints via int64, then canonical."""
  if isinstance(seed, core.Tracer) or type(seed) is core.array_type:
    return seed
  if type(seed) is int:
    if not -(1 << 63) <= seed < (1 << 63):
      raise OverflowError("Python int too large to convert to C long")
    return np.int64(seed).astype(dtypes.default_int_dtype())
  arr = np.asarray(seed)
  return arr.astype(dtypes.canonicalize_dtype(arr.dtype))


def _seed_error(seed):
  aval = core.get_aval(seed if not isinstance(seed, float) else np.float32(seed))
  weak = "~" if isinstance(seed, float) or getattr(aval, "weak_type", False) else ""
  shown = aval.update(weak_type=False) if weak else aval
  return TypeError(f"PRNG key seed must be an integer; got JitTracer({weak}{shown})")


def _make_key(ctor_name: str, seed, impl_spec):
  impl = prng.resolve_impl(impl_spec)
  if _is_typed_key(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                    f"{np.shape(seed)} != (). Use jax.vmap for batching")
  if isinstance(seed, (float, complex)) or not dtypes.issubdtype(
      dtypes.dtype_and_weak(seed)[0], np.integer):
    raise _seed_error(seed)
  return prng.random_seed(_canonical_seed(seed), impl=impl)


def key(seed, *, impl=None, dtype=None):
  """A typed PRNG key (dtype `key<fry>`, shape `()`) from an integer seed."""
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.key")
    impl = dtype
  return _make_key("key", seed, impl)


def PRNGKey(seed, *, impl=None):
  """A legacy raw key: uint32[2] key data."""
  return prng.random_unwrap(_make_key("PRNGKey", seed, impl))


def split(key, num: int | Sequence[int] = 2):
  """`num` new keys (or a key array of shape `num`) from one key."""
  typed, wrapped = _check_prng_key("split", key)
  return _return_keys(wrapped, _split(typed, num))


def _split(key, num=2):
  if key.ndim:
    raise TypeError("split accepts a single key, but was given a key array of shape "
                    f"{key.shape} != (). Use jax.vmap for batching.")
  shape = tuple(num) if isinstance(num, Sequence) else (num,)
  return prng.random_split(key, shape=core.canonicalize_shape(shape))


def _unstack_keys(keys) -> list:
  """The keys along axis 0, as JAX's unpacking prints them under jit (slice + squeeze)."""
  if type(keys) is PRNGKeyArray:
    return list(keys)
  return _unstack_values(keys)


def _split2(key, num: int = 2) -> list:
  return _unstack_keys(_split(key, num))


def fold_in(key, data):
  """A new key that is a deterministic function of `key` and 32-bit `data`."""
  typed, wrapped = _check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of"
                    f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
  return _return_keys(wrapped, prng.random_fold_in(typed, _as_uint32(data)))


def _as_uint32(data):
  if isinstance(data, (int, np.integer)) and not isinstance(data, np.uint32):
    if not 0 <= int(data) <= prng_threefry._MASK32:
      raise OverflowError(f"Python integer {int(data)} out of bounds for uint32")
    return np.uint32(data)
  if isinstance(data, core.Array) and data.dtype == dtypes.uint32:
    return data
  if isinstance(data, core.Array):
    return _lax.convert_element_type(data, dtypes.uint32)
  return np.asarray(data).astype(np.uint32)


def key_data(keys):
  """The uint32 key data (shape `keys.shape + (2,)`) under typed keys."""
  typed, _ = _check_prng_key("key_data", keys, allow_batched=True)
  return prng.random_unwrap(typed)


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """Typed keys over uint32 key data of shape (..., 2)."""
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                       "jax.random.wrap_key_data")
    impl = dtype
  return prng.random_wrap(_as_uint_array(key_bits_array), impl=prng.resolve_impl(impl))


def key_impl(keys):
  """The name of the keys' implementation (its spec when it is not a registered one)."""
  typed, _ = _check_prng_key("key_impl", keys, allow_batched=True)
  return prng_impls.key_spec(typed.dtype._impl)


def key_dtype(impl=None):
  return prng.KeyTy(prng.resolve_impl(impl))


def default_prng_impl():
  return prng.resolve_impl(None)


def clone(key):
  """A copy of `key` (keys are immutable values, so the key itself)."""
  return key


# --- shared argument checks --------------------------------------------------------------------

def _check_shape(name: str, shape, *param_shapes) -> None:
  if param_shapes:
    shapes = [tuple(shape), *(tuple(s) for s in param_shapes)]
    try:
      full = np.broadcast_shapes(*shapes)
    except ValueError:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None
    if full != tuple(shape):
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       "argument, and the result of broadcasting the shapes must equal the "
                       f"shape argument, but got result {full} for shape argument {shape}.")


def _broadcast_shapes(name: str, shape, *args):
  if shape is None:
    return tuple(np.broadcast_shapes(*(np.shape(a) for a in args))) if args else ()
  shape = core.canonicalize_shape(shape)
  _check_shape(name, shape, *(np.shape(a) for a in args))
  return shape


def _user_dtype(name: str, dtype, default, kind, kind_name: str):
  if isinstance(dtype, str) and dtype == "bfloat16" and dtypes.load_ml_dtypes():
    dtype = dtypes.bfloat16  # NumPy does not know ml_dtypes' names
  dtype = dtypes.check_user_dtype(default if dtype is None else dtype)  # JAX names no sampler
  if not dtypes.issubdtype(dtype, kind):
    raise ValueError(f"dtype argument to `{name}` must be {kind_name} dtype, got {dtype}")
  return dtype


_float_dtype = partial(_user_dtype, default=float, kind=np.floating, kind_name="a float")


def _broadcast_to_rank(x, rank: int):
  ndim = np.ndim(x)
  if ndim == rank:
    return x
  shape = (1,) * (rank - ndim) + tuple(np.shape(x))
  return _shape.broadcast_in_dim(x, shape, tuple(range(rank - ndim, rank)))


def _const(dtype, value):
  return np.array(value, dtype)[()]


# --- bits and uniform --------------------------------------------------------------------------

def bits(key, shape=(), dtype=None):
  """Uniform random unsigned integers (`dtype` uint8/16/32/64)."""
  typed, _ = _check_prng_key("bits", key)
  dtype = dtypes.default_uint_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.unsignedinteger):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  shape = core.canonicalize_shape(shape)
  return prng.random_bits(typed, bit_width=dtype.itemsize * 8, shape=shape)


def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
  """Uniform floats in [minval, maxval)."""
  typed, _ = _check_prng_key("uniform", key)
  dtype = _float_dtype("uniform", dtype)
  shape = core.canonicalize_shape(shape)
  return _uniform(typed, minval, maxval, shape, dtype)


@internal_jit(static_argnums=(3, 4))
def _uniform(key, minval, maxval, shape, dtype):
  _check_shape("uniform", shape)
  finfo = dtypes.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  minval = _lax.convert_element_type(minval, dtype)
  maxval = _lax.convert_element_type(maxval, dtype)
  minval = _broadcast_to_rank(minval, len(shape))
  maxval = _broadcast_to_rank(maxval, len(shape))
  rng_bits = 8 if nmant < 8 else nbits
  uint = prng._UINT[nbits]
  raw = prng.random_bits(key, rng_bits, shape)
  if rng_bits != nbits:
    raw = _lax.convert_element_type(raw, uint)
  mantissa = _lax.shift_right_logical(raw, _const(uint, rng_bits - nmant))
  one_bits = np.array(1.0, dtype).view(uint)[()]
  floats = _lax.sub(_lax.bitcast_convert_type(_lax.bitwise_or(mantissa, one_bits), dtype),
                    _const(dtype, 1.0))
  scaled = _scale_shift(floats, _lax.sub(maxval, minval), minval)
  return _lax.max(minval, _reshape(scaled, shape))


def _reshape(x, shape):
  """lax.reshape as JAX stages it: skipped for an unchanged non-scalar shape only."""
  if np.shape(x) and np.shape(x) == tuple(shape):
    return x
  return _shape.reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _scale_shift(x, span, shift):
  """x * span + shift with one rounding, like the FMA XLA fuses this into.

  Staged it prints as JAX's `mul` and `add`; on concrete values it is computed exactly.
  """
  if all(type(v) is core.array_type for v in (x, span, shift)):
    return array_lib.from_host(
        fused_multiply_add(x._host_value(), span._host_value(), shift._host_value()), False,
        array_lib.committed_device((x, span, shift)))
  out = _lax.add(_lax.mul(x, span), shift)
  _mark_fma(out)
  return out


def _mark_fma(out):
  """Marks the staged `add` that made `out` for the compiler's FMA contraction (jit then rounds
  x * span + shift once, as eager and XLA do). Only a jaxpr trace's own last eqn is marked."""
  from jaxlite._src.interpreters import partial_eval as pe
  from jaxlite._src.base.source_info_util import FmaHint
  trace = getattr(out, "_trace", None)
  if not isinstance(out, pe.DynamicJaxprTracer) or not getattr(trace, "eqns", None):
    return
  last = trace.eqns[-1]
  if last.primitive is pk.roles.add and last.outvars[0] is out._var:
    last.source_info = FmaHint()


def _fma_impl(a, b, c):
  return fused_multiply_add(np.asarray(a), np.asarray(b), np.asarray(c))


fma_p = core.Primitive("fma")  # compiler-internal: only `passes.fuse_marked_fma` makes it
fma_p.def_impl(_fma_impl)
fma_p.def_abstract_eval(lambda a, b, c: core.ShapedArray(a.shape, a.dtype, a.weak_type))


def _register_fma():
  from jaxlite._src.compiler import passes
  passes.fma_primitive = fma_p


_register_fma()


def fused_multiply_add(a, b, c):
  """Correctly rounded a*b + c for float arrays, emulated in NumPy.

  Unfused arithmetic already is exact when b is a power of two (the [0, 1) and normal ranges);
  otherwise f16/f32 use float64 with a round-to-odd fix, f64 the Boldo-Melquiond emulation.
  """
  if _powers_of_two(b):
    return a * b + c
  a, b, c = np.broadcast_arrays(a, b, c)
  if a.dtype == np.float64:
    return _fma64(a, b, c)
  wide = _round_to_odd_sum(a.astype(np.float64) * b.astype(np.float64), c.astype(np.float64))
  return wide.astype(a.dtype)


def _powers_of_two(b) -> bool:
  if np.size(b) == 1:  # (uniform's scale, once per draw: math.frexp is ~20 NumPy calls cheaper)
    b = float(np.reshape(b, ()))
    return b == 0 or abs(math.frexp(b)[0]) == 0.5
  mant, _ = np.frexp(np.asarray(b, np.float64))
  return bool(np.all((np.abs(mant) == 0.5) | (b == 0)))


def _two_sum(a, b):
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)


def _round_to_odd_sum(a, b):
  """a + b rounded to odd: exact sums stay, inexact ones take the odd-mantissa neighbour."""
  with np.errstate(invalid="ignore", over="ignore"):
    s, err = _two_sum(a, b)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    fix = (err != 0) & even & np.isfinite(s)
    if fix.any():  # towards the exact sum: `s + err` itself rounds back to s
      s = np.where(fix, np.nextafter(s, np.copysign(np.inf, err)), s)
  return s


def _split_veltkamp(a):
  c = a * 134217729.0  # 2**27 + 1
  hi = c - (c - a)
  return hi, a - hi


def _fma64(a, b, c):
  with np.errstate(invalid="ignore", over="ignore"):
    p = a * b
    ah, al = _split_veltkamp(a)
    bh, bl = _split_veltkamp(b)
    p_err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    th, tl = _two_sum(c, p)
    out = th + _round_to_odd_sum(tl, p_err)
  return np.where(np.isfinite(p), out, p + c)


# --- normal and friends ------------------------------------------------------------------------

def normal(key, shape=(), dtype=None):
  """Standard normal floats (complex dtypes: real and imaginary parts each of variance 1/2)."""
  typed, _ = _check_prng_key("normal", key)
  shape = core.canonicalize_shape(shape)
  dtype = _user_dtype("normal", dtype, float, np.inexact, "a float or complex")
  return _normal(typed, shape, dtype)


@internal_jit(static_argnums=(1, 2))
def _normal(key, shape, dtype):
  if dtypes.is_complex(dtype):
    real_dtype = np.array(0, dtype).real.dtype
    key_re, key_im = _split2(key)
    re = _lax.convert_element_type(_normal_real(key_re, shape, real_dtype), dtype)
    im = _lax.convert_element_type(_normal_real(key_im, shape, real_dtype), dtype)
    return (re + 1j * im) / np.array(np.sqrt(2), dtype)
  return _normal_real(key, shape, dtype)


# Eager calls run one cached executable rather than some 20 primitives one by one; the bits
# agree, since the uniform draw's span 1 - nextafter(-1, 0) rounds to exactly 2 in every float
# dtype, so the staged mul-add equals the exact fma of the eager path.
_normal._eager_direct = False


@internal_jit(static_argnums=(1, 2))
def _normal_real(key, shape, dtype):
  _check_shape("normal", shape)
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  u = uniform(key, shape, dtype, lo, np.array(1., dtype))
  return _lax.mul(np.array(np.sqrt(2), dtype)[()], _special("erf_inv")(u))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
  """Normal samples truncated to (lower, upper)."""
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  typed, _ = _check_prng_key("truncated_normal", key)
  dtype = _float_dtype("truncated_normal", dtype)
  return _truncated_normal(typed, lower, upper, shape, dtype)


@internal_jit(static_argnums=(3, 4))
def _truncated_normal(key, lower, upper, shape, dtype):
  shape = _broadcast_shapes("truncated_normal", shape, lower, upper)
  sqrt2 = np.array(np.sqrt(2), dtype)[()]
  lower = _lax.convert_element_type(lower, dtype)
  upper = _lax.convert_element_type(upper, dtype)
  erf = _special("erf")
  a = erf(_lax.div(lower, sqrt2))
  b = erf(_lax.div(upper, sqrt2))
  u = uniform(key, shape, dtype, minval=a, maxval=b)
  out = _lax.mul(sqrt2, _special("erf_inv")(u))
  from jaxlite._src.transforms.ad_api import (  # the bounds carry no gradient (as in JAX)
      stop_gradient,
  )
  lo = _lax.nextafter(stop_gradient(lower), _const(dtype, np.inf))
  hi = _lax.nextafter(stop_gradient(upper), _const(dtype, -np.inf))
  return _clip(out, lo, hi)


def _clip(x, lo, hi):
  clip = getattr(_jnp(), "clip", None)
  if clip is not None:
    return clip(x, lo, hi)
  return _lax.min(hi, _lax.max(lo, x))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method: str = "cholesky"):
  """Samples of N(mean, cov) through a Cholesky, SVD or eigh factor of cov."""
  typed, _ = _check_prng_key("multivariate_normal", key)
  jnp = _jnp()
  mean, cov = _promote_inexact(mean, cov)
  if method not in {"svd", "eigh", "cholesky"}:
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  dtype = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError("dtype argument to `multivariate_normal` must be a float dtype, got "
                     f"{dtype}")
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  return _multivariate_normal(typed, jnp.asarray(mean), jnp.asarray(cov), shape, dtype, method)


def _promote_inexact(*args):
  jnp = _jnp()
  arrs = [jnp.asarray(a) for a in args]
  dtype = dtypes.to_inexact_dtype(dtypes.result_type(*arrs))
  return [_lax.convert_element_type(a, dtype) for a in arrs]


@internal_jit(static_argnums=(3, 4, 5))
def _multivariate_normal(key, mean, cov, shape, dtype, method):
  if not np.ndim(mean) >= 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{np.ndim(mean)}")
  if not np.ndim(cov) >= 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                     f"{np.ndim(cov)}")
  n = mean.shape[-1]
  if np.shape(cov)[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                     f"got cov.shape == {np.shape(cov)}.")
  if shape is None:
    shape = tuple(np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]))
  else:
    _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
  jnp = _jnp()
  if method == "svd":
    u, s, _ = jnp.linalg.svd(cov)
    factor = u * jnp.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = jnp.linalg.eigh(cov)
    factor = v * jnp.sqrt(w[..., None, :])
  else:
    factor = jnp.linalg.cholesky(cov)
  samples = normal(key, shape + mean.shape[-1:], dtype)
  return mean + jnp.einsum("...ij,...j->...i", factor, samples)


# --- integers ----------------------------------------------------------------------------------

def randint(key, shape, minval, maxval, dtype=None):
  """Uniform integers in [minval, maxval) (JAX's modulus method, bit for bit)."""
  typed, _ = _check_prng_key("randint", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  shape = core.canonicalize_shape(shape)
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  info = dtypes.iinfo(dtype)
  sampling_dtype = dtype
  if info.bits < 32:
    sampling_dtype = dtypes.int32
    minval = _clip_int32(minval, int(info.min), int(info.max))
    maxval = _clip_int32(maxval, int(info.min), int(info.max) + 1)
  out = _randint(typed, minval, maxval, shape, sampling_dtype)
  return out if out.dtype == dtype else _lax.convert_element_type(out, dtype)


def _clip_int32(x, lo, hi):
  # JAX: jnp.asarray(x).astype('int32').clip(lo, hi) with Python int bounds (weak, by keyword).
  return _jnp().asarray(x).astype(dtypes.int32).clip(lo, hi)


def _convert_and_clip_integer(val, dtype):
  """val in an integer dtype, clipped to the range both dtypes share rather than wrapped."""
  src = dtypes.iinfo(val.dtype)
  dst = dtypes.iinfo(dtype)
  from jaxlite._src.lax.elementwise import _const as like_const  # weak for a weak scalar (JAX)
  lo = like_const(val, max(dst.min, src.min))
  hi = like_const(val, min(dst.max, src.max))
  return _lax.convert_element_type(_clip(val, lo, hi), dtype)


def _int_array(x):
  jnp = _jnp()
  x = jnp.asarray(x)
  if not dtypes.issubdtype(x.dtype, np.integer):
    x = _lax.convert_element_type(x, dtypes.default_int_dtype())
  return x


@internal_jit(static_argnums=(3, 4))
def _randint(key, minval, maxval, shape, dtype):
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  minval, maxval = _int_array(minval), _int_array(maxval)
  dtype_max = _convert_and_clip_integer(_jnp().array(dtypes.iinfo(dtype).max, dtype),
                                        maxval.dtype)
  maxval_out_of_range = _lax.gt(maxval, dtype_max)
  minval = _convert_and_clip_integer(minval, dtype)
  maxval = _convert_and_clip_integer(maxval, dtype)
  minval = _broadcast_to_rank(minval, len(shape))
  maxval = _broadcast_to_rank(maxval, len(shape))
  nbits = dtypes.iinfo(dtype).bits
  k1, k2 = _split2(key)
  higher_bits = prng.random_bits(k1, nbits, shape)
  lower_bits = prng.random_bits(k2, nbits, shape)
  uint = prng._UINT[nbits]
  span = _lax.convert_element_type(_lax.sub(maxval, minval), uint)
  span = _select(_lax.le(maxval, minval), _full_like(span, 1), span)
  span = _select(maxval_out_of_range & _lax.gt(maxval, minval),
                 _lax.add(span, _const(uint, 1)), span)
  multiplier = _lax.rem(_const(uint, 2 ** (nbits // 2)), span)
  multiplier = _lax.rem(_lax.mul(multiplier, multiplier), span)
  offset = _lax.add(_lax.mul(_lax.rem(higher_bits, span), multiplier),
                    _lax.rem(lower_bits, span))
  offset = _lax.rem(offset, span)
  return _lax.add(minval, _lax.convert_element_type(offset, dtype))


def _select(pred, on_true, on_false):
  return _lax.select(pred, on_true, on_false)


def _full_like(x, value):
  if not np.shape(x):  # lax.full_like of a 0-d value is the literal itself (no broadcast eqn)
    return _const(x.dtype, value)
  return _shape.broadcast_in_dim(_const(x.dtype, value), np.shape(x), ())


def rademacher(key, shape=(), dtype=None):
  """Random signs: -1 or +1 with equal probability."""
  typed, _ = _check_prng_key("rademacher", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  shape = core.canonicalize_shape(shape)
  return _rademacher(typed, shape, dtype)


@internal_jit(static_argnums=(1, 2))
def _rademacher(key, shape, dtype):
  samples = _lax.convert_element_type(bernoulli(key, 0.5, shape), dtype)
  return _lax.convert_element_type(_lax.sub(_lax.mul(_const(dtype, 2), samples),
                                            _const(dtype, 1)), dtype)


# --- bernoulli, permutation, choice, categorical -----------------------------------------------

def bernoulli(key, p=0.5, shape=None, mode: str = "low"):
  """Booleans that are True with probability p."""
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  if mode not in ("high", "low"):
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  typed, _ = _check_prng_key("bernoulli", key)
  dtype = dtypes.canonicalize_dtype(_lax.dtype(p))  # a float64 p is float32 without x64
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  p = _lax.convert_element_type(p, dtype)
  return _bernoulli(typed, p, shape=shape, mode=mode)


@internal_jit(static_argnames=("shape", "mode"))
def _bernoulli(key, p, shape, mode):
  if shape is None:
    shape = np.shape(p)
  else:
    _check_shape("bernoulli", shape, np.shape(p))
  dtype = _lax.dtype(p)

  def bcast(p):  # as JAX's `<`/`-` on the samples: a p of rank >= 1 broadcasts (trailing axes)
    nd = len(np.shape(p))
    if nd == 0 or np.shape(p) == tuple(shape):
      return p
    return _lax_ns().broadcast_in_dim(p, tuple(shape), tuple(range(len(shape) - nd, len(shape))))

  if mode == "high":
    u1, u2 = _unstack_values(uniform(key, (2, *shape), dtype))
    u2 = _lax.mul(u2, _const(dtype, 2.0 ** -dtypes.finfo(dtype).nmant))
    return _lax.lt(u2, _lax.sub(bcast(p), u1))
  u = uniform(key, shape, dtype)
  return _lax.lt(u, bcast(p))


def _unstack_values(x) -> list:
  """x[0], x[1], ... as slice + squeeze eqns."""
  lax = _lax_ns()
  rest = tuple(x.shape[1:])
  zeros, ones = (0,) * len(rest), (1,) * (len(rest) + 1)
  return [lax.squeeze(lax.slice(x, (i, *zeros), (i + 1, *rest), ones), (0,))
          for i in range(x.shape[0])]


def permutation(key, x, axis: int = 0, independent: bool = False):
  """A shuffled arange(x) (int x), or x shuffled along `axis`."""
  typed, _ = _check_prng_key("permutation", key)
  jnp = _jnp()
  if not np.ndim(x):
    if not dtypes.issubdtype(dtypes.dtype_and_weak(x)[0], np.integer):
      raise TypeError("x must be an integer or at least 1-dimensional")
    r = core.concrete_or_error(int, x, "argument x of jax.random.permutation()")
    return _shuffle(typed, _arange(r), 0)
  x = jnp.asarray(x)
  axis = _canonical_axis(axis, x.ndim)
  if independent or x.ndim == 1:
    return _shuffle(typed, x, axis)
  ind = _shuffle(typed, _arange(x.shape[axis]), 0)
  return jnp.take(x, ind, axis, unique_indices=True)


def _canonical_axis(axis: int, ndim: int) -> int:
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def _arange(n: int):
  arange = getattr(_jnp(), "arange", None)
  if arange is not None:
    return arange(n)
  return _lax_ns().iota(dtypes.default_int_dtype(), n)


@internal_jit(static_argnums=(2,))
def _shuffle(key, x, axis):
  # Enough rounds of sorting by 32-bit keys that a key collision is as unlikely as 2**-32**3.
  rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(prng_threefry._MASK32)))
  lax = _lax_ns()
  for _ in range(rounds):
    key, subkey = _split2(key)
    sort_keys = prng.random_bits(subkey, 32, x.shape)
    _, x = lax.sort_key_val(sort_keys, x, axis)
  return x


def choice(key, a, shape=(), replace: bool = True, p=None, axis: int = 0, mode=None):
  """Samples from a (or arange(a)), with or without replacement, optionally weighted by p."""
  typed, _ = _check_prng_key("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError("shape argument of jax.random.choice must be a sequence, got "
                    f"{shape}")
  jnp = _jnp()
  arr = jnp.asarray(a)
  if arr.ndim == 0:
    n_inputs = core.concrete_or_error(int, a, "The error occurred in jax.random.choice()")
  else:
    axis = _canonical_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                     f"(size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(typed, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    else:
      slices = (slice(None),) * axis + (slice(n_draws),)
      result = permutation(typed, n_inputs if arr.ndim == 0 else arr, axis)[slices]
  else:
    p_arr, = _promote_inexact(p)
    if p_arr.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = jnp.cumsum(p_arr)
      r = p_cuml[-1] * (1 - uniform(typed, shape, dtype=p_cuml.dtype))
      ind = jnp.searchsorted(p_cuml, r).astype(int)
    else:
      g = gumbel(typed, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
      ind = _lax_ns().top_k(g, k=n_draws)[1].astype(int)
    result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
  out_shape = tuple(shape) if arr.ndim == 0 else \
      arr.shape[:axis] + tuple(shape) + arr.shape[axis + 1:]
  return result.reshape(out_shape)


def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True, mode=None):
  """Category indices drawn with probabilities softmax(logits) along `axis`."""
  typed, _ = _check_prng_key("categorical", key)
  jnp = _jnp()
  logits = jnp.asarray(logits)
  if axis >= 0:
    axis -= logits.ndim
  batch_shape = tuple(np.delete(np.array(logits.shape, dtype=np.int64), axis).tolist())
  if shape is None:
    shape = batch_shape
  else:
    shape = core.canonicalize_shape(shape)
    _check_shape("categorical", shape, batch_shape)
  prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % logits.ndim, logits.shape[axis])
    g = gumbel(typed, (*prefix, *logits_shape), logits.dtype, mode=mode)
    expanded = _lax_ns().expand_dims(logits, tuple(range(len(prefix))))
    return jnp.argmax(g + expanded, axis=axis)
  logits = logits + gumbel(typed, logits.shape, logits.dtype, mode=mode)
  k = math.prod(prefix)
  if k > logits.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                     f"categories ({logits.shape[axis]}).")
  _, indices = _lax_ns().top_k(jnp.moveaxis(logits, axis, -1), k)
  dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
  return _shape.reshape(indices, shape, dimensions)


# --- continuous distributions from one uniform -------------------------------------------------

def _unary_sampler(name: str, build):
  """A public sampler f(key, shape=(), dtype=None) around the jitted `_name`."""
  def sampler(key, shape=(), dtype=None):
    typed, _ = _check_prng_key(name, key)
    dtype = _float_dtype(name, dtype)
    return build(typed, core.canonicalize_shape(shape), dtype)
  sampler.__name__ = name
  sampler.__doc__ = build.__doc__
  return sampler


@internal_jit(static_argnums=(1, 2))
def _exponential(key, shape, dtype):
  """Exponential(1) samples: -log1p(-u)."""
  _check_shape("exponential", shape)
  u = uniform(key, shape, dtype)
  return _lax.neg(_lax.log1p(_lax.neg(u)))


@internal_jit(static_argnums=(1, 2))
def _cauchy(key, shape, dtype):
  """Standard Cauchy samples: tan(pi (u - 1/2))."""
  _check_shape("cauchy", shape)
  u = uniform(key, shape, dtype, minval=dtypes.finfo(dtype).eps, maxval=1.)
  return _lax.tan(_lax.mul(_const(dtype, np.pi), _lax.sub(u, _const(dtype, 0.5))))


@internal_jit(static_argnums=(1, 2))
def _laplace(key, shape, dtype):
  """Laplace(0, 1) samples."""
  _check_shape("laplace", shape)
  u = uniform(key, shape, dtype, minval=-1. + dtypes.finfo(dtype).epsneg, maxval=1.)
  return _lax.mul(_lax.sign(u), _lax.log1p(_lax.neg(_lax.abs(u))))


@internal_jit(static_argnums=(1, 2))
def _logistic(key, shape, dtype):
  """Standard logistic samples: log(u) - log1p(-u)."""
  _check_shape("logistic", shape)
  x = uniform(key, shape, dtype, minval=dtypes.finfo(dtype).tiny, maxval=1.)
  return _lax.sub(_lax.log(x), _lax.log1p(_lax.neg(x)))


exponential = _unary_sampler("exponential", _exponential)
cauchy = _unary_sampler("cauchy", _cauchy)
laplace = _unary_sampler("laplace", _laplace)
logistic = _unary_sampler("logistic", _logistic)


def gumbel(key, shape=(), dtype=None, mode=None):
  """Standard Gumbel samples ('low' mode: -log(-log(u)); 'high' adds low-order bits)."""
  typed, _ = _check_prng_key("gumbel", key)
  dtype = _float_dtype("gumbel", dtype)
  shape = core.canonicalize_shape(shape)
  mode = "low" if mode is None else mode
  if mode not in ("high", "low"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return _gumbel(typed, shape, dtype, mode)


@internal_jit(static_argnums=(1, 2, 3))
def _gumbel(key, shape, dtype, mode):
  _check_shape("gumbel", shape)
  info = dtypes.finfo(dtype)
  if mode == "high":
    high, low = _unstack_values(_uniform(key, 0., 1., (2,) + shape, dtype))
    x = _select(_lax.ge(high, _const(dtype, 0.5)), high,
                _lax.add(_lax.add(high, _lax.mul(_const(dtype, 2. ** -info.nmant), low)),
                         _const(dtype, info.tiny)))
    return _lax.neg(_lax.log(_lax.neg(_lax.log1p(_lax.neg(x)))))
  u = _uniform(key, _const(dtype, info.tiny), 1., shape, dtype)
  return _lax.neg(_lax.log(_lax.neg(_lax.log(u))))


def pareto(key, b, shape=None, dtype=None):
  """Pareto(b) samples: exp(e / b) for exponential e."""
  typed, _ = _check_prng_key("pareto", key)
  dtype = _float_dtype("pareto", dtype)
  shape = _broadcast_shapes("pareto", shape, b)
  return _pareto(typed, b, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _pareto(key, b, shape, dtype):
  b = _lax.convert_element_type(b, dtype)
  e = exponential(key, shape, dtype)
  return _lax.exp(_jnp().divide(e, b))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull samples: scale * (-log1p(-u)) ** (1 / concentration)."""
  typed, _ = _check_prng_key("weibull_min", key)
  dtype = _float_dtype("weibull_min", dtype)
  shape = core.canonicalize_shape(shape)
  return _weibull_min(typed, scale, concentration, shape, dtype)


@internal_jit(static_argnums=(3, 4))
def _weibull_min(key, scale, concentration, shape, dtype):
  jnp = _jnp()
  u = uniform(key, shape, dtype, minval=0, maxval=1)
  return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


# --- poisson -----------------------------------------------------------------------------------

def poisson(key, lam, shape=None, dtype=None):
  """Poisson(lam) counts: Knuth's method below lam = 10, transformed rejection above."""
  typed, _ = _check_prng_key("poisson", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  if typed.dtype._impl is not prng.threefry_impl:  # JAX's samplers assume threefry's keys here
    raise NotImplementedError("`poisson` is only implemented for the threefry2x32 RNG, not "
                              f"{typed.dtype._impl}")
  shape = core.canonicalize_shape(shape) if shape is not None else np.shape(lam)
  jnp = _jnp()
  lam = _lax.convert_element_type(jnp.broadcast_to(lam, shape), dtypes.float32)
  return _poisson(typed, lam, shape, dtype)


@internal_jit(static_argnums=(2, 3, 4))
def _poisson_knuth(key, lam, shape, dtype, max_iters):
  lax, jnp = _lax_ns(), _jnp()

  def body(carry):
    i, k, rng, log_prod = carry
    rng, subkey = _split2(rng)
    k = _select(log_prod > -lam, k + 1, k)
    u = uniform(subkey, shape, np.float32)
    return i + 1, k, rng, log_prod + jnp.log(u)

  def cond(carry):
    i, log_prod = carry[0], carry[3]
    return (log_prod > -lam).any() & (i < max_iters)

  k_init = jnp.zeros(shape, dtype)
  log_init = jnp.zeros(shape, np.float32)
  k = lax.while_loop(cond, body, (0, k_init, key, log_init))[1]
  return (k - 1).astype(dtype)


@internal_jit(static_argnums=(2, 3, 4))
def _poisson_rejection(key, lam, shape, dtype, max_iters):
  lax, jnp = _lax_ns(), _jnp()
  lgamma = _special("lgamma")
  log_lam = _lax.log(lam)
  b = 0.931 + 2.53 * _lax.sqrt(lam)
  a = -0.059 + 0.02483 * b
  inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
  v_r = 0.9277 - 3.6224 / (b - 2)

  def body(carry):
    i, k_out, accepted, key = carry
    key, sub0, sub1 = _split2(key, 3)
    u = uniform(sub0, shape, lam.dtype) - 0.5
    v = uniform(sub1, shape, lam.dtype)
    u_shifted = 0.5 - abs(u)
    k = _lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
    s = _lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
    t = -lam + k * log_lam - lgamma(k + 1)
    accept1 = (u_shifted >= 0.07) & (v <= v_r)
    reject = (k < 0) | (u_shifted < 0.013) & (v > u_shifted)
    accept = accept1 | ~reject & (s <= t)
    return i + 1, _select(accept, k, k_out), accepted | accept, key

  def cond(carry):
    i, _, accepted, _ = carry
    return (~accepted).any() & (i < max_iters)

  k_init = jnp.full(shape, -1, lam.dtype)
  accepted = jnp.zeros(shape, bool)
  k = lax.while_loop(cond, body, (0, k_init, accepted, key))[1]
  return k.astype(dtype)


@internal_jit(static_argnums=(2, 3))
def _poisson(key, lam, shape, dtype):
  use_knuth = _lax.ne(lam, lam) | (lam < 10)
  lam_knuth = _select(use_knuth, lam, _full_like(lam, 0.0))
  lam_rejection = _select(use_knuth, _full_like(lam, 100000.0), lam)
  max_iters = int(dtypes.iinfo(dtype).max)
  result = _select(use_knuth, _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                   _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
  return _select(lam == 0, _jnp().zeros_like(result), result)


# Shape ops, gathers and selects of key arrays lower on the keys' data in the XLA backend.
prng_structural.install()


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(fma_p, pk.ELEMENTWISE, fuse=True, op="fma")
