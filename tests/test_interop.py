"""Arrays crossing library boundaries: DLPack both ways, NumPy's `__array__` protocol, pickling,
`copy.deepcopy` and `device_put` of host values, checked for values and for shared memory."""
import copy
import pickle

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle, x64


def _buffer(x):
  return x._value  # the NumPy buffer behind a concrete Array


# ---- DLPack: jaxlite -> NumPy ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "float16", "float32",
                                   "complex64"])
def test_numpy_from_dlpack_shares_memory_read_only(dtype):
  x = jnp.asarray(np.arange(6).reshape(2, 3) % 2, dtype=dtype)
  y = np.from_dlpack(x)  # NumPy asks for a DLPack 1.x capsule, which can say "read-only"
  np.testing.assert_array_equal(y, np.asarray(np.arange(6).reshape(2, 3) % 2, dtype))
  assert y.dtype == np.dtype(dtype)
  assert np.shares_memory(y, _buffer(x))
  assert not y.flags.writeable
  with pytest.raises(ValueError, match="read-only"):
    y[0, 0] = 1


def test_numpy_from_dlpack_copy_true_does_not_share():
  x = jnp.arange(4.0)
  y = np.from_dlpack(x, copy=True)
  np.testing.assert_array_equal(y, [0., 1., 2., 3.])
  assert not np.shares_memory(y, _buffer(x))


def test_dlpack_of_strided_and_scalar_arrays():
  x = jnp.arange(12).reshape(3, 4).T  # transposed: a non-contiguous result
  np.testing.assert_array_equal(np.from_dlpack(x), np.arange(12).reshape(3, 4).T)
  s = jnp.float32(2.5)
  assert np.from_dlpack(s).shape == () and np.from_dlpack(s)[()] == np.float32(2.5)


def test_legacy_capsule_without_max_version():
  x = jnp.arange(3, dtype=jnp.int32)
  assert type(x.__dlpack__()).__name__ == "PyCapsule"
  assert type(x.__dlpack__(max_version=(1, 0))).__name__ == "PyCapsule"
  assert type(x.__dlpack__(copy=True)).__name__ == "PyCapsule"


def test_dlpack_device_and_signature():
  x = jnp.ones(3)
  assert x.__dlpack_device__() == (1, 0)  # (kDLCPU, device 0), as JAX reports
  assert x.__dlpack__(dl_device=(1, 0), copy=False) is not None
  # A consumer naming a stream (a GPU notion) or a non-CPU device is refused as in JAX.
  with pytest.raises(RuntimeError, match="stream"):
    x.__dlpack__(stream=1)
  with pytest.raises(BufferError, match="DLDeviceType: 2"):
    x.__dlpack__(dl_device=(2, 0))
  with pytest.raises(TypeError):
    x.__dlpack__(None)  # the standard's arguments are keyword-only


def test_dlpack_unsupported_dtype():
  ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs the ml_dtypes package")
  x = jnp.ones(2, dtype=ml_dtypes.bfloat16)
  with pytest.raises(BufferError, match="bfloat16"):
    x.__dlpack__()


# ---- DLPack: NumPy -> jaxlite ------------------------------------------------------------------

@pytest.mark.parametrize("from_dlpack", [jnp.from_dlpack, jax.dlpack.from_dlpack],
                         ids=["jnp", "jax.dlpack"])
def test_from_dlpack_is_zero_copy(from_dlpack):
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  x = from_dlpack(a)
  assert isinstance(x, jax.Array) and x.dtype == np.float32 and x.shape == (2, 3)
  assert np.shares_memory(_buffer(x), a)
  np.testing.assert_array_equal(x, a)
  assert not x.weak_type and not x.committed


def test_from_dlpack_copy_and_device():
  a = np.arange(4, dtype=np.int32)
  x = jnp.from_dlpack(a, copy=True)
  assert not np.shares_memory(_buffer(x), a)
  np.testing.assert_array_equal(x, a)
  y = jax.dlpack.from_dlpack(a, device=jax.devices()[0])
  assert y.committed and y.device == jax.devices()[0]
  z = jax.dlpack.from_dlpack(a, device=jax.sharding.SingleDeviceSharding(jax.devices()[0]))
  assert z.committed


