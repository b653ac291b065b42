"""`jax.extend.random`: PRNG implementation objects and the low-level key primitives.

jaxlite implements the threefry2x32 PRNG only; `define_prng_impl` and the RBG implementations
are not provided (none of optax, flax, equinox or chex uses them).
"""
from jaxlite._src.rng import prng as _prng
from jaxlite._src.rng.prng import threefry2x32_p, threefry_2x32  # noqa: F401

threefry_prng_impl = _prng.threefry_impl


def random_seed(seeds, impl=threefry_prng_impl):
  """Typed keys seeded from integer `seeds` with the implementation `impl`."""
  from jaxlite._src.numpy.creation import asarray
  return _prng.random_seed(asarray(seeds), impl=_prng.resolve_impl(impl))


def seed_with_impl(impl, seed):
  return random_seed(seed, impl=impl)
