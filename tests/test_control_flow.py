"""Tests for structured control flow (cond, switch, while_loop, fori_loop, scan, map,
associative_scan): values against Python reference loops, vmap against a loop of calls,
gradients against finite differences, JAX's error texts, and printed jaxprs against real JAX."""

import numpy as np
import pytest
from conftest import oracle

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.base import core
from jaxlite._src.compiler import numpy_codegen

F32 = np.float32


def arr(*xs, dtype=F32):
  return np.asarray(xs, dtype)


def _seq(n, start=0.5, step=0.25):
  return (start + step * np.arange(n)).astype(F32)


# --- cases: each builds its function from a (lax, jnp) pair, so real JAX can run it too --------
# (id, builder(L, N) -> fn, args, reference(*numpy args) -> numpy result or tuple)


def _ref_fori(lo, hi, body, x):
  for i in range(lo, hi):
    x = body(i, x)
  return x


def _ref_scan(f, c, xs, reverse=False):
  idx = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
  ys = [None] * len(xs)
  for i in idx:
    c, ys[i] = f(c, xs[i])
  return c, jax.tree_util.tree_map(lambda *y: np.stack(y), *ys)


def _ref_while(pred, body, x):
  while pred(x):
    x = body(x)
  return x


VALUE_CASES = [
    ("cond_true", lambda L, N: lambda p, x: L.cond(p, N.sin, lambda x: x * 2.0, x),
     (True, _seq(3)), lambda p, x: np.sin(x) if p else x * 2),
    ("cond_false", lambda L, N: lambda p, x: L.cond(p, N.sin, lambda x: x * 2.0, x),
     (False, _seq(3)), lambda p, x: np.sin(x) if p else x * 2),
    ("cond_int_pred", lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1, lambda x: x - 1, x),
     (np.int32(3), F32(2.0)), lambda p, x: x + 1 if p else x - 1),
    ("cond_float_pred_zero", lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1,
                                                             lambda x: x - 1, x),
     (F32(0.0), F32(2.0)), lambda p, x: x + 1 if p else x - 1),
    ("cond_pytree_operands",
     lambda L, N: lambda p, x, y: L.cond(p, lambda a, b: (a["u"] * b, b),
                                         lambda a, b: (a["u"] + b, b * 2), {"u": x}, y),
     (True, _seq(2), F32(3.0)), lambda p, x, y: (x * y, y) if p else (x + y, y * 2)),
    ("cond_closure", lambda L, N: lambda p, x, z: L.cond(p, lambda x: x * z, lambda x: x - z, x),
     (False, _seq(3), F32(1.5)), lambda p, x, z: x * z if p else x - z),
    ("cond_operand_kw", lambda L, N: lambda p, x: L.cond(p, N.cos, N.sin, operand=x),
     (True, _seq(2)), lambda p, x: np.cos(x) if p else np.sin(x)),
    ("switch_mid", lambda L, N: lambda i, x: L.switch(i, [N.sin, N.cos, lambda x: x * 3.0], x),
     (np.int32(1), _seq(3)), lambda i, x: [np.sin, np.cos, lambda x: x * 3][i](x)),
    ("switch_clamp_high", lambda L, N: lambda i, x: L.switch(i, [N.sin, N.cos, N.exp], x),
     (np.int32(9), _seq(2)), lambda i, x: np.exp(x)),
    ("switch_clamp_low", lambda L, N: lambda i, x: L.switch(i, [N.sin, N.cos, N.exp], x),
     (np.int32(-4), _seq(2)), lambda i, x: np.sin(x)),
    ("while_count", lambda L, N: lambda x: L.while_loop(lambda c: c[0] < 10,
                                                        lambda c: (c[0] + 1, c[1] * 1.5), (0, x)),
     (_seq(2),), lambda x: _ref_while(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * F32(1.5)),
                                      (0, x))),
    ("while_value_pred", lambda L, N: lambda x: L.while_loop(lambda c: c < 100.0,
                                                             lambda c: c * 3.0 + 1.0, x),
     (F32(0.5),), lambda x: _ref_while(lambda c: c < 100, lambda c: c * F32(3) + F32(1), x)),
    ("fori_static", lambda L, N: lambda x: L.fori_loop(0, 5, lambda i, c: c * 2.0 + i, x),
     (_seq(3),), lambda x: _ref_fori(0, 5, lambda i, c: c * F32(2) + F32(i), x)),
    ("fori_empty", lambda L, N: lambda x: L.fori_loop(4, 2, lambda i, c: c + i, x),
     (_seq(3),), lambda x: x),
    ("fori_traced_bound", lambda L, N: lambda n, x: L.fori_loop(1, n, lambda i, c: c + c * i, x),
     (np.int32(4), _seq(2)), lambda n, x: _ref_fori(1, int(n), lambda i, c: c + c * F32(i), x)),
    ("scan_cumsum", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c + x, c * x), c, xs),
     (F32(1.0), _seq(5)), lambda c, xs: _ref_scan(lambda c, x: (c + x, c * x), c, xs)),
    ("scan_reverse", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c * 0.5 + x, c), c, xs,
                                                       reverse=True),
     (F32(1.0), _seq(4)),
     lambda c, xs: _ref_scan(lambda c, x: (c * F32(0.5) + x, c), c, xs, reverse=True)),
    ("scan_unroll", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c + N.sin(x), c), c, xs,
                                                      unroll=3),
     (F32(0.0), _seq(7)), lambda c, xs: _ref_scan(lambda c, x: (c + np.sin(x), c), c, xs)),
    ("scan_pytrees",
     lambda L, N: lambda c, xs: L.scan(
         lambda c, x: ({"a": c["a"] + x[0], "b": c["b"] * x[1]}, (c["a"], [x[0] * 2])), c, xs),
     ({"a": F32(0.0), "b": _seq(2)}, (_seq(3), np.ones((3, 2), F32) * 1.5)),
     lambda c, xs: _ref_scan(lambda c, x: ({"a": c["a"] + x[0], "b": c["b"] * x[1]},
                                           (c["a"], [x[0] * 2])),
                             c, list(zip(*xs)))),
    ("scan_length_no_xs", lambda L, N: lambda c: L.scan(lambda c, _: (c * 2.0, c), c, None,
                                                        length=4),
     (F32(1.0),), lambda c: _ref_scan(lambda c, _: (c * 2, c), c, [None] * 4)),
    ("scan_forwarded_carry_and_xs",
     lambda L, N: lambda c, xs: L.scan(lambda c, x: ((c[0], c[1] + x), (x, c[1])), c, xs),
     ((F32(2.0), F32(1.0)), _seq(3)),
     lambda c, xs: _ref_scan(lambda c, x: ((c[0], c[1] + x), (x, c[1])), c, xs)),
    ("scan_zero_length", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c + x, c * x), c, xs),
     (F32(1.0), np.zeros(0, F32)), lambda c, xs: (c, np.zeros(0, F32))),
    ("map", lambda L, N: lambda xs: L.map(lambda x: N.sin(x) * 2.0, xs), (_seq(4),),
     lambda xs: np.sin(xs) * 2),
    ("map_pytree", lambda L, N: lambda xs: L.map(lambda x: (x["a"] + 1.0, x["a"] * x["b"]), xs),
     ({"a": _seq(3), "b": _seq(3, 2.0)},), lambda xs: (xs["a"] + 1, xs["a"] * xs["b"])),
    ("associative_scan_add", lambda L, N: lambda xs: L.associative_scan(N.add, xs), (_seq(7),),
     lambda xs: np.cumsum(xs)),
    ("associative_scan_reverse_mul",
     lambda L, N: lambda xs: L.associative_scan(N.multiply, xs, reverse=True), (_seq(6),),
     lambda xs: np.cumprod(xs[::-1])[::-1]),
    ("associative_scan_axis1_pytree",
     lambda L, N: lambda a, b: L.associative_scan(lambda x, y: (x[0] + y[0], x[1] * y[1]),
                                                  (a, b), axis=1),
     (np.ones((2, 5), F32), np.full((2, 5), 1.5, F32)),
     lambda a, b: (np.cumsum(a, 1), np.cumprod(b, 1))),
]


