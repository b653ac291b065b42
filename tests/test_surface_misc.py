"""Smaller jax.* names: jax.dtypes (extended, prng_key, scalar_type_of, itemsize_bits),
jax.errors (JaxRuntimeError, JaxprTypeError, InconclusiveDimensionOperation) and jax.nn's
block-scaled matmuls (scaled_matmul, scaled_dot_general, get_scaled_dot_general_config)."""
import ml_dtypes
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle
from jaxlite import dtypes, errors, nn


# --- dtypes ------------------------------------------------------------------------------------

SCALAR_TYPES = [(1, int), (1.0, float), (1j, complex), (True, bool), (np.float32(1), float),
                (np.int8(3), int), (np.uint16(3), int), (jnp.ones(2), float),
                (jnp.ones(2, jnp.bfloat16), float), (np.array([1 + 2j], np.complex64), complex)]


@pytest.mark.parametrize("value, want", SCALAR_TYPES, ids=repr)
def test_scalar_type_of(value, want):
  assert dtypes.scalar_type_of(value) is want


ITEMSIZE_BITS = [(np.float32, 32), (np.int8, 8), (np.bool_, 8), (np.complex128, 128),
                 ("bfloat16", 16), (ml_dtypes.int4, 4), (ml_dtypes.float8_e4m3fn, 8)]


@pytest.mark.parametrize("dtype, bits", ITEMSIZE_BITS, ids=str)
def test_itemsize_bits(dtype, bits):
  assert dtypes.itemsize_bits(dtype) == bits


def test_extended_dtypes_and_errors():
  key = jax.random.key(0)
  assert jnp.issubdtype(key.dtype, dtypes.extended)
  assert jnp.issubdtype(key.dtype, dtypes.prng_key)
  assert not jnp.issubdtype(np.float32, dtypes.extended)
  assert issubclass(dtypes.prng_key, dtypes.extended) and key.dtype.type is dtypes.prng_key
  with pytest.raises(ValueError, match="unexpected input: dtype=key<fry>"):
    dtypes.itemsize_bits(key.dtype)
  with pytest.raises(TypeError):
    dtypes.scalar_type_of("a")


def test_dtypes_match_jax():
  real = oracle()
  for value, _ in SCALAR_TYPES[:7]:
    assert dtypes.scalar_type_of(value) is real.dtypes.scalar_type_of(value)
  for dtype, _ in ITEMSIZE_BITS:
    assert dtypes.itemsize_bits(dtype) == real.dtypes.itemsize_bits(dtype)


# --- errors ------------------------------------------------------------------------------------

def test_error_classes():
  assert issubclass(errors.JaxRuntimeError, RuntimeError)
  assert issubclass(errors.JaxprTypeError, TypeError)
  assert issubclass(errors.InconclusiveDimensionOperation, Exception)
  from jaxlite._src.base import core
  jaxpr = jax.make_jaxpr(lambda x: x * 2)(1.0).jaxpr
  jaxpr.eqns.append(jaxpr.eqns[0])   # the same variable defined twice
  with pytest.raises(errors.JaxprTypeError, match="defined twice"):
    core.check_jaxpr(jaxpr)


# --- nn.scaled_matmul / scaled_dot_general -----------------------------------------------------

def test_scaled_matmul_known():
  a = np.array([1, 2, 3]).reshape((1, 1, 3))
  b = np.array([4, 5, 6]).reshape((1, 1, 3))
  s = np.array([0.5]).reshape((1, 1, 1))
  out = nn.scaled_matmul(a, b, s, s)   # JAX's documented example: 0.25 * 32
  assert out.dtype == np.float32 and out.shape == (1, 1, 1)
  np.testing.assert_array_equal(np.asarray(out), [[[8.0]]])
  x = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
  xs = np.array([[[1., 2.], [3., 4.]]], np.float32)   # blocks of 2 along K
  want = np.einsum("bmk,bnk->bmn", x * np.repeat(xs, 2, -1), x)
  got = nn.scaled_matmul(x, x, xs, np.ones_like(xs), preferred_element_type=jnp.bfloat16)
  assert got.dtype == jnp.bfloat16
  np.testing.assert_allclose(np.asarray(got, np.float32), want, rtol=1e-2)


