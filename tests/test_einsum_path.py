"""jnp.einsum with three or more operands contracts along the path JAX's opt_einsum chooses
(numpy/einsum_path.py): the same pairwise order, hence the same jaxpr, and no intermediates
larger than that order needs."""
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite._src.numpy import einsum_path
from conftest import oracle


@st.composite
def einsum_specs(draw, min_ops=3, max_ops=6):
  """(subscripts, shapes): 3..6 operands over a few labels (some shared, some size 1, some
  summed within one operand), an output of distinct labels."""
  n = draw(st.integers(min_ops, max_ops))
  letters = string.ascii_lowercase[:draw(st.integers(2, 7))]
  sizes = {c: draw(st.sampled_from([1, 2, 3, 4, 5])) for c in letters}
  terms = [draw(st.text(letters, min_size=0, max_size=4)) for _ in range(n)]
  used = sorted(set("".join(terms)))
  out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
  # A label may be 1 long in one operand and broadcast against the others (not where it repeats
  # within the operand: there JAX's diagonal differs from broadcasting first, as the oracle
  # test below checks).
  shapes = [tuple(1 if t.count(c) == 1 and draw(st.booleans()) and draw(st.booleans())
                  else sizes[c] for c in t) for t in terms]
  return ",".join(terms) + "->" + out, shapes


def _operands(shapes, seed=0):
  rng = np.random.default_rng(seed)
  return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(einsum_specs())
def test_values_match_numpy(spec):
  subscripts, shapes = spec
  ops = _operands(shapes)
  # NumPy does not broadcast a size-1 label against a longer one (JAX does): its reference
  # takes every operand broadcast to the labels' full sizes.
  terms = subscripts.split("->")[0].split(",")
  full = {}
  for t, s in zip(terms, shapes):
    for c, d in zip(t, s):
      full[c] = max(full.get(c, 1), d)
  want = np.einsum(subscripts, *[np.broadcast_to(o.astype(np.float64), [full[c] for c in t])
                                 for o, t in zip(ops, terms)])
  np.testing.assert_allclose(np.asarray(jnp.einsum(subscripts, *ops)), want, rtol=1e-4,
                             atol=1e-4)
  np.testing.assert_allclose(np.asarray(jax.jit(lambda *a: jnp.einsum(subscripts, *a))(*ops)),
                             want, rtol=1e-4, atol=1e-4)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(einsum_specs())
def test_jaxpr_matches_jax(spec):
  real = oracle()
  subscripts, shapes = spec
  ops = _operands(shapes)
  ours = str(jax.make_jaxpr(lambda *a: jnp.einsum(subscripts, *a))(*ops))
  theirs = str(real.make_jaxpr(lambda *a: real.numpy.einsum(subscripts, *a))(*ops))
  assert ours == theirs, subscripts


def _label_sets(n, rng, letters=string.ascii_letters[:14]):
  """n random operands' label strings over a pool, and an output: a contraction network of the
  kind a path search sees."""
  terms = ["".join(rng.choice(list(letters), size=rng.integers(1, 4), replace=False))
           for _ in range(n)]
  used = sorted(set("".join(terms)))
  out = "".join(rng.choice(used, size=rng.integers(0, min(3, len(used)) + 1), replace=False))
  sizes = {c: int(rng.integers(2, 9)) for c in used}
  return terms, out, sizes


@pytest.mark.parametrize("strategy", ["auto", "optimal", "greedy", "branch-all", "branch-2",
                                      "branch-1"])
def test_paths_equal_opt_einsum(strategy):
  """The path itself, against the opt_einsum JAX uses (it comes with JAX), over networks of 3 to
  18 operands (auto: optimal up to 4, branch searches to 14, greedy beyond)."""
  oracle()
  opt_einsum = pytest.importorskip("opt_einsum")
  rng = np.random.default_rng(7)
  top = {"optimal": 6, "branch-all": 7}.get(strategy, 18)
  for n in list(range(3, top + 1)) * 3:
    terms, out, sizes = _label_sets(n, rng)
    shapes = [tuple(sizes[c] for c in t) for t in terms]
    want, _ = opt_einsum.contract_path(",".join(terms) + "->" + out, *shapes, shapes=True,
                                       optimize=strategy)
    got = einsum_path.contraction_path(terms, out, sizes, strategy)
    assert [tuple(s) for s in got] == [tuple(s) for s in want], (strategy, terms, out, sizes)


def test_chain_contracts_the_small_pair_first():
  """(100x2)(2x100)(100x2): left to right would build a 100x100 intermediate; the path
  contracts (2x100)(100x2) first, as JAX does."""
  a, b, c = np.ones((100, 2), np.float32), np.ones((2, 100), np.float32), np.ones((100, 2),
                                                                                   np.float32)
  jaxpr = jax.make_jaxpr(lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c))(a, b, c).jaxpr
  assert [tuple(e.outvars[0].aval.shape) for e in jaxpr.eqns] == [(2, 2), (100, 2)]
  np.testing.assert_array_equal(np.asarray(jnp.einsum("ij,jk,kl->il", a, b, c)),
                                np.full((100, 2), 200.0, np.float32))


def test_optimize_false_is_left_to_right_and_explicit_paths_are_followed():
  a, b, c = np.ones((100, 2), np.float32), np.ones((2, 100), np.float32), np.ones((100, 2),
                                                                                   np.float32)

  def shapes(optimize):
    jaxpr = jax.make_jaxpr(lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c,
                                                      optimize=optimize))(a, b, c).jaxpr
    return [tuple(e.outvars[0].aval.shape) for e in jaxpr.eqns]
  assert shapes(False) == [(100, 100), (100, 2)]
  assert shapes([(0, 1), (0, 1)]) == [(100, 100), (100, 2)]
  assert shapes([(1, 2), (0, 1)]) == [(2, 2), (100, 2)]
  assert shapes(True) == shapes("greedy") == [(2, 2), (100, 2)]
  for optimize in (False, [(0, 2), (0, 1)], "branch-1"):
    np.testing.assert_array_equal(
        np.asarray(jnp.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)),
        np.full((100, 2), 200.0, np.float32))


@pytest.mark.parametrize("optimize, cls, words", [
    ("fastest", ValueError, "optimize must be True, False, an explicit path or one of"),
    ([(0, 1)], ValueError, "leaves 2 operands uncontracted"),
    ([(0, 3), (0, 1)], ValueError, "pair of distinct positions among the 3 operands"),
    ([(0, 0), (0, 1)], ValueError, "pair of distinct positions"),
    ([0, 1], TypeError, "list of tuples of operand positions"),
])
def test_bad_optimize(optimize, cls, words):
  x = np.ones((2, 2), np.float32)
  with pytest.raises(cls, match=words):
    jnp.einsum("ij,jk,kl->il", x, x, x, optimize=optimize)
