"""StableHLO lowering of threefry2x32 and the random_* primitives, bit-identical to JAX's
(both `jax_threefry_partitionable` modes); `prng.py` registers them next to the primitives.

A key<fry> value lowers as its data, a ui32 tensor with a trailing dimension of 2 (k0, k1):
the lowering's Values keep the key aval and print that physical type (`lowering.physical_aval`).
The hash is the 20 rounds unrolled; XLA fuses them into one loop over the counters.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src import core
from jaxlite._src.config import config
from jaxlite._src.compiler.xla import lowering as xla

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_U32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


def _aval(shape, dtype=_U32):
  return core.ShapedArray(tuple(shape), np.dtype(dtype))


def physical(v: xla.Value) -> xla.Value:
  """The same SSA value seen as its data (a key array as ui32 [..., 2])."""
  return xla.Value(v.name, xla.physical_aval(v.aval))


def as_keys(v: xla.Value, aval) -> xla.Value:
  """ui32 [..., 2] data seen as the key array `aval`."""
  return xla.Value(v.name, aval)


# --- elementwise uint32 helpers ------------------------------------------------------------------

def _bin(ctx, op, a, b):
  return ctx.op(op, [a, b], a.aval)


def _const(ctx, value, shape, dtype=_U32):
  return ctx.constant(np.asarray(value, dtype), shape=shape)


def _rotl(ctx, x, r):
  left = _bin(ctx, "stablehlo.shift_left", x, _const(ctx, r, x.shape))
  right = _bin(ctx, "stablehlo.shift_right_logical", x, _const(ctx, 32 - r, x.shape))
  return _bin(ctx, "stablehlo.or", left, right)


def hash2x32(ctx, k0, k1, x0, x1):
  """threefry2x32 of counters (x0, x1) under key (k0, k1); all four of one shape."""
  add = lambda a, b: _bin(ctx, "stablehlo.add", a, b)  # noqa: E731
  xor = lambda a, b: _bin(ctx, "stablehlo.xor", a, b)  # noqa: E731
  ks = (k0, k1, xor(xor(k0, k1), _const(ctx, 0x1BD11BDA, k0.shape)))
  x0, x1 = add(x0, ks[0]), add(x1, ks[1])
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x0 = add(x0, x1)
      x1 = xor(_rotl(ctx, x1, r), x0)
    x0 = add(x0, ks[(i + 1) % 3])
    x1 = add(add(x1, ks[(i + 2) % 3]), _const(ctx, i + 1, x1.shape))
  return x0, x1


def threefry2x32_rule(ctx, k0, k1, x0, x1):
  shape = ctx.avals_out[0].shape
  return list(hash2x32(ctx, *(ctx.broadcast_to(v, shape) for v in (k0, k1, x0, x1))))


# --- key data ------------------------------------------------------------------------------------

def key_words(ctx, keys):
  """(k0, k1) of key data [..., 2], each of the keys' shape."""
  data = physical(keys)
  shape = data.shape[:-1]
  words = []
  for j in (0, 1):
    part = ctx.op("stablehlo.slice", [data], _aval((*shape, 1)),
                  {"start_indices": xla.i64_array([0] * len(shape) + [j]),
                   "limit_indices": xla.i64_array([*shape, j + 1]),
                   "strides": xla.i64_array([1] * (len(shape) + 1))})
    words.append(ctx.reshape(part, shape))
  return words


def keys_of_words(ctx, y0, y1, aval):
  """Key data [..., 2] stacked from two word arrays, seen as the key array `aval`."""
  shape = y0.shape
  parts = [ctx.reshape(y, (*shape, 1)) for y in (y0, y1)]
  data = ctx.op("stablehlo.concatenate", parts, _aval((*shape, 2)),
                {"dimension": f"{len(shape)} : i64"})
  return as_keys(data, aval)


