"""PRNG keys and threefry2x32: the `key<fry>` dtype, typed key arrays and the random_* primitives.

A key array's value is a NumPy array of a structured (k0, k1) uint32 dtype, so NumPy shape ops
move whole keys; threefry itself is a vectorised uint32 computation run in cache-sized chunks.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core, devices, dtypes, machine
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base.extended_dtypes import extended
from jaxlite._src.base.config import config
from jaxlite._src.base.core import ShapedArray

# --- the key dtype -----------------------------------------------------------------------------

# One key per element: the two uint32 words of threefry's key, in JAX's key_data order.
KEY_STORAGE = np.dtype([("k0", np.uint32), ("k1", np.uint32)])


def storage_dtype(dtype):
  """The NumPy dtype of the buffers of arrays of `dtype` (key arrays hold their impl's records:
  KEY_STORAGE for threefry); for buffers that impls allocate ahead of filling them (scan's
  stacked outputs, ...)."""
  if getattr(dtype, "_is_extended", False) is not True:
    return dtype
  if hasattr(dtype, "_impl"):
    return dtype._impl.storage
  from jaxlite._src.base import extended_dtypes  # user extended dtypes: their physical type
  return extended_dtypes.physical_dtype(dtype) if extended_dtypes.has_rules(dtype) else dtype


class prng_key(extended):
  """Abstract dtype of all PRNG key arrays (`jax.dtypes.prng_key`)."""


class PRNGImpl:
  """A PRNG implementation: its name, its short tag (`fry`), the shape of its key data and, for
  the implementations written over their key data (rbg, unsafe_rbg, `define_prng_impl`'s), the
  functions seed(seed) -> data, split(data, shape), random_bits(data, bit_width, shape) and
  fold_in(data, msg) on one key's uint32 data. threefry2x32 has none: its keys are this
  module's primitives, computed here. A key array holds one `storage` record per key."""
  __slots__ = ("key_shape", "name", "tag", "seed", "split", "random_bits", "fold_in", "storage")

  def __init__(self, name: str, tag: str, key_shape: tuple, seed=None, split=None,
               random_bits=None, fold_in=None):
    self.name, self.tag, self.key_shape = name, tag, tuple(key_shape)
    self.seed, self.split, self.random_bits, self.fold_in = seed, split, random_bits, fold_in
    self.storage = KEY_STORAGE if seed is None else np.dtype(
        [("data", np.uint32, self.key_shape)])

  def __str__(self):  # printed as a param: `random_wrap[impl=fry]`
    return self.tag

  def __repr__(self):
    return f"PRNGImpl(key_shape={self.key_shape}, name='{self.name}', tag='{self.tag}')"

  def __hash__(self):
    return hash(self.name)

  def _functions(self):
    return (self.seed, self.split, self.random_bits, self.fold_in)

  def __eq__(self, other):
    return other is self or (type(other) is PRNGImpl and other.name == self.name
                             and other.key_shape == self.key_shape
                             and other._functions() == self._functions())


class PRNGSpec:
  """Names a PRNG implementation: what `jax.extend.random.define_prng_impl` returns, taken by
  `impl=` and returned by `jax.random.key_impl` for an unregistered implementation."""
  __slots__ = ("_impl",)

  def __init__(self, impl: PRNGImpl):
    self._impl = impl

  def __repr__(self):
    return f"PRNGSpec({self._impl.name!r})"

  def __str__(self):
    return str(self._impl)

  def __hash__(self):
    return hash(self._impl)

  def __eq__(self, other):
    return isinstance(other, PRNGSpec) and self._impl == other._impl


threefry_impl = PRNGImpl("threefry2x32", "fry", (2,))
# name -> the implementations `jax_default_prng_impl` and `impl="..."` name (rng.prng_impls adds
# rbg and unsafe_rbg)
prng_impls = {"threefry2x32": threefry_impl}
# The key operations of implementations with functions (PRNGImpl.seed is not None): "seed",
# "split", "fold_in", "bits" -> fn(keys or seeds, ..., impl), filled by rng.prng_impls (above
# this module: the functions run under vmap on jnp values). Such keys never bind random_seed,
# random_split, random_fold_in or random_bits: their data goes through random_unwrap, the
# impl's functions and random_wrap, as JAX's impl rules and lowerings run them.
data_impl_ops = {}


def _data_impl(keys):
  """The impl of key array `keys` when it computes on its key data, else None (threefry)."""
  impl = getattr(getattr(keys, "dtype", None), "_impl", None)
  return impl if impl is not None and impl.seed is not None else None


class KeyTy:
  """The extended dtype of typed key arrays; prints as `key<fry>`."""
  _is_extended = True
  type = prng_key
  kind = "V"

  def __init__(self, impl: PRNGImpl):
    self._impl = impl
    self.name = self._short_name = f"key<{impl.tag}>"
    self.itemsize = 4 * math.prod(impl.key_shape)

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __eq__(self, other):
    return type(other) is KeyTy and other._impl == self._impl

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash((KeyTy, self._impl))


key_dtype = KeyTy(threefry_impl)


def is_key_dtype(dtype) -> bool:
  return type(dtype) is KeyTy


def issubdtype_extended(a, b) -> bool:
  """`jnp.issubdtype` when either side is extended: keys are prng_key and extended only."""
  if is_key_dtype(a):
    return b in (prng_key, extended) or b == a
  if isinstance(a, type) and issubclass(a, extended):
    return isinstance(b, type) and issubclass(a, b)
  return False


dtypes._issubdtype_extended[0] = issubdtype_extended


def resolve_impl(spec) -> PRNGImpl:
  """The PRNGImpl named by `spec` (None, a name, an impl or a key dtype)."""
  if spec is None:
    spec = config.jax_default_prng_impl
  if isinstance(spec, PRNGImpl):
    return spec
  if is_key_dtype(spec):
    return spec._impl
  if type(spec) is PRNGSpec:
    return spec._impl
  if isinstance(spec, str):
    if spec in prng_impls:
      return prng_impls[spec]
    known = ", ".join(f'"{s}"' for s in prng_impls)
    raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: {known}?')
  raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")


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
  """The structured NumPy value of a key argument (a PRNGKeyArray when bound eagerly)."""
  return x._value if type(x) is PRNGKeyArray else np.asarray(x)


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


# --- primitives --------------------------------------------------------------------------------

def _check_keys(name: str, aval) -> None:
  if not is_key_dtype(aval.dtype):
    raise TypeError(f"{name} expects a PRNG key array (dtype key<fry>), got "
                    f"{dtypes.dtype_name(aval.dtype)}.")


def _key_prim(name, impl, abstract_eval, multiple_results=False):
  p = core.Primitive(name)
  p.multiple_results = multiple_results
  p.def_impl(impl)
  p.def_abstract_eval(abstract_eval)
  return p


def _seed_abstract(seeds, impl):
  if dtypes.kind_of_dtype(seeds.dtype) not in "iu":
    raise TypeError(f"PRNG key seed must be an integer; got {seeds}")
  return ShapedArray(seeds.shape, KeyTy(impl))


random_seed_p = _key_prim("random_seed", lambda seeds, impl: seed_keys(seeds), _seed_abstract)


def _bits_abstract(keys, bit_width, shape):
  _check_keys("random_bits", keys)
  if bit_width not in _UINT:
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  return ShapedArray(keys.shape + tuple(shape), _UINT[bit_width])


random_bits_p = _key_prim(
    "random_bits", lambda keys, bit_width, shape: bits_keys(_as_keys(keys), bit_width, shape),
    _bits_abstract)


def _split_abstract(keys, shape):
  _check_keys("random_split", keys)
  return ShapedArray(keys.shape + tuple(shape), keys.dtype)


random_split_p = _key_prim(
    "random_split", lambda keys, shape: split_keys(_as_keys(keys), tuple(shape)),
    _split_abstract)


def _fold_in_abstract(keys, msgs):
  _check_keys("random_fold_in", keys)
  if msgs.dtype != dtypes.uint32:
    raise TypeError(f"random_fold_in expects uint32 data, got {dtypes.dtype_name(msgs.dtype)}")
  return ShapedArray(np.broadcast_shapes(keys.shape, msgs.shape), keys.dtype)


random_fold_in_p = _key_prim(
    "random_fold_in", lambda keys, msgs: fold_in_keys(_as_keys(keys), msgs), _fold_in_abstract)


def _wrap_abstract(data, impl):
  if data.dtype != dtypes.uint32:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                    f"got dtype={dtypes.dtype_name(data.dtype)}")
  if data.shape[len(data.shape) - len(impl.key_shape):] != impl.key_shape:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                    f"with {impl.key_shape}; got shape={data.shape} for impl={impl!r}")
  return ShapedArray(data.shape[:-1], KeyTy(impl))


