"""Regression tests for the fuzzer's make_jaxpr-text rows (RELIABILITY.md rows 4, 5, 8, 15, 16,
29, 35, 36, 39): each program's printed jaxpr equals JAX's and its value is a known answer.
"""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle


def _jaxpr_and_value(m, build, args, x64_on=False):
  """(str(make_jaxpr(f)(*args)), f(*args)) in library `m` (jaxlite or JAX) with x64 set."""
  old = m.config.jax_enable_x64
  m.config.update("jax_enable_x64", x64_on)
  try:
    f = build(m, m.numpy, m.lax)
    arrays = [m.numpy.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args]
    return str(m.make_jaxpr(f)(*args)), f(*arrays)
  finally:
    m.config.update("jax_enable_x64", old)


def _check_jaxpr_row(build, args, want, x64_on=False, dtype=None):
  """jaxlite's value is `want` (dtype `dtype`); its jaxpr text and value equal JAX's."""
  text, got = _jaxpr_and_value(jax, build, args, x64_on)
  with np.errstate(invalid="ignore"):
    np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64))
  if dtype is not None:
    assert str(got.dtype) == dtype
  ref_text, ref = _jaxpr_and_value(oracle(), build, args, x64_on)
  assert (str(got.dtype), got.weak_type) == (str(ref.dtype), ref.weak_type)
  np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(ref, np.float64))
  assert text == ref_text


# Row 39, jaxpr-power-bool-exponent: a Python bool exponent passes operator.index (integer_pow);
# NumPy's bool refuses it, so `x ** np.True_` is the general pow of a converted exponent.
_POWER_BOOL = [  # (build, args, want, dtype)
  (lambda m, jnp, lax: lambda x: x ** True, (np.uint32(3),), 3, "uint32"),
  (lambda m, jnp, lax: lambda x: x ** False, (np.array([2.5, 0.0], np.float32),), [1, 1],
   "float32"),
  (lambda m, jnp, lax: lambda x: jnp.power(x, True), (np.array([True, False]),), [1, 0], "int32"),
  (lambda m, jnp, lax: lambda x: x ** np.True_, (np.float32(2.5),), 2.5, "float32"),
]


@pytest.mark.parametrize("case", range(len(_POWER_BOOL)))
def test_row39_power_bool_exponent(case):
  build, args, want, dtype = _POWER_BOOL[case]
  _check_jaxpr_row(build, args, want, dtype=dtype)
  if case == 0:
    assert "integer_pow[y=1]" in _jaxpr_and_value(jax, build, args)[0]


# Row 4's remainder, jaxpr-randint-dtype: a narrower dtype clips the bounds with x.clip(lo, hi)
# (keyword bounds: the jitted clip takes (x, max, min)), and the cast of a scalar constant folds
# into a literal while tracing, as JAX's const_fold_rules (no convert eqn of `-5:i32[]`).
_RANDINT_DTYPE = [  # (build, args, want (JAX's draws), dtype, x64)
  (lambda m, jnp, lax: lambda: m.random.randint(m.random.PRNGKey(41), (2, 3), -5, 100,
                                                 dtype=jnp.uint8), (),
   [[99, 22, 84], [91, 48, 46]], "uint8", False),
  (lambda m, jnp, lax: lambda: m.random.randint(m.random.PRNGKey(41), (2, 3), -5, 100,
                                                 dtype=jnp.int16), (),
   [[49, 17, 49], [71, 63, 1]], "int16", False),
  (lambda m, jnp, lax: lambda lo: m.random.randint(m.random.PRNGKey(41), (2,), lo, 300,
                                                    dtype=jnp.int8), (np.int32(4),),
   None, "int8", True),
]
_CLIP_FOLD = [  # (build, args, want, dtype)
  (lambda m, jnp, lax: lambda x: x.clip(0, 5), (np.array([-2, 3, 9], np.int32),), [0, 3, 5],
   "int32"),
  (lambda m, jnp, lax: lambda x: jnp.clip(x, min=0, max=5), (np.array([-2, 9], np.int32),),
   [0, 5], "int32"),
  (lambda m, jnp, lax: lambda x: jnp.clip(x, 1, max=2.5), (np.array([-2., 9.], np.float32),),
   [1, 2.5], "float32"),
  (lambda m, jnp, lax: lambda x: x.clip(None, 2), (np.array([-2., 9.], np.float32),), [-2, 2],
   "float32"),
  (lambda m, jnp, lax: lambda x: x + jnp.array(2), (np.ones(2, np.float32),), [3, 3], "float32"),
  (lambda m, jnp, lax: lambda x: x * jnp.array(True), (np.ones(2, np.float16),), [1, 1],
   "float16"),
  (lambda m, jnp, lax: lambda x: x + jnp.array(0.1).astype(jnp.float16),
   (np.zeros(1, np.float32),), [np.float32(np.float16(0.1))], "float32"),
  (lambda m, jnp, lax: lambda x: x + jnp.array(-3.7).astype(jnp.int32),
   (np.zeros(1, np.int32),), [-3], "int32"),
]


