"""jnp reductions, products, creation and sorting: values against NumPy, result dtypes and weak
types against JAX's rules (and real JAX where installed), printed jaxprs, jit/eager agreement."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp

RNG = np.random.default_rng(1)


def _data(shape, dtype):
  if np.dtype(dtype) == np.bool_:
    return RNG.random(shape) > 0.5
  if np.dtype(dtype).kind in "iu":
    return RNG.integers(0, 5, shape).astype(dtype)
  return RNG.normal(size=shape).astype(dtype)


def _check(got, ref, rtol=1e-5):
  got = np.asarray(got)
  assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
  np.testing.assert_allclose(got.astype(np.float64), np.asarray(ref, np.float64), rtol=rtol,
                             atol=1e-5)


# --- reductions --------------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax",
              "argmin", "ptp", "median", "count_nonzero", "nansum", "nanprod", "nanmax",
              "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin", "nanmedian"]
AXES = [None, 0, 1, -1, (0, 1)]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reductions_match_numpy(name, dtype):
  x = _data((3, 4), dtype)
  if dtype == np.float32 and name.startswith("nan"):
    x[0, 1] = x[2, 3] = np.nan
  for axis in AXES:
    if name in ("argmax", "argmin", "nanargmax", "nanargmin") and isinstance(axis, tuple):
      continue
    ref = getattr(np, name)(x, axis=axis)
    got = getattr(jnp, name)(x, axis=axis)
    _check(got, ref)
    if name not in ("all", "any"):
      _check(jax.jit(lambda v: getattr(jnp, name)(v, axis=axis))(x), ref)
    if name in ("sum", "max", "mean", "var", "argmax", "all"):
      kept = getattr(jnp, name)(x, axis=axis, keepdims=True)
      _check(kept, getattr(np, name)(x, axis=axis, keepdims=True))


@pytest.mark.parametrize("expr,dtype,weak", [
    (lambda: jnp.sum(jnp.ones(3, jnp.int8)), np.int32, False),
    (lambda: jnp.sum(jnp.ones(3, bool)), np.int32, False),
    (lambda: jnp.sum(jnp.ones(3, jnp.uint8)), np.uint32, False),
    (lambda: jnp.sum(jnp.array(1.0)), np.float32, False),
    (lambda: jnp.sum(jnp.ones(3, jnp.int8), dtype=jnp.int8), np.int8, False),
    (lambda: jnp.prod(jnp.ones(3, bool)), np.int32, False),
    (lambda: jnp.max(jnp.array(1.0)), np.float32, False),
    (lambda: jnp.min(jnp.ones(3, bool)), np.bool_, False),
    (lambda: jnp.mean(jnp.arange(4)), np.float32, False),
    (lambda: jnp.mean(jnp.ones(3, jnp.float16)), np.float16, False),
    (lambda: jnp.mean(jnp.ones(3, bool)), np.float32, False),
    (lambda: jnp.var(jnp.ones(3, jnp.int8)), np.float32, False),
    (lambda: jnp.var(jnp.ones(3, jnp.complex64)), np.float32, False),
    (lambda: jnp.argmax(jnp.ones(3)), np.int32, False),
    (lambda: jnp.cumsum(jnp.ones(3, jnp.int8)), np.int8, False),
    (lambda: jnp.cumsum(jnp.ones(3, bool)), np.int32, False),
    (lambda: jnp.count_nonzero(jnp.ones(3)), np.int32, False),
    (lambda: jnp.all(jnp.ones(3)), np.bool_, False),
    (lambda: jnp.arange(5), np.int32, False),
    (lambda: jnp.arange(5.0), np.float32, False),
    (lambda: jnp.linspace(0, 1, 5), np.float32, False),
    (lambda: jnp.eye(3), np.float32, False),
    (lambda: jnp.dot(jnp.ones(3, jnp.int32), jnp.ones(3)), np.float32, False),
    (lambda: jnp.ones((2, 2), jnp.int8) @ jnp.ones((2, 2), jnp.int8), np.int8, False),
])
def test_result_dtypes(expr, dtype, weak):
  out = expr()
  assert out.dtype == np.dtype(dtype)
  assert out.weak_type == weak


def test_where_initial_and_empty():
  x = _data((3, 4), np.float32)
  mask = x > 0
  _check(jnp.sum(x, where=mask), np.sum(x, where=mask))
  _check(jnp.mean(x, axis=1, where=mask), np.mean(x, axis=1, where=mask))
  _check(jnp.max(x, axis=0, initial=0.5), np.max(x, axis=0, initial=0.5))
  _check(jnp.max(x, where=mask, initial=-1.0), np.max(x, where=mask, initial=-1.0))
  _check(jnp.all(x, where=mask), np.all(x, where=mask))
  _check(jnp.sum(x, initial=1.0), x.sum() + 1)
  with pytest.raises(ValueError, match="zero-size array to reduction operation max which has "
                                       "no identity"):
    jnp.max(jnp.ones(0))
  with pytest.raises(ValueError, match="reduction operation max does not have an identity"):
    jnp.max(x, where=mask)
  with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
    jnp.sum(x, axis=2)
  with pytest.raises(ValueError, match=r"duplicate value in 'axis': \(0, 0\)"):
    jnp.sum(x, axis=(0, 0))
  with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments"):
    jnp.sum([1, 2])
  assert np.isnan(float(jnp.mean(jnp.ones(0))))


def test_var_std_ddof_and_cumulative():
  x = _data((4, 5), np.float32)
  for ddof in (0, 1):
    _check(jnp.var(x, axis=0, ddof=ddof), np.var(x, axis=0, ddof=ddof))
    _check(jnp.std(x, ddof=ddof), np.std(x, ddof=ddof))
  _check(jnp.var(x, correction=1), np.var(x, ddof=1))
  assert np.isnan(float(jnp.var(jnp.ones(1), ddof=1)))
  for fn in ("cumsum", "cumprod"):
    for axis in (None, 0, 1):
      _check(getattr(jnp, fn)(x, axis=axis), getattr(np, fn)(x, axis=axis), rtol=1e-4)
  _check(jnp.cumulative_sum(x[0], include_initial=True), np.concatenate([[0], np.cumsum(x[0])]))


def test_quantiles_average_logsumexp():
  x = _data((5, 6), np.float32)
  q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)
  for method in ("linear", "lower", "higher", "midpoint", "nearest"):
    for axis in (None, 0, 1):
      _check(jnp.quantile(x, q, axis=axis, method=method),
             np.quantile(x, q, axis=axis, method=method))
  _check(jnp.percentile(x, 30.0, axis=1), np.percentile(x, 30.0, axis=1))
  _check(jnp.median(x, axis=0, keepdims=True), np.median(x, axis=0, keepdims=True))
  y = x.copy()
  y[1, 2] = np.nan
  _check(jnp.nanquantile(y, 0.3, axis=1), np.nanquantile(y, 0.3, axis=1))
  assert np.isnan(np.asarray(jnp.median(y, axis=1))[1])
  w = np.abs(_data((6,), np.float32)) + 0.1
  _check(jnp.average(x, axis=1, weights=w), np.average(x, axis=1, weights=w))
  avg, total = jnp.average(x, axis=0, returned=True)
  _check(total, np.full(6, 5.0))
  from jaxlite._src.numpy.reductions import logsumexp
  _check(logsumexp(x, axis=1), np.log(np.exp(x.astype(np.float64)).sum(1)))
  big = np.array([1000.0, 1000.0], np.float32)
  _check(logsumexp(big), 1000 + np.log(2))


# --- products ----------------------------------------------------------------------------------

MATMULS = [((3, 4), (4, 5)), ((4,), (4,)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
           ((1, 3, 4), (2, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))]


@pytest.mark.parametrize("sa,sb", MATMULS)
def test_matmul_and_operator(sa, sb):
  a, b = _data(sa, np.float32), _data(sb, np.float32)
  _check(jnp.matmul(a, b), np.matmul(a, b))
  _check(jnp.asarray(a) @ b, a @ b)
  _check(jax.jit(jnp.matmul)(a, b), np.matmul(a, b))


EINSUMS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
           ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]),
           ("ij,ij->i", [(3, 4), (3, 4)]), ("i,j->ij", [(3,), (4,)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...j,jk->...k", [(2, 3, 4), (4, 5)]),
           ("ij,jk", [(3, 4), (4, 5)]), ("ijk->kji", [(2, 3, 4)]), ("iij->j", [(3, 3, 2)]),
           # size-1 labels broadcast against the other operands' sizes (NumPy and JAX agree)
           ("ij,jk->ik", [(2, 1), (3, 4)]), ("bij,bjk->bik", [(2, 3, 1), (1, 3, 5)]),
           ("ij,kj->ik", [(3, 2), (2, 1)]), ("i,i->", [(1,), (4,)]), ("ij,jk", [(2, 1), (3, 4)])]


@pytest.mark.parametrize("spec,shapes", EINSUMS)
def test_einsum(spec, shapes):
  ops = [_data(s, np.float32) for s in shapes]
  _check(jnp.einsum(spec, *ops), np.einsum(spec, *ops), rtol=1e-4)


EINSUM_SUBLISTS = [  # einsum's interleaved form: operand, labels, ..., [output labels]
    ([(2, 3), [0, 1], (3, 4), [1, 2], [0, 2]]), ([(2, 3), [0, 1], (3, 4), [1, 2]]),
    ([(2, 3, 4), [Ellipsis, 1, 2], (4, 5), [2, 3]]), ([(3, 3), [0, 0], []]),
    ([(2, 1), [0, 1], (3, 4), [1, 2], [0, 2]])]


@pytest.mark.parametrize("args", EINSUM_SUBLISTS, ids=str)
def test_einsum_interleaved_sublists(args):
  args = [_data(a, np.float32) if isinstance(a, tuple) else a for a in args]
  _check(jnp.einsum(*args), np.einsum(*args), rtol=1e-4)
  arrays = [k for k, a in enumerate(args) if isinstance(a, np.ndarray)]

  def with_arrays(*ops):
    full = list(args)
    for k, o in zip(arrays, ops):
      full[k] = o
    return jnp.einsum(*full)
  _check(jax.jit(with_arrays)(*[args[k] for k in arrays]), np.einsum(*args), rtol=1e-4)


def test_einsum_sublist_bad_label():
  with pytest.raises(TypeError, match="subscript labels must be integers"):
    jnp.einsum(np.ones((2, 2)), [0, "a"])


def test_other_products():
  a, b = _data((3, 4), np.float32), _data((4, 5), np.float32)
  _check(jnp.dot(a, b), np.dot(a, b))
  d3, d4 = _data((2, 3, 4), np.float32), _data((5, 4, 6), np.float32)
  _check(jnp.dot(d3, d4), np.dot(d3, d4))
  _check(jnp.dot(2.0, a), 2 * a)
  _check(jnp.vdot(a, a), np.vdot(a, a))
  _check(jnp.inner(a, a), np.inner(a, a))
  _check(jnp.outer(a[0], b[0]), np.outer(a[0], b[0]))
  _check(jnp.tensordot(a, b, 1), np.tensordot(a, b, 1))
  _check(jnp.tensordot(a, a, ([0], [0])), np.tensordot(a, a, ([0], [0])))
  _check(jnp.kron(a, b), np.kron(a, b))
  _check(jnp.matvec(a, b[:, 0]), a @ b[:, 0])
  _check(jnp.vecmat(a[:, 0], a), a[:, 0] @ a)
  for k in (-1, 0, 2):
    _check(jnp.trace(a, k), np.trace(a, k))
    _check(jnp.diagonal(a, k), np.diagonal(a, k))
    _check(jnp.diag(a[0], k), np.diag(a[0], k))
    _check(jnp.diag(a, k), np.diag(a, k))
  c = _data((2, 3, 4), np.float32)
  _check(jnp.diagonal(c, 0, 1, 2), np.diagonal(c, 0, 1, 2))
  _check(jnp.trace(c, 0, 1, 2), np.trace(c, 0, 1, 2))


# --- creation ----------------------------------------------------------------------------------

def test_creation():
  _check(jnp.arange(0, 1, 0.25), np.arange(0, 1, 0.25))
  _check(jnp.arange(1, 7, 2), np.arange(1, 7, 2))
  _check(jnp.arange(2.5), np.arange(2.5))
  _check(jax.jit(lambda: jnp.arange(1, 7, 2))(), np.arange(1, 7, 2))
  _check(jnp.linspace(0, 1, 5), np.linspace(0, 1, 5))
  _check(jnp.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False))
  _check(jnp.linspace(np.zeros(2), np.ones(2), 3, axis=1), np.linspace(np.zeros(2),
                                                                       np.ones(2), 3, axis=1))
  vals, step = jnp.linspace(0.0, 1.0, 3, retstep=True)
  assert float(step) == 0.5
  _check(jnp.logspace(0.0, 2.0, 3), np.logspace(0, 2, 3), rtol=1e-5)
  _check(jnp.geomspace(1.0, 100.0, 3), np.geomspace(1, 100, 3), rtol=1e-5)
  for k in (-1, 0, 1):
    _check(jnp.eye(3, 4, k), np.eye(3, 4, k))
    _check(jax.jit(lambda: jnp.eye(3, 4, k))(), np.eye(3, 4, k))
    _check(jnp.tri(3, 4, k), np.tri(3, 4, k))
    x = _data((2, 3, 4), np.float32)
    _check(jnp.tril(x, k), np.tril(x, k))
    _check(jnp.triu(x, k), np.triu(x, k))
  _check(jnp.identity(2), np.identity(2))
  for ref, got in zip(np.meshgrid(np.arange(2), np.arange(3)),
                      jnp.meshgrid(jnp.arange(2), jnp.arange(3))):
    _check(got, ref)
  for ref, got in zip(np.meshgrid(np.arange(2), np.arange(3), indexing="ij"),
                      jnp.meshgrid(jnp.arange(2), jnp.arange(3), indexing="ij")):
    _check(got, ref)


def test_arange_traced_bounds_raise():
  with pytest.raises(jax.errors.ConcretizationTypeError, match="jnp.arange argument 'stop'"):
    jax.jit(lambda n: jnp.arange(n))(3)


# --- sorting and comparisons -------------------------------------------------------------------

def test_sorting():
  x = np.array([3.0, np.nan, 1.0, 1.0, -0.0, 0.0, 2.0], np.float32)
  _check(jnp.sort(x), np.sort(x))
  np.testing.assert_array_equal(np.asarray(jnp.argsort(x)), np.argsort(x, kind="stable"))
  np.testing.assert_array_equal(np.asarray(jnp.argsort(x, descending=True)),
                                [1, 0, 6, 2, 3, 4, 5])
  m = _data((3, 5), np.float32)
  for axis in (None, 0, 1):
    _check(jnp.sort(m, axis=axis), np.sort(m, axis=axis))
    np.testing.assert_array_equal(np.asarray(jnp.argsort(m, axis=axis)),
                                  np.argsort(m, axis=axis, kind="stable"))
  keys = (np.array([1, 2, 1, 2, 0]), np.array([0, 0, 1, 1, 1]))
  np.testing.assert_array_equal(np.asarray(jnp.lexsort(keys)), np.lexsort(keys))
  a = np.array([1.0, 2.0, 2.0, 3.0], np.float32)
  v = np.array([0.0, 2.0, 2.5, 5.0, np.nan], np.float32)
  for side in ("left", "right"):
    np.testing.assert_array_equal(np.asarray(jnp.searchsorted(a, v, side=side)),
                                  np.searchsorted(a, v, side=side))
  _check(jnp.partition(m[0], 2)[:3], np.sort(np.partition(m[0], 2)[:3]))


def test_clip_isclose():
  x = _data((3, 4), np.float32)
  _check(jnp.clip(x, -0.5, 0.5), np.clip(x, -0.5, 0.5))
  _check(jnp.clip(x, min=0.0), np.clip(x, 0.0, None))
  with pytest.warns(DeprecationWarning):
    _check(jnp.clip(x, a_min=0.0, a_max=0.2), np.clip(x, 0.0, 0.2))
  y = np.array([1.0, np.nan, np.inf, 1.0], np.float32)
  z = np.array([1.000001, np.nan, np.inf, 2.0], np.float32)
  np.testing.assert_array_equal(np.asarray(jnp.isclose(y, z)), np.isclose(y, z))
  np.testing.assert_array_equal(np.asarray(jnp.isclose(y, z, equal_nan=True)),
                                np.isclose(y, z, equal_nan=True))
  assert bool(jnp.allclose(x, x + 1e-7)) and not bool(jnp.allclose(x, x + 1))
  assert bool(jnp.array_equal(x, x)) and not bool(jnp.array_equal(x, x[:2]))
  assert bool(jnp.array_equiv(np.ones(3), np.ones((2, 3))))


# --- printed jaxprs against real JAX -----------------------------------------------------------

PRINTED = {
    "sum": lambda x: jnp.sum(x),
    "sum_axis_keep": lambda x: x.sum(axis=1, keepdims=True),
    "mean0": lambda x: jnp.mean(x, axis=0),
    "max0": lambda x: jnp.max(x, axis=0),
    "max_initial": lambda x: jnp.max(x, initial=0.0),
    "argmax": lambda x: jnp.argmax(x),
    "argmin_keep": lambda x: jnp.argmin(x, 1, keepdims=True),
    "cumsum": lambda x: jnp.cumsum(x),
    "cumsum1": lambda x: jnp.cumsum(x, 1),
    "cumprod1": lambda x: jnp.cumprod(x, 1),
    "matmul": lambda x: x @ x.T,
    "einsum": lambda x: jnp.einsum("ij,kj->ik", x, x),
    "einsum_bij": lambda x: jnp.einsum("bij,bjk->bik", x[None], x.T[None]),
    "dot_vec": lambda x: jnp.dot(x[0], x[0]),
    "sort": lambda x: jnp.sort(x),
    "argsort": lambda x: jnp.argsort(x),
    "clip": lambda x: jnp.clip(x, 0.0, 1.0),
    "clip_min": lambda x: jnp.clip(x, min=0),
    "arange": lambda x: jnp.arange(3.0),
    "arange_step": lambda x: jnp.arange(1, 7, 2),
    "eye": lambda x: jnp.eye(3),
    "tri": lambda x: jnp.tri(3),
    "ptp": lambda x: jnp.ptp(x, 0),
    "sum_f16": lambda x: jnp.sum(x.astype(jnp.float16)),
    "mean_where": lambda x: jnp.mean(x, where=x > 0),
    "all_where": lambda x: jnp.all(x, where=x > 0),
    "count_nonzero": lambda x: jnp.count_nonzero(x, 0),
    "tril": lambda x: jnp.tril(x),
    "kron": lambda x: jnp.kron(x[0], x[0]),
}


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_printed_jaxprs_match_jax(name):
  real_jax = pytest.importorskip("jax")
  pytest.importorskip("jaxlite._src.base.pretty_print")
  import types
  fn = PRINTED[name]
  glob = dict(fn.__globals__)
  glob["jnp"] = real_jax.numpy
  real_fn = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)
  x = np.ones((3, 4), np.float32)
  assert str(jax.make_jaxpr(fn)(x)) == str(real_jax.make_jaxpr(real_fn)(x))


def test_var_std_printed_like_jax():
  real_jax = pytest.importorskip("jax")
  x = np.ones((3, 4), np.float32)
  ours = str(jax.make_jaxpr(lambda v: jnp.var(v, axis=0))(x))
  theirs = str(real_jax.make_jaxpr(lambda v: real_jax.numpy.var(v, axis=0))(x))
  assert ours == theirs


@pytest.mark.parametrize("expr", [
    "jnp.sum(x, axis=0)", "jnp.mean(x)", "jnp.var(x, ddof=1)", "jnp.argmax(x, 1)",
    "jnp.cumsum(x.astype(bool))", "jnp.median(x, axis=1)", "x @ x.T", "jnp.einsum('ij->j', x)",
    "jnp.quantile(x, 0.3)", "jnp.nanmax(x)", "jnp.prod(x.astype(jnp.int8))",
])
def test_values_and_types_match_real_jax(expr):
  real_jax = pytest.importorskip("jax")
  x_np = _data((3, 4), np.float32)
  ours = eval(expr, {"jnp": jnp, "x": jnp.asarray(x_np)})
  theirs = eval(expr, {"jnp": real_jax.numpy, "x": real_jax.numpy.asarray(x_np)})
  assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
  assert ours.weak_type == theirs.weak_type
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_arctan2_of_complex_inputs():
  """NumPy has no complex arctan2; JAX's is -i log((y + ix) / sqrt(x² + y²))."""
  rng = np.random.default_rng(7)
  x = (rng.standard_normal(16) + 1j * rng.standard_normal(16)).astype(np.complex64)
  y = (rng.standard_normal(16) + 1j * rng.standard_normal(16)).astype(np.complex64)
  x[:3], y[:3] = [0, 1j, 3], [0, 1, -2]
  x128, y128 = x.astype(np.complex128), y.astype(np.complex128)
  with np.errstate(all="ignore"):
    want = -1j * np.log((y128 + 1j * x128) / np.sqrt(x128 * x128 + y128 * y128))
  for got in (jnp.arctan2(x, y), jax.jit(jax.lax.atan2)(x, y)):
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-7, atol=1e-7)
  assert np.asarray(jnp.arctan2(x[2], y[2])).imag == 0.0  # real inputs stay exactly real
  assert np.isnan(np.asarray(jnp.arctan2(x[0], y[0]))).all()
  # holomorphic: d/dx atan2(x, y) = y / (x² + y²)
  g = jax.grad(lambda a: jnp.arctan2(a, 2.0 + 1j).real)(1.0 + 1j)
  np.testing.assert_allclose(complex(g), (2 + 1j) / ((1 + 1j) ** 2 + (2 + 1j) ** 2), rtol=1e-6)


def test_arctan2_of_complex_inputs_matches_jax():
  from conftest import oracle
  jax_ = oracle()
  rng = np.random.default_rng(8)
  x, y = (rng.standard_normal((2, 3, 5, 2)) @ np.array([1, 1j])).astype(np.complex64)
  np.testing.assert_allclose(np.asarray(jnp.arctan2(x, y)), np.asarray(jax_.numpy.arctan2(x, y)),
                             rtol=1e-6, atol=1e-6)
  ours, theirs = jax.make_jaxpr(jnp.arctan2)(x, 1.0), jax_.make_jaxpr(jax_.numpy.arctan2)(x, 1.0)
  assert str(ours) == str(theirs)