def _build(builder):
  return builder(lax, jnp)


def _tree_close(got, want, rtol=1e-5, atol=1e-6):
  got_leaves = jax.tree_util.tree_leaves(got)
  want_leaves = jax.tree_util.tree_leaves(want)
  assert len(got_leaves) == len(want_leaves), (got, want)
  for g, w in zip(got_leaves, want_leaves):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,builder,args,ref", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_value_against_python_loop(name, builder, args, ref, mode):
  fn = _build(builder)
  if mode == "jit":
    fn = jax.jit(fn)
  _tree_close(fn(*args), ref(*args))


@pytest.mark.parametrize("name,builder,args,ref", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_value_dtypes_and_weak_types_match_jax(name, builder, args, ref):
  jax_ = oracle()
  got = _build(builder)(*args)
  want = builder(jax_.lax, jax_.numpy)(*args)
  got_leaves = jax.tree_util.tree_leaves(got)
  want_leaves = jax_.tree_util.tree_leaves(want)
  assert [np.asarray(g).dtype for g in got_leaves] == [np.asarray(w).dtype for w in want_leaves]
  assert [getattr(g, "weak_type", None) for g in got_leaves] == \
      [getattr(w, "weak_type", None) for w in want_leaves]
  for g, w in zip(got_leaves, want_leaves):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)


# --- weak-typed inits take the body's dtype ------------------------------------------------------


