"""The jax.lax remainder: creation and broadcasting helpers, the special-function primitives,
optimization_barrier, conv shape helpers, approx top-k, custom_linear_solve / custom_root.
Known answers (SciPy/NumPy/closed forms) always; values, dtypes and jaxprs against JAX when
installed."""
import math

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax
from tests.conftest import oracle

sp = pytest.importorskip("scipy.special")

# --- known answers -------------------------------------------------------------------------------

KNOWN = [
    ("full int", lambda: lax.full((2,), 3), np.array([3, 3], np.int32)),
    ("full dtype", lambda: lax.full((2, 1), 3.7, np.int32), np.full((2, 1), 3, np.int32)),
    ("full_like int8", lambda: lax.full_like(np.ones(2, np.int8), 2.5), np.array([2, 2], np.int8)),
    ("full_like shape", lambda: lax.full_like(3., 2, shape=(2,)), np.array([2., 2.], np.float32)),
    ("empty", lambda: lax.empty((2, 3), np.float32), np.zeros((2, 3), np.float32)),
    ("broadcast_to_rank", lambda: lax.broadcast_to_rank(jnp.ones(3), 3), np.ones((1, 1, 3))),
    ("broadcast_like", lambda: lax.broadcast_like(jnp.arange(3.), jnp.ones((2, 3))),
     np.tile(np.arange(3.), (2, 1))),
    ("reciprocal", lambda: lax.reciprocal(jnp.array([2., 4.])), np.array([.5, .25])),
    ("zeta", lambda: lax.zeta(np.array([1.5, 3., 2.]), np.array([1.5, 2., 1.])),
     sp.zeta([1.5, 3., 2.], [1.5, 2., 1.])),
    ("zeta poles", lambda: lax.zeta(np.array([0.5, 1.]), np.array([1., 1.])),
     np.array([np.nan, np.inf])),
    ("polygamma", lambda: lax.polygamma(np.array([0., 1., 2., 3.]), np.array([1.5, 2., .3, 7.])),
     sp.polygamma([0, 1, 2, 3], [1.5, 2., .3, 7.])),
    ("betainc", lambda: lax.betainc(np.float32(2.), np.float32(3.), np.array([.1, .5, .9],
                                                                             np.float32)),
     sp.betainc(2., 3., [.1, .5, .9])),
    ("reduce_window_shape", lambda: lax.reduce_window_shape_tuple(
        (10, 9), (3, 2), (2, 1), [(1, 1), (0, 0)], (2, 1), (1, 2)), (10, 7)),
    ("conv_shape SAME", lambda: lax.conv_shape_tuple((2, 3, 10, 9), (4, 3, 3, 2), (2, 1),
                                                     "SAME"), (2, 4, 5, 9)),
    ("conv_general_shape", lambda: lax.conv_general_shape_tuple(
        (2, 10, 9, 3), (3, 2, 3, 4), (2, 1), [(1, 1), (0, 2)], ("NHWC", "HWIO", "NHWC")),
     (2, 5, 10, 4)),
    ("conv_transpose_shape SAME", lambda: lax.conv_transpose_shape_tuple(
        (2, 10, 9, 3), (3, 2, 3, 4), (2, 1), "SAME", ("NHWC", "HWIO", "NHWC")), (2, 20, 9, 4)),
    ("conv_transpose_shape VALID", lambda: lax.conv_transpose_shape_tuple(
        (2, 3, 10, 9), (4, 3, 3, 2), (2, 3), "VALID", ("NCHW", "OIHW", "NCHW")), (2, 4, 21, 27)),
    ("conv_general_permutations", lambda: lax.conv_general_permutations(
        ("NHWC", "HWIO", "NCHW")), ((0, 3, 1, 2), (3, 2, 0, 1), (0, 1, 2, 3))),
    ("broadcast_shapes", lambda: lax.broadcast_shapes((2, 1), (3,), ()), (2, 3)),
    ("approx_max_k", lambda: lax.approx_max_k(jnp.array([3., 1., 4., 1., 5.]), 2),
     [np.array([5., 4.], np.float32), np.array([4, 2], np.int32)]),
    ("approx_min_k", lambda: lax.approx_min_k(jnp.array([[3., 1., 4., 1., 5.]]), 3),
     [np.array([[1., 1., 3.]], np.float32), np.array([[1, 3, 0]], np.int32)]),
    ("platform_dependent", lambda: lax.platform_dependent(2., cpu=lambda x: x + 1,
                                                          default=lambda x: x), 3.),
    ("composite", lambda: lax.composite(lambda x: x * 2, "my.double")(jnp.arange(3.)),
     np.array([0., 2., 4.])),
    ("optimization_barrier", lambda: lax.optimization_barrier((jnp.ones(2), 3)),
     (np.ones(2), 3)),
    ("index_take", lambda: lax.index_take(jnp.arange(24.).reshape(2, 3, 4),
                                          jnp.array([[0, 1], [1, 3]]), (0, 2)),
     np.arange(24.).reshape(2, 3, 4)[[0, 1], :, [1, 3]].astype(np.float32)),
]