@pytest.mark.parametrize("case", range(len(_RANDINT_DTYPE)))
def test_row4_randint_narrow_dtype_jaxpr(case):
  build, args, want, dtype, x64_on = _RANDINT_DTYPE[case]
  if want is None:  # drawn in [4, 127]: the upper bound clips to int8's max + 1
    got = _jaxpr_and_value(jax, build, args, x64_on)[1]
    assert np.all((np.asarray(got) >= 4) & (np.asarray(got) < 128))
    want = np.asarray(got)
  _check_jaxpr_row(build, args, want, x64_on, dtype)


@pytest.mark.parametrize("case", range(len(_CLIP_FOLD)))
def test_clip_keyword_order_and_scalar_cast_folding(case):
  build, args, want, dtype = _CLIP_FOLD[case]
  _check_jaxpr_row(build, args, want, dtype=dtype)
  assert "convert_element_type" not in _jaxpr_and_value(jax, build, args)[0] or case < 4


def test_clip_bad_arguments():
  x = jnp.ones(2)
  with pytest.raises(TypeError, match="multiple values for argument 'min'"):
    jnp.clip(x, 0, min=1)
  with pytest.raises(TypeError, match="unexpected keyword argument 'lo'"):
    jnp.clip(x, lo=1)
  with pytest.raises(TypeError, match="positional arguments"):
    jnp.clip(x, 0, 1, 2)
  import inspect
  assert list(inspect.signature(jnp.clip).parameters) == ["arr", "min", "max"]


# Rows 16 (jaxpr-nansum) and 5 (jaxpr-inner-dtype-x64): the NaN fill is a strong NumPy scalar of
# a's dtype (JAX's _reduction_init_val), so `_where` converts a weak `a` inside its jaxpr and no
# Python float reaches it as f64 under x64; with `initial` an all-NaN slice gives `initial`.
_BF = jnp.bfloat16
_NAN_RED = [  # (build, args, want, x64)
  (lambda m, jnp, lax: lambda x: jnp.nansum(lax.nextafter(x, x)), (np.float32(-1.5),), -1.5,
   False),
  (lambda m, jnp, lax: lambda x: jnp.nanmax(x), (3.0,), 3.0, False),
  (lambda m, jnp, lax: lambda x: jnp.nanmin(x, axis=0),
   (np.array([[np.nan, 1], [np.nan, 2]], np.float32),), [np.nan, 1], True),
  (lambda m, jnp, lax: lambda x: jnp.nanprod(x, axis=1, keepdims=True),
   (np.array([[np.nan, 1], [np.nan, 2]], _BF),), [[1], [2]], False),
  (lambda m, jnp, lax: lambda x: jnp.nanmax(x, axis=0), (np.array([np.nan], _BF),), np.nan, True),
  (lambda m, jnp, lax: lambda x: (jnp.cbrt(x), jnp.nanmax(x, axis=1))[1],
   (np.array([[-1.0, np.inf], [0.125, np.nan]], _BF),), [np.inf, 0.125], True),
  (lambda m, jnp, lax: lambda x: jnp.nanmax(x, where=x > 0, initial=0),
   (np.array([np.nan, -1, 2], np.float32),), 2.0, False),
  (lambda m, jnp, lax: lambda x: jnp.nanmin(x, where=x > 0, initial=5.),
   (np.array([np.nan, np.nan], np.float32),), 5.0, True),
  (lambda m, jnp, lax: lambda x: jnp.max(x, where=x > 0, initial=3),
   (np.array([1, -1, 2], np.int8),), 3, False),
  (lambda m, jnp, lax: lambda x: jnp.nansum(x), (np.array([1, 2], np.int8),), 3, True),
]


@pytest.mark.parametrize("case", range(len(_NAN_RED)))
def test_rows5_16_nan_reductions_jaxpr(case):
  build, args, want, x64_on = _NAN_RED[case]
  _check_jaxpr_row(build, args, want, x64_on)


def test_nan_reduction_out_of_range_axis_is_value_error():
  # JAX's own words (its nan reductions canonicalize the axis strictly)
  with pytest.raises(ValueError, match="axis 0 is out of bounds for array of dimension 0"):
    jax.make_jaxpr(lambda x: jnp.nanmax(x, axis=0))(np.float16(2))


