"""Indexing: x[idx] and x.at[idx] against NumPy, JAX's out-of-bounds rules, the slicing lax
primitives (slice, dynamic_slice, gather, scatter...), printed jaxprs against real JAX."""
import warnings

import numpy as np
import pytest
from conftest import oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import errors, lax

X_NP = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
I = lambda *v: np.array(v, np.int32)


def _assert_same(got, want):
  got = np.asarray(got)
  assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape)
  np.testing.assert_array_equal(got, want)


# --- getitem against NumPy (in-bounds indices) ------------------------------------------------

INDEX_CASES = {
    "int": np.s_[0], "neg_int": np.s_[-1], "two_ints": np.s_[1, 2], "three_ints": np.s_[1, 2, 3],
    "np_int": np.s_[np.int64(2)], "slice": np.s_[1:], "strided": np.s_[1:, ::2],
    "neg_stride": np.s_[::-1], "neg_stride2": np.s_[::-2, 3::-2], "rev_range": np.s_[2:0:-1, 1:],
    "empty": np.s_[5:10], "clipped_slice": np.s_[-10:2], "empty_neg": np.s_[0:2:-1],
    "none": np.s_[None], "none_end": np.s_[..., None], "nones": np.s_[1, None, :, None],
    "ellipsis": np.s_[...], "ellipsis_int": np.s_[..., 1], "int_ellipsis_int": np.s_[1, ..., 2],
    "col": np.s_[:, 1], "mixed_static": np.s_[1, ::-1, None, 2],
    "array": np.s_[I(0, 2)], "array_neg": np.s_[I(-1, 0)], "two_arrays": np.s_[I(0, 2), I(1, 3)],
    "array_col": np.s_[:, I(0, 2)], "noncontig": np.s_[I(0, 1), :, I(1, 2)],
    "contig": np.s_[:, I(0, 1), I(1, 2)], "adv_none_int": np.s_[I(0, 1), None, 1],
    "adv_rev": np.s_[I(-1, 0), ::-2], "bcast_arrays": np.s_[I(0, 1)[:, None], I(1, 2)],
    "slice_array": np.s_[1:, I(0, 3)], "array_slice": np.s_[I(0, 2), 1:3],
    "none_int_none_array": np.s_[None, 1, None, I(0, 1)], "array_2d": np.s_[I([0, 1], [1, 2])],
    "int_2d_strided": np.s_[1, I([0, 1], [1, 2]), ::2], "array_ellipsis_array": np.s_[I(1), ..., I(2)],
    "ellipsis_array": np.s_[..., I(0, 4)], "empty_array": np.s_[np.zeros(0, np.int32)],
    "mask": np.s_[np.array([True, False, True])], "mask_2d": np.s_[X_NP[:, :, 0] > 10],
    "mask_full": np.s_[X_NP > 30], "mask_ellipsis": np.s_[..., np.array([1, 0, 1, 1, 0], bool)],
    "mask_and_int": np.s_[np.array([True, False, True]), 2], "true": np.s_[True],
    "false": np.s_[False], "list_in_tuple": np.s_[[0, 2], [1, 1]],
    "ellipsis_splits_advanced": np.s_[:, I(0, 0), ..., 0],  # zero-width `...` still separates
}


@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_getitem_matches_numpy(name):
  idx = INDEX_CASES[name]
  want = X_NP[idx]
  x = jnp.asarray(X_NP)
  _assert_same(x[idx], want)
  _assert_same(jax.jit(lambda x: x[idx])(x), want)


def _traced_index(idx):
  """Splits array entries out of an index so that they can be passed to jit as arguments."""
  entries = idx if isinstance(idx, tuple) else (idx,)
  arrays = [e for e in entries if isinstance(e, np.ndarray) and e.dtype != bool]

  def rebuild(args):
    it = iter(args)
    return tuple(next(it) if isinstance(e, np.ndarray) and e.dtype != bool else e
                 for e in entries)
  return arrays, rebuild


@pytest.mark.parametrize("name", sorted(n for n in INDEX_CASES
                                        if "mask" not in n and n not in ("true", "false")))
def test_getitem_with_traced_arrays_matches_numpy(name):
  arrays, rebuild = _traced_index(INDEX_CASES[name])
  f = jax.jit(lambda x, *a: x[rebuild(a)])
  _assert_same(f(jnp.asarray(X_NP), *arrays), X_NP[INDEX_CASES[name]])


