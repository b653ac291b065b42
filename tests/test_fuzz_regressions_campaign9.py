"""Regressions for the widened fuzzer's open rows (issue 33, campaign 6's `open_defects.py`),
each checked against JAX 0.10.2: its outcome is recorded here, so the test runs without JAX, and
compared with the live JAX too where it is installed (the record cannot drift from it)."""
import json
import pathlib
import warnings

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp


def _outcome(expr, m, np_):
  env = dict(np=np, jnp=np_, jax=m, lax=m.lax, nn=m.nn)
  try:
    r = eval(expr, env)  # noqa: S307 - the expressions are this file's own
    return ("ok", f"{r.dtype}{list(r.shape)}" if hasattr(r, "dtype") else type(r).__name__)
  except Exception as e:  # noqa: BLE001 - the class and text are what we compare
    return (type(e).__name__, str(e))


def _live_jax():
  try:
    import jax
  except ImportError:
    return None
  return jax


def _needs(name, position, kind="list"):
  """JAX's ensure_arraylike message."""
  return (f"{name} requires ndarray or scalar arguments, got <class '{kind}'> at position "
          f"{position}.")


# (expression, JAX's exception class or "ok", JAX's message or result type; None where only
# the class is compared). Python lists where JAX's ensure_arraylike wants an array (rows
# jnp-accepts-lists, einsum-non-array-operand), strings in array data (asarray-str-dtype,
# str-in-array-data: JAX hands them to NumPy), containers beside an operator
# (tuple-times-tracer: JAX's `*` and `+` refuse them before Python repeats the sequence).
OUTCOMES = [
    ('jnp.reshape([1.0, 2.0], (2,))', 'TypeError', _needs('reshape', 0)),
    ('jnp.reshape([1.0, None], (2,))', 'TypeError', _needs('reshape', 0)),
    ('jnp.ravel([1.0, 2.0])', 'TypeError', _needs('ravel', 0)),
    ('jnp.transpose([1.0, None])', 'TypeError', _needs('transpose', 0)),
    ('jnp.squeeze([[1.0]], 0)', 'TypeError', _needs('squeeze', 0)),
    ('jnp.expand_dims([1.0, 2.0], 0)', 'TypeError', _needs('expand_dims', 0)),
    ('jnp.broadcast_to([1.0, None], (2,))', 'TypeError', _needs('broadcast_to', 0)),
    ('jnp.broadcast_arrays([1.0, 2.0], 1.0)', 'TypeError', _needs('broadcast_arrays', 0)),
    ('jnp.permute_dims([[1.0]], (1, 0))', 'TypeError', _needs('permute_dims', 0)),
    ('jnp.matrix_transpose([[1.0]])', 'TypeError', _needs('matrix_transpose', 0)),
    ('jnp.stack([jnp.ones(2), [1.0, None]])', 'TypeError', _needs('stack', 1)),
    ('jnp.concatenate([jnp.ones(2), [1.0, 2.0]])', 'TypeError', _needs('concatenate', 1)),
    ('jnp.concat([jnp.ones(2), [1.0, 2.0]])', 'TypeError', _needs('concat', 1)),
    ('jnp.hstack([jnp.ones(2), [1.0, 2.0]])', 'TypeError', _needs('hstack', 1)),
    ('jnp.vstack([jnp.ones(2), [1.0, 2.0]])', 'TypeError', _needs('vstack', 1)),
    ('jnp.dstack([jnp.ones(2), [1.0, 2.0]])', 'TypeError', _needs('dstack', 1)),
    ('jnp.column_stack([jnp.ones(2), [1.0, 2.0]])', 'TypeError', _needs('column_stack', 1)),
    ('jnp.atleast_1d([1.0, 2.0])', 'TypeError', _needs('atleast_1d', 0)),
    ('jnp.atleast_3d([1.0, 2.0])', 'TypeError', _needs('atleast_3d', 0)),
    ('jnp.append([1.0, 2.0], 1.0)', 'TypeError', _needs('ravel', 0)),
    ('jnp.append(jnp.ones(2), [1.0], axis=0)', 'TypeError', _needs('concatenate', 1)),
    ('jnp.split([1.0, 2.0], 2)', 'TypeError', _needs('split', 0)),
    ('jnp.hsplit([1.0, 2.0], 2)', 'TypeError', _needs('hsplit', 0)),
    ('jnp.unstack([1.0, 2.0])', 'TypeError', _needs('unstack', 0)),
    ('jnp.tile([1.0, None], 2)', 'TypeError', _needs('tile', 0)),
    ('jnp.repeat([1.0, 2.0], 2)', 'TypeError', _needs('repeat', 0)),
    ('jnp.flip([1.0, 2.0])', 'TypeError', _needs('flip', 0)),
    ('jnp.fliplr([[1.0, 2.0]])', 'TypeError', _needs('fliplr', 0)),
    ('jnp.roll([1.0, 2.0], 1)', 'TypeError', _needs('roll', 0)),
    ('jnp.rot90([[1.0, 2.0]])', 'TypeError', _needs('rot90', 0)),
    ('jnp.moveaxis([[1.0, 2.0]], 0, 1)', 'TypeError', _needs('moveaxis', 0)),
    ('jnp.swapaxes([[1.0, 2.0]], 0, 1)', 'TypeError', _needs('swapaxes', 0)),
    ('jnp.pad([1.0, 2.0], 1)', 'TypeError', _needs('pad', 0)),
    ('jnp.delete([1.0, 2.0], 0)', 'TypeError', _needs('delete', 0)),
    ('jnp.insert([1.0, 2.0], 0, 1.0)', 'TypeError', _needs('insert', 0)),
    ('jnp.resize([1.0, 2.0], 3)', 'TypeError', _needs('resize', 0)),
    ('jnp.zeros_like([1.0, None])', 'TypeError', _needs('zeros_like', 0)),
    ('jnp.ones_like([1.0, 2.0])', 'TypeError', _needs('ones_like', 0)),
    ('jnp.empty_like([1.0, 2.0])', 'TypeError', _needs('ones_like', 0)),
    ('jnp.full_like([1.0, 2.0], 1)', 'TypeError', _needs('full_like', 0)),
    ('jnp.take(jnp.ones(3), [0, 1])', 'TypeError', _needs('take', 1)),
    ('jnp.take_along_axis(jnp.ones(3), [0], axis=0)', 'TypeError', _needs('take_along_axis', 1)),
    ('jnp.add(jnp.ones(2), [1.0, None])', 'TypeError', _needs('add', 1)),
    ('jnp.maximum([1.0, 2.0], jnp.ones(2))', 'TypeError', _needs('maximum', 0)),
    ('jnp.logical_and(jnp.ones(2), [1.0, 2.0])', 'TypeError', _needs('logical_and', 1)),
    ('jnp.logical_not([True])', 'TypeError', _needs('logical_not', 0)),
    ('jnp.add(jnp.ones(2), (1.0, None))', 'TypeError', _needs('add', 1, 'tuple')),
    ("jnp.einsum('i,->i', jnp.ones(2), [1.0, None])", 'ValueError',
     "Einstein sum subscript '' does not contain the correct number of indices for operand 1."),
    ("jnp.einsum('i,i->i', jnp.ones(2), (1, 'b'))", 'TypeError', _needs('einsum', 1, 'tuple')),
    ("jnp.einsum('i,->i', jnp.ones(2), 'a')", 'TypeError', None),
    ("jnp.asarray('a', dtype=jnp.float32)", 'ValueError', "could not convert string to float: 'a'"),
    ("jnp.asarray('1', dtype=jnp.float32)", 'ok', 'float32[]'),
    ("jnp.asarray('a')", 'TypeError',
     "Value 'a' with dtype <U1 is not a valid JAX array type. Only arrays of numeric types "
     "are supported by JAX."),
    ("jnp.array('a', dtype=jnp.int32)", 'ValueError',
     "invalid literal for int() with base 10: 'a'"),
    ("jnp.asarray((1, 'b'), dtype=jnp.float32)", 'ValueError',
     "could not convert string to float: 'b'"),
    ("jnp.asarray((1, 'b'))", 'ValueError', "invalid literal for int() with base 10: 'b'"),
    ("jnp.array([('2', 1.5)], dtype=jnp.float32)", 'ok', 'float32[1, 2]'),
    ("jnp.ones(3).at[0].set((1, 'b'))", 'ValueError',
     "invalid literal for int() with base 10: 'b'"),
    ("jnp.ones(3, jnp.int32).at[0].add((1, 'b'))", 'ValueError',
     "invalid literal for int() with base 10: 'b'"),
    ("(1, 'b') * jnp.ones(2)", 'TypeError',
     "unsupported operand type(s) for *: 'tuple' and 'ArrayImpl'"),
    ('jnp.ones(2) * [1.0]', 'TypeError',
     "unsupported operand type(s) for *: 'ArrayImpl' and 'list'"),
    ('[1.0] + jnp.ones(2)', 'TypeError',
     "unsupported operand type(s) for +: 'list' and 'ArrayImpl'"),
    ('jnp.ones(2) == [1.0]', 'TypeError',
     "unsupported operand type(s) for ==: 'ArrayImpl' and 'list'"),
    ('jnp.ones(2) != {}', 'TypeError',
     "unsupported operand type(s) for ==: 'ArrayImpl' and 'dict'"),
    ("jax.jit(lambda x: (1, 'b') * x)(jnp.ones(2))", 'TypeError',
     "unsupported operand type(s) for *: 'tuple' and 'DynamicJaxprTracer'"),
    ('jax.jit(lambda x: x + [1.0])(jnp.ones(2))', 'TypeError',
     "unsupported operand type(s) for +: 'DynamicJaxprTracer' and 'list'"),
    ('jax.jit(lambda x: x == (1,))(jnp.ones(2))', 'TypeError',
     "unsupported operand type(s) for ==: 'DynamicJaxprTracer' and 'tuple'"),
    # nan_to_num's array fills broadcast (nan-to-num-array-fill); median keeps a size-0 kept
    # axis (median-empty-keepdims); mean/var/standardize under `where` with kept dims
    ("jnp.nan_to_num(jnp.array([1., np.nan]), nan=jnp.array([5., 6.]))", "ok", "float32[2]"),
    ("jnp.nan_to_num(jnp.array([1., np.nan]), nan=jnp.array([5., 6., 7.]))", "ValueError",
     "Incompatible shapes for broadcasting: shapes=[(2,), (3,), (2,)]"),
    ("jnp.nan_to_num(jnp.array([1., np.inf], jnp.float16), posinf=jnp.array([5, 6]))", "ok",
     "float16[2]"),
    ("jnp.median(jnp.ones((2, 0)), axis=0, keepdims=True)", "ok", "float32[1, 0]"),
    ("jnp.median(jnp.ones((0, 3)), axis=1, keepdims=True)", "ok", "float32[0, 1]"),
    ("jnp.mean(jnp.ones((2, 3)), -1, keepdims=True, where=jnp.ones((2, 3)) > 0)", "ok",
     "float32[2, 1]"),
    ("jnp.var(jnp.ones((2, 3)), 1, keepdims=True, where=jnp.ones((2, 3)) > 0)", "ok",
     "float32[2, 1]"),
    ("nn.standardize(jnp.ones((2, 3)), where=jnp.ones((2, 3)) > 0)", "ok", "float32[2, 3]"),
    # campaign 9's own finds: clamp's batching of an unbatched scalar operand (seed 309) and
    # JAX's shape message; isclose's incompatible shapes raise from its first lax op
    ("jax.vmap(lambda a: lax.clamp(a, False, a))(jnp.array([False, True]))", "ok", "bool[2]"),
    ("jax.vmap(lambda a: lax.clamp(a, 0.5, 2.0))(jnp.array([0., 3.]))", "ok", "float32[2]"),
    ("lax.clamp(jnp.array([0., 1.]), 0.5, 2.0)", "TypeError",
     "clamp requires min.shape == operand.shape or min.shape == (), got min.shape=(2,), "
     "operand.shape=()."),
    ("jnp.isclose(jnp.ones((2, 3)), jnp.ones((4, 3)))", "TypeError",
     "and got incompatible shapes for broadcasting: (2, 3), (4, 3)."),
]


