"""`approx_max_k`/`approx_min_k` through `approx_top_k_p`: printed jaxprs, values (exact on CPU,
ties in index order), grad, vmap and errors against JAX 0.10.2 and known answers."""
import numpy as np
import pytest

import jaxlite
from conftest import oracle

X = np.array([[3.0, 1.0, 2.0, 5.0], [0.0, 4.0, 1.0, 2.0]], np.float32)


def _programs(jax):
  lax = jax.lax
  return [
      str(jax.make_jaxpr(lambda x: lax.approx_max_k(x, 2))(X)),
      str(jax.make_jaxpr(lambda x: lax.approx_min_k(x, 2, reduction_dimension=0,
                                                    recall_target=0.9,
                                                    aggregate_to_topk=False))(X)),
      jax.grad(lambda x: lax.approx_max_k(x, 2)[0].sum())(X),
      jax.vmap(lambda x: lax.approx_max_k(x, 2))(X),
      jax.vmap(lambda x: lax.approx_min_k(x, 1, reduction_dimension=0), in_axes=1)(X),
      lax.approx_max_k(X, 2, aggregate_to_topk=False),
      lax.approx_min_k(np.array([1.0, 1.0, 0.0, 1.0], np.float32), 3),
      jax.jit(lambda x: lax.approx_min_k(x, 2))(X),
  ]


def test_matches_jax():
  got = _programs(jaxlite)
  assert got[0].splitlines()[1] == "    b:f32[2,2] c:i32[2,2] = approx_top_k["
  np.testing.assert_array_equal(got[2], [[1, 0, 0, 1], [0, 1, 0, 1]])
  np.testing.assert_array_equal(got[6][1], [2, 0, 1])  # ties in index order
  np.testing.assert_array_equal(got[7][0], [[1.0, 2.0], [0.0, 1.0]])
  jax = oracle()
  for g, w in zip(got, _programs(jax)):
    if isinstance(w, str):
      assert g == w
      continue
    for a, b in zip(jaxlite.tree.leaves(g), jax.tree.leaves(w)):
      a, b = np.asarray(a), np.asarray(b)
      assert a.dtype == b.dtype and a.shape == b.shape
      np.testing.assert_array_equal(a, b)


def test_errors():
  with pytest.raises(ValueError, match="k must be smaller than the size of reduction_dim 4"):
    jaxlite.lax.approx_max_k(X, 5)
  with pytest.raises(ValueError, match="operand must be a floating type"):
    jaxlite.lax.approx_max_k(np.arange(4), 2)
