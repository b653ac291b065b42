"""Float results numpyro's suite checks to tight tolerances (issue 34), each against real JAX
where it is installed and against recorded JAX values and exact answers otherwise.

numpyro's `test_bijective_transforms[HaarTransform(dim=-2)]` compares the slogdet of a stack
of 13 orthogonal 20x20 Jacobians with 0 to atol 1e-6: jaxlite's stack gave -1.19e-6 where each
matrix alone gave -5.96e-7 (JAX: -7.75e-7 both ways; exact -7.67e-7), because NumPy added the
logs of the LU diagonal in sequence when they came out of an earlier reduction with strides
(4, 52), and pairwise when they were row-major. In JAX a reduction's result depends on the
logical operand only, so the stack and each matrix agree bit for bit; jaxlite now makes a
strided float operand of a sum or product row-major first.
"""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle

# JAX 0.10.2 on CPU (recorded 2026-12-06): slogdet's log|det| of `_haar_stack()`, for the
# stack and for its first matrix alone.
JAX_HAAR_LOGABSDET = np.float32(-7.748604e-07)
# log|det| of the float32 matrix in exact arithmetic (mpmath, 50 digits; float64 LAPACK
# agrees to 9 digits).
EXACT_HAAR_LOGABSDET = -7.671891771865447e-07


def _haar_stack(batch=13):
  """The Jacobian numpyro's test builds for HaarTransform(dim=-2) on a (4, 5) event: the 4x4
  orthonormal Haar matrix in float32 (entries 1/sqrt(2) and its square, 0.49999997) times the
  5x5 identity, stacked `batch` times."""
  h = np.float32(1 / np.sqrt(2))
  q = np.float32(h * h)
  haar = np.array([[q, q, q, q], [q, q, -q, -q], [h, -h, 0, 0], [0, 0, h, -h]], np.float32)
  return np.broadcast_to(np.kron(haar, np.eye(5, dtype=np.float32)), (batch, 20, 20)).copy()


def test_haar_stack_fixture_is_numpyros_jacobian():
  j = _haar_stack(1)[0]
  assert j.dtype == np.float32 and np.count_nonzero(j) == 60
  assert sorted(set(np.abs(j[j != 0]).tolist())) == [np.float32(0.49999997),
                                                     np.float32(0.70710677)]
  np.testing.assert_allclose(np.linalg.slogdet(j.astype(np.float64))[1],
                             EXACT_HAAR_LOGABSDET, rtol=1e-9)


@pytest.mark.parametrize("batch", [1, 13])
def test_slogdet_of_a_stack_matches_each_matrix(batch):
  stack = _haar_stack(batch)
  got = np.asarray(jnp.linalg.slogdet(stack).logabsdet)
  one = np.asarray(jnp.linalg.slogdet(stack[0]).logabsdet)
  assert got.dtype == np.float32 and got.shape == (batch,)
  # As in JAX: the stack's results are each matrix's, bit for bit.
  np.testing.assert_array_equal(got, np.full(batch, one))
  # numpyro's tolerance, and within 2.5e-7 of the exact answer (JAX's error: 8e-9).
  assert np.all(np.abs(got) <= 1e-6)
  assert np.all(np.abs(got.astype(np.float64) - EXACT_HAAR_LOGABSDET) <= 2.5e-7)


def test_slogdet_of_a_stack_matches_each_matrix_in_jax():
  """The property above is JAX's: the stack and the single matrix give the same value."""
  real = oracle()
  stack = _haar_stack()
  got = np.asarray(real.numpy.linalg.slogdet(stack).logabsdet)
  np.testing.assert_array_equal(got, np.full(13, JAX_HAAR_LOGABSDET))
  np.testing.assert_array_equal(np.asarray(real.numpy.linalg.slogdet(stack[0]).logabsdet),
                                JAX_HAAR_LOGABSDET)


def _log_diagonal_sums(m):
  """float32 row sums of the logs slogdet adds up, eagerly: (the diagonals picked as
  jnp.linalg's slogdet picks them, by summing a masked stack over axis 1; a fresh array of the
  same values). jnp.where with the broadcast (20, 20) mask made jaxlite's stack with strides
  (4, 1040, 52), so the picked diagonals came out with strides (4, 52)."""
  row = np.array([-0.3465736] * 5 + [-5.960465e-08] * 10 + [0.3465736] * 5, np.float32)
  rows = np.tile(row, (13, 1))
  stack = np.zeros((13, 20, 20), np.float32)
  stack[:, np.arange(20), np.arange(20)] = rows
  picked = m.numpy.sum(m.numpy.where(np.eye(20, dtype=bool), m.numpy.asarray(stack), 0.0),
                       axis=1)
  return (np.asarray(m.numpy.sum(picked, axis=-1)),
          np.asarray(m.numpy.sum(m.numpy.asarray(rows), axis=-1)))


@pytest.mark.numpy_backend(reason="the NumPy backend's summation order (XLA's own sums these "
                           "20 values in sequence, as JAX)")
def test_float32_sum_does_not_depend_on_where_its_operand_came_from():
  picked, fresh = _log_diagonal_sums(jax)
  np.testing.assert_array_equal(picked, fresh)  # before: -1.19e-6 against -5.96e-7
  # The exact sum of these float32 values is -5.960465188e-07; jaxlite's pairwise sum gets it.
  np.testing.assert_allclose(picked, -5.960465188081798e-07, rtol=1e-6)


def test_float32_sum_does_not_depend_on_where_its_operand_came_from_in_jax():
  real = oracle()
  sums = _log_diagonal_sums(real)
  np.testing.assert_array_equal(sums[0], sums[1])
  lite = _log_diagonal_sums(jax)
  # Summation orders differ (XLA adds these 20 in sequence: -1.19e-6; jaxlite pairwise, the
  # exact -5.96e-7): JAX-COMPAT 10.5's rtol 1e-5 of the sum of absolute terms (3.47).
  np.testing.assert_allclose(lite[0], sums[0], rtol=0, atol=1e-5 * 3.47)
