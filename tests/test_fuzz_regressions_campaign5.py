"""Regression tests for the fuzzer's open rows fixed after campaign 4 (RELIABILITY.md, "Campaign
4", open rows; fixed on branch fuzz17_s6): a known answer each, and the same program in real JAX
(the tests skip without it)."""
import warnings

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle, x64


def _error(fn, *args, **kw):
  try:
    fn(*args, **kw)
  except Exception as e:  # noqa: BLE001 - the class and message are what is compared
    return type(e).__name__, str(e)
  return None


def _jaxpr_text(j, fn, *args):
  return str(j.make_jaxpr(fn)(*args))


# --- jaxpr-fill-get-empty-constant: a whole-array .at[].get stages no gather --------------------

_WHOLE = [
    ("0:", lambda x: x.at[0:].get(mode="fill")),
    (":", lambda x: x.at[:].get(mode="fill")),
    ("...", lambda x: x.at[...].get(mode="fill")),
    ("0:2,0:3", lambda x: x.at[0:2, 0:3].get(mode="fill")),
    (":,None", lambda x: x.at[:, None].get(mode="fill")),
    ("None", lambda x: x.at[None].get(mode="fill")),
    ("clip", lambda x: x.at[0:].get(mode="clip")),
    ("promise", lambda x: x.at[0:].get(mode="promise_in_bounds")),
    ("drop", lambda x: x.at[0:].get(mode="drop")),
    # not whole-array: these still gather (and matched before)
    ("1:2", lambda x: x.at[1:2].get(mode="fill")),
    ("::2", lambda x: x.at[:, ::2].get(mode="fill", fill_value=-1)),
    ("::-1", lambda x: x.at[::-1].get(mode="fill")),
]


@pytest.mark.parametrize("name,fn", _WHOLE, ids=[n for n, _ in _WHOLE])
def test_whole_array_fill_get_matches_jax_jaxpr_and_value(name, fn):
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  text = _jaxpr_text(jax, fn, x)
  if name in ("0:", ":", "...", "0:2,0:3", "clip", "promise", "drop"):
    assert text == "{ lambda ; a:f32[2,3]. let  in (a,) }"
  assert "i32[0]" not in text
  j = oracle()
  assert text == _jaxpr_text(j, fn, x)
  np.testing.assert_array_equal(np.asarray(fn(jnp.asarray(x))), np.asarray(fn(j.numpy.asarray(x))))
  np.testing.assert_array_equal(np.asarray(jax.jit(fn)(x)), np.asarray(fn(j.numpy.asarray(x))))


# --- stack-weak-bool: joining weak booleans makes each one a strong bool ------------------------

_JOINS = [
    ("stack2", lambda m, w: m.numpy.stack([w, w])),
    ("stack1", lambda m, w: m.numpy.stack([w])),  # one operand: no promotion, stays weak
    ("stack-mixed", lambda m, w: m.numpy.stack([w, True])),
    ("concatenate", lambda m, w: m.numpy.concatenate([w[None], w[None]])),
    ("concatenate1", lambda m, w: m.numpy.concatenate([w[None]])),
    ("hstack", lambda m, w: m.numpy.hstack([w, w])),
    ("vstack", lambda m, w: m.numpy.vstack([w, w])),
]


@pytest.mark.parametrize("name,fn", _JOINS, ids=[n for n, _ in _JOINS])
def test_join_of_weak_bools_has_jax_weak_type(name, fn):
  j = oracle()

  def run(m):
    w = m.numpy.logical_not(1)  # a weakly typed bool in both
    assert (w.dtype, w.weak_type) == (np.dtype(bool), True)
    eager = fn(m, w)
    traced = m.jit(lambda a: fn(m, m.numpy.logical_not(a)))(1)
    text = _jaxpr_text(m, lambda a: fn(m, m.numpy.logical_not(a)), 1)
    return (eager.dtype, eager.weak_type, np.asarray(eager).tolist(), traced.weak_type, text)

  got, want = run(jax), run(j)
  assert got == want
  assert got[1] is (name in ("stack1", "concatenate1"))


# --- asarray-float-int-overflow: a Python float outside an explicit int dtype raises -----------