@pytest.mark.parametrize("i", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("form", ["x[i]", "x[i, 1]", "x[1, i]", "x[i, ::-1]", "x[i, 1:3]",
                                  "x[:, i]", "x[i, None]", "x[i, ::2]"])
def test_traced_scalar_indices(i, form):
  x = jnp.asarray(X_NP)
  want = eval(form, {"x": X_NP, "i": i})
  for i_arg in (i, np.int32(i), np.uint8(i % 3), jnp.int8(i)):
    if isinstance(i_arg, np.uint8) and i < 0:
      continue
    want_i = eval(form, {"x": X_NP, "i": int(i_arg)})
    _assert_same(jax.jit(lambda x, i: eval(form, {"x": x, "i": i}))(x, i_arg), want_i)
  _assert_same(eval(form, {"x": x, "i": jnp.int32(i)}), want)


def test_getitem_keeps_weak_type_and_dtype():
  w = jnp.array([1.0, 2.0, 3.0]) * 1.0  # strong f32 times weak: stays strong
  assert not w[0].weak_type
  weak = lax.broadcast(2.0, (3,))
  for idx in (0, np.s_[1:], np.s_[I(0, 2)], np.s_[None]):
    assert weak[idx].weak_type and weak[idx].dtype == np.float32
    assert jax.jit(lambda x, idx=idx: x[idx])(weak).weak_type
  ints = jnp.array(np.arange(6, dtype=np.int32))
  assert ints[I(1, 2)].dtype == np.int32


# --- JAX's out-of-bounds rules -----------------------------------------------------------------

V = np.arange(3, dtype=np.float32)
X34 = np.arange(12, dtype=np.float32).reshape(3, 4)

OOB_KNOWN = [  # (expression over x34 = arange(12).reshape(3, 4) and v = arange(3), JAX's answer)
    ("v[jnp.array([5, -7, -1, 2])]", [2, 0, 2, 2]),  # gather clamps after normalizing
    ("v.at[jnp.array([5, -7, -1, 2])].get(mode='clip')", [2, 0, 2, 2]),
    ("v.at[jnp.array([5, -7, -1, 2])].get(mode='fill')", [np.nan, np.nan, 2, 2]),
    ("v.at[jnp.array([5, -7])].get(mode='fill', fill_value=-1.)", [-1, -1]),
    ("x34[5]", [8, 9, 10, 11]), ("x34[-4]", [0, 1, 2, 3]), ("x34[0, 7]", 3.0),
    ("x34[5:9]", np.zeros((0, 4))), ("x34[-10:2]", X34[:2]),
    ("v.at[jnp.array([5, -7, -1, 2])].set(10.)", [0, 1, 10]),
    ("v.at[jnp.array([5, -4, -1, 2])].add(10.)", [0, 1, 22]),
    ("v.at[jnp.array([5, -4, -1, 2])].set(10., mode='clip')", [10, 1, 10]),
    ("v.at[7].set(9.)", [0, 1, 2]), ("v.at[-4].add(9.)", [0, 1, 2]),
    ("v.at[7].set(9., mode='clip')", [0, 1, 9]),
    ("x34.at[5, 1:].set(-1.)", X34), ("x34.at[:, 9].mul(0.)", X34),
    ("jnp.arange(5).at[7].get(mode='fill')", -2147483648),
    ("jnp.arange(5).at[7].get(mode='fill', fill_value=3.5)", 3),
    ("v.at[jnp.array([0, 0, 1])].set(jnp.array([1., 2., 3.]))", [2, 3, 2]),
    ("jnp.zeros(3).at[jnp.array([0, 0, 1])].apply(lambda x: x + 1)", [2, 1, 0]),
    ("jnp.ones(3).at[jnp.array([0, 0, 1])].mul(2.)", [4, 2, 1]),
    ("jnp.zeros(3).at[jnp.array([0, 0, 1])].min(jnp.array([-1., -2., 3.]))", [-2, 0, 0]),
    ("jnp.arange(3).at[jnp.array([0, 0, 1])].add(jnp.array([1, 2, 3]))", [3, 4, 2]),
]


@pytest.mark.parametrize("expr,want", OOB_KNOWN, ids=[e for e, _ in OOB_KNOWN])
def test_out_of_bounds_known_answers(expr, want):
  env = {"jnp": jnp, "v": jnp.asarray(V), "x34": jnp.asarray(X34)}
  want = np.asarray(want)
  for got in (eval(expr, env), jax.jit(lambda: eval(expr, env))()):
    np.testing.assert_array_equal(np.asarray(got, np.float64), want.astype(np.float64))


@pytest.mark.parametrize("expr,_", OOB_KNOWN, ids=[e for e, _ in OOB_KNOWN])
def test_out_of_bounds_against_jax(expr, _):
  real = oracle()
  import jax.numpy as rjnp
  want = eval(expr, {"jnp": rjnp, "v": rjnp.asarray(V), "x34": rjnp.asarray(X34)})
  got = eval(expr, {"jnp": jnp, "v": jnp.asarray(V), "x34": jnp.asarray(X34)})
  assert got.dtype == want.dtype and got.weak_type == want.weak_type
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  del real


def test_dynamic_slice_clamps_like_xla():
  v = jnp.asarray(V)
  f = jax.jit(lambda x, i: lax.dynamic_slice(x, (i,), (2,)))
  assert f(v, 2).tolist() == [1.0, 2.0]
  assert f(v, -1).tolist() == [1.0, 2.0]  # normalized to 2, then clamped to 1
  assert f(v, -9).tolist() == [0.0, 1.0]
  g = jax.jit(lambda x, i: lax.dynamic_update_slice(x, jnp.array([9., 9.]), (i,)))
  assert g(v, -1).tolist() == [0.0, 9.0, 9.0]
  assert g(v, 5).tolist() == [0.0, 9.0, 9.0]
  assert jax.jit(lambda x, i: x[i])(v, 5).tolist() == 2.0
  assert jax.jit(lambda x, i: x[i])(v, -5).tolist() == 0.0


# --- .at[] updates against NumPy ----------------------------------------------------------------

AT_INDICES = {
    "int": np.s_[0], "dup_array": np.s_[I(0, 0, 2)], "dup_pairs": np.s_[I(0, 0, 2), I(1, 1, 3)],
    "col_dups": np.s_[:, I(3, 3)], "strided": np.s_[1:, ::2], "rev_col": np.s_[::-1, 1],
    "adv_none": np.s_[I(0, 1), None, 2], "all": np.s_[:], "ellipsis": np.s_[..., 1],
    "neg": np.s_[I(-1, -1)], "mask": np.s_[X34 > 6], "array_slice": np.s_[I(2, 0, 2), 1:],
}
UFUNCS = {"set": None, "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "min": np.minimum, "max": np.maximum}


def _at_reference(op, idx, y):
  out = X34.copy()
  if op == "set":
    out[idx] = y
  else:
    UFUNCS[op].at(out, idx, y)
  return out


@pytest.mark.parametrize("op", sorted(UFUNCS))
@pytest.mark.parametrize("name", sorted(AT_INDICES))
def test_at_updates_match_numpy(op, name):
  idx = AT_INDICES[name]
  y = np.float32(-2.5) if op != "multiply" else np.float32(3.0)
  want = _at_reference(op, idx, y)
  x = jnp.asarray(X34)
  _assert_same(getattr(x.at[idx], op)(y), want)
  _assert_same(jax.jit(lambda x: getattr(x.at[idx], op)(y))(x), want)


@pytest.mark.parametrize("op", ["set", "add", "min"])
def test_at_updates_with_array_values(op):
  idx = np.s_[I(0, 2, 0), 1:3]
  y = np.arange(6, dtype=np.float32).reshape(3, 2)
  want = _at_reference(op, idx, y)
  x = jnp.asarray(X34)
  _assert_same(getattr(x.at[idx], op)(y), want)
  _assert_same(jax.jit(lambda x, y: getattr(x.at[idx], op)(y))(x, y), want)


def test_at_divide_power_apply_get():
  x = jnp.asarray(X34)
  np.testing.assert_allclose(x.at[1].divide(2.), np.where(np.arange(3)[:, None] == 1, X34 / 2,
                                                          X34))
  np.testing.assert_allclose(x.at[1, 2].power(2.), np.where(
      (np.arange(3)[:, None] == 1) & (np.arange(4) == 2), X34 ** 2, X34))
  want = X34.copy()
  want[1:, 1] = np.sin(want[1:, 1])
  np.testing.assert_allclose(x.at[1:, 1].apply(jnp.sin), want, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(lambda x: x.at[1:, 1].apply(jnp.sin))(x), want, rtol=1e-6)
  _assert_same(x.at[1:, 1].get(), X34[1:, 1])
  assert x.at[1].mul is not None and repr(x.at[1]).startswith("_IndexUpdateRef(")


def test_at_dtype_promotion_and_warning():
  ints = jnp.asarray(np.arange(3, dtype=np.int32))
  with pytest.warns(FutureWarning, match="scatter inputs have incompatible types"):
    out = ints.at[0].set(5.5)
  assert out.dtype == np.int32 and out.tolist() == [5, 1, 2]
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    f = jnp.asarray(V).at[0].set(5)
  assert f.dtype == np.float32 and not f.weak_type
  weak = lax.broadcast(1.0, (3,))
  assert weak.at[0].set(jnp.float32(2)).weak_type
  assert not jnp.asarray(V).at[0].set(2.).weak_type


def test_scatter_add_duplicates_large():
  rng = np.random.default_rng(0)
  idx = rng.integers(-50, 60, 2000).astype(np.int32)
  vals = rng.normal(size=2000).astype(np.float32)
  want = np.zeros(50, np.float32)
  ok = (idx >= -50) & (idx < 50)
  np.add.at(want, idx[ok], vals[ok])
  got = jnp.zeros(50).at[idx].add(vals)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(jax.jit(lambda i, v: jnp.zeros(50).at[i].add(v))(idx, vals), want,
                             rtol=1e-5, atol=1e-5)


# --- errors -------------------------------------------------------------------------------------

def test_index_errors():
  x = jnp.asarray(X34)
  with pytest.raises(TypeError, match="non-tuple sequence for multidimensional indexing"):
    x[[0, 1]]
  with pytest.raises(IndexError, match="Too many indices: array is 2-dimensional, but 3 were"):
    x[1, 2, 3]
  with pytest.raises(IndexError, match=r"an index can only have a single ellipsis \('...'\)"):
    x[..., ...]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type, got indexer "
                                      "with type float64"):
    x[1.0]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type, got indexer "
                                      "with type float32"):
    x[jnp.array([1.0])]
  with pytest.raises(TypeError, match="JAX does not support string indexing; got idx='a'"):
    x["a"]
  with pytest.raises(IndexError, match=r"boolean index did not match shape of indexed array in "
                                       r"index 0: got \(2,\), expected \[3\]"):
    x[np.array([True, False])]
  with pytest.raises(IndexError, match="index is out of bounds for axis 0 with size 0"):
    jnp.zeros((0, 3))[0]
  with pytest.raises(TypeError, match="JAX arrays are immutable"):
    x[0] = 1


