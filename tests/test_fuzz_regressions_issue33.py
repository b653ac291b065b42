"""Regressions for the differential fuzzer's findings of issue 33, each checked against JAX:
clip's bound promotion, float-only ops refusing integers, gradient weak types, empty norms,
None where an array belongs, and the staged (make_jaxpr) forms of jnp/nn wrappers."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import lax

from conftest import oracle


def _both(fn):
  """fn(jax-like module, jnp, lax) under jaxlite and under JAX."""
  jax = oracle()
  return (fn(jaxlite, jnp, lax), fn(jax, jax.numpy, jax.lax))


def _same_array(ours, theirs):
  assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
  assert ours.weak_type == theirs.weak_type, (ours.weak_type, theirs.weak_type)
  assert ours.shape == theirs.shape
  np.testing.assert_allclose(np.asarray(ours, np.float64), np.asarray(theirs, np.float64),
                             rtol=1e-6)


def _outcome(fn):
  try:
    return ("ok", fn())
  except Exception as e:  # noqa: BLE001 - the class and text are what we compare
    return (type(e).__name__, str(e))


CLIP_CASES = {
    "int-float-bounds": lambda m, np_, l: np_.clip(np_.arange(4), 1.5, 2.5),
    "int-array-float-bound": lambda m, np_, l: np_.clip(np_.arange(4), np_.array(1.5)),
    "bool-float-bounds": lambda m, np_, l: np_.clip(np_.array([True, False]), 0.5, 2.5),
    "bf16-f32-bound": lambda m, np_, l: np_.clip(np_.ones(2, np_.bfloat16), np_.float32(0.5)),
    "int-int-bounds": lambda m, np_, l: np_.clip(np_.arange(4), 1, 2),
    "f32-max-only": lambda m, np_, l: np_.clip(np_.arange(4.), max=2),
    "jit-int-float": lambda m, np_, l: m.jit(lambda x: np_.clip(x, 0.5, 2.5))(np_.arange(4)),
}


@pytest.mark.parametrize("case", sorted(CLIP_CASES))
def test_clip_promotes_bounds_like_maximum_minimum(case):
  ours, theirs = _both(CLIP_CASES[case])
  _same_array(ours, theirs)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
@pytest.mark.parametrize("fn", ["sigmoid", "silu", "swish", "glu", "logistic"])
def test_float_only_ops_refuse_integers_and_bools(fn, dtype):
  def run(m, np_, l):
    f = getattr(l, fn) if fn == "logistic" else getattr(m.nn, fn)
    return _outcome(lambda: f(np_.ones((2, 2), dtype)))
  ours, theirs = _both(run)
  assert ours[0] == theirs[0] == "TypeError"
  assert ours[1] == theirs[1]


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "log1mexp"])
def test_bool_inputs_raise_the_op_jax_applies_first(fn):
  def run(m, np_, l):
    return _outcome(lambda: getattr(m.nn, fn)(np_.ones((2, 2), bool)))
  ours, theirs = _both(run)
  assert ours == theirs


@pytest.mark.parametrize("fn", ["exp", "log", "sin", "tanh", "sqrt", "rsqrt", "erf", "lgamma",
                                "digamma", "floor", "is_finite", "cbrt", "reciprocal"])
@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_every_float_only_lax_primitive_refuses_integers(fn, dtype):
  def run(m, np_, l):
    return _outcome(lambda: getattr(l, fn)(np_.ones(2, dtype)))
  ours, theirs = _both(run)
  assert ours == theirs


GRADS = {
    "gather": lambda m, np_, l: np_.reshape(m, (1,))[np_.array([0])].sum(),
    "broadcast-gather": lambda m, np_, l: np_.broadcast_to(m, (3,))[np_.array([0, 1])].sum(),
    "dynamic-slice": lambda m, np_, l: l.dynamic_slice(np_.reshape(m, (1,)), (0,), (1,)).sum(),
    "take": lambda m, np_, l: np_.take(np_.reshape(m, (1,)), np_.array([0])).sum(),
    "mul": lambda m, np_, l: m * 2.,
    "static-index": lambda m, np_, l: np_.reshape(m, (1,))[0],
}


@pytest.mark.parametrize("case", sorted(GRADS))
def test_gradient_weak_type_of_a_weak_input(case):
  ours, theirs = _both(lambda m, np_, l: m.grad(lambda y: GRADS[case](y, np_, l))(0.0))
  _same_array(ours, theirs)


NORMS = [(shape, ord_) for shape in [(0,), (3,)] for ord_ in [None, 1, 2, 3, 0, np.inf]] + \
    [(shape, ord_) for shape in [(0, 3), (2, 3)] for ord_ in [None, "fro", 1, np.inf]] + \
    [((2, 3), ord_) for ord_ in [-1, -np.inf, 2, -2, "nuc"]] + [((3,), -np.inf), ((3,), -1.5)]


@pytest.mark.parametrize("shape,ord_", NORMS, ids=str)
def test_norm_values_and_staging(shape, ord_):
  def run(m, np_, l):
    x = np_.arange(1., 1. + np.prod(shape)).reshape(shape)
    f = lambda v: np_.linalg.norm(v, ord=ord_)  # noqa: E731
    return f(x), str(m.make_jaxpr(f)(x))
  (ours, ours_jaxpr), (theirs, theirs_jaxpr) = _both(run)
  _same_array(ours, theirs)
  assert ours_jaxpr == theirs_jaxpr


NONE_CASES = {
    "clip": lambda m, np_, l: np_.clip(None, 0, 1),
    "at-set": lambda m, np_, l: np_.arange(3.).at[0].set(None),
    "at-add": lambda m, np_, l: np_.arange(3.).at[0].add(None),
    "asarray-dtype": lambda m, np_, l: np_.asarray(None, dtype=np_.float32),
    "asarray": lambda m, np_, l: np_.asarray(None),
    "array": lambda m, np_, l: np_.array(None),
    "array-nested": lambda m, np_, l: np_.array([1.0, None]),
    "convert-element-type": lambda m, np_, l: l.convert_element_type(None, np_.float32),
    "einsum": lambda m, np_, l: np_.einsum("i,->i", np_.arange(3.), None),
    "where-y": lambda m, np_, l: np_.where(np_.arange(3.) > 0, 1.0, None),
    "where-x": lambda m, np_, l: np_.where(np_.arange(3.) > 0, None, 1.0),
    "where-1": lambda m, np_, l: np_.where(None),
    "add": lambda m, np_, l: np_.add(np_.arange(3.), None),
    "multiply": lambda m, np_, l: np_.multiply(None, 1.0),
    "lax-add": lambda m, np_, l: l.add(np_.arange(3.), None),
    "lax-sin": lambda m, np_, l: l.sin(None),
    "lax-max": lambda m, np_, l: l.max(np_.arange(3.), None),
    "sum": lambda m, np_, l: np_.sum(None),
    "relu": lambda m, np_, l: m.nn.relu(None),
    "softplus": lambda m, np_, l: m.nn.softplus(None),
    "toeplitz": lambda m, np_, l: m.scipy.linalg.toeplitz(None),
    "einsum-function": lambda m, np_, l: np_.einsum("i,->i", np_.arange(3.), print),
}


# Where JAX's text comes from its own jit machinery (relu's custom_jvp, softplus' jit), the
# class is compared; elsewhere the message too.
CLASS_ONLY = {"relu", "softplus", "toeplitz", "sum"}


@pytest.mark.parametrize("case", sorted(NONE_CASES))
def test_none_where_an_array_belongs(case):
  ours, theirs = _both(lambda m, np_, l: _outcome(lambda: NONE_CASES[case](m, np_, l)))
  assert ours[0] == theirs[0]
  if case not in CLASS_ONLY:
    assert ours[1] == theirs[1]


STAGED = {
    "logsumexp": (lambda m, np_: m.nn.logsumexp, [(2, 3)]),
    "logsumexp-axis": (lambda m, np_: lambda x: m.scipy.special.logsumexp(x, axis=1), [(2, 3)]),
    "logsumexp-keepdims": (lambda m, np_: lambda x: m.scipy.special.logsumexp(
        x, axis=0, keepdims=True), [(2, 3)]),
    "logsumexp-b": (lambda m, np_: lambda x: m.scipy.special.logsumexp(x, b=x), [(2, 3)]),
    "logsumexp-sign": (lambda m, np_: lambda x: m.scipy.special.logsumexp(
        x, axis=1, return_sign=True), [(2, 3)]),
    "gelu-exact": (lambda m, np_: lambda x: m.nn.gelu(x, approximate=False), [(2, 3)]),
    "cumulative-sum": (lambda m, np_: lambda x: np_.cumulative_sum(x, axis=1), [(2, 3)]),
    "cumulative-sum-initial": (lambda m, np_: lambda x: np_.cumulative_sum(
        x, axis=1, include_initial=True), [(2, 3)]),
    "cumulative-prod": (lambda m, np_: lambda x: np_.cumulative_prod(x, axis=1), [(2, 3)]),
    "argsort-unstable": (lambda m, np_: lambda x: np_.argsort(x, stable=False), [(2, 3)]),
    "argsort-unstable-descending": (lambda m, np_: lambda x: np_.argsort(
        x, stable=False, descending=True), [(2, 3)]),
    "argsort-descending": (lambda m, np_: lambda x: np_.argsort(x, descending=True), [(2, 3)]),
    "sort-unstable": (lambda m, np_: lambda x: np_.sort(x, stable=False), [(2, 3)]),
    "matmul-batch-1-1": (lambda m, np_: np_.matmul, [(1, 2, 3), (1, 3, 4)]),
    "matmul-batch-1-none": (lambda m, np_: np_.matmul, [(1, 2, 3), (3, 4)]),
    "matmul-batch-11-1": (lambda m, np_: np_.matmul, [(1, 1, 2, 3), (1, 3, 4)]),
    "matmul-batch-2-1": (lambda m, np_: np_.matmul, [(2, 2, 3), (1, 3, 4)]),
    "matmul-batch-21-12": (lambda m, np_: np_.matmul, [(2, 1, 2, 3), (1, 2, 3, 4)]),
    # the widened fuzzer's (campaign 6): default tolerances are constants of the body
    "isclose-defaults": (lambda m, np_: lambda x: np_.isclose(x, 1.0), [(3,)]),
    "isclose-rtol": (lambda m, np_: lambda x: np_.isclose(x, 1.0, rtol=0.1), [(3,)]),
    "allclose": (lambda m, np_: lambda x: np_.allclose(x, x), [(3,)]),
    "isclose-int": (lambda m, np_: lambda x: np_.isclose(x.astype(np_.int32), 1), [(3,)]),
    "array-equal-weak": (lambda m, np_: lambda x: np_.array_equal(x.sum(), float("nan")), [(3,)]),
    "full-like-scalar": (lambda m, np_: lambda x: m.lax.full_like(x, 0), [()]),
    "array-copy": (lambda m, np_: lambda x: np_.array(x * 2, dtype=x.dtype), [(3,)]),
}


@pytest.mark.parametrize("case", sorted(STAGED))
def test_staged_form_matches_jax(case):
  make, shapes = STAGED[case]

  def run(m, np_, l):
    args = [np_.arange(1., 1. + np.prod(s)).reshape(s) for s in shapes]
    f = make(m, np_)
    return str(m.make_jaxpr(f)(*args)), f(*args)
  (ours_text, ours), (theirs_text, theirs) = _both(run)
  assert ours_text == theirs_text
  for o, t in zip(ours if isinstance(ours, tuple) else [ours],
                  theirs if isinstance(theirs, tuple) else [theirs]):
    _same_array(o, t)


def test_cumulative_rank_error_matches_jax():
  ours, theirs = _both(lambda m, np_, l: _outcome(lambda: np_.cumulative_sum(np_.ones((2, 2)))))
  assert ours == theirs


@pytest.mark.parametrize("kw", [{"kind": "stable"}, {"order": "x"}])
def test_sort_kind_and_order_raise_as_jax(kw):
  ours, theirs = _both(lambda m, np_, l: _outcome(lambda: np_.argsort(np_.ones(3), **kw)))
  assert ours == theirs


def test_isclose_of_integers_compares_as_floats():
  ours, theirs = _both(lambda m, np_, l: np_.isclose(np_.int32(2**31 - 1), np_.int32(2**31 - 2)))
  _same_array(ours, theirs)
  assert bool(ours)