@pytest.mark.parametrize("shapes", [((1, 2, 3), (1, 2, 4), (1, 2, 1), (1, 2, 1)),
                                    ((1, 2, 4), (1, 2, 4), (1, 2, 1), (1, 2, 2)),
                                    ((1, 2, 4), (1, 3, 4), (1, 1, 1), (1, 3, 1))])
def test_scaled_matmul_shape_errors(shapes):
  with pytest.raises(ValueError, match="scaled_matmul requires"):
    nn.scaled_matmul(*(np.ones(s, np.float32) for s in shapes))


# ones . (2 * ones) over K = 64. mxfp8's power-of-two scales make it exact (128). nvfp4 scales
# blocks by e4m3(amax / 6): 1/6 -> 0.171875 and 2/6 -> 0.34375; both values quantize to fp4's 6,
# dequantizing to 1.03125 and 2.0625, so each output is 64 * 1.03125 * 2.0625 = 136.125.
@pytest.mark.parametrize("mode, exact_value", [("mxfp8", 128.0), ("nvfp4", 136.125)])
def test_scaled_dot_general(mode, exact_value):
  configs = [nn.get_scaled_dot_general_config(mode)] * 3
  dn = (((2,), (2,)), ((0,), (0,)))
  ones = np.ones((2, 3, 64), np.float32)
  exact = nn.scaled_dot_general(ones, 2 * ones[:, :2], dn, configs=configs)
  np.testing.assert_array_equal(np.asarray(exact), np.full((2, 3, 2), exact_value))
  r = np.random.RandomState(0)
  x, y = r.randn(2, 4, 64).astype(np.float32), r.randn(64, 2, 5).astype(np.float32)
  got = np.asarray(nn.scaled_dot_general(x, y, (((2,), (0,)), ((0,), (1,))), configs=configs))
  want = np.einsum("bmk,kbn->bmn", x, y)
  bound = (0.07 if mode == "mxfp8" else 0.3) * np.einsum("bmk,kbn->bmn", abs(x), abs(y))
  assert got.shape == (2, 4, 5) and (np.abs(got - want) <= bound).all()


def test_scaled_dot_general_configs():
  mx = nn.get_scaled_dot_general_config("mxfp8")
  assert (mx.mode, mx.block_size, mx.global_scale) == ("mxfp8", 32, None)
  assert mx.data_type == ml_dtypes.float8_e4m3fn and mx.scale_type == ml_dtypes.float8_e8m0fnu
  nv = nn.get_scaled_dot_general_config("nvfp4", jnp.array([0.5], np.float32))
  assert (nv.block_size, float(nv.global_scale[0])) == (16, 0.5)
  assert nv.data_type == ml_dtypes.float4_e2m1fn
  with pytest.raises(ValueError, match="Unsupported mode: int8"):
    nn.get_scaled_dot_general_config("int8")
  x = np.random.RandomState(1).randn(3, 4).astype(np.float32)
  np.testing.assert_allclose(np.asarray(nn.scaled_dot_general(x, x.T, (((1,), (0,)), ((), ())))),
                             x @ x.T, rtol=1e-5)


def test_scaled_configs_match_jax():
  real = oracle()
  for mode in ("mxfp8", "nvfp4"):
    got, want = nn.get_scaled_dot_general_config(mode), real.nn.get_scaled_dot_general_config(mode)
    assert (got.mode, got.block_size, got.data_type, got.scale_type, got.infer_only) == \
        (want.mode, want.block_size, want.data_type, want.scale_type, want.infer_only)
