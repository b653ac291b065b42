"""`jax.random`'s gamma sampler primitive (NumPy rejection sampling, batched by key, for every
key implementation; its JVP along `a`) and the
samplers built on gamma draws (loggamma, beta, dirichlet, chisquare, t, generalized_normal, ball)
and orthogonal.
"""
from __future__ import annotations

import copy
import math
from functools import partial

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.rng import prng, prng_impls, prng_lowering
from jaxlite._src.lax.rng_bit_generator import philox_blocks
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.sharding import rules as sharding_rules
from jaxlite._src.base.config import config
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise_functions as _lax
from jaxlite._src.lax import shape as _shape
from jaxlite._src.rng.random import (
    _broadcast_shapes, _broadcast_to_rank, _check_prng_key, _check_shape, _const, _float_dtype,
    _jnp, _lax_ns, _split2, _unstack_keys, _user_dtype, exponential, fused_multiply_add, normal,
    rademacher, split)


# --- gamma and the distributions built on it ---------------------------------------------------

random_gamma_p = core.Primitive("random_gamma")
sharding_rules.elementwise(random_gamma_p)  # its sharding rule (sharding/rules.py)


def _gamma_abstract(keys, a, log_space, impl=None):
  prng._check_keys("random_gamma", keys)
  return ShapedArray(a.shape, a.dtype, a.weak_type)


def _gamma_impl(keys, a, log_space, impl=None):
  """Gamma draws, one key per element of `a` (each key split into the elements it covers).
  `impl` is given for the implementations written over their key data (rbg, unsafe_rbg,
  `define_prng_impl`'s): the NumPy values of a key array do not say which of them made it."""
  keys = prng._as_keys(keys)
  a = np.asarray(a)
  per_key = math.prod(a.shape[keys.ndim:])
  if impl is None:
    element_keys = prng.split_keys(keys.reshape(-1), (per_key,)).reshape(-1) \
        if a.size else np.empty(0, prng.KEY_STORAGE)
    batch = _ThreefryKeys(np.stack(prng.key_words(element_keys), axis=-1))
  else:
    batch = _data_key_batch(keys.reshape(-1), per_key, impl) if a.size else \
        _ThreefryKeys(np.empty((0, 2), np.uint32))
  return _gamma_numpy(batch, a.reshape(-1), log_space).reshape(a.shape)


def _data_key_batch(keys, per_key: int, impl):
  """The element keys of data-impl keys: JAX splits each key with the impl's split vmapped over
  the keys (unsafe_rbg's generator then draws for the whole batch from the first key), then
  samples each element's key unbatched (`lax.map`, as it lowers random_gamma on CPU)."""
  wrapped = prng.random_wrap(prng.data_from_keys(keys), impl=impl)
  data = np.asarray(prng.random_unwrap(prng.random_split(wrapped, (per_key,))))
  data = data.reshape(-1, *impl.key_shape)
  if impl is prng_impls.rbg_prng_impl or impl is prng_impls.unsafe_rbg_prng_impl:
    return _RbgKeys(data, unsafe=impl is prng_impls.unsafe_rbg_prng_impl)
  return _ImplKeys(data, impl)


random_gamma_p.def_impl(_gamma_impl)
random_gamma_p.def_abstract_eval(_gamma_abstract)


def _gamma_rule(ctx, keys, a, *, log_space, impl=None):
  """threefry keys lower to the rejection loop in StableHLO; data-impl keys run the NumPy
  sampler on the host (bit-exact with XLA's CPU RngBitGenerator; a TPU's generator differs)."""
  if impl is None:
    return prng_lowering.random_gamma_rule(ctx, keys, a, log_space=log_space)
  aval = ctx.avals_out[0]

  def run(data, alphas):
    out = _gamma_impl(prng.keys_from_data(np.asarray(data), impl), alphas, log_space, impl)
    return (np.asarray(out, aval.dtype).reshape(aval.shape),)
  return xla.emit_host_callback(ctx, run, [xla.physical(keys), a], [aval], side_effect=False)[0]