_OVERFLOW = [
    (1e10, "int32", "OverflowError", "Python integer 10000000000 out of bounds for int32"),
    (2.0**31, "int32", "OverflowError", "Python integer 2147483648 out of bounds for int32"),
    (300.0, "uint8", "OverflowError", "Python integer 300 out of bounds for uint8"),
    (-1.0, "uint8", "OverflowError", "Python integer -1 out of bounds for uint8"),
    (float("inf"), "int32", "OverflowError", "cannot convert float infinity to integer"),
    (float("nan"), "int32", "ValueError", "cannot convert float NaN to integer"),
    (1e10, "int64", "OverflowError", "Python integer 10000000000 out of bounds for int32"),
    (1e20, "int64", "OverflowError", "Python int too large to convert to C long"),
    ([1.5, 300.0], "uint8", "OverflowError", "Python integer 300 out of bounds for uint8"),
    ((1e10,), "int32", "OverflowError", "Python integer 10000000000 out of bounds for int32"),
    (1.5 + 0j, "int32", "TypeError", "int() argument must be a string, a bytes-like object or a "
     "real number, not 'complex'"),
    (2**40, "int32", "OverflowError", "Python integer 1099511627776 out of bounds for int32"),
]


@pytest.mark.parametrize("fname", ["asarray", "array"])
@pytest.mark.parametrize("value,dtype,cls,msg", _OVERFLOW)
def test_python_number_outside_explicit_int_dtype_raises_as_jax(fname, value, dtype, cls, msg):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # int64 without x64: the truncation warning
    assert _error(getattr(jnp, fname), value, dtype=dtype) == (cls, msg)
    j = oracle()
    assert _error(getattr(j.numpy, fname), value, dtype=dtype) == (cls, msg)


@pytest.mark.parametrize("value,dtype,want", [
    (3.7, "int8", 3), (-0.5, "uint8", 0), (255.9, "uint8", 255), (3e9, "uint32", 3000000000),
    (2.0**31 - 1, "int32", 2**31 - 1), (True, "uint8", 1), ([1.5, -2.5], "int32", [1, -2]),
    (1e10, "bool", True), (1e10, "float16", np.inf)])
def test_python_number_inside_explicit_dtype_converts_as_jax(value, dtype, want):
  got = jnp.asarray(value, dtype=dtype)
  assert got.dtype == np.dtype(dtype) and not got.weak_type
  assert np.asarray(got).tolist() == want
  j = oracle()
  theirs = j.numpy.asarray(value, dtype=dtype)
  assert theirs.dtype == got.dtype and np.asarray(theirs).tolist() == want


def test_python_float_outside_int64_under_x64_raises_as_jax():
  with x64():
    assert _error(jnp.asarray, 9.3e18, dtype="int64") == (
        "OverflowError", "Python int too large to convert to C long")
    assert _error(jnp.asarray, -1.0, dtype="uint64") == (
        "OverflowError", "Python integer -1 out of bounds for uint64")
    assert np.asarray(jnp.asarray(1e19, dtype="uint64")).item() == 10**19
  # without an explicit dtype the weak-scalar rules still apply (jaxlite's wording is JAX's)
  assert _error(jnp.array, 2**31) == (
      "OverflowError", "Python int 2147483648 too large to convert to int32")


# --- lax binary ops with mismatched or unaccepted dtypes: JAX's class and message, word for word

_BINARY = ("add sub mul div rem pow max min atan2 nextafter eq ne lt le gt ge bitwise_and "
           "bitwise_or bitwise_xor shift_left shift_right_logical shift_right_arithmetic complex "
           "igamma igammac igamma_grad_a polygamma zeta").split()


def _dtype_grid():
  ml_dtypes = pytest.importorskip("ml_dtypes")
  return [np.bool_, np.int32, np.uint8, np.float16, np.float32, ml_dtypes.bfloat16, np.complex64]


def _outcome(fn, *args):
  try:
    return "ok", str(fn(*args).dtype)
  except Exception as e:  # noqa: BLE001 - the class and message are what is compared
    return type(e).__name__, str(e)


@pytest.mark.parametrize("op", _BINARY)
def test_lax_binary_dtype_errors_match_jax(op):
  j = oracle()
  grid = _dtype_grid()
  mine = {d: jnp.asarray(np.ones((), d)) for d in grid}
  theirs = {d: j.numpy.asarray(np.ones((), d)) for d in grid}
  for a in grid:
    for b in grid:
      got = _outcome(getattr(jax.lax, op), mine[a], mine[b])
      want = _outcome(getattr(j.lax, op), theirs[a], theirs[b])
      assert got == want, (op, np.dtype(a).name, np.dtype(b).name)
  # under jit the error is the same (raised while tracing)
  a, b = mine[np.int32], mine[np.float32]
  assert _outcome(jax.jit(getattr(jax.lax, op)), a, b) == \
      _outcome(j.jit(getattr(j.lax, op)), theirs[np.int32], theirs[np.float32])


