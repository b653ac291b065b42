"""What diffrax's test_sde1.py needs of jnp (issue 34), each against real JAX where installed and
against JAX's recorded answers otherwise.

diffrax's helpers sum over `axis=range(2, ndim)` (JAX takes any sequence of ints, a range
included), and its SDE tests call `jnp.intersect1d` under strict dtype promotion with x64 on,
where `jnp.nonzero` mixed int32 counts with int64 strides; JAX's indices are the default int
dtype (int64 under x64), of every nonzero call, empty ones included.
"""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import configured, oracle, x64


def _range_axis_reductions(jnp_module):
  x = jnp_module.arange(24.0).reshape(2, 3, 4)
  return [np.asarray(f(x, axis=range(1, 3))) for f in
          (jnp_module.sum, jnp_module.max, jnp_module.mean)]


def test_reductions_take_a_range_of_axes():
  got = _range_axis_reductions(jnp)
  want = [np.arange(24.0).reshape(2, 3, 4).sum(axis=(1, 2)),
          np.arange(24.0).reshape(2, 3, 4).max(axis=(1, 2)),
          np.arange(24.0).reshape(2, 3, 4).mean(axis=(1, 2))]
  for g, w in zip(got, want):
    np.testing.assert_array_equal(g, w.astype(np.float32))
  with pytest.raises(ValueError, match="duplicate value in 'axis'"):
    jnp.sum(jnp.ones((2, 3)), axis=[1, 1])


def test_reductions_take_a_range_of_axes_as_jax():
  real = oracle()
  for g, w in zip(_range_axis_reductions(jnp), _range_axis_reductions(real.numpy)):
    assert g.dtype == w.dtype
    np.testing.assert_array_equal(g, w)


def _nonzero_cases(module):
  """(dtype names, values) of nonzero/argwhere/flatnonzero/intersect1d under strict promotion."""
  np_ = module.numpy
  out = []
  for enabled in (False, True):
    with configured(module.config, jax_enable_x64=enabled,
                    jax_numpy_dtype_promotion="strict"):
      dense = np_.array([[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]])
      rows, cols = np_.nonzero(dense)
      empty = np_.nonzero(np_.zeros(3))[0]
      padded = np_.nonzero(dense, size=5, fill_value=-1)
      fine, coarse = np_.linspace(0, 1, 9), np_.linspace(0, 1, 5)
      common = np_.intersect1d(fine, coarse)
      out.append(([str(a.dtype) for a in (rows, cols, empty, padded[0],
                                           np_.argwhere(dense), np_.flatnonzero(dense))],
                  [np.asarray(a).tolist() for a in (rows, cols, empty, *padded, common)]))
  return out


def test_nonzero_under_strict_promotion_and_x64():
  got = _nonzero_cases(jax)
  # JAX 0.10.2 on CPU (recorded 2026-12-06): x64 off, then on.
  values = [[0, 1, 1], [1, 0, 2], [], [0, 1, 1, -1, -1], [1, 0, 2, -1, -1],
            [0.0, 0.25, 0.5, 0.75, 1.0]]
  assert got == [(["int32"] * 6, values), (["int64"] * 6, values)]


def test_nonzero_under_strict_promotion_and_x64_as_jax():
  real = oracle()
  assert _nonzero_cases(jax) == _nonzero_cases(real)


def _polyfit_under_rank_promotion_raise(module):
  """diffrax's helpers fit an order of convergence with jax_numpy_rank_promotion='raise'."""
  np_ = module.numpy
  x = np_.log(1 / np_.array([4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]))
  y = 0.5 * x + 0.1 + 0.01 * np_.sin(3 * x)
  with configured(module.config, jax_numpy_rank_promotion="raise"):
    one = module.numpy.polyfit(x, y, 1)
    two = module.numpy.polyfit(x, np_.stack([y, 2 * y], axis=1), 1)
  return np.asarray(one), np.asarray(two)


def test_polyfit_under_rank_promotion_raise():
  one, two = _polyfit_under_rank_promotion_raise(jax)
  assert one.shape == (2,) and two.shape == (2, 2)
  x = np.log(1 / np.array([4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0], np.float32))
  y = 0.5 * x + 0.1 + 0.01 * np.sin(3 * x)
  np.testing.assert_allclose(one, np.polyfit(x, y, 1), rtol=1e-4)
  np.testing.assert_allclose(two, np.polyfit(x, np.stack([y, 2 * y], 1), 1), rtol=1e-4)


def test_polyfit_under_rank_promotion_raise_as_jax():
  real = oracle()
  for got, want in zip(_polyfit_under_rank_promotion_raise(jax),
                       _polyfit_under_rank_promotion_raise(real)):
    np.testing.assert_allclose(got, want, rtol=1e-5)