@pytest.mark.parametrize("expr,cls,message", OUTCOMES, ids=[c[0] for c in OUTCOMES])
def test_non_arrays_and_strings_raise_as_jax(expr, cls, message):
  ours = _outcome(expr, jaxlite, jnp)
  assert ours[0] == cls, ours
  if message is not None:
    assert ours[1] == message
  jax = _live_jax()
  if jax is not None:  # the record is JAX's
    theirs = _outcome(expr, jax, jax.numpy)
    assert theirs[0] == cls and (message is None or theirs[1] == message), theirs


# Staged forms (make_jaxpr text) and values of the wrappers campaign 6 found staged differently
# (rows wrapper-staging, nn-integer-inputs, nan-to-num-array-fill, x64-int-wrapper-dtypes):
# softmax/log_softmax/log1mexp of integers, nanmean/nanvar/nanstd, sums with an explicit half
# dtype, vector_norm and standardize of integers, nan_to_num fills, logsumexp of 0-d arrays,
# var/std under `where`, a shared custom_jvp call_jaxpr. Recorded from JAX 0.10.2 by running
# each case there (jaxpr text and eager outputs) into tests/data/campaign9_staged.json.
_STAGED = json.loads((pathlib.Path(__file__).parent / "data" / "campaign9_staged.json")
                     .read_text())["cases"]