xla.register(random_gamma_p, _gamma_rule)
xla.extended_aware.add(random_gamma_p)


def _gamma_batcher(vals, dims, log_space, impl=None):
  from jaxlite._src.interpreters import batching as bt
  keys, a = bt.all_at_front(vals, dims, bt.mapped_size(vals, dims))
  params = {} if impl is None else {"impl": impl}
  return random_gamma_p.bind(keys, a, log_space=log_space, **params), 0


def _register_gamma_batching():
  from jaxlite._src.interpreters import batching as bt
  bt.primitive_batchers[random_gamma_p] = _gamma_batcher


_register_gamma_batching()


def _gamma_grad(tangent, sample, keys, a, *, log_space, impl=None):
  """The tangent of a gamma sample along `a`: d sample / d a from `random_gamma_grad` (of the
  log-space sample: the sample's derivative over the sample, whose zeros become `tiny`)."""
  lax = _lax_ns()
  if log_space:
    samples = lax.exp(sample)
    tiny = lax.full_like(samples, dtypes.finfo(samples.dtype).tiny)
    samples = lax.select(lax.eq(samples, lax.full_like(samples, 0)), tiny, samples)
    grads = lax.div(lax.random_gamma_grad(a, samples), samples)
  else:
    grads = lax.random_gamma_grad(a, sample)
  return lax.mul(tangent, grads)


def _register_gamma_jvp():
  from jaxlite._src.interpreters import ad
  ad.defjvp2(random_gamma_p, None, _gamma_grad)


_register_gamma_jvp()


class _KeyBatch:
  """Per-element keys (rows of `data`, each one key's uint32 words) and the scalar draws JAX
  makes from each. Each implementation's subclass defines split(n) (split(key, n)[i] for each
  key, i < n) and bits(bit_width) (bits(key, bit_width, ()) for each key)."""

  def __init__(self, data):
    self.data = data

  def take(self, mask) -> _KeyBatch:
    out = copy.copy(self)
    out.data = self.data[mask]
    return out

  def put(self, mask, other: _KeyBatch) -> None:
    self.data[mask] = other.data

  def _like(self, data) -> _KeyBatch:
    out = copy.copy(self)
    out.data = data
    return out

  def uniform(self, dtype, lo=0., hi=1.):
    """uniform(key, (), dtype, lo, hi) for each key, as JAX's _uniform computes it."""
    info = dtypes.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    rng_bits = 8 if nmant < 8 else nbits
    uint = prng._UINT[nbits]
    raw = self.bits(rng_bits).astype(uint)
    one = np.array(1.0, dtype).view(uint)
    floats = ((raw >> uint.type(rng_bits - nmant)) | one).view(dtype) - np.array(1., dtype)
    lo, hi = np.array(lo, dtype), np.array(hi, dtype)
    return np.maximum(lo, fused_multiply_add(floats, hi - lo, lo))

  def normal(self, dtype):
    lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
    u = self.uniform(dtype, lo, 1.)
    from jaxlite._src.lax.special import erf_inv_p
    return (np.array(np.sqrt(2), dtype) * erf_inv_p.impl(u)).astype(dtype)


class _ThreefryKeys(_KeyBatch):
  """threefry2x32 keys: rows (k0, k1)."""

  def split(self, n: int) -> list:
    k0, k1 = self.data[:, 0], self.data[:, 1]
    if config.jax_threefry_partitionable:
      y0, y1 = prng.threefry2x32(k0[:, None], k1[:, None], np.uint32(0),
                                 np.arange(n, dtype=np.uint32)[None, :])
      return [self._like(np.stack([y0[:, i], y1[:, i]], axis=-1)) for i in range(n)]
    words = np.concatenate(prng.threefry2x32(
        k0[:, None], k1[:, None], np.arange(n, dtype=np.uint32)[None, :],
        np.arange(n, 2 * n, dtype=np.uint32)[None, :]), axis=1)
    return [self._like(words[:, 2 * i:2 * i + 2]) for i in range(n)]

  def bits(self, bit_width: int):
    k0, k1 = self.data[:, 0], self.data[:, 1]
    if config.jax_threefry_partitionable:
      y0, y1 = prng.threefry2x32(k0, k1, np.uint32(0), np.uint32(0))
      if bit_width == 64:
        return (y0.astype(np.uint64) << np.uint64(32)) | y1
      return (y0 ^ y1).astype(prng._UINT[bit_width])
    if bit_width == 64:
      y0, y1 = prng.threefry2x32(k0, k1, np.uint32(0), np.uint32(1))
      return (y0.astype(np.uint64) << np.uint64(32)) | y1
    y0, _ = prng.threefry2x32(k0, k1, np.uint32(0), np.uint32(0))
    return y0.astype(prng._UINT[bit_width])


