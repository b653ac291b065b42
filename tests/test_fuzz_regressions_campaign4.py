"""Regression tests for the defects the fuzzer's fourth campaign found (RELIABILITY.md,
"Campaign 4"): a known answer each, and the same program in real JAX where it is installed."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16


def _error(fn, *args):
  try:
    fn(*args)
  except Exception as e:  # noqa: BLE001 - the class and message are what is compared
    return type(e).__name__, str(e)
  return None


# --- eq/ne of bfloat16 operands took the typed-PRNG-key path (bfloat16's NumPy kind is "V") ----

@pytest.mark.parametrize("name", ["equal", "not_equal"])
def test_bfloat16_comparison_of_unbroadcastable_shapes_is_jax_type_error(name):
  a, b = np.zeros((1, 3), BF16), np.zeros((1, 2), BF16)
  prim = {"equal": "eq", "not_equal": "ne"}[name]
  want = ("TypeError", f"{prim} got incompatible shapes for broadcasting: (1, 3), (1, 2).")
  assert _error(getattr(jnp, name), a, b) == want
  assert _error(jax.jit(getattr(jnp, name)), a, b) == want
  jax_ = oracle()
  if jax_ is not None:
    assert _error(getattr(jax_.numpy, name), a, b) == want


def test_bfloat16_comparisons_still_compare_values_and_keys_still_compare_keys():
  x = jnp.asarray(np.array([1.0, 2.0, np.nan], np.float32), BF16)
  assert jnp.equal(x, 2.0).tolist() == [False, True, False]
  assert jnp.not_equal(x, x).tolist() == [False, False, True]
  k = jax.random.split(jax.random.key(0), 3)
  assert (k == k[1]).tolist() == [False, True, False]


# --- x.at[i].add/multiply/subtract of booleans: JAX's TypeError, not a logical or/and ----------

@pytest.mark.parametrize("method,prim", [("add", "add"), ("multiply", "mul"), ("mul", "mul"),
                                         ("subtract", "sub")])
@pytest.mark.parametrize("jitted", [False, True])
def test_arithmetic_scatter_of_bools_raises_type_error(method, prim, jitted):
  def f(x):
    return getattr(x.at[jnp.array([-2])], method)(False, mode="clip")
  want = ("TypeError", f"{prim} does not accept dtype bool at position 0. Accepted dtypes at "
                       "position 0 are subtypes of integer, floating, complexfloating.")
  x = np.array([True])
  got = _error(jax.jit(f) if jitted else f, jnp.asarray(x))
  if jitted:  # the update computation's `add` rejects bool as it is traced (JAX: same class)
    assert got[0] == "TypeError" and got[1].startswith(f"{prim} does not accept dtype bool")
  else:
    assert got == want
  jax_ = oracle()
  if jax_ is not None:
    g = lambda x: getattr(x.at[jax_.numpy.array([-2])], method)(False, mode="clip")  # noqa: E731
    assert _error(jax_.jit(g) if jitted else g, jax_.numpy.asarray(x)) == want


@pytest.mark.parametrize("method,want", [("min", [False, True]), ("max", [True, True]),
                                         ("set", [True, True])])
def test_non_arithmetic_scatters_of_bools_still_work(method, want):
  x = jnp.array([False, True])
  assert getattr(x.at[0], method)(True).tolist() == want


# --- jnp.outer of booleans is their logical and (JAX stages `and`, not `mul`) ----------------

def test_outer_of_bools_is_logical_and():
  a, b = np.array([True, False]), np.array([True, True, False])
  got = jnp.outer(a, b)
  assert got.dtype == np.bool_ and got.tolist() == np.outer(a, b).tolist()
  assert jnp.outer(np.zeros((2, 0), bool), np.zeros((0,), bool)).shape == (0, 0)
  text = str(jax.make_jaxpr(jnp.outer)(a, b))
  assert "= and " in text and "mul" not in text
  jax_ = oracle()
  if jax_ is not None:
    assert text == str(jax_.make_jaxpr(jax_.numpy.outer)(a, b))
    assert str(jax.make_jaxpr(jnp.outer)(a, np.ones(3, np.int8))) == str(
      jax_.make_jaxpr(jax_.numpy.outer)(a, np.ones(3, np.int8)))


# --- fmod/remainder by a boolean divisor compare it as a weak int32; divmod promotes once -------

def _jaxpr_pair(fn, *args):
  jax_ = oracle()
  mine = str(jax.make_jaxpr(getattr(jnp, fn))(*args))
  theirs = None if jax_ is None else str(jax_.make_jaxpr(getattr(jax_.numpy, fn))(*args))
  return mine, theirs


@pytest.mark.parametrize("fn", ["fmod", "remainder", "floor_divide", "divmod"])
def test_integer_division_family_by_a_bool_stages_as_jax(fn):
  x, d = np.array([6, 254, 4, 1], np.uint8), np.array(True)
  mine, theirs = _jaxpr_pair(fn, x, d)
  if fn == "fmod":
    assert "convert_element_type[new_dtype=int32 weak_type=True] b" in mine
  if theirs is not None:
    assert mine == theirs
  out = getattr(jnp, fn)(x, d)
  out = out if isinstance(out, tuple) else (out,)
  want = {"fmod": [[0, 0, 0, 0]], "remainder": [[0, 0, 0, 0]], "floor_divide": [[6, 254, 4, 1]],
          "divmod": [[6, 254, 4, 1], [0, 0, 0, 0]]}[fn]
  assert [o.tolist() for o in out] == want and all(o.dtype == np.uint8 for o in out)


def test_float_divmod_is_one_computation_with_python_semantics():
  x = np.array([-7.5, 7.5, 0.0, -0.0, np.inf], np.float32)
  y = np.array([2.0, -2.0, 3.0, 3.0, 2.0], np.float32)
  q, r = jnp.divmod(x, y)
  np.testing.assert_array_equal(np.asarray(q), [-4.0, -4.0, 0.0, -0.0, np.nan])
  np.testing.assert_array_equal(np.asarray(r), [0.5, -0.5, 0.0, 0.0, np.nan])
  mine, theirs = _jaxpr_pair("divmod", np.ones(4, np.float16), np.float32(2.0))
  assert mine.startswith("let divmod = ")
  if theirs is not None:
    assert mine == theirs
  with pytest.raises(TypeError, match="floor_divide does not support complex"):
    jnp.divmod(np.array(1j), np.array(2j))


# The dtype check runs where JAX's does: index and shape errors come first, a slice of size 0
# returns the operand, and make_jaxpr of a promoted update (bool + weak int) stages the scatter.
_SCATTER_ORDER = [
  ("oob-index-first", lambda: jnp.zeros(0, bool).at[-1].add(-1), ("IndexError",
                                                                 "index is out of bounds")),
  ("size-0-slice", lambda: jnp.zeros((2, 0), bool).at[-1:].add(True), None),
  ("size-0-drop", lambda: jnp.zeros(0, bool).at[0:].add(jnp.zeros(0, bool), mode="drop"), None),
  ("all-dropped", lambda: jnp.zeros(3, bool).at[5].add(True, mode="drop"), ("TypeError", "add")),
  ("min-is-fine", lambda: jnp.zeros(3, bool).at[1].min(True), None),
]


@pytest.mark.parametrize("name,thunk,want", _SCATTER_ORDER, ids=[r[0] for r in _SCATTER_ORDER])
def test_bool_scatter_errors_come_in_jax_order(name, thunk, want):
  import warnings
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    got = _error(thunk)
  if want is None:
    assert got is None
  else:
    assert got[0] == want[0] and want[1] in got[1]


def test_bool_scatter_with_a_promoting_update_traces():
  import warnings
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    text = str(jax.make_jaxpr(lambda x: x.at[0:].add(1, mode="promise_in_bounds"))(
      jnp.zeros(1, bool)))
  assert "scatter-add" in text and "i32[1]" in text


# --- lax functions take Python complex scalars (asarg's `complex` was lax.complex) -------------

def test_lax_accepts_python_complex_scalars():
  got = jax.lax.max(1j, 1j)
  assert got.dtype == np.complex64 and got.weak_type and complex(got) == 1j
  assert complex(jax.lax.neg(2j)) == -2j and complex(jax.lax.add(1j, 2j)) == 3j


def test_bool_scatter_with_a_promoting_update_runs_eagerly():
  # bool + weak int promotes to int32: the scatter adds in int32 and casts back (JAX: [True])
  import warnings
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    got = jnp.zeros(1, bool).at[0:].add(1, mode="promise_in_bounds")
  assert got.dtype == np.bool_ and got.tolist() == [True]