@pytest.mark.parametrize("name,fn,want", KNOWN, ids=[c[0] for c in KNOWN])
def test_known_answers(name, fn, want):
  got = fn()
  for g, w in zip(jaxlite.tree_util.tree_leaves(got), jaxlite.tree_util.tree_leaves(want)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-7)
    if isinstance(w, np.ndarray) and w.dtype != np.float64:
      assert np.asarray(g).dtype == w.dtype


def test_igamma_grad_a_matches_finite_difference():
  a, x = np.array([0.5, 3., 10., 2.]), np.array([2., 0.1, 30., 5.])
  h = 1e-6
  with_x64 = __import__("tests.conftest", fromlist=["x64"]).x64
  with with_x64():
    got = np.asarray(lax.igamma_grad_a(a, x))
    fd = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-12)
    # d sample / d alpha = -(dP/da) / (dP/dx)
    dens = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
    np.testing.assert_allclose(np.asarray(lax.random_gamma_grad(a, x)), -fd / dens, rtol=1e-6)


GRADS = [
    ("polygamma dx", lambda x: lax.polygamma(1., x), lambda x: sp.polygamma(2, x)),
    ("igamma da", lambda a: lax.igamma(a, 2.), None),
    ("igammac da", lambda a: lax.igammac(a, 2.), None),
    ("betainc dx", lambda x: lax.betainc(2., 3., x), lambda x: 12 * x * (1 - x) ** 2),
]


@pytest.mark.parametrize("name,f,df", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(name, f, df):
  x = 0.4
  got = float(jaxlite.grad(f)(x))
  want = df(x) if df else (float(f(x + 1e-3)) - float(f(x - 1e-3))) / 2e-3
  np.testing.assert_allclose(got, want, rtol=2e-3)


ERRORS = [
    ("zeta not differentiable", lambda: jaxlite.grad(lambda x: lax.zeta(x, 2.))(3.),
     NotImplementedError, "zeta"),
    ("polygamma dm", lambda: jaxlite.grad(lambda m: lax.polygamma(m, 1.5))(1.),
     ValueError, "with respect to m"),
    ("betainc da", lambda: jaxlite.grad(lambda a: lax.betainc(a, 3., .4))(2.),
     ValueError, "with respect to a and b"),
    ("polygamma int", lambda: lax.polygamma(2, 1.5), TypeError, "polygamma"),
    ("approx_min_k int", lambda: lax.approx_min_k(jnp.arange(3), 1), ValueError, "floating"),
    ("full non-scalar", lambda: lax.full((2,), jnp.ones(2)), TypeError, "scalar fill_value"),
    ("broadcast_shapes", lambda: lax.broadcast_shapes((2,), (3,)), ValueError, "Incompatible"),
    ("platform no branch", lambda: lax.platform_dependent(1., tpu=lambda x: x),
     NotImplementedError, "cpu"),
    ("conv perms", lambda: lax.conv_general_permutations(("NHW", "OIHW", "NCHW")), TypeError,
     "exactly once"),
]


@pytest.mark.parametrize("name,fn,exc,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, exc, msg):
  with pytest.raises(exc, match=msg):
    fn()


def test_optimization_barrier_rules():
  def g(x):
    a, b = lax.optimization_barrier((x, 2 * x))
    return (jnp.sin(a) * b).sum()
  x = jnp.arange(3.)
  want = np.cos(np.arange(3.)) * 2 * np.arange(3.) + 2 * np.sin(np.arange(3.))
  np.testing.assert_allclose(jaxlite.grad(g)(x), want, rtol=1e-6)
  np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(g))(x), want, rtol=1e-6)
  np.testing.assert_allclose(jaxlite.vmap(jaxlite.grad(g))(jnp.stack([x, x])), [want, want],
                             rtol=1e-6)
  assert "optimization_barrier a b" in str(jaxlite.make_jaxpr(g)(x))


