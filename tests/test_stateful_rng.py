"""`jax.experimental.random.stateful_rng`: draws (eager, jit of a bound method, jit with the
generator as argument), spawn/split, bit-identical to JAX 0.10.2."""
import importlib

import numpy as np
import pytest

import jaxlite
from conftest import oracle


def _draws(jax):
  R = importlib.import_module(jax.__name__ + ".experimental.random")
  rng = R.stateful_rng(42)
  out = [rng.uniform(), rng.uniform()]
  ju = jax.jit(rng.uniform)
  out += [ju(), ju(), jax.random.key_data(rng.key()), rng.normal(size=3),
          rng.integers(0, 10, 4), rng.random(2), rng.normal(1.0, 2.0, (2,))]
  out += [r.integers(0, 10, 2) for r in R.stateful_rng(123).spawn(2)]
  out += [jax.random.key_data(R.stateful_rng(5).split(3)._base_key)]
  out += [jax.jit(lambda r: r.uniform(size=2))(rng), jax.ref.freeze(rng._counter)]
  return out


def test_draws_match_jax():
  got = _draws(jaxlite)
  # Known answers (JAX 0.10.2's docstring values for seed 42).
  np.testing.assert_allclose(got[:4], [0.5302608, 0.72766423, 0.6672406, 0.3890121], rtol=1e-6)
  np.testing.assert_array_equal(got[4], [2954079971, 3276725750])
  np.testing.assert_array_equal(got[9], [4, 5])
  assert int(got[-1]) == 10  # ten draws advanced the counter
  jax = oracle()
  for g, w in zip(got, _draws(jax)):
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(g, w)


def test_errors():
  from jaxlite.experimental.random import StatefulPRNG, stateful_rng
  with pytest.raises(ValueError, match="Expected base_key to be a typed PRNG key"):
    StatefulPRNG(jaxlite.numpy.zeros(2), jaxlite.new_ref(0))
  with pytest.raises(ValueError, match="Expected counter to be a scalar integer ref"):
    StatefulPRNG(jaxlite.random.key(0), 0)
  with pytest.raises(ValueError, match="cannot operate on split stateful generator"):
    stateful_rng(0).split(2).key()
  with pytest.raises(TypeError, match="requires an explicit seed"):
    jaxlite.jit(lambda: stateful_rng().uniform())()
  assert stateful_rng().uniform().shape == ()  # seeded from NumPy's entropy at top level