@pytest.mark.parametrize("run,want_dtype,want_weak", [
    (lambda: lax.while_loop(lambda c: c < 10, lambda c: c + 1.5, 0), np.float32, False),
    (lambda: lax.while_loop(lambda c: c < 10, lambda c: c + 1, 0), np.int32, True),
    (lambda: lax.scan(lambda c, x: (c + x, None), 0, jnp.ones(3))[0], np.float32, False),
    (lambda: lax.scan(lambda c, x: (c + x, None), 0.0, jnp.ones(3, jnp.int32))[0], np.float32,
     True),
    (lambda: lax.fori_loop(0, 3, lambda i, c: c + jnp.float32(0.5), 0), np.float32, False),
    (lambda: lax.cond(True, lambda: 1.0, lambda: jnp.float32(2.0)), np.float32, False),
    (lambda: lax.cond(True, lambda: 1.0, lambda: 2.0), np.float32, True),
])
def test_weak_type_promotion_of_carries(run, want_dtype, want_weak):
  out = run()
  assert out.dtype == want_dtype and out.weak_type == want_weak


# --- errors: JAX's texts -------------------------------------------------------------------------


def _f_float():
  return 1.0


def _f_int():
  return 2


ERROR_CASES = [
    (lambda: lax.cond(True, 1.0, lambda x: x + 1, 2.0), TypeError,
     "lax.cond: true_fun and false_fun arguments should be callable."),
    (lambda: lax.cond(jnp.array([True]), lambda: 1.0, lambda: 2.0), TypeError,
     "Pred must be a scalar, got [ True] of shape (1,)."),
    (lambda: lax.cond(None, lambda: 1.0, lambda: 2.0), TypeError, "cond predicate is None"),
    (lambda: lax.cond("a", lambda: 1.0, lambda: 2.0), TypeError,
     "Pred must be a scalar, got a of type <class 'str'>"),
    (lambda: lax.cond([True], lambda: 1.0, lambda: 2.0), TypeError,
     "Pred must be a scalar, got [True] of type <class 'list'>"),
    (lambda: lax.cond(1j, lambda: 1.0, lambda: 2.0), TypeError,
     "Pred type must be either boolean or number, got complex64."),
    (lambda: lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0), TypeError,
     ("if 'operand' keyword is passed then no positional operands can be passed, got "
     "operand=2.0 and positional operands (1.0,)")),
    (lambda: lax.cond(True, _f_float, _f_int), TypeError,
     ("cond branches must have equal output types but they differ.\n\n"
     f"true_fun is _f_float at {__file__}:{_f_float.__code__.co_firstlineno}\n"
     f"false_fun is _f_int at {__file__}:{_f_int.__code__.co_firstlineno}\n\n"
     "The output of true_fun has type float32[] but the corresponding output of false_fun has "
     "type int32[], so the dtypes do not match.\n\n"
     "Revise true_fun and/or false_fun so that all output types match.")),
    (lambda: lax.cond(True, lambda: (1.0, jnp.ones(2)), lambda: (1, jnp.ones((3, 1)))),
     TypeError,
     ("  * the output of true_fun at path [0] has type float32[] but the corresponding output of "
     "false_fun has type int32[], so the dtypes do not match;\n"
     "  * the output of true_fun at path [1] has type float32[2] but the corresponding output of "
     "false_fun has type float32[3,1], so the shapes do not match.\n")),
    (lambda: lax.cond(True, lambda: (1.0,), lambda: [1.0]), TypeError,
     ("true_fun output is a <class 'tuple'> but false_fun output is a <class 'list'>, so their "
     "Python types differ.\n")),
    (lambda: lax.cond(True, lambda: (1.0, [2.0]), lambda: ([1.0], 2.0)), TypeError,
     ("  * true_fun output at path [0] is a pytree leaf but false_fun output at path [0] is a "
     "<class 'list'>, so their Python types differ;\n")),
    (lambda: lax.switch(1.0, [lambda: 1.0, lambda: 2.0]), TypeError,
     "Index type must be an integer, got 1.0 as float32"),
    (lambda: lax.switch(jnp.array([1]), [lambda: 1.0, lambda: 2.0]), TypeError,
     "Branch index must be scalar, got [1] of shape (1,)."),
    (lambda: lax.switch(1, []), ValueError, "Empty branch sequence"),
    (lambda: lax.switch(1, [lambda: 1.0, 3]), TypeError,
     "lax.switch: branches argument should be a sequence of callables."),
    (lambda: lax.switch(1, [_f_float, _f_float, _f_int]), TypeError,
     ("The output of branch 0 has type float32[] but the corresponding output of branch2 has "
     "type int32[], so the dtypes do not match.")),
    (lambda: lax.while_loop(lambda c: c < 10, lambda c: jnp.int32(1), 0.0), TypeError,
     ("while_loop body function carry input and carry output must have equal types, but they "
     "differ:\n\nThe input carry c has type float32[] but the corresponding output carry "
     "component has type int32[], so the dtypes do not match.\n\nRevise the function so that "
     "all output types match the corresponding input types.")),
    (lambda: lax.while_loop(lambda c: c < 10, lambda c: (c, c), 0.0), TypeError,
     ("while_loop body function carry input and carry output must have the same pytree "
     "structure, but they differ:\n\nThe input carry c is a <class "
     "'jaxlite._src.base.core.ShapedArray'> but the corresponding component of the carry output is "
     "a <class 'tuple'>, so their Python types differ.\n\nRevise the function so that the carry "
     "output has the same pytree structure as the carry input.")),
    (lambda: lax.while_loop(lambda c: c[0] < 10,
                            lambda c: (c[0] + 1, jnp.ones(3), c[2].astype(jnp.int32)),
                            (0.0, jnp.float32(1.0), jnp.float32(1.0))), TypeError,
     ("  * the input carry component c[1] has type float32[] but the corresponding output carry "
     "component has type float32[3], so the shapes do not match;\n"
     "  * the input carry component c[2] has type float32[] but the corresponding output carry "
     "component has type int32[], so the dtypes do not match.\n")),
    (lambda: lax.while_loop(lambda c: jnp.array([True]), lambda c: c, 0.0), TypeError,
     "cond_fun must return a boolean scalar, but got output type(s) [ShapedArray(bool[1])]."),
    (lambda: lax.while_loop(lambda c: (c < 1, c < 2), lambda c: c, 0.0), TypeError,
     "cond_fun must return a boolean scalar, but got pytree PyTreeDef((*, *))."),
    (lambda: lax.while_loop(1, lambda c: c, 0.0), TypeError,
     "lax.while_loop: body_fun and cond_fun arguments should be callable."),
    (lambda: lax.scan(lambda c, x: (c + x, None), jnp.int32(0), jnp.ones(3)), TypeError,
     "scan body function carry input and carry output must have equal types"),
    (lambda: lax.scan(lambda c, x: c, 0.0, jnp.ones(3)), TypeError,
     "scan body output must be a pair, got ~float32[]."),
    (lambda: lax.scan(lambda c, x: (c, x, x), 0.0, jnp.ones(3)), TypeError,
     ("scan body output must be a pair, got (ShapedArray(float32[], weak_type=True), "
     "ShapedArray(float32[]), ShapedArray(float32[])).")),
    (lambda: lax.scan(lambda c, x: (c, x), 0.0, [jnp.ones(3), jnp.ones(4)]), ValueError,
     "scan got values with different leading axis sizes: 3, 4."),
    (lambda: lax.scan(lambda c, x: (c, x), 0.0, jnp.ones(3), length=4), ValueError,
     "scan got `length` argument of 4 which disagrees with leading axis sizes [3]."),
    (lambda: lax.scan(lambda c, x: (c, x), 0.0, None), ValueError,
     "scan got no values to scan over and `length` not provided."),
    (lambda: lax.scan(lambda c, x: (c, x), 0.0, 1.0), ValueError,
     "scan got value with no leading axis to scan over: 1.0."),
    (lambda: lax.scan(lambda c, x: (c, x), 0.0, jnp.ones(3), unroll=-1), ValueError,
     "`unroll` must be a `bool` or a non-negative `int`."),
    (lambda: lax.scan(3, 0.0, jnp.ones(3)), TypeError,
     "lax.scan: f argument should be a callable."),
    (lambda: lax.fori_loop(0, 3.0, lambda i, c: c, 0.0), TypeError,
     "lower and upper arguments to fori_loop must have equal types, got int32 and float32"),
    (lambda: lax.fori_loop(jnp.int16(0), jnp.int32(3), lambda i, c: c, 0.0), TypeError,
     "lower and upper arguments to fori_loop must have equal types, got int16 and int32"),
    (lambda: lax.fori_loop(0, 3, 4, 0), TypeError,
     "lax.fori_loop: body_fun argument should be callable."),
    (lambda: jax.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c * 2, 1, unroll=3))(3),
     ValueError, "Can only use `unroll` in `fori_loop` if the loop bounds are statically known."),
]