random_wrap_p = _key_prim("random_wrap",
                          lambda data, impl: keys_from_data(np.asarray(data), impl),
                          _wrap_abstract)


def _unwrap_abstract(keys):
  _check_keys("random_unwrap", keys)
  return ShapedArray(keys.shape + keys.dtype._impl.key_shape, dtypes.uint32)


random_unwrap_p = _key_prim("random_unwrap", lambda keys: data_from_keys(_as_keys(keys)),
                            _unwrap_abstract)


def _threefry_abstract(k0, k1, x0, x1):
  for a in (k0, k1, x0, x1):
    if a.dtype != dtypes.uint32:
      raise TypeError(f"threefry2x32 requires uint32 arguments, got "
                      f"{[dtypes.dtype_name(b.dtype) for b in (k0, k1, x0, x1)]}")
  shape = np.broadcast_shapes(k0.shape, k1.shape, x0.shape, x1.shape)
  return [ShapedArray(shape, dtypes.uint32)] * 2


threefry2x32_p = _key_prim("threefry2x32", lambda k0, k1, x0, x1: list(threefry2x32(k0, k1, x0,
                                                                                    x1)),
                           _threefry_abstract, multiple_results=True)


# StableHLO lowering: prng_lowering.py registers the rules of the primitives above (it stands on
# the XLA lowering, above this core module).


