"""StableHLO lowering of threefry2x32 and the random_* primitives, bit-identical to JAX's
(both `jax_threefry_partitionable` modes), registered here for prng.py's primitives (lax loads
this module).

A key<fry> value lowers as its data, a ui32 tensor with a trailing dimension of 2 (k0, k1):
the lowering's Values keep the key aval and print that physical type (`lowering.physical_aval`).
The hash is the 20 rounds unrolled; XLA fuses them into one loop over the counters.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base.config import config
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.rng import prng

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_U32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


def _aval(shape, dtype=_U32):
  return core.ShapedArray(tuple(shape), np.dtype(dtype))


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
  data = xla.physical(keys)
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
  return xla.with_aval(data, aval)


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
  return xla.with_aval(ctx.reshape(flat, (*key_shape, *shape, 2)), ctx.aval_out)


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
  return xla.with_aval(data, ctx.aval_out)


def random_unwrap_rule(ctx, keys):
  return xla.physical(keys)


def key_physical_aval(aval):
  return core.ShapedArray((*aval.shape, *aval.dtype._impl.key_shape), _U32)


# --- random_gamma: Marsaglia-Tsang with JAX's key schedule ---------------------------------------
# Every element has its own key and its own rejection loop; the loops run batched (a while
# over all elements, each advancing only while it still rejects), drawing exactly what JAX's
# vmapped sampler draws.

class _Draws:
  """Scalar draws from per-element keys (k0, k1: ui32 arrays of the elements' shape)."""

  def __init__(self, ctx, dtype):
    self.ctx, self.dtype = ctx, np.dtype(dtype)

  def split(self, k0, k1, n):
    """split(key, n)[i] for each key, i < n."""
    ctx, shape = self.ctx, k0.shape
    if config.jax_threefry_partitionable:
      return [hash2x32(ctx, k0, k1, _const(ctx, 0, shape), _const(ctx, i, shape))
              for i in range(n)]
    words = []
    for half in (0, 1):  # counters 0..n-1 in x0, n..2n-1 in x1; words y0 ++ y1
      pairs = [hash2x32(ctx, k0, k1, _const(ctx, i, shape), _const(ctx, n + i, shape))
               for i in range(n)]
      words += [p[half] for p in pairs]
    return [(words[2 * i], words[2 * i + 1]) for i in range(n)]

  def bits(self, k0, k1, width):
    ctx, shape = self.ctx, k0.shape
    if width == 64:
      low = 0 if config.jax_threefry_partitionable else 1
      y0, y1 = hash2x32(ctx, k0, k1, _const(ctx, 0, shape), _const(ctx, low, shape))
      hi = _bin(ctx, "stablehlo.shift_left", ctx.convert(y0, np.uint64),
                _const(ctx, 32, shape, np.uint64))
      return _bin(ctx, "stablehlo.or", hi, ctx.convert(y1, np.uint64))
    y0, y1 = hash2x32(ctx, k0, k1, _const(ctx, 0, shape), _const(ctx, 0, shape))
    word = _bin(ctx, "stablehlo.xor", y0, y1) if config.jax_threefry_partitionable else y0
    return ctx.convert(word, _UINT[width])

  def uniform(self, k0, k1, lo=0.0, hi=1.0):
    ctx, dtype, shape = self.ctx, self.dtype, k0.shape
    info = np.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    uint = _UINT[nbits]
    raw = ctx.convert(self.bits(k0, k1, 8 if nmant < 8 else nbits), uint)
    shifted = _bin(ctx, "stablehlo.shift_right_logical", raw,
                   _const(ctx, (8 if nmant < 8 else nbits) - nmant, shape, uint))
    one = np.asarray(1.0, dtype).view(uint)
    floats = ctx.op("stablehlo.bitcast_convert",
                    [_bin(ctx, "stablehlo.or", shifted, _const(ctx, one, shape, uint))],
                    _aval(shape, dtype))
    floats = _bin(ctx, "stablehlo.subtract", floats, _const(ctx, 1.0, shape, dtype))
    lo_v, span = _const(ctx, lo, shape, dtype), _const(ctx, np.asarray(hi, dtype) -
                                                        np.asarray(lo, dtype), shape, dtype)
    out = _bin(ctx, "stablehlo.add", _bin(ctx, "stablehlo.multiply", floats, span), lo_v)
    return _bin(ctx, "stablehlo.maximum", lo_v, out)

  def normal(self, k0, k1):
    lo = np.nextafter(np.asarray(-1.0, self.dtype), np.asarray(0.0, self.dtype))
    u = self.uniform(k0, k1, lo, 1.0)
    r = self.ctx.op("chlo.erf_inv", [u], u.aval)
    return _bin(self.ctx, "stablehlo.multiply", _const(self.ctx, np.sqrt(2), u.shape, self.dtype),
                r)


def _gamma_loop(ctx, state, cond, body):
  avals = [v.aval for v in state]
  return ctx.op("stablehlo.while", state, avals,
                regions=[ctx.region(avals, lambda c, *s: [_any(c, cond(c, *s))]),
                         ctx.region(avals, body)])


def _any(ctx, pred):
  return ctx.op("stablehlo.reduce", [pred, ctx.constant(np.asarray(False))],
                _aval((), np.bool_), {"dimensions": xla.i64_array(range(len(pred.shape)))},
                regions=[ctx.scalar_region(np.bool_, "stablehlo.or")])


def random_gamma_rule(ctx, keys, a, *, log_space):
  dtype = np.dtype(a.dtype)
  shape = tuple(a.shape)
  k0, k1 = key_words(ctx, keys)
  key_shape = tuple(k0.shape)
  per_key = (math.prod(shape[len(key_shape):]),)
  if config.jax_threefry_partitionable:  # one key per element: split(key, per_key)
    y0, y1 = hash2x32(ctx, *_spread(ctx, [k0, k1], key_shape, per_key),
                      *_counters(ctx, key_shape, per_key))
  else:
    flat = _hash_original(ctx, k0, k1, key_shape, 2 * per_key[0])
    pairs = ctx.reshape(flat, (*key_shape, per_key[0], 2))
    y0, y1 = (ctx.reshape(_slice_last(ctx, pairs, j, j + 1), (*key_shape, *per_key))
              for j in (0, 1))
  k0, k1 = ctx.reshape(y0, shape), ctx.reshape(y1, shape)
  return _gamma_samples(ctx, _Draws(ctx, dtype), k0, k1, a, log_space)


def _gamma_samples(ctx, draws, k0, k1, alpha, log_space):
  dtype, shape = draws.dtype, alpha.shape
  av = alpha.aval
  f = lambda v: _const(ctx, v, shape, dtype)  # noqa: E731
  op = lambda name, *xs: ctx.op(name, list(xs), xs[0].aval)  # noqa: E731
  (k0, k1), (s0, s1) = draws.split(k0, k1, 2)
  boost_mask = ctx.compare(alpha, f(1), "GE")
  alpha_b = ctx.select(boost_mask, alpha, op("stablehlo.add", alpha, f(1)))
  d = op("stablehlo.subtract", alpha_b, f(1 / 3))
  c = op("stablehlo.divide", f(1 / 3), op("stablehlo.sqrt", d))

  def rejects(cx, X, V, U):
    o = lambda name, *xs: cx.op(name, list(xs), av)  # noqa: E731
    g = lambda v: _const(cx, v, shape, dtype)  # noqa: E731
    first = cx.compare(U, o("stablehlo.subtract", g(1), o("stablehlo.multiply", g(0.0331),
                                                           o("stablehlo.multiply", X, X))), "GE")
    rhs = o("stablehlo.add", o("stablehlo.multiply", X, g(0.5)), o("stablehlo.multiply", d, o(
        "stablehlo.add", o("stablehlo.subtract", g(1), V), o("stablehlo.log", V))))
    second = cx.compare(o("stablehlo.log", U), rhs, "GE")
    return cx.op("stablehlo.and", [first, second], _aval(shape, np.bool_))

  def outer_body(cx, k0, k1, X, V, U):
    active = rejects(cx, X, V, U)
    (n0, n1), (x0, x1), (u0, u1) = _Draws(cx, dtype).split(k0, k1, 3)
    x, v = _gamma_proposal(cx, dtype, x0, x1, c)
    u = _Draws(cx, dtype).uniform(u0, u1)
    keep = lambda new, old: cx.select(active, new, old)  # noqa: E731
    v3 = cx.op("stablehlo.multiply", [cx.op("stablehlo.multiply", [v, v], av), v], av)
    return [keep(n0, k0), keep(n1, k1), keep(cx.op("stablehlo.multiply", [x, x], av), X),
            keep(v3, V), keep(u, U)]

  state = [k0, k1, f(0), f(1), f(2)]
  _, _, X, V, U = _gamma_loop(ctx, state, lambda cx, k0, k1, X, V, U: rejects(cx, X, V, U),
                              outer_body)
  sample = draws.uniform(s0, s1)
  if log_space:
    log_samples = op("stablehlo.log_plus_one", op("stablehlo.negate", sample))
    skip = ctx.op("stablehlo.or", [boost_mask, ctx.compare(log_samples, f(0), "EQ")],
                  boost_mask.aval)
    log_boost = ctx.select(skip, f(0), op("stablehlo.multiply", log_samples,
                                         op("stablehlo.divide", f(1), alpha)))
    return op("stablehlo.add", op("stablehlo.add", op("stablehlo.log", d), op("stablehlo.log", V)),
              log_boost)
  samples = op("stablehlo.subtract", f(1), sample)
  boost = ctx.select(boost_mask, f(1), op("stablehlo.power", samples,
                                          op("stablehlo.divide", f(1), alpha)))
  return op("stablehlo.multiply", op("stablehlo.multiply", d, V), boost)


def _gamma_proposal(ctx, dtype, k0, k1, c):
  """x ~ normal and v = 1 + x c, redrawn (splitting the key) until v > 0."""
  shape, av = c.shape, c.aval

  def todo(cx, k0, k1, x, v):
    return cx.compare(v, _const(cx, 0, shape, dtype), "LE")

  def body(cx, k0, k1, x, v):
    again = todo(cx, k0, k1, x, v)
    (n0, n1), (s0, s1) = _Draws(cx, dtype).split(k0, k1, 2)
    nx = _Draws(cx, dtype).normal(s0, s1)
    nv = cx.op("stablehlo.add", [_const(cx, 1, shape, dtype),
                                 cx.op("stablehlo.multiply", [nx, c], av)], av)
    keep = lambda new, old: cx.select(again, new, old)  # noqa: E731
    return [keep(n0, k0), keep(n1, k1), keep(nx, x), keep(nv, v)]

  state = [k0, k1, _const(ctx, 0, shape, dtype), _const(ctx, -1, shape, dtype)]
  _, _, x, v = _gamma_loop(ctx, state, todo, body)
  return x, v


# --- registration: keys lower as their ui32 data ------------------------------------------------
xla.extended_types[prng.KeyTy] = (key_physical_aval, prng.data_from_keys)
for _p, _rule in ((prng.threefry2x32_p, threefry2x32_rule),
                  (prng.random_seed_p, random_seed_rule),
                  (prng.random_bits_p, random_bits_rule),
                  (prng.random_split_p, random_split_rule),
                  (prng.random_fold_in_p, random_fold_in_rule),
                  (prng.random_wrap_p, random_wrap_rule),
                  (prng.random_unwrap_p, random_unwrap_rule)):
  xla.register(_p, _rule)
  xla.extended_aware.add(_p)
