"""jax's top-level extras: linear_transpose, custom_gradient, closure_convert, config states as
context managers, user contexts keying jit caches, host ids, Device, version, live_arrays."""
import importlib
import io
import contextlib

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from conftest import oracle


def _cases(jax):
  jnp_ = importlib.import_module(f"{jax.__name__}.numpy")
  f = lambda x, y: {"a": 2 * x - y, "b": jnp_.sum(x)}
  t = jax.linear_transpose(f, jnp_.ones(3), jnp_.ones(3))

  @jax.custom_gradient
  def g(x, y):
    return x * y, lambda ct: (ct * 100.0, ct * y)

  def outer(y):
    conv, consts = jax.closure_convert(lambda x: x * y + jnp_.arange(2.0), 1.0)
    return conv(2.0, *consts), len(consts)

  return {
      "transpose_tree": lambda: t({"a": jnp_.arange(3.0), "b": jnp_.float32(1.0)}),
      "transpose_scalar": lambda: jax.linear_transpose(lambda x: x * 2.0, 1.0)(3.0),
      "transpose_int": lambda: jax.linear_transpose(lambda x: x * 3, 1)(2),
      "transpose_matmul": lambda: jax.linear_transpose(
          lambda m: m @ jnp_.arange(6.0).reshape(3, 2), jnp_.ones((2, 3)))(jnp_.ones((2, 2))),
      "custom_gradient": lambda: (g(1.0, 2.0), jax.grad(g)(1.0, 2.0),
                                  jax.jit(jax.grad(g, argnums=(0, 1)))(1.0, 2.0)),
      "closure_convert_eager": lambda: outer(3.0),
      "closure_convert_grad": lambda: jax.grad(lambda y: outer(y)[0].sum())(3.0),
      "closure_convert_jit": lambda: jax.jit(lambda y: outer(y)[0])(3.0),
  }


@pytest.mark.parametrize("name", list(_cases(jaxlite)))
def test_transform_extras_match_jax(name):
  jax = oracle()
  ours, theirs = _cases(jaxlite)[name](), _cases(jax)[name]()
  lo, lt = jaxlite.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
  assert len(lo) == len(lt)
  for o, t in zip(lo, lt):
    np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)
    assert np.asarray(o).dtype == np.asarray(t).dtype, name


def test_transform_extras_known_answers():
  r = _cases(jaxlite)
  out = r["transpose_tree"]()
  np.testing.assert_array_equal(out[0], [1.0, 3.0, 5.0])
  np.testing.assert_array_equal(out[1], [-0.0, -1.0, -2.0])
  assert float(r["custom_gradient"]()[1]) == 100.0
  assert r["closure_convert_eager"]()[1] == 0
  assert float(r["closure_convert_grad"]()) == 4.0


@pytest.mark.parametrize("fn,arg,ct,err,match", [
    (jnp.sin, 1.0, 1.0, NotImplementedError, "Transpose rule .* for 'sin' not implemented"),
    (lambda x: x * 2.0, 1.0, 1, TypeError, "cotangent type does not match"),
    (lambda x: (x, x), 1.0, 1.0, TypeError, "cotangent tree does not match"),
    (lambda x: x.astype(jnp.int32), 1.0, 1, TypeError, "only supports"),
])
def test_linear_transpose_errors(fn, arg, ct, err, match):
  with pytest.raises(err, match=match):
    jaxlite.linear_transpose(fn, arg)(ct)


def test_closure_convert_hoists_tracers_under_grad():
  counts = []

  def outer(y):
    conv, consts = jaxlite.closure_convert(lambda x: x * y, 1.0)
    counts.append(len(consts))
    return conv(2.0, *consts)
  assert float(jaxlite.grad(outer)(3.0)) == 2.0
  assert counts == [1]


@pytest.mark.parametrize("state,flag,value", [
    ("enable_x64", "jax_enable_x64", True),
    ("debug_nans", "jax_debug_nans", True),
    ("debug_infs", "jax_debug_infs", True),
    ("numpy_rank_promotion", "jax_numpy_rank_promotion", "raise"),
    ("numpy_dtype_promotion", "jax_numpy_dtype_promotion", "strict"),
    ("default_matmul_precision", "jax_default_matmul_precision", "highest"),
    ("log_compiles", "jax_log_compiles", True),
    ("explain_cache_misses", "jax_explain_cache_misses", True),
    ("threefry_partitionable", "jax_threefry_partitionable", False),
    ("enable_checks", "jax_enable_checks", True),
    ("legacy_prng_key", "jax_legacy_prng_key", "error"),
    ("transfer_guard_host_to_device", "jax_transfer_guard_host_to_device", "disallow"),
])
def test_config_states_are_context_managers(state, flag, value):
  st = getattr(jaxlite, state)
  before = getattr(jaxlite.config, flag)
  with st(value):
    assert getattr(jaxlite.config, flag) == value and st.value == value
  assert getattr(jaxlite.config, flag) == before


