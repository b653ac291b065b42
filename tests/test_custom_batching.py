"""jax.custom_batching: custom_vmap uses its rule under vmap (also under jit, nested vmap and
vmap of jvp, where the rule's JVP is used), runs the body otherwise; sequential_vmap loops."""
import importlib

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle
from jaxlite.custom_batching import custom_vmap, sequential_vmap


def _make(jax_mod, jnp_mod, cb, log):
  """sin(x) * y whose vmap rule (deliberately different) computes cos(x) * y."""
  @cb.custom_vmap
  def f(x, y):
    log.append("f")
    return jnp_mod.sin(x) * y

  @f.def_vmap
  def rule(axis_size, in_batched, xs, ys):
    log.append(("rule", axis_size, tuple(in_batched)))
    return jnp_mod.cos(xs) * ys, True
  return f


X = np.arange(3, dtype=np.float32)
CASES = {
    "call": lambda j, f: f(1.0, 2.0),
    "jit": lambda j, f: j.jit(f)(1.0, 2.0),
    "vmap": lambda j, f: j.vmap(f, (0, None))(X, np.float32(2)),
    "jit_vmap": lambda j, f: j.jit(j.vmap(f, (0, None)))(X, np.float32(2)),
    "vmap_vmap": lambda j, f: j.vmap(j.vmap(f, (0, None)), (0, None))(np.ones((2, 3), np.float32),
                                                                      np.float32(2)),
    "vmap_both": lambda j, f: j.vmap(f)(X, X + 1),
    "jvp": lambda j, f: j.jvp(f, (1.0, 2.0), (1.0, 0.5)),
    "vmap_jvp": lambda j, f: j.vmap(lambda a: j.jvp(f, (a, 2.0), (1.0, 0.5)))(X),
}
KNOWN = {  # the rule gives cos(x) * y wherever vmap is involved, the body sin(x) * y elsewhere
    "call": np.sin(1.0) * 2, "vmap": np.cos(X) * 2, "jit_vmap": np.cos(X) * 2,
    "vmap_both": np.cos(X) * (X + 1), "jvp": (np.sin(1.0) * 2, np.cos(1.0) * 2 + np.sin(1.) * .5),
    "vmap_jvp": (np.cos(X) * 2, -np.sin(X) * 2 + np.cos(X) * 0.5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_custom_vmap_cases(name):
  log = []
  got = CASES[name](jax, _make(jax, jnp, jax.custom_batching, log))
  if name in KNOWN:
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(KNOWN[name])):
      np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-7)
  assert any(isinstance(e, tuple) for e in log) == ("vmap" in name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_custom_vmap_matches_jax(name):
  real = oracle()
  real_cb = importlib.import_module("jax.custom_batching")
  want = CASES[name](real, _make(real, real.numpy, real_cb, []))
  got = CASES[name](jax, _make(jax, jnp, jax.custom_batching, []))
  for g, w in zip(jax.tree.leaves(got), real.tree.leaves(want)):
    assert np.asarray(g).dtype == np.asarray(w).dtype
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-7)


def test_rule_sees_batch_axis_first_and_pytrees():
  seen = []

  @custom_vmap
  def f(tree):
    return {"s": tree["a"] + tree["b"]}

  @f.def_vmap
  def rule(axis_size, in_batched, tree):
    seen.append((axis_size, in_batched, tree["a"].shape))
    return {"s": tree["a"] + tree["b"]}, {"s": True}
  out = jax.vmap(f, in_axes=({"a": 1, "b": None},))({"a": jnp.ones((2, 5)), "b": jnp.ones(2)})
  assert out["s"].shape == (5, 2)
  assert seen == [(5, [{"a": True, "b": False}], (5, 2))]


def test_errors():
  f = custom_vmap(lambda x: x)
  with pytest.raises(AttributeError, match="No batching rule defined"):
    jax.vmap(f)(jnp.ones(2))
  f.def_vmap(lambda n, b, x: ((x, x), True))
  with pytest.raises(ValueError, match="custom vmap rule"):
    jax.vmap(f)(jnp.ones(2))


def test_sequential_vmap():
  calls = []

  def g(a, b):
    calls.append(np.shape(a))
    return a.sum() + b
  sg = sequential_vmap(g)
  np.testing.assert_array_equal(np.asarray(jax.vmap(sg, (0, None))(jnp.ones((4, 3)), 1.0)),
                                [4.0] * 4)
  np.testing.assert_array_equal(np.asarray(jax.vmap(sg)(jnp.ones((4, 3)), jnp.arange(4.))),
                                [3., 4., 5., 6.])
  assert all(c == (3,) for c in calls)   # the body only ever sees one example
  assert float(sg(jnp.ones(3), 2.0)) == 5.0