def test_non_concrete_boolean_index_error():
  with pytest.raises(errors.NonConcreteBooleanIndexError) as info:
    jax.jit(lambda x: x[x > 0])(jnp.asarray(X34))
  assert str(info.value).startswith("Array boolean indices must be concrete; got bool[3,4]")
  with pytest.raises(IndexError, match="Slice entries must be static integers"):
    jax.jit(lambda x, i: x[i:i + 2])(jnp.asarray(V), 1)


# --- lax primitives -----------------------------------------------------------------------------

def test_lax_slicing_values():
  x = jnp.asarray(X34)
  _assert_same(lax.slice(x, (0, 1), (2, 4), (1, 2)), X34[0:2, 1:4:2])
  _assert_same(lax.slice_in_dim(x, -2, None, 1, 0), X34[1:])
  _assert_same(lax.index_in_dim(x, -1, 1, keepdims=False), X34[:, -1])
  _assert_same(lax.dynamic_slice(x, (jnp.array(2), 1), (2, 2)), X34[1:3, 1:3])
  _assert_same(lax.dynamic_slice_in_dim(x, 3, 2, 1), X34[:, 2:4])
  _assert_same(lax.dynamic_index_in_dim(x, -1, 0, keepdims=False), X34[2])
  want = X34.copy()
  want[1:, 2:] = 1
  _assert_same(lax.dynamic_update_slice(x, jnp.ones((2, 2)), (5, 5)), want)
  want = X34.copy()
  want[:, 1] = -1
  _assert_same(lax.dynamic_update_index_in_dim(x, -jnp.ones(3), 1, 1), want)
  _assert_same(lax.dynamic_update_slice_in_dim(x, -jnp.ones((3, 1)), 1, 1), want)
  with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
    lax.index_in_dim(x, 4, 1)