# --- binding helpers (what jax.random calls) ---------------------------------------------------

def random_seed(seeds, impl: PRNGImpl):
  if impl.seed is not None:
    return data_impl_ops["seed"](seeds, impl)
  return random_seed_p.bind(seeds, impl=impl)


def random_bits(keys, bit_width: int, shape: tuple):
  if _data_impl(keys) is not None:
    return data_impl_ops["bits"](keys, bit_width, tuple(shape))
  return random_bits_p.bind(keys, bit_width=bit_width, shape=tuple(shape))


def random_split(keys, shape: tuple):
  if _data_impl(keys) is not None:
    return data_impl_ops["split"](keys, tuple(shape))
  return random_split_p.bind(keys, shape=tuple(shape))


def random_fold_in(keys, msgs):
  if _data_impl(keys) is not None:
    return data_impl_ops["fold_in"](keys, msgs)
  return random_fold_in_p.bind(keys, msgs)


def random_wrap(data, impl: PRNGImpl):
  return random_wrap_p.bind(data, impl=impl)


def random_unwrap(keys):
  return random_unwrap_p.bind(keys)


def threefry_2x32(keypair, count):
  """JAX's `threefry_2x32(key, count)`: the non-partitionable hash of a uint32 count array."""
  asarray = _above["asarray"]
  # JAX's checks, before any cast: a pair of keys (its unpacking's ValueError) and uint32 values.
  if np.ndim(keypair) == 0 or len(keypair) != 2:
    raise ValueError(f"threefry_2x32: keypair must be a pair of uint32 values, got {keypair!r}")
  got = [dtypes.dtype_and_weak(x)[0] for x in (keypair[0], keypair[1], count)]
  if any(d != np.uint32 for d in got):
    raise TypeError(f"threefry_2x32 requires uint32 arguments, got {got}")
  key = np.asarray(keypair, np.uint32) if not isinstance(keypair, core.Tracer) else keypair
  if isinstance(key, core.Tracer) or isinstance(count, core.Tracer):
    raise NotImplementedError("threefry_2x32 on traced values: use jax.random.bits")
  return asarray(_hash_original(int(key[0]), int(key[1]), np.asarray(count, np.uint32)))


# --- typed key arrays --------------------------------------------------------------------------

