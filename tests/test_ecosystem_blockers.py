"""Behaviour the ecosystem libraries rely on (issue 34's blockers), each against real JAX."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import configured, oracle


def _leaves_equal(a, b):
  la, lb = jax.tree.leaves(a), oracle().tree.leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    assert (tuple(x.shape), np.dtype(x.dtype), getattr(x, "weak_type", False)) == \
        (tuple(y.shape), np.dtype(y.dtype), getattr(y, "weak_type", False))


def test_eval_shape_passes_through_returned_shape_dtype_structs():
  """lineax's operators return ShapeDtypeStructs from functions it eval_shapes."""
  real = oracle()
  for m in (jax, real):
    sds = m.ShapeDtypeStruct((2,), np.int32)
    out = m.eval_shape(lambda x: (x, sds, {"a": x * 2}), 1.0)
    assert out[1] is sds or out[1] == sds
  _leaves_equal(
      jax.eval_shape(lambda x: (x, jax.ShapeDtypeStruct((3,), np.float32)), jnp.ones(2)),
      real.eval_shape(lambda x: (x, real.ShapeDtypeStruct((3,), np.float32)),
                      real.numpy.ones(2)))


@pytest.mark.parametrize("op", ["segment_sum", "segment_max", "segment_min", "segment_prod"])
def test_segment_ops_broadcast_scalar_data(op):
  """jraph counts nodes per graph with `segment_sum(1, ids)`: scalar data broadcast to ids."""
  real = oracle()
  ids = np.array([0, 2, 2, 1, 2])
  for data, kw in ((2.0, {}), (3, {}), (np.ones((1, 2), np.float32), {}),
                   (2.0, {"bucket_size": 2})):
    got = getattr(jax.ops, op)(data, ids, 4, **kw)
    want = getattr(real.ops, op)(data, ids, 4, **kw)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
  with pytest.raises(ValueError):
    getattr(jax.ops, op)(jnp.ones(2), ids, 3)


def test_tangent_avals_and_bind_params():
  real = oracle()
  for dt in map(np.dtype, (np.int32, np.float32, np.bool_)):
    a = jax.core.ShapedArray((2,), dt).at_least_vspace()
    b = real.core.ShapedArray((2,), dt).at_least_vspace()
    assert (a.shape, str(a.dtype)) == (b.shape, str(b.dtype))
    assert str(jax.core.ShapedArray((2,), dt).to_tangent_aval().dtype) == str(b.dtype)
  params = {"axes": (0,)}
  assert jax.lax.reduce_sum_p.get_bind_params(params) == \
      real.lax.reduce_sum_p.get_bind_params(params) == params
  # equinox rebinds a jaxpr's eqns through it: the result is bind's params
  jaxpr = jax.make_jaxpr(lambda x: jnp.sum(jnp.sin(x)))(jnp.ones(3))
  x = jnp.arange(3.)
  for eqn in jaxpr.eqns:
    x = eqn.primitive.bind(x, **eqn.primitive.get_bind_params(eqn.params))
  np.testing.assert_allclose(x, np.sum(np.sin(np.arange(3.))), rtol=1e-6)


def test_bool_flag_contexts_without_argument():
  """`with jax.enable_custom_prng():` (haiku) turns the flag on, as JAX's bool states do."""
  real = oracle()
  for m in (jax, real):
    assert not m.config.jax_enable_custom_prng
    with m.enable_custom_prng():
      assert m.config.jax_enable_custom_prng
    assert not m.config.jax_enable_custom_prng


