"""Regressions for fuzz campaign 11's finds (issue 33: device seeds 415-504, grad seeds 624-758),
each checked against JAX 0.10.2: make_jaxpr text, dtypes, weak types and values are recorded in
tests/data/campaign11_staged.json (so the test runs without JAX) and compared with the live JAX
too where it is installed (the record cannot drift from it). Errors carry JAX's class and, where
jaxlite words it the same, JAX's message.

Re-record with `PYTHONPATH=src python tests/test_fuzz_regressions_campaign11.py --record` (needs
jax); the cases are CASES below.
"""
import pathlib
import sys

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
import staged_records

_DATA = pathlib.Path(__file__).parent / "data" / "campaign11_staged.json"

# (function, arguments, x64): the expressions are evaluated with `jnp`, `jax`, `lax`, `np`.
CASES = [
    # seeds 433, 464: a Python int entering a weak float is rounded to the float dtype (JAX's
    # literal is 2147483648.0:f32[]; a Python float keeps its own value)
    ("lambda x: jnp.float_power(x, 2147483647)", "(jnp.array([True, False]),)", False),
    ("lambda x: (x * 1.0) * 16777217", "(jnp.array([True, False]),)", False),
    ("lambda x: (x * 1.0) * 0.1", "(jnp.array([True, False]),)", False),
    ("lambda x: (x * 1.0) * 16777217", "(jnp.array([True, False]),)", True),
    # seed 473: nanmax/nanmin's all-NaN fill is lax._const(a, nan), strong (no cast in _where)
    ("lambda x: jnp.nanmax(0.5 * x, axis=0, keepdims=True)", "(jnp.array([0, 6], jnp.uint8),)",
     True),
    ("lambda x: jnp.nanmin(0.5 * x)", "(jnp.array([0, 6], jnp.uint8),)", False),
    ("lambda x: jnp.nanmax(x)", "(jnp.array([np.nan, np.nan], jnp.float16),)", False),
    # seed 495: tril/triu fill with lax.full_like(m, 0), weak when m is
    ("lambda x: jnp.tril(x | 0)", "(jnp.array([[True, False], [True, True]]),)", False),
    ("lambda x: jnp.triu(x * 1.0, 1)", "(jnp.ones((2, 3), bool),)", False),
    ("lambda x: jnp.tril(x)", "(jnp.arange(6.0).reshape(2, 3),)", False),
    ("jax.vmap(lambda x: jnp.tril(x + 1))", "(jnp.ones((2, 2, 2), jnp.int32),)", False),
    # seed 497: jnp.full_like's weak type is the template's for a scalar fill (lax.full_like),
    # strong for an array fill (asarray(fill, dtype))
    ("lambda a, b: jnp.full_like(jnp.reciprocal(a), b)", "(0, jnp.float32(65504.0))", False),
    ("lambda a: jnp.full_like(a, jnp.float32(2.5))", "(1.0,)", False),
    ("lambda a: jnp.full_like(a, 2.5)", "(jnp.float32(1.0),)", False),
    ("lambda a: jnp.full_like(a * 1.0, jnp.array([1.5, 2.5]))", "(jnp.ones(2, bool),)", False),
    # seeds 480 and grad 696: softmax/log_softmax of bools with `where` (the input is
    # where(where, x, -inf), a float, before anything is subtracted)
    ("lambda x: jax.nn.softmax(x, where=x > 0)", "(jnp.array([True, False, True]),)", False),
    ("lambda x: jax.nn.softmax(x, where=x > 0)", "(jnp.zeros((0,), bool),)", False),
    ("lambda x: jax.nn.log_softmax(x, where=x)", "(jnp.array([[True, False], [True, True]]),)",
     False),
    ("lambda x, y: jax.grad(lambda z: (jax.nn.softmax(x, where=x) * z).sum())(y)",
     "(jnp.array([True, False]), 1.0)", False),
]

