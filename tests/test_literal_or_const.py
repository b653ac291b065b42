"""Which values a jaxpr inlines as literals and which it takes as consts (issue 34).

JAX's rule, established by running JAX 0.10.2 over the table below: a value created while a
trace stages is that trace's tracer, so a 0-d one is a literal there; a jax Array created before
the trace began (eagerly, or under an enclosing trace) is a const (a constvar at top level, a
leading argument of an inner jit, an operand of cond/while/scan/custom_jvp when closed over by
their bodies). Python scalars, NumPy scalars and NumPy 0-d arrays are literals wherever they
come from (contract 2.3). Weak and strong types, ints and bools follow the same rule.

Each case prints `make_jaxpr`'s text (with the const count); the expectations are JAX's,
recorded in data/literal_or_const.json, so the table runs without JAX; where JAX is installed
each case is also compared with it live. `python tests/test_literal_or_const.py --record`
re-records the file from real JAX.
"""
import json
import pathlib

import numpy as np
import pytest

import jaxlite
from conftest import oracle

DATA = pathlib.Path(__file__).parent / "data" / "literal_or_const.json"


def _cases(m):
  """name -> thunk printing what the case stages, for module `m` (jax or jaxlite)."""
  jnp, lax = m.numpy, m.lax
  cases = {}

  def jp(f, *args):
    closed = m.make_jaxpr(f)(*args)
    return f"consts={len(closed.consts)}\n{closed}"

  z = jnp.array(2.)                 # weak float32, made eagerly
  zs = jnp.float32(2.)              # strong
  zi = jnp.array(3)                 # weak int32
  zb = jnp.array(True)
  zc = lax.convert_element_type(2., jnp.float32)
  zv = jnp.array([1., 2.])          # not 0-d

  # -- made eagerly, closed over at top level: consts (a 0-d Array as any other Array)
  cases["top_jnp_weak_0d"] = lambda: jp(lambda y: y * z, 1.)
  cases["top_jnp_strong_0d"] = lambda: jp(lambda y: y * zs, np.float32(1.))
  cases["top_jnp_int_0d"] = lambda: jp(lambda y: y + zi, 1)
  cases["top_jnp_bool_0d"] = lambda: jp(lambda y: jnp.logical_and(y, zb), True)
  cases["top_lax_convert_0d"] = lambda: jp(lambda y: y * zc, np.float32(1.))
  cases["top_jnp_1d"] = lambda: jp(lambda y: y * zv, 1.)
  cases["top_same_0d_twice_one_constvar"] = lambda: jp(lambda y: y * z + z, 1.)
  cases["top_asarray_of_top_0d"] = lambda: jp(lambda y: y * jnp.asarray(z), 1.)
  # -- NumPy and Python scalars: literals wherever they come from (contract 2.3)
  cases["top_np_float32"] = lambda: jp(lambda y: y * np.float32(2), np.float32(1.))
  cases["top_np_0d"] = lambda: jp(lambda y: y * np.array(2., np.float32), np.float32(1.))
  cases["top_py_scalar"] = lambda: jp(lambda y: y * 2., 1.)
  # -- made while the trace stages: literals
  cases["inside_jnp_array"] = lambda: jp(lambda y: y * jnp.array(0.5), 1.)
  cases["inside_jnp_float32"] = lambda: jp(lambda y: y * jnp.float32(2), np.float32(1.))
  cases["inside_jnp_zeros_0d"] = lambda: jp(lambda y: y + jnp.zeros(()), np.float32(1.))
  cases["inside_jnp_full_0d"] = lambda: jp(lambda y: y + jnp.full((), 2.), np.float32(1.))
  cases["inside_asarray_np"] = lambda: jp(
      lambda y: y * jnp.asarray(np.float32(0.5)), np.float32(1.))
  cases["inside_lax_convert"] = lambda: jp(
      lambda y: y * lax.convert_element_type(2., jnp.float32), np.float32(1.))
  cases["inside_made_then_computed"] = lambda: jp(lambda y: y + (jnp.array(0.) + 1), 1.)

  # -- nested jit: a value of the enclosing trace is a leading argument, an eager one a const
  def nested_top_0d(y):
    return m.jit(lambda u: u * z)(y)
  cases["nested_jit_closes_top_0d"] = lambda: jp(nested_top_0d, 1.)

  def nested_inner_0d(y):
    w = jnp.array(0.)
    return m.jit(lambda u: u + w)(y)
  cases["nested_jit_closes_outer_made_0d"] = lambda: jp(nested_inner_0d, 1.)

  def nested_inner_1d(y):
    w = jnp.array([1., 2.])
    return m.jit(lambda u: u + w)(y)
  cases["nested_jit_closes_outer_made_1d"] = lambda: jp(nested_inner_1d, 1.)

  def nested_top_1d(y):
    return m.jit(lambda u: u * zv)(y)
  cases["nested_jit_closes_top_1d"] = lambda: jp(nested_top_1d, 1.)
  cases["jit_closes_top_0d"] = lambda: jp(m.jit(lambda y: y * z), 1.)

  # -- make_jaxpr inside a trace: a value of the enclosing trace is a const (issue 34's form)
  def inner_make_jaxpr(y):
    w = jnp.array(0)
    return jp(lambda u: u + w, 1.)
  cases["make_jaxpr_in_make_jaxpr_outer_made_0d"] = lambda: m.make_jaxpr(
      lambda y: (out.append(inner_make_jaxpr(y)), y)[1])(1.) and out.pop()
  out = []

  def in_jit(x):
    w = jnp.array(0)
    out.append(jp(lambda u: u + w, 1.))
    return x

  def make_jaxpr_in_jit():
    m.jit(in_jit)(1.)
    return out.pop()
  cases["make_jaxpr_in_jit_outer_made_0d"] = make_jaxpr_in_jit

  def make_jaxpr_in_eager_vmap():
    def f(y):
      w = jnp.array(0.5)  # made under vmap alone: eager
      out.append(jp(lambda u: u * w, 1.))
      return y
    m.vmap(f)(jnp.ones(3))
    return out.pop()
  cases["make_jaxpr_in_eager_vmap"] = make_jaxpr_in_eager_vmap

  # -- closure_convert (equinox's, lineax's operators): a value of the trace is a const
  def converted(y):
    w = jnp.array(0.5)
    f, consts = m.closure_convert(lambda u: u * w + y, y)
    out.append(len(consts))
    return f(y, *consts)

  def closure_convert_in_trace():
    text = jp(converted, 1.)
    return f"n_consts={out.pop()}\n{text}"
  cases["closure_convert_outer_made_0d"] = closure_convert_in_trace
  cases["closure_convert_top_0d"] = lambda: f"n_consts={len(m.closure_convert(lambda u: u * z, 1.)[1])}"

  # -- control flow bodies: an eager 0-d Array is hoisted as an operand (from a constvar), one
  # made in the enclosing trace is passed as a literal operand
  cases["cond_body_top_0d"] = lambda: jp(
      lambda y: lax.cond(y > 0, lambda u: u * z, lambda u: u, y), 1.)

  def cond_inner(y):
    w = jnp.array(3.)
    return lax.cond(y > 0, lambda u: u * w, lambda u: u, y)
  cases["cond_body_outer_made_0d"] = lambda: jp(cond_inner, 1.)
  cases["switch_top_0d"] = lambda: jp(
      lambda u: lax.switch(1, [lambda v: v * z, lambda v: v + z], u), 1.)
  cases["while_body_top_0d"] = lambda: jp(
      lambda y: lax.while_loop(lambda u: u < z, lambda u: u + z, y), 1.)

  def while_inner(y):
    w = jnp.array(3.)
    return lax.while_loop(lambda u: u < w, lambda u: u + w, y)
  cases["while_body_outer_made_0d"] = lambda: jp(while_inner, 1.)
  cases["fori_body_top_0d"] = lambda: jp(
      lambda u: lax.fori_loop(0, 3, lambda i, v: v * z, u), 1.)
  cases["scan_body_top_0d"] = lambda: jp(
      lambda y: lax.scan(lambda c, x: (c * z, x + z), y, jnp.ones(2)), 1.)

  def scan_inner(y):
    w = jnp.array(3.)
    return lax.scan(lambda c, x: (c * w, x), y, jnp.ones(2))
  cases["scan_body_outer_made_0d"] = lambda: jp(scan_inner, 1.)

  def scan_inner_1d(y):
    w = jnp.array([3., 4.])
    return lax.scan(lambda c, x: (c * w, x), y * jnp.ones(2), jnp.ones(2))
  cases["scan_body_outer_made_1d"] = lambda: jp(scan_inner_1d, 1.)
  cases["map_body_top_0d"] = lambda: jp(lambda u: lax.map(lambda v: v * z, u), zv)

  # -- transformations
  cases["vmap_top_0d"] = lambda: jp(m.vmap(lambda y: y * z), jnp.ones(3))
  cases["vmap_inside_made_0d"] = lambda: jp(m.vmap(lambda y: y * jnp.array(0.5)), jnp.ones(3))
  cases["grad_top_0d"] = lambda: jp(m.grad(lambda y: y * y * z), 1.)
  cases["grad_inside_made_0d"] = lambda: jp(m.grad(lambda y: y * y * jnp.array(0.5)), 1.)
  cases["jvp_top_0d"] = lambda: jp(lambda u: m.jvp(lambda v: v * z, (u,), (u,)), 1.)
  cases["vjp_top_0d"] = lambda: jp(lambda u: m.vjp(lambda v: v * z, u)[1](u), 1.)
  cases["linearize_top_0d"] = lambda: jp(lambda u: m.linearize(lambda v: v * z, u)[1](u), 1.)
  # an eager linearize/vjp: made under them (no staging trace), the value is a const of the
  # linear function's jaxpr
  cases["linearize_eager_inside_made_0d"] = lambda: jp(
      m.linearize(lambda v: jnp.sin(v) * jnp.array(0.5), 1.)[1], 1.)
  cases["vjp_eager_inside_made_0d"] = lambda: jp(
      m.vjp(lambda v: jnp.sin(v) * jnp.array(0.5), 1.)[1], 1.)
  cases["checkpoint_top_0d"] = lambda: jp(m.checkpoint(lambda u: u * z), 1.)
  cases["grad_checkpoint_top_0d"] = lambda: jp(
      m.grad(m.checkpoint(lambda u: jnp.sin(u) * z)), 1.)

  def vmap_in_trace(y):
    w = jnp.array(0.5)
    return m.vmap(lambda u: u * w)(y)
  cases["vmap_closes_trace_made_0d"] = lambda: jp(vmap_in_trace, jnp.ones(3))

  def jit_in_vmap(y):
    w = jnp.array(0.5)  # made under vmap inside the trace: the trace's value
    return m.jit(lambda u: u * w)(y)
  cases["jit_in_vmap_closes_made_0d"] = lambda: jp(m.vmap(jit_in_vmap), jnp.ones(3))

  # -- custom_jvp / custom_vjp: every const of the function is an operand (num_consts)
  def custom_inner(y):
    w = jnp.array(0.5)

    @m.custom_jvp
    def f(u):
      return u * w
    f.defjvp(lambda p, t: (f(p[0]), t[0] * w))
    return f(y)
  cases["custom_jvp_closes_outer_made_0d"] = lambda: jp(custom_inner, 1.)

  @m.custom_jvp
  def jvp_top(u):
    return u * z
  jvp_top.defjvp(lambda p, t: (jvp_top(p[0]), t[0] * z))
  cases["custom_jvp_closes_top_0d"] = lambda: jp(jvp_top, 1.)

  @m.custom_jvp
  def jvp_top_1d(u):
    return u * zv
  jvp_top_1d.defjvp(lambda p, t: (jvp_top_1d(p[0]), t[0] * zv))
  cases["custom_jvp_closes_top_1d"] = lambda: jp(jvp_top_1d, 1.)

  @m.custom_vjp
  def vjp_top(u):
    return u * z
  vjp_top.defvjp(lambda u: (vjp_top(u), None), lambda r, c: (c,))
  cases["custom_vjp_closes_top_0d"] = lambda: jp(vjp_top, 1.)
  cases["grad_custom_vjp_closes_top_0d"] = lambda: jp(m.grad(vjp_top), 1.)

  # -- iterating an Array while staging: one made before is unstacked, one made inside sliced
  cases["iterate_top_1d"] = lambda: jp(lambda y: [y * r for r in zv], 1.)
  cases["iterate_inside_made_1d"] = lambda: jp(lambda y: [y * r for r in jnp.array([3., 4.])], 1.)

  def iterate_outer_made(y):
    w = jnp.array([3., 4.])
    return m.jit(lambda u: [u * r for r in w])(y)
  cases["iterate_outer_made_1d_in_jit"] = lambda: jp(iterate_outer_made, 1.)
  return cases