def test_from_dlpack_canonicalizes_without_x64():
  a = np.arange(3, dtype=np.float64)
  with x64(False):
    x = jnp.from_dlpack(a)
    assert x.dtype == np.float32  # JAX casts to the canonical dtype, which copies
    with pytest.raises(ValueError, match="copy=False"):
      jnp.from_dlpack(a, copy=False)
  with x64(True):
    y = jnp.from_dlpack(a, copy=False)
    assert y.dtype == np.float64 and np.shares_memory(_buffer(y), a)


def test_from_dlpack_round_trip_between_arrays():
  x = jnp.linspace(0, 1, 5)
  y = jnp.from_dlpack(x)
  np.testing.assert_array_equal(y, x)
  assert np.shares_memory(_buffer(y), _buffer(x))


def test_from_dlpack_rejects_non_dlpack_objects():
  with pytest.raises(TypeError, match="__dlpack__"):
    jnp.from_dlpack([1, 2, 3])


@pytest.mark.parametrize("dtype,supported", [
    ("float32", True), ("int64", True), ("bool", True), ("complex128", True), ("uint8", True),
    ("float16", True), ("<U3", False), ("object", False)])
def test_is_supported_dtype(dtype, supported):
  assert jax.dlpack.is_supported_dtype(dtype) is supported


def test_is_supported_dtype_rejects_none():
  with pytest.raises(TypeError, match="dtype=None"):
    jax.dlpack.is_supported_dtype(None)


def test_torch_round_trip():
  torch = pytest.importorskip("torch", reason="PyTorch is not installed")
  t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
  x = jnp.from_dlpack(t)
  np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))
  assert np.shares_memory(_buffer(x), t.numpy())
  back = torch.from_dlpack(jnp.arange(4, dtype=jnp.int32))
  assert back.tolist() == [0, 1, 2, 3] and back.dtype == torch.int32


# ---- NumPy's __array__ protocol ----------------------------------------------------------------

def test_asarray_is_a_read_only_view():
  x = jnp.arange(4.0)
  a = np.asarray(x)
  assert np.shares_memory(a, _buffer(x)) and not a.flags.writeable
  with pytest.raises(ValueError, match="read-only"):
    a[0] = 5.0
  np.testing.assert_array_equal(x, [0., 1., 2., 3.])  # immutability held


def test_asarray_of_committed_array_is_zero_copy():
  x = jax.device_put(jnp.arange(3), jax.devices()[0])
  assert x.committed
  assert np.shares_memory(np.asarray(x), _buffer(x))


@pytest.mark.parametrize("copy,dtype,shares", [
    (None, None, True), (False, None, True), (True, None, False),
    (None, "float64", False), (True, "float32", False), (False, "float32", True)])
def test_array_protocol_copy_semantics(copy, dtype, shares):
  x = jnp.arange(3, dtype=jnp.float32)
  a = np.array(x, dtype=dtype, copy=copy)
  np.testing.assert_array_equal(a, [0., 1., 2.])
  assert a.dtype == np.dtype(dtype or "float32")
  assert np.shares_memory(a, _buffer(x)) is shares
  if not shares:
    assert a.flags.writeable  # a copy belongs to the caller


def test_array_protocol_copy_false_raises_when_a_cast_is_needed():
  x = jnp.arange(3, dtype=jnp.int32)
  with pytest.raises(ValueError):
    np.array(x, dtype=np.float64, copy=False)
  with pytest.raises(ValueError, match="copy=False"):
    x.__array__(np.float64, copy=False)


def test_array_protocol_matches_jax():
  jax_real = oracle()
  for conv in (np.asarray, lambda v: np.array(v, copy=False), lambda v: np.array(v)):
    ours, theirs = conv(jnp.arange(3.0)), conv(jax_real.numpy.arange(3.0))
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype and ours.flags.writeable == theirs.flags.writeable


# ---- pickling and deepcopy ---------------------------------------------------------------------

def _roundtrips(v):
  return [("pickle", pickle.loads(pickle.dumps(v))), ("deepcopy", copy.deepcopy(v))]


@pytest.mark.parametrize("make", [
    lambda: jnp.arange(6.0).reshape(2, 3),
    lambda: jnp.asarray(2.5),  # weak-typed scalar
    lambda: jnp.array([1, 2], dtype=jnp.uint8),
    lambda: jnp.array([1 + 2j]),
    lambda: jax.jit(lambda a: a * 2 + 1)(jnp.arange(3)),
    lambda: jax.device_put(jnp.ones(2), jax.devices()[0]),
], ids=["f32", "weak-scalar", "u8", "c64", "jit-result", "committed"])
def test_arrays_pickle_and_deepcopy(make):
  x = make()
  for how, y in _roundtrips(x):
    assert type(y) is type(x), how
    np.testing.assert_array_equal(y, x)
    assert (y.dtype, y.shape, y.weak_type, y.committed) == \
        (x.dtype, x.shape, x.weak_type, x.committed), how
    assert not np.shares_memory(_buffer(y), _buffer(x)), how


