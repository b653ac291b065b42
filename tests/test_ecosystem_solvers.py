"""What lineax 0.1.1's and optimistix 0.1.0's suites rely on (issue 34), each against real JAX."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import configured, oracle


def _wrap_negative_cases(m):
  x = m.numpy.arange(10.).reshape(2, 5)
  i3 = m.numpy.array([-1, 2, -3])
  out = []
  for kw in ({}, {"mode": "fill"}, {"mode": "clip"}, {"mode": "fill", "fill_value": -7.}):
    out.append(x.at[1, i3].get(wrap_negative_indices=False, **kw))
    out.append(x.at[m.numpy.array([0, 1]), m.numpy.array([-1, 3])].get(
        wrap_negative_indices=False, **kw))
    out.append(x.at[-1].get(wrap_negative_indices=False, **kw))
    out.append(m.jit(lambda x, i, kw=kw: x.at[1, i].get(wrap_negative_indices=False, **kw))(
        x, m.numpy.array([-2, 4])))
  for kw in ({}, {"mode": "drop"}):
    out.append(x.at[1, m.numpy.array([-1, 2])].set(5., wrap_negative_indices=False, **kw))
    out.append(x.at[-1].add(5., wrap_negative_indices=False, **kw))
  out.append(x.at[1, i3].get(wrap_negative_indices=True))
  return out


def test_at_get_and_updates_take_wrap_negative_indices():
  """lineax's tridiagonal operator gathers with `.at[...].get(wrap_negative_indices=False)`:
  a negative index is out of bounds (clamped, filled or dropped by the mode)."""
  want = _wrap_negative_cases(oracle())
  got = _wrap_negative_cases(jax)
  assert len(got) == len(want)
  for a, b in zip(got, want):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float32])
def test_qr_raw_complex(shape, dtype):
  """lineax's QR solver factors complex operators with `jnp.linalg.qr(mode='raw')` and
  applies the reflectors itself: LAPACK's (zgeqrf's) packed form and taus."""
  real = oracle()
  rng = np.random.default_rng(0)
  a = rng.normal(size=shape)
  if np.dtype(dtype).kind == "c":
    a = a + 1j * rng.normal(size=shape)
  a = a.astype(dtype)
  with configured(jax_enable_x64=True), configured(real.config, jax_enable_x64=True):
    h, t = jax.numpy.linalg.qr(a, mode="raw")
    hj, tj = real.numpy.linalg.qr(a, mode="raw")
    assert h.dtype == hj.dtype and t.dtype == tj.dtype
    tol = 1e-4 if np.dtype(dtype).itemsize <= 8 else 1e-10
    np.testing.assert_allclose(np.asarray(h), np.asarray(hj), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(t), np.asarray(tj), rtol=tol, atol=tol)
    k = min(shape)
    q = jax.lax.linalg.householder_product(h.mT[:, :k], t)
    np.testing.assert_allclose(np.asarray(q), np.asarray(
        real.lax.linalg.householder_product(hj.mT[:, :k], tj)), rtol=tol, atol=tol)


def test_vmap_passes_symbolic_zeros_through():
  """equinox's vprim JVP rules vmap a function that returns `ad.Zero` tangents: JAX hands
  them back unbatched."""
  real = oracle()
  import importlib
  for m in (jax, real):
    ad = importlib.import_module(m.__name__ + ".interpreters.ad")
    z = ad.Zero(m.core.ShapedArray((2,), np.float32))
    x, out = m.vmap(lambda x, z=z: (x * 2, z))(m.numpy.ones(3))
    assert type(out) is ad.Zero and out.aval.shape == (2,)
    np.testing.assert_array_equal(np.asarray(x), [2., 2., 2.])


def _rule_arg_types(m):
  import importlib
  ad = importlib.import_module(m.__name__ + ".interpreters.ad")
  batching = importlib.import_module(m.__name__ + ".interpreters.batching")
  extend_core = importlib.import_module(m.__name__ + ".extend.core")
  p = extend_core.Primitive("eco_arg_types")
  p.def_impl(lambda x, y: x * y)
  p.def_abstract_eval(lambda x, y: x)
  seen = []

  def jvp(primals, tangents):
    seen.append(("jvp", type(primals), type(tangents)))
    x, y = primals
    tx, ty = (ad.instantiate_zeros(t) for t in tangents)
    return p.bind(x, y), tx * y + x * ty

  def batch(axis_size, axis_name, trace_type, vals, dims):
    seen.append(("batch", type(vals), type(dims)))
    x, y = (m.numpy.moveaxis(v, d, 0) if d is not None else v for v, d in zip(vals, dims))
    return p.bind(x, y), 0

  ad.primitive_jvps[p] = jvp
  batching.axis_primitive_batchers[p] = batch
  m.jvp(lambda x: p.bind(x, 3.0), (2.0,), (1.0,))
  m.vmap(lambda x: p.bind(x, x))(m.numpy.ones(3))
  return seen


def test_rules_get_tuples_as_in_jax():
  """JVP rules get (primals, tangents) and JAX-signature batching rules (vals, dims) as
  tuples: equinox's vprim passes them on as vmap in_axes/out_axes, prefixes of tuples."""
  got = _rule_arg_types(jax)
  want = _rule_arg_types(oracle())
  assert [s[0] for s in got] == [s[0] for s in want]
  assert [s[1:] for s in got] == [s[1:] for s in want] == [(tuple, tuple)] * len(want)


