"""lax.linalg hessenberg / tridiagonal (LAPACK's packed gehrd / sytrd output), ormqr and qdwh,
against LAPACK through scipy and against JAX."""
import numpy as np
import pytest

import jaxlite as jl
from jaxlite.lax import linalg as L
from conftest import oracle

sl = pytest.importorskip("scipy.linalg")
RNG = np.random.default_rng(0)
A = RNG.normal(size=(5, 5)).astype(np.float32)
S = A + A.T
B = RNG.normal(size=(6, 4)).astype(np.float32)
QR, TAUS = sl.lapack.sgeqrf(B)[:2]
C_LEFT = RNG.normal(size=(6, 3)).astype(np.float32)
C_RIGHT = RNG.normal(size=(3, 6)).astype(np.float32)


def test_hessenberg_matches_lapack_gehrd():
  packed, taus = L.hessenberg(A)
  ref, ref_taus, _ = sl.lapack.sgehrd(A)
  np.testing.assert_allclose(packed, ref, atol=2e-6)
  np.testing.assert_allclose(taus, ref_taus, atol=2e-6)
  # Q from the reflectors reduces A: Q^T A Q is upper Hessenberg and equals the packed part
  q = _q_from(packed, taus)
  h = q.T @ A @ q
  np.testing.assert_allclose(np.tril(h, -2), 0, atol=2e-5)
  np.testing.assert_allclose(np.triu(h, -1), np.triu(np.asarray(packed), -1), atol=2e-5)


def _q_from(packed, taus):
  # the reflectors act on rows 1..: Q = diag(1, householder_product(v, taus))
  n = packed.shape[0]
  v = np.tril(np.asarray(packed)[1:, :n - 1], -1) + np.eye(n - 1, dtype=np.float32)
  inner = np.asarray(L.householder_product(v, taus))
  q = np.eye(n, dtype=np.float32)
  q[1:, 1:] = inner
  return q


@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_lapack_sytrd(lower):
  ours = L.tridiagonal(S, lower=lower)
  ref = sl.lapack.ssytrd(S, lower=int(lower))[:4]
  for o, r in zip(ours, ref):
    np.testing.assert_allclose(o, r, atol=3e-6)
  # the eigenvalues of the tridiagonal matrix are those of S
  d, e = np.asarray(ours[1]), np.asarray(ours[2])
  np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(np.diag(d) + np.diag(e, 1) +
                                                        np.diag(e, -1))),
                             np.sort(np.linalg.eigvalsh(S)), atol=2e-5)


@pytest.mark.parametrize("left, transpose", [(True, False), (True, True), (False, False),
                                             (False, True)])
def test_ormqr_matches_explicit_q(left, transpose):
  q = sl.qr(B.astype(float))[0]
  q = q.T if transpose else q
  c = C_LEFT if left else C_RIGHT
  want = q @ c if left else c @ q
  np.testing.assert_allclose(L.ormqr(QR, TAUS, c, left=left, transpose=transpose), want,
                             atol=2e-5)


def test_qdwh_polar_factors():
  u, h, iters, converged = L.qdwh(B)
  up, hp = sl.polar(B.astype(float))
  np.testing.assert_allclose(u, up, atol=2e-6)
  np.testing.assert_allclose(h, hp, atol=2e-6)
  assert bool(converged) and 0 < int(iters) <= 10
  u1, _, iters1, conv1 = L.qdwh(B, max_iterations=1)
  assert int(iters1) == 1 and not bool(conv1)
  with pytest.raises(ValueError, match="at least as many rows"):
    L.qdwh(B.T)


def test_vs_jax():
  jax = oracle()
  jl_ = jax.lax.linalg
  for o, j in zip(L.hessenberg(A), jl_.hessenberg(A)):
    np.testing.assert_allclose(o, j, atol=2e-6)
  for lower in (True, False):
    for o, j in zip(L.tridiagonal(S, lower=lower), jl_.tridiagonal(S, lower=lower)):
      np.testing.assert_allclose(o, j, atol=3e-6)
  np.testing.assert_allclose(L.ormqr(QR, TAUS, C_LEFT, transpose=True),
                             jl_.ormqr(QR, TAUS, C_LEFT, transpose=True), atol=2e-6)
  ours, theirs = L.qdwh(B), jl_.qdwh(B)
  np.testing.assert_allclose(ours[0], theirs[0], atol=2e-6)
  np.testing.assert_allclose(ours[1], theirs[1], atol=2e-6)
  assert int(ours[2]) == int(theirs[2]) and bool(ours[3]) == bool(theirs[3])


def test_batched_and_jitted():
  batch = np.stack([A, 2 * A])
  packed, taus = jl.jit(L.hessenberg)(batch)
  np.testing.assert_allclose(packed[1], sl.lapack.sgehrd(2 * A)[0], atol=5e-6)
  assert taus.shape == (2, 4)


def test_householder_primitives_print_and_batch_as_jax():
  # hessenberg_p / tridiagonal_p / ormqr_p: one eqn each, printed as JAX 0.10.2 prints them;
  # vmap matches a loop; no differentiation rule, as in JAX.
  a = np.arange(9.0, dtype=np.float32).reshape(3, 3) + np.eye(3, dtype=np.float32)
  texts = [str(jl.make_jaxpr(L.hessenberg)(a)),
           str(jl.make_jaxpr(lambda a: L.tridiagonal(a, lower=False))(a)),
           str(jl.make_jaxpr(lambda a, t, c: L.ormqr(a, t, c, left=False, transpose=True))(
               a, np.ones(2, np.float32), a))]
  assert texts[0] == "{ lambda ; a:f32[3,3]. let b:f32[3,3] c:f32[2] = hessenberg a in (b, c) }"
  assert texts[2].splitlines()[1] == "    d:f32[3,3] = ormqr[left=False transpose=True] a b c"
  batch = np.stack([a, 2 * a])
  for got, want in zip(jl.vmap(L.hessenberg)(batch), zip(*[L.hessenberg(x) for x in batch])):
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-6)
  with pytest.raises(NotImplementedError, match="hessenberg"):
    jl.jvp(L.hessenberg, (a,), (a,))
  jax = oracle()
  want = [str(jax.make_jaxpr(jax.lax.linalg.hessenberg)(a)),
          str(jax.make_jaxpr(lambda a: jax.lax.linalg.tridiagonal(a, lower=False))(a)),
          str(jax.make_jaxpr(lambda a, t, c: jax.lax.linalg.ormqr(
              a, t, c, left=False, transpose=True))(a, np.ones(2, np.float32), a))]
  assert texts == want