# Rows 35 (jaxpr-hypot-nan) and 29 (jaxpr-heaviside-broadcast): their constants are JAX's
# _lax_const (weak like a weak scalar operand: hypot(inf, nan) is weak) and heaviside promotes
# dtypes only, so x2 is broadcast inside the innermost _where.
_HYPOT_HEAVISIDE = [  # (build, args, want, x64)
  (lambda m, jnp, lax: lambda: jnp.hypot(np.inf, float("nan")), (), np.inf, False),
  (lambda m, jnp, lax: lambda x: jnp.hypot(x, float("nan")), (np.float32(np.inf),), np.inf,
   True),
  (lambda m, jnp, lax: lambda x: jnp.hypot(x, 3), (np.array([4., np.inf, 0.], np.float16),),
   [5, np.inf, 3], False),
  (lambda m, jnp, lax: lambda x: jnp.hypot(x, 3), (4,), 5, True),
  (lambda m, jnp, lax: lambda x: jnp.heaviside(x, jnp.ones(4)), (np.ones((1, 4), np.float32),),
   [[1, 1, 1, 1]], False),
  (lambda m, jnp, lax: lambda x: jnp.heaviside(x, 0.5), (np.array([-1, 0, 2.], _BF),),
   [0, 0.5, 1], True),
  (lambda m, jnp, lax: lambda x: jnp.heaviside(x, 0.5), (-2.0,), 0, False),
  (lambda m, jnp, lax: lambda x: jnp.heaviside(x, np.array([0.5, 1.])),
   (np.array([[0, 0, 2.]]).T,), [[0.5, 1], [0.5, 1], [1, 1]], True),
  (lambda m, jnp, lax: lambda x, y: jnp.heaviside(x, y),
   (np.array([0, 3], np.int8), np.array([[1], [2]], np.int16)), [[1, 1], [2, 1]], False),
]


@pytest.mark.parametrize("case", range(len(_HYPOT_HEAVISIDE)))
def test_rows29_35_hypot_heaviside_jaxpr(case):
  build, args, want, x64_on = _HYPOT_HEAVISIDE[case]
  _check_jaxpr_row(build, args, want, x64_on)
  if case == 0:
    assert _jaxpr_and_value(jax, build, args)[1].weak_type  # as JAX's


# Row 36, jaxpr-power-empty: x ** y promotes ranks first, in the operands' own dtypes, then the
# dtypes (JAX's _power), so a lower-rank bf16 exponent is broadcast before its cast to f32.
_POWER_SHAPES = [  # (build, args, want, dtype, x64)
  (lambda m, jnp, lax: lambda x, y: x ** y,
   (np.ones((2, 0), np.float16), np.ones(0, _BF)), np.ones((2, 0)), "float32", False),
  (lambda m, jnp, lax: lambda x, y: x ** y,
   (np.array([4, 9, 16], np.float16), np.array([[0.5], [2]], np.float32)),
   [[2, 3, 4], [16, 81, 256]], "float32", True),
  (lambda m, jnp, lax: lambda x, y: x ** y,
   (np.full((2, 3), 2, np.float32), np.array([1, 2, 3], np.int8)), [[2, 4, 8]] * 2, "float32",
   False),
  (lambda m, jnp, lax: lambda x, y: x ** y,
   (np.full((2, 3), 2, np.int8), np.array([1, 2, 3], np.int16)), [[2, 4, 8]] * 2, "int16",
   False),
  (lambda m, jnp, lax: lambda x, y: jnp.power(x, y),
   (np.array([2, 3]), np.array([[3], [2]], np.uint64)), [[8, 27], [4, 9]], "float64", True),
]


@pytest.mark.parametrize("case", range(len(_POWER_SHAPES)))
def test_row36_power_promotes_shapes_first(case):
  build, args, want, dtype, x64_on = _POWER_SHAPES[case]
  _check_jaxpr_row(build, args, want, x64_on, dtype)


