"""JAX 0.10.2's remaining top-level flags (`allow_f16_reductions`, `array_garbage_collection_guard`,
`jax2tf_associative_scan_reductions`, `thread_guard`) and `jax.fwd_and_bwd`, against JAX."""
import numpy as np
import pytest

import jaxlite
from conftest import oracle

FLAGS = [("allow_f16_reductions", "jax_allow_f16_reductions", True, False),
         ("array_garbage_collection_guard", "jax_array_garbage_collection_guard", None, "log"),
         ("jax2tf_associative_scan_reductions", "jax2tf_associative_scan_reductions", False, True),
         ("thread_guard", "jax_thread_guard", False, True)]


@pytest.mark.parametrize("name,option,default,other", FLAGS, ids=[f[0] for f in FLAGS])
def test_flag_states(name, option, default, other):
  state = getattr(jaxlite, name)
  assert state.value == default and getattr(jaxlite.config, option) == default
  with state(other):
    assert state.value == other and jaxlite.config.read(option) == other
  assert state.value == default
  jax = oracle()
  jstate = getattr(jax, name)
  assert jstate.value == default and getattr(jax.config, option) == default


def test_bad_gc_guard_level():
  with pytest.raises(ValueError, match="jax_array_garbage_collection_guard"):
    jaxlite.array_garbage_collection_guard("loud")


def _f16_cases(jax):
  jnp = jax.numpy
  outs = []
  with jax.allow_f16_reductions(False):
    for f in [lambda: jax.lax.reduce_sum(jnp.ones(3, jnp.float16), (0,)),
              lambda: jnp.sum(jnp.ones(3, jnp.float16)),  # jnp upcasts: allowed
              lambda: jax.lax.reduce_sum(jnp.ones((1, 3), jnp.float16), (0,)),  # size-1 axis
              lambda: jax.jit(lambda x: jax.lax.reduce_sum(x, (0,)))(jnp.ones(3, jnp.float16))]:
      try:
        outs.append(np.asarray(f()))
      except ValueError as e:
        outs.append(str(e))
  outs.append(np.asarray(jax.lax.reduce_sum(jnp.ones(3, jnp.float16), (0,))))
  return outs


def test_allow_f16_reductions_matches_jax():
  got = _f16_cases(jaxlite)
  msg = "reduce_sum on operand f16[3] is not allowed when jax_allow_f16_reductions=False."
  assert got[0] == msg and got[3] == msg
  np.testing.assert_array_equal(got[1], np.float16(3))
  np.testing.assert_array_equal(got[2], np.ones(3, np.float16))
  np.testing.assert_array_equal(got[4], np.float16(3))
  jax = oracle()
  for g, w in zip(got, _f16_cases(jax)):
    if isinstance(w, str):
      assert g == w
    else:
      assert g.dtype == w.dtype
      np.testing.assert_array_equal(g, w)


def _fwd_bwd(jax):
  jnp = jax.numpy
  x = jnp.arange(16.0).reshape(4, 4)
  w = jnp.arange(16.0).reshape(4, 4) / 10
  fwd, bwd = jax.fwd_and_bwd(lambda x, w: jnp.tanh(x @ w), argnums=(0, 1))
  y, res = fwd(x, w)
  gx, gw = bwd(res, jnp.ones((4, 4)))
  fwd1, bwd1 = jax.fwd_and_bwd(lambda x, w: (jnp.sin(x) * w, {"aux": 3}), argnums=1,
                               has_aux=True, jitted=False)
  y1, res1, aux = fwd1(x, w)
  return [y, gx, gw, y1, bwd1(res1, jnp.ones((4, 4))), aux["aux"]]


def test_fwd_and_bwd_matches_jax():
  got = _fwd_bwd(jaxlite)
  # Known answer: the backward pass equals jax.grad of the summed output.
  x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
  w = x / 10
  gw = jaxlite.grad(lambda w: jaxlite.numpy.tanh(x @ w).sum())(w)
  np.testing.assert_allclose(got[2], gw, rtol=1e-6)
  np.testing.assert_allclose(got[4], np.sin(x), rtol=1e-6)
  jax = oracle()
  for g, w in zip(got, _fwd_bwd(jax)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)
