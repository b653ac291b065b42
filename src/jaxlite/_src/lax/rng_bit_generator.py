"""`rng_bit_generator_p`: XLA's stateless RngBitGenerator, bit-exact with XLA's CPU expansion.

The key is a u32[4] (JAX's form, two u64 words in little-endian halves) or a u64[2]. XLA's CPU
compiler expands `RNG_DEFAULT` as Philox-4x32-10, so the default here is Philox too (a TPU's
XLA picks its own algorithm: bits made there differ, as they do between JAX's backends).
The layouts below are XLA's (`RngBitGeneratorExpander` over `xla/hlo/builder/lib/prng.cc`),
checked against JAX on CPU by tests/test_ecosystem_haiku.py:
- Philox: u64 state word 0 is the key; word 1 is the low half of a 128-bit counter whose high
  half is word 0 again (a 2-word state is reversed into the counter). Counter c + i gives the
  i-th block of four u32 outputs, taken in order; 64-bit outputs join two u32s (low first).
  The new state is (key, low counter + blocks).
- ThreeFry: u64 word 0 is the key (low, high u32 halves), word 1 the counter. 32-bit outputs
  split the shape in halves along its first even dimension (else its largest): element (i, j)
  of the half shape hashes counter + its row-major index over the dims of size >= 2, and the
  two hash words fill the two halves, interleaved along a new axis. 64-bit outputs hash the
  whole shape and join (y0 | y1 << 32). The new state is (key, counter + hashes).
8- and 16-bit outputs are the 32-bit ones truncated.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import batching
from jaxlite._src.lax.convenience import RandomAlgorithm
from jaxlite._src.compiler.xla import lowering as hlo

_U32, _U64 = np.dtype(np.uint32), np.dtype(np.uint64)
_MASK32 = np.uint64(0xFFFFFFFF)
_BIT_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))

# --- the two bit generators, on NumPy ------------------------------------------------------------

_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def _philox4x32(x, key):
  """Philox-4x32-10 of counter words x (four u64 arrays holding u32 values), key (k0, k1)."""
  k0, k1 = key
  for _ in range(10):
    p0, p1 = x[0] * _PHILOX_M[0], x[2] * _PHILOX_M[1]
    x = [(p1 >> np.uint64(32)) ^ x[1] ^ np.uint64(k0), p1 & _MASK32,
         (p0 >> np.uint64(32)) ^ x[3] ^ np.uint64(k1), p0 & _MASK32]
    k0, k1 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF, (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
  return [w.astype(_U32) for w in x]


def _philox(state: np.ndarray, shape: tuple, bits: int):
  key, lo = int(state[0]), int(state[1])
  hi = key  # a 2-word state is reversed into the 128-bit counter (low word first)
  n = math.prod(shape)
  blocks = -(-(2 * n if bits == 64 else n) // 4)
  low = np.uint64(lo) + np.arange(blocks, dtype=_U64)  # wraps modulo 2**64, carrying below
  high = np.where(low < np.uint64(lo), np.uint64((hi + 1) & 0xFFFFFFFFFFFFFFFF), np.uint64(hi))
  words = _philox4x32([low & _MASK32, low >> np.uint64(32), high & _MASK32,
                       high >> np.uint64(32)], (key & 0xFFFFFFFF, key >> 32))
  if bits == 64:
    wide = [words[0].astype(_U64) | (words[1].astype(_U64) << np.uint64(32)),
            words[2].astype(_U64) | (words[3].astype(_U64) << np.uint64(32))]
    out = np.stack(wide, axis=1).reshape(-1)[:n]
  else:
    out = np.stack(words, axis=1).reshape(-1)[:n]
  return np.array([key, (lo + blocks) & 0xFFFFFFFFFFFFFFFF], _U64), out.reshape(shape)


def philox_blocks(keys: np.ndarray, offsets) -> np.ndarray:
  """Block `offsets[j]` of the Philox stream of each u32[4] key (rows of `keys`, shape (m, 4)):
  (m, len(offsets), 4) u32, the words `_philox` takes in order from that block. The rbg and
  unsafe_rbg samplers' per-key draws (one RngBitGenerator call per key, vectorised)."""
  keys = np.asarray(keys, _U32).reshape(-1, 4).astype(_U64)
  key_lo, key_hi = keys[:, 0:1], keys[:, 1:2]
  lo = keys[:, 2:3] | (keys[:, 3:4] << np.uint64(32))
  low = lo + np.asarray(offsets, _U64)[None, :]  # wraps modulo 2**64, carrying below
  hi = key_lo | (key_hi << np.uint64(32))
  high = np.where(low < lo, hi + np.uint64(1), hi)
  words = _philox4x32([low & _MASK32, low >> np.uint64(32), high & _MASK32,
                       high >> np.uint64(32)], (key_lo, key_hi))
  return np.stack(words, axis=-1)


def _counters(start: int, shape: tuple) -> np.ndarray:
  """start + the row-major index of each element over the dims of size >= 2 (u64)."""
  out = np.full(shape, start, _U64)
  stride = 1
  for i in reversed(range(len(shape))):
    if shape[i] < 2:
      continue
    along = np.arange(shape[i], dtype=_U64).reshape([-1 if j == i else 1
                                                     for j in range(len(shape))])
    out = out + along * np.uint64(stride)
    stride *= shape[i]
  return out


