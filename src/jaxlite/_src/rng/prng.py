"""PRNG keys' primitives (random_seed, random_bits, random_split, random_fold_in, random_wrap,
random_unwrap, threefry2x32), the helpers jax.random binds them through, and typed key arrays.

The key dtype lives in prng_key_dtype.py, the threefry hash and the key operations the
primitives' impls run in prng_threefry.py; their public names are imported here, where the rest
of jaxlite reads them.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core, devices, dtypes
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.base.extended_dtypes import extended  # noqa: F401 -- jaxlite.dtypes reads it
from jaxlite._src.rng.prng_key_dtype import (  # noqa: F401 -- read from here by the rest
    KEY_STORAGE, KeyTy, PRNGImpl, PRNGSpec, is_key_dtype, key_dtype, prng_impls, prng_key,
    resolve_impl, storage_dtype, threefry_impl)
from jaxlite._src.rng.prng_threefry import (  # noqa: F401 -- read from here by the rest
    _UINT, _as_keys, _hash_original, bits_keys, bits_rows, data_from_keys, fold_in_keys,
    key_words, keys_from_data, keys_hash_numpy, seed_keys, split_keys, threefry2x32)

# The key operations of implementations with functions (PRNGImpl.seed is not None): "seed",
# "split", "fold_in", "bits" -> fn(keys or seeds, ..., impl), filled by rng.prng_impls (above
# this module: the functions run under vmap on jnp values). Such keys never bind random_seed,
# random_split, random_fold_in or random_bits: their data goes through random_unwrap, the
# impl's functions and random_wrap, as JAX's impl rules and lowerings run them.
data_impl_ops = {}


def _data_impl(keys):
  """The impl of key array `keys` when it computes on its key data, else None (threefry)."""
  impl = getattr(getattr(keys, "dtype", None), "_impl", None)
  return impl if impl is not None and impl.seed is not None else None


# --- primitives --------------------------------------------------------------------------------

def _check_keys(name: str, aval) -> None:
  if not is_key_dtype(aval.dtype):
    raise TypeError(f"{name} expects a PRNG key array (dtype key<fry>), got "
                    f"{dtypes.dtype_name(aval.dtype)}.")


def _key_prim(name, impl, abstract_eval, multiple_results=False):
  p = core.Primitive(name)
  p.multiple_results = multiple_results
  p.def_impl(impl)
  p.def_abstract_eval(abstract_eval)
  return p


def _seed_abstract(seeds, impl):
  if dtypes.kind_of_dtype(seeds.dtype) not in "iu":
    raise TypeError(f"PRNG key seed must be an integer; got {seeds}")
  return ShapedArray(seeds.shape, KeyTy(impl))


random_seed_p = _key_prim("random_seed", lambda seeds, impl: seed_keys(seeds), _seed_abstract)


def _bits_abstract(keys, bit_width, shape):
  _check_keys("random_bits", keys)
  if bit_width not in _UINT:
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  return ShapedArray(keys.shape + tuple(shape), _UINT[bit_width])


random_bits_p = _key_prim(
    "random_bits", lambda keys, bit_width, shape: bits_keys(_as_keys(keys), bit_width, shape),
    _bits_abstract)


def _split_abstract(keys, shape):
  _check_keys("random_split", keys)
  return ShapedArray(keys.shape + tuple(shape), keys.dtype)


random_split_p = _key_prim(
    "random_split", lambda keys, shape: split_keys(_as_keys(keys), tuple(shape)),
    _split_abstract)


def _fold_in_abstract(keys, msgs):
  _check_keys("random_fold_in", keys)
  if msgs.dtype != dtypes.uint32:
    raise TypeError(f"random_fold_in expects uint32 data, got {dtypes.dtype_name(msgs.dtype)}")
  return ShapedArray(np.broadcast_shapes(keys.shape, msgs.shape), keys.dtype)


random_fold_in_p = _key_prim(
    "random_fold_in", lambda keys, msgs: fold_in_keys(_as_keys(keys), msgs), _fold_in_abstract)


def _wrap_abstract(data, impl):
  if data.dtype != dtypes.uint32:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                    f"got dtype={dtypes.dtype_name(data.dtype)}")
  if data.shape[len(data.shape) - len(impl.key_shape):] != impl.key_shape:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                    f"with {impl.key_shape}; got shape={data.shape} for impl={impl!r}")
  return ShapedArray(data.shape[:-1], KeyTy(impl))


random_wrap_p = _key_prim("random_wrap",
                          lambda data, impl: keys_from_data(np.asarray(data), impl),
                          _wrap_abstract)


def _unwrap_abstract(keys):
  _check_keys("random_unwrap", keys)
  return ShapedArray(keys.shape + keys.dtype._impl.key_shape, dtypes.uint32)


random_unwrap_p = _key_prim("random_unwrap", lambda keys: data_from_keys(_as_keys(keys)),
                            _unwrap_abstract)


def _threefry_abstract(k0, k1, x0, x1):
  for a in (k0, k1, x0, x1):
    if a.dtype != dtypes.uint32:
      raise TypeError(f"threefry2x32 requires uint32 arguments, got "
                      f"{[dtypes.dtype_name(b.dtype) for b in (k0, k1, x0, x1)]}")
  shape = np.broadcast_shapes(k0.shape, k1.shape, x0.shape, x1.shape)
  return [ShapedArray(shape, dtypes.uint32)] * 2


threefry2x32_p = _key_prim("threefry2x32", lambda k0, k1, x0, x1: list(threefry2x32(k0, k1, x0,
                                                                                    x1)),
                           _threefry_abstract, multiple_results=True)


# StableHLO lowering: prng_lowering.py registers the rules of the primitives above (it stands on
# the XLA lowering, above this core module).


# --- binding helpers (what jax.random calls) ---------------------------------------------------

def random_seed(seeds, impl: PRNGImpl):
  if impl.seed is not None:
    return data_impl_ops["seed"](seeds, impl)
  return random_seed_p.bind(seeds, impl=impl)


def random_bits(keys, bit_width: int, shape: tuple):
  if _data_impl(keys) is not None:
    return data_impl_ops["bits"](keys, bit_width, tuple(shape))
  return random_bits_p.bind(keys, bit_width=bit_width, shape=tuple(shape))


def random_split(keys, shape: tuple):
  if _data_impl(keys) is not None:
    return data_impl_ops["split"](keys, tuple(shape))
  return random_split_p.bind(keys, shape=tuple(shape))


def random_fold_in(keys, msgs):
  if _data_impl(keys) is not None:
    return data_impl_ops["fold_in"](keys, msgs)
  return random_fold_in_p.bind(keys, msgs)


def random_wrap(data, impl: PRNGImpl):
  return random_wrap_p.bind(data, impl=impl)


def random_unwrap(keys):
  return random_unwrap_p.bind(keys)


def threefry_2x32(keypair, count):
  """JAX's `threefry_2x32(key, count)`: the non-partitionable hash of a uint32 count array."""
  asarray = _above["asarray"]
  # JAX's checks, before any cast: a pair of keys (its unpacking's ValueError) and uint32 values.
  if np.ndim(keypair) == 0 or len(keypair) != 2:
    raise ValueError(f"threefry_2x32: keypair must be a pair of uint32 values, got {keypair!r}")
  got = [dtypes.dtype_and_weak(x)[0] for x in (keypair[0], keypair[1], count)]
  if any(d != np.uint32 for d in got):
    raise TypeError(f"threefry_2x32 requires uint32 arguments, got {got}")
  key = np.asarray(keypair, np.uint32) if not isinstance(keypair, core.Tracer) else keypair
  if isinstance(key, core.Tracer) or isinstance(count, core.Tracer):
    raise NotImplementedError("threefry_2x32 on traced values: use jax.random.bits")
  return asarray(_hash_original(int(key[0]), int(key[1]), np.asarray(count, np.uint32)))


