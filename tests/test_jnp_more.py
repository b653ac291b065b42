"""Tests for the remaining jnp functions (more_functions, polynomial, statistics, misc):
values against NumPy, values/dtypes/top-level jit names against real JAX, jit against eager."""
import numpy as np
import pytest

import jaxlite
import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle

rng = np.random.default_rng(0)
F = rng.standard_normal((3, 5)).astype(np.float32)
V = rng.standard_normal(6).astype(np.float32)
W = rng.standard_normal(3).astype(np.float32)
SPECIAL = np.array([0., 1e-40, -3.5, 8., np.inf, -np.inf, np.nan, 0.3], np.float32)
I1 = np.array([12, -18, 0, 7, 9], np.int32)
I2 = np.array([8, 6, 0, 0, 6], np.int32)
BITS = rng.integers(0, 2, (2, 11)).astype(np.int32)
U8 = rng.integers(0, 256, (2, 3)).astype(np.uint8)
PH = np.cumsum(rng.random(10) * 3).astype(np.float32)
XP = np.array([0., 1., 3.], np.float32)
FP = np.array([1., 2., -1.], np.float32)
XI = np.linspace(-1, 5, 9).astype(np.float32)
H = rng.standard_normal(40).astype(np.float32)
CPLX = (V[:4] + 1j * V[2:]).astype(np.complex64)

