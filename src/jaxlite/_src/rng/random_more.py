"""More `jax.random` samplers (binomial, multinomial, maxwell, wald, ...), bit-identical to JAX.

Each one draws its bits exactly as JAX 0.10.2 does (same key splits, same op order) on top of the
core samplers in `jaxlite._src.rng.random`; `jaxlite.random` re-exports them.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise_functions as _lax
from jaxlite._src.rng.random import (
    _broadcast_shapes, _check_prng_key, _check_shape, _const, _float_dtype, _jnp, _lax_ns, _select,
    _split2, _unstack_keys, normal, rademacher, split, uniform)
from jaxlite._src.rng.random_gamma import chisquare


def _check_safe_to_cast(name: str, dtype, *args) -> None:
  """JAX refuses parameters whose dtype would lose precision when cast to the sample dtype."""
  for arg in args:
    arg_dtype, weak = dtypes.dtype_and_weak(arg)
    if weak or arg_dtype == dtype:
      continue
    if dtypes.promote_types(arg_dtype, dtype) != np.dtype(dtype):
      raise dtypes.TypePromotionError(
          f"In arguments to {name}, cannot safely cast argument of type {arg_dtype} to {dtype}")


def _promote_inexact(x):
  jnp = _jnp()
  x = jnp.asarray(x)
  return x if dtypes.issubdtype(x.dtype, np.inexact) else x.astype(dtypes.to_inexact_dtype(
      x.dtype))


# --- F, maxwell, double-sided maxwell -----------------------------------------------------------

def f(key, dfnum, dfden, shape=None, dtype=None):
  """F(dfnum, dfden) samples: the ratio of two scaled chi-squares."""
  typed, _ = _check_prng_key("f", key)
  dtype = _float_dtype("f", dtype)
  shape = _broadcast_shapes("f", shape, dfnum, dfden)
  _check_safe_to_cast("f", dtype, dfnum, dfden)
  return _f(typed, dfnum, dfden, shape, dtype)


@internal_jit(static_argnums=(3, 4))
def _f(key, dfnum, dfden, shape, dtype):
  dfden = _lax.convert_element_type(dfden, dtype)
  dfnum = _lax.convert_element_type(dfnum, dtype)
  key_dfd, key_dfn = _split2(key)   # JAX draws the denominator's key first
  num = _lax.div(chisquare(key_dfn, dfnum, shape, dtype), dfnum)
  den = _lax.div(chisquare(key_dfd, dfden, shape, dtype), dfden)
  return _lax.div(num, den)


def maxwell(key, shape=(), dtype=None):
  """One-sided Maxwell samples: the norm of three standard normals."""
  typed, _ = _check_prng_key("maxwell", key)
  dtype = _float_dtype("maxwell", dtype)
  return _maxwell(typed, core.canonicalize_shape(shape), dtype)


@internal_jit(static_argnums=(1, 2))
def _maxwell(key, shape, dtype):
  return _jnp().linalg.norm(normal(key, (*shape, 3), dtype), axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """Double-sided Maxwell samples: a random sign times a Maxwell draw, scaled and shifted."""
  typed, _ = _check_prng_key("double_sided_maxwell", key)
  dtype = _float_dtype("double_sided_maxwell", dtype)
  return _double_sided_maxwell(typed, loc, scale, core.canonicalize_shape(shape), dtype)


@internal_jit(static_argnums=(3, 4))
def _double_sided_maxwell(key, loc, scale, shape, dtype):
  params_shape = tuple(np.broadcast_shapes(np.shape(loc), np.shape(scale)))
  # JAX appends the parameter shape to a given `shape` (and uses it alone when `shape` is empty)
  shape = (shape or params_shape) + params_shape
  maxwell_key, sign_key = _split2(key)
  rvs = maxwell(maxwell_key, shape, dtype)
  sign = rademacher(sign_key, shape, dtype)
  return sign * rvs * scale + loc


# --- rayleigh, wald, geometric, triangular, lognormal ------------------------------------------

def rayleigh(key, scale, shape=None, dtype=None):
  """Rayleigh(scale) samples: scale * sqrt(-2 log u)."""
  typed, _ = _check_prng_key("rayleigh", key)
  dtype = _float_dtype("rayleigh", dtype)
  shape = _broadcast_shapes("rayleigh", shape, scale)
  _check_safe_to_cast("rayleigh", dtype, scale)
  return _rayleigh(typed, scale, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _rayleigh(key, scale, shape, dtype):
  u = uniform(key, shape, dtype)
  scale = _jnp().broadcast_to(_lax.convert_element_type(scale, dtype), shape)
  root = _lax.sqrt(_lax.mul(_lax.log(u), _const(dtype, -2)))
  return _lax.mul(scale, root)


def wald(key, mean, shape=None, dtype=None):
  """Wald (inverse Gaussian) samples with unit shape, by Michael-Schucany-Haas."""
  typed, _ = _check_prng_key("wald", key)
  dtype = _float_dtype("wald", dtype)
  shape = _broadcast_shapes("wald", shape, mean)
  _check_safe_to_cast("wald", dtype, mean)
  return _wald(typed, mean, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _wald(key, mean, shape, dtype):
  lax = _lax_ns()
  k1, k2 = _unstack_keys(split(key, 2))
  mean = _jnp().broadcast_to(_lax.convert_element_type(mean, dtype), shape)
  v = normal(k1, shape, dtype)
  z = uniform(k2, shape, dtype)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
  x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
  return _select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def geometric(key, p, shape=None, dtype=None):
  """Geometric(p) trial counts (support 1, 2, ...): floor(log u / log1p(-p)) + 1."""
  typed, _ = _check_prng_key("geometric", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  if not dtypes.issubdtype(dtype, np.integer):
    raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
  shape = _broadcast_shapes("geometric", shape, p)
  return _geometric(typed, p, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _geometric(key, p, shape, dtype):
  jnp = _jnp()
  p = _promote_inexact(p)
  u = uniform(key, shape, p.dtype)
  u = jnp.where(u == 0, 1, u)   # as JAX: keeps log finite without changing other samples
  log_one_minus_p = jnp.broadcast_to(_lax.log1p(_lax.neg(p)), shape)
  g = _lax.floor(_lax.div(_lax.log(u), log_one_minus_p)) + 1
  return g.astype(dtype)


def triangular(key, left, mode, right, shape=None, dtype=None):
  """Triangular(left, mode, right) samples by inverting the CDF."""
  typed, _ = _check_prng_key("triangular", key)
  dtype = _float_dtype("triangular", dtype)
  shape = _broadcast_shapes("triangular", shape, left, mode, right)
  _check_safe_to_cast("triangular", dtype, left, mode, right)
  return _triangular(typed, left, mode, right, shape, dtype)


@internal_jit(static_argnums=(4, 5))
def _triangular(key, left, mode, right, shape, dtype):
  jnp = _jnp()
  left = jnp.broadcast_to(_lax.convert_element_type(left, dtype), shape)
  right = jnp.broadcast_to(_lax.convert_element_type(right, dtype), shape)
  mode = jnp.broadcast_to(_lax.convert_element_type(mode, dtype), shape)
  fc = (mode - left) / (right - left)
  u = uniform(key, shape, dtype)
  out1 = left + _lax.sqrt(u * (right - left) * (mode - left))
  out2 = right - _lax.sqrt((1 - u) * (right - left) * (right - mode))
  return _select(u < fc, out1, out2)


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
  """Log-normal samples: exp(sigma * n) for standard normal n."""
  typed, _ = _check_prng_key("lognormal", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(
        f"dtype argument to `lognormal` must be a float or complex dtype, got {dtype}")
  shape = _broadcast_shapes("lognormal", shape, sigma)
  _check_safe_to_cast("lognormal", dtype, sigma)
  return _lognormal(typed, sigma, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _lognormal(key, sigma, shape, dtype):
  sigma = _lax.convert_element_type(sigma, dtype)
  return _lax.exp(normal(key, shape, dtype) * sigma)


# --- binomial and multinomial ------------------------------------------------------------------

# log(k!) minus its Stirling approximation for k = 0..9; beyond that the series below is exact
# to float precision (the table TensorFlow's binomial kernel uses).
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
  jnp = _jnp()
  table = jnp.array(_STIRLING_TAIL, dtype=k.dtype)
  use_table = k <= 9
  k = _lax_ns().clamp(_const(k.dtype, 0.0), k, _const(k.dtype, 9.0))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  return _select(use_table, table[jnp.asarray(jnp.floor(k), dtype="int32")], approx)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
  """Counts geometric waiting times until they pass `count` (used where count * p <= 10)."""
  lax, jnp = _lax_ns(), _jnp()
  log1minusprob = jnp.log1p(-prob)

  def body(carry):
    i, num_geom, geom_sum, key = carry
    subkey, key = _split2(key)
    num_geom_out = _select(geom_sum <= count, num_geom + 1, num_geom)
    u = uniform(subkey, shape, prob.dtype)
    geom = jnp.ceil(jnp.log(u) / log1minusprob)
    return i + 1, num_geom_out, geom_sum + geom, key

  def cond(carry):
    i, geom_sum = carry[0], carry[2]
    return (geom_sum <= count).any() & (i < max_iters)

  zeros = jnp.zeros(shape, prob.dtype)
  k = lax.while_loop(cond, body, (0, zeros, zeros, key))[1]
  return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype, max_iters):
  """Hormann's transformed rejection with squeeze (BTRS), for count * p > 10."""
  lax, jnp = _lax_ns(), _jnp()
  stddev = jnp.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = jnp.floor((count + 1) * prob)

  def body(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _split2(key, 3)
    u = uniform(subkey_0, shape, prob.dtype)
    v = uniform(subkey_1, shape, prob.dtype)
    u = u - 0.5
    us = 0.5 - jnp.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = jnp.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = jnp.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
          + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
          + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
          + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
          - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
    accept = accept1 | (~reject & (v <= ub))
    return i + 1, _select(accept, k, k_out), accepted | accept, key

  def cond(carry):
    i, accepted = carry[0], carry[2]
    return (~accepted).any() & (i < max_iters)

  k_init = jnp.full(shape, -1, prob.dtype)
  init = (0, k_init, jnp.zeros(shape, bool), key)
  return lax.while_loop(cond, body, init)[1].astype(dtype)


def binomial(key, n, p, shape=None, dtype=None):
  """Binomial(n, p) counts as floats: inversion where n * min(p, 1-p) <= 10, BTRS above."""
  typed, _ = _check_prng_key("binomial", key)
  _check_arraylike("binomial", n, p)
  dtype = _float_dtype("binomial", dtype)
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  return _binomial(typed, n, p, shape, dtype)


def _check_arraylike(name: str, *args) -> None:
  for i, arg in enumerate(args):
    if not (isinstance(arg, (core.Array, np.ndarray, np.generic, int, float, complex, bool))
            or hasattr(arg, "aval")):
      raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(arg)} at "
                      f"position {i}.")


