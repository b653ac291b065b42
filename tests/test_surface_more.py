"""The smaller remaining names of issue 14: ad_checkpoint's residual report and policy answers,
custom_derivatives and api_util helpers. Known answers, and JAX's output where installed."""
import contextlib
import io
import re

import numpy as np
import pytest

import jaxlite as jl
import jaxlite.numpy as jnp
from jaxlite import ad_checkpoint, api_util, custom_derivatives, tree_util
from jaxlite._src.base import linear_util as lu
from conftest import oracle


# --- ad_checkpoint ------------------------------------------------------------------------------

def _residual_cases(jax, jnp_, a):
  def f(x, y):
    return jnp_.sum(jnp_.cos(jnp_.sin(x) * y) @ y)
  one = jnp_.ones((3, 3))

  def named(d):
    c = a.checkpoint_name(jnp_.cos(d["k"]), "c")
    return jnp_.sum(jnp_.sin(c) * c)
  return [
      (f, (one, one)),
      (jax.checkpoint(f), (one, one)),
      (jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable), (one, one)),
      (named, ({"k": jnp_.ones(2)},)),
      (lambda x, *r: (x * r[0]).sum(), (jnp_.ones(2), jnp_.ones(2))),
  ]


def _printed_residuals(jax, jnp_, a):
  out = []
  for fn, args in _residual_cases(jax, jnp_, a):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
      a.print_saved_residuals(fn, *args)
    # JAX appends the source location of each eqn; jaxlite's jaxprs record none
    out.append([re.sub(r" from (?!the argument|a ).*", "", ln)
                for ln in buf.getvalue().splitlines()])
  return out


EXPECTED_RESIDUALS = [
    ["f32[3,3] from the argument y", "f32[3,3] output of sin", "f32[3,3] output of cos",
     "f32[3,3] output of cos", "f32[3,3] output of sin"],
    ["f32[3,3] from the argument x", "f32[3,3] from the argument y"],
    ["f32[3,3] from the argument x", "f32[3,3] from the argument y"],
    ["f32[2] output of sin", "f32[2] named 'c'", "f32[2] output of sin",
     "f32[2] output of cos"],
    ["f32[2] from the argument x", "f32[2] from the argument r[0]"],
]


def test_print_saved_residuals_known_answers():
  assert _printed_residuals(jl, jnp, ad_checkpoint) == EXPECTED_RESIDUALS


def test_print_saved_residuals_vs_jax():
  jax = oracle()
  from jax import ad_checkpoint as jac
  assert _printed_residuals(jax, jax.numpy, jac) == _printed_residuals(jl, jnp, ad_checkpoint)


def test_saved_residuals_returns_avals():
  res = ad_checkpoint.saved_residuals(lambda x: jnp.sin(x).sum(), jnp.ones(3))
  # the source location is JAX's: file:line:column (qualified function name)
  assert [(a.shape, str(a.dtype), s) for a, s in res] == [
      ((3,), "float32", f"output of cos from {__file__}:70:48 "
                        "(test_saved_residuals_returns_avals.<locals>.<lambda>)")]


@pytest.mark.parametrize("answer, saved", [
    (ad_checkpoint.Saveable, True), (ad_checkpoint.Recompute, False),
    (ad_checkpoint.Offloadable("device", "pinned_host"), True)])
def test_policy_answers_decide_what_is_saved(answer, saved):
  def f(x):
    return jnp.sum(jnp.sin(jnp.dot(x, x)))
  g = jl.checkpoint(f, policy=lambda prim, *_, **__: answer if prim.name == "dot_general"
                    else ad_checkpoint.Recompute)
  lines = [s for _, s in ad_checkpoint.saved_residuals(g, jnp.ones((2, 2)))]
  assert any(s.startswith("output of dot_general from ") for s in lines) is saved
  np.testing.assert_allclose(jl.grad(g)(jnp.ones((2, 2))), jl.grad(f)(jnp.ones((2, 2))))


def test_policy_names_match_jax():
  oracle()
  from jax import ad_checkpoint as jac
  assert jac.Offloadable("device", "pinned_host") == \
      tuple(ad_checkpoint.Offloadable("device", "pinned_host"))
  assert ad_checkpoint.Offloadable._fields == jac.Offloadable._fields


# --- custom_derivatives ------------------------------------------------------------------------

def test_custom_derivatives_reexports():
  assert custom_derivatives.closure_convert is jl.closure_convert
  assert custom_derivatives.custom_gradient is jl.custom_gradient
  P = custom_derivatives.CustomVJPPrimal
  tree = {"a": P(1.0, True), "b": (P(2, False),)}
  assert custom_derivatives.custom_vjp_primal_tree_values(tree) == {"a": 1.0, "b": (2,)}
  with pytest.raises(TypeError, match="unexpected leaf type"):
    custom_derivatives.custom_vjp_primal_tree_values({"a": 1.0})


