"""`jax.extend.random`: PRNG implementation objects and the low-level key primitives.

threefry2x32 is computed by jaxlite's key primitives; rbg, unsafe_rbg and the implementations
`define_prng_impl` makes run their functions on the keys' uint32 data (`_src/rng/prng_impls.py`).
"""
from jaxlite._src.rng import prng as _prng
from jaxlite._src.rng.prng import threefry2x32_p, threefry_2x32  # noqa: F401
from jaxlite._src.rng.prng_impls import (  # noqa: F401
    define_prng_impl, rbg_prng_impl, unsafe_rbg_prng_impl)

threefry_prng_impl = _prng.threefry_impl


def random_seed(seeds, impl=threefry_prng_impl):
  """Typed keys seeded from integer `seeds` with the implementation `impl`."""
  from jaxlite._src.numpy.creation import asarray
  return _prng.random_seed(asarray(seeds), impl=_prng.resolve_impl(impl))


def seed_with_impl(impl, seed):
  return random_seed(seed, impl=impl)