def _logaddexp_complex(m):
  jnp_ = m.numpy
  x = jnp_.array([0.5 + 0.2j, -1 + 1j, 3 + 4j, -2 + 3.5j, 1e30 + 0j])
  y = jnp_.array([0.0 + 0j, 0.0 + 0j, 3 + 3j, -2 - 3.5j, 5 + 0j])
  f = lambda x: jnp_.logaddexp(x, 0.3 + 0.1j)
  return [m.nn.softplus(x[:2]), m.jit(m.nn.softplus)(x[:2]), jnp_.logaddexp(x, y),
          m.grad(lambda x: f(x).real)(jnp_.array(0.5 + 0.2j)),
          m.jvp(f, (jnp_.array(0.5 + 0.2j),), (jnp_.array(1. + 1j),))[1]]


def test_logaddexp_and_softplus_of_complex():
  """optimistix's tests run an MLP with softplus on complex128 states."""
  real = oracle()
  with configured(jax_enable_x64=True), configured(real.config, jax_enable_x64=True):
    got, want = _logaddexp_complex(jax), _logaddexp_complex(real)
  for a, b in zip(got, want):
    assert a.dtype == b.dtype
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def _custom_jvp_of_jit_with_defaults(m):
  import functools

  @functools.partial(m.custom_jvp, nondiff_argnums=(1, 2))
  @functools.partial(m.jit, static_argnames=("ord", "keepdims"))
  def norm(x, ord=None, keepdims=False):
    return m.numpy.linalg.norm(x, ord=ord, keepdims=keepdims)

  @norm.defjvp
  def norm_jvp(ord, keepdims, primals, tangents):
    return m.jvp(functools.partial(m.numpy.linalg.norm, ord=ord, keepdims=keepdims),
                 primals, tangents)

  x = m.numpy.arange(6.).reshape(3, 2)
  y = m.numpy.ones((4, 2))
  return [m.vmap(lambda a: m.vmap(lambda b: norm(a - b))(y))(x), norm(x[1], 1),
          m.grad(lambda a: norm(a))(x[2])]


