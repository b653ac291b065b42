"""`jax.custom_derivatives.linear_call`: values, jvp, grad (through the user's transpose),
linear_transpose, printed jaxprs and errors against JAX 0.10.2 and known answers."""
import importlib

import numpy as np
import pytest

import jaxlite
from conftest import oracle


def _programs(jax):
  linear_call = importlib.import_module(jax.__name__ + ".custom_derivatives").linear_call

  def f(x, y=3.0):
    # fun multiplies by r; its declared transpose multiplies by 7 (not the true transpose), so
    # grad shows which rule ran.
    return linear_call(lambda r, v: v * r, lambda r, t: 7.0 * t, y, x)

  def h(x):
    return linear_call(lambda r, v: {"a": v[0] * r["s"], "b": v[1] * 2.0},
                       lambda r, c: (c["a"] * r["s"], c["b"] * 2.0), {"s": 5.0}, (x, x))
  jnp = jax.numpy
  return [f(2.0), jax.jvp(f, (2.0,), (1.0,)), jax.grad(f)(2.0), jax.jit(jax.grad(f))(2.0),
          jax.linear_transpose(f, 1.0)(1.0), h(1.0)["a"],
          jax.grad(lambda x: h(x)["a"] + h(x)["b"])(1.0),
          jax.grad(lambda x: f(x).sum())(jnp.arange(3.0)),
          jax.vjp(f, jnp.ones(2))[1](jnp.array([1.0, 2.0]))]


KNOWN = [6.0, (6.0, 3.0), 7.0, 7.0, (7.0,), 5.0, 7.0, np.array([7.0, 7.0, 7.0]),
         (np.array([7.0, 14.0]),)]


def test_linear_call_matches_jax():
  got = _programs(jaxlite)
  for g, w in zip(got, KNOWN):
    for a, b in zip(jaxlite.tree.leaves(g), jaxlite.tree.leaves(w)):
      np.testing.assert_allclose(np.asarray(a), b)
  jax = oracle()
  for g, w in zip(got, _programs(jax)):
    for a, b in zip(jaxlite.tree.leaves(g), jax.tree.leaves(w)):
      a, b = np.asarray(a), np.asarray(b)
      assert a.dtype == b.dtype and a.shape == b.shape
      np.testing.assert_allclose(a, b)


def _jaxprs(jax):
  linear_call = importlib.import_module(jax.__name__ + ".custom_derivatives").linear_call
  f = lambda x: linear_call(lambda r, v: v * r, lambda r, t: 7.0 * t, 3.0, x)
  return [str(jax.make_jaxpr(f)(2.0)), str(jax.make_jaxpr(jax.grad(f))(2.0))]


def test_printed_jaxprs_match_jax():
  got = _jaxprs(jaxlite)
  assert got[0] == """{ lambda ; a:f32[]. let
    b:f32[] = linear_call[
      callee={ lambda ; c:f32[] d:f32[]. let e:f32[] = mul d c in (e,) }
      num_callee_consts=0
      num_res=1
      transpose_thunk=<function _memoize.<locals>.memoized at 0xXXXXXXXXXXXX>
    ] 3.0:f32[] a
  in (b,) }"""
  jax = oracle()
  assert got == _jaxprs(jax)


def test_errors_and_vmap():
  from jaxlite.custom_derivatives import linear_call
  bad = lambda x: linear_call(lambda r, v: v * r, lambda r, t: (t, t), 3.0, x)
  with pytest.raises(TypeError, match="transpose output pytree structure must match"):
    jaxlite.grad(bad)(1.0)
  f = lambda x: linear_call(lambda r, v: v * r, lambda r, t: 7.0 * t, 3.0, x)
  # As in JAX 0.10.2, linear_call has no batching rule.
  with pytest.raises(NotImplementedError, match="Batching rule for 'linear_call'"):
    jaxlite.vmap(f)(jaxlite.numpy.ones(2))