class PRNGKeyArray(core.Array):
  """A concrete array of typed PRNG keys (`dtype=key<fry>`); its value is structured NumPy."""
  __slots__ = ("__weakref__", "_aval", "_dtype", "_value", "_device")
  __array_priority__ = 100

  def __init__(self, value: np.ndarray, dtype: KeyTy = key_dtype, device=None):
    self._value = value
    self._dtype = dtype
    self._aval = None
    if device is None and devices.context_meshes:  # made under `jax.set_mesh`: on its mesh
      device = devices.context_placement(value.ndim)
    self._device = device  # None: uncommitted; else the device `device_put` committed it to

  def _host_value(self) -> np.ndarray:
    """The keys' structured NumPy value (the same accessor as ArrayImpl's)."""
    return self._value

  @property
  def aval(self) -> ShapedArray:
    aval = self._aval
    if aval is None:
      aval = self._aval = ShapedArray(self._value.shape, self._dtype)
    return aval

  dtype = property(lambda self: self._dtype)
  shape = property(lambda self: self._value.shape)
  ndim = property(lambda self: self._value.ndim)
  size = property(lambda self: self._value.size)
  itemsize = property(lambda self: self._dtype.itemsize)
  nbytes = property(lambda self: self._value.size * self._dtype.itemsize)
  weak_type = False
  committed = property(lambda self: self._device is not None)
  is_fully_addressable = True
  def _wrap(self, value) -> PRNGKeyArray:
    return PRNGKeyArray(np.asarray(value), self._dtype, self._device)

  # -- devices -----------------------------------------------------------------------------------
  # Placement as ArrayImpl's (a device or a multi-device sharding over the key shape).
  sharding = property(lambda self: _array_impl().sharding.fget(self))

  def _xla_device(self):
    """None: key arrays keep their structured value on the host (an XLA executable takes and
    returns their ui32 data, copied at the call)."""
    return None

  device = property(lambda self: _array_impl().device.fget(self))
  is_fully_replicated = property(lambda self: _array_impl().is_fully_replicated.fget(self))

  def devices(self) -> set:
    return set(self.sharding.device_set)

  @property
  def addressable_shards(self):
    from jaxlite._src.base import devices
    sharding, seen, out = self.sharding, {}, []
    index_map = sharding.devices_indices_map(self.shape)
    for d in sharding._device_assignment:
      idx = index_map[d]
      key = tuple((s.start, s.stop) for s in idx)
      rid = seen[key] = seen.get(key, -1) + 1
      out.append(devices.Shard(d, idx, rid, PRNGKeyArray(self._value[idx], self._dtype, d)))
    return out

  def block_until_ready(self):
    return self

  def is_deleted(self) -> bool:
    return False

  # -- printing ----------------------------------------------------------------------------------
  def __repr__(self):
    return (f"Array({self.shape}, dtype={self._dtype.name}) overlaying:\n"
            f"{data_from_keys(self._value)}")

  __str__ = __repr__

  def __format__(self, spec):
    return format(repr(self), spec)

  # -- what a key array refuses ------------------------------------------------------------------
  def __array__(self, dtype=None, copy=None):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                    "jax.random.key_data(arr) if you wish to extract the underlying integer "
                    "array.")

  def __hash__(self):
    raise TypeError("unhashable type: 'PRNGKeyArray'")

  def __bool__(self):
    raise TypeError("The truth value of a PRNG key array is not defined.")

  def astype(self, *args, **kwargs):
    raise NotImplementedError("Cannot call abstract method astype")

  def item(self, *args):
    raise NotImplementedError("Cannot call abstract method item")

  @property
  def tolist(self):
    # JAX's key arrays have no tolist at all (hasattr is False); core.Array's is hidden so.
    raise AttributeError("'PRNGKeyArray' object has no attribute 'tolist'")

  # -- comparisons: equal keys have equal data -----------------------------------------------------
  def __eq__(self, other):
    if type(other) is not PRNGKeyArray:
      return _key_op_error("eq", self, other)
    return core.array_from_numpy(self._value == other._value, False)

  def __ne__(self, other):
    if type(other) is not PRNGKeyArray:
      return _key_op_error("ne", self, other)
    return core.array_from_numpy(self._value != other._value, False)

  # -- shape methods act on whole keys -----------------------------------------------------------
  def __len__(self):
    if not self.ndim:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.ndim:
      raise TypeError("iteration over a 0-d key array")
    return (self._wrap(v) for v in self._value)

  def __getitem__(self, idx):
    np_idx = _numpy_index(idx)
    if np_idx is None:  # traced indices: index through jnp like any array
      return _above["getitem"](self, idx)
    return self._wrap(self._value[np_idx])

  def reshape(self, *shape, order="C"):
    shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return self._wrap(self._value.reshape(shape, order=order))

  def ravel(self, order="C"):
    return self._wrap(self._value.ravel(order))

  flatten = ravel

  def squeeze(self, axis=None):
    return self._wrap(self._value.squeeze(axis))

  def transpose(self, *axes):
    axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
    return self._wrap(self._value.transpose(axes))

  def swapaxes(self, a, b):
    return self._wrap(self._value.swapaxes(a, b))

  T = property(lambda self: self._wrap(self._value.T))

  def copy(self):
    return self._wrap(self._value.copy())

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self.copy()

  def __reduce__(self):
    return (PRNGKeyArray, (self._value, self._dtype))


def _numpy_index(idx):
  """idx when it is basic indexing (ints, slices, None, Ellipsis) that NumPy can apply to the
  keys' values as is; None for anything else (arrays, lists, tracers), which takes jnp's
  indexing path so that key arrays index exactly as other arrays do (out-of-bounds array
  indices clamp, lists are refused)."""
  parts = idx if type(idx) is tuple else (idx,)
  for p in parts:
    if not (p is None or p is Ellipsis or type(p) in (int, slice)
            or isinstance(p, np.integer)):
      return None
  return idx


