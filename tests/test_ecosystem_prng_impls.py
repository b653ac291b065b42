"""PRNG implementations besides threefry2x32, as dm-haiku's random_test uses them (issue 34):
`lax.rng_bit_generator` (XLA's RngBitGenerator), the 'rbg' and 'unsafe_rbg' implementations and
`jax.extend.random.define_prng_impl`. Each is compared with real JAX on CPU where it is
installed, and with values recorded from it (JAX 0.10.2, CPU) where it is not.
"""
import importlib.util

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle

HAVE_JAX = importlib.util.find_spec("jax") is not None
_KEY = [1, 2, 0xFFFFFFF0, 0xFFFFFFFF]


def _bits(m, key, shape, dtype, algorithm):
  new_key, bits = m.lax.rng_bit_generator(m.numpy.array(key, "uint32"), shape, dtype=dtype,
                                          algorithm=m.lax.RandomAlgorithm(algorithm))
  return np.asarray(new_key), np.asarray(bits)


# Recorded from JAX 0.10.2 on CPU: rng_bit_generator(_KEY, (2, 3)) per algorithm.
_RECORDED_BITS = {
    0: ([1, 2, 4294967282, 4294967295], [[1774116075, 1341564284, 152429741],
                                         [274068814, 861569698, 3335497566]]),
    1: ([1, 2, 4294967283, 4294967295], [[2206961512, 1466156585, 3838642564],
                                         [1847429916, 4105239859, 508550276]]),
}


@pytest.mark.parametrize("algorithm", [0, 1])
def test_rng_bit_generator_recorded(algorithm):
  """RNG_DEFAULT is Philox on XLA's CPU (1: ThreeFry); the key's second u64 word counts."""
  new_key, bits = _bits(jax, _KEY, (2, 3), "uint32", algorithm)
  want_key, want_bits = _RECORDED_BITS[algorithm]
  np.testing.assert_array_equal(new_key, want_key)
  np.testing.assert_array_equal(bits, want_bits)
  assert bits.dtype == np.uint32


@pytest.mark.skipif(not HAVE_JAX, reason="needs real JAX as the oracle")
@pytest.mark.parametrize("algorithm", [0, 1, 2])
def test_rng_bit_generator_matches_jax(algorithm):
  """Every shape class XLA's expansion treats apart (scalar, odd and even dims, unit dims, a
  counter that carries past 2**64) and every bit width, keys and bits bit-exact."""
  real = oracle()
  keys = [_KEY, [5, 0, 7, 9], [3, 4, 0xFFFFFFFE, 0xFFFFFFFF]]
  shapes = [(), (3,), (5,), (2, 3), (7, 1), (3, 5), (1, 3, 1, 5), (9,)]
  for key in keys:
    for shape in shapes:
      for dtype in ("uint8", "uint16", "uint32"):
        got, want = _bits(jax, key, shape, dtype, algorithm), _bits(real, key, shape, dtype,
                                                                     algorithm)
        for g, w in zip(got, want):
          assert g.dtype == w.dtype and g.shape == w.shape, (key, shape, dtype)
          np.testing.assert_array_equal(g, w, err_msg=f"{key} {shape} {dtype}")


@pytest.mark.skipif(not HAVE_JAX, reason="needs real JAX as the oracle")
def test_rng_bit_generator_64_bits_matches_jax():
  from conftest import configured
  real = oracle()
  with configured(jax_enable_x64=True), configured(real.config, jax_enable_x64=True):
    for algorithm in (0, 1):
      for shape in ((), (3,), (2, 3)):
        got, want = (_bits(m, _KEY, shape, "uint64", algorithm) for m in (jax, real))
        for g, w in zip(got, want):
          assert g.dtype == w.dtype
          np.testing.assert_array_equal(g, w)


def _rng_bit_generator_traced(m):
  keys = m.numpy.array([[1, 2, 3, 4], [2, 3, 4, 5]], "uint32")
  f = lambda k: m.lax.rng_bit_generator(k, (3,))  # noqa: E731
  return ([np.asarray(x) for x in m.vmap(f)(keys)] + [np.asarray(x) for x in m.jit(f)(keys[0])],
          str(m.make_jaxpr(f)(keys[0])))