def test_custom_vjp_primal_tree_values_in_a_symbolic_zeros_rule():
  @jl.custom_vjp
  def f(x, y):
    return x * y

  def fwd(x, y):
    x, y = custom_derivatives.custom_vjp_primal_tree_values((x, y))
    return x * y, (x, y)
  f.defvjp(fwd, lambda res, g: (g * res[1], g * res[0]), symbolic_zeros=True)
  np.testing.assert_allclose(jl.grad(f, argnums=(0, 1))(2.0, 3.0), (3.0, 2.0))


# --- api_util -----------------------------------------------------------------------------------

T_KW = tree_util.tree_structure(((1, {"a": 2, "b": (3, 4)}), {"k": 5, "z": (6, 7)}))
T_ARGS = tree_util.tree_structure((1, {"a": 2, "b": (3, 4)}, 5))


@pytest.mark.parametrize("fn, args, expected", [
    ("donation_vector", ((1,), ("z",), T_KW), (False, True, True, True, False, True, True)),
    ("donation_vector", ((0,), (), T_ARGS, False), (True, False, False, False, False)),
    ("rebase_donate_argnums", ((3, 4), (0, 1)), (1, 2)),
    ("rebase_donate_argnums", ((5, 2), (3,)), (2, 4)),
    ("rebase_donate_argnums", ((2, 0), ()), (0, 2)),
    ("flatten_axes", ("vmap in_axes", T_ARGS, (0, {"a": None, "b": 1}, None)),
     [0, None, 1, 1, None]),
    ("flatten_axes", ("vmap in_axes", T_ARGS, 0), [0, 0, 0, 0, 0]),
    ("flatten_axes", ("vmap in_axes", T_ARGS, (0, 1, None)), [0, 1, 1, 1, None]),
])
def test_api_util_known_answers(fn, args, expected):
  # answers recorded from JAX 0.10.2
  assert getattr(api_util, fn)(*args) == expected


@pytest.mark.parametrize("fn, args, match", [
    ("flatten_axes", ("vmap in_axes", T_ARGS, (0, 1)), "tree prefix"),
    ("rebase_donate_argnums", ((1,), (1,)), "cannot intersect"),
])
def test_api_util_errors(fn, args, match):
  with pytest.raises(ValueError, match=match):
    getattr(api_util, fn)(*args)


def test_argnums_partial_and_safe_map():
  f = lu.wrap_init(lambda a, b, c: a * 100 + b * 10 + c)
  g, dyn = api_util.argnums_partial(f, (0, 2), (1, 2, 3))
  assert dyn == (1, 3) and g.call_wrapped(4, 6) == 426
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    api_util.argnums_partial(f, (0,), (1, [2], 3))
  g, _ = api_util.argnums_partial(f, (0,), (1, [2], 3), require_static_args_hashable=False)
  with pytest.raises(TypeError):  # the list is passed through: 10 * [2] + 3 is a TypeError
    g.call_wrapped(1)
  assert api_util.safe_map(lambda a, b: a - b, [3, 4], [1, 1]) == [2, 3]
  with pytest.raises(ValueError):
    api_util.safe_map(lambda a, b: a, [1], [1, 2])


# --- scipy.linalg.rsf2csf -----------------------------------------------------------------------

RSF_CASES = [np.array([[0., 3., 3.], [0., 1., 2.], [2., 0., 1.]], np.float32),
             np.random.default_rng(0).normal(size=(5, 5)).astype(np.float32),
             np.diag([1., 2., 3.]).astype(np.float32)]


@pytest.mark.parametrize("a", RSF_CASES)
def test_rsf2csf_triangular_and_reconstructs(a):
  sl = pytest.importorskip("scipy.linalg")
  tr, zr = (x.astype(np.float32) for x in sl.schur(a))
  from jaxlite.scipy.linalg import rsf2csf
  tc, zc = (np.asarray(x) for x in rsf2csf(tr, zr))
  assert tc.dtype == np.complex64 and zc.dtype == np.complex64
  assert np.abs(np.tril(tc, -1)).max() == 0
  np.testing.assert_allclose(zc @ tc @ zc.conj().T, a, atol=1e-5)
  np.testing.assert_allclose(zc @ zc.conj().T, np.eye(len(a)), atol=1e-5)
  jax = oracle()
  tj, zj = jax.scipy.linalg.rsf2csf(tr, zr)
  np.testing.assert_allclose(tc, tj, atol=1e-5)
  np.testing.assert_allclose(zc, zj, atol=1e-5)