def test_enable_x64_changes_dtypes_and_restores():
  with jaxlite.enable_x64(True):
    assert jnp.ones(1).dtype == np.float64
  assert jnp.ones(1).dtype == np.float32
  with pytest.raises(ValueError, match="jax_numpy_rank_promotion"):
    jaxlite.numpy_rank_promotion("sometimes")


def test_transfer_guard_and_checking_leaks():
  with jaxlite.transfer_guard("log"):
    assert jaxlite.config.jax_transfer_guard_device_to_host == "log"
  assert jaxlite.config.jax_transfer_guard_device_to_host == "allow"
  with jaxlite.checking_leaks():
    assert jaxlite.config.jax_check_tracer_leaks is True
  assert jaxlite.config.jax_check_tracer_leaks is False


def test_user_context_keys_jit_cache():
  ctx = jaxlite.make_user_context(default_value=0)
  traces = []

  @jaxlite.jit
  def f(x):
    traces.append(ctx.value)
    return x * 2
  f(1.0)
  f(1.0)
  with ctx(1):
    f(1.0)
  f(1.0)
  assert traces == [0, 1]


def test_host_ids_device_float0_version():
  assert jaxlite.host_count() == 1 and jaxlite.host_id() == 0 and jaxlite.host_ids() == [0]
  assert all(isinstance(d, jaxlite.Device) for d in jaxlite.devices())
  assert jaxlite.float0 == np.dtype([("float0", "V")])
  assert jaxlite.version.__version_info__ == (0, 10, 2)
  assert jaxlite.effects_barrier() is None


def test_print_environment_info_and_live_arrays():
  text = jaxlite.print_environment_info(return_string=True)
  assert text.startswith("jax:    0.10.2") and f"numpy:  {np.__version__}" in text
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    jaxlite.print_environment_info()
  assert buf.getvalue().startswith("jax:")
  keep = jnp.arange(7.0) + 1
  assert any(a is keep for a in jaxlite.live_arrays())
  assert jaxlite.live_arrays("gpu") == []


def _nan_cases(jax):
  jnp_ = importlib.import_module(f"{jax.__name__}.numpy")
  return {
      "eager_log": lambda: jnp_.log(jnp_.float32(-1.0)),
      "jit_log": lambda: jax.jit(lambda x: jnp_.log(x) + 1)(jnp_.float32(-1.0)),
      "div": lambda: jnp_.float32(0.0) / jnp_.float32(0.0),
      "fine": lambda: jax.jit(lambda x: x * 2)(jnp_.float32(1.0)),
  }


@pytest.mark.parametrize("name", list(_nan_cases(jaxlite)))
@pytest.mark.parametrize("flag", ["debug_nans", "debug_infs"])
def test_debug_nans_infs_match_jax(name, flag):
  import warnings
  jax = oracle()

  def outcome(lib):
    with warnings.catch_warnings(), getattr(lib, flag)(True):
      warnings.simplefilter("ignore")
      try:
        _nan_cases(lib)[name]()
        return None
      except FloatingPointError as e:
        return str(e).split(".")[0]
  assert outcome(jaxlite) == outcome(jax)


def test_debug_nans_known_answers_and_removal():
  import warnings
  from jaxlite._src.base import core
  with jaxlite.debug_nans(True):
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
      jaxlite.jit(lambda x: jnp.log(x))(-1.0)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert np.isnan(float(jnp.log(-1.0)))
  assert "_checked_eager" not in repr(core.EvalTrace.process_primitive)


def test_log_compiles(caplog):
  import logging
  with caplog.at_level(logging.WARNING), jaxlite.log_compiles(True):
    def my_logged(x):
      return x * 2
    jaxlite.jit(my_logged)(jnp.ones(3))
  msgs = [r.getMessage() for r in caplog.records]
  assert msgs[0].startswith("Finished tracing my_logged for jit in ")
  assert msgs[1] == ("Compiling jit(my_logged) with global shapes and types "
                     "(ShapedArray(float32[3]),). Argument mapping: (UnspecifiedValue,).")
  caplog.clear()
  jaxlite.jit(lambda x: x + 1)(jnp.ones(3))
  assert caplog.records == []


def test_no_tracing_and_no_execution_match_jax():
  jax = oracle()

  def outcomes(lib):
    lnp = importlib.import_module(f"{lib.__name__}.numpy")
    f = lib.jit(lambda x: x * 2)
    res = []
    with lib.no_tracing(True):
      try:
        f(1.0)
      except RuntimeError as e:
        res.append(str(e).split(" at ")[0])
    f(1.0)
    with lib.no_execution(True):
      for g in (lambda: f(1.0), lambda: lnp.sin(1.0)):
        try:
          g()
        except RuntimeError as e:
          res.append(str(e).replace("sin", "<op>").replace("<lambda>", "<fn>"))
    return res
  assert outcomes(jaxlite) == outcomes(jax)
  assert jaxlite.process_indices() == [0] and jaxlite.check_tracer_leaks.value is False
