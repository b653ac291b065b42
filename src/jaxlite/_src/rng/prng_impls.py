"""PRNG implementations written over their key data: 'rbg', 'unsafe_rbg' and
`jax.extend.random.define_prng_impl`'s.

Such an implementation is four functions on one key's uint32 data (seed, split, random_bits,
fold_in). Their keys do not bind the threefry key primitives of `prng.py`: each key operation
unwraps the keys' data, runs the function under one vmap per key axis (as JAX's impl rules and
lowerings do) and wraps the result, so under jit the functions' own operations are staged (JAX
stages `random_split[shape=(2,)]` on a `key<rbg>` and expands it when lowering).

rbg's keys are two threefry2x32 half-keys (u32[4]): seed, split and fold_in are threefry's on
each half; random_bits is XLA's RngBitGenerator of the whole key (`lax.rng_bit_generator`,
bit-exact with XLA's CPU expansion). unsafe_rbg splits and folds in with the generator itself.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.rng import prng

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _vmap(fn, in_axes=0, out_axes=0):
  from jaxlite._src.transforms.vmap_api import vmap
  return vmap(fn, in_axes=in_axes, out_axes=out_axes)


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _iterated_vmap(n: int, fn):
  for _ in range(n):
    fn = _vmap(fn)
  return fn


# --- the key operations of such implementations (prng.data_impl_ops) ---------------------------

def _seed(seeds, impl):
  data = _iterated_vmap(np.ndim(seeds), impl.seed)(_jnp().asarray(seeds))
  return prng.random_wrap(_as_uint32_data(data, impl, "seed"), impl=impl)


def _split(keys, shape):
  impl = keys.dtype._impl
  data = _iterated_vmap(keys.ndim, lambda k: impl.split(k, shape))(prng.random_unwrap(keys))
  return prng.random_wrap(_as_uint32_data(data, impl, "split"), impl=impl)


def _fold_in(keys, msgs):
  """impl.fold_in of each key and message, broadcast against each other (JAX's iterated
  binary vmap: one operand scalar maps over the other; equal ranks map together)."""
  impl = keys.dtype._impl
  data = prng.random_unwrap(keys)
  msgs = _jnp().asarray(msgs)
  if keys.ndim == 0 and msgs.ndim == 0:
    out = impl.fold_in(data, msgs)
  elif msgs.ndim == 0:
    out = _iterated_vmap(keys.ndim, lambda k: impl.fold_in(k, msgs))(data)
  elif keys.ndim == 0:
    out = _iterated_vmap(msgs.ndim, lambda m: impl.fold_in(data, m))(msgs)
  else:
    shape = np.broadcast_shapes(keys.shape, msgs.shape)
    data = _jnp().broadcast_to(data, shape + impl.key_shape)
    out = _iterated_vmap(len(shape), impl.fold_in)(data, _jnp().broadcast_to(msgs, shape))
  return prng.random_wrap(_as_uint32_data(out, impl, "fold_in"), impl=impl)


def _bits(keys, bit_width, shape):
  impl = keys.dtype._impl
  return _iterated_vmap(keys.ndim, lambda k: impl.random_bits(k, bit_width, shape))(
      prng.random_unwrap(keys))


def _as_uint32_data(data, impl, what: str):
  """The key data an impl function returned, checked as JAX's random_wrap checks it."""
  data = _jnp().asarray(data)
  if data.dtype != dtypes.uint32:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                    f"got dtype={dtypes.dtype_name(data.dtype)} (from {impl.name}'s {what})")
  return data


prng.data_impl_ops.update(seed=_seed, split=_split, fold_in=_fold_in, bits=_bits)


# --- rbg and unsafe_rbg ----------------------------------------------------------------------

def _threefry_halves(data):
  """A u32[4] rbg key as two threefry keys (its halves)."""
  return prng.random_wrap(data.reshape(2, 2), impl=prng.threefry_impl)


def _rbg_seed(seed):
  half = prng.random_unwrap(prng.random_seed_p.bind(seed, impl=prng.threefry_impl))
  return _jnp().concatenate([half, half])


def _rbg_split(data, shape):
  # each half split as threefry splits (partitionable or not, per the config), the halves'
  # words side by side in each new key: (*shape, 2 halves, 2 words)
  halves = prng.random_unwrap(prng.random_split_p.bind(_threefry_halves(data), shape=shape))
  return _jnp().moveaxis(halves, 0, len(shape)).reshape(*shape, 4)


def _rbg_fold_in(data, msg):
  folded = prng.random_fold_in_p.bind(_threefry_halves(data), msg)
  return prng.random_unwrap(folded).reshape(4)


def _rbg_random_bits(data, bit_width, shape):
  from jaxlite._src.lax.rng_bit_generator import rng_bit_generator
  if bit_width not in _UINT:
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  _, bits = rng_bit_generator(data, shape, dtype=_UINT[bit_width])
  return bits


def _unsafe_rbg_split(data, shape):
  # ten draws of the generator per new key, as a hash: every tenth row is a key
  from jaxlite._src.lax.rng_bit_generator import rng_bit_generator
  _, rows = rng_bit_generator(data, (10 * math.prod(shape), 4), dtype=np.uint32)
  return rows[::10].reshape(*shape, 4)


def _unsafe_rbg_fold_in(data, msg):
  from jaxlite._src.lax.rng_bit_generator import rng_bit_generator
  _, rows = rng_bit_generator(_rbg_seed(msg), (10, 4), dtype=np.uint32)
  return data ^ rows[-1]


rbg_prng_impl = prng.PRNGImpl("rbg", "rbg", (4,), _rbg_seed, _rbg_split, _rbg_random_bits,
                              _rbg_fold_in)
unsafe_rbg_prng_impl = prng.PRNGImpl("unsafe_rbg", "urbg", (4,), _rbg_seed, _unsafe_rbg_split,
                                     _rbg_random_bits, _unsafe_rbg_fold_in)
prng.prng_impls.update(rbg=rbg_prng_impl, unsafe_rbg=unsafe_rbg_prng_impl)


# --- user implementations ----------------------------------------------------------------------

def define_prng_impl(*, key_shape, seed, split, random_bits, fold_in, name: str = "<unnamed>",
                     tag: str = "?") -> prng.PRNGSpec:
  """A PRNG implementation from functions on one key's uint32 data of shape `key_shape`:
  seed(int seed) -> data, split(data, shape) -> data[*shape], random_bits(data, bit_width,
  shape) -> uint bits, fold_in(data, uint32 msg) -> data."""
  return prng.PRNGSpec(prng.PRNGImpl(name, tag, tuple(key_shape), seed, split, random_bits, fold_in))


def key_spec(impl: prng.PRNGImpl):
  """What `jax.random.key_impl` says of keys of `impl`: a registered impl's name, else its
  spec."""
  return impl.name if prng.prng_impls.get(impl.name) is impl else prng.PRNGSpec(impl)