def _run_staged(case, m, np_):
  old = m.config.jax_enable_x64
  m.config.update("jax_enable_x64", case["x64"])
  try:
    env = dict(np=np, jnp=np_, jax=m, lax=m.lax, nn=m.nn)
    f = eval(case["fn"], env)  # noqa: S307 - the recorded expressions are this file's own
    args = eval(case["args"], env)  # noqa: S307
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")  # -inf cast to an integer max's initial: NumPy's warning
      text = str(m.make_jaxpr(f)(*args))
      out = f(*args)
    return text, out if isinstance(out, tuple) else (out,)
  finally:
    m.config.update("jax_enable_x64", old)


@pytest.mark.parametrize("case", _STAGED, ids=[f"{c['fn']}{c['args']}{'-x64' * c['x64']}"
                                               for c in _STAGED])
def test_staged_form_and_values_match_jax(case):
  text, outs = _run_staged(case, jaxlite, jnp)
  assert text == case["jaxpr"]
  assert len(outs) == len(case["outputs"])
  for o, want in zip(outs, case["outputs"]):
    assert (str(o.dtype), list(o.shape), bool(o.weak_type)) == (
        want["dtype"], want["shape"], want["weak"])
    expected = np.array([np.nan if v is None else v for v in want["values"]], np.float64)
    got = np.real(np.asarray(o)).astype(np.float64).ravel()  # (the record keeps real parts)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
  jax = _live_jax()
  if jax is not None:  # the record is JAX's
    assert _run_staged(case, jax, jax.numpy)[0] == case["jaxpr"]