def _key_op_error(name, *args):
  names = ", ".join(dtypes.dtype_name(getattr(a, "dtype", None) or
                                      dtypes.python_scalar_dtype(a)) for a in args)
  raise TypeError(f"{name} does not accept dtypes {names}.")


def _unary_error(name):
  def op(self):
    raise TypeError(f"{name} does not accept dtype {self._dtype.name}.")
  return op


def _binary_error(name, reflected=False):
  def op(self, other):
    return _key_op_error(name, *((other, self) if reflected else (self, other)))
  return op


for _name, _prim in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                     ("floordiv", "floor_divide"), ("mod", "rem"), ("pow", "pow"),
                     ("and", "and"), ("or", "or"), ("xor", "xor"), ("lshift", "shift_left"),
                     ("rshift", "shift_right_arithmetic"), ("matmul", "dot_general"),
                     ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge")):
  setattr(PRNGKeyArray, f"__{_name}__", _binary_error(_prim))
  if _name not in ("lt", "le", "gt", "ge"):
    setattr(PRNGKeyArray, f"__r{_name}__", _binary_error(_prim, reflected=True))
for _name, _prim in (("neg", "neg"), ("pos", "pos"), ("abs", "abs"), ("invert", "not")):
  setattr(PRNGKeyArray, f"__{_name}__", _unary_error(_prim))


def make_key_array(value: np.ndarray, aval: ShapedArray) -> PRNGKeyArray:
  """The concrete array for a NumPy value of an extended-dtype aval (used by core.make_array):
  structured keys, or key data [..., 2] (what an XLA executable returns, copied to the host)."""
  impl, value = aval.dtype._impl, np.asarray(value)
  if value.dtype.names is None and value.dtype.kind in "ui":  # key data
    return PRNGKeyArray(keys_from_data(value.astype(np.uint32, copy=False), impl), aval.dtype)
  return PRNGKeyArray(np.asarray(value, impl.storage), aval.dtype)


KeyTy._make_array = staticmethod(make_key_array)
core.register(key_array_type=PRNGKeyArray)

# jnp's asarray and traced indexing, registered by numpy.creation/numpy.array_methods at their
# import: keys live at the bottom (dtypes name them), below the numpy layer (issue 29).
_above = {}


def register_above(**fns):
  _above.update(fns)


# --- batching rules: keys are elements, so a batch axis of keys is one more key axis ------------

def register_batching_rules(bt):
  """Installs the key primitives' batching rules; called by interpreters.batching (above)."""

  def leading(prim):  # ops whose keys/data axes lead: batch axis first, output batched at 0
    def rule(vals, dims, **params):
      size = bt.mapped_size(vals, dims)
      return prim.bind(*bt.all_at_front(vals, dims, size), **params), 0
    bt.primitive_batchers[prim] = rule

  for prim in (random_bits_p, random_split_p, random_wrap_p):
    leading(prim)
  for prim in (random_seed_p, random_unwrap_p):
    bt.defvectorized(prim)
  bt.defbroadcasting(threefry2x32_p)

  def fold_in_rule(vals, dims):
    keys, msgs = bt.all_at_front(vals, dims, bt.mapped_size(vals, dims))
    extra = len(keys.shape) - len(msgs.shape)
    if extra > 0:  # per-example msgs broadcast against per-example keys from the right
      msgs = bt._prims().broadcast_in_dim_p.bind(
          msgs, shape=msgs.shape[:1] + (1,) * extra + msgs.shape[1:],
          broadcast_dimensions=(0,) + tuple(range(1 + extra, len(keys.shape))), sharding=None)
    return random_fold_in_p.bind(keys, msgs), 0
  bt.primitive_batchers[random_fold_in_p] = fold_in_rule




def _array_impl():
  from jaxlite._src.base.array import ArrayImpl
  return ArrayImpl


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(random_bits_p, pk.RANDOM, role="random_bits", source=True,
            propagation_rule="per_key")
pk.register(random_split_p, pk.RANDOM, propagation_rule="per_key")
pk.register(random_unwrap_p, pk.RANDOM, propagation_rule="unwrap")
pk.register(random_wrap_p, pk.RANDOM, propagation_rule="wrap")
pk.register(threefry2x32_p, pk.RANDOM, propagation_rule="threefry")
pk.register(random_fold_in_p, pk.ELEMENTWISE)