# (expression, JAX's exception class, JAX's message or None where jaxlite's words differ)
ERRORS = [
    # seeds 428, 466, 490, 491: `'a' * x` calls x.__index__; JAX checks the aval first (a
    # float, bool or non-scalar tracer is a TypeError), concreteness after
    ("jax.jit(lambda x: 'a' * x)(jnp.float16(1.0))", "TypeError",
     "Only integer scalar arrays can be converted to a scalar index."),
    ("jax.jit(lambda x: 'a' * x)(jnp.ones((1, 1), jnp.uint8))", "TypeError",
     "Only integer scalar arrays can be converted to a scalar index."),
    ("jax.jit(lambda x: 'a' * x)(jnp.bool_(True))", "TypeError",
     "Only integer scalar arrays can be converted to a scalar index."),
    ("jax.vmap(lambda x: 'a' * x)(jnp.ones(2, jnp.float32))", "TypeError",
     "Only integer scalar arrays can be converted to a scalar index."),
    ("jax.jit(lambda x: 'a' * x)(jnp.int32(1))", "TracerIntegerConversionError", None),
    ("jnp.array(True).__index__()", "TypeError",
     "Only integer scalar arrays can be converted to a scalar index."),
    ("jnp.array(1.5).__index__()", "TypeError",
     "Only integer scalar arrays can be converted to a scalar index."),
    # seed 443: vmap of a dynamic_update_slice whose update outgrows its operand (a scatter)
    ("jax.vmap(lambda a, b: lax.dynamic_update_slice(a, b, [2, 1]))("
     "jnp.ones((2, 1, 1), jnp.float16), jnp.ones((2, 2, 1), jnp.float16))", "TypeError",
     "Bounds of the window dimensions of updates must not exceed the bounds of the "
     "corresponding dimensions of operand. For dimension 1, updates bound is 2, operand bound "
     "is 1."),
    ("lax.scatter_add(jnp.zeros((3, 2)), jnp.array([[0]]), jnp.ones((1, 3)), "
     "lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), "
     "scatter_dims_to_operand_dims=(0,)))", "TypeError",
     "Bounds of the window dimensions of updates must not exceed the bounds of the "
     "corresponding dimensions of operand. For dimension 1, updates bound is 3, operand bound "
     "is 2."),
    # seeds 454, 478, 495: clip's complex check converts each bound with asarray (inside its
    # jit): a list holding None is asarray's ValueError before maximum refuses the list
    ("jnp.clip(jnp.int32(-2), [1.0, None])", "ValueError",
     "None is not a valid value for jnp.array"),
    ("jnp.clip(jnp.zeros((0,), jnp.bfloat16), None, [1.0, None])", "ValueError",
     "None is not a valid value for jnp.array"),
    ("jax.jit(lambda x: jnp.clip(x, [1.0, None]))(jnp.zeros(3))", "ValueError",
     "None is not a valid value for jnp.array"),
    ("jnp.clip(jnp.arange(3), [1.0, 2.0])", "TypeError",
     "maximum requires ndarray or scalar arguments, got <class 'list'> at position 0."),
    ("jnp.clip(jnp.arange(3), [1j])", "ValueError",
     "Clip received a complex value either through the input or the min/max keywords. Complex "
     "values have no ordering and cannot be clipped. Please convert to a real value or array "
     "by taking the real or imaginary components via jax.numpy.real/imag respectively."),
    ("jnp.iscomplexobj([1.0, None])", "ValueError", "None is not a valid value for jnp.array"),
    # seed 465: einsum compares every operand's rank with its subscripts (opt_einsum's
    # contraction path) before it refuses a string operand
    ("jnp.einsum('i,->i', jnp.int8(2), 'a')", "ValueError",
     "Einstein sum subscript 'i' does not contain the correct number of indices for operand 0."),
    ("jnp.einsum('i,j->ij', jnp.ones(2), 'a')", "ValueError",
     "Einstein sum subscript 'j' does not contain the correct number of indices for operand 1."),
    # seed 476: `.at[]` converts any non-array update (a dict, a set, an object) first, even on
    # an empty array
    ("jnp.zeros((0, 0, 2)).at[0].add(dict())", "TypeError", None),
    ("jax.jit(lambda x: x.at[0].set(object()))(jnp.zeros((2, 0)))", "TypeError", None),
    ("jnp.zeros((3,)).at[5].set({1})", "TypeError", None),
]


