"""Reverse mode as diffrax, optimistix and lineax use it (issue 34), each against real JAX.

diffrax differentiates a solve three ways: through equinox's checkpointed while loop (a
`custom_vjp` whose residuals carry Python-bool `perturbed` flags), by solving backwards
(`BacksolveAdjoint`: step counts flow through equinox's `unvmap_max`, a primitive without a
differentiation rule) and through a scan of checkpointed steps (`DirectAdjoint`).
"""
import importlib

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle


def _residual_types(m):
  seen = []

  @m.custom_vjp
  def f(x):
    return x * 2

  def fwd(x):
    return x * 2, (True, False, x)

  def bwd(res, g):
    seen.append(tuple(type(r) for r in res[:2]) + (res[:2],))
    return (g * 2,)

  f.defvjp(fwd, bwd)
  grads = [m.grad(f)(1.5), m.jit(m.grad(f))(1.5), m.vjp(f, 1.5)[1](1.0)[0],
           m.grad(lambda x: m.lax.scan(lambda c, _: (f(c), None), x, None, length=2)[0])(1.5)]
  return seen, [float(g) for g in grads]


def test_custom_vjp_python_bool_residuals_reach_bwd_as_bools():
  """equinox's filter_custom_vjp passes its `perturbed` tree (Python bools) as residuals and
  partitions on it in bwd: a NumPy bool there is rejected as a filter spec."""
  want = _residual_types(oracle())
  got = _residual_types(jax)
  assert got == want
  assert all(types[:2] == (bool, bool) for types in got[0])


def _no_rule_on_step_count(m):
  extend_core = importlib.import_module(m.__name__ + ".extend.core")
  from_extend = extend_core.Primitive("eco_no_ad_rule")
  from_extend.def_impl(lambda n: n + 1)
  from_extend.def_abstract_eval(lambda n: n)

  @m.custom_jvp
  def f(x, n):
    return x * 2, n * 3

  @f.defjvp
  def f_jvp(primals, tangents):
    x, n = primals
    return f(x, n), (tangents[0] * 2, np.zeros((), m.dtypes.float0))

  def g(x):
    y, count = f(x, m.numpy.int32(2))
    return y * from_extend.bind(count)

  # (no jit: the primitive has no lowering, in JAX as here)
  return (m.grad(g)(1.5), m.jvp(g, (1.5,), (1.0,)),
          m.linearize(g, 1.5)[1](1.0))


def test_float0_tangent_is_a_symbolic_zero():
  """An integer output given a float0 tangent by a rule: a primitive without a differentiation
  rule may still be applied to it (diffrax's BacksolveAdjoint counts steps with equinox's
  unvmap_max)."""
  want = _no_rule_on_step_count(oracle())
  got = _no_rule_on_step_count(jax)
  for a, b in zip(jax.tree.leaves(got), oracle().tree.leaves(want)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    assert np.dtype(a.dtype) == np.dtype(b.dtype)


def _checkpointed_loops(m, policy):
  lax = m.lax

  def body(x):
    def step(c, _):
      return m.numpy.sin(c) * 1.1 + 0.3 * c * c, c.sum()
    c, ys = lax.scan(step, x, None, length=3)
    c = lax.fori_loop(0, 2, lambda i, c: c * 0.9 + m.numpy.cos(c), c)
    c = lax.cond(c.sum() > 0, lambda c: c * 2.0, lambda c: -c, c)
    return c, ys

  step = m.checkpoint(body, policy=policy)

  def outer(x):
    def outer_step(c, _):
      c, ys = step(c)
      return c * 0.5, ys.sum()
    c, ys = lax.scan(outer_step, x, None, length=2)
    return c.sum() + ys.sum()

  def single(x):
    c, ys = step(x)
    return (c * c).sum() + ys.sum()

  x = m.numpy.array([0.3, -0.2, 0.1], dtype=m.numpy.float32)
  return [m.grad(outer)(x), m.jit(m.grad(outer))(x), m.grad(single)(x),
          m.vjp(single, x)[1](m.numpy.float32(1.0))[0]]


@pytest.mark.parametrize("policy", ["none", "dots", "nothing"])
def test_grad_through_checkpointed_scan_loop_cond(policy):
  """A checkpointed body holding a scan, a fori_loop and a cond, differentiated alone and
  inside a scan (diffrax's DirectAdjoint: a KeyError in the checkpoint's split before)."""
  real = oracle()

  def pick(m):
    return {"none": None, "dots": m.checkpoint_policies.dots_saveable,
            "nothing": m.checkpoint_policies.nothing_saveable}[policy]
  want = _checkpointed_loops(real, pick(real))
  got = _checkpointed_loops(jax, pick(jax))
  for a, b in zip(got, want):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)