def test_lax_add_mixed_dtypes_known_answers():
  i, f = jnp.asarray(1, jnp.int32), jnp.asarray(1.0, jnp.float32)
  assert _error(jax.lax.add, i, f) == (
      "TypeError", "lax.add requires arguments to have the same dtypes, got int32, float32. "
      "(Tip: jnp.add is a similar function that does automatic type promotion on inputs).")
  assert _error(jax.lax.rem, i, f) == (
      "TypeError", "lax.rem requires arguments to have the same dtypes, got int32, float32.")
  assert _error(jax.lax.add, jnp.asarray(True), i) == (
      "TypeError", "add does not accept dtype bool at position 0. Accepted dtypes at position 0 "
      "are subtypes of integer, floating, complexfloating.")
  assert _error(jax.lax.shift_left, i, f) == (
      "TypeError", "shift_left does not accept dtype float32 at position 1. Accepted dtypes at "
      "position 1 are subtypes of integer.")


@pytest.mark.parametrize("op,dtype", [("neg", np.bool_), ("abs", np.bool_), ("sign", np.bool_),
                                      ("population_count", np.float32), ("clz", np.float32),
                                      ("square", np.bool_), ("sqrt", np.int32),
                                      ("floor", np.int32), ("conj", np.float16),
                                      ("conj", np.int32)])
def test_lax_unary_dtype_errors_match_jax(op, dtype):
  j = oracle()
  got = _outcome(getattr(jax.lax, op), jnp.asarray(np.ones((), dtype)))
  assert got[0] == "TypeError"
  assert got == _outcome(getattr(j.lax, op), j.numpy.asarray(np.ones((), dtype)))


# --- campaign 6 (seeds 900-911): integer_pow with a huge exponent hung; half cumsum rounding ----

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "complex64"])
@pytest.mark.parametrize("y", [3, 5, 7, 11, 13, 16, -3, -7, 2**31 - 1])
def test_integer_pow_squares_in_xlas_order(dtype, y):
  """Square-and-multiply as XLA lowers it: log2(y) products (2**31 - 1 took 2**31 before: a
  hang), bit-equal to JAX (exponents up to 16 keep the values normal: XLA:CPU flushes
  subnormals, a documented difference)."""
  rng = np.random.default_rng(0)
  x = np.asarray(rng.uniform(0.5, 1.5, 64) * rng.choice([-1, 1], 64)).astype(
      jnp.dtype(dtype))
  got = np.asarray(jax.lax.integer_pow(jnp.asarray(x), y))
  assert got.dtype == x.dtype
  if y == 2**31 - 1:  # |x| < 1 goes to 0, |x| > 1 to inf, 1 stays
    small = np.abs(x.astype(np.complex128)) < 1
    assert np.all(got[small] == 0)
  j = oracle()
  np.testing.assert_array_equal(got, np.asarray(j.lax.integer_pow(j.numpy.asarray(x), y)))


def test_half_precision_cumsum_rounds_each_partial_sum():
  """XLA rounds every partial sum of a bfloat16/float16 cumsum to the dtype (fuzz seed 902)."""
  import ml_dtypes
  x = np.array([-0.4, 2.7, -3.0], ml_dtypes.bfloat16)
  got = np.asarray(jnp.cumsum(jnp.asarray(x)))
  np.testing.assert_array_equal(got.astype(np.float32), [-0.400390625, 2.296875, -0.703125])
  j = oracle()
  for v in (x, x.astype(np.float16)):
    np.testing.assert_array_equal(np.asarray(jax.vmap(jnp.cumsum)(jnp.asarray(v[None]))),
                                  np.asarray(j.vmap(j.numpy.cumsum)(j.numpy.asarray(v[None]))))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_top_k_orders_floats_by_their_bits_total_order(dtype):
  """XLA's TopK: -NaN below -inf, +NaN above +inf, -0 below +0 (fuzz seed 905: top_k of
  sin(inf), which x86 makes -NaN, put it first)."""
  nan = np.float64("nan")
  vals = np.array([-nan, 1.0, nan, -0.0, 0.0, -np.inf, np.inf, -2.5], np.float64)
  with x64(dtype == "float64"):
    x = jnp.asarray(vals.astype(jnp.dtype(dtype)))
    got_vals, got_idx = jax.lax.top_k(x, 8)
    np.testing.assert_array_equal(np.asarray(got_idx), [2, 6, 1, 4, 3, 7, 5, 0])
    j = oracle()
    want_vals, want_idx = j.lax.top_k(j.numpy.asarray(np.asarray(x)), 8)
    np.testing.assert_array_equal(np.asarray(got_idx), np.asarray(want_idx))
    assert (np.signbit(np.asarray(got_vals, np.float64)) ==
            np.signbit(np.asarray(want_vals, np.float64))).all()


