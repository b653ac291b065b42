"""`jax.nn.initializers`: functions `init(key, shape, dtype)` drawing parameters from
jaxlite.random (variance scaling, orthogonal, constants), with JAX's fan computations.
"""
from __future__ import annotations

import math
import operator
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from jaxlite._src.base import dtypes

Initializer = Callable[..., Any]

# The standard deviation of a standard normal truncated to [-2, 2]: dividing by it gives the
# truncated draw unit variance.
_TRUNCATED_STD = 0.87962566103423978


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _random():
  from jaxlite._src.rng import random
  return random


def _dtype(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtypes.check_user_dtype(dtype)


def _shape(shape) -> tuple:
  if isinstance(shape, (int, np.integer)):
    return (int(shape),)
  return tuple(operator.index(d) for d in shape)


# --- constants --------------------------------------------------------------------------------

def zeros(key, shape, dtype=None, out_sharding=None):
  """An initializer returning zeros (key unused)."""
  return _jnp().zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None, out_sharding=None):
  """An initializer returning ones (key unused)."""
  return _jnp().ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None) -> Initializer:
  """An initializer filling arrays with `value`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    return _jnp().full(_shape(shape), value, dtype=_dtype(dtype))
  return init


# --- simple distributions ---------------------------------------------------------------------

def normal(stddev=1e-2, dtype=None) -> Initializer:
  """N(0, stddev²) draws."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dt = _dtype(dtype)
    return _random().normal(key, _shape(shape), dt) * _jnp().array(stddev, dt)
  return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
  """U[0, scale) draws."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dt = _dtype(dtype)
    return _random().uniform(key, _shape(shape), dt) * _jnp().array(scale, dt)
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
  """stddev · (a standard normal truncated to [lower, upper])."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dt = _dtype(dtype)
    draw = _random().truncated_normal(key, lower, upper, _shape(shape), dt)
    return draw * _jnp().array(stddev, dt)
  return init


# --- variance scaling -------------------------------------------------------------------------

def _axes_tuple(axis, ndim) -> tuple:
  axes = (axis,) if isinstance(axis, int) else tuple(axis)
  return tuple(operator.index(a) % ndim for a in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
  """(fan_in, fan_out): the in/out dims times the receptive field (the other, non-batch dims)."""
  ndim = len(shape)
  if ndim <= 1 and isinstance(in_axis, int) and in_axis == -2:
    raise ValueError(f"Can't compute input and output sizes of a {ndim}-dimensional weights "
                     "tensor with default in_axis. Must be at least 2D or specify in_axis "
                     "explicitly.")
  if ndim == 0:
    return 1, 1
  ins, outs, batches = (_axes_tuple(a, ndim) for a in (in_axis, out_axis, batch_axis))
  in_size = math.prod(shape[i] for i in ins)
  out_size = math.prod(shape[i] for i in outs)
  batch_size = math.prod(shape[i] for i in batches)
  receptive = math.prod(shape) / in_size / out_size / batch_size
  return in_size * receptive, out_size * receptive


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis: Sequence[int] = (), dtype=None) -> Initializer:
  """Draws with variance scale / n, n the fan_in, fan_out, their mean or geometric mean."""
  if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
    raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
  if distribution not in ("truncated_normal", "normal", "uniform"):
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

  def init(key, shape, dtype=dtype, out_sharding=None):
    shape = _shape(shape)
    dt = _dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                   "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
    variance = _jnp().array(scale / denominator, dtype=_real(dt))
    return _draw(key, shape, dt, distribution, variance)
  return init


def _real(dtype):
  return np.finfo(dtype).dtype if np.dtype(dtype).kind == "c" else dtype


def _draw(key, shape, dt, distribution, variance):
  jnp, random = _jnp(), _random()
  if np.dtype(dt).kind == "c" and distribution != "normal":
    # On the complex plane: a disk (uniform) or a normal whose modulus is cut at 2.
    scale = jnp.sqrt(variance) if distribution == "uniform" else \
        jnp.sqrt(variance) / jnp.array(_COMPLEX_TRUNCATED_STD, dt)
    return _complex_polar(key, shape, dt, distribution) * scale
  if distribution == "truncated_normal":
    stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_STD, dt)
    return random.truncated_normal(key, -2, 2, shape, dt) * stddev
  if distribution == "normal":
    return random.normal(key, shape, dt) * jnp.sqrt(variance).astype(dt)
  return random.uniform(key, shape, dt, -1) * jnp.sqrt(3 * variance)


# The standard deviation of a unit complex normal whose modulus is truncated to 2.
_COMPLEX_TRUNCATED_STD = .95311164380491208


def _complex_polar(key, shape, dt, distribution):
  """Unit-variance complex draws as modulus and angle (two uniform draws from split keys):
  modulus sqrt(2u) fills a disk; sqrt(-log(1 - (1 - e^-4) u)) is a normal cut at modulus 2."""
  jnp, random = _jnp(), _random()
  real = _real(dt)
  k_mod, k_angle = random.split(key)
  u = random.uniform(k_mod, shape, real)
  if distribution == "uniform":
    modulus = jnp.sqrt(2 * u).astype(dt)
  else:
    t = (1 - jnp.exp(jnp.array(-4, dt))) * u.astype(dt)
    modulus = jnp.sqrt(-jnp.log(1 - t))
  angle = 2 * np.pi * random.uniform(k_angle, shape, real).astype(dt)
  return modulus * jnp.exp(1j * angle)


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                          dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                          dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                          dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


# --- orthogonal -------------------------------------------------------------------------------

def orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
  """A (semi-)orthogonal matrix along column_axis vs. the flattened other dims: QR of a normal
  draw with R's diagonal signs folded into Q."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    jnp, random = _jnp(), _random()
    shape = _shape(shape)
    dt = _dtype(dtype)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    n_cols = shape[column_axis]
    n_rows = math.prod(shape) // n_cols
    matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
    a = random.normal(key, matrix_shape, dt)
    q, r = jnp.linalg.qr(a)
    q = q * jnp.sign(jnp.diagonal(r))
    if n_rows < n_cols:
      q = q.T
    rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
    q = jnp.reshape(q, rest + (n_cols,))
    col = column_axis % len(shape)
    perm = list(range(len(shape) - 1))
    perm.insert(col, len(shape) - 1)
    q = jnp.transpose(q, perm)
    return jnp.array(scale, dt) * q
  return init


def delta_orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
  """Convolution kernels that are zero except an orthogonal matrix at the spatial center."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    jnp = _jnp()
    shape = _shape(shape)
    dt = _dtype(dtype)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
    center = tuple(d // 2 for d in shape[:-2])
    return jnp.zeros(shape, dt).at[center].set(ortho)
  return init
