"""threefry2x32 in NumPy and the key operations on threefry keys' records: split, fold_in,
random bits and seeding, in both of JAX's modes (`jax_threefry_partitionable`).

The hash is a vectorised uint32 computation run in cache-sized chunks (Python ints for a
handful of counters); batched keys hash as one array. The key primitives' impls (prng.py) call
the functions here; tier 1 and the native tier reach the hash through `bits_rows` and the
`keys_hash_kernel` hook.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core, machine
from jaxlite._src.base.config import config
from jaxlite._src.rng.prng_key_dtype import KEY_STORAGE, PRNGImpl, threefry_impl

# --- threefry2x32 in NumPy ---------------------------------------------------------------------

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _chunk() -> int:
  """Elements per block of the hash: its working set (x0, x1, a temporary and the output, 16
  bytes an element) in a core's L2, a power of two in 2^15..2^17. Each of the ~110 NumPy calls
  of a block takes the GIL once: on the 2-core dev machine (2 MiB L2) a uint32 op costs 2.9 us
  on 2^15 elements and 12.1 us on 2^17, so the larger block halves nothing per element but
  makes a quarter of the GIL hand-offs, which is what limits tier 1's threads (tiled_executor)."""
  l2 = machine.cache_bytes(2) or (256 << 10)
  return 1 << min(max((l2 // 16).bit_length() - 1, 15), 17)


_CHUNK = _chunk()  # elements per block: the working set stays in the L2 cache
_MASK32 = 0xFFFFFFFF


def _rotl_xor(x0, x1, r, tmp):
  """x0 += x1; x1 = rotl(x1, r) ^ x0, in place."""
  np.add(x0, x1, out=x0)
  np.left_shift(x1, r, out=tmp)
  np.right_shift(x1, 32 - r, out=x1)
  np.bitwise_or(x1, tmp, out=x1)
  np.bitwise_xor(x1, x0, out=x1)


def _key_schedule(k0, k1):
  """The three key words and the per-round injections (Python ints or uint32 arrays)."""
  if isinstance(k0, np.ndarray) or isinstance(k1, np.ndarray):
    k0, k1 = np.asarray(k0, np.uint32), np.asarray(k1, np.uint32)
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    return ks, [(ks[(i + 1) % 3], ks[(i + 2) % 3] + np.uint32(i + 1)) for i in range(5)]
  k0, k1 = int(k0), int(k1)
  ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
  return ks, [(ks[(i + 1) % 3], (ks[(i + 2) % 3] + i + 1) & _MASK32) for i in range(5)]


def _hash_block(ks, inject, x0, x1):
  """The 20 threefry rounds on one block of counters; x0, x1 become fresh arrays y0, y1."""
  x0 = np.add(x0, np.uint32(ks[0]) if type(ks[0]) is int else ks[0], dtype=np.uint32)
  x1 = np.add(x1, np.uint32(ks[1]) if type(ks[1]) is int else ks[1], dtype=np.uint32)
  if x0.shape != x1.shape:
    x0, x1 = (np.array(a) for a in np.broadcast_arrays(x0, x1))
  tmp = np.empty_like(x1)
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      _rotl_xor(x0, x1, r, tmp)
    a, b = inject[i]
    np.add(x0, np.uint32(a) if type(a) is int else a, out=x0)
    np.add(x1, np.uint32(b) if type(b) is int else b, out=x1)
  return x0, x1


# Below this many elements the hash runs on Python ints: 110 NumPy calls cost more than that.
_PYTHON_MAX = 16


def _hash_python_source() -> str:
  """Source of `_hash_python`: the 20 rounds and 5 key injections written out, since a loop's
  indexing and modulo per round cost a third of the hash on Python ints."""
  words = ("k0", "k1", "k2")
  lines = ["def _hash_python(k0, k1, x0, x1):",
           "  k2 = k0 ^ k1 ^ 0x1BD11BDA",
           "  x0 = (x0 + k0) & 0xFFFFFFFF",
           "  x1 = (x1 + k1) & 0xFFFFFFFF"]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      lines += ["  x0 = (x0 + x1) & 0xFFFFFFFF",
                f"  x1 = ((x1 << {r}) & 0xFFFFFFFF | x1 >> {32 - r}) ^ x0"]
    lines += [f"  x0 = (x0 + {words[(i + 1) % 3]}) & 0xFFFFFFFF",
              f"  x1 = (x1 + {words[(i + 2) % 3]} + {i + 1}) & 0xFFFFFFFF"]
  lines.append("  return x0, x1")
  return "\n".join(lines)


_hash_namespace: dict = {}
exec(compile(_hash_python_source(), "<jaxlite threefry2x32>", "exec"), _hash_namespace)
# One threefry2x32 block on Python ints (the fast path for a key or a handful of draws).
_hash_python = _hash_namespace["_hash_python"]


def _hash_python_arrays(flat, size):
  ys = [_hash_python(*(int(a[0] if a.size == 1 else a[i]) for a in flat)) for i in range(size)]
  return np.array([y[0] for y in ys], np.uint32), np.array([y[1] for y in ys], np.uint32)


def threefry2x32(k0, k1, x0, x1):
  """(y0, y1) = threefry2x32 block function, elementwise with broadcasting, as uint32 arrays."""
  arrays = [np.asarray(a, np.uint32) for a in (k0, k1, x0, x1)]
  shape = np.broadcast_shapes(*(a.shape for a in arrays))
  size = math.prod(shape)
  flat = [a.reshape(-1) if a.size == 1 else np.broadcast_to(a, shape).reshape(-1)
          for a in arrays]
  if size <= _PYTHON_MAX:
    y0, y1 = _hash_python_arrays(flat, size)
    return y0.reshape(shape), y1.reshape(shape)
  y0 = np.empty(size, np.uint32)
  y1 = np.empty(size, np.uint32)
  scalar_key = flat[0].size == 1 and flat[1].size == 1
  if scalar_key:
    ks, inject = _key_schedule(int(flat[0][0]), int(flat[1][0]))
  for start in range(0, size, _CHUNK):
    block = slice(start, min(start + _CHUNK, size))
    if not scalar_key:
      kb = [a if a.size == 1 else a[block] for a in flat[:2]]
      ks, inject = _key_schedule(*kb)
    xb = [a if a.size == 1 else a[block] for a in flat[2:]]
    y0[block], y1[block] = _hash_block(ks, inject, *xb)
  return y0.reshape(shape), y1.reshape(shape)


def _counter_hash(k0: int, k1: int, n: int, combine, start: int = 0):
  """threefry of one key over counters start..start+n-1 (hi word count >> 32), written by
  `combine(block, y0, y1)` per block, `block` a slice of 0..n.

  Counters are made per block so that a 10M draw never materialises its counter arrays; tier 1
  runs rows of a draw on different threads by giving each its `start`.
  """
  if n <= _PYTHON_MAX:
    ys = [_hash_python(k0, k1, (start + i) >> 32, (start + i) & _MASK32) for i in range(n)]
    combine(slice(0, n), np.array([y[0] for y in ys], np.uint32),
            np.array([y[1] for y in ys], np.uint32))
    return
  ks, inject = _key_schedule(k0, k1)
  for first in range(0, n, _CHUNK):
    last = min(first + _CHUNK, n)
    lo, hi = start + first, start + last
    if hi <= 1 << 32:
      words = np.uint32(0), np.arange(lo, hi, dtype=np.uint32)
    else:
      count = np.arange(lo, hi, dtype=np.uint64)
      words = (count >> 32).astype(np.uint32), (count & _MASK32).astype(np.uint32)
    y0, y1 = _hash_block(ks, inject, *words)
    combine(slice(first, last), y0, y1)


def _hash_original(k0, k1, counts):
  """JAX's non-partitionable hash: counters halved into x0 | x1, outputs y0 ++ y1."""
  flat = counts.reshape(-1)
  odd = flat.size % 2
  if odd:
    flat = np.concatenate([flat, np.zeros(1, np.uint32)])
  half = flat.size // 2
  y0, y1 = threefry2x32(k0, k1, flat[:half], flat[half:])
  out = np.concatenate([y0, y1])
  return out[:out.size - odd].reshape(counts.shape)


# --- key data helpers --------------------------------------------------------------------------

def key_words(keys: np.ndarray):
  """(k0, k1) uint32 arrays of a structured key array."""
  return keys["k0"], keys["k1"]


def keys_from_words(k0, k1) -> np.ndarray:
  out = np.empty(np.broadcast_shapes(np.shape(k0), np.shape(k1)), KEY_STORAGE)
  out["k0"] = k0
  out["k1"] = k1
  return out


def keys_from_data(data: np.ndarray, impl: PRNGImpl = threefry_impl) -> np.ndarray:
  """Structured keys of `impl` from uint32 key data of shape (..., *impl.key_shape)."""
  if impl.storage is KEY_STORAGE:
    return keys_from_words(data[..., 0], data[..., 1])
  out = np.empty(np.shape(data)[:np.ndim(data) - len(impl.key_shape)], impl.storage)
  out["data"] = data
  return out


def data_from_keys(keys: np.ndarray) -> np.ndarray:
  """uint32 key data of shape (..., *key_shape) from structured keys."""
  if keys.dtype.names == ("data",):
    return np.array(keys["data"])
  return np.stack([keys["k0"], keys["k1"]], axis=-1)


def _as_keys(x) -> np.ndarray:
  """The structured NumPy value of a key argument (a PRNGKeyArray when bound eagerly: prng.py
  registers the type as core.key_array_type)."""
  return x._host_value() if type(x) is core.key_array_type else np.asarray(x)


def _each_key(keys: np.ndarray, fn, out_shape, out_dtype):
  """Applies fn(k0, k1) -> array of out_shape to every key; stacks on the keys' shape."""
  if keys.ndim == 0:
    if keys.dtype is KEY_STORAGE:  # (item: both words as Python ints in one call)
      return fn(*keys.item())
    return fn(int(keys["k0"]), int(keys["k1"]))
  out = np.empty(keys.shape + tuple(out_shape), out_dtype)
  for idx in np.ndindex(keys.shape):
    k = keys[idx]
    out[idx] = fn(int(k["k0"]), int(k["k1"]))
  return out


def _counter_words(n: int, start: int = 0):
  """(hi, lo) uint32 words of the counters start..start+n-1 (hi a scalar when it is 0)."""
  if start + n <= 1 << 32:
    return np.uint32(0), np.arange(start, start + n, dtype=np.uint32)
  count = np.arange(start, start + n, dtype=np.uint64)
  return (count >> np.uint64(32)).astype(np.uint32), (count & _MASK32).astype(np.uint32)


# A compiled hash for batched keys, registered by a higher layer (the native tier): called as
# `keys_hash_kernel(k0, k1, x0, x1, xor)` with k0, k1 uint32 of shape (K,) and counter words
# x0, x1 of shape (n,) (shared by every key) or (K, n); returns (y0, y1) of shape (K, n), or
# y0 ^ y1 with `xor`, or None to leave the hash to NumPy.
keys_hash_kernel = None


def keys_hash_numpy(k0, k1, x0, x1):
  """(y0, y1) of shape (K, n): every key of k0, k1 (K,) hashed over counter words x0, x1 of
  shape (n,) or (K, n), as one vectorised NumPy hash."""
  return threefry2x32(k0[:, None], k1[:, None], x0, x1)


def _keys_hash(keys: np.ndarray, x0, x1, xor: bool = False):
  """threefry of every key over counter words x0, x1 (shape (n,), shared, or keys.shape +
  (n,)): (y0, y1) of shape keys.shape + (n,), or y0 ^ y1 with `xor`. One hash over all keys
  (a batch of 10^5 keys under vmap is one computation, not a Python loop over the keys)."""
  k0, k1 = (w.reshape(-1) for w in key_words(keys))
  n = max(np.shape(x0)[-1:] + np.shape(x1)[-1:])
  x0, x1 = (np.broadcast_to(np.asarray(x, np.uint32), (n,)) if np.ndim(x) <= 1
            else np.asarray(x, np.uint32).reshape(-1, n) for x in (x0, x1))
  out = None
  if keys_hash_kernel is not None:
    out = keys_hash_kernel(k0, k1, x0, x1, xor)
  if out is None:
    y0, y1 = keys_hash_numpy(k0, k1, x0, x1)
    out = np.bitwise_xor(y0, y1, out=y0) if xor else (y0, y1)
  shape = keys.shape + (n,)
  return out.reshape(shape) if xor else tuple(y.reshape(shape) for y in out)


# Batched keys hash as one array over all keys' counters, unless each key's draw alone fills
# the hash's blocks (then key by key: the per-call overhead is amortised, and the one-key path
# never materialises counter arrays or broadcast keys).
def _batched(keys: np.ndarray, n: int) -> bool:
  return keys.ndim > 0 and n < _CHUNK


# --- split, fold_in and bits -------------------------------------------------------------------

def _split_one(k0: int, k1: int, shape: tuple) -> np.ndarray:
  n = math.prod(shape)
  if not config.jax_threefry_partitionable:
    data = _hash_original(k0, k1, np.arange(2 * n, dtype=np.uint32))
    return keys_from_data(data.reshape(shape + (2,)))
  if 0 <= n <= _PYTHON_MAX:  # (one structured array from the pairs: no per-field stores)
    return np.array([_hash_python(k0, k1, c >> 32, c & _MASK32) for c in range(n)],
                    KEY_STORAGE).reshape(shape)
  out = np.empty(n, KEY_STORAGE)

  def store(block, y0, y1):
    out["k0"][block] = y0
    out["k1"][block] = y1
  _counter_hash(k0, k1, n, store)
  return out.reshape(shape)


def split_keys(keys: np.ndarray, shape: tuple) -> np.ndarray:
  n = math.prod(shape)
  if not _batched(keys, n):
    return _each_key(keys, lambda k0, k1: _split_one(k0, k1, shape), shape, KEY_STORAGE)
  if config.jax_threefry_partitionable:
    y0, y1 = _keys_hash(keys, *_counter_words(n))
    return keys_from_words(y0, y1).reshape(keys.shape + tuple(shape))
  # each key's data: the original hash of counters 0..2n-1, halved (y0 ++ y1) into n pairs
  y0, y1 = _keys_hash(keys, np.arange(n, dtype=np.uint32),
                      np.arange(n, 2 * n, dtype=np.uint32))
  data = np.concatenate([y0, y1], axis=-1)
  return keys_from_data(data.reshape(keys.shape + tuple(shape) + (2,)))


def fold_in_keys(keys: np.ndarray, msgs) -> np.ndarray:
  """new key = threefry(key; 0, msg): the same in both partitionable modes."""
  msgs = np.asarray(msgs, np.uint32)
  shape = np.broadcast_shapes(keys.shape, msgs.shape)
  if not shape:
    k0, k1 = key_words(keys)
    return keys_from_words(*threefry2x32(k0, k1, np.uint32(0), msgs))
  keys = np.broadcast_to(keys, shape)
  y0, y1 = _keys_hash(keys, np.zeros(1, np.uint32), np.broadcast_to(msgs, shape)[..., None])
  return keys_from_words(y0[..., 0], y1[..., 0])


_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
         64: np.dtype(np.uint64)}


def _bits_partitionable(k0: int, k1: int, bit_width: int, shape: tuple, start: int = 0,
                        out: np.ndarray | None = None) -> np.ndarray:
  """Bits of counters start.. for an output of `shape` (into `out` when given)."""
  n = math.prod(shape)
  dtype = _UINT[bit_width]
  if 0 <= n <= _PYTHON_MAX:  # a draw or a handful: the words combined on Python ints
    hashes = [_hash_python(k0, k1, c >> 32, c & _MASK32) for c in range(start, start + n)]
    if bit_width == 64:
      words = [y0 << 32 | y1 for y0, y1 in hashes]
    else:  # (a narrower width keeps the xor's low bits, as the array path's cast does)
      words = [(y0 ^ y1) & ((1 << bit_width) - 1) for y0, y1 in hashes]
    if out is None:
      return np.array(words, dtype).reshape(shape)
    out.reshape(-1)[:] = words
    return out
  flat = np.empty(n, dtype) if out is None else out.reshape(-1)
  if bit_width == 64:
    def store(block, y0, y1):
      o = flat[block]
      np.left_shift(y0.astype(np.uint64), np.uint64(32), out=o)
      np.bitwise_or(o, y1, out=o)
  elif bit_width == 32:
    def store(block, y0, y1):
      np.bitwise_xor(y0, y1, out=flat[block])
  else:
    def store(block, y0, y1):
      np.bitwise_xor(y0, y1, out=y0)
      flat[block] = y0.astype(dtype)
  _counter_hash(k0, k1, n, store, start)
  return flat.reshape(shape) if out is None else out


def bits_rows(keys: np.ndarray, bit_width: int, shape: tuple, lo: int, n: int,
              out: np.ndarray | None = None) -> np.ndarray:
  """Rows lo:lo+n of `random_bits(keys, bit_width, shape)` in partitionable mode (tier 1's
  tiles). One key: its counters are the row-major indices, so rows lo:lo+n are counters
  lo*row.. (bit-identical to the whole draw). Keys with rows: `keys` is rows lo:lo+n of them."""
  keys = _as_keys(keys)
  if keys.ndim == 0:
    piece = (n,) + tuple(shape[1:])
    start = lo * math.prod(shape[1:])
    return _bits_partitionable(int(keys["k0"]), int(keys["k1"]), bit_width, piece, start, out)
  bits = bits_keys(keys, bit_width, shape)
  if out is None:
    return bits
  out[...] = bits
  return out


def _bits_original(k0: int, k1: int, bit_width: int, shape: tuple) -> np.ndarray:
  size = math.prod(shape)
  words = -(-bit_width * size // 32)
  if words >= _MASK32:
    raise NotImplementedError("random bits of more than 2**32 - 1 words with "
                              "jax_threefry_partitionable=False")
  bits = _hash_original(k0, k1, np.arange(words, dtype=np.uint32))
  return _words_to_bits(bits, bit_width, size).reshape(shape)


def _words_to_bits(bits: np.ndarray, bit_width: int, n: int) -> np.ndarray:
  """The first n bit_width-bit values of the original mode's uint32 words (last axis): 64
  bits join the first half's words (high) with the second half's (low); 8 and 16 bits are the
  little-endian pieces of each word, low piece first."""
  if bit_width == 64:
    hi, lo = np.split(bits.astype(np.uint64), 2, axis=-1)
    out = (hi << np.uint64(32)) | lo
  elif bit_width == 32:
    out = bits
  else:
    pieces = bits[..., None] >> (np.arange(32 // bit_width, dtype=np.uint32) * bit_width)
    pieces = (pieces & np.uint32((1 << bit_width) - 1)).astype(_UINT[bit_width])
    out = pieces.reshape(bits.shape[:-1] + (-1,))
  return out[..., :n]


def bits_keys(keys: np.ndarray, bit_width: int, shape: tuple) -> np.ndarray:
  n = math.prod(shape)
  partitionable = config.jax_threefry_partitionable
  if not _batched(keys, n):
    fn = _bits_partitionable if partitionable else _bits_original
    return _each_key(keys, lambda k0, k1: fn(k0, k1, bit_width, shape), shape,
                     _UINT[bit_width])
  bits = (_batched_bits_partitionable if partitionable else _batched_bits_original)(
      keys, bit_width, n)
  return bits.reshape(keys.shape + tuple(shape))


def _batched_bits_partitionable(keys, bit_width: int, n: int) -> np.ndarray:
  """`_bits_partitionable` of every key at once: (..., n) bits of counters 0..n-1."""
  if bit_width != 64:
    bits = _keys_hash(keys, *_counter_words(n), xor=True)
    return bits if bit_width == 32 else bits.astype(_UINT[bit_width])
  y0, y1 = _keys_hash(keys, *_counter_words(n))
  out = y0.astype(np.uint64)
  np.left_shift(out, np.uint64(32), out=out)
  return np.bitwise_or(out, y1, out=out)


def _batched_bits_original(keys, bit_width: int, n: int) -> np.ndarray:
  """`_bits_original` of every key at once: the counters 0..words-1 (a zero pads an odd
  count) halved into x0 | x1, each key's words y0 ++ y1, then cut into bit_width pieces."""
  words = -(-bit_width * n // 32)
  if words >= _MASK32:
    raise NotImplementedError("random bits of more than 2**32 - 1 words with "
                              "jax_threefry_partitionable=False")
  half = -(-words // 2)
  x1 = np.arange(half, 2 * half, dtype=np.uint32)
  if words % 2:
    x1[-1] = 0
  y0, y1 = _keys_hash(keys, np.arange(half, dtype=np.uint32), x1)
  return _words_to_bits(np.concatenate([y0, y1], axis=-1)[..., :words], bit_width, n)


def seed_keys(seeds: np.ndarray) -> np.ndarray:
  """Key [hi, lo] from an integer seed: lo = seed mod 2**32, hi = seed >> 32 in its own width."""
  seeds = np.asarray(seeds)
  wide = seeds.astype(np.int64) if seeds.dtype != np.uint64 else seeds
  lo = (wide & _MASK32).astype(np.uint32)
  if seeds.dtype.itemsize == 8:
    hi = (wide.view(np.uint64) >> np.uint64(32)).astype(np.uint32)
  else:
    hi = np.zeros(seeds.shape, np.uint32)
  return keys_from_words(hi, lo)