# (name, args, kwargs, numpy reference (None: np.<name>))
CASES = [
    ("acos", (np.clip(V, -1, 1),), {}, np.arccos),
    ("atan2", (V, V[::-1].copy()), {}, np.arctan2),
    ("asinh", (V,), {}, np.arcsinh),
    ("diff", (F,), {}, None),
    ("diff", (F,), {"n": 2, "axis": 0, "prepend": 0.}, None),
    ("diff", (np.array([True, False, False]),), {}, None),
    ("ediff1d", (F,), {"to_begin": 1., "to_end": np.array([2., 3.], np.float32)}, None),
    ("gradient", (V,), {}, None),
    ("gradient", (V, 0.5), {}, None),
    ("trapezoid", (F,), {}, None),
    ("trapezoid", (F, np.arange(5.).astype(np.float32) ** 2), {}, None),
    ("cross", (F[:, :3], F[:, 2:]), {}, None),
    ("cross", (F[:, :2], F[:, 3:]), {}, None),
    ("frexp", (SPECIAL[SPECIAL != 1e-40],), {}, None),
    ("ldexp", (V, np.array([1, -3, 0, 4, 100, -2], np.int32)), {}, None),
    ("modf", (V * 3,), {}, None),
    ("gcd", (I1, I2), {}, None),
    ("lcm", (I1, I2), {}, None),
    ("fabs", (V,), {}, None),
    ("spacing", (V,), {}, None),
    ("logaddexp2", (V, V[::-1].copy()), {}, None),
    ("nan_to_num", (SPECIAL,), {}, None),
    ("nan_to_num", (SPECIAL,), {"nan": 1., "posinf": 2., "neginf": -2.}, None),
    ("nancumsum", (SPECIAL,), {}, None),
    ("nancumprod", (np.array([1., np.nan, 2., 3.], np.float32),), {}, None),
    ("angle", (CPLX,), {}, None),
    ("angle", (CPLX,), {"deg": True}, None),
    ("i0", (V,), {}, None),
    ("iscomplex", (CPLX.real.astype(np.complex64),), {}, None),
    ("isreal", (CPLX,), {}, None),
    ("packbits", (BITS,), {"axis": 1}, None),
    ("packbits", (BITS,), {"bitorder": "little"}, None),
    ("unpackbits", (U8,), {"axis": 0}, None),
    ("unpackbits", (U8,), {"count": 5, "bitorder": "little"}, None),
    ("bitwise_count", (I1,), {}, lambda x: np.bitwise_count(np.abs(x))),
    ("convolve", (V, W), {}, None),
    ("convolve", (W, V), {"mode": "same"}, None),
    ("convolve", (V, W), {"mode": "valid"}, None),
    ("correlate", (V, W), {}, None),
    ("correlate", (W, V), {"mode": "full"}, None),
    ("correlate", (CPLX, CPLX[:2]), {"mode": "same"}, None),
    ("vander", (W,), {}, None),
    ("vander", (W,), {"N": 4, "increasing": True}, None),
    ("polyval", (W, V), {}, None),
    ("polyadd", (W, V), {}, None),
    ("polysub", (W, V), {}, None),
    ("polymul", (W, V), {}, None),
    ("polyder", (V,), {"m": 2}, None),
    ("polyint", (W,), {"m": 2, "k": np.array([1., 2.], np.float32)}, None),
    ("poly", (W,), {}, None),
    ("polyfit", (np.arange(6.).astype(np.float32), V, 2), {}, None),
    ("cov", (F,), {}, None),
    ("cov", (F, F[::-1].copy()), {"rowvar": False, "ddof": 0}, None),
    ("cov", (F,), {"fweights": np.arange(1, 6), "aweights": np.arange(1., 6.)}, None),
    ("corrcoef", (F,), {}, None),
    ("bincount", (np.array([0, 1, 1, 5, 3]),), {}, None),
    ("bincount", (np.array([0, 1, 1, 5, 3]),), {"weights": V[:5], "minlength": 8}, None),
    ("digitize", (V, np.array([-1., 0., 1.], np.float32)), {}, None),
    ("digitize", (V, np.array([1., 0., -1.], np.float32)), {"right": True}, None),
    ("interp", (XI, XP, FP), {}, None),
    ("interp", (XI, XP, FP), {"left": -5., "right": 5.}, None),
    ("interp", (XI, XP, FP), {"period": 4.}, None),
    ("unwrap", (PH,), {}, None),
    ("histogram", (H,), {"bins": 7}, None),
    ("histogram", (H,), {"bins": 5, "range": (-1., 1.), "density": True}, None),
    ("histogram_bin_edges", (H,), {"bins": 4}, None),
    ("histogram2d", (H[:20], H[20:]), {"bins": 3}, None),
    ("histogramdd", (H.reshape(20, 2),), {"bins": (2, 3)}, None),
    ("bartlett", (7,), {}, None),
    ("blackman", (7,), {}, None),
    ("hamming", (6,), {}, None),
    ("hanning", (6,), {}, None),
    ("kaiser", (7, 3.), {}, None),
    ("diagflat", (F[:, :2],), {"k": 1}, None),
    ("trim_zeros", (np.array([0, 0, 1, 2, 0], np.int32),), {}, None),
    ("sort_complex", (V,), {}, None),
    ("astype", (V, np.int32), {}, lambda x, d: x.astype(d)),
    ("copy", (F,), {}, None),
]

_JIT_SKIP = {"trim_zeros", "bincount", "histogram_bin_edges", "histogram", "histogram2d",
             "histogramdd", "bartlett", "blackman", "hamming", "hanning", "kaiser", "polyfit",
             "astype"}


def _ids():
  seen = {}
  out = []
  for c in CASES:
    seen[c[0]] = seen.get(c[0], -1) + 1
    out.append(f"{c[0]}-{seen[c[0]]}")
  return out


def _flat(x):
  if isinstance(x, (tuple, list)):
    return [y for e in x for y in _flat(e)]
  return [x]