def _threefry(state: np.ndarray, shape: tuple, bits: int):
  from jaxlite._src.rng.prng import threefry2x32
  key, start = int(state[0]), int(state[1])
  k0, k1 = np.uint32(key & 0xFFFFFFFF), np.uint32(key >> 32)

  def hashed(counter_shape):
    c = _counters(start, counter_shape)
    return threefry2x32(k0, k1, (c & _MASK32).astype(_U32), (c >> np.uint64(32)).astype(_U32))

  if bits == 64:
    y0, y1 = hashed(shape)
    out, used = y0.astype(_U64) | (y1.astype(_U64) << np.uint64(32)), math.prod(shape)
  elif not shape:
    out, used = hashed((1,))[0].reshape(()), 1
  else:
    split = next((i for i, d in enumerate(shape) if d % 2 == 0), None)
    split = int(np.argmax(shape)) if split is None else split
    half = (*shape[:split], -(-shape[split] // 2), 1, *shape[split + 1:])
    y0, y1 = hashed(half)
    even = list(shape)
    even[split] = half[split] * 2
    out = np.concatenate([y0, y1], axis=split + 1).reshape(even)
    out, used = out[tuple(slice(0, d) for d in shape)], math.prod(half)
  return np.array([key, (start + used) & 0xFFFFFFFFFFFFFFFF], _U64), out


def _generate(key: np.ndarray, shape: tuple, dtype, algorithm):
  """(new key, bits) for key u32[4] or u64[2], as XLA's CPU expansion computes them."""
  key = np.asarray(key)
  state = np.ascontiguousarray(key).view(_U64) if key.dtype == _U32 else key
  bits = 64 if dtype == _U64 else 32
  make = _threefry if algorithm == RandomAlgorithm.RNG_THREE_FRY else _philox
  new_state, out = make(state, tuple(shape), bits)
  new_key = new_state.view(_U32) if key.dtype == _U32 else new_state
  return [new_key, np.array(out, dtype=dtype).reshape(tuple(shape))]


# --- the primitive -------------------------------------------------------------------------------

rng_bit_generator_p = core.Primitive("rng_bit_generator")
rng_bit_generator_p.multiple_results = True


def _abstract(key, *, shape, dtype, algorithm, out_sharding=None):
  if not ((key.shape == (4,) and key.dtype == _U32) or (key.shape == (2,) and key.dtype == _U64)):
    raise TypeError("rng_bit_generator: the key must be a uint32[4] or uint64[2] array, got "
                    f"{dtypes.dtype_name(key.dtype)}{list(key.shape)}")
  return [ShapedArray(key.shape, key.dtype), ShapedArray(tuple(shape), np.dtype(dtype))]


rng_bit_generator_p.def_abstract_eval(_abstract)
rng_bit_generator_p.def_impl(
    lambda key, *, shape, dtype, algorithm, out_sharding=None: _generate(key, shape, dtype,
                                                                         algorithm))


def _batch(vals, dims, *, shape, dtype, algorithm, out_sharding=None):
  """JAX's rule: the first key makes the bits of the whole batch (leading axis) and only the
  first key is advanced; the other keys come out as they went in."""
  keys, = vals
  dim, = dims
  params = dict(dtype=dtype, algorithm=algorithm, out_sharding=out_sharding)
  if dim is batching.not_mapped:
    return rng_bit_generator_p.bind(keys, shape=shape, **params), [batching.not_mapped] * 2
  from jaxlite._src.lax import slicing
  keys = batching.moveaxis(keys, dim, 0)
  first = slicing.index_in_dim(keys, 0, keepdims=False)
  new_key, bits = rng_bit_generator_p.bind(first, shape=(keys.shape[0], *shape), **params)
  return [slicing.dynamic_update_index_in_dim(keys, new_key, 0, 0), bits], [0, 0]


batching.primitive_batchers[rng_bit_generator_p] = _batch


def _lower(ctx, key, *, shape, dtype, algorithm, out_sharding=None):
  """stablehlo.rng_bit_generator on a u64[2] state (a u32[4] key is bitcast to it and back, as
  JAX lowers it); u8/u16 bits are asked as such (the op takes every unsigned width)."""
  key_aval, bits_aval = ctx.avals_out
  state = key
  if key.aval.dtype == _U32:
    pairs = ctx.reshape(key, (2, 2))
    state = ctx.op("bitcast_convert", [pairs], ShapedArray((2,), _U64))
  name = {RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY", RandomAlgorithm.RNG_PHILOX: "PHILOX"}.get(
      algorithm, "DEFAULT")
  new_state, bits = ctx.op("rng_bit_generator", [state], [state.aval, bits_aval],
                           {"rng_algorithm": f"#stablehlo<rng_algorithm {name}>"})
  if key.aval.dtype == _U32:
    pairs = ctx.op("bitcast_convert", [new_state], ShapedArray((2, 2), _U32))
    new_state = ctx.reshape(pairs, key_aval.shape)
  return [new_state, bits]


hlo.register(rng_bit_generator_p, _lower)


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
  """(new key, uniformly random bits of `shape` and unsigned `dtype`) from a u32[4] key, by
  XLA's RngBitGenerator (stateless: the same key gives the same bits)."""
  shape = core.canonicalize_shape(shape)
  dtype = dtypes.check_user_dtype(dtype, "rng_bit_generator")
  if np.dtype(dtype) not in _BIT_DTYPES:
    raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
  return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=np.dtype(dtype),
                                        algorithm=algorithm, out_sharding=out_sharding))