def _dense_solve(L, np_):
  def solve(mv, b):
    return np_.linalg.solve(L.vmap(mv, in_axes=1, out_axes=1)(np_.eye(b.shape[0])), b)
  return solve


A0 = np.array([[4., 1., 0.], [1., 3., 1.], [0., 1., 2.]], np.float32)
B0 = np.array([1., 2., 3.], np.float32)


def test_custom_linear_solve_known():
  solve = _dense_solve(jaxlite, jnp)
  x = lax.custom_linear_solve(lambda v: jnp.asarray(A0) @ v, B0, solve, symmetric=True)
  np.testing.assert_allclose(x, np.linalg.solve(A0, B0), rtol=1e-5)
  # d/db sum(x) = A^-T 1; d/dA sum(x) = -A^-T 1 x^T
  g_a, g_b = jaxlite.grad(lambda A, b: lax.custom_linear_solve(
      lambda v: A @ v, b, solve, solve).sum(), (0, 1))(A0, B0)
  lam = np.linalg.solve(A0.T, np.ones(3))
  np.testing.assert_allclose(g_b, lam, rtol=1e-5)
  np.testing.assert_allclose(g_a, -np.outer(lam, np.linalg.solve(A0, B0)), rtol=1e-5)


def test_custom_linear_solve_needs_transpose_solve():
  solve = _dense_solve(jaxlite, jnp)
  with pytest.raises(TypeError, match="transpose_solve required"):
    jaxlite.grad(lambda b: lax.custom_linear_solve(lambda v: A0 @ v, b, solve).sum())(B0)


def _newton(f, x0):
  x = x0
  for _ in range(30):
    x = x - f(x) / (3 * x ** 2)
  return x


def test_custom_root_known():
  def cube_root(c):
    return lax.custom_root(lambda x: x ** 3 - c, 1.0, _newton, lambda g, y: y / g(1.0))
  np.testing.assert_allclose(cube_root(8.0), 2.0, rtol=1e-6)
  np.testing.assert_allclose(jaxlite.grad(cube_root)(8.0), 1 / 12, rtol=1e-6)
  np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(cube_root))(27.0), 1 / 27, rtol=1e-6)


# --- against JAX ---------------------------------------------------------------------------------

