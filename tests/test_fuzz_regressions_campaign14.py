"""Regressions for fuzz campaign 14's finds (issue 33: device seeds 2600-2799 and 3000-3199 all
modes, 3201-3399 and 4001-4199 grad; local seeds 3400- all modes and 3600- grad) and of the later
campaigns (15: local seeds 5000-; 16: device seeds 6000-6399 all modes, 6400- grad), each checked
against JAX 0.10.2: make_jaxpr text, dtypes, weak types and values are recorded in
tests/data/campaign14_staged.json (so the test runs without JAX) and compared with the live JAX
too where it is installed. Errors carry JAX's class and message.

Re-record with `PYTHONPATH=src python tests/test_fuzz_regressions_campaign14.py --record` (needs
jax); the cases are CASES below.
"""
import pathlib
import sys

import numpy as np
import pytest

import staged_records

_DATA = pathlib.Path(__file__).parent / "data" / "campaign14_staged.json"

# (function, arguments, x64): the expressions are evaluated with `jnp`, `jax`, `lax`, `np`.
CASES = [
    # seed 2683: an index array already of the index dtype is not converted (a weak int32 one
    # stays weak in the gather/scatter), and an empty gather's zeros are weak like the operand
    ("lambda b: (lambda v: v[v])(jnp.minimum(b, 0))", "(jnp.zeros((2, 0), bool),)", False),
    ("lambda x, b: x[jnp.minimum(b, 0)]", "(jnp.arange(3.0), jnp.ones((2,), bool))", False),
    ("lambda x, b: x.at[jnp.minimum(b, 0)].set(1.0)", "(jnp.ones(3), jnp.ones((2,), bool))",
     False),
    ("lambda x, b: x[jnp.minimum(b, 0), 1]", "(jnp.ones((3, 2)), jnp.ones((2,), bool))", False),
    ("lambda x, i: x[i]", "(jnp.arange(3.0), jnp.ones(2, jnp.int8))", False),
    # take_along_axis first makes wrapped indices a signed type holding the axis size, as JAX
    ("lambda x, b: jnp.take_along_axis(x, jnp.minimum(b, 0), axis=0)",
     "(jnp.ones(3), jnp.ones(2, bool))", False),
    ("lambda x, i: jnp.take_along_axis(x, i, axis=0)",
     "(jnp.arange(200.0), jnp.array([-1, -100, 5], jnp.int8))", False),
    ("lambda x, i: jnp.take_along_axis(x, i, axis=0)",
     "(jnp.arange(200.0), jnp.array([255, 3], jnp.uint8))", False),
    ("lambda x, i: jnp.take_along_axis(x, i, axis=0, mode='promise_in_bounds')",
     "(jnp.arange(4.0), jnp.array([1, 3], jnp.int8))", False),
    # seed 2628: the nan reductions take `initial` as an operand of their jit (cast as XLA
    # casts, 0 from -1.0 for unsigned dtypes), eagerly too
    ("lambda x: (jnp.nanmax(x, axis=0, initial=-1.0), jnp.nanmin(x, axis=0, initial=-1.0), "
     "jnp.nansum(x, axis=0, initial=-1.0), jnp.nanprod(x, axis=0, initial=-1.0))",
     "(jnp.zeros((0, 3), jnp.uint8),)", False),
    ("lambda x: (jnp.nanmax(x, axis=0, initial=-1.0), jnp.nansum(x, initial=2))",
     "(jnp.array([[1.0, np.nan], [3.0, 2.0]]),)", False),
    # seed 3035: jnp.logaddexp and logaddexp2 are inlined jits (JAX's ufuncs): two calls with
    # one signature share their custom_jvp's jaxpr (`let jaxpr = ...`); logaddexp2 is a
    # custom_jvp as in JAX, scaled by 1/ln 2
    ("lambda x: jnp.logaddexp(jnp.logaddexp(x, x), jnp.logaddexp(x, x))",
     "(jnp.float16(-0.4),)", True),
    ("lambda x, y: jnp.logaddexp2(jnp.logaddexp2(x, y), y)",
     "(jnp.array([0.0, 1.0, -np.inf, np.inf, 3.0]), jnp.array([0.0, 2.0, -np.inf, -np.inf, 3.5]))",
     False),
    ("jax.grad(lambda x: jnp.logaddexp2(x, 2.0))", "(1.0,)", False),
    ("lambda x, y: jax.vmap(jax.grad(jnp.logaddexp2, argnums=(0, 1)))(x, y)",
     "(jnp.array([0.0, np.inf, 3.0, -2.0]), jnp.array([0.0, -np.inf, 3.5, 5.0]))", False),
    # grad seed 3210: the derivative of x ** n for an integer n is 0 where n == 0 (JAX's rule),
    # not 0 * x ** -1 (NaN at x = 0)
    ("jax.grad(lambda x: lax.pow(x, lax.convert_element_type(x, jnp.int64)))", "(0.0,)", True),
    ("lambda x: jax.vmap(jax.grad(lambda x: lax.pow(x, lax.convert_element_type(x, "
     "jnp.int32))))(x)", "(jnp.array([np.nan, 2.0, 0.0, -1.5]),)", False),
    ("lambda x: jnp.power(x, lax.convert_element_type(x, jnp.int32))", "(1.5,)", False),
    ("lambda x: jax.vmap(jax.grad(lambda x: lax.pow(x, 3)))(x)", "(jnp.array([0.0, -2.0]),)",
     False),
    # campaign 16, device seed 6033: top_k with k = 0 of a non-empty operand still gathers its
    # (empty) tangent, so the cotangent upstream is an instantiated zero: 0 * NaN is NaN, and
    # 0 / x's cotangent -0.0, as in JAX
    ("jax.grad(lambda x: jnp.sum(lax.top_k(jnp.fmod(0, x), 0)[0]))",
     "(jnp.zeros(1, jnp.bfloat16),)", False),
    ("jax.grad(lambda x: jnp.sum(lax.top_k(0 / x, 0)[0]))", "(jnp.ones((2, 3)),)", False),
    ("lambda x: jax.jvp(lambda x: lax.top_k(x, 0), (x,), (x,))", "(jnp.ones((2, 3)),)", False),
    # found while triaging 6033: a jvp's float0 zero of an integer output is staged as a
    # broadcast_in_dim; the Jacobians stage their basis as jnp.eye does, split it and their
    # result with one `split`, and keep the basis pieces' casts (JAX's jaxprs); jacfwd casts
    # an integer output's float0 zeros to its dtype
    ("lambda x: jax.jvp(lambda x: jnp.argmax(x, axis=0), (x,), (x,))", "(jnp.ones((2, 3)),)",
     False),
    ("jax.jacfwd(lambda x: jnp.sin(x))", "(jnp.ones(2),)", False),
    ("jax.jacfwd(lambda x, y: jnp.sin(x) * y, argnums=(0, 1))", "(jnp.ones(2), 2.0)", False),
    ("jax.jacrev(lambda x, y: (x * y, y), argnums=(0, 1))", "(jnp.ones(2), 3.0)", False),
    ("jax.hessian(lambda x: jnp.sum(jnp.sin(x)))", "(jnp.array([0.5, 1.0]),)", False),
    ("jax.jacfwd(lambda x: {'a': x[0] * x, 'b': x.astype(int)})", "(jnp.array([2.0, 3.0]),)",
     False),
    # and the gradient through cond/switch: the branches' residuals share slots by type, a slot
    # the taken branch does not fill is `empty2` (broadcast); `jnp.int32(x)` is asarray (no
    # `copy` eqn)
    ("jax.grad(lambda x: lax.cond(x[0] > 0, jnp.sin, jnp.cos, x).sum())", "(jnp.arange(3.0),)",
     False),
    ("jax.grad(lambda x: lax.switch(jnp.int32(x[0]) % 3, [lambda v: v * v[0], "
     "lambda v: jnp.sin(v) * 2, lambda v: v ** 3], x).sum())", "(jnp.arange(1.0, 4.0),)", False),
    ("lambda x: (jnp.int32(x), jnp.float32(x), jnp.bool_(x))", "(jnp.arange(2.0),)", False),
    # and through scan: the linear scan takes the x tangents before the per-iteration residuals
    # (in the body's residual order, a forwarded x in its place), unused ys are pruned from it,
    # the transposed scan takes y cotangents before residuals, starts each const's cotangent
    # from its running sum and carries strong cotangents; zero tangent arrays are staged in the
    # linear jaxpr
    ("jax.grad(lambda x: lax.scan(lambda c, v: (c * v, c), 1.0, x)[0])", "(jnp.arange(3.0),)",
     False),
    ("lambda x: jax.linearize(lambda x: lax.scan(lambda c, v: (c * v, c), 1.0, x)[0], x)[1](x)",
     "(jnp.arange(3.0),)", False),
    ("jax.grad(lambda w, xs: (lambda c, ys: c + ys.sum())(*lax.scan(lambda c, x: ((jnp.sin(c * w)"
     " + x[0] * jnp.cos(x[1])).sum(), jnp.exp(jnp.sin(c * w)) * x), 1.0, xs)), argnums=(0, 1))",
     "(jnp.array([0.5, 1.5]), jnp.arange(6.0).reshape(3, 2))", False),
    ("jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x[i], 1.0))", "(jnp.arange(1.0, 4.0),)",
     False),
    ("jax.grad(lambda W: lax.scan(lambda c, v: (jnp.tanh(W @ c) + v, None), jnp.ones(2), "
     "jnp.ones((3, 2)))[0].sum())", "(jnp.full((2, 2), 0.5),)", False),
    # values an outer trace owns are captured in argument order, as by JAX's jitted jnp
    # functions (`x + c` with a weak c: consts x, then c)
    ("lambda c, x: lax.cond(c > 0, lambda: x + c, lambda: x)", "(1.0, jnp.arange(3.0))", False),
    # scatter's and scatter-add's transposes gather without the index hints (JAX's); the
    # checkpoint policies are JAX's objects (`policy=DotsSaveable(only_if_no_batch_dims=False)`)
    ("jax.grad(lambda x: x.at[1].set(x[0] * 3).sum())", "(jnp.arange(3.0),)", False),
    ("jax.grad(lambda x, u: (x.at[jnp.array([2, 0])].add(u) ** 2).sum(), argnums=(0, 1))",
     "(jnp.arange(3.0), jnp.array([1.0, -2.0]))", False),
    ("jax.grad(lambda x: jax.checkpoint(lambda y: jnp.sin(y) @ jnp.ones((3, 3)), "
     "policy=jax.checkpoint_policies.dots_saveable)(x).sum())", "(jnp.arange(3.0),)", False),
    ("jax.grad(lambda x: jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)), "
     "policy=jax.checkpoint_policies.save_only_these_names('a'))(x).sum())",
     "(jnp.arange(3.0),)", False),
    # a cond in a scan body: the known body is pruned into the branches (a cond DCE rule), so
    # the branch that fills the residual slots keeps no dead empty2
    ("lambda x: jax.linearize(lambda x: lax.scan(lambda c, v: (lax.cond(v > 1, lambda: c * v, "
     "lambda: c + v), None), 1.0, x)[0], x)[1](x)", "(jnp.arange(3.0),)", False),
    ("jax.grad(lambda x: lax.scan(lambda c, v: (lax.cond(v > 1, lambda: c * v, lambda: c + v), "
     "None), 1.0, x)[0])", "(jnp.arange(3.0),)", False),
    # a cond's branches transpose with the caller's cotangent types (a strong carry cotangent:
    # no weak cast), and a weak literal stays a literal where a linearized or transposed branch
    # stages it again (`mul q 2.0:f32[]`, not a constvar)
    ("jax.grad(lambda x: lax.cond(x > 0, lambda y: y * 2, lambda y: jnp.sin(y), x))", "(1.0,)",
     False),
    ("jax.grad(lambda x: lax.switch(1, [lambda y: y * 2, lambda y: y.astype(jnp.float32) * 3.0], "
     "x))", "(1.0,)", False),
    # select_n's transpose with an integer predicate selects `which == i` per case (JAX's rule;
    # a vmapped cond with a batched predicate becomes one)
    ("jax.grad(lambda M: jax.vmap(lambda v: lax.cond(v.sum() > 1, lambda: jnp.sin(v), "
     "lambda: v))(M).sum())", "(jnp.arange(6.0).reshape(2, 3),)", False),
    ("jax.grad(lambda x, y, z: lax.select_n(jnp.array([0, 2, 1]), x, y, z).sum(), "
     "argnums=(0, 1, 2))", "(jnp.ones(3), jnp.ones(3), jnp.ones(3))", False),
]