class _RbgKeys(_KeyBatch):
  """rbg and unsafe_rbg keys (u32[4] rows). rbg splits each threefry half-key; unsafe_rbg
  splits with the generator (every tenth block of its stream). Both draw bits with XLA's CPU
  RngBitGenerator (Philox), from each key on its own."""

  def __init__(self, data, unsafe: bool):
    super().__init__(data)
    self.unsafe = unsafe

  def split(self, n: int) -> list:
    if self.unsafe:
      blocks = philox_blocks(self.data, np.arange(n, dtype=np.uint64) * np.uint64(10))
      return [self._like(blocks[:, i]) for i in range(n)]
    halves = [_ThreefryKeys(self.data[:, 2 * h:2 * h + 2]).split(n) for h in (0, 1)]
    return [self._like(np.concatenate([halves[0][i].data, halves[1][i].data], axis=-1))
            for i in range(n)]

  def bits(self, bit_width: int):
    words = philox_blocks(self.data, [0])[:, 0]
    if bit_width == 64:
      return words[:, 0].astype(np.uint64) | (words[:, 1].astype(np.uint64) << np.uint64(32))
    return words[:, 0].astype(prng._UINT[bit_width])


class _ImplKeys(_KeyBatch):
  """Keys of a `define_prng_impl` implementation: its split and random_bits called on each key
  in turn, as JAX's `lax.map` over the keys calls them."""

  def __init__(self, data, impl):
    super().__init__(data)
    self.impl = impl

  def split(self, n: int) -> list:
    new = np.stack([np.asarray(self.impl.split(_jnp().asarray(k), (n,))) for k in self.data]) \
        if len(self.data) else np.empty((0, n, *self.impl.key_shape), np.uint32)
    return [self._like(new[:, i]) for i in range(n)]

  def bits(self, bit_width: int):
    out = [np.asarray(self.impl.random_bits(_jnp().asarray(k), bit_width, ()))
           for k in self.data]
    return np.array(out, prng._UINT[bit_width]).reshape(len(self.data))


def _gamma_numpy(keys: _KeyBatch, alpha, log_space: bool):
  """Marsaglia-Tsang gamma samples, one key per element, drawing exactly what JAX draws."""
  dtype = alpha.dtype
  c_ = partial(np.array, dtype=dtype)
  keys = keys._like(keys.data.copy())
  keys, subkeys = keys.split(2)
  boost_mask = alpha >= c_(1)
  alpha_b = np.where(boost_mask, alpha, alpha + c_(1))
  d = alpha_b - c_(1 / 3)
  c = c_(1 / 3) / np.sqrt(d)
  X = np.zeros_like(alpha)
  V = np.ones_like(alpha)
  U = np.full_like(alpha, 2)
  with np.errstate(divide="ignore", invalid="ignore"):
    while True:
      active = (U >= c_(1) - c_(0.0331) * (X * X)) & \
          (np.log(U) >= X * c_(0.5) + d * ((c_(1) - V) + np.log(V)))
      if not active.any():
        break
      keys_a = keys.take(active)
      keys_a, x_key, u_key = keys_a.split(3)
      x, v = _gamma_proposal(x_key, c[active], dtype)
      X[active], V[active] = x * x, v * v * v
      U[active] = u_key.uniform(dtype)
      keys.put(active, keys_a)
    if log_space:
      log_samples = np.log1p(-subkeys.uniform(dtype))  # -exponential(subkey)
      log_boost = np.where(boost_mask | (log_samples == 0), c_(0),
                           log_samples * (c_(1) / alpha))
      return (np.log(d) + np.log(V)) + log_boost
    samples = c_(1) - subkeys.uniform(dtype)
    boost = np.where(boost_mask, c_(1), samples ** (c_(1) / alpha))
    return (d * V) * boost