@pytest.mark.parametrize("run,exc,text", ERROR_CASES)
def test_error_texts(run, exc, text):
  with pytest.raises(exc) as info:
    run()
  assert text in str(info.value)


@pytest.mark.parametrize("make", [
    lambda: jax.jit(lambda x: x if x > 0 else -x),
    lambda: jax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c if c > 0 else -c, x)),
    lambda: (lambda x: lax.cond(True, lambda y: y if y > 0 else -y, lambda y: y, x)),
    lambda: jax.jit(lambda x: [x for _ in iter(lambda: bool(x > 0), False)]),
])
def test_python_control_flow_on_tracers_points_to_lax(make):
  with pytest.raises(jax.errors.TracerBoolConversionError) as info:
    make()(1.0)
  lines = str(info.value).splitlines()
  assert lines[0] == "Attempted boolean conversion of traced array with shape bool[]."
  assert lines[-1] == ("See https://docs.jax.dev/en/latest/errors.html"
                       "#jax.errors.TracerBoolConversionError")
  assert "jax.lax.cond" in str(info.value) and "jax.lax.while_loop" in str(info.value)


def test_deprecated_five_argument_cond_still_runs_like_jax():
  assert float(lax.cond(True, 1.0, lambda x: x + 1, 2.0, lambda x: x * 2)) == 2.0
  assert float(lax.cond(False, 1.0, lambda x: x + 1, 2.0, lambda x: x * 2)) == 4.0


