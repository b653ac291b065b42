"""Tier 0's whole while loop (`numpy_codegen.while_to_source`): the cond's and the body's lines in
one generated loop, each one's invariant eqns hoisted. Every program here runs both ways, the
generated loop and Python's loop over the compiled cond and body (`backend.while_python`, the
path before it), and the two must agree bit for bit; each is also checked against real JAX
where installed."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import numpy_codegen
from conftest import configured, oracle, x64


def _counter(jax):
  jnp, lax = jax.numpy, jax.lax
  # two carries trading places each iteration (the carry's rebinding reads the old values)
  def f(n):
    return lax.while_loop(lambda c: c[0] < n,
                          lambda c: (c[0] + 1, c[2], c[1], c[3] * 3 + c[1]), (0, 1, 2, 5))
  return f, (np.int32(9),)


def _arrays_with_invariants(jax):
  jnp, lax = jax.numpy, jax.lax
  # cos(x) and the cond's bound 2 * limit are loop-invariant (hoisted); the carry's array is a
  # fresh ufunc result each iteration that later lines write into (out=)
  def f(x, limit):
    def cond(c):
      i, v, s = c
      return (i < 12) & (s < 2.0 * limit)
    def body(c):
      i, v, s = c
      w = jnp.sin(v) * 2.0 + jnp.cos(x)
      return i + 1, w, s + jnp.sum(w * w)
    return lax.while_loop(cond, body, (0, x, 0.0))
  return f, (np.linspace(-1.0, 1.0, 7), np.float64(150.0))


def _literal_and_passthrough_carry(jax):
  jnp, lax = jax.numpy, jax.lax
  # a literal result, a carry the body passes through, a predicate read straight off the carry
  def f(x):
    def body(c):
      go, i, y, z = c
      return i < 4, i + 1, y + z, z
    return lax.while_loop(lambda c: c[0], body, (True, 0, x, x * 0.5))
  return f, (np.arange(5.0),)


def _zero_iterations(jax):
  jnp, lax = jax.numpy, jax.lax
  def f(x):
    return lax.while_loop(lambda c: c[0] > 10, lambda c: (c[0] + 1, jnp.exp(c[1])), (0, x))
  return f, (np.arange(3.0),)


def _in_place_updates(jax):
  jnp, lax = jax.numpy, jax.lax
  # dynamic_update_slice and scatter into buffers the iteration made (in-place lines)
  def f(x):
    def body(c):
      i, buf = c
      buf = buf * 1.5
      buf = lax.dynamic_update_slice(buf, jnp.sin(lax.dynamic_slice(buf, (i,), (1,)) + i), (i,))
      buf = buf.at[(i + 3) % 8].add(1.0)
      return i + 1, buf
    return lax.while_loop(lambda c: c[0] < 6, body, (0, x))
  return f, (np.linspace(0.0, 1.0, 8),)


def _nested(jax):
  jnp, lax = jax.numpy, jax.lax
  def f(x):
    def inner(v):
      return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 1.25 - 0.1, c[1] + 1),
                            (v, 0))[0]
    return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, inner(c[1])), (0, x))
  return f, (np.arange(4.0),)


def _random_walk(jax):
  jnp, lax = jax.numpy, jax.lax
  # diffrax's Brownian tree walk in small: split and draw a normal until a bound, keys carried
  def f(key, t):
    def cond(c):
      _, level, s, _ = c
      return (level < 10) & (s < t)
    def body(c):
      key, level, s, acc = c
      key, sub = jax.random.split(key)
      z = jax.random.normal(sub, ())
      return key, level + 1, s + 2.0 ** -level, acc + z * jnp.sqrt(2.0 ** -level)
    return lax.while_loop(cond, body, (key, 0, 0.0, 0.0))
  return f, ("key", np.float64(1.9))


def _fori(jax):
  jnp, lax = jax.numpy, jax.lax
  # a traced bound: a while loop (a static one would be a scan)
  def f(x, n):
    return lax.fori_loop(0, n, lambda i, v: jnp.tanh(v @ v.T) + i, x)
  return f, (np.linspace(-0.5, 0.5, 9).reshape(3, 3), np.int32(7))


PROGRAMS = [_counter, _arrays_with_invariants, _literal_and_passthrough_carry,
            _zero_iterations, _in_place_updates, _nested, _random_walk, _fori]


def _args(mod, args):
  return [mod.random.PRNGKey(3) if isinstance(a, str) else a for a in args]


def _run(program, generated: bool, monkeypatch):
  """`program` under jit, its while loops run by the generated loop or by Python's loop; checks
  that the path asked for is the one taken."""
  f, args = program(jax)
  taken = []
  real = backend_lib.compile_while

  def spy(*a, **k):
    loop = real(*a, **k) if generated else None
    taken.append(loop)
    return loop
  monkeypatch.setattr(backend_lib, "compile_while", spy)
  out = jax.jit(f)(*_args(jax, args))
  monkeypatch.setattr(backend_lib, "compile_while", real)
  assert taken, "the program ran no while loop"
  if generated:
    assert all(loop is not None and "while True:" in loop.__jaxlite_source__ for loop in taken)
  return [np.asarray(o) for o in jax.tree_util.tree_leaves(out)]


@pytest.mark.parametrize("tier", [0, 1])
@pytest.mark.parametrize("enable_x64", [False, True])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__[1:] for p in PROGRAMS])
def test_generated_loop_equals_the_python_loop(program, enable_x64, tier, monkeypatch):
  with x64(enable_x64), configured(jax_jaxlite_tier=tier):
    want = _run(program, False, monkeypatch)
    got = _run(program, True, monkeypatch)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    assert g.tobytes() == w.tobytes(), (g, w)


@pytest.mark.parametrize("enable_x64", [False, True])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__[1:] for p in PROGRAMS])
def test_generated_loop_against_jax(program, enable_x64, monkeypatch):
  real = oracle()
  with x64(enable_x64), configured(real.config, jax_enable_x64=enable_x64):
    got = _run(program, True, monkeypatch)
    f, args = program(real)
    out = real.jit(f)(*_args(real, args))
    want = [np.asarray(o) for o in real.tree_util.tree_leaves(out)]
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    if np.issubdtype(g.dtype, np.floating):
      np.testing.assert_allclose(g, w, rtol=1e-5 if g.dtype == np.float32 else 1e-12)
    else:
      np.testing.assert_array_equal(g, w)


def test_effects_keep_their_order(capfd):
  # prints in the cond and the body: once per test of the predicate and per iteration, as JAX
  def f(x):
    def cond(c):
      jax.debug.print("cond {}", c[0])
      return c[0] < 2
    def body(c):
      jax.debug.print("body {}", c[0])
      return c[0] + 1, c[1] * 2.0
    return lax.while_loop(cond, body, (0, x))
  out = jax.jit(f)(1.5)
  assert float(out[1]) == 6.0
  assert capfd.readouterr().out.split("\n") == [
      "cond 0", "body 0", "cond 1", "body 1", "cond 2", ""]


def test_which_loops_are_generated():
  def loop_of(f, *args, backend=numpy_codegen.NUMPY):
    closed = jax.make_jaxpr(f)(*args)
    eqn = next(e for e in closed.jaxpr.eqns if e.primitive.name == "while")
    p = eqn.params
    return backend_lib.compile_while(p["cond_jaxpr"], p["body_jaxpr"], p["cond_nconsts"],
                                     p["body_nconsts"], backend)

  f, args = _arrays_with_invariants(jax)
  src = loop_of(f, *args).__jaxlite_source__
  # the invariant cos(x) is computed once, above the loop
  assert src.index("np.cos(") < src.index("while True:")
  # a vmapped predicate (examples stop at different iterations) stays on Python's loop
  batched = jax.vmap(lambda n: lax.while_loop(lambda i: i < n, lambda i: i + 1, 0))
  assert loop_of(batched, np.arange(3)) is None
  np.testing.assert_array_equal(batched(np.arange(3)), [0, 1, 2])

  class OwnCompile(numpy_codegen.NumpyBackend):
    """A backend with a `compile` of its own: its cond and body need not be tier 0's code."""
    name = "own-compile"

    def compile(self, closed, donated=()):
      return super().compile(closed, donated)
  assert loop_of(f, *args, backend=OwnCompile()) is None