def _spread(ctx, words, key_shape, shape):
  """Key words of `key_shape` broadcast over key_shape + shape."""
  return [ctx.broadcast_to(w, (*key_shape, *shape), dims=range(len(key_shape))) for w in words]


def _counters(ctx, key_shape, shape):
  """The (hi, lo) words of each element's row-major index in `shape`, over key_shape + shape."""
  n = math.prod(shape)
  full = (*key_shape, *shape)
  dims = range(len(key_shape), len(full))
  if n <= 1 << 32:
    lo = ctx.reshape(ctx.op("stablehlo.iota", [], _aval((n,)), {"iota_dimension": "0 : i64"}),
                     shape)
    return _const(ctx, 0, full), ctx.broadcast_to(lo, full, dims=dims)
  wide = ctx.reshape(ctx.op("stablehlo.iota", [], _aval((n,), np.uint64),
                            {"iota_dimension": "0 : i64"}), shape)
  hi = ctx.convert(_bin(ctx, "stablehlo.shift_right_logical", wide,
                        _const(ctx, 32, shape, np.uint64)), _U32)
  return (ctx.broadcast_to(hi, full, dims=dims),
          ctx.broadcast_to(ctx.convert(wide, _U32), full, dims=dims))


def _hash_original(ctx, k0, k1, key_shape, n):
  """JAX's non-partitionable stream: counters 0..n-1 halved into (x0 | x1), output y0 ++ y1;
  ui32 [*key_shape, n]."""
  half = (n + 1) // 2
  iota = ctx.op("stablehlo.iota", [], _aval((2 * half,)), {"iota_dimension": "0 : i64"})
  if n % 2:  # the odd count hashes a zero in the last slot of x1
    keep = ctx.compare(iota, _const(ctx, n, iota.shape), "LT")
    iota = ctx.select(keep, iota, _const(ctx, 0, iota.shape))
  xs = [_slice_last(ctx, iota, lo, lo + half) for lo in (0, half)]
  full = (*key_shape, half)
  dims = [len(key_shape)]
  y0, y1 = hash2x32(ctx, *_spread(ctx, [k0, k1], key_shape, (half,)),
                    *(ctx.broadcast_to(x, full, dims=dims) for x in xs))
  both = ctx.op("stablehlo.concatenate", [y0, y1], _aval((*key_shape, 2 * half)),
                {"dimension": f"{len(key_shape)} : i64"})
  return _slice_last(ctx, both, 0, n)


def _slice_last(ctx, x, lo, hi):
  if (lo, hi) == (0, x.shape[-1]):
    return x
  rank = len(x.shape)
  return ctx.op("stablehlo.slice", [x], _aval((*x.shape[:-1], hi - lo), x.dtype),
                {"start_indices": xla.i64_array([0] * (rank - 1) + [lo]),
                 "limit_indices": xla.i64_array([*x.shape[:-1], hi]),
                 "strides": xla.i64_array([1] * rank)})


# --- the random_* rules --------------------------------------------------------------------------

def random_bits_rule(ctx, keys, *, bit_width, shape):
  shape = tuple(shape)
  k0, k1 = key_words(ctx, keys)
  key_shape = tuple(k0.shape)
  if config.jax_threefry_partitionable:
    y0, y1 = hash2x32(ctx, *_spread(ctx, [k0, k1], key_shape, shape),
                      *_counters(ctx, key_shape, shape))
    if bit_width == 64:
      wide = [ctx.convert(y, np.uint64) for y in (y0, y1)]
      hi = _bin(ctx, "stablehlo.shift_left", wide[0], _const(ctx, 32, wide[0].shape, np.uint64))
      return _bin(ctx, "stablehlo.or", hi, wide[1])
    return ctx.convert(_bin(ctx, "stablehlo.xor", y0, y1), _UINT[bit_width])
  return _bits_original(ctx, k0, k1, key_shape, bit_width, shape)