def test_disable_jit_runs_python():
  calls = []

  def body(c, x):
    calls.append(1)
    return c + x, c

  with jax.disable_jit():
    c, _ = lax.fori_loop(0, 3, lambda i, c: (c[0] + i, c[1]), (0, 1.0)), None
    assert int(c[0]) == 3
    assert float(lax.cond(True, lambda: 1.0, lambda: 2.0)) == 1.0
    assert float(lax.switch(5, [lambda: 1.0, lambda: 2.0])) == 2.0
    assert float(lax.while_loop(lambda c: c < 5, lambda c: c + 2, 0)) == 6
    carry, ys = lax.scan(body, 0.0, jnp.ones(3))
  assert float(carry) == 3.0 and len(calls) == 3
  np.testing.assert_array_equal(np.asarray(ys), [0.0, 1.0, 2.0])


# --- execution: generated code, not an interpreter -----------------------------------------------


def test_jitted_loops_run_generated_code_not_eval_jaxpr(monkeypatch):
  def f(c, xs):
    c, ys = lax.scan(lambda c, x: (c * 0.5 + x, lax.cond(x > 1.0, jnp.sin, jnp.cos, c)), c, xs)
    return lax.while_loop(lambda c: c < 50.0, lambda c: c * 2.0 + 1.0, c), ys

  g = jax.jit(f)
  want = g(F32(1.0), _seq(6))
  eqns = jax.make_jaxpr(f)(F32(1.0), _seq(6)).eqns
  calls = []
  monkeypatch.setattr(core, "eval_jaxpr", lambda *a, **k: calls.append(a))
  got = g(F32(1.0), _seq(6))
  assert not calls
  _tree_close(got, want)
  scan_eqn = next(e for e in eqns if e.primitive.name == "scan")
  lax.scan(lambda c, x: (c * 0.5 + x, c), F32(1.0), _seq(2))
  assert hasattr(numpy_codegen.compile_jaxpr(scan_eqn.params["jaxpr"]), "__jaxlite_source__")


def test_traced_bodies_are_cached_per_function():
  def body(c, x):
    return c + x, c

  def f(xs):
    return lax.scan(body, 0.0, xs)[0] + lax.scan(body, 0.0, xs)[0]

  eqns = [e for e in jax.make_jaxpr(f)(_seq(3)).eqns if e.primitive.name == "scan"]
  assert eqns[0].params["jaxpr"] is eqns[1].params["jaxpr"]


# --- vmap against a loop of calls ----------------------------------------------------------------

VMAP_CASES = [
    ("cond_batched_pred", lambda p, x: lax.cond(p, jnp.sin, lambda x: x * 2.0, x), (0, 0),
     (np.array([True, False, True]), _seq(3))),
    ("cond_unbatched_pred", lambda p, x: lax.cond(p, jnp.sin, lambda x: x * 2.0, x), (None, 0),
     (True, _seq(3))),
    ("cond_batched_pred_unbatched_x", lambda p, x: lax.cond(p, jnp.sin, lambda x: x * 2.0, x),
     (0, None), (np.array([True, False]), F32(0.7))),
    ("switch_batched_index", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], x), (0, 0),
     (np.array([0, 1, 2, 5, -1], np.int32), _seq(5))),
    ("cond_partly_batched_outputs",
     lambda p, x, y: lax.cond(p, lambda x, y: (x + y, y), lambda x, y: (x, y * 2.0), x, y),
     (None, 0, None), (False, _seq(3), F32(3.0))),
    ("while_batched_pred", lambda n, x: lax.while_loop(lambda c: c[0] < n,
                                                       lambda c: (c[0] + 1, c[1] * 2.0), (0, x)),
     (0, 0), (np.array([1, 3, 0, 2], np.int32), _seq(4))),
    ("while_unbatched_pred", lambda n, x: lax.while_loop(lambda c: c[0] < n,
                                                         lambda c: (c[0] + 1, c[1] * 2.0), (0, x)),
     (None, 0), (np.int32(3), _seq(4))),
    ("fori_traced_bounds", lambda n, x: lax.fori_loop(0, n, lambda i, c: c + i * c, x), (0, 0),
     (np.array([1, 4, 2], np.int32), _seq(3))),
    ("scan_batched_xs", lambda c, xs: lax.scan(lambda c, x: (c * x, c + x), c, xs), (None, 0),
     (F32(1.0), np.stack([_seq(4), _seq(4, 1.0)]))),
    ("scan_batched_carry", lambda c, xs: lax.scan(lambda c, x: (c * x, c + x), c, xs), (0, None),
     (_seq(3), _seq(4))),
    ("scan_xs_batched_on_axis1", lambda c, xs: lax.scan(lambda c, x: (c * x, c + x), c, xs),
     (0, 1), (_seq(2), np.stack([_seq(3), _seq(3, 2.0)], 1))),
    ("scan_batched_const", lambda y, xs: lax.scan(lambda c, x: (c + y, c * x), 0.0, xs),
     (0, None), (_seq(2), _seq(3))),
    ("map", lambda xs: lax.map(lambda x: jnp.sin(x) + 1.0, xs), (0,), (np.ones((2, 3), F32),)),
]


