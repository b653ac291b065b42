"""Key operations over batched keys (split, fold_in, bits, samplers) hash all keys at once:
bit-identical to JAX under vmap and eagerly, in both threefry modes, and not a loop over keys."""
import numpy as np
import pytest

import jaxlite as jax
from jaxlite._src.rng import prng, prng_threefry
from conftest import configured, oracle

MODES = (True, False)  # jax_threefry_partitionable


def _both(fn, partitionable):
  """fn(module) run on jaxlite and on JAX in the same threefry mode, as NumPy."""
  real = oracle()
  outs = []
  for mod in (jax, real):
    with configured(mod.config, jax_threefry_partitionable=partitionable):
      out = fn(mod)
      outs.append(jax.tree.map(
          lambda x: np.asarray(mod.random.key_data(x)
                               if mod.dtypes.issubdtype(x.dtype, mod.dtypes.prng_key) else x),
          out))
  return outs


def _check(fn, partitionable):
  lite, real = _both(fn, partitionable)
  for a, b in zip(jax.tree.leaves(lite), jax.tree.leaves(oracle().tree.leaves(real))):
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "f":  # the bits are equal; erf_inv and log may differ by an ulp
      np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    else:
      np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("partitionable", MODES)
@pytest.mark.parametrize("jit", [False, True])
def test_vmapped_samplers_match_jax(partitionable, jit):
  def fn(m):
    keys = m.random.split(m.random.key(3), 257)
    wrap = m.jit if jit else (lambda f: f)
    return (
        wrap(m.vmap(lambda k: m.random.normal(k, (4,))))(keys),
        wrap(m.vmap(lambda k: m.random.uniform(k, (3, 2))))(keys),
        wrap(m.vmap(lambda k: m.random.split(k, 3)))(keys),
        wrap(m.vmap(lambda k: m.random.bits(k, (5,), dtype=np.uint8)))(keys),
        wrap(m.vmap(lambda k: m.random.bits(k, (3,), dtype=np.uint16)))(keys),
        wrap(m.vmap(lambda k: m.random.randint(k, (2,), 0, 1000)))(keys),
        wrap(m.vmap(lambda k: m.random.gamma(k, 2.5, (3,))))(keys),
        wrap(m.vmap(lambda k: m.random.categorical(k, m.numpy.zeros(5))))(keys),
        wrap(m.vmap(lambda i: m.random.normal(m.random.fold_in(m.random.key(1), i), (2,))))(
            m.numpy.arange(300)),
    )
  _check(fn, partitionable)


@pytest.mark.parametrize("partitionable", MODES)
def test_eager_batched_keys_match_jax(partitionable):
  def fn(m):
    keys = m.random.split(m.random.key(11), (7, 3))
    return (m.vmap(m.vmap(lambda k: m.random.split(k, 4)))(keys),
            m.vmap(m.vmap(lambda k: m.random.fold_in(k, 5)))(keys),
            m.vmap(m.vmap(lambda k: m.random.bits(k, (2, 3))), in_axes=1)(keys),
            m.random.key_data(keys), m.random.split(m.random.key(0), 1000))
  _check(fn, partitionable)


@pytest.mark.parametrize("partitionable", MODES)
@pytest.mark.parametrize("bit_width", [8, 16, 32, 64])
def test_batched_bits_equal_key_by_key(partitionable, bit_width):
  """The one-array hash gives each key exactly its own draw (odd sizes, both modes, 64-bit)."""
  with configured(jax_threefry_partitionable=partitionable):
    keys = prng.split_keys(prng.seed_keys(np.array(5)), (4, 3))
    for shape in [(), (1,), (3,), (5, 3), (7,)]:
      batched = prng.bits_keys(keys, bit_width, shape)
      for idx in np.ndindex(keys.shape):
        one = prng.bits_keys(keys[idx], bit_width, shape)
        np.testing.assert_array_equal(batched[idx], one)
      split = prng.split_keys(keys, shape)
      for idx in np.ndindex(keys.shape):
        np.testing.assert_array_equal(split[idx], prng.split_keys(keys[idx], shape))


def test_batched_keys_are_one_hash(monkeypatch):
  """100k keys are not looped over in Python: the per-key path is not taken."""
  calls = []
  monkeypatch.setattr(prng_threefry, "_hash_python", lambda *a: calls.append(a) or (0, 0))
  keys = jax.random.split(jax.random.key(0), 100_000)
  out = jax.vmap(lambda k: jax.random.normal(k, (4,)))(keys)
  assert out.shape == (100_000, 4) and not calls
  out = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(jax.random.key(0), i), (4,)))(
      jax.numpy.arange(100_000))
  assert out.shape == (100_000, 4) and not calls


def test_native_keys_hash_matches_numpy():
  """The native tier's compiled hash for batched keys gives NumPy's words (shared counters,
  per-key counters, xor)."""
  pytest.importorskip("numba")
  from jaxlite._src.compiler.native import backend
  rng = np.random.default_rng(0)
  k0, k1 = (rng.integers(0, 2**32, 50, dtype=np.uint32) for _ in range(2))
  shared = np.arange(7, dtype=np.uint32), rng.integers(0, 2**32, 7, dtype=np.uint32)
  per_key = rng.integers(0, 2**32, (50, 1), dtype=np.uint32), np.zeros(1, np.uint32)
  for x0, x1 in (shared, per_key, per_key[::-1]):
    want = prng.keys_hash_numpy(k0, k1, x0, x1)
    is_per_key = np.ndim(x0) == 2 or np.ndim(x1) == 2
    got = backend._build_keys_hash(is_per_key, False)(k0, k1, x0, x1)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    got = backend._build_keys_hash(is_per_key, True)(k0, k1, x0, x1)
    np.testing.assert_array_equal(got, want[0] ^ want[1])


def test_big_batches_match_jax_through_the_native_hash():
  """100k keys (past the native tier's threshold, when it is on) still give JAX's bits."""
  def fn(m):
    keys = m.random.split(m.random.key(2), 100_000)
    f = m.vmap(lambda k: m.random.bits(m.random.fold_in(k, 3), (2,)))
    return [f(keys) for _ in range(6)][-1], m.vmap(lambda k: m.random.split(k))(keys)
  _check(fn, True)