def test_asarray_big_python_int_with_float_dtype():
  real = oracle()
  for value, dtype in ((2**32, float), (2**100, float), (-2**40, np.complex64), (7, float)):
    got, want = jnp.asarray(value, dtype=dtype), real.numpy.asarray(value, dtype=dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
  for m in (jnp, real.numpy):
    with pytest.raises(OverflowError):
      m.asarray(2**32)
    with pytest.raises(OverflowError):
      m.asarray(2**32, dtype=np.int32)


@pytest.mark.parametrize("tier", [0, 1])
def test_jit_closing_over_big_constant(tier):
  """A closed-over array big enough for the generated code to free it after its last use is a
  global of that code, never `del`eted (was UnboundLocalError: 'v0' / equinox noinline's
  'v2' over an MLP's 512x512 weights)."""
  real = oracle()
  w = np.random.default_rng(0).normal(size=(512, 512)).astype(np.float32) / 20
  x = np.ones((3, 512), np.float32)
  with configured(jax_jaxlite_tier=tier):
    for m in (jax, real):
      W = m.numpy.asarray(w)
      out = (m.jit(lambda x: m.numpy.tanh(x @ W) @ W)(x),
             m.jit(m.vmap(lambda r: m.numpy.tanh(W @ r).sum()))(x))
      if m is jax:
        lite = out
    for a, b in zip(lite, out):
      np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_jit_forwards_function_attributes():
  real = oracle()
  def f(x):
    return x + 1
  f.tag = "mine"
  for m in (jax, real):
    g = m.jit(f)
    assert g.tag == "mine" and g.__name__ == "f" and g.__wrapped__ is f
    assert m.jit(g).tag == "mine"
    assert int(m.jit(g)(1)) == 2
  # a jit of a function wrapping another jit (its __dict__ holds that jit's state) is its own
  @jax.custom_jvp
  def h(x):
    return jnp.sin(x)
  h.defjvp(lambda p, t: (h(p[0]), 2 * jnp.cos(p[0]) * t[0]))
  inner = jax.jit(h)
  assert float(inner(0.7)) == pytest.approx(np.sin(0.7), rel=1e-6)
  assert float(jax.jit(jax.grad(inner))(0.7)) == pytest.approx(2 * np.cos(0.7), rel=1e-6)


def test_switch_traces_a_repeated_branch_callable_once():
  real = oracle()
  for m in (jax, real):
    count = [0]
    def branch(x):
      count[0] += 1
      return x * 2
    other = lambda x: x - 1
    out = m.jit(lambda i, x: m.lax.switch(i, [branch, other, branch, branch], x))(2, 3.0)
    assert float(out) == 6.0
    assert count[0] == 1, m
    count[0] = 0
    out = m.jit(lambda p, x: m.lax.cond(p, branch, branch, x))(True, 3.0)
    assert float(out) == 6.0 and count[0] == 1
  np.testing.assert_allclose(
      jax.grad(lambda x: jax.lax.switch(1, [jnp.sin, jnp.cos, jnp.sin], x))(0.5), -np.sin(0.5),
      rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_vmapped_cond_with_key_operands(jit):
  """A batched predicate runs both branches and selects: PRNG keys are selected too."""
  real = oracle()
  outs = []
  for m in (jax, real):
    def f(p, k):
      return m.lax.cond(p, lambda k: (m.random.split(k)[0], m.random.normal(k)),
                        lambda k: (k, 0.0), k)
    g = m.vmap(f)
    g = m.jit(g) if jit else g
    keys, vals = g(m.numpy.array([True, False, True]), m.random.split(m.random.key(4), 3))
    outs.append((np.asarray(m.random.key_data(keys)), np.asarray(vals)))
  np.testing.assert_array_equal(outs[0][0], outs[1][0])
  np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-6)


@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (4, 4), (2, 5, 3)])
def test_qr_raw_matches_jax(shape):
  """lineax's QR solver reads `jnp.linalg.qr(mode='raw')` (LAPACK geqrf's packed reflectors)."""
  real = oracle()
  a = np.random.default_rng(1).normal(size=shape).astype(np.float32)
  h, tau = jnp.linalg.qr(a, mode="raw")
  rh, rtau = real.numpy.linalg.qr(a, mode="raw")
  np.testing.assert_allclose(h, rh, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(tau, rtau, rtol=1e-4, atol=1e-5)
  from jaxlite._src.lax.linalg_more import geqrf
  import importlib
  packed, taus = geqrf(a)
  rpacked, rtaus = importlib.import_module("jax._src.lax.linalg").geqrf(a)
  np.testing.assert_allclose(packed, rpacked, rtol=1e-4, atol=1e-5)
  # the reflectors reproduce the matrix: Q R = a (Q from ormqr on the identity)
  k = min(shape[-2:])
  r = np.triu(np.asarray(packed))[..., :k, :]
  eye = np.broadcast_to(np.eye(shape[-2], k, dtype=np.float32), shape[:-2] + (shape[-2], k))
  q = jax.lax.linalg.ormqr(packed, taus, eye)
  np.testing.assert_allclose(np.asarray(q) @ r, a, rtol=1e-4, atol=1e-5)


def test_custom_jvp_call_transposes_through_its_body():
  real = oracle()
  outs = []
  for m in (jax, real):
    w = m.numpy.arange(3.0)

    @m.custom_jvp
    def f(x):
      return 2 * x * w
    f.defjvp(lambda p, t: (f(p[0]), 2 * t[0] * w))
    outs.append((m.linear_transpose(f, 1.0)(m.numpy.ones(3))[0],
                 m.linear_transpose(m.jit(lambda x: f(x) + x), 1.0)(m.numpy.ones(3))[0],
                 m.grad(lambda x: m.linear_transpose(f, 1.0)(x * m.numpy.ones(3))[0])(2.0),
                 str(m.make_jaxpr(lambda x: m.linear_transpose(f, 1.0)(x))(m.numpy.ones(3)))
                 .count("custom_jvp_call")))
  for a, b in zip(*outs):
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_make_jaxpr_keeps_closed_over_tracers_as_consts():
  """Inside a trace, make_jaxpr of a function closing over a tracer has it as a const (and the
  function's own arguments as the only invars), so `eval_jaxpr(j.jaxpr, j.consts, *args)`
  works (equinox's filter_closure_convert in diffrax's while loops)."""
  real = oracle()
  for m in (jax, real):
    seen = []

    def f(y, x):
      j = m.make_jaxpr(lambda a: a * y + 1)(x)
      seen.append((len(j.jaxpr.invars), len(j.jaxpr.constvars), len(j.consts)))
      return m.core.eval_jaxpr(j.jaxpr, j.consts, x)[0]
    assert float(m.jit(f)(2.0, 3.0)) == 7.0
    out = m.lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, f(c[1], c[1])), (0, 3.0))
    assert float(out[1]) == 10.0
    assert seen == [(1, 1, 1), (1, 1, 1)], m