ORACLE = [
    ("full", lambda L, n: L.lax.full((2,), 3)),
    ("full_like weak", lambda L, n: L.lax.full_like(3., 2, shape=(2,))),
    ("reciprocal", lambda L, n: L.lax.reciprocal(2.)),
    ("zeta", lambda L, n: L.lax.zeta(n.array([1.5, 3., 0.5, 1.]), n.array([1.5, 2., 1., 1.]))),
    ("polygamma", lambda L, n: L.lax.polygamma(n.array([1., 2., 3.]), n.array([2., .3, 7.]))),
    ("igamma_grad_a", lambda L, n: L.lax.igamma_grad_a(n.array([.5, 3., 10.]),
                                                       n.array([2., .1, 30.]))),
    ("random_gamma_grad", lambda L, n: L.lax.random_gamma_grad(n.array([.5, 3., 10., 1.5]),
                                                               n.array([2., .1, 30., 2.]))),
    ("grad igamma", lambda L, n: L.grad(lambda a: L.lax.igamma(a, 2.))(1.5)),
    ("grad polygamma", lambda L, n: L.grad(lambda x: L.lax.polygamma(1., x))(1.5)),
    ("approx_max_k", lambda L, n: L.lax.approx_max_k(n.array([[3., 1.], [4., 5.]]), 1, 0)),
    ("index_take", lambda L, n: L.lax.index_take(n.arange(24.).reshape(2, 3, 4),
                                                 n.array([[0, 1], [1, 3]]), (0, 2))),
    ("custom_linear_solve grad", lambda L, n: L.grad(lambda A, b: (L.lax.custom_linear_solve(
        lambda v: A @ v, b, _dense_solve(L, n), _dense_solve(L, n)) ** 2).sum(), (0, 1))(
            A0, B0)),
    ("custom_linear_solve vmap", lambda L, n: L.vmap(lambda b: L.lax.custom_linear_solve(
        lambda v: A0 @ v, b, _dense_solve(L, n), symmetric=True))(n.stack([B0, 2 * B0]))),
]


@pytest.mark.parametrize("name,fn", ORACLE, ids=[c[0] for c in ORACLE])
def test_against_jax(name, fn):
  jax = oracle()
  import jax.numpy as real_jnp
  want, got = fn(jax, real_jnp), fn(jaxlite, jnp)
  for w, g in zip(jax.tree_util.tree_leaves(want), jaxlite.tree_util.tree_leaves(got)):
    assert g.dtype == w.dtype and g.shape == w.shape
    assert getattr(g, "weak_type", False) == getattr(w, "weak_type", False)
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


JAXPRS = [
    ("barrier", lambda L, n: L.make_jaxpr(lambda x: L.lax.optimization_barrier((x, 2 * x)))(
        n.ones(3))),
    ("barrier grad", lambda L, n: L.make_jaxpr(L.grad(lambda x: L.numpy.sin(
        L.lax.optimization_barrier(x)).sum()))(n.ones(3))),
    ("zeta", lambda L, n: L.make_jaxpr(lambda x: L.lax.zeta(x, 2.))(1.5)),
    ("polygamma", lambda L, n: L.make_jaxpr(lambda x: L.lax.polygamma(1., x))(1.5)),
    ("igamma_grad_a", lambda L, n: L.make_jaxpr(lambda x: L.lax.igamma_grad_a(x, 2.))(1.5)),
    ("reciprocal", lambda L, n: L.make_jaxpr(L.lax.reciprocal)(n.ones(3))),
]


@pytest.mark.parametrize("name,fn", JAXPRS, ids=[c[0] for c in JAXPRS])
def test_jaxpr_matches_jax(name, fn):
  jax = oracle()
  import jax.numpy as real_jnp
  assert str(fn(jaxlite, jnp)) == str(fn(jax, real_jnp))


def test_primitive_objects_exported():
  jax = oracle()
  names = [n for n in dir(jax.lax) if n.endswith("_p") and hasattr(lax, n)]
  assert len(names) > 120
  for n in names:
    assert getattr(lax, n).name == getattr(jax.lax, n).name, n
  for n in ("add_p", "sin_p", "exp2_p", "stop_gradient_p", "zeta_p", "optimization_barrier_p",
            "regularized_incomplete_beta_p"):
    assert hasattr(lax, n)
  assert math.isfinite(1.0)


# --- patches, locally connected conv, ragged_dot -------------------------------------------------

