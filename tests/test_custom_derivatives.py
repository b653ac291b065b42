"""custom_jvp and custom_vjp: rules are used (not the function's own derivative) eagerly, under
jit, vmap and nested differentiation; nondiff_argnums, defjvps, symbolic zeros; JAX's errors;
printed jaxprs against real JAX."""
import functools

import numpy as np
import pytest
from conftest import oracle

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.test_util import check_grads


def _make_f(J, N):
  """sin with a rule that doubles its derivative, so we can tell the rule was used."""
  @J.custom_jvp
  def f(x):
    return N.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), 2.0 * N.cos(x) * t
  return f


def _make_g(J, N):
  """g(x, y) = sin(x) * y with a bwd that triples the x cotangent."""
  @J.custom_vjp
  def g(x, y):
    return N.sin(x) * y

  def g_fwd(x, y):
    return g(x, y), (N.cos(x), y)

  def g_bwd(res, ct):
    c, y = res
    return (3.0 * ct * c * y, ct * 0.0 + ct)
  g.defvjp(g_fwd, g_bwd)
  return g


f = _make_f(jax, jnp)
g = _make_g(jax, jnp)
X = 0.7


def test_custom_jvp_values_and_rule_use():
  assert float(f(X)) == pytest.approx(np.sin(X))
  y, t = jax.jvp(f, (X,), (1.0,))
  assert float(y) == pytest.approx(np.sin(X)) and float(t) == pytest.approx(2 * np.cos(X))
  assert float(jax.grad(f)(X)) == pytest.approx(2 * np.cos(X))
  # Second order differentiates the rule itself: d/dx 2 cos x = -2 sin x.
  assert float(jax.grad(jax.grad(f))(X)) == pytest.approx(-2 * np.sin(X), rel=1e-5)


@pytest.mark.parametrize("compose", [
    lambda fn: jax.jit(jax.grad(fn)), lambda fn: jax.grad(jax.jit(fn)),
    lambda fn: jax.jit(jax.grad(jax.jit(fn)))])
def test_custom_jvp_under_jit(compose):
  assert float(compose(f)(X)) == pytest.approx(2 * np.cos(X))


def test_custom_jvp_under_vmap():
  xs = np.linspace(0, 1, 4, dtype=np.float32)
  np.testing.assert_allclose(jax.vmap(f)(xs), np.sin(xs), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs), 2 * np.cos(xs), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(jax.vmap(f)(x)))(xs), 2 * np.cos(xs),
                             rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(f)))(xs), 2 * np.cos(xs), rtol=1e-6)


def test_custom_jvp_nondiff_argnums_defjvps_and_kwargs():
  @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
  def apply(fn, x):
    return fn(x)

  @apply.defjvp
  def apply_jvp(fn, primals, tangents):
    (x,), (t,) = primals, tangents
    return apply(fn, x), 10.0 * t
  assert float(jax.grad(lambda x: apply(jnp.sin, x))(X)) == 10.0

  @jax.custom_jvp
  def h(x, y):
    return x * y
  h.defjvps(lambda t, ans, x, y: t * y * 2, None)
  assert float(jax.grad(h)(3.0, 4.0)) == 8.0
  assert float(jax.grad(h, argnums=1)(3.0, 4.0)) == 0.0
  assert float(jax.grad(lambda x: h(x, y=4.0))(3.0)) == 8.0


def test_custom_jvp_symbolic_zeros():
  seen = []

  @jax.custom_jvp
  def h(x, y):
    return x * y

  @functools.partial(h.defjvp, symbolic_zeros=True)
  def h_jvp(primals, tangents):
    seen.append(tuple(type(t).__name__ for t in tangents))
    (x, y), (tx, _) = primals, tangents
    return h(x, y), tx * y
  assert float(jax.grad(h)(3.0, 4.0)) == 4.0
  assert seen[-1][1] == "SymbolicZero"


def test_custom_jvp_closing_over_a_jit_tracer():
  def outer(c, x):
    @jax.custom_jvp
    def k(x):
      return x * c

    @k.defjvp
    def k_jvp(p, t):
      return k(p[0]), t[0] * c * 5.0
    return k(x)
  assert float(jax.jit(jax.grad(outer, argnums=1))(2.0, 1.0)) == 10.0


def test_custom_jvp_gradients_pass_check_grads():
  @jax.custom_jvp
  def softplus(x):
    return jnp.log1p(jnp.exp(x))

  @softplus.defjvp
  def softplus_jvp(p, t):
    (x,), (tx,) = p, t
    return softplus(x), tx / (1 + jnp.exp(-x))
  check_grads(softplus, (np.array([-1.0, 0.3, 2.0], np.float32),), order=2, eps=1e-3,
              atol=2e-2, rtol=2e-2)


def test_custom_vjp_values_and_rule_use():
  assert float(g(X, 2.0)) == pytest.approx(np.sin(X) * 2)
  gx, gy = jax.grad(g, argnums=(0, 1))(X, 2.0)
  assert float(gx) == pytest.approx(3 * np.cos(X) * 2) and float(gy) == 1.0
  _, f_vjp = jax.vjp(g, X, 2.0)
  ct_x, _ = f_vjp(2.0)
  assert float(ct_x) == pytest.approx(2 * 3 * np.cos(X) * 2)