# --- typed key arrays --------------------------------------------------------------------------

class PRNGKeyArray(core.Array):
  """A concrete array of typed PRNG keys (`dtype=key<fry>`); its value is structured NumPy."""
  __slots__ = ("__weakref__", "_aval", "_dtype", "_value", "_device")
  __array_priority__ = 100

  def __init__(self, value: np.ndarray, dtype: KeyTy = key_dtype, device=None):
    self._value = value
    self._dtype = dtype
    self._aval = None
    if device is None and devices.context_meshes:  # made under `jax.set_mesh`: on its mesh
      device = devices.context_placement(value.ndim)
    self._device = device  # None: uncommitted; else the device `device_put` committed it to

  def _host_value(self) -> np.ndarray:
    """The keys' structured NumPy value (the same accessor as ArrayImpl's)."""
    return self._value

  @property
  def aval(self) -> ShapedArray:
    aval = self._aval
    if aval is None:
      aval = self._aval = ShapedArray(self._value.shape, self._dtype)
    return aval

  dtype = property(lambda self: self._dtype)
  shape = property(lambda self: self._value.shape)
  ndim = property(lambda self: self._value.ndim)
  size = property(lambda self: self._value.size)
  itemsize = property(lambda self: self._dtype.itemsize)
  nbytes = property(lambda self: self._value.size * self._dtype.itemsize)
  weak_type = False
  committed = property(lambda self: self._device is not None)
  is_fully_addressable = True
  def _wrap(self, value) -> PRNGKeyArray:
    return PRNGKeyArray(np.asarray(value), self._dtype, self._device)

  # -- devices -----------------------------------------------------------------------------------
  # Placement as ArrayImpl's (a device or a multi-device sharding over the key shape).
  sharding = property(lambda self: _array_impl().sharding.fget(self))

  def _xla_device(self):
    """None: key arrays keep their structured value on the host (an XLA executable takes and
    returns their ui32 data, copied at the call)."""
    return None

  device = property(lambda self: _array_impl().device.fget(self))
  is_fully_replicated = property(lambda self: _array_impl().is_fully_replicated.fget(self))

  def devices(self) -> set:
    return set(self.sharding.device_set)

  @property
  def addressable_shards(self):
    from jaxlite._src.base import devices
    sharding, seen, out = self.sharding, {}, []
    index_map = sharding.devices_indices_map(self.shape)
    for d in sharding._device_assignment:
      idx = index_map[d]
      key = tuple((s.start, s.stop) for s in idx)
      rid = seen[key] = seen.get(key, -1) + 1
      out.append(devices.Shard(d, idx, rid, PRNGKeyArray(self._value[idx], self._dtype, d)))
    return out

  def block_until_ready(self):
    return self

  def is_deleted(self) -> bool:
    return False

  # -- printing ----------------------------------------------------------------------------------
  def __repr__(self):
    return (f"Array({self.shape}, dtype={self._dtype.name}) overlaying:\n"
            f"{data_from_keys(self._value)}")

  __str__ = __repr__

  def __format__(self, spec):
    return format(repr(self), spec)

  # -- what a key array refuses ------------------------------------------------------------------
  def __array__(self, dtype=None, copy=None):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                    "jax.random.key_data(arr) if you wish to extract the underlying integer "
                    "array.")

  def __hash__(self):
    raise TypeError("unhashable type: 'PRNGKeyArray'")

  def __bool__(self):
    raise TypeError("The truth value of a PRNG key array is not defined.")

  def astype(self, *args, **kwargs):
    raise NotImplementedError("Cannot call abstract method astype")

  def item(self, *args):
    raise NotImplementedError("Cannot call abstract method item")

  @property
  def tolist(self):
    # JAX's key arrays have no tolist at all (hasattr is False); core.Array's is hidden so.
    raise AttributeError("'PRNGKeyArray' object has no attribute 'tolist'")

  # -- comparisons: equal keys have equal data -----------------------------------------------------
  def __eq__(self, other):
    if type(other) is not PRNGKeyArray:
      return _key_op_error("eq", self, other)
    return core.array_from_numpy(self._value == other._value, False)

  def __ne__(self, other):
    if type(other) is not PRNGKeyArray:
      return _key_op_error("ne", self, other)
    return core.array_from_numpy(self._value != other._value, False)

  # -- shape methods act on whole keys -----------------------------------------------------------
  def __len__(self):
    if not self.ndim:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.ndim:
      raise TypeError("iteration over a 0-d key array")
    return (self._wrap(v) for v in self._value)

  def __getitem__(self, idx):
    np_idx = _numpy_index(idx)
    if np_idx is None:  # traced indices: index through jnp like any array
      return _above["getitem"](self, idx)
    return self._wrap(self._value[np_idx])

  def reshape(self, *shape, order="C"):
    shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return self._wrap(self._value.reshape(shape, order=order))

  def ravel(self, order="C"):
    return self._wrap(self._value.ravel(order))

  flatten = ravel

  def squeeze(self, axis=None):
    return self._wrap(self._value.squeeze(axis))

  def transpose(self, *axes):
    axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else (axes or None)
    return self._wrap(self._value.transpose(axes))

  def swapaxes(self, a, b):
    return self._wrap(self._value.swapaxes(a, b))

  T = property(lambda self: self._wrap(self._value.T))

  def copy(self):
    return self._wrap(self._value.copy())

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self.copy()

  def __reduce__(self):
    return (PRNGKeyArray, (self._value, self._dtype))