def test_custom_jvp_of_a_jitted_function_fills_default_nondiff_args():
  """ott-jax's `norm` is a custom_jvp (nondiff ord/axis/keepdims) of a jitted function,
  called with the defaults left out: JAX fills them from the jitted function's signature."""
  got, want = _custom_jvp_of_jit_with_defaults(jax), _custom_jvp_of_jit_with_defaults(oracle())
  for a, b in zip(got, want):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def _complex_lstsq_tangents(m, shape):
  rng = np.random.default_rng(1)
  draw = lambda *s: rng.normal(size=s) + 1j * rng.normal(size=s)
  a, ta = draw(*shape), draw(*shape)
  b = draw(shape[0])
  lstsq = lambda a: m.numpy.linalg.lstsq(a, b)[0]
  # V S⁻¹ Uᴴ b from the SVD's three tangents: independent of the phase each column gets.
  def through_svd(a):
    u, s, vh = m.numpy.linalg.svd(a, full_matrices=False)
    return vh.conj().T @ ((u.conj().T @ b) / s)
  return [m.jvp(f, (a,), (ta,))[1] for f in (lstsq, through_svd)]


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_complex_svd_tangents_carry_the_phase_term(shape):
  """lineax's complex `test_jvp` cases compare its solves' tangents with `jnp.linalg.lstsq`'s,
  which JAX differentiates through the SVD: dU carries i Im(Uᴴ dA V)_ii / s_i (half of it
  gave a wrong tangent for every complex least-squares solution)."""
  real = oracle()
  with configured(jax_enable_x64=True), configured(real.config, jax_enable_x64=True):
    want = _complex_lstsq_tangents(real, shape)
    got = _complex_lstsq_tangents(jax, shape)
  for a, b in zip(got, want):
    assert np.asarray(a).dtype == np.complex128
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-9)


def _closure_differentiated(m, staged):
  """(transform, error class, its module's last name) for a custom_vjp closing over q."""
  def outer(q):
    @m.custom_vjp
    def f(x):
      return x * q

    f.defvjp(lambda x: (f(x), None), lambda res, g: (g * 2.0,))
    return staged(f)

  for name, transform in (("grad", m.grad), ("jit_grad", lambda g: m.jit(m.grad(g))),
                          ("jvp", lambda g: lambda x: m.jvp(g, (x,), (1.0,)))):
    try:
      transform(outer)(3.0)
    except Exception as err:  # noqa: BLE001 -- the class is what is compared
      yield name, type(err).__name__, type(err).__module__.rsplit(".", 1)[-1]
    else:
      yield name, None, None


@pytest.mark.parametrize("staging", ["jit", "loop"])
def test_custom_vjp_closing_over_a_differentiated_value_raises_custom_vjp_exception(staging):
  """jaxopt's `eq_qp_test.py::test_example_from_doc` catches
  `jax._src.interpreters.ad.CustomVJPException` from a custom_vjp solver whose matvec closes
  over the differentiated matrix (staged: a jit or a loop body holds the call)."""
  real = oracle()
  pick = lambda m: {"jit": lambda f: m.jit(f)(2.0),
                    "loop": lambda f: m.lax.fori_loop(0, 2, lambda i, c: f(c), 2.0)}[staging]
  want = list(_closure_differentiated(real, pick(real)))
  got = list(_closure_differentiated(jax, pick(jax)))
  assert got == want
  assert {cls for _, cls, _ in want} == {"CustomVJPException"}


def _jitted_solve_gradients(m):
  b = m.numpy.array([1.0, 2.0])

  def cg(s):  # cg makes its x0 from b inside the jit: a value its solve closes over
    a = m.numpy.diag(s) + 3.0
    return m.scipy.sparse.linalg.cg(lambda x: a @ x, b)[0]

  def custom(s):
    a = m.numpy.diag(s) + 3.0
    shift = s.sum()  # a traced value the user's solve and transpose_solve close over
    solve = lambda mv, r: m.numpy.linalg.solve(a, r) + 0 * shift
    return m.lax.custom_linear_solve(lambda x: a @ x, b, solve,
                                     transpose_solve=lambda vm, r: m.numpy.linalg.solve(a.T, r))

  s = m.numpy.array([1.0, 2.0])
  return [m.jacrev(m.jit(f))(s) for f in (cg, custom)] + [m.grad(lambda s: m.jit(cg)(s).sum())(s)]


def test_reverse_mode_of_a_jitted_solve_whose_solver_closes_over_traced_values():
  """jaxopt's GaussNewton under `jax.jacrev` (`gauss_newton_test.py::
  test_enzyme_reaction_implicit_diff`): reverse mode through a jit holding a cg or a
  custom_linear_solve whose `solve` closes over values of that jit's trace (cg's `x0`) raised
  UnexpectedTracerError; JAX traces `solve` up front."""
  want = _jitted_solve_gradients(oracle())
  got = _jitted_solve_gradients(jax)
  for a, b in zip(got, want):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