# Row 15, jaxpr-einsum: operands keep their dtypes (dot_general gets preferred_element_type),
# the later operand is dot_general's lhs unless (rhs, lhs) yields the output order directly (as
# JAX's _einsum after opt_einsum), and repeated letters use JAX's uint32 Kronecker delta.
_A23, _B34 = np.arange(6.).reshape(2, 3), np.arange(12.).reshape(3, 4)
_EINSUM = [  # (build, args, want, x64)
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("...i,...i->...", x, y),
   (np.ones((3, 1), _BF), np.arange(3, dtype=np.int32).reshape(3, 1)), [0, 1, 2], False),
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("ij,jk->ki", x, y),
   (_A23.astype(np.float32), _B34.astype(np.float32)), (_A23 @ _B34).T, True),
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("ij,jk", x, y),
   (np.ones((2, 3), np.int8), _B34.astype(np.uint8)), np.ones((2, 3)) @ _B34, False),
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("ij,kj->", x, y),
   (_A23.astype(np.float16), np.ones((4, 3), np.float32)), 4 * _A23.sum(), False),
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("ij,j->i", x, y),
   (_A23, np.array([True, False, True])), _A23 @ [1, 0, 1], True),
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("ij,ij->i", x, y),
   (np.ones((1, 3), np.float32), _A23.astype(np.float32)), _A23.sum(1), False),
  (lambda m, jnp, lax: lambda x: jnp.einsum("ii->i", x), (np.arange(9.).reshape(3, 3),),
   [0, 4, 8], False),
  (lambda m, jnp, lax: lambda x: jnp.einsum("iji->ij", x), (np.arange(18.).reshape(3, 2, 3),),
   np.einsum("iji->ij", np.arange(18.).reshape(3, 2, 3)), True),
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("ii,ij->j", x, y),
   (np.arange(4.).reshape(2, 2), np.ones((2, 3))), [3, 3, 3], False),
  (lambda m, jnp, lax: lambda x, y: jnp.einsum("ij,jk->ki", x, y,
                                               preferred_element_type=jnp.float32),
   (np.ones((2, 3), np.int8), np.ones((3, 4), np.int8)), np.full((4, 2), 3), False),
  (lambda m, jnp, lax: lambda x, y, z: jnp.einsum("ij,jk,kl->il", x, y, z),
   (np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)),
   np.full((2, 5), 12), False),
]


@pytest.mark.parametrize("case", range(len(_EINSUM)))
def test_row15_einsum_jaxpr(case):
  build, args, want, x64_on = _EINSUM[case]
  _check_jaxpr_row(build, args, want, x64_on)


# Row 8, jaxpr-array-constants: iterating an array while staging is lax.index_in_dim per row
# (JAX's tracer iteration), so `jnp.array([...])` made inside the function and used as
# dynamic_slice starts is a constvar sliced in the jaxpr, under jit and in nested jaxprs too.
_ARRAY_CONSTS = [  # (build, args, want)
  (lambda m, jnp, lax: lambda x: lax.dynamic_slice(x, jnp.array([0]), [0]),
   (np.ones(1, np.int16),), np.zeros(0)),
  (lambda m, jnp, lax: lambda x: lax.dynamic_slice(x, jnp.array([1, -1]), [1, 2]),
   (np.arange(12.).reshape(3, 4),), [[6, 7]]),
  (lambda m, jnp, lax: lambda x: lax.dynamic_update_slice(x, jnp.zeros((1, 2)),
                                                          jnp.array([1, 7])),
   (np.ones((2, 3), np.float32),), [[1, 1, 1], [1, 0, 0]]),
  (lambda m, jnp, lax: lambda x: [i for i in jnp.array([1., 2.])][1] + x,
   (np.ones(2, np.float32),), [3, 3]),
  (lambda m, jnp, lax: lambda x: [r for r in jnp.ones((2, 3))][1] * x,
   (np.full(3, 2, np.float32),), [2, 2, 2]),
  (lambda m, jnp, lax: lambda x: m.jit(lambda y: lax.dynamic_slice(y, jnp.array([2]), [1]))(x),
   (np.arange(4, dtype=np.float32),), [2]),
  (lambda m, jnp, lax: lambda x: lax.cond(
      True, lambda y: lax.dynamic_slice(y, jnp.array([2]), [1]), lambda y: y[:1], x),
   (np.arange(4, dtype=np.float32),), [2]),
  (lambda m, jnp, lax: lambda x: sum(jnp.array(np.arange(150.))) + x, (np.float32(1),),
   11176.0),
  (lambda m, jnp, lax: lambda x: sum(x), (np.arange(6.).reshape(3, 2),), [6, 9]),
  # a closed-over NumPy array is a constvar in its own dtype, cast by an eqn (scalars fold)
  (lambda m, jnp, lax: lambda x: x + np.array([3, 4], np.int32), (np.ones(2, np.float32),),
   [4, 5]),
  (lambda m, jnp, lax: lambda x: x * np.array([True, False]), (np.ones(2, np.int8),), [1, 0]),
  (lambda m, jnp, lax: lambda x: x + np.array(3, np.int32), (np.ones(2, np.float32),), [4, 4]),
]


@pytest.mark.parametrize("case", range(len(_ARRAY_CONSTS)))
def test_row8_array_constants_jaxpr(case):
  build, args, want = _ARRAY_CONSTS[case]
  _check_jaxpr_row(build, args, want)
  if case == 0:
    assert _jaxpr_and_value(jax, build, args)[0].startswith("{ lambda a:i32[1]; b:i16[1]. let")


def test_iterating_arrays_outside_traces_stays_concrete():
  rows = list(jnp.arange(6).reshape(3, 2))
  assert all(type(r) is type(jnp.zeros(2)) for r in rows)
  np.testing.assert_array_equal(np.asarray(rows[2]), [4, 5])
  assert [int(v) for v in jnp.array([3, 1])] == [3, 1]