@pytest.mark.parametrize("config", [(1, 2, 0), (-1, 0, 1), (2, -3, 2), (-4, -4, 3), (0, 0, 0),
                                    (-5, 4, 0), (3, 1, 4)])
def test_pad_matches_reference(config):
  x = np.arange(1, 6, dtype=np.float32)
  lo, hi, interior = config
  # Reference: interior padding by spreading, then edge padding/cropping.
  spread = np.zeros(5 + 4 * interior, np.float32)
  spread[::interior + 1] = x
  full = np.concatenate([np.zeros(max(lo, 0)), spread, np.zeros(max(hi, 0))]).astype(np.float32)
  want = full[max(-lo, 0):len(full) - max(-hi, 0)]
  _assert_same(lax.pad(jnp.asarray(x), 0., [config]), want)


def test_shape_lax_values():
  x = jnp.asarray(X34)
  _assert_same(lax.concatenate([x, x], 1), np.concatenate([X34, X34], 1))
  _assert_same(lax.rev(x, (0, 1)), X34[::-1, ::-1])
  a, b = lax.split(x, (1, 3), 1)
  _assert_same(a, X34[:, :1]), _assert_same(b, X34[:, 1:])
  _assert_same(lax.expand_dims(x, (0, 3)), X34[None, :, :, None])
  _assert_same(lax.broadcast(x, (2,)), np.broadcast_to(X34, (2, 3, 4)))
  _assert_same(lax.collapse(jnp.asarray(X_NP), 1), X_NP.reshape(3, 20))
  _assert_same(lax.stack([x, x], 2), np.stack([X34, X34], 2))
  _assert_same(lax.unstack(x, 1)[2], X34[:, 2])
  _assert_same(lax.tile(x, (2, 1)), np.tile(X34, (2, 1)))
  _assert_same(lax.reshape(x, (4, 3), (1, 0)), X34.T.reshape(4, 3))
  assert lax.concatenate([x], 0) is x and lax.squeeze(x, ()) is x and lax.transpose(x, (0, 1)) is x


def test_general_gather_and_scatter_with_batching_dims():
  operand = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  # For each batch b and index vector j: operand[b, idx[b, j], 1:3].
  idx = np.array([[[0], [2]], [[1], [1]]], np.int32)
  dn = lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(1,),
                                  start_index_map=(1,), operand_batching_dims=(0,),
                                  start_indices_batching_dims=(0,))
  got = lax.gather(jnp.asarray(operand[:, :, 1:3]), idx, dn, (1, 1, 2))
  want = np.stack([operand[b, idx[b, :, 0], 1:3] for b in range(2)])
  _assert_same(got, want)
  sdn = lax.ScatterDimensionNumbers(update_window_dims=(2,), inserted_window_dims=(1,),
                                    scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                                    scatter_indices_batching_dims=(0,))
  out = lax.scatter_add(jnp.zeros((2, 3, 2)), idx, jnp.ones((2, 2, 2)), sdn)
  want = np.zeros((2, 3, 2), np.float32)
  for b in range(2):
    np.add.at(want[b], idx[b, :, 0], 1.0)
  _assert_same(out, want)