def _bits_original(ctx, k0, k1, key_shape, bit_width, shape):
  size = math.prod(shape)
  words = -(-bit_width * size // 32)
  bits = _hash_original(ctx, k0, k1, key_shape, words)
  out_shape = (*key_shape, *shape)
  if bit_width == 32:
    return ctx.reshape(bits, out_shape)
  if bit_width == 64:
    hi, lo = (ctx.convert(_slice_last(ctx, bits, a, a + size), np.uint64) for a in (0, size))
    hi = _bin(ctx, "stablehlo.shift_left", hi, _const(ctx, 32, hi.shape, np.uint64))
    return ctx.reshape(_bin(ctx, "stablehlo.or", hi, lo), out_shape)
  per = 32 // bit_width  # each word's pieces, the low piece first
  spread = (*key_shape, words, per)
  wide = ctx.broadcast_to(bits, spread, dims=range(len(key_shape) + 1))
  amounts = ctx.broadcast_to(
      ctx.constant(np.arange(per, dtype=np.uint32) * bit_width), spread, dims=[len(spread) - 1])
  pieces = _bin(ctx, "stablehlo.shift_right_logical", wide, amounts)
  flat = ctx.reshape(ctx.convert(pieces, _UINT[bit_width]), (*key_shape, words * per))
  return ctx.reshape(_slice_last(ctx, flat, 0, size), out_shape)


def random_split_rule(ctx, keys, *, shape):
  shape = tuple(shape)
  k0, k1 = key_words(ctx, keys)
  key_shape = tuple(k0.shape)
  if config.jax_threefry_partitionable:
    y0, y1 = hash2x32(ctx, *_spread(ctx, [k0, k1], key_shape, shape),
                      *_counters(ctx, key_shape, shape))
    return keys_of_words(ctx, y0, y1, ctx.aval_out)
  n = math.prod(shape)
  flat = _hash_original(ctx, k0, k1, key_shape, 2 * n)
  return as_keys(ctx.reshape(flat, (*key_shape, *shape, 2)), ctx.aval_out)


def random_fold_in_rule(ctx, keys, msgs):
  out_shape = ctx.aval_out.shape
  k0, k1 = (ctx.broadcast_to(w, out_shape) for w in key_words(ctx, keys))
  msgs = ctx.broadcast_to(ctx.convert(msgs, _U32), out_shape)
  y0, y1 = hash2x32(ctx, k0, k1, _const(ctx, 0, out_shape), msgs)
  return keys_of_words(ctx, y0, y1, ctx.aval_out)


def random_seed_rule(ctx, seeds, *, impl):
  """Key [hi, lo]: lo = the seed mod 2**32, hi = its upper word (64-bit seeds only)."""
  dtype = np.dtype(seeds.dtype)
  shape = seeds.shape
  if dtype.itemsize == 8:
    wide = seeds if dtype.kind == "u" else ctx.op("stablehlo.bitcast_convert", [seeds],
                                                  _aval(shape, np.uint64))
    lo = ctx.convert(_bin(ctx, "stablehlo.and", wide, _const(ctx, 0xFFFFFFFF, shape, np.uint64)),
                     _U32)
    hi = ctx.convert(_bin(ctx, "stablehlo.shift_right_logical", wide,
                          _const(ctx, 32, shape, np.uint64)), _U32)
  else:
    if dtype.kind == "i":
      lo = ctx.op("stablehlo.bitcast_convert", [ctx.convert(seeds, np.int32)], _aval(shape))
    else:
      lo = ctx.convert(seeds, _U32)
    hi = _const(ctx, 0, shape)
  return keys_of_words(ctx, hi, lo, ctx.aval_out)


def random_wrap_rule(ctx, data, *, impl):
  return as_keys(data, ctx.aval_out)


def random_unwrap_rule(ctx, keys):
  return physical(keys)


def key_physical_aval(aval):
  return core.ShapedArray((*aval.shape, *aval.dtype._impl.key_shape), _U32)
