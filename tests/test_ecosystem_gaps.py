"""Small API gaps found by running optax/chex/flax/equinox's own suites on jaxlite (ECOSYSTEM.md):
each case against real JAX (oracle) or a known answer."""
import numpy as np
import pytest

import jaxlite
from jaxlite import lax

from conftest import oracle

# (per-member shape, named-axis size, swapped axis)
PSWAPAXES_CASES = [((4, 3), 4, 0), ((2, 3), 3, 1), ((5, 2), 2, 1), ((2, 2, 2), 2, 2)]


@pytest.mark.parametrize("shape,n,axis", PSWAPAXES_CASES)
def test_pswapaxes_matches_jax(shape, n, axis):
  jax = oracle()
  x = np.arange(n * int(np.prod(shape)), dtype=np.float32).reshape((n,) + shape)
  got = jaxlite.vmap(lambda v: lax.pswapaxes(v, "i", axis), axis_name="i")(x)
  want = jax.vmap(lambda v: jax.lax.pswapaxes(v, "i", axis), axis_name="i")(x)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_pswapaxes_known_answer():
  # Member i holds row i of x; swapping the named axis with axis 0 transposes x.
  x = np.arange(9, dtype=np.float32).reshape(3, 3)
  got = jaxlite.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)
  np.testing.assert_array_equal(np.asarray(got), x.T)


def test_pswapaxes_size_mismatch_raises():
  x = np.zeros((3, 2), np.float32)
  with pytest.raises(ValueError, match="all_to_all"):
    jaxlite.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)
