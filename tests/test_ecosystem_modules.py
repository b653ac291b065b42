"""The JAX-internal modules and flags ecosystem libraries import (issue 34), each against JAX:
`jax._src.ad_util`, `jax._src.flatten_util`, `jax.lib`, `jax.experimental.sparse`,
`jax._src.core.trace_state_clean`, `jax.config.x64_enabled`, `jax_traceback_filtering`."""
import importlib

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle


def test_ad_util_names_are_jaxlites_own():
  from jaxlite._src.transforms import ad_util
  from jaxlite._src.interpreters import ad
  from jaxlite._src.transforms.custom_derivatives import SymbolicZero
  real = importlib.import_module("jax._src.ad_util") if oracle() else None
  for name in ("Zero", "SymbolicZero", "add_jaxvals", "add_jaxvals_p", "stop_gradient_p",
               "zeros_like_aval", "instantiate", "replace_internal_symbolic_zeros",
               "replace_rule_output_symbolic_zeros"):
    assert hasattr(real, name) and hasattr(ad_util, name), name
  assert ad_util.stop_gradient_p is ad.stop_gradient_p and ad_util.Zero is ad.Zero
  aval = jax.core.ShapedArray((2,), np.float32)
  np.testing.assert_array_equal(ad_util.instantiate(SymbolicZero(aval)), np.zeros(2))
  np.testing.assert_array_equal(ad_util.instantiate(ad.Zero(aval)), np.zeros(2))
  assert type(ad_util.replace_internal_symbolic_zeros(ad.Zero(aval))) is SymbolicZero
  np.testing.assert_array_equal(ad_util.add_jaxvals(jnp.ones(2), jnp.ones(2)), [2., 2.])


def test_stop_gradient_transpose_rule_registered_through_ad_util():
  """lineax registers a transpose rule on ad_util.stop_gradient_p: linear_transpose uses it."""
  from jaxlite._src.transforms import ad_util
  from jaxlite.interpreters import ad
  old = ad.primitive_transposes.get(ad_util.stop_gradient_p)
  ad.primitive_transposes[ad_util.stop_gradient_p] = lambda ct, x: [2 * ct]
  try:
    f = jax.linear_transpose(lambda x: ad_util.stop_gradient_p.bind(x), 1.0)
    assert f(3.0)[0] == 6.0
  finally:
    if old is None:
      del ad.primitive_transposes[ad_util.stop_gradient_p]
    else:
      ad.primitive_transposes[ad_util.stop_gradient_p] = old


def test_flatten_util_and_lib():
  real = oracle()
  from jaxlite._src.libs.flatten_util import ravel_pytree
  flat, unravel = ravel_pytree({"a": jnp.ones(2), "b": 3.0})
  rflat, _ = importlib.import_module("jax._src.flatten_util").ravel_pytree(
      {"a": real.numpy.ones(2), "b": 3.0})
  np.testing.assert_array_equal(flat, rflat)
  assert unravel(flat)["b"] == 3.0
  import jaxlite.lib
  assert jaxlite.lib.__version__ == real.lib.__version__
  with pytest.raises(ImportError):
    from jaxlite.lib import xla_bridge  # noqa: F401  (JAX 0.10.2's jax.lib has none either)


def test_trace_state_clean_and_x64_enabled():
  real = oracle()
  from jaxlite._src.base import core
  rcore = importlib.import_module("jax._src.core")
  assert core.trace_state_clean() is rcore.trace_state_clean() is True
  assert jax.jit(lambda x: x + core.trace_state_clean())(0) == 0
  assert jax.vmap(lambda x: x + core.trace_state_clean())(jnp.zeros(1))[0] == 0
  assert jax.config.x64_enabled is real.config.x64_enabled is False
  with jax.enable_x64(True):
    assert jax.config.x64_enabled is True


def test_traceback_filtering_flag():
  real = oracle()
  assert jax.config.jax_traceback_filtering == real.config.jax_traceback_filtering
  for mod in (jax, real):
    mod.config.update("jax_traceback_filtering", "off")
    assert mod.config.jax_traceback_filtering == "off"
    with pytest.raises(ValueError, match="new enum value must be in"):
      mod.config.update("jax_traceback_filtering", "bad")
    mod.config.update("jax_traceback_filtering", "auto")


# --- jax.experimental.sparse -------------------------------------------------------------------

M = np.array([[0., 1., 0., 0.], [2., 0., 3., 0.], [0., 0., 0., 4.]], np.float32)


def _both(fn):
  real = oracle()
  from jax.experimental import sparse as rsparse
  from jaxlite.experimental import sparse
  return fn(jax, sparse), fn(real, rsparse)


def _eq(a, b):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
  assert np.asarray(a).dtype == np.asarray(b).dtype


def test_bcoo_layout_matches_jax():
  def fn(m, sp):
    b = sp.BCOO.fromdense(m.numpy.asarray(M))
    p = sp.BCOO.fromdense(m.numpy.asarray(M), nse=6)
    return (b.data, b.indices, p.data, p.indices, b.nse, b.shape, repr(b), b.T.todense(),
            sp.todense(p), sp.bcoo_todense(b))
  lite, real = _both(fn)
  for a, b in zip(lite, real):
    if isinstance(a, (int, tuple, str)):
      assert a == b
    else:
      _eq(a, b)


@pytest.mark.parametrize("rhs_shape", [(4,), (4, 2), (5, 4, 2), (2, 3, 4, 1)])
def test_bcoo_matmul_matches_jax(rhs_shape):
  rhs = np.arange(np.prod(rhs_shape), dtype=np.float32).reshape(rhs_shape) / 7
  def fn(m, sp):
    b = sp.BCOO.fromdense(m.numpy.asarray(M), nse=7)
    return b @ rhs, m.jit(lambda b, r: b @ r)(b, rhs), m.numpy.ones(3) @ b
  for a, b in zip(*_both(fn)):
    _eq(a, b)


def test_bcoo_grad_vmap_and_scipy():
  scipy_sparse = pytest.importorskip("scipy.sparse")
  def fn(m, sp):
    b = sp.BCOO.from_scipy_sparse(scipy_sparse.csr_matrix(M))
    loss = lambda d: (sp.BCOO((d, b.indices), shape=b.shape) @ m.numpy.arange(4.)).sum()
    return (b.indices, m.grad(loss)(b.data),
            m.vmap(lambda v: b @ v)(m.numpy.ones((3, 4))), (2 * b).data, (-b).data)
  for a, b in zip(*_both(fn)):
    _eq(a, b)


def test_bcsr_matches_jax():
  def fn(m, sp):
    c = sp.BCSR.fromdense(m.numpy.asarray(M))
    return c.data, c.indices, c.indptr, c @ m.numpy.ones(4), c.todense(), repr(c)
  for a, b in zip(*_both(fn)):
    if isinstance(a, str):
      assert a == b
    else:
      _eq(a, b)


def test_sparse_rejects_what_it_does_not_hold():
  from jaxlite.experimental import sparse
  with pytest.raises(NotImplementedError, match="2-D"):
    sparse.BCOO.fromdense(jnp.ones((2, 2, 2)))
  b = sparse.BCOO.fromdense(jnp.asarray(M))
  with pytest.raises(TypeError, match="contracting dimensions"):
    b @ jnp.ones(3)