def _gamma_proposal(keys: _KeyBatch, c, dtype):
  """x ~ normal and v = 1 + x c, redrawn (splitting the key) until v > 0."""
  x = np.zeros(c.shape, dtype)
  v = np.full(c.shape, -1, dtype)
  while True:
    todo = v <= 0
    if not todo.any():
      return x, v
    k = keys.take(todo)
    k, sub = k.split(2)
    keys.put(todo, k)
    x[todo] = sub.normal(dtype)
    v[todo] = np.array(1, dtype) + x[todo] * c[todo]


def gamma(key, a, shape=None, dtype=None):
  """Gamma(a, 1) samples (Marsaglia-Tsang with JAX's key schedule)."""
  return _gamma_sampler("gamma", key, a, shape, dtype, log_space=False)


def loggamma(key, a, shape=None, dtype=None):
  """log of Gamma(a, 1) samples, accurate for small a."""
  return _gamma_sampler("loggamma", key, a, shape, dtype, log_space=True)


def _gamma_sampler(name, key, a, shape, dtype, log_space):
  typed, _ = _check_prng_key(name, key)
  dtype = _user_dtype(name, dtype, float, np.floating, "a float") if name == "gamma" else \
      _loggamma_dtype(dtype)
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  return _gamma(typed, a, shape=shape, dtype=dtype, log_space=log_space)


def _loggamma_dtype(dtype):
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype, "loggamma")
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `gamma` must be a float dtype, got {dtype}")
  return dtype


@internal_jit(static_argnames=("shape", "dtype", "log_space"))
def _gamma(key, a, shape, dtype, log_space=False):
  if shape is None:
    shape = np.shape(a)
  else:
    _check_shape("gamma", shape, np.shape(a))
  a = _lax.convert_element_type(a, dtype)
  if np.shape(a) != tuple(shape):
    a = _broadcast_to(a, shape)
  impl = prng._data_impl(key)  # the impls over key data name themselves (see _gamma_impl)
  params = {} if impl is None else {"impl": impl}
  return random_gamma_p.bind(key, a, log_space=log_space, **params)


def _broadcast_to(x, shape):
  ndim = np.ndim(x)
  x = _broadcast_to_rank(x, len(shape)) if ndim < len(shape) and ndim else x
  dims = tuple(range(len(shape) - np.ndim(x), len(shape)))
  return _shape.broadcast_in_dim(x, tuple(shape), dims)


def beta(key, a, b, shape=None, dtype=None):
  """Beta(a, b) samples from two log-space gammas."""
  typed, _ = _check_prng_key("beta", key)
  dtype = _float_dtype("beta", dtype)
  shape = _broadcast_shapes("beta", shape, a, b)
  return _beta(typed, a, b, shape, dtype)