def _take(x, axis, i):
  return x if axis is None else np.take(x, i, axis)


@pytest.mark.parametrize("name,fn,in_axes,args", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_against_loop(name, fn, in_axes, args):
  size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
  got = jax.vmap(fn, in_axes)(*args)
  per_example = [fn(*[_take(a, ax, i) for a, ax in zip(args, in_axes)]) for i in range(size)]
  want = jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]),
                                *per_example)
  _tree_close(got, want)


# --- gradients against finite differences --------------------------------------------------------


def _numeric_grad(f, x, eps=1e-3):
  x = np.asarray(x, np.float64)
  g = np.zeros_like(x)
  for i in np.ndindex(x.shape):
    e = np.zeros_like(x)
    e[i] = eps
    g[i] = (float(f((x + e).astype(F32))) - float(f((x - e).astype(F32)))) / (2 * eps)
  return g


GRAD_CASES = [
    # (id, scalar function of a float32 vector, point, reverse mode supported)
    ("cond", lambda x: lax.cond(x.sum() > 0, lambda x: jnp.sin(x) * x, lambda x: x * x * 3.0,
                                x).sum(), _seq(3), True),
    ("cond_false_branch", lambda x: lax.cond(x.sum() < 0, lambda x: jnp.sin(x) * x,
                                             lambda x: jnp.cos(x) * 3.0, x).sum(), _seq(3), True),
    ("switch", lambda x: lax.switch(2, [jnp.sin, jnp.cos, lambda x: x * jnp.exp(x)], x).sum(),
     _seq(2), True),
    ("cond_closure", lambda x: lax.cond(True, lambda y: y * jnp.sin(x), lambda y: y,
                                        x * 2.0).sum(), _seq(2), True),
    ("scan", lambda x: lax.scan(lambda c, xi: (jnp.sin(c) * xi + c, c * xi), x.sum() * 0.1,
                                x)[1].sum(), _seq(4), True),
    ("scan_reverse_closure", lambda x: lax.scan(lambda c, xi: (c * jnp.cos(x).sum() * 0.3 + xi,
                                                              c), 0.5, x, reverse=True)[0],
     _seq(3), True),
    ("scan_int_carry", lambda x: lax.scan(lambda c, xi: ((c[0] + 1, c[1] * xi), c[1]),
                                          (0, 1.0), x)[0][1], _seq(3), True),
    ("scan_cond_body", lambda x: lax.scan(lambda c, xi: (lax.cond(xi > 0.9, jnp.sin, jnp.cos, c)
                                                         * xi, c), 1.0, x)[0], _seq(4), True),
    ("fori_static", lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * x, x).sum(), _seq(2),
     True),
    ("map", lambda x: lax.map(lambda v: v * jnp.cos(v), x).sum(), _seq(3), True),
    ("while", lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x),
                                       (0, x))[1].sum(), _seq(2), False),
    ("fori_traced_bound", jax.jit(lambda x: lax.fori_loop(0, (x.sum() * 0).astype(jnp.int32) + 2,
                                                          lambda i, c: c * x, x).sum()),
     _seq(2), False),
]