def test_rng_bit_generator_under_vmap_and_jit():
  """vmap: JAX's rule draws the whole batch from the first key and advances only it."""
  got, jaxpr = _rng_bit_generator_traced(jax)
  np.testing.assert_array_equal(got[0], [[1, 2, 5, 4], [2, 3, 4, 5]])
  np.testing.assert_array_equal(got[1], [[512747620, 1298009047, 1267190206],
                                         [761827841, 1383286907, 1639995030]])
  np.testing.assert_array_equal(got[3], got[1][0])
  assert "rng_bit_generator[" in jaxpr and "algorithm=RNG_DEFAULT" in jaxpr
  if HAVE_JAX:
    want, want_jaxpr = _rng_bit_generator_traced(oracle())
    for g, w in zip(got, want):
      np.testing.assert_array_equal(g, w)
    assert jaxpr == want_jaxpr


def test_rng_bit_generator_rejects_what_jax_rejects():
  with pytest.raises(TypeError, match="unsupported dtype"):
    jax.lax.rng_bit_generator(jnp.zeros(4, "uint32"), (2,), dtype="int32")
  with pytest.raises(TypeError, match="uint32\\[4\\] or uint64\\[2\\]"):
    jax.lax.rng_bit_generator(jnp.zeros(3, "uint32"), (2,))


def _key_ops(m, impl):
  """Each key operation of `impl` as JAX users reach it, eagerly, vmapped and jitted."""
  r = m.random
  k = r.key(42, impl=impl)
  ks = r.split(k, 3)
  outs = {
      "key": r.key_data(k), "split": r.key_data(r.split(k)),
      "split_shape": r.key_data(r.split(k, (2, 3))), "fold_in": r.key_data(r.fold_in(k, 7)),
      "bits": r.bits(k, (5,)), "bits8": r.bits(k, (3,), dtype="uint8"),
      "uniform": r.uniform(k, (4,)), "normal": r.normal(ks[1], (3,)),
      "vmap_bits": m.vmap(lambda kk: r.bits(kk, (2,)))(ks),
      "vmap_fold_in": r.key_data(m.vmap(r.fold_in)(ks, m.numpy.arange(3, dtype="uint32"))),
      "jit_split": r.key_data(m.jit(lambda kk: r.split(kk, 4))(k)),
      "jit_normal": m.jit(lambda kk: r.normal(kk, (3,)))(k),
      "PRNGKey": r.PRNGKey(3, impl=impl),
  }
  return {name: np.asarray(v) for name, v in outs.items()}, str(k.dtype), r.key_impl(k)


# Recorded from JAX 0.10.2 on CPU: key(42, impl=...) split, fold_in(7) and bits((3,)) (the
# first three of bits((5,)): Philox draws blocks of four in order).
_RECORDED_KEYS = {
    "rbg": ([[1832780943, 270669613, 1832780943, 270669613],
             [64467757, 2916123636, 64467757, 2916123636]],
            [2547012911, 1371500959, 2547012911, 1371500959], [2620864722, 2991908441, 282133475]),
    "unsafe_rbg": ([[2620864722, 2991908441, 282133475, 2589630650],
                    [4105776319, 298289174, 864345282, 274752888]],
                   [2104303640, 250182049, 1106406590, 1983638428],
                   [2620864722, 2991908441, 282133475]),
}


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_rbg_keys_recorded(impl):
  got, dtype, name = _key_ops(jax, impl)
  split, fold_in, bits = _RECORDED_KEYS[impl]
  np.testing.assert_array_equal(got["split"], split)
  np.testing.assert_array_equal(got["fold_in"], fold_in)
  np.testing.assert_array_equal(got["bits"][:3], bits)  # philox: a prefix of the 5
  assert got["key"].shape == (4,) and got["PRNGKey"].shape == (4,)
  assert dtype == {"rbg": "key<rbg>", "unsafe_rbg": "key<urbg>"}[impl] and name == impl