def _run(m, name):
  try:
    return _cases(m)[name]()
  except Exception as e:  # recorded too: a case JAX rejects must be rejected alike
    return f"{type(e).__name__}: {str(e).splitlines()[0]}"


RECORDED = json.loads(DATA.read_text()) if DATA.exists() else {}


def test_the_table_is_the_recorded_one():
  assert sorted(_cases(jaxlite)) == sorted(RECORDED)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_matches_recorded_jax(name):
  assert _run(jaxlite, name) == RECORDED[name]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_matches_live_jax(name):
  real = oracle()
  assert _run(jaxlite, name) == _run(real, name)


def test_an_array_made_under_a_finished_trace_is_a_const():
  """JAX raises UnexpectedTracerError for a value leaked out of a finished trace (it is a
  tracer there); jaxlite's is a concrete Array, which a later trace takes as a const (its
  value, not a literal of a trace that no longer exists)."""
  jnp = jaxlite.numpy
  leaked = []
  jaxlite.make_jaxpr(lambda y: (leaked.append(jnp.array(4.)), y)[1])(1.)
  closed = jaxlite.make_jaxpr(lambda y: y * leaked[0])(1.)
  assert str(closed) == "{ lambda a:f32[]; b:f32[]. let c:f32[] = mul b a in (c,) }"
  assert [float(c) for c in closed.consts] == [4.0]
  assert float(jaxlite.jit(lambda y: y * leaked[0])(2.)) == 8.0


def test_a_closed_over_0d_array_computes_as_a_const():
  """The const reaches every backend tier: the values are the literal's were."""
  jnp = jaxlite.numpy
  z = jnp.array(3.)
  f = jaxlite.jit(lambda y: jaxlite.lax.while_loop(lambda u: u < 10 * z, lambda u: u + z, y))
  assert float(f(0.)) == 30.0
  g = jaxlite.jit(jaxlite.grad(lambda y: jnp.sin(y) * z))
  np.testing.assert_allclose(float(g(0.5)), 3 * np.cos(0.5), rtol=1e-6)


if __name__ == "__main__":
  import sys
  if sys.argv[1:] == ["--record"]:
    import jax
    table = {name: _run(jax, name) for name in sorted(_cases(jax))}
    DATA.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(table)} cases from jax {jax.__version__} in {DATA}")