def test_ravel_pytree_unravel_warns_as_jax():
  """NumPy float64 leaves are float32 leaves without x64: unravel casts (and warns) nothing."""
  import warnings
  from jaxlite.flatten_util import ravel_pytree
  real = oracle()
  from jax.flatten_util import ravel_pytree as real_ravel
  trees = [{"a": np.array(0.0), "b": np.array([[1, 2], [3, 4]])},
           [False, True, 0.0, np.array([[1.0, 2.0], [3.0, 4.0]])],
           {"a": np.array(0), "b": np.array([[1.0, 2.0]])}]
  for tree in trees:
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      flat, unravel = ravel_pytree(tree)
      rflat, runravel = real_ravel(tree)
      got, want = unravel(flat), runravel(rflat)
    np.testing.assert_array_equal(flat, rflat)
    assert flat.dtype == rflat.dtype
    for a, b in zip(jax.tree.leaves(got), real.tree.leaves(want)):
      assert a.dtype == b.dtype
      np.testing.assert_array_equal(a, b)
  # one dtype: unravel keeps the vector's dtype (JAX's dtype-polymorphic unravel)
  _, unravel = ravel_pytree([np.ones(2, np.float32)])
  assert unravel(np.ones(2, np.int32))[0].dtype == np.int32


def test_library_primitive_impl_sees_arrays():
  """A primitive made with jax.extend.core.Primitive gets jax Arrays in its impl (equinox's
  maybe_set impl uses `xs.at[i]`) eagerly; compiled, its lowering `lower_fun(impl)` traces the
  impl, as JAX's does; every primitive is an instance of it."""
  real = oracle()
  import importlib
  importlib.import_module("jax.extend")
  import jaxlite.extend  # noqa: F401
  results, seen_by = [], []
  for m in (jax, real):
    p = m.extend.core.Primitive("set_first")
    seen = []

    def impl(xs, x):
      seen.append(type(xs).__name__)
      return xs.at[0].set(x)
    p.def_impl(impl)
    p.def_abstract_eval(lambda xs, x: xs)
    mlir = importlib.import_module(f"{m.__name__}.interpreters.mlir")
    mlir.register_lowering(p, mlir.lower_fun(impl, multiple_results=False))
    xs = m.numpy.arange(3.0)
    results.append((p.bind(xs, 5.0), m.jit(lambda a: p.bind(a, 7.0) * 2)(xs)))
    # eagerly the impl gets Arrays; under jit the lowering (lower_fun(impl)) traces it
    assert seen == ["ArrayImpl", "DynamicJaxprTracer"], seen
    seen_by.append(seen)
    assert isinstance(m.lax.sin_p, m.extend.core.Primitive)
  for a, b in zip(*results):
    np.testing.assert_array_equal(a, b)
  assert seen_by[0] == seen_by[1]