def _close(got, want, rtol=2e-4, atol=2e-5, check_dtype=False):
  got, want = _flat(got), _flat(want)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    g, w = np.asarray(g), np.asarray(w)
    assert g.shape == w.shape, (g.shape, w.shape)
    if check_dtype:
      assert g.dtype == w.dtype, (g.dtype, w.dtype)
    np.testing.assert_allclose(g.astype(w.dtype) if w.dtype != object else g, w,
                               rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("name,args,kwargs,ref", CASES, ids=_ids())
def test_against_numpy(name, args, kwargs, ref):
  ref = ref or getattr(np, name)
  got = getattr(jnp, name)(*args, **kwargs)
  with np.errstate(all="ignore"):
    want = ref(*args, **kwargs)
  if name in ("poly",) or name == "correlate":
    want = np.asarray(want)
  _close(got, want, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("name,args,kwargs,ref", CASES, ids=_ids())
def test_against_jax(name, args, kwargs, ref):
  jax = pytest.importorskip("jax")
  got = getattr(jnp, name)(*args, **kwargs)
  want = getattr(jax.numpy, name)(*args, **kwargs)
  _close(got, want, rtol=2e-3, atol=2e-4, check_dtype=True)


def _top_jit_names(jaxpr):
  return [e.params.get("name") for e in jaxpr.eqns if e.primitive.name in ("jit", "pjit")]


@pytest.mark.parametrize("name,args,kwargs,ref",
                         [c for c in CASES if c[0] not in _JIT_SKIP],
                         ids=[i for i, c in zip(_ids(), CASES) if c[0] not in _JIT_SKIP])
def test_jit_matches_eager_and_jax_names(name, args, kwargs, ref):
  arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

  def f(*arrs, mod):
    full = list(args)
    for i, a in zip(arrays, arrs):
      full[i] = a
    return getattr(mod, name)(*full, **kwargs)

  eager = f(*(args[i] for i in arrays), mod=jnp)
  jitted = jaxlite.jit(lambda *a: f(*a, mod=jnp))(*(args[i] for i in arrays))
  _close(jitted, eager, rtol=1e-5, atol=1e-6, check_dtype=True)
  jax = pytest.importorskip("jax")
  mine = jaxlite.make_jaxpr(lambda *a: f(*a, mod=jnp))(*(args[i] for i in arrays))
  theirs = jax.make_jaxpr(lambda *a: f(*a, mod=jax.numpy))(*(args[i] for i in arrays))
  assert _top_jit_names(mine.jaxpr) == _top_jit_names(theirs.jaxpr)


GRAD_CASES = [
    ("cov", lambda m, x: m.cov(x).sum(), F),
    ("corrcoef", lambda m, x: (m.corrcoef(x) ** 2).sum(), F),
    ("unwrap", lambda m, x: (m.unwrap(x) ** 2).sum(), PH),
    ("gradient", lambda m, x: (m.gradient(x, axis=1) ** 2).sum(), F),
    ("cross", lambda m, x: m.cross(x[:, :3], x[:, 2:]).sum(), F),
    ("polyval", lambda m, x: m.polyval(x, 0.7), V),
    ("correlate", lambda m, x: (m.correlate(x, x[:3], "same") ** 2).sum(), V),
    ("logaddexp2", lambda m, x: m.logaddexp2(x, 0.5).sum(), V),
    ("histogram", lambda m, x: (m.histogram(H[:6], 3, weights=x)[0] ** 2).sum(), V),
]


@pytest.mark.parametrize("name,fn,x", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_against_jax(name, fn, x):
  jax = pytest.importorskip("jax")
  mine = jaxlite.grad(lambda v: fn(jnp, v))(x)
  theirs = jax.grad(lambda v: fn(jax.numpy, v))(x)
  _close(mine, theirs, rtol=1e-3, atol=1e-4, check_dtype=True)


def test_grad_through_compositions():
  g = jaxlite.grad(lambda x: jnp.trapezoid(x ** 2))(jnp.arange(4.))
  np.testing.assert_allclose(g, [0., 2., 4., 3.])
  g = jaxlite.grad(lambda a: jnp.convolve(a, jnp.array([1., 2.])).sum())(jnp.ones(3))
  np.testing.assert_allclose(g, [3., 3., 3.])
  g = jaxlite.grad(lambda x: jnp.interp(x, jnp.array([0., 1., 3.]), jnp.array([1., 2., -1.])))(2.)
  np.testing.assert_allclose(g, -1.5)


def test_roots_and_polydiv():
  r = jnp.roots(np.array([0, 1., -3, 2, 0], np.float32))
  np.testing.assert_allclose(np.sort_complex(np.asarray(r)), [0, 1, 2], atol=1e-5)
  q, rem = jnp.polydiv(np.array([1., 2, 3]), np.array([1., 1]))
  np.testing.assert_allclose(q, [1., 1.])
  np.testing.assert_allclose(rem, [0., 0., 2.])  # JAX keeps u's length


def test_bincount_length_under_jit():
  out = jaxlite.jit(lambda x: jnp.bincount(x, length=4))(np.array([1, 2, 2, 7]))
  np.testing.assert_array_equal(out, [0, 1, 2, 0])


def test_functional_helpers():
  x = F.reshape(3, 5, 1) * np.ones((1, 1, 2), np.float32)
  np.testing.assert_allclose(jnp.apply_along_axis(jnp.sum, 1, x), np.apply_along_axis(np.sum, 1, x),
                             rtol=1e-5)
  np.testing.assert_allclose(jnp.apply_over_axes(jnp.sum, x, [0, 2]),
                             np.apply_over_axes(np.sum, x, [0, 2]), rtol=1e-5)
  dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
  np.testing.assert_allclose(dot(F, V[:5]), F @ V[:5], rtol=1e-5)
  add1 = jnp.vectorize(lambda a, b: a * b + 1)
  np.testing.assert_allclose(add1(W, V[:2, None]), W * V[:2, None] + 1, rtol=1e-6)
  np.testing.assert_array_equal(jnp.fromfunction(lambda i, j: i + 2 * j, (2, 3)),
                                np.fromfunction(lambda i, j: i + 2 * j, (2, 3)))


def test_constructors_and_index_tricks():
  np.testing.assert_array_equal(jnp.frombuffer(b"\x01\x02", dtype=jnp.uint8), [1, 2])
  np.testing.assert_array_equal(jnp.fromiter(range(3), int), [0, 1, 2])
  np.testing.assert_array_equal(jnp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3])
  np.testing.assert_allclose(jnp.mgrid[0:1:5j], np.mgrid[0:1:5j])
  for a, b in zip(jnp.ogrid[0:2, 0:3], np.ogrid[0:2, 0:3]):
    np.testing.assert_array_equal(a, b)
  assert jnp.s_[1:2] == np.s_[1:2] and jnp.index_exp[1] == (1,)
  np.testing.assert_array_equal(jnp.fill_diagonal(jnp.zeros((3, 3)), 5., inplace=False),
                                np.eye(3) * 5)
  with pytest.raises(NotImplementedError):
    jnp.fill_diagonal(jnp.zeros((3, 3)), 5.)
  for a, b in zip(jnp.mask_indices(3, jnp.triu), np.mask_indices(3, np.triu)):
    np.testing.assert_array_equal(a, b)
  assert jnp.einsum_path("ij,jk", F, F.T)[0] == ["einsum_path", (0, 1)]


def test_predicates_and_aliases(tmp_path):
  assert jnp.iscomplexobj(CPLX) and not jnp.iscomplexobj(V) and jnp.isrealobj(V)
  assert jnp.isscalar(3) and jnp.isscalar(jnp.ones(())) and not jnp.isscalar(jnp.ones(2))
  assert not jnp.isscalar([1]) and jnp.iterable([1]) and not jnp.iterable(1)
  assert jnp.single(1).dtype == np.float32 and jnp.csingle == np.complex64
  assert jnp.object_ is np.object_ and issubclass(jnp.ComplexWarning, Warning)
  assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
  assert jnp.array_str(jnp.ones(2)) == np.array_str(np.ones(2, np.float32))
  np.save(tmp_path / "a.npy", V)
  loaded = jnp.load(tmp_path / "a.npy")
  assert isinstance(loaded, jaxlite.Array)
  np.testing.assert_array_equal(loaded, V)
  pytest.importorskip("ml_dtypes")
  assert np.dtype(jnp.float8_e4m3.dtype).name == "float8_e4m3"
  assert jnp.int2.dtype.itemsize == 1


def test_user_ufunc_matches_jax():
  jax = pytest.importorskip("jax")
  fn = lambda a, b: a * b + 1
  mine = jnp.frompyfunc(fn, 2, 1, identity=0)
  theirs = jax.numpy.frompyfunc(fn, 2, 1, identity=0)
  x = F[:2, :3]
  _close(mine(x, 2.), theirs(x, 2.), check_dtype=True)
  _close(mine.reduce(x, axis=1), theirs.reduce(x, axis=1), check_dtype=True)
  _close(mine.reduce(x, initial=2.), theirs.reduce(x, initial=2.), check_dtype=True)
  _close(jaxlite.jit(mine.reduce)(x), theirs.reduce(x), check_dtype=True)
  _close(mine.accumulate(x, axis=1), theirs.accumulate(x, axis=1), check_dtype=True)
  _close(mine.outer(x[0], x[1]), theirs.outer(x[0], x[1]), check_dtype=True)
  _close(mine.at(x, (0, 1), 3., inplace=False), theirs.at(x, (0, 1), 3., inplace=False))
  with pytest.raises(NotImplementedError):
    mine.at(x, 0, 1.)


def test_no_missing_names():
  jax = pytest.importorskip("jax")
  missing = [n for n in dir(jax.numpy) if not n.startswith("_") and not hasattr(jnp, n)]
  assert missing == []


@pytest.mark.parametrize("indices, axis", [([0, 2], 1), ([0, 2, 1, 3], 1), ([1, 0], 0),
                                           ([3, 3, 0], 1)])
def test_frompyfunc_reduceat_matches_numpy(indices, axis):
  """Segments indices[j]:indices[j+1] reduce; an empty one (start >= end) is a[start]."""
  a = np.arange(1., 13.).reshape(3, 4)
  add = jnp.frompyfunc(jnp.add, 2, 1, identity=0)
  np.testing.assert_allclose(np.asarray(add.reduceat(a, np.array(indices), axis=axis)),
                             np.add.reduceat(a, indices, axis=axis))
  traced = jax.jit(lambda x, i: add.reduceat(x, i, axis=axis))(a, np.array(indices))
  np.testing.assert_allclose(np.asarray(traced), np.add.reduceat(a, indices, axis=axis))


def test_frompyfunc_reduceat_matches_jax_for_a_non_numpy_function():
  real = oracle()
  f = lambda x, y: x * y + 1  # noqa: E731
  a, idx = np.arange(1., 13.).reshape(3, 4), np.array([0, 2, 1, 3])
  np.testing.assert_allclose(
      np.asarray(jnp.frompyfunc(f, 2, 1, identity=0).reduceat(a, idx, axis=1)),
      np.asarray(real.numpy.frompyfunc(f, 2, 1, identity=0).reduceat(a, idx, axis=1)))


@pytest.mark.parametrize("kwargs", [dict(axis=0), dict(axis=1, initial=2.),
                                    dict(axis=None, initial=1.), dict(axis=1, keepdims=True)])
def test_frompyfunc_reduce_with_where_matches_jax(kwargs):
  real = oracle()
  f = lambda x, y: x * y + 1  # noqa: E731
  a = np.arange(1., 13.).reshape(3, 4)
  where = (a % 3) != 0
  np.testing.assert_allclose(
      np.asarray(jnp.frompyfunc(f, 2, 1, identity=0).reduce(a, where=where, **kwargs)),
      np.asarray(real.numpy.frompyfunc(f, 2, 1, identity=0).reduce(a, where=where, **kwargs)))


def test_frompyfunc_reduce_with_where_matches_numpy():
  a = np.arange(1., 13.).reshape(3, 4)
  add = jnp.frompyfunc(jnp.add, 2, 1, identity=0)
  np.testing.assert_allclose(np.asarray(add.reduce(a, axis=1, where=(a % 3) != 0, initial=0.)),
                             np.add.reduce(a, axis=1, where=(a % 3) != 0))
  with pytest.raises(NotImplementedError, match="out argument"):
    add.reduce(a, out=np.zeros(4))