# (expression, JAX's exception class, JAX's message)
ERRORS = [
    # campaign 15, local seed 5030: the nan reductions, count_nonzero and ptp canonicalize
    # their axes strictly too
    ("jnp.nanmean(jnp.bfloat16(-0.4), axis=0)", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
    ("jnp.nansum(jnp.float32(1), axis=(0,))", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
    ("jnp.nanmin(jnp.float32(1), axis=-1)", "ValueError",
     "axis -1 is out of bounds for array of dimension 0"),
    ("jnp.count_nonzero(jnp.float32(1), axis=0)", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
    ("jnp.ptp(jnp.float32(1), axis=0)", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
    ("jnp.nanvar(jnp.float32(1), axis=0)", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
    # local seed 3411: average's axes are checked strictly (a 0-d array has no axis 0)
    ("jnp.average(jnp.uint16(9), axis=0)", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
    ("jnp.average(jnp.float32(2), axis=(0,))", "ValueError",
     "axis 0 is out of bounds for array of dimension 0"),
]


(test_record_covers_the_cases, test_staged_form_and_values_match_jax,
 test_bad_input_raises_as_jax) = staged_records.case_tests(CASES, ERRORS, _DATA)


# seed 2652 (13-core host): the sorts order ml_dtypes' types (bfloat16, float8s) through float32,
# where NumPy puts NaNs last; their own compare functions differ between ml_dtypes versions.
@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float16", "float32"])
def test_sorts_put_nans_last_in_every_float_dtype(dtype):
  import ml_dtypes
  import jaxlite as jax
  import jaxlite.numpy as jnp
  dt = getattr(ml_dtypes, dtype, None) or np.dtype(dtype)
  x = jnp.asarray(np.array([np.nan, 2.0, -1.0, np.nan, 0.0], dt))
  # XLA's (and so JAX's) order: NaNs last in their index order, ties stable
  np.testing.assert_array_equal(np.asarray(jnp.argsort(x)), [2, 4, 1, 0, 3])
  np.testing.assert_array_equal(np.asarray(jax.jit(jnp.argsort)(x)), [2, 4, 1, 0, 3])
  np.testing.assert_array_equal(np.asarray(jnp.argsort(x, descending=True)), [0, 3, 1, 4, 2])
  np.testing.assert_array_equal(np.asarray(jnp.sort(x)).astype(np.float32),
                                [-1.0, 0.0, 2.0, np.nan, np.nan])
  keys, vals = jax.lax.sort((x, jnp.arange(5)), num_keys=1)
  np.testing.assert_array_equal(np.asarray(vals), [2, 4, 1, 0, 3])
  np.testing.assert_array_equal(np.asarray(jnp.argsort(x.reshape(5, 1, 1), axis=0)).ravel(),
                                [2, 4, 1, 0, 3])


def test_sort_keys_of_ml_dtypes_are_float32():
  """The ordering never reaches ml_dtypes' compare function (whose NaN placement is the
  installed version's): its keys are exact float32 copies."""
  import ml_dtypes
  from jaxlite._src.lax import sort
  x = np.array([np.nan, 2.0], ml_dtypes.bfloat16)
  assert sort.orderable(x).dtype == np.float32
  np.testing.assert_array_equal(sort.orderable(x)[1:], [2.0])
  assert sort.orderable(np.ones(2, np.float16)).dtype == np.float16


def test_pow_integer_exponent_jvp_broadcasts():
  """Campaign 15 (local grad seed 5204): JAX's integer-exponent JVP broadcasts x and the
  exponent to one shape (lax.pow stretches a size-1 operand); the new rule raised select_n's
  shape TypeError there. Known answers: d/dx x**-1 = -x**-2; d/dx (x**0 + x**2) at 0 is 0."""
  import jaxlite as jax
  import jaxlite.numpy as jnp
  x = jnp.array([7.0, 2.0])
  g = jax.grad(lambda x: jnp.power(x, jnp.array([-1], jnp.int8)).sum())(x)
  np.testing.assert_allclose(np.asarray(g), [-1 / 49, -1 / 4], rtol=1e-6)
  g0 = jax.grad(lambda x: jnp.power(x, jnp.array([0, 2], jnp.int32)).sum())(jnp.float32(0.0))
  assert float(g0) == 0.0
  j = jax.jacfwd(lambda x: jnp.power(x, jnp.array([3], jnp.int32)))(x)
  np.testing.assert_allclose(np.asarray(j), np.diag([3 * 49.0, 3 * 4.0]), rtol=1e-6)


def test_eager_vmap_product_with_a_batched_bool_is_a_select():
  """Campaign 15 (local seed 5042): JAX's eager vmap runs the batched jnp.multiply as one XLA
  program, whose simplifier makes `x * convert(b)` a select (NaN or inf times False is 0);
  jaxlite's eager vmap multiplied (NaN). A bool broadcast into the batch is not rewritten by
  XLA (NaN stays), nor is jaxlite's. Values and weak types are JAX 0.10.2's."""
  import jaxlite as jax
  import jaxlite.numpy as jnp
  x = jnp.array([-0.75, 1.0])
  r = jax.vmap(lambda v: jnp.logical_and(-0.0, v) * float("nan"))(x)
  assert r.tolist() == [0.0, 0.0]
  r = jax.vmap(lambda v: (v > 0) * float("inf"))(x)
  assert r.tolist() == [0.0, float("inf")] and r.weak_type
  r = jax.vmap(lambda v: (v > 0) * v)(x)
  assert r.tolist() == [0.0, 1.0] and not r.weak_type
  r = jax.vmap(lambda a, b: a * b, in_axes=(0, None))(x > 0, jnp.float32(np.inf))
  assert r.tolist() == [0.0, float("inf")]
  r = jax.vmap(lambda a, b: a * b, in_axes=(None, 0))(
      jnp.array([True, False]), jnp.array([[np.inf, 1.0], [2.0, np.nan]]))
  np.testing.assert_array_equal(np.asarray(r), [[np.inf, 0.0], [2.0, np.nan]])
  # jit of the same vmap: the compiler pass rewrites `mul(convert(b), nan:f32[])` too
  r = jax.jit(jax.vmap(lambda v: (v > 0) * float("inf")))(x)
  assert r.tolist() == [0.0, float("inf")]


def test_reduction_initial_cast_documented_difference():
  """known_differences `jax-float-cast-at-trace-initial` (seeds 2628, 2663): a negative float
  `initial` of an unsigned reduction is NumPy's wrapped value in jaxlite (eager and jit) and in
  JAX's jit; JAX's eager run alone saturates it to 0."""
  import jaxlite
  import jaxlite.numpy as jnp
  x = jnp.zeros((0, 3), jnp.uint8)
  for f, wrapped in [(lambda x: jnp.prod(x, axis=0, initial=-1.0), 4294967295),
                     (lambda x: jnp.max(x, axis=0, initial=-1.0), 255),
                     (lambda x: jnp.sum(x, axis=0, initial=-1.0), 4294967295)]:
    assert f(x).tolist() == [wrapped] * 3
    assert jaxlite.jit(f)(x).tolist() == [wrapped] * 3
  jax = staged_records.live_jax()
  if jax is not None:
    jx = jax.numpy.zeros((0, 3), np.uint8)
    f = lambda x: jax.numpy.prod(x, axis=0, initial=-1.0)  # noqa: E731
    assert f(jx).tolist() == [0] * 3  # eager: saturated
    assert jax.jit(f)(jx).tolist() == [4294967295] * 3


def test_campaign14_known_differences_match_their_programs():
  """The fuzzer's report classifies the campaign's programs of that difference as documented."""
  sys.path.insert(0, str(pathlib.Path(__file__).parent / "fuzz"))
  from known_differences import KNOWN
  entry = next(k for k in KNOWN if k.name == "jax-float-cast-at-trace-initial")
  for prog in ["v3 = jnp.prod(x1, axis=0, initial=-1.0); -> v3  with x1=uint8[0, 3][]",
               "v4 = x1.max(axis=0, initial=-1.0); -> v4  with x1=uint16[0, 3][]"]:
    assert entry.matches("eager", "value", "leaf 0 uint32[3]: values differ", prog)
  # the nan reductions match JAX now (seed 2628): no longer covered
  assert not entry.matches("eager", "value", "", "v4 = jnp.nanmax(x1, axis=0, initial=-1.0); "
                           "-> v4  with x1=uint8[0, 3][]")
  assert not entry.matches("eager", "value", "", "v0 = jnp.prod(x1, initial=-1.0) with x1=int8[2]")


if __name__ == "__main__" and "--record" in sys.argv:
  staged_records.record(CASES, _DATA)
