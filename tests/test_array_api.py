"""The Array API standard's surface of `jaxlite.numpy`: namespace metadata, placement methods and
the cases the conformance suite found, each checked against known values and real JAX."""
import inspect

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle, x64


# ---- namespace metadata ------------------------------------------------------------------------

def test_version_and_namespace():
  assert jnp.__array_api_version__ == "2024.12"
  x = jnp.arange(3)
  assert x.__array_namespace__() is jnp
  assert x.__array_namespace__(api_version="2024.12") is jnp
  with pytest.raises(ValueError, match="2023.12"):
    x.__array_namespace__(api_version="2023.12")
  with pytest.raises(TypeError):
    x.__array_namespace__("2024.12")  # keyword-only, as the standard says


def test_namespace_info_known_values():
  info = jnp.__array_namespace_info__()
  assert info.capabilities() == {"boolean indexing": False, "data-dependent shapes": False,
                                 "max dimensions": 64}
  assert info.default_device() is None  # uncommitted by default
  assert info.devices() == [None, *jax.devices()]
  with x64(False):
    assert info.default_dtypes() == {"real floating": np.float32, "complex floating": np.complex64,
                                     "integral": np.int32, "indexing": np.int32}
    assert sorted(info.dtypes()) == sorted(["bool", "int8", "int16", "int32", "uint8", "uint16",
                                            "uint32", "float32", "complex64"])
  with x64(True):
    assert info.default_dtypes(device=jax.devices()[0])["integral"] == np.int64
    assert info.dtypes(kind="real floating") == {"float32": np.dtype("float32"),
                                                "float64": np.dtype("float64")}
    assert sorted(info.dtypes(kind=("bool", "unsigned integer"))) == \
        ["bool", "uint16", "uint32", "uint64", "uint8"]
  with pytest.raises(KeyError, match="kind"):
    info.dtypes(kind="floating")


@pytest.mark.parametrize("enable_x64", [False, True])
@pytest.mark.parametrize("kind", [None, "bool", "signed integer", "unsigned integer", "integral",
                                  "real floating", "complex floating", "numeric",
                                  ("integral", "complex floating")])
def test_namespace_info_matches_jax(enable_x64, kind):
  real = oracle()
  with x64(enable_x64), real.enable_x64(enable_x64):
    ours, theirs = jnp.__array_namespace_info__(), real.numpy.__array_namespace_info__()
    assert ours.dtypes(kind=kind) == theirs.dtypes(kind=kind)
    assert ours.default_dtypes() == theirs.default_dtypes()
    assert ours.capabilities() == theirs.capabilities()
    assert ours.default_device() == theirs.default_device()
    assert len(ours.devices()) == len(theirs.devices())


def test_device_and_to_device():
  x = jnp.arange(3.0)
  assert x.device == jax.devices()[0] and not x.committed
  y = x.to_device(x.device)
  assert y.committed and y.device == jax.devices()[0]
  np.testing.assert_array_equal(y, x)
  z = x.to_device(jax.sharding.SingleDeviceSharding(jax.devices()[0]))
  assert z.committed
  with pytest.raises(NotImplementedError, match="stream"):
    x.to_device(x.device, stream=1)


def test_signatures_follow_the_standard():
  params = inspect.signature(type(jnp.ones(1)).__dlpack__).parameters
  assert [(n, p.kind.name) for n, p in params.items()][1:] == [
      ("stream", "KEYWORD_ONLY"), ("max_version", "KEYWORD_ONLY"),
      ("dl_device", "KEYWORD_ONLY"), ("copy", "KEYWORD_ONLY")]
  assert list(inspect.signature(jnp.isdtype).parameters) == ["dtype", "kind"]
  assert list(inspect.signature(jnp.from_dlpack).parameters) == ["x", "device", "copy"]


# ---- isdtype -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,kind,expected", [
    ("int32", "integral", True), ("uint8", "signed integer", False), ("bool", "bool", True),
    ("float32", ("integral", "real floating"), True), ("complex64", "numeric", True),
    ("bool", "numeric", False), ("float16", jnp.float16, True), ("int8", "int16", False),
])
def test_isdtype(dtype, kind, expected):
  assert jnp.isdtype(dtype=dtype, kind=kind) is expected


@pytest.mark.parametrize("kind,err", [("floating", ValueError), (3, TypeError)])
def test_isdtype_bad_kind(kind, err):
  real = oracle()
  with pytest.raises(err, match="kind"):
    jnp.isdtype("int32", kind)
  with pytest.raises(err):
    real.numpy.isdtype("int32", kind)


# ---- the conformance suite's cases -------------------------------------------------------------