def test_searchsorted_index_is_int32_under_x64():
  """JAX sizes the index dtype by the length searched (int32 here), x64 or not."""
  old = jaxlite.config.jax_enable_x64
  jaxlite.config.update("jax_enable_x64", True)
  try:
    out = jnp.searchsorted(jnp.arange(4.0), jnp.array([0.5, 2.5]))
  finally:
    jaxlite.config.update("jax_enable_x64", old)
  assert out.dtype == np.int32 and out.tolist() == [1, 3]


def test_clamp_is_weak_only_when_all_three_are():
  """JAX's standard weak-type rule: lax.clamp(f32, 0.5, 2.0) is strong (it was weak)."""
  strong = jaxlite.lax.clamp(jnp.float32(0.0), 0.5, 2.0)
  assert not strong.weak_type and float(strong) == 0.5
  assert jaxlite.lax.clamp(0.0, jnp.asarray(3.0), 2.0).weak_type  # all three weak


def test_vmap_of_a_jit_calling_a_custom_jvp_keeps_a_weak_type():
  """Seed 316: softplus (a jit around logaddexp's custom_jvp) of a weak bool under vmap is weak
  in JAX (eager, jit and vmap alike); jaxlite's batched call_jaxpr read the weak literal 0.0
  of the jit's body as a strong NumPy scalar."""
  xs = jnp.array([2, 3], jnp.int8)
  out = jaxlite.vmap(lambda y: jaxlite.nn.softplus(jnp.logical_or(y, -0.0)))(xs)
  assert out.weak_type and out.dtype == np.float32
  np.testing.assert_allclose(np.asarray(out), [1.3132616] * 2, rtol=1e-6)
  jax = _live_jax()
  if jax is not None:
    theirs = jax.vmap(lambda y: jax.nn.softplus(jax.numpy.logical_or(y, -0.0)))(
        jax.numpy.array([2, 3], jax.numpy.int8))
    assert theirs.weak_type and theirs.dtype == np.float32


def test_lgamma_precision_documented_difference():
  """known_differences `jax-lgamma-precision` (seed 321): jaxlite's float32 lgamma(1.5) is
  within an ulp of the exact -0.12078223763524522 (mpmath); JAX's is 45 ulp off."""
  exact = -0.12078223763524522
  ulp = float(np.spacing(np.float32(abs(exact))))
  ours = float(jaxlite.lax.lgamma(jnp.float32(1.5)))
  assert abs(ours - exact) <= ulp
  jax = _live_jax()
  if jax is not None:
    theirs = float(jax.lax.lgamma(jax.numpy.float32(1.5)))
    assert abs(theirs - exact) > 16 * ulp  # beyond the fuzzer's transcendental tolerance