@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
def test_scatter_window_modes(mode):
  x = jnp.asarray(np.arange(5, dtype=np.float32))
  dn = lax.ScatterDimensionNumbers((1,), (), (0,))
  upd = jnp.array([[10., 20.]])
  at_end = lax.scatter(x, jnp.array([[4]]), upd, dn, mode=mode).tolist()
  before = lax.scatter(x, jnp.array([[-1]]), upd, dn, mode=mode).tolist()
  if mode == "clip":  # windows are clamped into bounds
    assert at_end == [0, 1, 2, 10, 20] and before == [10, 20, 2, 3, 4]
  else:  # the whole out-of-bounds window is dropped
    assert at_end == [0, 1, 2, 3, 4] and before == [0, 1, 2, 3, 4]
  gdn = lax.GatherDimensionNumbers((1,), (), (0,))
  g = lax.gather(x, jnp.array([[4]]), gdn, (2,), mode=mode).tolist()
  assert g == ([[np.nan, np.nan]] if mode == "fill" else [[3.0, 4.0]]) or np.isnan(g).all()


@pytest.mark.parametrize("fn,msg", [
    (lambda x: lax.slice(x, (0, 0), (4, 1)), (r"slice slice_sizes must be less than or equal to "
     r"operand shape, got slice_sizes \(np.int64\(4\), np.int64\(1\)\) for operand shape")),
    (lambda x: lax.slice(x, (2, 0), (1, 1)), "slice slice_sizes must be greater than or equal"),
    (lambda x: lax.slice(x, (0, 0), (1, 1), (1,)), "slice strides must have length equal"),
    (lambda x: lax.slice(x, (0, 0), (2, 1), (-1, 1)), "slice strides must have every element"),
    (lambda x: lax.dynamic_slice(x, (np.int16(0), 0), (1, 1)),
     "index arguments to dynamic_slice must be integers of the same type, got: int16, int32"),
    (lambda x: lax.dynamic_slice(x, (0, 0), (1, -1)), "slice slice_sizes must be greater"),
    (lambda x: lax.dynamic_slice(x, (jnp.zeros(2, jnp.int32), 0), (1, 1)),
     "start_indices arguments to dynamic_slice must be scalars"),
    (lambda x: lax.dynamic_update_slice(x, jnp.ones((4, 1)), (0, 0)),
     "dynamic_update_slice update shape must be smaller than operand shape"),
    (lambda x: lax.dynamic_update_slice(x, jnp.ones((1,)), (0, 0)),
     "dynamic_update_slice update must have the same rank as operand"),
    (lambda x: lax.dynamic_update_slice(x, jnp.ones((1, 1), jnp.int32), (0, 0)),
     "lax.dynamic_update_slice requires arguments to have the same dtypes, got float32, int32"),
    (lambda x: lax.concatenate([x, x[0]], 0), "Cannot concatenate arrays with different numbers"),
    (lambda x: lax.concatenate([x, x.astype(jnp.int32)], 0),
     r"lax.concatenate requires arguments to have the same dtypes, got float32, int32. \(Tip: "),
    (lambda x: lax.concatenate([x, x[:, :2]], 0), "differ in dimensions other than the one"),
    (lambda x: lax.concatenate([x, x], 2), "concatenate dimension out of bounds: dimension 2"),
    (lambda x: lax.pad(x, 0, ((1, 1, 0), (1, 1, 0))),
     "pad operand and padding_value must be same dtype: got float32 and int32"),
    (lambda x: lax.rev(x, (2,)), "rev dimensions must all be less than operand ndim"),
    (lambda x: lax.rev(x, (0, 0)), r"rev dimensions must be unique, got \(0, 0\)"),
    (lambda x: lax.tile(x, (2,)), r"reps length must be equal to the ndim of x, got len\(reps\)=1"),
])
def test_lax_type_errors(fn, msg):
  with pytest.raises(TypeError, match=msg):
    fn(jnp.asarray(X34))


@pytest.mark.parametrize("fn,msg", [
    (lambda x: lax.dynamic_slice(x, (0,), (1, 1)), "Length of slice indices must match"),
    (lambda x: lax.concatenate([], 0), "concatenate requires a non-empty sequences of arrays"),
    (lambda x: lax.pad(x, 0., ((1, 1, 0),)), "length of padding_config must equal"),
    (lambda x: lax.pad(x, 0., ((1, 1, -1), (0, 0, 0))), "interior padding in padding_config"),
    (lambda x: lax.pad(x, 0., ((-5, 1, 0), (0, 0, 0))), "Dimension size after padding is not"),
    (lambda x: lax.split(x, (1, 1), 0), (r"Sum of sizes 2 must be equal to dimension 0 of the "
     r"operand shape \[3, 4\]")),
    (lambda x: lax.split(x, (-1, 4), 0), r"Sizes passed to split must be nonnegative"),
    (lambda x: lax.collapse(x, 1, 0), r"Invalid dimension range passed to collapse: \(3, 4\)"),
    (lambda x: lax.squeeze(x, (3,)), "axis 3 is out of bounds for array of dimension 2"),
])
def test_lax_value_errors(fn, msg):
  with pytest.raises(ValueError, match=msg):
    fn(jnp.asarray(X34))


def test_gather_scatter_params_and_modes():
  assert str(lax.GatherScatterMode.from_any("clip")) == "GatherScatterMode.CLIP"
  assert lax.GatherScatterMode.from_any(None) is lax.GatherScatterMode.FILL_OR_DROP
  assert [m.value for m in lax.GatherScatterMode] == [1, 2, 3, 4]
  assert repr(lax.GatherDimensionNumbers((0,), (1,), (1,))) == (
      "GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,),"
      " operand_batching_dims=(), start_indices_batching_dims=())")
  with pytest.raises(ValueError, match='Unknown gather mode "nope"'):
    lax.GatherScatterMode.from_any("nope")