@internal_jit(static_argnums=(3, 4))
def _binomial(key, count, prob, shape, dtype):
  jnp = _jnp()
  if shape is None:
    shape = tuple(np.broadcast_shapes(np.shape(count), np.shape(prob)))
  else:
    _check_shape("binomial", shape, np.shape(count), np.shape(prob))
  prob = _promote_inexact(prob)
  count = jnp.broadcast_to(_lax.convert_element_type(count, prob.dtype), shape)
  prob = jnp.broadcast_to(prob, shape)
  p_lt_half = prob < 0.5
  q = _select(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = _lax.ne(count, count) | (count < 0.0)
  count_inf = jnp.isinf(count)
  q_is_nan = _lax.ne(q, q)
  q_l_0 = q < 0.0
  q = _select(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = jnp.floor(count)   # numpy's binomial floors a float count too
  count_inv = _select(use_inversion, count, jnp.full_like(count, 0.0))
  count_btrs = _select(use_inversion, jnp.full_like(count, 1e4), count)
  q_btrs = _select(use_inversion, jnp.full_like(q, 0.5), q)
  max_iters = dtype.type(dtypes.finfo(dtype).max)
  samples = _select(use_inversion,
                    _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
                    _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = _select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
  samples = _select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dtype), samples)
  return _select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf,
                 samples, count.astype(dtype) - samples)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Multinomial(n, p) counts along p's last axis, as a scan of conditional binomials."""
  lax, jnp = _lax_ns(), _jnp()
  typed, _ = _check_prng_key("multinomial", key)
  _check_arraylike("multinomial", n, p)
  n, p = jnp.asarray(n), jnp.asarray(p)
  out_dtype = dtypes.to_inexact_dtype(dtypes.result_type(n, p))
  n, p = n.astype(out_dtype), p.astype(out_dtype)
  shape = p.shape if shape is None else core.canonicalize_shape(shape)
  n = jnp.broadcast_to(n, shape[:-1])
  p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)

  def step(remainder, ratio_key):
    ratio, k = ratio_key
    count = binomial(k, remainder, ratio.clip(0, 1), dtype=remainder.dtype)
    return remainder - count, count

  remaining = lax.cumsum(p, 0, reverse=True)
  ratios = p / jnp.where(remaining == 0, 1, remaining)
  keys = split(typed, ratios.shape[0])
  _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
  return jnp.moveaxis(counts, 0, -1).astype(dtypes.check_user_dtype(
      float if dtype is None else dtype))