@pytest.mark.parametrize("compose", [
    lambda fn: jax.jit(jax.grad(fn)), lambda fn: jax.grad(jax.jit(fn)),
    lambda fn: jax.jit(jax.grad(jax.jit(fn)))])
def test_custom_vjp_under_jit(compose):
  assert float(compose(g)(X, 2.0)) == pytest.approx(3 * np.cos(X) * 2)


def test_custom_vjp_under_vmap():
  xs = np.linspace(0.1, 1, 4, dtype=np.float32)
  ys = np.linspace(1, 2, 4, dtype=np.float32)
  np.testing.assert_allclose(jax.vmap(g)(xs, ys), np.sin(xs) * ys, rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jax.grad(g))(xs, ys), 3 * np.cos(xs) * ys, rtol=1e-6)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(jax.vmap(g)(x, ys)))(xs),
                             3 * np.cos(xs) * ys, rtol=1e-6)
  # The unbatched argument's cotangent is summed over the batch.
  np.testing.assert_allclose(jax.grad(lambda y: jnp.sum(jax.vmap(g, (0, None))(xs, y)))(2.0),
                             len(xs), rtol=1e-6)


def test_custom_vjp_nondiff_argnums_none_cotangents_and_pytrees():
  @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
  def scale(x, k):
    return x * k

  scale.defvjp(lambda x, k: (scale(x, k), None), lambda k, res, ct: (ct * k * 100,))
  assert float(jax.grad(scale)(2.0, 3)) == 300.0

  @jax.custom_vjp
  def pair(p):
    return p["a"] * p["b"]

  def pair_fwd(p):
    return pair(p), p

  def pair_bwd(p, ct):
    return ({"a": ct * p["b"], "b": None},)
  pair.defvjp(pair_fwd, pair_bwd)
  grads = jax.grad(pair)({"a": 2.0, "b": 5.0})
  assert float(grads["a"]) == 5.0 and float(grads["b"]) == 0.0


def test_custom_vjp_forward_mode_is_an_error():
  with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a "
                                      r"custom_vjp function."):
    jax.jvp(g, (X, 2.0), (1.0, 0.0))


ERRORS = [
    (lambda: jax.custom_jvp(jnp.sin)(1.0), AttributeError,
     "No JVP defined for custom_jvp function sin using defjvp."),
    (lambda: jax.custom_vjp(jnp.sin)(1.0), AttributeError,
     "No VJP defined for custom_vjp function sin using defvjp."),
]


@pytest.mark.parametrize("fn,cls,text", ERRORS)
def test_errors(fn, cls, text):
  with pytest.raises(cls, match=text):
    fn()


def test_bad_rules_raise_jax_errors():
  @jax.custom_jvp
  def h(x):
    return x

  h.defjvp(lambda p, t: (p[0], (t[0], t[0])))
  with pytest.raises(TypeError, match="must produce primal and tangent outputs with equal "
                                      "container"):
    jax.jvp(h, (1.0,), (1.0,))
  h.defjvp(lambda p, t: (p[0], t[0].astype(jnp.float16)))
  with pytest.raises(TypeError, match=r"Expected float32\[\] \(tangent type of float32\[\]\)"):
    # (an Array tangent: the rule sees a Python float tangent as the float it is, as in JAX)
    jax.jvp(h, (1.0,), (jnp.asarray(1.0),))

  @jax.custom_vjp
  def k(x, y):
    return x * y
  k.defvjp(lambda x, y: (k(x, y), None), lambda res, ct: (ct,))
  with pytest.raises(TypeError, match="Custom VJP bwd rule must produce an output with the same "
                                      "container"):
    jax.grad(k)(1.0, 2.0)


@pytest.mark.parametrize("transform", ["plain", "grad", "jvp"])
@pytest.mark.parametrize("which", ["custom_jvp", "custom_vjp"])
def test_printed_jaxprs_match_jax(which, transform):
  jax_ = oracle()
  import jax.numpy as jjnp
  if which == "custom_vjp" and transform == "jvp":
    pytest.skip("forward mode of custom_vjp is an error in JAX too")

  def build(J, N):
    fn = _make_f(J, N) if which == "custom_jvp" else _make_g(J, N)
    if transform == "plain":
      return fn
    if transform == "grad":
      return J.grad(fn)
    return lambda x, t: J.jvp(fn, (x,), (t,))
  args = (1.0, 2.0)
  got = str(jax.make_jaxpr(build(jax, jnp))(*args[:2 if which == "custom_vjp" or
                                                  transform == "jvp" else 1]))
  want = str(jax_.make_jaxpr(build(jax_, jjnp))(*args[:2 if which == "custom_vjp" or
                                                       transform == "jvp" else 1]))
  assert got.replace("f_jvp", "").replace("g_fwd", "").replace("g_bwd", "") == \
      want.replace("f_jvp", "").replace("g_fwd", "").replace("g_bwd", "")
  assert ("jvp=f_jvp" in got) == ("jvp=f_jvp" in want)


def test_linear_custom_jvp_transposes_as_its_body():
  # (the JVP rule plays no part: linear_transpose and a VJP through a linear solve use the body)
  @jax.custom_jvp
  def f(x, y):
    return 3.0 * x - y
  f.defjvp(lambda p, t: (f(*p), 100.0 * t[0]))  # a wrong rule: it must not be used
  ct_x, ct_y = jax.linear_transpose(f, 1.0, 1.0)(2.0)
  assert float(ct_x) == 6.0 and float(ct_y) == -2.0