@internal_jit(static_argnums=(3, 4))
def _beta(key, a, b, shape, dtype):
  a = _broadcast_to(_lax.convert_element_type(a, dtype), shape)
  b = _broadcast_to(_lax.convert_element_type(b, dtype), shape)
  key_a, key_b = _split2(key)
  log_a = loggamma(key_a, a, shape, dtype)
  log_b = loggamma(key_b, b, shape, dtype)
  log_max = _lax.max(log_a, log_b)
  ga = _lax.exp(_lax.sub(log_a, log_max))
  gb = _lax.exp(_lax.sub(log_b, log_max))
  return _lax.div(ga, _lax.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=None):
  """Dirichlet(alpha) samples along the last axis: normalised log-space gammas."""
  typed, _ = _check_prng_key("dirichlet", key)
  dtype = _float_dtype("dirichlet", dtype)
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  return _dirichlet(typed, alpha, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _dirichlet(key, alpha, shape, dtype):
  if not np.ndim(alpha) >= 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
  if shape is None:
    shape = np.shape(alpha)[:-1]
  else:
    _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
  alpha = _lax.convert_element_type(alpha, dtype)
  log_gamma = loggamma(key, alpha, tuple(shape) + np.shape(alpha)[-1:], dtype)
  jnp = _jnp()
  unnormalized = jnp.exp(log_gamma - jnp.max(log_gamma, axis=-1, keepdims=True))
  return unnormalized / jnp.sum(unnormalized, axis=-1, keepdims=True)


def chisquare(key, df, shape=None, dtype=None):
  """Chi-square(df) samples: 2 exp(loggamma(df / 2))."""
  typed, _ = _check_prng_key("chisquare", key)
  dtype = _float_dtype("chisquare", dtype)
  shape = _broadcast_shapes("chisquare", shape, df)
  return _chisquare(typed, df, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _chisquare(key, df, shape, dtype):
  df = _lax.convert_element_type(df, dtype)
  two = _const(dtype, 2)
  log_g = loggamma(key, _lax.div(df, two), shape, dtype)
  return _lax.mul(_lax.exp(log_g), two)


def t(key, df, shape=(), dtype=None):
  """Student's t(df) samples: n * sqrt(df / 2 / g) for normal n and gamma(df / 2) g."""
  typed, _ = _check_prng_key("t", key)
  dtype = _float_dtype("t", dtype)
  shape = _broadcast_shapes("t", shape, df)
  return _t(typed, df, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _t(key, df, shape, dtype):
  df = _lax.convert_element_type(df, dtype)
  key_n, key_g = _split2(key)
  n = normal(key_n, shape, dtype)
  half_df = _lax.div(df, _const(dtype, 2))
  g = gamma(key_g, half_df, shape, dtype)
  return _lax.mul(n, _lax.sqrt(_jnp().divide(half_df, g)))


def generalized_normal(key, p, shape=(), dtype=None):
  """Generalized normal samples with shape parameter p."""
  typed, _ = _check_prng_key("generalized_normal", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  shape = core.canonicalize_shape(shape)
  return _generalized_normal(typed, p, shape, dtype)


@internal_jit(static_argnums=(2, 3))
def _generalized_normal(key, p, shape, dtype):
  k1, k2 = _unstack_keys(split(key))
  g = gamma(k1, 1 / p, shape, dtype)
  r = rademacher(k2, shape, dtype)
  return r * g ** (1 / p)


def ball(key, d: int, p: float = 2, shape=(), dtype=None):
  """Uniform samples from the unit p-norm ball in d dimensions."""
  typed, _ = _check_prng_key("ball", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  shape = core.canonicalize_shape(shape)
  d = core.concrete_or_error(int, d, "The error occurred in jax.random.ball()")
  return _ball(typed, p, d, shape, dtype)


@internal_jit(static_argnums=(2, 3, 4))
def _ball(key, p, d, shape, dtype):
  jnp = _jnp()
  k1, k2 = _unstack_keys(split(key))
  g = generalized_normal(k1, p, (*shape, d), dtype)
  e = exponential(k2, shape, dtype)
  return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


def orthogonal(key, n: int, shape=(), dtype=None, m=None):
  """Haar-random orthogonal (n, n) matrices, or (n, m) with orthonormal columns/rows."""
  m_ = n if m is None else m
  shape = core.canonicalize_shape(shape)
  typed, _ = _check_prng_key("orthogonal", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  n = core.concrete_or_error(int, n, "The error occurred in jax.random.orthogonal()")
  m_ = core.concrete_or_error(int, m_, "The error occurred in jax.random.orthogonal()")
  return _orthogonal(typed, n, m_, shape, dtype)


@internal_jit(static_argnums=(1, 2, 3, 4))
def _orthogonal(key, n, m, shape, dtype):
  jnp = _jnp()
  z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
  q, r = jnp.linalg.qr(z)
  d = jnp.diagonal(r, axis1=-2, axis2=-1)
  x = q * jnp.expand_dims(jnp.sign(d), -2)
  return x.mT if n < m else x