def _symbolic_zero_rule_under_vmap(m):
  @m.custom_jvp
  def f(x, y):
    return x * y, m.numpy.sin(x)

  def f_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    zero = m.custom_derivatives.SymbolicZero
    t_out = (0. if type(tx) is zero else tx * y) + (0. if type(ty) is zero else x * ty)
    return f(x, y), (t_out, ty if type(tx) is zero else m.numpy.cos(x) * tx)
  f.defjvp(f_jvp, symbolic_zeros=True)

  x = m.numpy.arange(6.).reshape(3, 2)
  y = m.numpy.ones((3, 2)) * 0.5
  # differentiated outside the vmap: the batched rule gets x's tangent as a symbolic zero
  return [m.jvp(lambda y: m.vmap(f)(x, y), (y,), (m.numpy.ones_like(y),)),
          m.grad(lambda y: m.vmap(f)(x, y)[0].sum())(y),
          m.jvp(lambda x: m.vmap(f)(x, y), (x,), (m.numpy.ones_like(x),))]


def test_custom_jvp_symbolic_zero_tangents_under_vmap():
  """A vmapped JVP of a custom_jvp with symbolic_zeros=True whose rule passes a zero tangent
  through (diffrax's adjoint tests vmap such solves): a ZeroDivisionError before."""
  got = _symbolic_zero_rule_under_vmap(jax)
  want = _symbolic_zero_rule_under_vmap(oracle())
  for a, b in zip(jax.tree.leaves(got), oracle().tree.leaves(want)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def _grad_of_vmapped_symbolic_zero_rule(m):
  """A custom_jvp rule (symbolic_zeros=True) returning a SymbolicZero tangent, vmapped inside
  a jit and differentiated outside the vmap (diffrax's test_adjoint `_run_grad_vmap` through
  equinox's rules)."""
  SymbolicZero = m.custom_derivatives.SymbolicZero

  @m.custom_jvp
  def f(x, y):
    return x * y, m.numpy.sin(x)

  def f_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    outs = f(x, y)
    t0 = (0 if type(tx) is SymbolicZero else tx * y) + (0 if type(ty) is SymbolicZero else x * ty)
    return outs, (t0, SymbolicZero(m.typeof(outs[1]).to_tangent_aval()))
  f.defjvp(f_jvp, symbolic_zeros=True)

  def loss(x, y):
    a, b = f(x, y)
    return m.numpy.sum(a) + m.numpy.sum(b)

  def g(x, y):
    return m.numpy.sum(m.vmap(m.jit(loss), in_axes=(0, None))(x, y))

  x, y = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.full(3, 2.0, np.float32)
  return [np.asarray(o) for o in (m.grad(g)(x, y), m.jit(m.grad(g))(x, y),
                                  m.jit(m.grad(g, argnums=1))(x, y),
                                  m.vmap(m.grad(loss), in_axes=(0, None))(x, y))]


def test_vmapped_custom_jvp_rule_returning_a_symbolic_zero():
  got, want = _grad_of_vmapped_symbolic_zero_rule(jax), _grad_of_vmapped_symbolic_zero_rule(
      oracle())
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-6)
