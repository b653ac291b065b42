"""Regression tests for the defects tools/fuzz.py found (RELIABILITY.md, "jaxlite defects").

One section per category: a known answer, plus a comparison with real JAX where it is installed.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle, x64

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _run_fresh(code: str, **env_vars) -> str:
  """Runs `code` in a fresh interpreter (module import order matters) and returns its stdout."""
  env = dict(os.environ, PYTHONPATH=_SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
             **env_vars)
  out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=env, timeout=120)
  assert out.returncode == 0, out.stderr
  return out.stdout.strip()


# --- 1. late-ml_dtypes: bfloat16 works when ml_dtypes is imported after jaxlite was used -------

def test_late_ml_dtypes_bfloat16_is_picked_up_lazily():
  pytest.importorskip("ml_dtypes")
  out = _run_fresh("""
    import sys
    import numpy as np
    import jaxlite as jax
    import jaxlite.numpy as jnp
    assert "ml_dtypes" not in sys.modules, "import jaxlite must not import ml_dtypes"
    jnp.ones(3) + 1                      # builds the dtype tables without bfloat16
    assert "ml_dtypes" not in sys.modules
    import ml_dtypes
    x = jnp.asarray(np.ones((), ml_dtypes.bfloat16))
    print(float(x.sum()), float(-x), float(x ** 2), float(jax.grad(lambda a: a * a)(x)))
    print(jax.make_jaxpr(lambda a: -a)(x))
    print((x + 1.0).dtype, (x + jnp.ones((), jnp.float16)).dtype)
    print(bool(jnp.issubdtype(ml_dtypes.bfloat16, jnp.floating)))
  """, JAXLITE_BACKEND="numpy")  # (the xla backend's jaxlib imports ml_dtypes itself)
  assert out.splitlines() == ["1.0 -1.0 1.0 2.0",
                              "{ lambda ; a:bf16[]. let b:bf16[] = neg a in (b,) }",
                              "bfloat16 float32", "True"]


@pytest.mark.parametrize("fn", ["nan_to_num", "nancumsum", "sign"])
def test_bfloat16_counts_as_floating(fn):
  vals = np.array([np.nan, np.inf, -0.0, 1.0], np.float32)
  got = getattr(jnp, fn)(jnp.asarray(vals, jnp.bfloat16))
  want = getattr(np, fn)(vals.astype(np.float32)).astype(jnp.bfloat16)
  if fn == "nan_to_num":
    want = np.array([0, np.finfo(jnp.bfloat16).max, -0.0, 1.0], jnp.bfloat16)
  if fn == "sign":  # XLA keeps the sign of zero (NumPy's sign does not)
    want = np.array([np.nan, 1.0, -0.0, 1.0], jnp.bfloat16)
  np.testing.assert_array_equal(np.asarray(got).astype(np.float32), want.astype(np.float32))
  assert np.signbit(np.asarray(got).astype(np.float32)).tolist() == \
      np.signbit(want.astype(np.float32)).tolist()
  jax_ = oracle()
  ref = getattr(jax_.numpy, fn)(jax_.numpy.asarray(vals, jax_.numpy.bfloat16))
  np.testing.assert_array_equal(np.asarray(got).astype(np.float32),
                                np.asarray(ref).astype(np.float32))
  if fn == "nancumsum":
    return  # its jaxpr differs in how the NaN fill is built (not a fuzz category yet)
  assert str(jax.make_jaxpr(getattr(jnp, fn))(jnp.asarray(vals, jnp.bfloat16))) == \
      str(jax_.make_jaxpr(getattr(jax_.numpy, fn))(jax_.numpy.asarray(vals, jax_.numpy.bfloat16)))


# --- error classes: one row per (category, program); `m` is the jax or jaxlite module --------

def _mods(m):
  return m, m.numpy, m.lax


ERROR_CASES = [
  # 2. empty-axis-static-index: an int index on an axis of size 0 (traced or not) is IndexError
  ("empty-axis-static-index-jit", lambda m, jnp, lax: m.jit(lambda a: a[0])(jnp.zeros(0)),
   IndexError),
  ("empty-axis-static-index-vmap", lambda m, jnp, lax: m.vmap(lambda a: a[0])(jnp.zeros((2, 0))),
   IndexError),
  ("empty-axis-static-index-jaxpr", lambda m, jnp, lax: m.make_jaxpr(lambda a: a[1:, -1])(
      jnp.zeros((3, 0))), IndexError),
  ("empty-axis-static-index-eager", lambda m, jnp, lax: jnp.zeros(0)[0], IndexError),
]

ERROR_CASES += [
  # 7. lax-cumulative-negative-axis: lax's cumulative ops take no negative axis (before dtype)
  ("lax-cumsum-negative-axis", lambda m, jnp, lax: lax.cumsum(jnp.ones((1, 1)), axis=-1),
   ValueError),
  ("lax-cummax-bool-negative-axis", lambda m, jnp, lax: lax.cummax(
      jnp.array([True]), axis=-1, reverse=True), ValueError),
  ("lax-cumlogsumexp-negative-axis", lambda m, jnp, lax: lax.cumlogsumexp(
      jnp.ones(3), axis=-5), ValueError),
  ("lax-cumprod-axis-too-big", lambda m, jnp, lax: lax.cumprod(jnp.ones(3), axis=1), ValueError),
  ("lax-cummin-bool", lambda m, jnp, lax: lax.cummin(jnp.ones(3, bool), axis=0), TypeError),
]


def test_jnp_cumulative_still_takes_negative_axes():
  got = jnp.cumsum(jnp.ones((2, 3)), axis=-1)
  np.testing.assert_array_equal(got, [[1, 2, 3], [1, 2, 3]])
  np.testing.assert_array_equal(jax.lax.cumsum(jnp.ones((2, 3)), axis=1), got)


ERROR_CASES += [
  # 12. lax-mul-bool: lax.mul (and integer_pow) reject bool operands; jnp.multiply still works
  ("lax-mul-bool", lambda m, jnp, lax: lax.mul(jnp.array([False]), jnp.array([False])),
   TypeError),
  ("lax-mul-bool-jit", lambda m, jnp, lax: m.jit(lax.mul)(jnp.array([True]), jnp.array([True])),
   TypeError),
  ("lax-integer_pow-bool", lambda m, jnp, lax: lax.integer_pow(jnp.array([True]), 0), TypeError),
]


def test_jnp_multiply_of_bools_is_logical_and():
  a = jnp.array([True, True, False])
  np.testing.assert_array_equal(jnp.multiply(a, jnp.array([True, False, False])),
                                [True, False, False])
  assert (a * a).dtype == np.bool_


# --- 3. jnp-fix-removed: JAX 0.10 removed jnp.fix (use jnp.trunc) -------------------------------

def test_jnp_fix_is_gone_like_in_jax():
  assert not hasattr(jnp, "fix")
  assert "fix" not in jnp.__all__ and "fix" not in dir(jnp)
  np.testing.assert_array_equal(jnp.trunc(jnp.array([-1.5, 1.5])), [-1.0, 1.0])
  jax_ = oracle()
  assert hasattr(jax_.numpy, "fix") == hasattr(jnp, "fix")


ERROR_CASES += [
  # 13. at-static-index-empty: a static int index into a size-0 axis raises in every mode
  ("at-static-index-empty-drop", lambda m, jnp, lax: jnp.zeros(0, jnp.float32).at[-1].set(
      7, mode="drop"), IndexError),
  ("at-static-index-empty-clip", lambda m, jnp, lax: jnp.zeros(0).at[0].add(7, mode="clip"),
   IndexError),
  ("at-static-index-empty-2d", lambda m, jnp, lax: jnp.zeros((2, 0)).at[:, 0].max(7), IndexError),
  ("at-static-index-empty-jit", lambda m, jnp, lax: m.jit(lambda a: a.at[0].set(1.0))(
      jnp.zeros(0)), IndexError),
]


def test_at_on_empty_slices_still_works():
  x = jnp.zeros((0, 3))
  assert x.at[:, 1].set(5.0).shape == (0, 3)
  assert x.at[1:].add(5.0).shape == (0, 3)


def _grad_while_then_scatter_min(m, jnp, lax):
  def f(x):
    v = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1]
    return jnp.sum(v.at[jnp.array([-2, 1])].min(1.0))
  return m.grad(f)(jnp.array([4.5, 1.0]))


ERROR_CASES += [
  # 22. while-loop-reverse-mode: reverse mode through while_loop is JAX's ValueError even when
  # later code divides by the loop's outputs (scatter-min's JVP)
  ("while-loop-reverse-mode", _grad_while_then_scatter_min, ValueError),
  ("while-loop-reverse-mode-plain", lambda m, jnp, lax: m.grad(lambda x: lax.while_loop(
      lambda c: c < 3, lambda c: c * x, 1.0))(1.5), ValueError),
]


def test_while_loop_linearize_still_gives_jvp():
  f = lambda x: jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1]
  y, f_jvp = jax.linearize(f, 1.5)
  assert (float(y), float(f_jvp(1.0))) == (12.0, 8.0)


# --- 10. diff-empty-axis: jnp.diff along an axis of size 0 is empty ---------------------------

@pytest.mark.parametrize("shape,n,axis", [((0,), 1, 0), ((1,), 3, -1), ((2, 0), 2, -1),
                                          ((0, 3), 1, 0)])
def test_diff_on_empty_axis(shape, n, axis):
  x = np.zeros(shape, np.float32)
  got = jnp.diff(x, n=n, axis=axis)
  assert got.shape == np.diff(x, n=n, axis=axis).shape and got.dtype == np.float32
  jax_ = oracle()
  assert got.shape == jax_.numpy.diff(x, n=n, axis=axis).shape
  if x.shape[axis] == 0:  # (a non-empty axis's slices print strides differently: not this row)
    f = lambda m: m.make_jaxpr(lambda a: m.numpy.diff(a, n=n, axis=axis))(x)
    assert str(f(jax)) == str(f(jax_))


# --- 18. relu-negative-zero-f16: max/min keep XLA's zero signs in float16 under jit too ---------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("fn", ["relu", "relu6", "max0", "min0"])
def test_extremum_sign_of_zero(fn, dtype):
  def f(m):
    return {"relu": m.nn.relu, "relu6": m.nn.relu6, "max0": lambda v: m.numpy.maximum(v, 0.0),
            "min0": lambda v: m.numpy.minimum(v, -0.0)}[fn]
  x = jnp.array([-0.0, 0.0, -1.0], dtype)
  want = {"relu": [0.0, 0.0, 0.0], "relu6": [0.0, 0.0, 0.0], "max0": [0.0, 0.0, 0.0],
          "min0": [-0.0, -0.0, -1.0]}[fn]
  for g in (f(jax), jax.jit(f(jax)), jax.vmap(f(jax))):
    got = np.asarray(g(x)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got).tolist() == np.signbit(np.array(want)).tolist(), g
  jax_ = oracle()
  ref = np.asarray(jax_.jit(f(jax_))(jax_.numpy.asarray(np.asarray(x)))).astype(np.float32)
  assert np.signbit(ref).tolist() == np.signbit(np.array(want)).tolist()


# --- 11. sort-grad-empty: grad through a sort of a size-0 array is an empty gradient ---------

@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
@pytest.mark.parametrize("sort", ["lax.sort", "jnp.sort", "jnp.argsort-take"])
def test_sort_grad_of_empty(sort, shape):
  def f(m):
    s = {"lax.sort": lambda a: m.lax.sort(a), "jnp.sort": lambda a: m.numpy.sort(a, axis=-1),
         "jnp.argsort-take": lambda a: m.numpy.take_along_axis(
             a, m.numpy.argsort(a, axis=-1), axis=-1)}[sort]
    return lambda a: m.numpy.sum(s(a) * 2.0)
  x = np.zeros(shape, np.float32)
  g = jax.grad(f(jax))(x)
  assert g.shape == shape and g.dtype == np.float32
  assert jax.jit(jax.grad(f(jax)))(x).shape == shape
  jax_ = oracle()
  assert jax_.grad(f(jax_))(x).shape == shape


# --- 19. std-var-f16-accumulation: float16/bfloat16 var and std accumulate in float32 ---------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fn,kw", [("var", {}), ("std", {}), ("var", {"ddof": 1}),
                                   ("std", {"dtype": "float16"})])
def test_half_var_std_upcast(fn, kw, dtype):
  x = np.array([[60000., 65000.], [1.5, -2.25]], np.float32)
  got = getattr(jnp, fn)(jnp.asarray(x, dtype), axis=1, **kw)
  assert got.dtype == jnp.dtype(kw.get("dtype", dtype))
  # var in float32 (60000 and 65000 are 2500 apart: no inf from float16 sums), then rounded to
  # the result dtype; std is the square root of that rounded var (inf when var overflows f16)
  var = np.var(x.astype(got.dtype).astype(np.float32), axis=1, ddof=kw.get("ddof", 0))
  var = var.astype(got.dtype).astype(np.float32)
  want = np.sqrt(var) if fn == "std" else var
  np.testing.assert_allclose(np.asarray(got, np.float32), want, rtol=1e-2)
  jax_ = oracle()
  ref = getattr(jax_.numpy, fn)(jax_.numpy.asarray(x, dtype), axis=1, **kw)
  np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(ref, np.float32))
  f = lambda m: m.make_jaxpr(lambda v: getattr(m.numpy, fn)(v, axis=1, **kw))(
      m.numpy.asarray(x, dtype))
  assert str(f(jax)) == str(f(jax_))


# --- 20. jaxpr-mean-bool: jnp.mean of bools counts them as int32 first ------------------------

@pytest.mark.parametrize("x64_on", [False, True])
@pytest.mark.parametrize("kw", [{"axis": -2}, {}, {"axis": 0, "keepdims": True}])
def test_mean_of_bool(kw, x64_on):
  x = np.array([[True], [False], [True]])
  jax_ = oracle()
  with x64(x64_on):
    got = jnp.mean(x, **kw)
    np.testing.assert_allclose(np.asarray(got), np.mean(x, **kw), rtol=1e-6)
    mine = str(jax.make_jaxpr(lambda v: jnp.mean(v, **kw))(x))
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    ref = str(jax_.make_jaxpr(lambda v: jax_.numpy.mean(v, **kw))(x))
  finally:
    jax_.config.update("jax_enable_x64", False)
  assert mine == ref


# --- the error-class table runs last, after every section has added its rows ------------------
@pytest.mark.parametrize("name,fn,cls", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_error_class(name, fn, cls):
  with pytest.raises(cls):
    fn(*_mods(jax))
  jax_ = oracle()
  with pytest.raises(cls):
    fn(*_mods(jax_))


# --- 17. scatter-max-grad-nan: scatter_max/min's JVP keeps NaN where no value attains the result

def _scatter_extremum_cases(m, jnp):
  nan = float("nan")
  x = jnp.array([0.1, -3.0, -2.7, nan], jnp.float32)
  idx = jnp.array([-1, 1])
  ones = jnp.ones(4, jnp.float32)

  def at(op, v=0.0):
    return lambda a: getattr(a.at[idx], op)(v)
  out = {}
  for op in ("max", "min"):
    sig = lambda a, op=op: jnp.sum(m.nn.sigmoid(at(op)(a)))
    out[f"{op}-grad-sigmoid"] = m.grad(sig)(x)
    out[f"{op}-jvp"] = m.jvp(at(op), (x,), (ones,))[1]
    out[f"{op}-vjp-ones"] = m.vjp(at(op), x)[1](ones)[0]
    out[f"{op}-jit-grad-ties"] = m.jit(m.grad(lambda a, v, op=op: jnp.sum(
        getattr(a.at[jnp.array([3, 1, 1])], op)(v)), (0, 1)))(x, jnp.float32(-3.0))
    out[f"{op}-grad-2d"] = m.grad(lambda a, op=op: jnp.sum(m.nn.sigmoid(
        getattr(a.at[:, jnp.array([0, 0])], op)(jnp.array([[1.0, nan], [2.0, -1.0]])))))(
        jnp.array([[1.0, 2.0], [nan, 0.5]]))
  return out


def test_scatter_extremum_jvp_keeps_nan():
  got = _scatter_extremum_cases(jax, jnp)
  s = lambda v: 1 / (1 + np.exp(-v)) * (1 - 1 / (1 + np.exp(-v)))  # sigmoid'
  nan = np.nan
  known = {
    "max-grad-sigmoid": [s(0.1), 0.0, s(-2.7), nan], "max-jvp": [1, 0, 1, 0],
    "max-vjp-ones": [1, 0, 1, 0],
    "min-grad-sigmoid": [s(0.1), s(-3.0), s(-2.7), nan], "min-jvp": [1, 1, 1, 0],
    "min-vjp-ones": [1, 1, 1, 0],
  }
  for k, want in known.items():
    np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want, np.float32), rtol=1e-6)
  jax_ = oracle()
  ref = _scatter_extremum_cases(jax_, jax_.numpy)
  for k in ref:
    for a, b in zip(jax.tree_util.tree_leaves(got[k]), jax_.tree_util.tree_leaves(ref[k])):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, err_msg=k)


# --- 21. jaxpr-python-float-literal: jnp.sinc's constants follow x's weak type ------------------

_SINC_ARGS = [("py-float", lambda jnp: 2.5), ("py-int", lambda jnp: 3),
              ("f32", lambda jnp: jnp.float32(2.5)), ("f16", lambda jnp: jnp.float16(0.25)),
              ("bf16-vec", lambda jnp: jnp.ones(2, jnp.bfloat16))]


@pytest.mark.parametrize("x64_on", [False, True])
@pytest.mark.parametrize("name,arg", _SINC_ARGS, ids=[a[0] for a in _SINC_ARGS])
def test_sinc_pi_literal(name, arg, x64_on):
  with x64(x64_on):
    text = str(jax.make_jaxpr(jnp.sinc)(arg(jnp)))
    weak = name.startswith("py")
    pi = {"f16": "3.140625:f16[]", "bf16-vec": "3.140625:bf16[]"}.get(
        name, "3.141592653589793:f" if weak or x64_on and name != "f32" else
        "3.1415927410125732:f32[]")
    assert f"mul {pi}" in text
    np.testing.assert_allclose(np.asarray(jnp.sinc(arg(jnp)), np.float32),
                               np.sinc(np.asarray(arg(jnp), np.float32)), rtol=1e-2, atol=1e-3)
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    assert text == str(jax_.make_jaxpr(jax_.numpy.sinc)(arg(jax_.numpy)))
  finally:
    jax_.config.update("jax_enable_x64", old)


# --- 24. logical-weak-type: logical ops of weak scalars give weak booleans -----------------------

_LOGICAL_ARGS = {"py-true": lambda jnp: True, "py-int": lambda jnp: 1, "py-float": lambda jnp: 2.5,
                 "bool": lambda jnp: jnp.array(True), "bool-vec": lambda jnp: jnp.array([True]),
                 "i32": lambda jnp: jnp.int32(3), "weak-int": lambda jnp: jnp.asarray(1) + 0,
                 "weak-int-vec": lambda jnp: jnp.zeros(1, int) + 0,
                 "weak-bool": lambda jnp: jnp.logical_not(1)}
# (x, y) -> weak type of logical_and(x, y): weak iff both promoted operands are weak scalars
_LOGICAL_WEAK = {("py-true", "py-int"): True, ("py-int", "py-float"): True,
                 ("bool", "py-int"): True, ("py-float", "i32"): True, ("py-int", "i32"): False,
                 ("py-int", "bool-vec"): False, ("py-true", "py-true"): False,
                 ("weak-int", "py-int"): True, ("weak-int-vec", "py-int"): False,
                 ("weak-bool", "weak-bool"): False, ("weak-bool", "bool"): False,
                 ("weak-bool", "py-int"): True}


@pytest.mark.parametrize("fn", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("pair", list(_LOGICAL_WEAK), ids="-".join)
def test_logical_ops_weak_type(pair, fn):
  x, y = (_LOGICAL_ARGS[k](jnp) for k in pair)
  got = getattr(jnp, fn)(x, y)
  assert got.dtype == np.bool_ and got.weak_type == _LOGICAL_WEAK[pair]
  assert jnp.logical_not(x).weak_type == (pair[0] in ("py-int", "py-float", "weak-int",
                                                      "weak-bool"))
  jax_ = oracle()
  jx, jy = (_LOGICAL_ARGS[k](jax_.numpy) for k in pair)
  ref = getattr(jax_.numpy, fn)(jx, jy)
  assert (got.weak_type, bool(np.all(got))) == (ref.weak_type, bool(np.all(ref)))
  if pair[1].startswith("py"):  # a closed-over array is a constvar in JAX (open row 8)
    assert str(jax.make_jaxpr(lambda a: getattr(jnp, fn)(a, y))(x)) == \
        str(jax_.make_jaxpr(lambda a: getattr(jax_.numpy, fn)(a, jy))(jx))


# --- 6. jaxpr-custom-jvp (and the tie gradient): jnp.logaddexp is a custom_jvp as in JAX ---------

def _logaddexp_cases(m, jnp):
  out = {}
  for dt in ("float16", "float32"):
    x = jnp.array([1.5, 0.1, np.inf, -np.inf, np.nan], dt)
    out[f"{dt}-tie"] = m.grad(lambda a: jnp.sum(jnp.logaddexp(a, jnp.array(1.5, dt))))(x)
    out[f"{dt}-self"] = m.grad(lambda a: jnp.sum(jnp.logaddexp(a, a)))(x)
    out[f"{dt}-inf"] = m.jit(m.grad(lambda a: jnp.sum(jnp.logaddexp(np.inf, a))))(x)
    out[f"{dt}-vmap"] = m.vmap(m.grad(lambda a: jnp.logaddexp(a, 2.0)))(x)
    out[f"{dt}-value"] = jnp.logaddexp(x, x[::-1])
  out["jaxpr"] = str(m.make_jaxpr(jnp.logaddexp)(jnp.ones(2), 1.0))
  out["jaxpr-grad"] = str(m.make_jaxpr(m.grad(lambda a: jnp.logaddexp(a, a).sum()))(jnp.ones(2)))
  out["jaxpr-grad-scalar"] = str(m.make_jaxpr(m.grad(lambda a: jnp.logaddexp(a, 2.0)))(1.0))
  return out


def test_logaddexp_custom_jvp():
  got = _logaddexp_cases(jax, jnp)
  # at a tie each operand's derivative is 1/2; +inf is replaced by 0 in exp(x - out) (JAX's
  # rule), so d/dx logaddexp(inf, x) is exp(x)
  np.testing.assert_allclose(np.asarray(got["float32-tie"]),
                             [0.5, 1 / (1 + np.exp(1.4)), 1.0, 0.0, np.nan], rtol=1e-6)
  np.testing.assert_allclose(np.asarray(got["float32-inf"]),
                             [np.exp(1.5), np.exp(0.1), 1.0, 0.0, np.nan], rtol=1e-6)
  assert "custom_jvp_call[\n      name=logaddexp" in got["jaxpr"]
  assert "jvp=_logaddexp_jvp" in got["jaxpr"]
  jax_ = oracle()
  ref = _logaddexp_cases(jax_, jax_.numpy)
  for k, want in ref.items():
    if isinstance(want, str):
      assert got[k] == want, k
    else:
      np.testing.assert_allclose(np.asarray(got[k], np.float32), np.asarray(want, np.float32),
                                 rtol=1e-3 if "16" in k else 1e-6, err_msg=k)


# --- 14. jaxpr-fill-value: gather keeps the user's Python fill_value in its params ----------------

_FILL_CASES = [("float32", -1, [2.0, -1.0]), ("float32", True, [2.0, 1.0]),
               ("uint16", -1, [2, 65535]), ("uint16", 2.5, [2, 2]), ("int8", 2.5, [2, 2]),
               ("bool", -1, [True, True]), ("int32", None, [2, np.iinfo(np.int32).min])]


@pytest.mark.parametrize("dtype,fill,want", _FILL_CASES)
def test_gather_fill_value_param(dtype, fill, want):
  def f(m, jnp):
    x = jnp.arange(3).astype(dtype)
    get = lambda a: a.at[jnp.array([-1, 5])].get(mode="fill", fill_value=fill)
    return get(x), m.jit(get)(x), m.vmap(get)(jnp.stack([x, x]))[1], str(m.make_jaxpr(get)(x))
  eager, jitted, vmapped, text = f(jax, jnp)
  for got in (eager, jitted, vmapped):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want, dtype))
  if fill is not None:
    assert f"fill_value={fill}\n" in text or f"fill_value={fill} " in text
  jax_ = oracle()
  ref = f(jax_, jax_.numpy)
  np.testing.assert_array_equal(np.asarray(eager), np.asarray(ref[0]))
  assert text == ref[3]


# --- 25. scatter-no-scatter-dims-grad: grad of x.at[0:].max(v) (indices of shape (0,)) -----------
# --- 26. at-array-index-empty-clip: x.at[int array].op(v, mode='clip') on a size-0 axis ----------

def _degenerate_scatter_cases(m, jnp):
  x = jnp.array([[-0.0, 2.0]], jnp.float32)
  out = {}
  for op in ("max", "min", "add", "multiply"):
    out[f"grad-{op}"] = m.grad(lambda a, op=op: jnp.sum(getattr(a.at[0:], op)(1.0)))(x)
    out[f"grad-{op}-promise"] = m.grad(lambda a, op=op: jnp.sum(getattr(a.at[0:], op)(
        1.0, mode="promise_in_bounds")))(x)
  for shape in ((0,), (2, 0)):
    for op in ("set", "add", "multiply", "min"):
      e = jnp.zeros(shape, jnp.bfloat16)
      out[f"empty{shape}-{op}"] = getattr(e.at[jnp.array([0, -1])], op)(3.0, mode="clip")
  return out


def test_degenerate_scatters():
  got = _degenerate_scatter_cases(jax, jnp)
  np.testing.assert_array_equal(np.asarray(got["grad-max"]), [[0.0, 1.0]])   # 1 > -0 wins
  np.testing.assert_array_equal(np.asarray(got["grad-min"]), [[1.0, 0.0]])
  np.testing.assert_array_equal(np.asarray(got["grad-multiply"]), [[1.0, 1.0]])
  assert got["empty(2, 0)-add"].shape == (2, 0)
  jax_ = oracle()
  ref = _degenerate_scatter_cases(jax_, jax_.numpy)
  for k, want in ref.items():
    assert (got[k].shape, got[k].dtype) == (want.shape, want.dtype), k
    np.testing.assert_array_equal(np.asarray(got[k], np.float32), np.asarray(want, np.float32),
                                  err_msg=k)


# --- 27. jaxpr-diff-strides: jnp.diff slices with strides=None, as JAX's a[1:] - a[:-1] ----------

@pytest.mark.parametrize("shape,axis,n", [((3,), 0, 1), ((2, 1, 3), -2, 1), ((2, 4), -1, 2),
                                          ((4, 2), 0, 3), ((2, 0), 1, 1)])
def test_diff_jaxpr_and_values(shape, axis, n):
  def f(m, jnp):
    x = jnp.arange(int(np.prod(shape)), dtype=jnp.float32).reshape(shape) ** 2
    return jnp.diff(x, n=n, axis=axis), str(m.make_jaxpr(lambda a: jnp.diff(a, n=n, axis=axis))(x))
  got, text = f(jax, jnp)
  x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) ** 2
  np.testing.assert_array_equal(np.asarray(got), np.diff(x, n=n, axis=axis))
  if x.shape[axis]:
    assert "strides=None" in text and "strides=(" not in text
  ref = f(*(lambda j: (j, j.numpy))(oracle()))
  assert text == ref[1]


# --- 9. jaxpr-truncated-normal: the clip bounds are stop_gradient(lower/upper), as in JAX --------

@pytest.mark.parametrize("x64_on", [False, True])
def test_truncated_normal_jaxpr(x64_on):
  def f(m):
    k = m.random.fold_in(m.random.key(14), 7)
    return (str(m.make_jaxpr(lambda: m.random.truncated_normal(k, -1.0, 2.0, (3,)))()),
            str(m.make_jaxpr(lambda lo: m.random.truncated_normal(m.random.PRNGKey(31), lo, 2.0,
                                                                  (2, 4)))(-1.0)),
            m.random.truncated_normal(k, -1.0, 2.0, (3,)))
  with x64(x64_on):
    texts = f(jax)
  assert "stop_gradient" in texts[0] and "stop_gradient" in texts[1]
  assert np.all((np.asarray(texts[2]) > -1.0) & (np.asarray(texts[2]) < 2.0))
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    ref = f(jax_)
  finally:
    jax_.config.update("jax_enable_x64", old)
  assert texts[:2] == ref[:2]
  np.testing.assert_allclose(np.asarray(texts[2]), np.asarray(ref[2]), rtol=1e-5)


# --- 28. sum-prod-bool: bools are counted as int32 first (jaxpr under x64; promote_integers) ----

_BOOL_RED_KW = [{}, {"axis": 1}, {"dtype": "float32"}, {"dtype": "int8"},
                {"promote_integers": False}]


@pytest.mark.parametrize("x64_on", [False, True])
@pytest.mark.parametrize("fn", ["sum", "prod"])
@pytest.mark.parametrize("kw", _BOOL_RED_KW, ids=str)
def test_bool_sum_prod(kw, fn, x64_on):
  def f(m, jnp):
    x = jnp.array([[True, False], [True, True]])
    r = getattr(jnp, fn)(x, **kw)
    return r, str(m.make_jaxpr(lambda a: getattr(jnp, fn)(a, **kw))(x))
  with x64(x64_on):
    got, text = f(jax, jnp)
  want_dtype = kw.get("dtype") or ("int64" if x64_on and kw.get("promote_integers", True)
                                   else "int32")
  assert got.dtype == np.dtype(want_dtype)
  np.testing.assert_array_equal(np.asarray(got), getattr(np, fn)(
      np.array([[True, False], [True, True]]), axis=kw.get("axis")))
  assert "a:bool[2,2]. let\n    b:i32[2,2] = convert_element_type" in text
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    ref = f(jax_, jax_.numpy)
  finally:
    jax_.config.update("jax_enable_x64", old)
  assert (str(got.dtype), text) == (str(ref[0].dtype), ref[1])


# --- 4. jaxpr-randint: randint's bounds are clipped with weak literals (JAX's _const) -----------

@pytest.mark.parametrize("x64_on", [False, True])
@pytest.mark.parametrize("lo,hi", [(-5, 100), (0, 2**31 - 1), (-(2**31), 7)])
def test_randint_jaxpr(lo, hi, x64_on):
  def f(m):
    g = lambda: m.random.randint(m.random.PRNGKey(41), (2, 1, 3), lo, hi)
    return g(), str(m.make_jaxpr(g)())
  with x64(x64_on):
    got, text = f(jax)
  assert np.all((np.asarray(got) >= max(lo, -(2**31))) & (np.asarray(got) < hi))
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    ref = f(jax_)
  finally:
    jax_.config.update("jax_enable_x64", old)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(ref[0]))
  assert text == ref[1]


# --- 32. int-array-index-empty-axis: x[int array] on a size-0 axis is gather's TypeError ------

_EMPTY_AXIS_INDEX = [  # (x shape, index builder, JAX's outcome: error class or result shape)
  ((0,), lambda jnp: jnp.array([1]), "TypeError"),
  ((0,), lambda jnp: jnp.array(0), "IndexError"),  # a scalar index array is a slice in JAX
  ((0,), lambda jnp: np.array([1]), "TypeError"),
  ((0,), lambda jnp: np.int64(0), "IndexError"),
  ((0, 3), lambda jnp: jnp.array([0, 1]), "TypeError"),
  ((3, 0), lambda jnp: (slice(None), jnp.array([0])), "TypeError"),
  ((2, 0), lambda jnp: (jnp.array([0]), jnp.array([0])), "TypeError"),
  ((0,), lambda jnp: jnp.array([], jnp.int32), (0,)),
  ((0,), lambda jnp: 0, "IndexError"),
]


def _index_outcome(m, jnp, shape, build, jit):
  x = jnp.zeros(shape, jnp.float32)
  try:
    f = (lambda a: a[build(jnp)])
    return (m.jit(f) if jit else f)(x).shape
  except (TypeError, IndexError) as e:
    return type(e).__name__


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("case", range(len(_EMPTY_AXIS_INDEX)))
def test_int_array_index_on_empty_axis(case, jit):
  shape, build, want = _EMPTY_AXIS_INDEX[case]
  assert _index_outcome(jax, jnp, shape, build, jit) == want
  jax_ = oracle()
  assert _index_outcome(jax_, jax_.numpy, shape, build, jit) == want


# --- 34. power-int-uint64-weak: int64 ** uint64 promotes both to a weak float64 (x64) ---------

_POWER_CASES = [  # (x1, x2, expected dtype, weak, values) under x64
  (np.array([2, 3]), np.array([3, 2], np.uint64), "float64", True, [8.0, 9.0]),
  (np.array([2, -3], np.int8), np.array([3, 2], np.uint64), "float64", True, [8.0, 9.0]),
  (np.array([2, 3], np.uint64), np.array([3, 2], np.int8), "float64", True, [8.0, 9.0]),
  (np.array([2.0, 3.0], np.float32), np.array([3, 2], np.uint64), "float32", False, [8.0, 9.0]),
  (np.array([2.0, 3.0], np.float16), np.array([3, 2], np.int64), "float16", False, [8.0, 9.0]),
  (np.array(-8, np.int16), np.array(1, np.uint64), "int16", False, -8),  # eager: integer_pow
]


@pytest.mark.parametrize("case", range(len(_POWER_CASES)))
def test_power_int_uint64_weak(case):
  a, b, dtype, weak, want = _POWER_CASES[case]

  def f(m, jnp):
    eager, jitted = jnp.power(a, b), m.jit(jnp.power)(a, b)
    return eager, jitted, str(m.make_jaxpr(jnp.power)(a, b))
  with x64(True):
    got = f(jax, jnp)
  assert (str(got[0].dtype), got[0].weak_type) == (dtype, weak)
  np.testing.assert_array_equal(np.asarray(got[0]), want)
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", True)
  try:
    ref = f(jax_, jax_.numpy)
  finally:
    jax_.config.update("jax_enable_x64", old)
  for g, r in zip(got[:2], ref[:2]):
    assert (str(g.dtype), g.weak_type) == (str(r.dtype), r.weak_type)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
  assert got[2] == ref[2]


# --- sum-dtype-bool: sum/prod(dtype=bool) reduce with or/and; cumsum/cumprod count nonzeros ---

_BOOL_DTYPE_RED = [  # (function, kwargs, NumPy's answer for x = [[1, 0, 2], [0, 0, -3]])
  ("sum", {}, True), ("prod", {}, False), ("sum", {"axis": 0}, [True, False, True]),
  ("prod", {"axis": 1, "keepdims": True}, [[False], [False]]), ("sum", {"initial": True}, True),
  ("prod", {"where": np.array([True, False, True])}, False),
  ("sum", {"initial": False, "where": np.array([False, False, True])}, True),
  ("cumsum", {}, [True] * 6), ("cumprod", {"axis": 1}, [[True, False, False]] + [[False] * 3]),
]


@pytest.mark.parametrize("x64_on", [False, True])
@pytest.mark.parametrize("in_dtype", ["bool", "int8", "float32"])
@pytest.mark.parametrize("case", range(len(_BOOL_DTYPE_RED)))
def test_reductions_with_bool_dtype(case, in_dtype, x64_on):
  name, kw, want = _BOOL_DTYPE_RED[case]
  x = np.array([[1, 0, 2], [0, 0, -3]]).astype(in_dtype)

  def f(m, jnp):
    fn = lambda a: getattr(jnp, name)(a, dtype=bool, **kw)
    return fn(x), str(m.make_jaxpr(fn)(x))
  with x64(x64_on):
    got, text = f(jax, jnp)
  assert got.dtype == np.bool_ and not got.weak_type
  np.testing.assert_array_equal(np.asarray(got), want)
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    ref = f(jax_, jax_.numpy)
  finally:
    jax_.config.update("jax_enable_x64", old)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(ref[0]))
  assert text == ref[1]


# --- gather-fill-bfloat16: mode='fill' fills bfloat16 (NumPy kind "V", like keys) -------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int8", "uint8"])
@pytest.mark.parametrize("fill", [-1, -1.5, 300, None])
def test_gather_fill_bfloat16(fill, dtype):
  def f(m, jnp):
    x = jnp.array([1, 2], dtype)
    g = lambda a: a.at[jnp.array([3, 0, -1])].get(mode="fill", fill_value=fill)
    return g(x), m.jit(g)(x), m.vmap(g)(jnp.stack([x, x]))
  with np.errstate(over="ignore", invalid="ignore"):
    got = f(jax, jnp)
  if dtype == "bfloat16":
    want = [np.nan if fill is None else fill, 1.0, 2.0]  # -1 is the last element, not out
    for g in got[:2]:
      np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(want, np.float32))
  jax_ = oracle()
  with np.errstate(over="ignore", invalid="ignore"):
    ref = f(jax_, jax_.numpy)
  for g, r in zip(got, ref):
    assert g.dtype == r.dtype
    np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(r, np.float32))


# --- 37. jaxpr-randint-0d: a 0-d span's full_like(span, 1) is the literal (no broadcast_in_dim) --

_RANDINT_KEYS = {
  "PRNGKey": lambda m: m.random.PRNGKey(46),
  "fold_in": lambda m: m.random.fold_in(m.random.key(46), 7),
  "split": lambda m: m.random.split(m.random.key(44))[1],
}


@pytest.mark.parametrize("x64_on", [False, True])
@pytest.mark.parametrize("shape", [(), (2,)])
@pytest.mark.parametrize("key", list(_RANDINT_KEYS))
def test_randint_0d_jaxpr(key, shape, x64_on):
  def f(m):
    g = lambda: m.random.randint(_RANDINT_KEYS[key](m), shape, -5, 100)
    return g(), m.random.randint(_RANDINT_KEYS[key](m), shape, 5, -100), str(m.make_jaxpr(g)())
  with x64(x64_on):
    got = f(jax)
  assert np.all((np.asarray(got[0]) >= -5) & (np.asarray(got[0]) < 100))
  np.testing.assert_array_equal(np.asarray(got[1]), np.full(shape, 5))  # empty range: minval
  assert ("broadcast_in_dim 1:u" in got[2]) == bool(shape)
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    ref = f(jax_)
  finally:
    jax_.config.update("jax_enable_x64", old)
  np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(ref[0]))
  assert got[2] == ref[2]


# --- 33. jaxpr-static-index-x64: one out-of-range static int index is a default-int start -----

_STATIC_INDEX = [  # (shape, index builder); JAX clamps the out-of-range ones
  ((4,), lambda a: a[4]), ((4,), lambda a: a[-7]), ((2, 3), lambda a: a[-3]),
  ((2, 3), lambda a: a[:, 7]), ((2, 3), lambda a: a[1, 5:]), ((4,), lambda a: a[1]),
]


@pytest.mark.parametrize("x64_on", [False, True])
@pytest.mark.parametrize("case", range(len(_STATIC_INDEX)))
def test_static_index_jaxpr_x64(case, x64_on):
  shape, idx = _STATIC_INDEX[case]
  x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)

  def f(m):
    return idx(m.numpy.asarray(x)), m.jit(idx)(x), str(m.make_jaxpr(idx)(x))
  with x64(x64_on):
    got = f(jax)
  want = {0: 3.0, 1: 0.0, 2: [0.0, 1.0, 2.0], 3: [2.0, 5.0], 4: np.zeros(0), 5: 1.0}[case]
  for g in got[:2]:
    np.testing.assert_array_equal(np.asarray(g), want)
  if case == 0:
    assert ("lt 4:i64[] 0:i64[]" in got[2]) == x64_on
  jax_ = oracle()
  old = jax_.config.jax_enable_x64
  jax_.config.update("jax_enable_x64", x64_on)
  try:
    ref = f(jax_)
  finally:
    jax_.config.update("jax_enable_x64", old)
  assert got[2] == ref[2]


# --- documented: xla-cpu-flushes-subnormals (tests/fuzz/known_differences.py) --------------------

# The NumPy backend's documented answer (on the xla backend jaxlite gets XLA's, as JAX does).
def test_subnormals_documented_difference(on_numpy):
  """XLA:CPU flushes subnormal float32/bfloat16 to zero; jaxlite keeps NumPy's IEEE subnormals.
  If JAX stops flushing (or jaxlite starts), the known_differences entry must go."""
  x = np.array([1e-40, 6e-8], np.float32)
  np.testing.assert_allclose(np.asarray(jnp.sqrt(jnp.asarray(x))), np.sqrt(x), rtol=1e-6)
  jax_ = oracle()
  if jax_.default_backend() != "cpu":
    pytest.skip("the difference is XLA:CPU's")
  got = np.asarray(jax_.numpy.sqrt(jax_.numpy.asarray(x)))
  assert got[0] == 0.0 and got[1] == pytest.approx(np.sqrt(6e-8), rel=1e-6)
  assert float(jax_.numpy.asarray(x)[0] * 1) == 0.0


# --- documented: jax-axis-tuple-index (tests/fuzz/known_differences.py) -------------------------

@pytest.mark.parametrize("shape", [(), (2, 3)])
@pytest.mark.parametrize("fn,axis", [("argmax", 2), ("argmin", -3), ("nanargmax", 5),
                                     ("mean", 2), ("var", (0, 5)), ("std", -3)])
def test_axis_tuple_index_documented_difference(fn, axis, shape):
  """JAX leaks an internal IndexError for an out-of-range axis of these reductions; jaxlite raises
  the ValueError naming the axis. If JAX changes, the known_differences entry must go."""
  x = np.ones(shape, np.float32)
  with pytest.raises(ValueError, match="axis"):
    getattr(jnp, fn)(jnp.asarray(x), axis=axis)
  jax_ = oracle()
  with pytest.raises(IndexError, match="tuple index out of range"):
    getattr(jax_.numpy, fn)(jax_.numpy.asarray(x), axis=axis)
  with pytest.raises(ValueError, match="out of bounds"):  # where JAX checks the axis first
    jax_.numpy.sum(jax_.numpy.asarray(x), axis=axis)


# Row 38: rounding functions of integers returned the bare (Python or NumPy) scalar.
@pytest.mark.parametrize("fn", ["ceil", "floor", "round", "trunc"])
@pytest.mark.parametrize("value,dtype,weak", [(300, np.int32, True), (True, np.bool_, False),
                                              (np.int16(3), np.int16, False)])
def test_row38_rounding_integers_returns_arrays(fn, value, dtype, weak):
  if fn == "round" and dtype is np.bool_:
    with pytest.raises(ValueError, match="not inexact"):  # as in JAX
      jnp.round(value)
    return
  out = getattr(jnp, fn)(value)
  assert isinstance(out, jax.Array) and out.dtype == dtype and out.weak_type == weak
  assert out.shape == () and out.item() == value



# --- documented: jax-scatter-extremal-clip-grad (tests/fuzz/known_differences.py) ---------------

@pytest.mark.parametrize("method,update", [("max", 2.5), ("min", -7.0)])
def test_scatter_extremal_clip_grad_documented_difference(method, update):
  """With mode='clip' and an out-of-range index, JAX's value applies the update at the clipped
  position but its gradient (and JVP) act as if nothing was updated; jaxlite's gradient agrees
  with the value (0 where the update won, as JAX's own in-bounds gradient). If JAX changes,
  the known_differences entry must go."""
  x = np.array([-3.0], np.float32)

  def f(lib, v):
    return getattr(v.at[lib.numpy.array([3, 3])], method)(update, mode="clip")
  assert float(f(jax, jnp.asarray(x))[0]) == update
  np.testing.assert_array_equal(np.asarray(jax.grad(lambda v: f(jax, v).sum())(jnp.asarray(x))),
                                [0.0])
  jax_ = oracle()
  assert float(f(jax_, jax_.numpy.asarray(x))[0]) == update
  np.testing.assert_array_equal(
      np.asarray(jax_.grad(lambda v: f(jax_, v).sum())(jax_.numpy.asarray(x))), [1.0])
  in_bounds = jax_.grad(lambda v: getattr(v.at[0], method)(update).sum())(jax_.numpy.asarray(x))
  np.testing.assert_array_equal(np.asarray(in_bounds), [0.0])


# --- documented: xla-nan-sign (tests/fuzz/known_differences.py) -----------------------------------

# The NumPy backend's documented answer (on the xla backend jaxlite gets XLA's, as JAX does).
def test_nan_sign_documented_difference(on_numpy):
  """XLA:CPU's float64 log of a negative number is +NaN, NumPy's (and XLA's float32 log) -NaN;
  lax.top_k ranks by the bits, so the NaN's place differs. If JAX's sign changes, the
  known_differences entry must go."""
  with x64():
    got = np.asarray(jnp.log(jnp.array([-0.4], jnp.float64)))
    assert np.isnan(got[0]) and np.signbit(got[0])  # NumPy's NaN
  j = oracle()
  old = j.config.jax_enable_x64
  j.config.update("jax_enable_x64", True)
  try:
    theirs = np.asarray(j.numpy.log(j.numpy.array([-0.4], j.numpy.float64)))
    assert theirs.dtype == np.float64
    assert np.isnan(theirs[0]) and not np.signbit(theirs[0])
    assert np.signbit(np.asarray(j.numpy.log(j.numpy.array([-0.4], j.numpy.float32)))[0])
  finally:
    j.config.update("jax_enable_x64", old)


def test_mul_by_bool_documented_difference():
  """XLA's algebraic simplifier turns `x * convert(b)` into `select(b, x, 0)`: JAX's eager NaN
  times False is 0. jaxlite computes the select in every mode (eager jnp.multiply and the
  compiler pass `select_for_bool_products`), but JAX's jit of this bare product is NaN: XLA folds
  `x != x` of an integer to a constant False before the rewrite, and NaN * 0 is NaN. If JAX's
  jit answer becomes 0, the known_differences entry xla-mul-by-bool-select must go
  (campaign 8, seeds 1124-1139)."""
  f = lambda m, x: float("nan") * m.numpy.not_equal(x, x)
  x = np.uint8(254)
  assert float(np.asarray(f(jax, jnp.asarray(x)))) == 0.0
  assert float(np.asarray(jax.jit(lambda v: f(jax, v))(x))) == 0.0
  j = oracle()
  assert float(np.asarray(f(j, j.numpy.asarray(x)))) == 0.0  # XLA's select
  assert np.isnan(np.asarray(j.jit(lambda v: f(j, v))(x)))