_R = np.random.RandomState(1)
X_NCHW = _R.randn(2, 3, 5, 4).astype(np.float32)
X_NHWC = _R.randn(2, 5, 4, 3).astype(np.float32)
W_LOCAL = _R.randn(4, 18, 4, 2).astype(np.float32)
W_LOCAL_HWIO = _R.randn(5, 4, 12, 6).astype(np.float32)
L_RAG = _R.randn(5, 3).astype(np.float32)
R_RAG = _R.randn(2, 3, 4).astype(np.float32)


def test_patches_known():
  p = lax.conv_general_dilated_patches(X_NCHW, (2, 3), (1, 1), "VALID")
  assert p.shape == (2, 18, 4, 2)
  # channel c * 6 + (dy * 3 + dx) at output (i, j) reads x[c, i + dy, j + dx]
  want = np.stack([X_NCHW[:, c, dy:dy + 4, dx:dx + 2] for c in range(3) for dy in range(2)
                   for dx in range(3)], axis=1)
  np.testing.assert_array_equal(p, want)


def test_ragged_dot_known():
  out = lax.ragged_dot(L_RAG, R_RAG, np.array([2, 2], np.int32))
  want = np.concatenate([L_RAG[:2] @ R_RAG[0], L_RAG[2:4] @ R_RAG[1], np.zeros((1, 4))])
  np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


PATCH_CASES = [
    ("patches", lambda L: L.lax.conv_general_dilated_patches(X_NCHW, (2, 3), (1, 1), "VALID")),
    ("patches NHWC SAME", lambda L: L.lax.conv_general_dilated_patches(
        X_NHWC, (2, 2), (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("patches strided dilated", lambda L: L.lax.conv_general_dilated_patches(
        X_NCHW, (2, 2), (2, 1), [(1, 0), (0, 1)], rhs_dilation=(1, 2))),
    ("local", lambda L: L.lax.conv_general_dilated_local(X_NCHW, W_LOCAL, (1, 1), "VALID",
                                                         (2, 3))),
    ("local NHWC", lambda L: L.lax.conv_general_dilated_local(
        X_NHWC, W_LOCAL_HWIO, (1, 1), "SAME", (2, 2),
        dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("ragged_dot", lambda L: L.lax.ragged_dot(L_RAG, R_RAG, np.array([2, 3], np.int32))),
    ("ragged_dot grad", lambda L: L.grad(lambda a, b: (L.lax.ragged_dot(
        a, b, np.array([2, 3], np.int32)) ** 2).sum(), (0, 1))(L_RAG, R_RAG)),
    ("patches grad", lambda L: L.grad(lambda a: (L.lax.conv_general_dilated_patches(
        a, (2, 3), (1, 1), "VALID") ** 2).sum())(X_NCHW)),
]


@pytest.mark.parametrize("name,fn", PATCH_CASES, ids=[c[0] for c in PATCH_CASES])
def test_patches_against_jax(name, fn):
  jax = oracle()
  want, got = fn(jax), fn(jaxlite)
  for w, g in zip(jax.tree_util.tree_leaves(want), jaxlite.tree_util.tree_leaves(got)):
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("bits", [(8, 7), (5, 10), (4, 3), (5, 2), (8, 23), (11, 52), (3, 0)])
def test_reduce_precision_bits_as_jax(dtype, bits):
  # XLA's bit-level rounding for any bit counts (it never depended on ml_dtypes being loaded):
  # mantissa to nearest even, overflow to inf, underflow and subnormals to a signed zero.
  jax = oracle()
  rng = np.random.default_rng(1)
  x = (rng.standard_normal(500) * np.exp(rng.uniform(-9, 9, 500))).astype(dtype)
  x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(dtype).tiny / 4]
  ours = np.asarray(jaxlite.lax.reduce_precision(x, *bits))
  jitted = np.asarray(jaxlite.jit(lambda v: jaxlite.lax.reduce_precision(v, *bits))(x))
  want = np.asarray(jax.lax.reduce_precision(x, *bits))
  for got in (ours, jitted):
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