@pytest.mark.skipif(not HAVE_JAX, reason="needs real JAX as the oracle")
@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
@pytest.mark.parametrize("partitionable", [True, False])
def test_rbg_keys_match_jax(impl, partitionable):
  """rbg's split and fold_in are threefry's on each half-key (both partitionable modes);
  its bits, uniform and normal draws are XLA's RngBitGenerator's."""
  from conftest import configured
  real = oracle()
  with configured(jax_threefry_partitionable=partitionable), configured(
      real.config, jax_threefry_partitionable=partitionable):
    got, want = _key_ops(jax, impl), _key_ops(real, impl)
  assert got[1:] == want[1:]
  for name in want[0]:
    assert got[0][name].dtype == want[0][name].dtype, name
    if got[0][name].dtype.kind == "f":  # normal's erf_inv may round 1 ulp apart from XLA's
      np.testing.assert_allclose(got[0][name], want[0][name], rtol=4e-7, err_msg=name)
    else:
      np.testing.assert_array_equal(got[0][name], want[0][name], err_msg=name)


def test_default_prng_impl_rbg_keys_are_four_words():
  """haiku's test_rbg_default_impl: under jax_default_prng_impl='rbg' a raw key is u32[4] and
  splitting it gives u32[4] keys."""
  with jax.default_prng_impl("rbg"):
    key = jax.random.PRNGKey(42)
    assert key.shape == (4,) and key.dtype == np.uint32
    assert jax.random.split(key).shape == (2, 4)
    assert jax.eval_shape(lambda s: jax.random.key_data(jax.random.key(s)), 0).shape == (4,)
  assert jax.random.PRNGKey(42).shape == (2,)


def _custom_impl(m):
  """haiku's CustomRNGTest: an implementation with 13-word keys that counts its splits."""
  calls = []

  def split(_, num):
    calls.append(num)
    num = tuple(num) if isinstance(num, (tuple, list)) else (num,)
    return m.numpy.zeros((*num, 13), np.uint32)

  spec = importlib.import_module(m.__name__ + ".extend.random").define_prng_impl(
      key_shape=(13,), seed=lambda _: m.numpy.zeros((13,), np.uint32), split=split,
      random_bits=lambda key, bit_width, shape: m.numpy.zeros(shape, np.uint32),
      fold_in=lambda key, _: key, name="thirteen", tag="t13")
  key = m.random.key(42, impl=spec)
  halves = m.random.split(key)
  batched = m.random.split(m.random.split(key, 3)[0], (2,))
  out = (key.shape, str(key.dtype), m.random.key_data(key).shape, halves.shape,
         m.random.key_data(halves).shape, batched.shape, calls[:], repr(m.random.key_impl(key)),
         np.asarray(m.random.bits(key, (2,))).tolist(),
         m.random.key_data(m.random.fold_in(key, 3)).shape)
  return out, spec


def test_define_prng_impl_keys_of_any_shape():
  got, spec = _custom_impl(jax)
  assert got[:6] == ((), "key<t13>", (13,), (2,), (2, 13), (2,))
  assert got[6] == [(2,), (3,), (2,)]  # one call per split, as JAX's
  assert got[7] == "PRNGSpec('thirteen')" and got[8] == [0, 0]
  assert jax.random.key(0, impl=spec).dtype == jax.random.key(1, impl=spec).dtype
  if HAVE_JAX:
    assert got == _custom_impl(oracle())[0]


def test_unknown_prng_impl_names_the_known_ones():
  with pytest.raises(ValueError, match='unrecognized PRNG implementation "nope". Did you mean '
                                       'one of: "threefry2x32"'):
    jax.random.key(0, impl="nope")


def test_samplers_on_rbg_keys():
  """The samplers built on bits/split run any implementation's keys (here rbg, against JAX);
  poisson refuses non-threefry keys as JAX's does (the gamma-based samplers on rbg keys:
  tests/test_random_gamma_impls.py)."""
  def draws(m):
    k = m.random.key(0, impl="rbg")
    return [np.asarray(x) for x in (m.random.permutation(k, 5), m.random.choice(k, 5, (3,)),
                                    m.random.randint(k, (3,), 0, 10))]
  got = draws(jax)
  np.testing.assert_array_equal(got[0], [1, 0, 4, 3, 2])  # recorded from JAX 0.10.2 (CPU)
  np.testing.assert_array_equal(got[2], [8, 9, 9])
  if HAVE_JAX:
    for g, w in zip(got, draws(oracle())):
      np.testing.assert_array_equal(g, w)
  key = jax.random.key(0, impl="rbg")
  with pytest.raises(NotImplementedError, match="`poisson` is only implemented for the "
                                                "threefry2x32 RNG, not rbg"):
    jax.random.poisson(key, 3.0, (3,))
