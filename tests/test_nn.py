"""jax.nn: activations, normalizations and one_hot by value, dtype, gradient and printed form
against NumPy formulas and real JAX; initializers draw for draw against JAX."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp

from conftest import oracle, x64

RNG = np.random.default_rng(0)
X = np.concatenate([RNG.standard_normal(24) * 3,
                    [0, -1, 1, 6, -3, 3, 1e4, -1e4, -0.5, 0.5]]).astype(np.float32)


def _sigmoid(x):
  return 1 / (1 + np.exp(-x))


def _softplus(x):
  return np.logaddexp(x, 0)


def _erf(x):
  from math import erf
  return np.vectorize(erf)(x)


# name -> NumPy reference in float64
REFERENCE = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": _sigmoid,
    "silu": lambda x: x * _sigmoid(x),
    "swish": lambda x: x * _sigmoid(x),
    "log_sigmoid": lambda x: -_softplus(-x),
    "softplus": _softplus,
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "celu": lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772
                                                    * np.expm1(np.minimum(x, 0))),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: 0.5 * np.clip(x + 1, 0, 2),
    # In float32 like the library: the large negative inputs cancel to 0 there.
    "squareplus": lambda x: (x.astype(np.float32) + np.sqrt(x.astype(np.float32) ** 2 + 4)) / 2,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "tanh": np.tanh,
    "identity": lambda x: x,
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "softmax": lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
    "log_softmax": lambda x: x - x.max() - np.log(np.exp(x - x.max()).sum()),
    "logsumexp": lambda x: np.log(np.exp(x - x.max()).sum()) + x.max(),
    "standardize": lambda x: (x - x.mean()) / np.sqrt(x.var() + 1e-5),
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_values_and_dtypes(name):
  got = getattr(jax.nn, name)(X)
  want = REFERENCE[name](X.astype(np.float64))
  assert got.dtype == np.float32 and got.shape == want.shape
  with np.errstate(all="ignore"):
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-6)


def test_gelu_exact_glu_and_log1mexp():
  np.testing.assert_allclose(np.asarray(jax.nn.gelu(X, approximate=False)),
                             0.5 * X * (1 + _erf(X / np.sqrt(2))), rtol=2e-5, atol=1e-6)
  y = RNG.standard_normal((3, 4)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(jax.nn.glu(y)), y[:, :2] * _sigmoid(y[:, 2:]), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(jax.nn.glu(y.T, axis=0)), (y[:, :2] * _sigmoid(y[:, 2:])).T,
                             rtol=1e-6)
  pos = np.array([1e-6, 0.1, 0.69, 0.7, 5, 50], np.float32)
  np.testing.assert_allclose(np.asarray(jax.nn.log1mexp(pos)),
                             np.log(-np.expm1(-pos.astype(np.float64))), rtol=1e-5, atol=1e-7)


def test_axis_and_where_variants():
  y = RNG.standard_normal((3, 5)).astype(np.float32)
  mask = RNG.uniform(size=(3, 5)) > 0.3
  mask[:, 0] = True
  for axis in [0, 1, (0, 1)]:
    e = np.exp(y - y.max(axis=axis, keepdims=True))
    np.testing.assert_allclose(np.asarray(jax.nn.softmax(y, axis=axis)),
                               e / e.sum(axis=axis, keepdims=True), rtol=1e-5)
  sm = np.asarray(jax.nn.softmax(y, where=mask))
  assert np.all(sm[~mask] == 0)
  np.testing.assert_allclose(sm.sum(axis=-1), 1, rtol=1e-5)
  lsm = np.asarray(jax.nn.log_softmax(y, where=mask))
  assert np.all(lsm[~mask] == -np.inf)
  np.testing.assert_allclose(np.exp(lsm).sum(axis=-1), 1, rtol=1e-5)
  std = np.asarray(jax.nn.standardize(y, axis=0))
  np.testing.assert_allclose(std.mean(0), 0, atol=1e-5)
  np.testing.assert_allclose(np.asarray(jax.nn.logsumexp(y, axis=1, keepdims=True)),
                             np.log(np.exp(y).sum(1, keepdims=True)), rtol=1e-5)


def test_one_hot():
  x = np.array([0, 2, 5, -1, 3])
  np.testing.assert_array_equal(np.asarray(jax.nn.one_hot(x, 4)),
                                (x[:, None] == np.arange(4)).astype(np.float32))
  out = jax.nn.one_hot(np.array([[0, 2]]), 3, axis=0, dtype=jnp.int32)
  assert out.dtype == np.int32 and out.shape == (3, 1, 2)
  np.testing.assert_array_equal(np.asarray(out)[:, 0, :], [[1, 0], [0, 0], [0, 1]])
  assert jax.nn.one_hot(np.array([1.0, 2.0]), 3).dtype == np.float32


def test_matches_jax_values_dtypes_and_grads():
  jax_ = oracle()
  names = sorted(REFERENCE) + ["glu", "log1mexp", "logmeanexp"]
  y = RNG.standard_normal((4, 6)).astype(np.float32)
  for name in names:
    got, want = getattr(jax.nn, name)(y), getattr(jax_.nn, name)(y)
    assert got.dtype == want.dtype and got.shape == want.shape, name
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-6,
                               err_msg=name)
    if name in ("log1mexp",):
      continue
    weights = np.arange(float(want.shape[-1])) if want.ndim else 1.0
    ours_fn, theirs_fn = getattr(jax.nn, name), getattr(jax_.nn, name)
    g = jax.grad(lambda v, f=ours_fn, w=weights: jnp.sum(f(v) * w))(y)
    rg = jax_.grad(lambda v, f=theirs_fn, w=weights: jax_.numpy.sum(f(v) * w))(y)
    np.testing.assert_allclose(np.asarray(g), np.asarray(rg), rtol=1e-4, atol=1e-5,
                               err_msg=name)


def test_relu_derivative_at_zero_is_zero():
  x = np.array([-1., 0., 2., 6., 7.], np.float32)
  np.testing.assert_array_equal(np.asarray(jax.grad(lambda v: jnp.sum(jax.nn.relu(v)))(x)),
                                [0, 0, 1, 1, 1])
  np.testing.assert_array_equal(np.asarray(jax.grad(lambda v: jnp.sum(jax.nn.relu6(v)))(x)),
                                [0, 0, 1, 0, 0])


def test_gradients_against_finite_differences():
  with x64():
    x = RNG.standard_normal(7) * 2
    t = RNG.standard_normal(7)
    for name in ["gelu", "silu", "softplus", "log_sigmoid", "elu", "celu", "selu", "mish",
                 "squareplus", "softmax", "log_softmax", "standardize", "logsumexp"]:
      fn = getattr(jax.nn, name)
      _, tout = jax.jvp(fn, (x,), (t,))
      fd = (np.asarray(fn(x + 1e-6 * t)) - np.asarray(fn(x - 1e-6 * t))) / 2e-6
      np.testing.assert_allclose(np.asarray(tout), fd, rtol=1e-6, atol=1e-8, err_msg=name)


def test_printed_forms_match_jax():
  jax_ = oracle()
  x = np.ones(3, np.float32)
  for name in ["relu", "relu6", "silu", "log_softmax", "elu", "leaky_relu", "gelu", "sigmoid",
               "softmax", "celu", "hard_tanh", "sparse_plus"]:
    ours = str(jax.make_jaxpr(getattr(jax.nn, name))(x))
    theirs = str(jax_.make_jaxpr(getattr(jax_.nn, name))(x))
    assert ours == theirs, name
  ours = str(jax.make_jaxpr(lambda i: jax.nn.one_hot(i, 4))(np.arange(3)))
  assert ours == str(jax_.make_jaxpr(lambda i: jax_.nn.one_hot(i, 4))(np.arange(3)))


def test_jit_names():
  x = np.ones(3, np.float32)
  for name in ["log_softmax", "silu", "softplus", "elu", "leaky_relu", "standardize"]:
    eqns = jax.make_jaxpr(getattr(jax.nn, name))(x).jaxpr.eqns
    assert [e.params["name"] for e in eqns if e.primitive.name == "jit"] == [name]


def _attention_operands():
  q = RNG.standard_normal((2, 5, 4, 8)).astype(np.float32)
  k = RNG.standard_normal((2, 7, 2, 8)).astype(np.float32)
  v = RNG.standard_normal((2, 7, 2, 8)).astype(np.float32)
  return q, k, v


_ATT_Q, _ATT_K, _ATT_V = _attention_operands()
ATTENTION_CASES = [  # (id, positional operands, keyword arguments)
    ("plain", (_ATT_Q, _ATT_K, _ATT_V), {}),
    ("bias", (_ATT_Q, _ATT_K, _ATT_V),
     dict(bias=RNG.standard_normal((2, 4, 5, 7)).astype(np.float32))),
    ("mask", (_ATT_Q, _ATT_K, _ATT_V), dict(mask=RNG.uniform(size=(2, 1, 5, 7)) > 0.2)),
    ("scale", (_ATT_Q, _ATT_K, _ATT_V), dict(scale=0.3)),
    ("causal", (_ATT_Q, _ATT_K[:, :5], _ATT_V[:, :5]), dict(is_causal=True)),
    ("window", (_ATT_Q, _ATT_K, _ATT_V), dict(local_window_size=(2, 1))),
    ("window-int", (_ATT_Q, _ATT_K, _ATT_V), dict(local_window_size=1)),
    ("seq-lengths", (_ATT_Q, _ATT_K, _ATT_V),
     dict(query_seq_lengths=np.array([3, 5], np.int32),
          key_value_seq_lengths=np.array([7, 2], np.int32))),
    ("kv-lengths-causal", (_ATT_Q, _ATT_K[:, :5], _ATT_V[:, :5]),
     dict(is_causal=True, key_value_seq_lengths=np.array([4, 1], np.int32))),
    ("residual", (_ATT_Q, _ATT_K, _ATT_V), dict(return_residual=True)),
    ("residual-masked", (_ATT_Q, _ATT_K, _ATT_V),
     dict(return_residual=True, mask=RNG.uniform(size=(2, 4, 5, 7)) > 0.5)),
    ("rank3", (_ATT_Q[0], _ATT_K[0], _ATT_V[0]), {}),
    ("rank2", (_ATT_Q[0, 0], _ATT_Q[1, 0], _ATT_Q[1, 1]), {}),
    ("bfloat16", tuple(a.astype(jnp.bfloat16) for a in (_ATT_Q, _ATT_K, _ATT_V)), {}),
    ("xla", (_ATT_Q, _ATT_K, _ATT_V), dict(implementation="xla")),
]


@pytest.mark.parametrize("args,kw", [c[1:] for c in ATTENTION_CASES],
                         ids=[c[0] for c in ATTENTION_CASES])
def test_dot_product_attention_matches_jax(args, kw):
  jax_ = oracle()
  ours = jax.nn.dot_product_attention(*args, **kw)
  theirs = jax_.nn.dot_product_attention(*args, **kw)
  for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
    assert a.shape == b.shape and a.dtype == b.dtype
    tol = 2e-2 if a.dtype == jnp.bfloat16 else 2e-5
    np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=tol,
                               atol=tol)


def test_dot_product_attention_grads_match_jax():
  jax_ = oracle()
  kw = dict(is_causal=True, query_seq_lengths=np.array([3, 5], np.int32))
  k, v = _ATT_K[:, :5], _ATT_V[:, :5]

  def loss(lib):
    return lambda q, k, v: lib.numpy.sum(lib.nn.dot_product_attention(q, k, v, **kw) ** 2)
  ours = jax.grad(loss(jax), argnums=(0, 1, 2))(_ATT_Q, k, v)
  theirs = jax_.grad(loss(jax_), argnums=(0, 1, 2))(_ATT_Q, k, v)
  for a, b in zip(ours, theirs):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


ATTENTION_ERRORS = [  # (keyword overrides or operands, JAX's message)
    (dict(value=_ATT_V[:, :6]), r"value shape should be \[2, 7, 2, 8\]"),
    (dict(query=_ATT_Q[..., :4]), r"query shape should be \[2, -1, -1, 8\]"),
    (dict(value=_ATT_V.astype(np.float16)), "value dtype should be float32"),
    (dict(query=np.ones((2, 5, 3, 8), np.float32)), "multiple of key/value heads, but got 3 vs 2"),
    (dict(mask=np.ones((2, 1, 5, 7), np.float32)), "mask dtype should be bool"),
    (dict(query_seq_lengths=np.array([3.0, 5.0])), "query_seq_lengths dtype should be int32"),
    (dict(key_value_seq_lengths=np.array([3], np.int32)),
     r"key_value_seq_lengths shape should be \[2\]"),
    (dict(implementation="cudnn-typo"), "Unsupported implementation option: cudnn-typo"),
]


@pytest.mark.parametrize("kw,message", ATTENTION_ERRORS, ids=[m for _, m in ATTENTION_ERRORS])
def test_dot_product_attention_bad_input(kw, message):
  args = {**dict(query=_ATT_Q, key=_ATT_K, value=_ATT_V), **kw}
  with pytest.raises(ValueError, match=message):
    jax.nn.dot_product_attention(**args)
  try:
    jax_ = oracle()
  except pytest.skip.Exception:
    return
  with pytest.raises(ValueError, match=message):
    jax_.nn.dot_product_attention(**args)


# --- initializers -----------------------------------------------------------------------------

INIT_CASES = [
    ("glorot_normal", (4, 5)), ("glorot_uniform", (4, 5)), ("xavier_normal", (3, 3, 8)),
    ("he_normal", (4, 5)), ("he_uniform", (6, 2)), ("kaiming_uniform", (2, 3, 4)),
    ("lecun_normal", (4, 5)), ("lecun_uniform", (4, 5)), ("orthogonal", (4, 5)),
    ("orthogonal", (6, 3)), ("orthogonal", (2, 3, 4)), ("delta_orthogonal", (3, 3, 4, 5)),
    ("normal", (4, 5)), ("uniform", (4, 5)), ("truncated_normal", (4, 5)),
]


@pytest.mark.parametrize("name, shape", INIT_CASES, ids=[f"{n}{s}" for n, s in INIT_CASES])
def test_initializers_draw_what_jax_draws(name, shape):
  jax_ = oracle()
  ours = getattr(jax.nn.initializers, name)()(jax.random.key(3), shape)
  theirs = getattr(jax_.nn.initializers, name)()(jax_.random.key(3), shape)
  assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
  np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def test_initializer_statistics_and_constants():
  key = jax.random.key(0)
  w = np.asarray(jax.nn.initializers.he_normal()(key, (400, 300)))
  assert abs(w.std() - np.sqrt(2 / 400)) < 0.01 * np.sqrt(2 / 400) * 10
  q = np.asarray(jax.nn.initializers.orthogonal()(key, (5, 3)))
  np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-5)
  w = np.asarray(jax.nn.initializers.variance_scaling(1.0, "fan_geo_avg", "uniform")(
      key, (50, 200), jnp.float32))
  assert np.abs(w).max() <= np.sqrt(3 / 100)
  np.testing.assert_array_equal(np.asarray(jax.nn.initializers.zeros(key, (2, 3))), 0)
  np.testing.assert_array_equal(np.asarray(jax.nn.initializers.ones(key, (2,), jnp.int32)), 1)
  c = jax.nn.initializers.constant(2.5)(key, (2, 2))
  assert c.dtype == np.float32 and float(c[0, 0]) == 2.5
  with pytest.raises(ValueError, match="invalid mode"):
    jax.nn.initializers.variance_scaling(1.0, "bad", "normal")(key, (2, 2))
  with pytest.raises(ValueError, match="at least a 2D shape"):
    jax.nn.initializers.orthogonal()(key, (3,))
  with pytest.raises(ValueError, match="Must be at least 2D"):
    jax.nn.initializers.lecun_normal()(key, (3,))