# --- printed jaxprs against real JAX ---------------------------------------------------------------

F32 = np.float32
x34, x3, x345 = np.zeros((3, 4), F32), np.zeros(3, F32), np.zeros((3, 4, 5), F32)
i32, ia = np.int32(1), np.array([0, 2], np.int32)

JAXPRS = {  # name -> (fn(jnp, lax) -> function to trace, arguments)
    "getitem_int": (lambda jnp, lax: lambda x: x[0], (x34,)),
    "getitem_neg": (lambda jnp, lax: lambda x: x[-1], (x34,)),
    "getitem_col": (lambda jnp, lax: lambda x: x[:, 1], (x34,)),
    "getitem_strided": (lambda jnp, lax: lambda x: x[1:, ::2], (x34,)),
    "getitem_none": (lambda jnp, lax: lambda x: x[None], (x34,)),
    "getitem_ellipsis_none": (lambda jnp, lax: lambda x: x[..., None], (x34,)),
    "getitem_rev": (lambda jnp, lax: lambda x: x[::-2], (x34,)),
    "getitem_rev2": (lambda jnp, lax: lambda x: x[2:0:-1, 1:], (x34,)),
    "getitem_empty": (lambda jnp, lax: lambda x: x[5:10], (x34,)),
    "getitem_identity": (lambda jnp, lax: lambda x: x[:], (x34,)),
    "getitem_mixed_static": (lambda jnp, lax: lambda x: x[1, ::-1, None, 2], (x345,)),
    "getitem_oob_static": (lambda jnp, lax: lambda x: x[5], (x34,)),
    "getitem_traced": (lambda jnp, lax: lambda x, i: x[i], (x34, i32)),
    "getitem_traced_weak": (lambda jnp, lax: lambda x, i: x[i], (x34, 1)),
    "getitem_traced2": (lambda jnp, lax: lambda x, i: x[i, -1], (x34, i32)),
    "getitem_traced_slice": (lambda jnp, lax: lambda x, i: x[i, 1:3], (x34, i32)),
    "getitem_traced_col": (lambda jnp, lax: lambda x, i: x[:, i], (x34, i32)),
    "getitem_traced_none": (lambda jnp, lax: lambda x, i: x[i, None], (x34, i32)),
    "getitem_traced_rev": (lambda jnp, lax: lambda x, i: x[i, ::-1, None], (x345, i32)),
    "getitem_traced_strided": (lambda jnp, lax: lambda x, i: x[i, ::2], (x345, i32)),
    "getitem_traced_uint8": (lambda jnp, lax: lambda x, i: x[i, ..., 2], (x345, np.uint8(1))),
    "getitem_array": (lambda jnp, lax: lambda x, i: x[i], (x34, ia)),
    "getitem_array_const": (lambda jnp, lax: lambda x: x[jnp.array([0, 2])], (x34,)),
    "getitem_np_array": (lambda jnp, lax: lambda x: x[np.array([0, 2])], (x34,)),
    "getitem_array_col": (lambda jnp, lax: lambda x, i: x[:, i], (x34, ia)),
    "getitem_two_arrays": (lambda jnp, lax: lambda x, i, j: x[i, j], (x34, ia, ia)),
    "getitem_slice_array": (lambda jnp, lax: lambda x, i: x[1:, i], (x34, ia)),
    "getitem_array_slice": (lambda jnp, lax: lambda x, i: x[i, 1:3], (x34, ia)),
    "getitem_array_rev": (lambda jnp, lax: lambda x, i: x[i, ::-1], (x34, ia)),
    "getitem_array_none_int": (lambda jnp, lax: lambda x, i: x[i, None, 1], (x34, ia)),
    "getitem_array_int3": (lambda jnp, lax: lambda x, i: x[i, 1], (x345, ia)),
    "getitem_noncontig": (lambda jnp, lax: lambda x, i: x[i, :, i], (x345, ia)),
    "getitem_contig": (lambda jnp, lax: lambda x, i: x[:, i, i], (x345, ia)),
    "getitem_bcast_arrays": (lambda jnp, lax: lambda x, i: x[i[:, None], i], (x345, ia)),
    "getitem_mask": (lambda jnp, lax: lambda x: x[np.array([True, False, True])], (x34,)),
    "at_get": (lambda jnp, lax: lambda x: x.at[1].get(), (x34,)),
    "at_get_fill": (lambda jnp, lax: lambda x: x.at[5].get(mode="fill", fill_value=0.), (x3,)),
    "at_get_fill_traced": (lambda jnp, lax: lambda x, i: x.at[i].get(mode="fill"), (x3, 1)),
    "at_get_clip": (lambda jnp, lax: lambda x, i: x.at[i].get(mode="clip"), (x3, ia)),
    "at_get_strided_fill": (lambda jnp, lax: lambda x: x.at[::-1].get(mode="fill"), (x3,)),
    "at_set": (lambda jnp, lax: lambda x: x.at[0].set(5.), (x3,)),
    "at_set_int": (lambda jnp, lax: lambda x: x.at[0].set(5), (x3,)),
    "at_set_slice": (lambda jnp, lax: lambda x: x.at[1:].set(2.), (x34,)),
    "at_set_all": (lambda jnp, lax: lambda x: x.at[:].set(1.), (x3,)),
    "at_set_traced": (lambda jnp, lax: lambda x, i: x.at[i].set(1.), (x3, i32)),
    "at_add": (lambda jnp, lax: lambda x: x.at[0].add(1.), (x3,)),
    "at_add_twice": (lambda jnp, lax: lambda x: x.at[0].add(1.).at[1].add(2.), (x3,)),
    "at_add_col": (lambda jnp, lax: lambda x: x.at[:, 1].add(jnp.ones(3)), (x34,)),
    "at_add_dups": (lambda jnp, lax: lambda x, i: x.at[i].add(1.), (x3, ia)),
    "at_ops": (lambda jnp, lax: lambda x: x.at[0].mul(2.).at[1].min(2.).at[2].max(1.).at[1]
               .divide(2.).at[0].power(2.), (x3,)),
    "at_subtract": (lambda jnp, lax: lambda x: x.at[1].subtract(2.), (x34,)),
    "at_apply": (lambda jnp, lax: lambda x: x.at[0].apply(jnp.sin), (x3,)),
    "at_set_promote": (lambda jnp, lax: lambda x: x.astype(jnp.int32).at[0].set(5), (x3,)),
    "at_set_adv_slice": (lambda jnp, lax: lambda x, i: x.at[i, 1:].set(jnp.ones(3)), (x34, ia)),
    "at_set_adv_none": (lambda jnp, lax: lambda x, i: x.at[i, None].set(1.), (x34, ia)),
    "dynamic_slice": (lambda jnp, lax: lambda x, i: lax.dynamic_slice(x, (i, 0), (1, 4)),
                      (x34, i32)),
    "dynamic_slice_weak": (lambda jnp, lax: lambda x, i: lax.dynamic_slice(x, (i, 0), (3, 4)),
                           (x34, 0)),
    "dynamic_index_in_dim": (lambda jnp, lax: lambda x, i: lax.dynamic_index_in_dim(x, i, 1),
                             (x34, i32)),
    "dynamic_slice_in_dim": (lambda jnp, lax: lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, 1),
                             (x34, i32)),
    "dynamic_update_slice": (lambda jnp, lax: lambda x, i: lax.dynamic_update_slice(
        x, jnp.ones((1, 4)), (i, 0)), (x34, i32)),
    "dynamic_update_index": (lambda jnp, lax: lambda x, i: lax.dynamic_update_index_in_dim(
        x, jnp.ones(4), i, 0), (x34, i32)),
    "slice_in_dim": (lambda jnp, lax: lambda x: lax.slice_in_dim(x, 1, 3, 1, 1), (x34,)),
    "index_in_dim": (lambda jnp, lax: lambda x: lax.index_in_dim(x, 1, 1, keepdims=False),
                     (x34,)),
    "slice": (lambda jnp, lax: lambda x: lax.slice(x, (0, 1), (2, 3)), (x34,)),
    "pad": (lambda jnp, lax: lambda x: lax.pad(x, 0., ((1, 2, 0), (-1, 0, 1))), (x34,)),
    "concatenate": (lambda jnp, lax: lambda x: lax.concatenate([x, x], 1), (x34,)),
    "rev": (lambda jnp, lax: lambda x: lax.rev(x, (0, 1)), (x34,)),
    "split": (lambda jnp, lax: lambda x: lax.split(x, (1, 2), 0), (x34,)),
    "expand_dims": (lambda jnp, lax: lambda x: lax.expand_dims(x, (0, 2)), (x34,)),
    "broadcast": (lambda jnp, lax: lambda x: lax.broadcast(x, (2,)), (x34,)),
    "collapse": (lambda jnp, lax: lambda x: lax.collapse(x, 0, 2), (x34,)),
    "squeeze": (lambda jnp, lax: lambda x: lax.squeeze(x[None], (0,)), (x34,)),
    "reshape_dims": (lambda jnp, lax: lambda x: lax.reshape(x, (4, 3), (1, 0)), (x34,)),
    "identities": (lambda jnp, lax: lambda x: lax.transpose(lax.reshape(lax.broadcast_in_dim(
        x, (3, 4), (0, 1)), (3, 4)), (0, 1)), (x34,)),
    "stack": (lambda jnp, lax: lambda x: lax.stack([x, x], 1), (x34,)),
    "unstack": (lambda jnp, lax: lambda x: lax.unstack(x), (x34,)),
    "tile": (lambda jnp, lax: lambda x: lax.tile(x, (2, 1)), (x34,)),
    "gather": (lambda jnp, lax: lambda x: lax.gather(x, jnp.array([[1]]), lax.GatherDimensionNumbers(
        (1,), (0,), (0,)), (1, 4)), (x34,)),
    "gather_fill": (lambda jnp, lax: lambda x: lax.gather(x, jnp.array([[4]]), lax.GatherDimensionNumbers(
        (1,), (), (0,)), (2,), mode="fill"), (x3,)),
    "scatter_add": (lambda jnp, lax: lambda x: lax.scatter_add(x, jnp.array([[1]]), jnp.ones((1, 4)),
                    lax.ScatterDimensionNumbers((1,), (0,), (0,))), (x34,)),
    "scatter_clip": (lambda jnp, lax: lambda x: lax.scatter(x, jnp.array([[1]]), jnp.ones((1, 4)),
                     lax.ScatterDimensionNumbers((1,), (0,), (0,)), mode="clip"), (x34,)),
    "take": (lambda jnp, lax: lambda x, i: jnp.take(x, i, axis=1),
             (x34, np.array([0, 5, -1], np.int32))),
    "take_flat": (lambda jnp, lax: lambda x, i: jnp.take(x, i), (x34, np.array([0, 5, -1], np.int32))),
    "take_along_axis": (lambda jnp, lax: lambda x, i: jnp.take_along_axis(x, i, axis=1),
                        (x34, np.array([[0], [1], [2]], np.int32))),
    # one traced index into a 1-D array reaches dynamic_slice as it is (weak stays weak)
    "int_index_1d_weak": (lambda jnp, lax: lambda x, i: x[i], (x3, 1)),
    "int_index_1d_strong": (lambda jnp, lax: lambda x, i: x[i], (x3, np.int32(1))),
    "int_index_1d_int16": (lambda jnp, lax: lambda x, i: x[i], (x3, np.int16(-1))),
    "int_index_1d_uint8": (lambda jnp, lax: lambda x, i: x[i], (x3, np.uint8(1))),
    "int_index_2d_weak": (lambda jnp, lax: lambda x, i: x[i], (x34, 1)),
    "int_index_2d_both": (lambda jnp, lax: lambda x, i: x[i, i], (x34, 1)),
}