def _numpy_index(idx):
  """idx when it is basic indexing (ints, slices, None, Ellipsis) that NumPy can apply to the
  keys' values as is; None for anything else (arrays, lists, tracers), which takes jnp's
  indexing path so that key arrays index exactly as other arrays do (out-of-bounds array
  indices clamp, lists are refused)."""
  parts = idx if type(idx) is tuple else (idx,)
  for p in parts:
    if not (p is None or p is Ellipsis or type(p) in (int, slice)
            or isinstance(p, np.integer)):
      return None
  return idx


def _key_op_error(name, *args):
  names = ", ".join(dtypes.dtype_name(getattr(a, "dtype", None) or
                                      dtypes.python_scalar_dtype(a)) for a in args)
  raise TypeError(f"{name} does not accept dtypes {names}.")


def _unary_error(name):
  def op(self):
    raise TypeError(f"{name} does not accept dtype {self._dtype.name}.")
  return op


def _binary_error(name, reflected=False):
  def op(self, other):
    return _key_op_error(name, *((other, self) if reflected else (self, other)))
  return op


for _name, _prim in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                     ("floordiv", "floor_divide"), ("mod", "rem"), ("pow", "pow"),
                     ("and", "and"), ("or", "or"), ("xor", "xor"), ("lshift", "shift_left"),
                     ("rshift", "shift_right_arithmetic"), ("matmul", "dot_general"),
                     ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge")):
  setattr(PRNGKeyArray, f"__{_name}__", _binary_error(_prim))
  if _name not in ("lt", "le", "gt", "ge"):
    setattr(PRNGKeyArray, f"__r{_name}__", _binary_error(_prim, reflected=True))