@pytest.mark.parametrize("name,f,x,reverse", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_jvp_against_finite_differences(name, f, x, reverse):
  jvp = jax.jvp
  t = np.linspace(0.5, 1.5, x.size).astype(F32)
  _, tangent = jvp(f, (x,), (t,))
  np.testing.assert_allclose(float(tangent), _numeric_grad(f, x) @ t, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("name,f,x,reverse", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_against_finite_differences(name, f, x, reverse):
  grad = jax.grad
  if not reverse:
    with pytest.raises(
        ValueError, match="Reverse-mode differentiation does not work for lax.while_loop or "
                          "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                          "using fori_loop with static start/stop."):
      grad(f)(x)
    return
  got = np.asarray(grad(f)(x))
  np.testing.assert_allclose(got, _numeric_grad(f, x), rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("name,f,x,reverse", [c for c in GRAD_CASES if c[3]],
                         ids=[c[0] for c in GRAD_CASES if c[3]])
def test_grad_under_jit_and_vmap(name, f, x, reverse):
  grad = jax.grad
  xs = np.stack([x, x * 0.5 + 0.1])
  want = [np.asarray(grad(f)(v)) for v in xs]
  jitted = np.asarray(jax.jit(grad(f))(x))
  batched = jax.vmap(grad(f))(xs)
  np.testing.assert_allclose(jitted, want[0], rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(batched), np.stack(want), rtol=1e-5, atol=1e-6)


# --- printed jaxprs against real JAX -------------------------------------------------------------

def _add_one(x):
  return x + 1.0


def _double(x):
  return x * 2.0


def _twice_cond(L):
  # The same branch functions twice: their jaxprs are traced once and printed hoisted.
  return lambda p, x: L.cond(p, _add_one, _double, L.cond(p, _add_one, _double, x))


PRINT_CASES = [
    ("cond", lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1.0, lambda x: x * 2.0, x),
     (True, 1.0)),
    ("cond_float_pred", lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1, lambda x: x * 2, x),
     (1.5, 1.0)),
    ("cond_forwarded_output",
     lambda L, N: lambda p, x: L.cond(p, lambda x: (x, x + 1), lambda x: (x, x * 2), x),
     (True, 1.0)),
    ("cond_literal_outputs", lambda L, N: lambda p: L.cond(p, lambda: 1.0, lambda: 2.0), (True,)),
    ("cond_closures", lambda L, N: lambda p, x, z: L.cond(p, lambda x: x + z, lambda x: x * z, x),
     (True, np.ones(3, F32), 2.0)),
    ("switch", lambda L, N: lambda i, x: L.switch(i, [N.sin, N.cos, N.tan], x), (1, 1.0)),
    ("fori_static", lambda L, N: lambda x: L.fori_loop(0, 5, lambda i, c: c + i, x), (1,)),
    ("fori_traced", lambda L, N: lambda n, x: L.fori_loop(0, n, lambda i, c: c + i, x), (5, 1)),
    ("scan", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c + x, c * x), c, xs),
     (1.0, np.ones(3, F32))),
    ("scan_moved_carry_and_forwarded_xs",
     lambda L, N: lambda xs: L.scan(lambda c, x: ((c[0], c[1] + 1), (x, c[1] * x)), (1.0, 2.0),
                                    xs), (np.ones(3, F32),)),
    ("scan_reverse_unroll",
     lambda L, N: lambda xs: L.scan(lambda c, x: (c + 1.0, None), 1.0, xs, reverse=True,
                                    unroll=2), (np.ones(3, F32),)),
    ("scan_unroll_true",
     lambda L, N: lambda xs: L.scan(lambda c, x: (c * x, c), 1.0, xs, unroll=True),
     (np.ones(4, F32),)),
    ("map", lambda L, N: lambda x: L.map(N.sin, x), (np.ones(3, F32),)),
    ("while_moved_carry",
     lambda L, N: lambda x: L.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x),
                                         (0, x)), (np.ones(3, F32),)),
    ("while_cond_consts",
     lambda L, N: lambda x: L.while_loop(lambda c: c[0] < x, lambda c: (c[0] + 1, c[1]),
                                         (0.0, x)), (np.float32(2),)),
    ("while_weak_promotion",
     lambda L, N: lambda x: L.while_loop(lambda c: c < x, lambda c: c + 1.5, 0), (F32(4),)),
    ("nested", lambda L, N: lambda p, xs: L.scan(
        lambda c, x: (L.cond(p, lambda c: c + x, lambda c: c - x, c),
                      L.fori_loop(0, 2, lambda i, y: y * c, x)), 0.0, xs),
     (True, np.ones(3, F32))),
    ("associative_scan", lambda L, N: lambda x: L.associative_scan(N.add, x), (np.ones(5, F32),)),
    ("hoisted_repeats", lambda L, N: _twice_cond(L), (True, 1.0)),
]