@pytest.mark.parametrize("name", sorted(JAXPRS))
def test_printed_jaxpr_matches_jax(name):
  real = oracle()
  mk, args = JAXPRS[name]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    want = str(real.make_jaxpr(mk(real.numpy, real.lax))(*args))
    got = str(jax.make_jaxpr(mk(jnp, lax))(*args))
  assert got == want


def test_printed_index_update_known_text():
  text = str(jax.make_jaxpr(lambda x: x.at[0].set(5.))(x3))
  assert "b:i32[1] = broadcast_in_dim 0:i32[]" in text
  assert ("scatter[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), "
          "inserted_window_dims=(0,)") in text.replace("\n      ", "")
  assert "update_jaxpr=None\n    ] a b 5.0:f32[]" in text


def test_jaxprs_type_check():
  from jaxlite._src.base import core
  for name in ("getitem_bcast_arrays", "at_ops", "take_along_axis", "at_set_adv_slice"):
    mk, args = JAXPRS[name]
    core.check_jaxpr(jax.make_jaxpr(mk(jnp, lax))(*args).jaxpr)


# --- hypothesis: random index expressions --------------------------------------------------------

def _entry(draw, size, n):
  kind = draw(st.sampled_from(["int", "slice", "array", "none", "full"]))
  if kind == "int":
    return draw(st.integers(-size, size - 1)), 1
  if kind == "slice":
    vals = st.one_of(st.none(), st.integers(-size - 2, size + 2))
    step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
    return slice(draw(vals), draw(vals), step), 1
  if kind == "array":
    return np.array(draw(st.lists(st.integers(-size, size - 1), min_size=n, max_size=n)),
                    np.int32), 1
  if kind == "none":
    return None, 0
  return slice(None), 1