# --- campaign 7 (seeds 1000+, eager and grad) ------------------------------------------------

def test_bool_scatter_multiply_of_an_empty_array_raises_as_jax():
  """JAX rejects the bool combiner when it lowers the scatter, even with nothing to update
  (fuzz seed 1003; the eager fast path returned the empty array first)."""
  x = jnp.zeros((0,), bool)
  want = _error(lambda: oracle().numpy.zeros((0,), bool).at[oracle().numpy.array([0])].multiply(
      False))
  got = _error(lambda: x.at[jnp.array([0])].multiply(False))
  assert got is not None and got[0] == "TypeError" and got[1].startswith(
      "mul does not accept dtype bool at position 0")
  assert got == want


def test_top_k_gradient_with_nothing_selected():
  """grad of top_k(x, 0) (or of an empty batch) is zero, not a gather error (fuzz seed 1003)."""
  f = lambda m: lambda x: m.lax.top_k(m.numpy.reshape(x, (0, 3)), 0)[0].sum()  # noqa: E731
  g = lambda m: lambda x: m.lax.top_k(x, 0)[0].sum()  # noqa: E731
  assert np.asarray(jax.grad(f(jax))(jnp.zeros((0,), jnp.float16))).shape == (0,)
  np.testing.assert_array_equal(np.asarray(jax.grad(g(jax))(jnp.ones(3))), [0, 0, 0])
  j = oracle()
  np.testing.assert_array_equal(np.asarray(j.grad(g(j))(j.numpy.ones(3))), [0, 0, 0])
  assert np.asarray(j.grad(f(j))(j.numpy.zeros((0,), j.numpy.float16))).shape == (0,)


@pytest.mark.parametrize("name", ["cummin", "cummax", "cumprod"])
@pytest.mark.parametrize("n", [3, 5, 8])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_gradients_follow_jaxs_associative_scan(name, n, reverse):
  """The JVP of cummin/cummax/cumprod goes through associative_scan's odd/even tree as JAX's
  does, which decides how ties split (fuzz seed 1028: grad of cummin of bf16 [2, 2, 2] is
  [1.75, 0.75, 0.5] in JAX; recursive doubling gave [2, 0.75, 0.25])."""
  x = np.random.default_rng(n).integers(0, 3, (n, 2)).astype(np.float32)
  w = np.arange(1.0, 2 * n + 1, dtype=np.float32).reshape(n, 2)

  def grad(m):
    return np.asarray(m.grad(lambda v: (getattr(m.lax, name)(v, axis=0, reverse=reverse)
                                        * w).sum())(m.numpy.asarray(x)))
  if name == "cummin" and n == 3 and not reverse:
    np.testing.assert_array_equal(
        np.asarray(jax.grad(lambda v: jax.lax.cummin(v, axis=0).sum())(
            jnp.full(3, 2.0, jnp.bfloat16))).astype(np.float32), [1.75, 0.75, 0.5])
  np.testing.assert_array_equal(grad(jax), grad(oracle()))


@pytest.mark.parametrize("name", ["dot", "matmul", "inner", "tensordot", "vdot", "matmul_op"])
def test_products_of_a_weak_operand_and_a_bool_stay_weak(name):
  """JAX's dot/matmul/inner/tensordot end with a cast carrying the promoted weak flag: a weak
  int32 times a bool array is weak (fuzz seed 1045: jnp.dot of a scan's weak ys and a bool)."""
  def run(m):
    w = m.numpy.array([[True, False]]) * 2
    b = m.numpy.array([[True], [True]])
    fn = {"dot": m.numpy.dot, "matmul": m.numpy.matmul, "inner": lambda x, y: m.numpy.inner(
        x, y.T), "tensordot": lambda x, y: m.numpy.tensordot(x, y, 1), "vdot": m.numpy.vdot,
        "matmul_op": lambda x, y: x @ y}[name]
    r = fn(w, b if name != "vdot" else b.T)
    return str(r.dtype), r.weak_type, np.asarray(r).tolist()
  assert run(jax)[1] is True
  assert run(jax) == run(oracle())