def test_rsf2csf_errors():
  from jaxlite.scipy.linalg import rsf2csf
  with pytest.raises(ValueError, match="'T' must be square"):
    rsf2csf(np.ones((2, 3)), np.eye(2))
  with pytest.raises(ValueError, match="shapes must match"):
    rsf2csf(np.eye(2), np.eye(3))


# --- profiler.device_memory_profile --------------------------------------------------------------

def _decode(buf: bytes) -> list:
  """[(field number, int or bytes)] of one protobuf message (varint and length-delimited)."""
  out, i = [], 0

  def varint():
    nonlocal i
    n = shift = 0
    while True:
      b = buf[i]
      i += 1
      n |= (b & 0x7F) << shift
      shift += 7
      if not b & 0x80:
        return n
  while i < len(buf):
    key = varint()
    if key & 7 == 0:
      out.append((key >> 3, varint()))
    else:
      n = varint()
      out.append((key >> 3, buf[i:i + n]))
      i += n
  return out


def _decode_packed(buf: bytes) -> list:
  out, n, shift = [], 0, 0
  for b in buf:
    n |= (b & 0x7F) << shift
    shift += 7
    if not b & 0x80:
      out.append(n)
      n = shift = 0
  return out


def test_device_memory_profile_is_pprof_of_live_arrays(tmp_path):
  import gzip
  from jaxlite import profiler
  keep = jnp.ones((3, 4), jnp.float32) + 1  # noqa: F841 (alive while the profile is taken)
  profile = _decode(gzip.decompress(profiler.device_memory_profile()))
  strings = [v.decode() for f, v in profile if f == 6]
  assert strings[0] == "" and {"allocations", "count", "space", "bytes", "kind", "buffer",
                               "device", "cpu:0"} <= set(strings)
  functions = {dict(_decode(v))[1]: strings[dict(_decode(v))[2]] for f, v in profile if f == 5}
  totals = {}
  for f, v in profile:
    if f == 2:
      sample = dict(_decode(v))
      (loc,), (count, nbytes) = _decode_packed(sample[1]), _decode_packed(sample[2])
      assert count == 1
      totals[functions[loc]] = totals.get(functions[loc], 0) + nbytes
  assert totals.get("f32[3,4]", 0) >= 48
  path = tmp_path / "memory.prof"
  profiler.save_device_memory_profile(str(path))
  assert gzip.decompress(path.read_bytes())[:2] == b"\n\x04"  # a sample_type message first
  with pytest.raises(ValueError, match="backend"):
    profiler.device_memory_profile("tpu")


def test_copy_to_host_async_returns_its_argument_and_calls_each_leaf():
  calls = []

  class Leaf:
    def copy_to_host_async(self):
      calls.append(self)
  leaf = Leaf()
  tree = {"a": jnp.ones(2), "b": (1.0, "s")}
  assert jl.copy_to_host_async(tree) is tree
  out = jl.copy_to_host_async([leaf, 3])
  assert out[0] is leaf and calls == [leaf]
  np.testing.assert_array_equal(np.asarray(tree["a"]), [1., 1.])


# --- dlpack -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, supported", [
    ("float32", True), ("bool", True), ("complex128", True), ("uint64", True),
    # NumPy cannot export ml_dtypes' bfloat16 through DLPack, so jaxlite says so where JAX (whose
    # buffers are XLA's) says True: a documented difference (README, interop).
    ("bfloat16", False), (np.longdouble, np.dtype(np.longdouble) == np.float64), ("U3", False),
    ("O", False)])
def test_dlpack_is_supported_dtype(dtype, supported):
  if dtype == "bfloat16":
    dtype = jnp.bfloat16
  assert jl.dlpack.is_supported_dtype(dtype) is supported


def test_dlpack_round_trip_and_errors():
  src = np.arange(6, dtype=np.int16).reshape(2, 3)
  out = jl.dlpack.from_dlpack(src)
  assert out.dtype == np.int16 and out.shape == (2, 3)
  np.testing.assert_array_equal(np.asarray(out), src)
  back = jl.dlpack.from_dlpack(jnp.asarray([1.5, 2.5]))  # jaxlite's own Array exports itself
  np.testing.assert_array_equal(np.asarray(back), [1.5, 2.5])
  with pytest.raises(TypeError, match="Expected a string or dtype-like"):
    jl.dlpack.is_supported_dtype(None)
  with pytest.raises(TypeError, match="__dlpack__"):
    jl.dlpack.from_dlpack([1, 2])


def test_dlpack_supported_dtypes_are_a_subset_of_jax():
  oracle()
  from jax._src import dlpack as jdl
  ours = {np.dtype(d) for d in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                "uint64", "float16", "float32", "float64", "complex64",
                                "complex128", "bool") if jl.dlpack.is_supported_dtype(d)}
  assert ours == {np.dtype(d) for d in jdl.SUPPORTED_DTYPES_SET if d.name != "bfloat16"}