for _name, _prim in (("neg", "neg"), ("pos", "pos"), ("abs", "abs"), ("invert", "not")):
  setattr(PRNGKeyArray, f"__{_name}__", _unary_error(_prim))


def make_key_array(value: np.ndarray, aval: ShapedArray) -> PRNGKeyArray:
  """The concrete array for a NumPy value of an extended-dtype aval (used by core.make_array):
  structured keys, or key data [..., 2] (what an XLA executable returns, copied to the host)."""
  impl, value = aval.dtype._impl, np.asarray(value)
  if value.dtype.names is None and value.dtype.kind in "ui":  # key data
    return PRNGKeyArray(keys_from_data(value.astype(np.uint32, copy=False), impl), aval.dtype)
  return PRNGKeyArray(np.asarray(value, impl.storage), aval.dtype)


KeyTy._make_array = staticmethod(make_key_array)
core.register(key_array_type=PRNGKeyArray)

# jnp's asarray and traced indexing, registered by numpy.creation/numpy.array_methods at their
# import: keys live at the bottom (dtypes name them), below the numpy layer (issue 29).
_above = {}


def register_above(**fns):
  _above.update(fns)


# --- batching rules: keys are elements, so a batch axis of keys is one more key axis ------------

def register_batching_rules(bt):
  """Installs the key primitives' batching rules; called by interpreters.batching (above)."""

  def leading(prim):  # ops whose keys/data axes lead: batch axis first, output batched at 0
    def rule(vals, dims, **params):
      size = bt.mapped_size(vals, dims)
      return prim.bind(*bt.all_at_front(vals, dims, size), **params), 0
    bt.primitive_batchers[prim] = rule

  for prim in (random_bits_p, random_split_p, random_wrap_p):
    leading(prim)
  for prim in (random_seed_p, random_unwrap_p):
    bt.defvectorized(prim)
  bt.defbroadcasting(threefry2x32_p)

  def fold_in_rule(vals, dims):
    keys, msgs = bt.all_at_front(vals, dims, bt.mapped_size(vals, dims))
    extra = len(keys.shape) - len(msgs.shape)
    if extra > 0:  # per-example msgs broadcast against per-example keys from the right
      msgs = bt._prims().broadcast_in_dim_p.bind(
          msgs, shape=msgs.shape[:1] + (1,) * extra + msgs.shape[1:],
          broadcast_dimensions=(0,) + tuple(range(1 + extra, len(keys.shape))), sharding=None)
    return random_fold_in_p.bind(keys, msgs), 0
  bt.primitive_batchers[random_fold_in_p] = fold_in_rule




def _array_impl():
  from jaxlite._src.base.array import ArrayImpl
  return ArrayImpl


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(random_bits_p, pk.RANDOM, role="random_bits", source=True,
            propagation_rule="per_key")
pk.register(random_split_p, pk.RANDOM, propagation_rule="per_key")
pk.register(random_unwrap_p, pk.RANDOM, propagation_rule="unwrap")
pk.register(random_wrap_p, pk.RANDOM, propagation_rule="wrap")
pk.register(threefry2x32_p, pk.RANDOM, propagation_rule="threefry")
pk.register(random_fold_in_p, pk.ELEMENTWISE)