_MASK_CASES = [  # (x shape, mask shape, expected result shape or IndexError)
    ((2, 3), (), (1, 2, 3)), ((), (), (1,)), ((2, 3), (2, 0), (0,)), ((2, 3), (0, 3), (0,)),
    ((2, 3), (2,), (2, 3)), ((0,), (0,), (0,)), ((2, 3), (3,), IndexError),
    ((2, 3), (2, 3, 1), IndexError)]


@pytest.mark.parametrize("xs,ks,expected", _MASK_CASES)
def test_getitem_masking(xs, ks, expected):
  x = np.arange(int(np.prod(xs))).reshape(xs)
  key = np.ones(ks, bool)
  if expected is IndexError:
    with pytest.raises(IndexError):
      jnp.asarray(x)[jnp.asarray(key)]
    return
  out = jnp.asarray(x)[jnp.asarray(key)]
  assert out.shape == expected
  np.testing.assert_array_equal(out, x[key] if key.ndim else x[None][:int(key)])


def test_getitem_false_scalar_mask():
  assert jnp.arange(3)[jnp.asarray(False)].shape == (0, 3)


_INF, _NAN = np.inf, np.nan
_EXPM1_CASES = [  # (z, expected): JAX (XLA) returns expm1(re) + 0j on the real axis
    (complex(_INF, 0.0), complex(_INF, 0.0)), (complex(_NAN, 0.0), complex(_NAN, 0.0)),
    (complex(-_INF, 0.0), complex(-1.0, 0.0)), (complex(0.0, 0.0), 0j),
    (complex(1.5, 0.0), complex(np.expm1(1.5), 0.0)), (complex(_INF, _NAN), complex(_INF, _NAN)),
    (complex(_NAN, 1.0), complex(_NAN, _NAN))]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_expm1_complex_special_cases(dtype):
  with x64(True):
    z = np.array([c for c, _ in _EXPM1_CASES], dtype)
    for out in (jnp.expm1(z), jax.jit(jnp.expm1)(z)):
      np.testing.assert_allclose(np.asarray(out), np.array([e for _, e in _EXPM1_CASES], dtype),
                                 rtol=1e-6)


def test_expm1_complex_matches_jax():
  real = oracle()
  vals = [0.0, -0.0, 1.5, -2.0, _INF, -_INF, _NAN]
  z = np.array([complex(a, b) for a in vals for b in vals], np.complex128)
  z.imag = np.repeat([vals], len(vals), 0).ravel()  # keeps signed zeros
  with x64(True), real.enable_x64(True):
    ours, theirs = np.asarray(jnp.expm1(z)), np.asarray(real.numpy.expm1(z))
  np.testing.assert_allclose(ours, theirs, rtol=1e-12)
  on_axis = z.imag == 0
  assert not np.signbit(ours.imag[on_axis]).any()


_DTYPE_CASES = [  # (function, input dtype, x64, expected dtype, expected value) on [1, 2, 1]
    (jnp.sum, "uint32", True, "uint64", 4), (jnp.sum, "uint32", False, "uint32", 4),
    (jnp.sum, "int32", True, "int64", 4), (jnp.sum, "uint8", False, "uint32", 4),
    (jnp.prod, "uint32", True, "uint64", 2), (jnp.sum, "float16", True, "float16", 4),
    (jnp.cumulative_sum, "uint8", True, "uint64", [1, 3, 4]),
    (jnp.cumulative_sum, "int16", False, "int32", [1, 3, 4]),
    (jnp.cumulative_sum, "bool", True, "int64", [1, 2, 3]),
    (jnp.cumulative_prod, "uint8", True, "uint8", [1, 2, 2]),
    (jnp.cumsum, "uint8", True, "uint8", [1, 3, 4])]


@pytest.mark.parametrize("fn,dtype,enable_x64,expected_dtype,expected", _DTYPE_CASES)
def test_reduction_dtypes(fn, dtype, enable_x64, expected_dtype, expected):
  with x64(enable_x64):
    out = fn(jnp.asarray([1, 2, 1], dtype=dtype))
    assert out.dtype == np.dtype(expected_dtype)
    np.testing.assert_array_equal(out, expected)


def test_cumulative_sum_include_initial_and_scalar():
  with x64(True):
    out = jnp.cumulative_sum(jnp.asarray([1, 2], dtype=jnp.uint8), include_initial=True)
    assert out.dtype == np.uint64 and out.tolist() == [0, 1, 3]
  with pytest.raises(ValueError, match="non-scalar"):
    jnp.cumulative_sum(jnp.asarray(1))


def test_concat_axis_none_accepts_scalars():
  out = jnp.concat([jnp.asarray(0, dtype=jnp.uint8), jnp.asarray([1, 2], dtype=jnp.int8)],
                   axis=None)
  assert out.dtype == np.int16 and out.tolist() == [0, 1, 2]
  with pytest.raises(ValueError, match="Zero-dimensional"):
    jnp.concat([jnp.asarray(0), jnp.asarray(1)], axis=0)
