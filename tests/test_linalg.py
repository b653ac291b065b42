"""lax.linalg primitives and jnp.linalg: values against NumPy/SciPy, JVPs against central
differences, gradients, dtypes and errors against real JAX, vmap/jit consistency."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.lax import linalg as L

from conftest import oracle, x64

RNG = np.random.default_rng(0)


def _rand(shape, dtype=np.float32):
  x = RNG.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * RNG.standard_normal(shape)
  return x.astype(dtype)


def _spd(shape, dtype=np.float32):
  a = _rand(shape, dtype)
  n = shape[-1]
  return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _tol(dtype):
  return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _close(got, want, dtype=np.float32, scale=None):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, (got.shape, want.shape)
  scale = 1 + (np.abs(want).max() if want.size else 0) if scale is None else scale
  np.testing.assert_allclose(got, want, atol=_tol(dtype) * scale, rtol=_tol(dtype))


# --- lax.linalg primitives against NumPy ----------------------------------------------------

SHAPES = [(3, 3), (2, 4, 4), (2, 1, 5, 5), (1, 1)]
DTYPES = [np.float32, np.complex64]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_matches_numpy(shape, dtype):
  a = _spd(shape, dtype)
  out = L.cholesky(a)
  assert out.dtype == dtype and out.shape == shape
  _close(out, np.linalg.cholesky(a), dtype)


def test_cholesky_not_positive_definite_gives_nans_per_matrix():
  a = np.array([[[1., 2.], [2., 1.]], [[2., 0.], [0., 2.]]], np.float32)
  out = np.asarray(L.cholesky(a))
  assert np.isnan(out[0, :, 0]).all() and np.isnan(out[0, 1, 1])
  np.testing.assert_allclose(out[1], np.sqrt(2) * np.eye(2), rtol=1e-6)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_reconstructs(shape, dtype):
  a = _spd(shape, dtype)
  v, w = L.eigh(a)
  assert w.dtype == np.finfo(dtype).dtype and v.dtype == dtype
  _close(w, np.linalg.eigvalsh(a), dtype)
  recon = np.asarray(v) @ (np.asarray(w)[..., None] * np.conj(np.swapaxes(np.asarray(v), -1, -2)))
  _close(recon, a, dtype)


@pytest.mark.parametrize("shape", [(5, 5), (7, 4), (4, 7), (3, 40, 40), (2, 70, 50), (0, 3, 3)])
def test_lu_factors_and_pivots(shape):
  x = _rand(shape)
  lu_, piv, perm = L.lu(x)
  m, n = shape[-2:]
  k = min(m, n)
  assert piv.dtype == np.int32 and perm.dtype == np.int32
  assert piv.shape == shape[:-2] + (k,) and perm.shape == shape[:-2] + (m,)
  lu_, perm = np.asarray(lu_), np.asarray(perm)
  lower = np.tril(lu_[..., :, :k], -1) + np.eye(m, k)
  upper = np.triu(lu_[..., :k, :])
  permuted = np.take_along_axis(x, perm[..., None], axis=-2)
  _close(lower @ upper, permuted)
  assert np.all(np.abs(np.tril(lu_, -1)) <= 1 + 1e-6)  # partial pivoting bounds multipliers
  np.testing.assert_array_equal(np.asarray(L.lu_pivots_to_permutation(piv, m)), perm)


def test_lu_of_singular_matrices_is_finite():
  lu_, piv, perm = L.lu(np.zeros((3, 3), np.float32))
  np.testing.assert_array_equal(np.asarray(lu_), 0)
  np.testing.assert_array_equal(np.asarray(piv), [0, 1, 2])


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 6, 4)])
@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr(shape, full, dtype):
  a = _rand(shape, dtype)
  q, r = L.qr(a, full_matrices=full)
  nq, nr = np.linalg.qr(a, mode="complete" if full else "reduced")
  assert q.shape == nq.shape and r.shape == nr.shape and q.dtype == dtype
  _close(np.asarray(q) @ np.asarray(r), a, dtype)
  _close(np.abs(np.asarray(r)), np.abs(nr), dtype)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 6, 4), (0, 2)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_svd(shape, dtype):
  a = _rand(shape, dtype)
  s = L.svd(a, compute_uv=False)
  assert s.dtype == np.finfo(dtype).dtype
  _close(s, np.linalg.svd(a, compute_uv=False), dtype)
  u, s, vh = L.svd(a, full_matrices=False)
  _close((np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh), a, dtype)


TRSV_CASES = [dict(left_side=ls, lower=lo, transpose_a=t, conjugate_a=c, unit_diagonal=u)
              for ls in (True, False) for lo in (True, False) for t in (False, True)
              for c in (False, True) for u in (False, True)]


@pytest.mark.parametrize("kw", TRSV_CASES, ids=lambda kw: "".join(str(int(v)) for v in kw.values()))
def test_triangular_solve_all_flags(kw):
  a = _spd((2, 4, 4), np.complex64)
  b = _rand((2, 4, 3) if kw["left_side"] else (2, 3, 4), np.complex64)
  out = np.asarray(L.triangular_solve(a, b, **kw))
  t = np.tril(a) if kw["lower"] else np.triu(a)
  if kw["unit_diagonal"]:
    t[..., np.arange(4), np.arange(4)] = 1
  if kw["conjugate_a"]:
    t = np.conj(t)
  if kw["transpose_a"]:
    t = np.swapaxes(t, -1, -2)
  recon = t @ out if kw["left_side"] else out @ t
  _close(recon, b, np.complex64)


def test_triangular_solve_vector_b_and_singular_a():
  a = np.triu(_spd((3, 3)))
  x = L.triangular_solve(a, np.ones(3, np.float32), left_side=True)
  _close(a @ np.asarray(x), np.ones(3))
  out = np.asarray(L.triangular_solve(np.zeros((2, 2), np.float32), np.ones((2, 2), np.float32)))
  assert not np.isfinite(out).any()


def test_tridiagonal_solve():
  m = 6
  dl, du = _rand((2, m)), _rand((2, m))
  d = 4 + _rand((2, m))
  dl[:, 0] = 0
  du[:, -1] = 0
  b = _rand((2, m, 3))
  full = np.zeros((2, m, m), np.float32)
  idx = np.arange(m)
  full[:, idx, idx] = d
  full[:, idx[1:], idx[:-1]] = dl[:, 1:]
  full[:, idx[:-1], idx[1:]] = du[:, :-1]
  _close(L.tridiagonal_solve(dl, d, du, b), np.linalg.solve(full, b))


def test_eig_right_and_left_vectors():
  a = _rand((3, 4, 4))
  w, vl, vr = (np.asarray(o) for o in L.eig(a))
  assert w.dtype == np.complex64
  _close(a @ vr, vr * w[..., None, :], np.complex64)
  _close(np.conj(np.swapaxes(vl, -1, -2)) @ a, w[..., :, None] * np.conj(np.swapaxes(vl, -1, -2)),
         np.complex64)
  _close(np.linalg.norm(vr, axis=-2), np.ones((3, 4)))


# --- against real JAX -------------------------------------------------------------------------

def test_lax_linalg_matches_jax():
  jax_ = oracle()
  a = _rand((2, 5, 5))
  spd = _spd((2, 5, 5))
  for got, want in [(L.cholesky(spd), jax_.lax.linalg.cholesky(spd)),
                    (L.eigh(spd)[1], jax_.lax.linalg.eigh(spd)[1]),
                    (L.svd(a)[1], jax_.lax.linalg.svd(a)[1]),
                    (L.qr(a)[1], jax_.lax.linalg.qr(a)[1])]:
    assert got.dtype == want.dtype and got.shape == want.shape
    _close(got, want)
  for shape in [(6, 6), (7, 4), (4, 7), (40, 40)]:
    x = _rand(shape)
    ours, theirs = L.lu(x), jax_.lax.linalg.lu(x)
    _close(ours[0], theirs[0], scale=10)
    np.testing.assert_array_equal(np.asarray(ours[1]), np.asarray(theirs[1]))
    np.testing.assert_array_equal(np.asarray(ours[2]), np.asarray(theirs[2]))


@pytest.mark.parametrize("fn, message", [
    (lambda: L.lu(np.ones(3, np.float32)), "Input 0 to lu must have rank at least 2"),
    (lambda: L.qr(np.ones(3, np.float32)), "Input 0 to qr must have rank at least 2"),
    (lambda: L.svd(np.ones(3, np.float32)), "Input 0 to svd must have rank at least 2"),
    (lambda: L.eig(np.ones((3, 4), np.float32)), "The input to eig must be a square matrix"),
    (lambda: L.cholesky(np.ones((3, 4), np.float32), symmetrize_input=False),
     "The input to cholesky must be a square matrix"),
    (lambda: L.eigh(np.ones((3, 4), np.float32), symmetrize_input=False),
     "Argument to symmetric eigendecomposition must have shape"),
    (lambda: L.lu(np.ones((3, 3), np.int32)), "lu does not accept dtype int32 at position 0"),
    (lambda: L.triangular_solve(np.eye(3, dtype=np.float32), np.ones((3, 3), np.int32)),
     "triangular_solve does not accept dtype int32 at position 1"),
])
def test_errors(fn, message):
  with pytest.raises((TypeError, ValueError), match=message):
    fn()


def test_printed_cholesky_matches_jax():
  jax_ = oracle()
  x = np.eye(3, dtype=np.float32)
  ours = str(jax.make_jaxpr(lambda x: L.cholesky(x))(x))
  theirs = str(jax_.make_jaxpr(lambda x: jax_.lax.linalg.cholesky(x))(x))
  assert ours == theirs
  for fn_ours, fn_theirs in [(lambda x: L.lu(x), lambda x: jax_.lax.linalg.lu(x)),
                             (lambda x: L.qr(x), lambda x: jax_.lax.linalg.qr(x)),
                             (lambda x: L.svd(x), lambda x: jax_.lax.linalg.svd(x))]:
    assert str(jax.make_jaxpr(fn_ours)(x)) == str(jax_.make_jaxpr(fn_theirs)(x))


# --- JVPs against central differences (float64) -----------------------------------------------

def _jvp_error(f, *xs):
  rng = np.random.default_rng(1)
  ts = []
  for x in xs:
    t = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
      t = t + 1j * rng.standard_normal(x.shape)
    ts.append(t.astype(x.dtype))
  _, touts = jax.jvp(lambda *a: f(*a), tuple(xs), tuple(ts))
  eps = 1e-6
  plus = f(*[x + eps * t for x, t in zip(xs, ts)])
  minus = f(*[x - eps * t for x, t in zip(xs, ts)])
  errs = []
  for p, m, t in zip(jax.tree.leaves(plus), jax.tree.leaves(minus), jax.tree.leaves(touts)):
    fd = (np.asarray(p) - np.asarray(m)) / (2 * eps)
    errs.append(np.abs(fd - np.asarray(t)).max() / (1 + np.abs(fd).max()))
  return max(errs)


def _sign_fixed_svd(x):
  u, s, vh = L.svd(x, full_matrices=False)
  sign = jnp.sign(u[..., :1, :])
  return s, u * sign, vh * jnp.swapaxes(sign, -1, -2)


def _sign_fixed_eigh(x):
  v, w = L.eigh(x)
  return v * jnp.sign(v[..., :1, :]), w


JVP_CASES = [
    ("cholesky", lambda x: L.cholesky(x), lambda: _spd((2, 4, 4), np.float64)),
    ("cholesky_c", lambda x: L.cholesky(x), lambda: _spd((4, 4), np.complex128)),
    ("eigh", _sign_fixed_eigh, lambda: _spd((2, 4, 4), np.float64)),
    ("lu_square", lambda x: L.lu(x)[0], lambda: _rand((2, 5, 5), np.float64)),
    ("lu_tall", lambda x: L.lu(x)[0], lambda: _rand((6, 3), np.float64)),
    ("lu_wide", lambda x: L.lu(x)[0], lambda: _rand((3, 6), np.float64)),
    ("qr_reduced", lambda x: L.qr(x, full_matrices=False), lambda: _rand((5, 3), np.float64)),
    ("qr_square_c", lambda x: L.qr(x), lambda: _rand((4, 4), np.complex128)),
    ("svd_square", _sign_fixed_svd, lambda: _rand((4, 4), np.float64)),
    ("svd_tall", _sign_fixed_svd, lambda: _rand((2, 5, 3), np.float64)),
    ("svd_wide", _sign_fixed_svd, lambda: _rand((3, 5), np.float64)),
    ("svd_values", lambda x: L.svd(x, compute_uv=False), lambda: _rand((4, 6), np.float64)),
    ("eigvals", lambda x: L.eig(x, compute_left_eigenvectors=False,
                                compute_right_eigenvectors=False)[0],
     lambda: _rand((4, 4), np.float64)),
]


@pytest.mark.parametrize("name, fn, make", JVP_CASES, ids=[c[0] for c in JVP_CASES])
def test_jvp_matches_finite_differences(name, fn, make):
  with x64():
    assert _jvp_error(fn, make()) < 1e-6


@pytest.mark.parametrize("kw", TRSV_CASES[::3], ids=lambda kw: "".join(str(int(v)) for v in kw.values()))
def test_triangular_solve_jvp_both_arguments(kw):
  with x64():
    a = _spd((2, 4, 4), np.float64)
    b = _rand((2, 4, 2) if kw["left_side"] else (2, 2, 4), np.float64)
    assert _jvp_error(lambda a, b: L.triangular_solve(a, b, **kw), a, b) < 1e-6


def test_tridiagonal_solve_jvp_and_transpose():
  with x64():
    m = 5
    dl, du, b = _rand((m,), np.float64), _rand((m,), np.float64), _rand((m, 2), np.float64)
    dl[0] = du[-1] = 0
    d = 4 + _rand((m,), np.float64)
    assert _jvp_error(lambda *a: L.tridiagonal_solve(*a), dl, d, du, b) < 1e-6
    g = jax.grad(lambda b: jnp.sum(L.tridiagonal_solve(dl, d, du, b) * np.arange(2.)))(b)
    full = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
    want = np.linalg.solve(full.T, np.broadcast_to(np.arange(2.), (m, 2)))
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-10)


# --- jnp.linalg against NumPy -----------------------------------------------------------------

A = _rand((2, 4, 4))
B = _rand((2, 4, 3))
SPD = _spd((2, 4, 4))
TALL = _rand((5, 3))

JNP_CASES = [
    ("det", lambda m: m.linalg.det(A)),
    ("det_singular", lambda m: m.linalg.det(np.ones((3, 3), np.float32))),
    ("slogdet_sign", lambda m: m.linalg.slogdet(A)[0]),
    ("slogdet_log", lambda m: m.linalg.slogdet(A)[1]),
    ("inv", lambda m: m.linalg.inv(A)),
    ("solve", lambda m: m.linalg.solve(A, B)),
    ("solve_vec", lambda m: m.linalg.solve(A[0], B[0, :, 0])),
    ("cholesky", lambda m: m.linalg.cholesky(SPD)),
    ("eigvalsh", lambda m: m.linalg.eigvalsh(SPD)),
    ("svdvals", lambda m: m.linalg.svd(A, compute_uv=False)),
    ("pinv", lambda m: m.linalg.pinv(TALL)),
    ("pinv_rank_deficient", lambda m: m.linalg.pinv(np.ones((3, 4), np.float32))),
    ("lstsq", lambda m: m.linalg.lstsq(TALL, np.append(B[0, :, 0], np.float32(1)))[0]),
    ("matrix_power_3", lambda m: m.linalg.matrix_power(A, 3)),
    ("matrix_power_-2", lambda m: m.linalg.matrix_power(A, -2)),
    ("matrix_power_0", lambda m: m.linalg.matrix_power(A, 0)),
    ("matrix_rank", lambda m: m.linalg.matrix_rank(np.ones((4, 3), np.float32))),
    ("cond", lambda m: m.linalg.cond(A)),
    ("cond_1", lambda m: m.linalg.cond(A[0], 1)),
    ("cond_fro", lambda m: m.linalg.cond(A[0], "fro")),
    ("multi_dot", lambda m: m.linalg.multi_dot([A[0, 0], A[0], B[0], B[1, 0]])),
    ("tensorinv", lambda m: m.linalg.tensorinv(A[0].reshape(4, 2, 2), 1)),
    ("tensorsolve", lambda m: m.linalg.tensorsolve(A[0].reshape(2, 2, 4), B[0, :, 0].reshape(2, 2))),
    ("outer", lambda m: m.linalg.outer(A[0, 0], B[0, 0])),
    ("eigvals", lambda m: np.sort_complex(np.asarray(m.linalg.eigvals(A[0])))),
]


@pytest.mark.parametrize("name, fn", JNP_CASES, ids=[c[0] for c in JNP_CASES])
def test_jnp_linalg_matches_numpy(name, fn):
  _close(fn(jnp), fn(np))


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(ord, keepdims):
  x = _rand((3, 4, 5))
  for axis in [(1, 2), (2, 0), (-1, -2)]:
    _close(jnp.linalg.norm(x, ord, axis, keepdims), np.linalg.norm(x, ord, axis, keepdims))


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf])
def test_vector_norms(ord):
  x = _rand((3, 4))
  x[0, 0] = 0
  for axis in [0, 1, -1]:
    _close(jnp.linalg.norm(x, ord, axis), np.linalg.norm(x, ord, axis))
  _close(jnp.linalg.norm(x[0], ord), np.linalg.norm(x[0], ord))
  _close(jnp.linalg.vector_norm(x, ord=2 if ord is None else ord),
         np.linalg.vector_norm(x, ord=2 if ord is None else ord))


def test_norm_defaults_and_errors():
  x = _rand((2, 3, 4))
  _close(jnp.linalg.norm(x), np.linalg.norm(x))
  _close(jnp.linalg.norm(x, keepdims=True), np.linalg.norm(x, keepdims=True))
  assert jnp.linalg.norm(jnp.arange(3)).dtype == np.float32
  assert jnp.linalg.vector_norm(x, keepdims=True).shape == (1, 1, 1)
  _close(jnp.linalg.matrix_norm(x, ord="nuc"), np.linalg.matrix_norm(x, ord="nuc"))
  with pytest.raises(ValueError, match="Improper number of axes for norm"):
    jnp.linalg.norm(x, ord=2)
  with pytest.raises(ValueError, match="Invalid order"):
    jnp.linalg.norm(x[0, 0], "fro")


def test_slogdet_of_singular_and_decomposition_results():
  sign, logdet = jnp.linalg.slogdet(np.zeros((3, 3), np.float32))
  assert float(sign) == 0 and float(logdet) == -np.inf
  w, v = jnp.linalg.eigh(SPD)
  assert type(jnp.linalg.eigh(SPD)).__name__ == "EighResult"
  _close(np.asarray(v) @ (np.asarray(w)[..., None] * np.swapaxes(np.asarray(v), -1, -2)), SPD)
  q, r = jnp.linalg.qr(TALL)
  assert q.shape == (5, 3) and jnp.linalg.qr(TALL, mode="complete").Q.shape == (5, 5)
  assert jnp.linalg.qr(TALL, mode="r").shape == (3, 3)
  u, s, vh = jnp.linalg.svd(TALL, full_matrices=False)
  _close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), TALL)
  w, v = jnp.linalg.eig(A[0])
  _close(A[0] @ np.asarray(v), np.asarray(v) * np.asarray(w), np.complex64)
  _close(jnp.linalg.cholesky(SPD, upper=True), np.swapaxes(np.linalg.cholesky(SPD), -1, -2))


def test_jnp_linalg_dtypes_match_jax():
  jax_ = oracle()
  ints = np.arange(4).reshape(2, 2) + np.eye(2, dtype=np.int64)
  for name in ["det", "inv", "norm", "pinv", "svdvals", "matrix_rank"]:
    ours = getattr(jnp.linalg, name)(ints)
    theirs = getattr(jax_.numpy.linalg, name)(ints)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
  for fn in ["slogdet", "eigh", "qr", "svd"]:
    for got, want in zip(getattr(jnp.linalg, fn)(SPD), getattr(jax_.numpy.linalg, fn)(SPD)):
      assert got.dtype == want.dtype and got.shape == want.shape, fn


TOP_LEVEL_CASES = [
    ("norm", lambda m, x, v: m.linalg.norm(x)), ("det", lambda m, x, v: m.linalg.det(x)),
    ("slogdet", lambda m, x, v: m.linalg.slogdet(x)), ("inv", lambda m, x, v: m.linalg.inv(x)),
    ("pinv", lambda m, x, v: m.linalg.pinv(x)), ("solve", lambda m, x, v: m.linalg.solve(x, v)),
    ("lstsq", lambda m, x, v: m.linalg.lstsq(x, v)),
    ("cholesky", lambda m, x, v: m.linalg.cholesky(x)), ("qr", lambda m, x, v: m.linalg.qr(x)),
    ("svd", lambda m, x, v: m.linalg.svd(x)), ("svdvals", lambda m, x, v: m.linalg.svdvals(x)),
    ("eig", lambda m, x, v: m.linalg.eig(x)), ("eigh", lambda m, x, v: m.linalg.eigh(x)),
    ("eigvals", lambda m, x, v: m.linalg.eigvals(x)),
    ("eigvalsh", lambda m, x, v: m.linalg.eigvalsh(x)),
    ("matrix_power", lambda m, x, v: m.linalg.matrix_power(x, 3)),
    ("matrix_rank", lambda m, x, v: m.linalg.matrix_rank(x)),
    ("cond", lambda m, x, v: m.linalg.cond(x)), ("cross", lambda m, x, v: m.linalg.cross(v, v)),
    ("vector_norm", lambda m, x, v: m.linalg.vector_norm(x)),
    ("matrix_norm", lambda m, x, v: m.linalg.matrix_norm(x)),
    ("vecdot", lambda m, x, v: m.linalg.vecdot(x, x)),
    ("tensorinv", lambda m, x, v: m.linalg.tensorinv(x, 1)),
    ("outer", lambda m, x, v: m.linalg.outer(v, v)),
]


def _top_level(closed):
  return [e.primitive.name if e.primitive.name != "jit" else f"jit[{e.params['name']}]"
          for e in closed.jaxpr.eqns]


@pytest.mark.parametrize("name, fn", TOP_LEVEL_CASES, ids=[c[0] for c in TOP_LEVEL_CASES])
def test_top_level_eqns_match_jax(name, fn):
  """The named jits (and custom_jvp calls) JAX stages for each function, in order."""
  jax_ = oracle()
  x = np.eye(3, dtype=np.float32) * 2
  v = np.ones(3, np.float32)
  ours = _top_level(jax.make_jaxpr(lambda x, v: fn(jnp, x, v))(x, v))
  theirs = _top_level(jax_.make_jaxpr(lambda x, v: fn(jax_.numpy, x, v))(x, v))
  assert ours == theirs


def test_pinv_gradient_is_finite_at_rank_deficiency():
  jax_ = oracle()
  a = np.ones((3, 4), np.float32)
  got = jax.grad(lambda x: jnp.sum(jnp.sin(jnp.linalg.pinv(x))))(a)
  want = jax_.grad(lambda x: jax_.numpy.sum(jax_.numpy.sin(jax_.numpy.linalg.pinv(x))))(a)
  assert np.isfinite(np.asarray(got)).all()
  _close(got, want)


# --- gradients against real JAX ---------------------------------------------------------------

GRAD_CASES = [
    ("det", lambda m, x: m.linalg.det(x), A[0]),
    ("slogdet", lambda m, x: m.linalg.slogdet(x)[1], A[0]),
    ("inv", lambda m, x: m.sum(m.linalg.inv(x) ** 2), A[0]),
    ("solve", lambda m, x: m.sum(m.linalg.solve(x, B[0]) ** 2), A[0]),
    ("cholesky", lambda m, x: m.sum(m.linalg.cholesky(x) ** 2), SPD[0]),
    ("eigh", lambda m, x: m.sum(m.linalg.eigh(x)[0] ** 3), SPD[0]),
    ("svdvals", lambda m, x: m.sum(m.linalg.svd(x, compute_uv=False)), A[0]),
    ("svd_u", lambda m, x: m.sum(m.abs(m.linalg.svd(x, full_matrices=False)[0])), A[0]),
    ("qr", lambda m, x: m.sum(m.linalg.qr(x)[1] ** 2), A[0]),
    ("pinv", lambda m, x: m.sum(m.linalg.pinv(x)), TALL),
    ("norm_2", lambda m, x: m.linalg.norm(x, 2), A[0]),
    ("norm_nuc", lambda m, x: m.linalg.norm(x, "nuc"), A[0]),
    ("norm_inf", lambda m, x: m.linalg.norm(x, np.inf), A[0]),
    ("vector_norm_3", lambda m, x: m.linalg.norm(x[0], 3), A[0]),
    ("matrix_power", lambda m, x: m.sum(m.linalg.matrix_power(x, 3)), A[0]),
    ("lstsq", lambda m, x: m.sum(m.linalg.lstsq(x, TALL[:, 0])[0]), TALL),
]


@pytest.mark.parametrize("name, fn, x", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grads_match_jax(name, fn, x):
  jax_ = oracle()
  got = np.asarray(jax.grad(lambda x: fn(jnp, x))(x))
  want = np.asarray(jax_.grad(lambda x: fn(jax_.numpy, x))(x))
  _close(got, want)


# --- transformations --------------------------------------------------------------------------

VMAP_CASES = [
    ("det", jnp.linalg.det), ("inv", jnp.linalg.inv), ("slogdet", lambda x: jnp.linalg.slogdet(x)[1]),
    ("svd", lambda x: jnp.linalg.svd(x, compute_uv=False)), ("qr", lambda x: jnp.linalg.qr(x)[1]),
    ("eigh", lambda x: jnp.linalg.eigh(x + x.T)[0]), ("lu", lambda x: L.lu(x)[0]),
    ("solve", lambda x: jnp.linalg.solve(x, x[0])), ("norm", jnp.linalg.norm),
    ("grad_det", jax.grad(jnp.linalg.det)),
]


@pytest.mark.parametrize("name, fn", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_and_jit_agree_with_a_loop(name, fn):
  x = _rand((4, 4, 4))
  loop = np.stack([np.asarray(fn(xi)) for xi in x])
  _close(jax.vmap(fn)(x), loop)
  _close(jax.vmap(fn, in_axes=2)(x), np.stack([np.asarray(fn(x[:, :, i])) for i in range(4)]))
  _close(jax.jit(jax.vmap(fn))(x), loop)


def test_vmap_triangular_solve_with_an_unbatched_matrix():
  a = np.triu(_spd((4, 4)))
  b = _rand((3, 4, 2))
  out = jax.vmap(lambda b: L.triangular_solve(a, b, left_side=True), in_axes=0)(b)
  _close(np.asarray(a) @ np.asarray(out), b)


# --- second-order gradients with jaxlite.test_util.check_grads --------------------------------

CHECK_GRADS_CASES = [
    ("det", lambda x: jnp.linalg.det(x), "square"),
    ("slogdet", lambda x: jnp.linalg.slogdet(x)[1], "square"),
    ("inv", lambda x: jnp.linalg.inv(x), "square"),
    ("solve", lambda x: jnp.linalg.solve(x, x[:, :2]), "square"),
    ("cholesky", lambda x: jnp.linalg.cholesky(x @ x.T + 4 * jnp.eye(4)), "square"),
    ("eigvalsh", lambda x: jnp.linalg.eigvalsh(x + x.T), "square"),
    ("svdvals", lambda x: jnp.linalg.svd(x, compute_uv=False), "tall"),
    ("qr", lambda x: jnp.linalg.qr(x).R, "tall"),
    ("pinv", lambda x: jnp.linalg.pinv(x), "tall"),
    ("norm_nuc", lambda x: jnp.linalg.norm(x, "nuc"), "tall"),
    ("triangular_solve", lambda x: L.triangular_solve(x + 4 * jnp.eye(4), x, lower=True,
                                                       left_side=True), "square"),
]


@pytest.mark.parametrize("name, fn, kind", CHECK_GRADS_CASES,
                         ids=[c[0] for c in CHECK_GRADS_CASES])
def test_check_grads_second_order(name, fn, kind):
  from jaxlite.test_util import check_grads
  with x64():
    x = _rand((4, 4) if kind == "square" else (5, 3), np.float64)
    check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


def test_float64_under_x64():
  with x64():
    a = _rand((5, 5), np.float64)
    b = _rand((5, 2), np.float64)
    for got, want in [(jnp.linalg.inv(a), np.linalg.inv(a)), (jnp.linalg.solve(a, b), np.linalg.solve(a, b)),
                      (jnp.linalg.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False)),
                      (L.lu(a)[0], L.lu(a)[0]), (jnp.linalg.pinv(b), np.linalg.pinv(b))]:
      assert got.dtype == np.float64
      _close(got, want, np.float64)
    assert jnp.linalg.eigvals(a).dtype == np.complex128
    assert L.lu(a)[1].dtype == np.int32
    assert jnp.linalg.det(a).dtype == np.float64
    _close(jnp.linalg.det(a), np.linalg.det(a), np.float64)


EDGE_INPUTS = [np.zeros((0, 0), np.float32), np.zeros((2, 0, 0), np.float32),
               np.zeros((0, 3, 3), np.float32), np.full((3, 3), np.nan, np.float32),
               np.zeros((3, 3), np.float32)]


@pytest.mark.parametrize("name", ["det", "slogdet", "inv", "pinv", "cholesky", "svdvals", "eigvalsh",
                                  "matrix_rank", "norm", "cond"])
def test_empty_nan_and_zero_matrices_like_jax(name):
  jax_ = oracle()
  for x in EDGE_INPUTS:
    if name == "cond" and 0 in x.shape[-2:]:
      with pytest.raises(ValueError, match="must not be empty"):
        jnp.linalg.cond(x)
      continue
    if name == "slogdet" and np.isnan(x).any():
      continue  # JAX reports sign 1 for NaN input; the sign of NaN is NaN here
    try:
      theirs = jax_.tree.leaves(getattr(jax_.numpy.linalg, name)(x))
    except ValueError:  # JAX's matrix_rank of an empty matrix; NumPy (and we) give 0
      continue
    ours = jax.tree.leaves(getattr(jnp.linalg, name)(x))
    for got, want in zip(ours, theirs):
      assert got.shape == want.shape and got.dtype == want.dtype, (name, x.shape)
      np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5, err_msg=name)


@pytest.mark.parametrize("shape", [(5, 4), (4, 6), (6, 6), (2, 5, 3)])
def test_qr_with_column_pivoting(shape):
  a = _rand(shape)
  q, r, p = L.qr(a, pivoting=True)
  assert p.dtype == np.int32 and p.shape == shape[:-2] + (shape[-1],)
  permuted = np.take_along_axis(a, np.asarray(p)[..., None, :], axis=-1)
  _close(np.asarray(q) @ np.asarray(r), permuted)
  diag = np.abs(np.diagonal(np.asarray(r), axis1=-2, axis2=-1))
  assert np.all(diag[..., :-1] >= diag[..., 1:] * (1 - 1e-5))  # pivoting sorts |r_kk|
  jax_ = oracle()
  np.testing.assert_array_equal(np.asarray(p), np.asarray(jax_.lax.linalg.qr(a, pivoting=True)[2]))


def test_qr_with_pivoting_jvp():
  with x64():
    a = _rand((5, 3), np.float64)
    assert _jvp_error(lambda x: L.qr(x, pivoting=True, full_matrices=False)[:2], a) < 1e-6


@pytest.mark.parametrize("shape, dtype", [((4, 4), np.float32), ((2, 5, 5), np.float32),
                                          ((3, 3), np.complex64)])
def test_schur(shape, dtype):
  a = _rand(shape, dtype)
  t, z = (np.asarray(o) for o in L.schur(a))
  zh = np.conj(np.swapaxes(z, -1, -2))
  _close(z @ t @ zh, a, dtype)
  _close(zh @ z, np.broadcast_to(np.eye(shape[-1]), a.shape), dtype)
  assert np.all(np.tril(t, -2 if dtype == np.float32 else -1) == 0)
  _close(np.sort_complex(np.linalg.eigvals(t).ravel()), np.sort_complex(np.linalg.eigvals(a).ravel()),
         np.complex64)


def _cofactors(m):
  m = np.asarray(m, np.float64)
  n = m.shape[-1]
  out = np.zeros_like(m)
  for i in range(n):
    for j in range(n):
      minor = np.delete(np.delete(m, i, -2), j, -1)
      out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
  return out


@pytest.mark.parametrize("a", [
    np.ones((4, 4), np.float32),
    np.array([[1, 2, 3, 0], [2, 4, 6, 0], [1, 0, 1, 0], [0, 0, 0, 2]], np.float32),
    np.diag(np.float32([1, 2, 0, 3])), np.diag(np.float32([1, 0, 0, 3])),
    np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32), np.zeros((2, 2), np.float32),
    RNG.standard_normal((2, 5, 5)).astype(np.float32)], ids=range(7))
def test_det_gradient_is_the_cofactor_matrix_even_when_singular(a):
  g = jax.grad(lambda x: jnp.sum(jnp.linalg.det(x)))(a)
  _close(g, _cofactors(a))


def test_small_det_prints_as_jax():
  jax_ = oracle()
  for n in [2, 3]:
    x = np.eye(n, dtype=np.float32)
    assert str(jax.make_jaxpr(jnp.linalg.det)(x)) == str(jax_.make_jaxpr(jax_.numpy.linalg.det)(x))


def test_eig_eigenvector_jvp_matches_jax():
  jax_ = oracle()
  with x64():
    a = _rand((4, 4), np.float64)
    t = _rand((4, 4), np.float64)
    f = lambda x: L.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)  # noqa: E731
    (_, _), (dw, dv) = jax.jvp(f, (a,), (t,))
    jax_.config.update("jax_enable_x64", True)
    try:
      (_, _), (rdw, rdv) = jax_.jvp(
          lambda x: jax_.lax.linalg.eig(x, compute_left_eigenvectors=False,
                                        enable_eigvec_derivs=True), (a,), (t,))
    finally:
      jax_.config.update("jax_enable_x64", False)
    np.testing.assert_allclose(np.asarray(dw), np.asarray(rdw), atol=1e-10)
    np.testing.assert_allclose(np.asarray(dv), np.asarray(rdv), atol=1e-10)


def test_cholesky_update_symmetric_product_householder_product():
  jax_ = oracle()
  spd = _spd((4, 4))
  r = np.linalg.cholesky(spd).T
  w = _rand((4,))
  _close(L.cholesky_update(r, w), jax_.lax.linalg.cholesky_update(r, w))
  a = _rand((2, 3, 4))
  c = _rand((2, 3, 3))
  _close(L.symmetric_product(a, c, alpha=2., beta=.5),
         jax_.lax.linalg.symmetric_product(a, c, alpha=2., beta=.5))
  sl = pytest.importorskip("scipy.linalg")
  x = _rand((5, 3))
  packed, taus = sl.lapack.sgeqrf(x)[:2]
  _close(L.householder_product(packed, taus), np.linalg.qr(x)[0])
  _close(L.householder_product(packed, taus), jax_.lax.linalg.householder_product(packed, taus))


def test_eig_eigenvector_grad_without_opt_in_raises_jaxs_error():
  a = np.array([[2., 1.], [0.5, 3.]], np.float32)
  with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
    jax.grad(lambda m: jnp.linalg.eig(m)[1].real.sum())(a)


def test_scipy_qr_mode_raw_is_a_value_error_as_in_jax():
  import jaxlite.scipy.linalg as jsl
  with pytest.raises(ValueError, match="Unsupported QR decomposition mode 'raw'"):
    jsl.qr(np.eye(3, dtype=np.float32), mode="raw")


@pytest.mark.parametrize("shape", [(2, 3), (3, 5), (2, 2, 4)])
@pytest.mark.parametrize("pivoting", [False, True])
def test_qr_jvp_of_wide_matrices(shape, pivoting):
  """m < n: the square block's rule for (dQ, dR1), and dR2 = dQᴴ A2 + Qᴴ dA2 (JAX 0.10.2)."""
  with x64():
    a = _rand(shape, np.float64)
    assert _jvp_error(lambda x: L.qr(x, pivoting=pivoting, full_matrices=False)[:2], a) < 1e-6


def test_qr_jvp_of_wide_matrix_matches_jax():
  jax_ = oracle()
  a, da = _rand((3, 5), np.float32), _rand((3, 5), np.float32)
  got = jax.jvp(lambda x: jnp.linalg.qr(x), (a,), (da,))[1]
  want = jax_.jvp(lambda x: jax_.numpy.linalg.qr(x), (a,), (da,))[1]
  for g, w in zip(got, want):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-3, atol=1e-3)