def _entries_for(draw, dims, n):
  """Entries consuming exactly the given dims (Nones add none), in order; arrays of length n."""
  out, i = [], 0
  while i < len(dims):
    e, used = _entry(draw, dims[i], n)
    out.append(e)
    i += used
  return out


@st.composite
def _indexed(draw):
  """(shape, index): entries for a prefix of the dims, optionally `...`, then a suffix."""
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  p, n = draw(st.integers(0, len(shape))), draw(st.integers(0, 3))
  entries = _entries_for(draw, shape[:p], n)
  if draw(st.booleans()):
    q = draw(st.integers(0, len(shape) - p))
    entries += [Ellipsis] + _entries_for(draw, shape[len(shape) - q:], n)
  return shape, tuple(entries)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_indexed())
def test_random_indices_match_numpy_eager_and_jit(case):
  shape, idx = case
  x_np = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  want = x_np[idx]
  x = jnp.asarray(x_np)
  _assert_same(x[idx], want)
  _assert_same(jax.jit(lambda x: x[idx])(x), want)
  arrays, rebuild = _traced_index(idx)
  _assert_same(jax.jit(lambda x, *a: x[rebuild(a)])(x, *arrays), want)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_indexed(), st.sampled_from(["set", "add", "min", "max"]))
def test_random_at_updates_match_numpy(case, op):
  shape, idx = case
  x_np = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  y = np.float32(-7.0)
  want = x_np.copy()
  if op == "set":
    want[idx] = y
  else:
    UFUNCS[op].at(want, idx, y)
  x = jnp.asarray(x_np)
  _assert_same(getattr(x.at[idx], op)(y), want)
  _assert_same(jax.jit(lambda x: getattr(x.at[idx], op)(y))(x), want)
