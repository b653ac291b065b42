"""jnp.searchsorted as blackjax's SMC resampling uses it (issue 34), against real JAX.

blackjax's multinomial resampling looks up `num_samples` sorted uniforms in the cumulative
weights (`jnp.searchsorted(cumsum, linspace)`), vmapped over keys. JAX's default method
("scan") halves an interval per query, O(queries) memory; jaxlite compared every query with
every weight, so `smc/test_resampling.py`'s 100 keys x 2,000 draws over 10,000 weights held
2e9 comparisons and was killed for memory (10 GB). Every method gives the same indices.
"""
import tracemalloc

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle

METHODS = ("scan", "scan_unrolled", "compare_all", "sort")


def _cases():
  rng = np.random.default_rng(0)
  sorted_f = np.sort(rng.normal(size=50)).astype(np.float32)
  sorted_f[-3:] = np.nan  # NaNs sort last, as jnp.sort puts them
  queries = np.concatenate([rng.normal(size=40), [np.nan, -np.inf, np.inf],
                            sorted_f[:5]]).astype(np.float32)
  ties = np.array([1, 2, 2, 2, 5, 7, 7], np.int32)
  return [(sorted_f, queries), (ties, np.arange(-1, 9, dtype=np.int32)),
          (ties, np.int32(2)), (np.zeros(0, np.float32), np.array([0.5], np.float32)),
          (np.array([3.0], np.float32), np.array([[2.0, 3.0], [4.0, np.nan]], np.float32))]


def _results(m):
  out = []
  for a, v in _cases():
    for side in ("left", "right"):
      for method in METHODS:
        r = m.numpy.searchsorted(a, v, side=side, method=method)
        out.append((str(r.dtype), np.shape(r), np.asarray(r).tolist()))
      out.append(np.asarray(m.jit(lambda a, v, s=side: m.numpy.searchsorted(a, v, side=s))(
          a, v)).tolist())
  return out


def test_searchsorted_every_method_matches_numpy():
  for a, v in _cases():
    for side in ("left", "right"):
      want = np.searchsorted(a, v, side=side)
      for method in METHODS:
        got = jnp.searchsorted(a, v, side=side, method=method)
        assert got.dtype == np.int32 and got.shape == np.shape(want)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{side} {method}")


def test_searchsorted_matches_jax():
  assert _results(jax) == _results(oracle())


def test_searchsorted_unknown_method_raises_as_jax():
  msg = r"invalid argument method='bogus', expected one of \['compare_all', 'scan', " \
      r"'scan_unrolled', 'sort'\]"
  with pytest.raises(ValueError, match=msg):
    jnp.searchsorted(jnp.arange(3.0), 1.0, method="bogus")
  real = oracle()
  with pytest.raises(ValueError, match=msg):
    real.numpy.searchsorted(real.numpy.arange(3.0), 1.0, method="bogus")


def test_vmapped_resampling_lookup_needs_memory_of_the_queries_only():
  """blackjax's multinomial resampling: 100 keys x 2,000 sorted uniforms over 10,000 weights
  (the compare-all form holds 2e9 booleans, 2 GB; the default method a few arrays of 2e5)."""
  rng = np.random.default_rng(42)
  w = rng.random(10_000).astype(np.float32)
  cumsum = jnp.cumsum(w / w.sum())
  keys = jax.random.split(jax.random.key(42), 100)
  lookup = lambda k: jnp.searchsorted(cumsum, jnp.sort(jax.random.uniform(k, (2_000,))))
  tracemalloc.start()
  try:
    idx = jax.vmap(lookup)(keys)
    jitted = jax.jit(jax.vmap(lookup))(keys)
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert peak < 200e6, peak
  u = np.sort(np.asarray(jax.vmap(lambda k: jax.random.uniform(k, (2_000,)))(keys)), axis=1)
  want = np.stack([np.searchsorted(np.asarray(cumsum), row) for row in u])
  np.testing.assert_array_equal(np.asarray(idx), want)
  np.testing.assert_array_equal(np.asarray(jitted), want)