def test_raw_prng_keys_pickle_and_deepcopy():
  k = jax.random.PRNGKey(7)
  for _, k2 in _roundtrips(k):
    np.testing.assert_array_equal(k2, k)
    np.testing.assert_array_equal(jax.random.normal(k2, (3,)), jax.random.normal(k, (3,)))


def test_typed_prng_keys_pickle_and_deepcopy():
  k = jax.random.split(jax.random.key(7), 3)
  for how, k2 in _roundtrips(k):
    assert k2.dtype == k.dtype and k2.shape == (3,), how
    np.testing.assert_array_equal(jax.random.key_data(k2), jax.random.key_data(k))
    np.testing.assert_array_equal(jax.random.uniform(k2[1]), jax.random.uniform(k[1]))


def test_shardings_and_devices_pickle_and_deepcopy():
  dev = jax.devices()[0]
  s = jax.sharding.SingleDeviceSharding(dev)
  for _, s2 in _roundtrips(s):
    assert s2 == s and s2.device_set == {dev}
  for _, d2 in _roundtrips(dev):
    assert d2 == dev


def test_pytree_of_arrays_pickles():
  tree = {"w": jnp.ones((2, 2)), "b": [jnp.zeros(2), jnp.int32(3)]}
  back = pickle.loads(pickle.dumps(tree))
  for a, b in zip(jax.tree_util.tree_leaves(tree), jax.tree_util.tree_leaves(back)):
    np.testing.assert_array_equal(a, b)
    assert a.dtype == b.dtype


# ---- device_put of host values -----------------------------------------------------------------

_DEVICE_PUT_CASES = [
    (np.arange(3.0), "float32", False, (3,)),
    ([1, 2], None, None, None),  # a list is a pytree: each element becomes an Array
    (1.5, "float32", True, ()),
    (3, "int32", True, ()),
    (True, "bool", False, ()),
    (np.float32(2), "float32", False, ()),
    (np.arange(4, dtype=np.int8), "int8", False, (4,)),
]


@pytest.mark.parametrize("value,dtype,weak,shape", _DEVICE_PUT_CASES,
                         ids=["ndarray", "list", "float", "int", "bool", "np-scalar", "int8"])
@pytest.mark.parametrize("committed", [False, True])
def test_device_put_host_values(value, dtype, weak, shape, committed):
  device = jax.devices()[0] if committed else None
  out = jax.device_put(value, device)
  if isinstance(value, list):
    assert isinstance(out, list) and [int(o) for o in out] == value
    assert all(o.dtype == np.int32 and o.weak_type and o.committed is committed for o in out)
    return
  assert isinstance(out, jax.Array)
  assert (out.dtype, out.weak_type, out.shape, out.committed) == \
      (np.dtype(dtype), weak, shape, committed)
  np.testing.assert_array_equal(out, np.asarray(value, dtype))


def test_device_put_copies_numpy_input():
  a = np.arange(3.0)
  x = jax.device_put(a)
  a[0] = 9.0  # the caller keeps ownership of its buffer
  np.testing.assert_array_equal(x, [0., 1., 2.])


def test_device_put_of_arrays():
  x = jnp.arange(2)
  assert jax.device_put(x) is x  # nothing to move, as in JAX
  y = jax.device_put(x, jax.devices()[0])
  assert y is not x and y.committed and not x.committed
  np.testing.assert_array_equal(y, x)
  z = x.to_device(jax.devices()[0])
  assert z.committed and z.device == jax.devices()[0]


def test_device_put_matches_jax():
  real = oracle()
  for value in [np.arange(3.0), 1.5, 3, True, np.float32(2), [1, 2.0]]:
    ours = jax.tree_util.tree_leaves(jax.device_put(value))
    theirs = real.tree_util.tree_leaves(real.device_put(value))
    for a, b in zip(ours, theirs):
      assert (a.dtype, a.weak_type, a.shape) == (b.dtype, b.weak_type, b.shape)
      np.testing.assert_array_equal(a, b)