VMAP_PRINT_CASES = [
    ("cond_batched_pred", lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1.0,
                                                          lambda x: x * 2.0, x),
     (0, 0), (np.array([True, False]), np.ones(2, F32))),
    ("cond_unbatched_pred", lambda L, N: lambda p, x: L.cond(p, lambda x: x + 1.0,
                                                            lambda x: x * 2.0, x),
     (None, 0), (True, np.ones(2, F32))),
    ("while_batched_pred", lambda L, N: lambda n, x: L.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, x)),
     (0, 0), (np.array([1, 2], np.int32), np.ones(2, F32))),
    ("while_unbatched_pred", lambda L, N: lambda n, x: L.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, x)),
     (None, 0), (3, np.ones(2, F32))),
    ("scan_batched_xs", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c * x, c + x), c, xs),
     (None, 0), (1.0, np.ones((2, 3), F32))),
    ("scan_batched_carry", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c * x, c + x), c, xs),
     (0, None), (np.ones(2, F32), np.ones(3, F32))),
    ("scan_batched_const", lambda L, N: lambda y, xs: L.scan(lambda c, x: (c + y, c * x), 0.0,
                                                             xs),
     (0, None), (np.ones(2, F32), np.ones(3, F32))),
]


@pytest.mark.parametrize("name,builder,args", PRINT_CASES, ids=[c[0] for c in PRINT_CASES])
def test_printed_jaxpr_matches_jax(name, builder, args):
  jax_ = oracle()
  mine = jax.make_jaxpr(builder(lax, jnp))(*args)
  theirs = jax_.make_jaxpr(builder(jax_.lax, jax_.numpy))(*args)
  assert str(mine) == str(theirs)


@pytest.mark.parametrize("name,builder,in_axes,args", VMAP_PRINT_CASES,
                         ids=[c[0] for c in VMAP_PRINT_CASES])
def test_printed_vmap_jaxpr_matches_jax(name, builder, in_axes, args):
  jax_ = oracle()
  mine = jax.make_jaxpr(jax.vmap(builder(lax, jnp), in_axes))(*args)
  theirs = jax_.make_jaxpr(jax_.vmap(builder(jax_.lax, jax_.numpy), in_axes))(*args)
  assert str(mine) == str(theirs)


JVP_PRINT_CASES = [
    ("scan", lambda L, N: lambda c, xs: L.scan(lambda c, x: (c * x, N.sin(c)), c, xs),
     (F32(1), np.ones(3, F32))),
    ("while", lambda L, N: lambda x: L.while_loop(lambda c: c[0] < 3,
                                                  lambda c: (c[0] + 1, c[1] * 2.0), (0, x)),
     (F32(1),)),
    ("fori_static", lambda L, N: lambda x: L.fori_loop(0, 3, lambda i, c: c * 2.0, x), (F32(1),)),
    ("cond", lambda L, N: lambda p, x: L.cond(p > 0, N.sin, N.cos, x), (F32(1), F32(2))),
]


@pytest.mark.parametrize("name,builder,args", JVP_PRINT_CASES,
                         ids=[c[0] for c in JVP_PRINT_CASES])
def test_printed_jvp_jaxpr_matches_jax(name, builder, args):
  jax_ = oracle()
  jvp = jax.jvp
  n = len(args)

  def of(jvp_fn, f):
    return lambda *a: jvp_fn(f, a[:n], a[n:])
  mine = jax.make_jaxpr(of(jvp, builder(lax, jnp)))(*args, *args)
  theirs = jax_.make_jaxpr(of(jax_.jvp, builder(jax_.lax, jax_.numpy)))(*args, *args)
  assert str(mine) == str(theirs)


def test_cond_example_from_compat_doc():
  text = str(jax.make_jaxpr(lambda p, x: lax.cond(p, lambda x: x + 1.0, lambda x: x * 2.0, x))(
      True, 1.0))
  assert text == (
      "{ lambda ; a:bool[] b:f32[]. let\n"
      "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
      "    d:f32[] = cond[\n"
      "      branches=(\n"
      "        { lambda ; e:f32[]. let f:f32[] = mul e 2.0:f32[] in (f,) }\n"
      "        { lambda ; g:f32[]. let h:f32[] = add g 1.0:f32[] in (h,) }\n"
      "      )\n"
      "    ] c b\n"
      "  in (d,) }")


def test_fori_loop_fragments_from_compat_doc():
  static = str(jax.make_jaxpr(lambda x: lax.fori_loop(0, 5, lambda i, c: c + i, x))(1))
  assert "_:i32[] b:i32[] = scan[" in static and "length=5" in static
  assert "] 0:i32[] a" in static
  traced = str(jax.make_jaxpr(lambda n, x: lax.fori_loop(0, n, lambda i, c: c + i, x))(5, 1))
  assert "_:i32[] _:i32[] c:i32[] = while[" in traced and "] 0:i32[] a b" in traced


def test_eleven_eqn_branch_is_hoisted():
  def long_branch(x):
    for _ in range(11):
      x = x * 1.5
    return x

  text = str(jax.make_jaxpr(lambda p, x: lax.cond(p, long_branch, lambda x: x, x))(True, 1.0))
  assert text.startswith("let jaxpr = { lambda ; a:f32[]. let")
  assert "p:f32[] = cond[branches=({ lambda ; q:f32[]. let  in (q,) } jaxpr)] o n" in text