def test_check_grads_tolerance_follows_the_canonical_dtype():
  """A Python-float argument computes in float32 without x64: check_vjp's cotangent
  projection uses float32's gradient tolerance, as JAX's (numpyro's log1mexp grads, order 3)."""
  real = oracle()
  import importlib
  from jaxlite import test_util

  def log1mexp(m, x):
    return m.numpy.where(x > -0.6931472, m.numpy.log(-m.numpy.expm1(x)),
                         m.numpy.log1p(-m.numpy.exp(x)))
  for x in (-0.5, -0.32523):
    test_util.check_grads(lambda v: log1mexp(jax, v), (x,), order=3)
    importlib.import_module("jax.test_util").check_grads(lambda v: log1mexp(real, v), (x,),
                                                         order=3)


def test_product_with_a_bool_array_is_a_select_as_xla_computes_it():
  """numpyro's binary_cross_entropy_with_logits relies on `jnp.inf * jnp.array(False) == 0`:
  JAX runs jnp.multiply compiled and XLA computes a product with a converted bool as a select
  (no NaN from inf * 0, +0.0 from -2.0 * 0), eagerly and under jit; lax.mul op by op is NaN."""
  real = oracle()
  a = np.array([np.inf, -np.inf, np.nan, -2.0, 3.0], np.float32)
  b = np.array([False, False, False, False, True])

  def run(m):
    A, B = m.numpy.asarray(a), m.numpy.asarray(b)
    outs = [A * B, B * A, m.numpy.multiply(A, B), m.numpy.inf * B,
            m.jit(lambda x, p: x * p)(A, B), m.jit(lambda x, p: p.astype(np.float32) * x)(A, B),
            m.jit(lambda x, p: x * p)(m.numpy.arange(5), B),
            m.lax.mul(A, m.lax.convert_element_type(B, np.float32))]
    return [np.asarray(o) for o in outs], str(m.make_jaxpr(lambda x, p: x * p)(A, B))

  got, want = run(jax), run(real)
  assert got[1] == want[1]  # the jaxpr still converts and multiplies
  for g, w in zip(got[0], want[0]):
    assert g.dtype == w.dtype
    np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
  assert got[0][0][0] == 0 and np.isnan(got[0][-1][0])
