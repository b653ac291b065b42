"""`call_p`/`closed_call_p` (jax.extend.core.primitives, CallPrimitive) and their DCE rules in
jax.interpreters.partial_eval: values, derivatives, vmap and printed jaxprs (known answers)."""
import importlib

import numpy as np

import jaxlite
import jaxlite.numpy as jlnp


def _closed_call_programs(jax):
  P = importlib.import_module(jax.__name__ + ".extend.core.primitives")
  jnp = jax.numpy
  body = jax.make_jaxpr(lambda u, v: jnp.sin(u) * v)(1.0, 2.0)
  f = lambda x: P.closed_call_p.bind(x, 2.0, call_jaxpr=body)[0]
  x = jnp.array([0.5, 1.0, 2.0])
  return ([f(1.0), jax.grad(f)(1.0), jax.vmap(f)(x), jax.jit(f)(1.0),
           jax.jvp(f, (1.0,), (3.0,)), jax.hessian(f)(1.0)],
          str(jax.make_jaxpr(f)(1.0)))


def test_closed_call_known_answers():
  # JAX 0.10.2's own closed_call_p.bind needs internal `subfuns` params (KeyError without them),
  # so these are checked against calculus, not the oracle.
  values, text = _closed_call_programs(jaxlite)
  want = [np.sin(1.0) * 2, np.cos(1.0) * 2, np.sin([0.5, 1.0, 2.0]) * 2, np.sin(1.0) * 2,
          (np.sin(1.0) * 2, np.cos(1.0) * 6), -np.sin(1.0) * 2]
  for g, w in zip(jaxlite.tree.leaves(values), jaxlite.tree.leaves(want)):
    np.testing.assert_allclose(g, w, rtol=1e-6)
  assert text == """{ lambda ; a:f32[]. let
    b:f32[] = closed_call[
      call_jaxpr={ lambda ; c:f32[] d:f32[]. let
          e:f32[] = sin c
          f:f32[] = mul e d
        in (f,) }
    ] a 2.0:f32[]
  in (b,) }"""


def test_call_primitive_binds_a_function():
  from jaxlite.extend.core import CallPrimitive
  from jaxlite.extend.core.primitives import call_p
  assert isinstance(call_p, CallPrimitive) and call_p.multiple_results
  calls = []

  def f(u, v):
    calls.append(1)
    return [jlnp.sin(u) * v]
  g = lambda x: call_p.bind(f, x, 2.0)[0]
  np.testing.assert_allclose(g(1.0), np.sin(1.0) * 2, rtol=1e-6)
  np.testing.assert_allclose(jaxlite.grad(g)(1.0), np.cos(1.0) * 2, rtol=1e-6)
  np.testing.assert_allclose(jaxlite.vmap(g)(jlnp.ones(2)), np.sin([1.0, 1.0]) * 2, rtol=1e-6)
  text = str(jaxlite.make_jaxpr(g)(1.0))
  assert text.splitlines()[1] == "    b:f32[] = call["
  # A fresh primitive of the class works the same way under its own name.
  mine = CallPrimitive("my_call")
  assert str(jaxlite.make_jaxpr(lambda x: mine.bind(f, x, 1.0))(1.0)).splitlines()[1] == \
      "    b:f32[] = my_call["


def test_dce_rules_prune_call_eqns():
  from jaxlite.interpreters import partial_eval as pe
  from jaxlite.extend.core.primitives import call_p, closed_call_p
  two = lambda u, v: [jlnp.sin(u), jlnp.cos(v)]
  eqn = jaxlite.make_jaxpr(lambda x, y: call_p.bind(two, x, y))(1.0, 2.0).jaxpr.eqns[0]
  used_inputs, new = pe.dce_rules[call_p](
      [True, False], eqn)
  assert used_inputs == [True, False]
  assert len(new.invars) == 1 and len(new.outvars) == 1
  assert [e.primitive.name for e in new.params["call_jaxpr"].eqns] == ["sin"]
  assert pe.dce_jaxpr_call_rule([False, False], eqn) == ([False, False], None)
  body = jaxlite.make_jaxpr(lambda u, v: (jlnp.sin(u), jlnp.cos(v)))(1.0, 2.0)
  eqn = jaxlite.make_jaxpr(lambda x, y: closed_call_p.bind(x, y, call_jaxpr=body))(
      1.0, 2.0).jaxpr.eqns[0]
  used_inputs, new = pe.dce_rules[closed_call_p]([False, True], eqn)
  assert used_inputs == [False, True]
  assert [e.primitive.name for e in new.params["call_jaxpr"].jaxpr.eqns] == ["cos"]