_live_jax = staged_records.live_jax
(test_record_covers_the_cases, test_staged_form_and_values_match_jax,
 test_bad_input_raises_as_jax) = staged_records.case_tests(CASES, ERRORS, _DATA)


def test_frexp_jvp_exp2_documented_difference():
  """known_differences `jax-frexp-jvp-exp2` (grad seed 687): the gradient of ldexp(x, 3) is 8;
  JAX's frexp JVP scales by its exp2, inexact in float16 (exp2(3.0) is 8.0078125)."""
  g = jaxlite.grad(lambda x: jnp.ldexp(jnp.asarray(x, jnp.float16), 3).astype(jnp.float32))
  assert float(g(jnp.float32(0.1))) == 8.0
  assert float(jnp.exp2(jnp.float16(3.0))) == 8.0
  jax = _live_jax()
  if jax is not None:
    jg = jax.grad(lambda x: jax.numpy.ldexp(jax.numpy.asarray(x, jax.numpy.float16), 3)
                  .astype(jax.numpy.float32))
    assert float(jg(jax.numpy.float32(0.1))) == 8.0078125
    assert float(jax.numpy.exp2(jax.numpy.float16(3.0))) == 8.0078125


def test_scatter_extremal_empty_grad_fails_as_jax():
  """Seed 448: grad through an `.at[].min` of an empty array. JAX's JVP gathers the operand at
  the update indices with slice size 1, which fails on a size-0 axis (a JAX bug: the function
  is fine). jaxlite's JVP is JAX's; it was a documented difference after top_k(x, 0) until
  campaign 16 (seed 6033) made top_k's JVP gather its empty tangent as JAX's does, so now both
  paths fail as in JAX."""
  x = jnp.array([np.nan])

  def through_top_k(m, y):
    return m.lax.top_k(y, 0)[0].at[m.numpy.array([0, -1, 0])].min(7.0).sum()

  def through_slice(m, y):
    return y[:0].at[m.numpy.array([0])].min(7.0).sum()

  libs = [(jaxlite, x)]
  jax = _live_jax()
  if jax is not None:
    libs.append((jax, jax.numpy.array([np.nan])))
  for m, arg in libs:
    for path in (through_top_k, through_slice):
      with pytest.raises(TypeError, match="Slice size at index 0 in gather op is out of range"):
        m.grad(lambda y, p=path, m=m: p(m, y))(arg)


def test_clamp_scalar_bound_grad_documented_difference():
  """known_differences `jax-clamp-scalar-bound-grad` (grad seed 707): the gradient of clamp
  with respect to a scalar bound around an array operand counts the clamped positions."""
  lax = jaxlite.lax
  assert float(jaxlite.grad(lambda hi: lax.clamp(np.inf, jnp.full((1, 1), 7.0), hi).sum())(
      1.5)) == 1.0
  assert float(jaxlite.grad(lambda lo: lax.clamp(lo, jnp.array([1.0, 2.0, 4.0]), 3.0).sum())(
      1.5)) == 1.0
  jax = _live_jax()
  if jax is not None:
    with pytest.raises(TypeError, match="select cases must have the same shapes"):
      jax.grad(lambda hi: jax.lax.clamp(np.inf, jax.numpy.full((1, 1), 7.0), hi).sum())(1.5)


if __name__ == "__main__" and "--record" in sys.argv:
  staged_records.record(CASES, _DATA)
