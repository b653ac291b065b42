"""Behaviour that JAX libraries rely on and that issue 18's runs found missing: `named_scope` as a
decorator (equinox), `*_like` of a ShapeDtypeStruct (optax), `jax._src.dispatch` (equinox) and
`jax.experimental.layout` (flax), each checked against real JAX where it is installed."""
import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.experimental import layout as jl_layout
from conftest import oracle


def test_named_scope_is_a_context_manager_and_a_decorator():
  @jaxlite.named_scope("block")
  def f(x):
    return x * 2 + 1

  assert float(f(3.0)) == 7.0
  assert float(jaxlite.jit(f)(1.5)) == 4.0
  with jaxlite.named_scope("outer"):
    assert float(jaxlite.grad(f)(1.0)) == 2.0
  with pytest.raises(TypeError, match="must be a string"):
    with jaxlite.named_scope(3):
      pass


LIKE_CASES = [  # (function, extra args, kwargs, expected values for shape (2, 3))
    (jnp.zeros_like, (), {}, np.zeros((2, 3))),
    (jnp.ones_like, (), {}, np.ones((2, 3))),
    (jnp.full_like, (7,), {}, np.full((2, 3), 7)),
    (jnp.zeros_like, (), {"dtype": np.int32}, np.zeros((2, 3), np.int32)),
    (jnp.ones_like, (), {"shape": (4,)}, np.ones((4,))),
]


@pytest.mark.parametrize("fn,args,kwargs,want", LIKE_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, jnp.bfloat16])
def test_like_functions_take_a_shape_dtype_struct(fn, args, kwargs, want, dtype):
  s = jaxlite.ShapeDtypeStruct((2, 3), dtype)
  got = fn(s, *args, **kwargs)
  assert got.dtype == np.dtype(kwargs.get("dtype", dtype))
  np.testing.assert_array_equal(np.asarray(got, np.float64), want.astype(np.float64))
  staged = jaxlite.jit(lambda: fn(s, *args, **kwargs))()
  assert staged.dtype == got.dtype and staged.shape == got.shape


def test_like_of_shape_dtype_struct_matches_jax():
  jax = oracle()
  for dtype in (np.float32, np.int8):
    ours = jnp.zeros_like(jaxlite.ShapeDtypeStruct((3,), dtype))
    theirs = jax.numpy.zeros_like(jax.ShapeDtypeStruct((3,), dtype))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.weak_type == theirs.weak_type


def test_dispatch_wait_for_tokens_returns_after_effects_ran():
  from jaxlite._src.transforms import dispatch
  seen = []
  jaxlite.experimental.io_callback(lambda: seen.append(1), None, ordered=True)
  dispatch.wait_for_tokens()
  assert seen == [1]


def test_layout_and_format_records():
  L, F = jl_layout.Layout, jl_layout.Format
  a = L((1, 0), tiling=[(8, 128)])
  assert a == L([1, 0], ((8, 128),)) and hash(a) == hash(L((1, 0), ((8, 128),)))
  assert a != L((0, 1)) and a.update(major_to_minor=(0, 1)) == L((0, 1), ((8, 128),))
  sharding = jaxlite.sharding.SingleDeviceSharding(jaxlite.devices()[0])
  f = F(a, sharding)
  assert f == F(L((1, 0), ((8, 128),)), sharding) and f != F(None, sharding)
  assert F().layout is None and F(L.AUTO).layout is L.AUTO
  with pytest.raises(ValueError, match="sharding has to be concrete"):
    F(a)
  with pytest.raises(TypeError, match="layout argument"):
    F("row-major", sharding)
  with pytest.raises(TypeError, match="sharding argument"):
    F(None, "cpu")
  with pytest.raises(TypeError, match="unexpected keyword"):
    a.update(order=1)


def test_layout_repr_matches_jax():
  oracle()
  from jax.experimental import layout as jx
  assert repr(jl_layout.Layout((1, 0))) == repr(jx.Layout((1, 0)))
  assert repr(jl_layout.Format()) == repr(jx.Format())


def test_extended_dtype_base_for_library_dtypes():
  import dataclasses
  from jaxlite._src.base import dtypes

  @dataclasses.dataclass(frozen=True)
  class MetaDType(dtypes.ExtendedDType):  # what flax's fp8 ops define at import
    float_dtype: dtypes.DType
    type: type = dtypes.extended

  m = MetaDType(np.dtype(np.float32))
  assert isinstance(m, dtypes.ExtendedDType) and m._is_extended
  assert issubclass(m.type, dtypes.extended) and dtypes.DType is np.dtype
  assert isinstance(jaxlite.random.key(0).dtype, dtypes.ExtendedDType)
  assert not isinstance(np.dtype(np.float32), dtypes.ExtendedDType)
  with pytest.raises(TypeError):
    dtypes.ExtendedDType()  # abstract: `type` must be given
  with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
    dtypes.nonexistent


def test_abstract_ref_describes_its_inner_aval():
  from jaxlite._src.base.core import ShapedArray
  from jaxlite._src.state.types import AbstractRef
  r = AbstractRef(ShapedArray((2, 3), np.dtype(np.float32)))
  assert r.shape == (2, 3) and r.dtype == np.float32 and r.ndim == 2
  assert r == AbstractRef(ShapedArray((2, 3), np.dtype(np.float32))) and hash(r) == hash(r)
  assert r != AbstractRef(ShapedArray((3,), np.dtype(np.float32)))
  assert not isinstance(jaxlite.typeof(jnp.ones(3)), AbstractRef)


def test_xla_bridge_reports_initialised_backends():
  import subprocess
  import sys
  import textwrap
  code = textwrap.dedent("""
      import jaxlite
      from jaxlite._src import xla_bridge
      before = dict(xla_bridge._backends)
      n = len(jaxlite.devices())
      b = xla_bridge._backends["cpu"]
      print(before, n, b.platform, b.device_count(), xla_bridge.get_backend() is b)
  """)
  import os
  env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), "src"), "XLA_FLAGS": "--xla_force_host_platform_device_count=3"}
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                     timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["{}", "3", "cpu", "3", "True"]
  from jaxlite._src.compat import xla_bridge
  with pytest.raises(RuntimeError, match="Unknown backend tpu"):
    xla_bridge.get_backend("tpu")


def test_private_submodules_load_on_attribute_access():
  import jaxlite._src as src
  assert src.xla_bridge.get_backend().platform == "cpu"
  with pytest.raises(AttributeError, match="no attribute 'no_such_module'"):
    src.no_such_module


BOOL_FLAGS = ["enable_x64", "debug_nans", "debug_infs", "log_compiles", "explain_cache_misses",
              "enable_checks"]


@pytest.mark.parametrize("name", BOOL_FLAGS)
def test_bare_call_of_a_boolean_flag_turns_it_on(name):
  state = getattr(jaxlite, name)
  before = state.value
  with state():
    assert state.value is True
  assert state.value == before


def test_failed_check_raises_checkify_error_a_value_error_as_in_jax():
  from jaxlite.experimental import checkify

  def f(x):
    checkify.check(x > 0, "x must be positive, got {x}", x=x)
    return x

  err, _ = checkify.checkify(jaxlite.jit(f))(-1.0)
  for raise_it in (err.throw, lambda: checkify.check_error(err), lambda: f(jnp.asarray(-2.0))):
    with pytest.raises(checkify.JaxRuntimeError, match="x must be positive") as info:
      raise_it()
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, jaxlite.errors.JaxRuntimeError)
