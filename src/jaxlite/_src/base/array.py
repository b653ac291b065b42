"""`ArrayImpl`: an immutable array backed by one NumPy buffer on a CPU device.

Construction is the hottest path in eager mode, so `_from_numpy` skips `__init__` checks and the
abstract value is built only when something asks for it.

Data access. The buffer field `_value` (one host buffer today; per-device buffers once arrays
shard) is private to this module and to backend and dispatch code: `compiler/`,
`core.EvalTrace.process_primitive` (eager dispatch), jnp's promotion fast path (`numpy/util.py`:
`dtype_weak`, `ndim_of`, `shape_of`, `promote_args`; `numpy/ufuncs.py`: `add`;
`numpy/array_methods.py`: eager `+ - *`), jit's dispatch
(`transforms/jit_arguments.py`: `leaf_signature`, `numpy_value`; `jit_function.py`: the
all-Array fast path) and the sharded jit's per-call plan (`sharding/partition.py`: the cached
call key and argument values). They read it directly
because on the hottest paths (eager `x + 1`, a cached jit call) an accessor would cost a Python
call per argument. Everything else asks `host_value(x)` (or `x._host_value()`) for the host NumPy
value and builds results with `from_host(value, weak_type, device)`, `like(x, value, weak)`
(placed as `x` is) or `bind_uniform` (a primitive's backend impl without abstract evaluation);
tests/test_array.py checks that no other module reads the field. Shape and dtype come from the
aval once it is known (an array assembled from shards is always built with one), else from the
single buffer.

Placement. `_device` is None for an uncommitted array (on the default device), the device it
was committed to by `device_put`, or a multi-device `Sharding` (a sharded array); eager ops and
jit calls on committed arrays commit their results to the same placement, and committed
arguments on different device sets raise JAX's "Received incompatible devices" ValueError
(`devices.common_device`). Under `jax.set_mesh(mesh)` an Array made fresh is committed to the
mesh, replicated (`devices.context_placement`), as in JAX.

Sharded arrays. On one host the CPU devices share memory, so a sharded Array keeps its global
buffer in `_value` and each device's shard is a view of it (`shard_views`): no copy is made to
split an array, and per-device programs read their views (the SPMD runtime assembles their
outputs back into one buffer). The aval carries the sharding when it splits a dimension over an
Explicit mesh axis (so `typeof` prints `float32[8@x,4]` and jit keys on it).

Arrays over several processes (jaxlite.distributed). A sharding whose devices include other
processes' is not fully addressable. A replicated one still keeps the whole value in `_value`
(every process holds it); otherwise `_value` is a `NON_ADDRESSABLE` placeholder and
`_local_shards` holds this process's shards, (device, index, replica_id, buffer) in device
order, always with `_aval` set: fetching the value (`np.asarray`, `_host_value`, printing it)
raises JAX's RuntimeError, so does any eager use of the sentinel, `shard_views` returns the
local shards, and `multihost_utils.process_allgather` gathers the global value.
"""
from __future__ import annotations

import sys
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import dtypes
from jaxlite._src.sharding import rules


def _xla_device_of(x):
  """The device of an Array whose buffer lives on another backend (an XLA device), else None
  (a function, not a method: typed PRNG key arrays share these properties)."""
  v = x._value
  return v.device if type(v) in core.eager_routes else None


def _staged_rows(x):
  """Rows of a concrete array iterated while staging (make_jaxpr, jit). One made while a trace
  on the stack staged (a tracer in JAX: core.staging_trace) is iterated as JAX iterates a
  tracer: lax.index_in_dim per row, staged, so the array becomes a constvar
  (`lax.dynamic_slice(x, jnp.array([1]), ...)` prints `{ lambda a:i32[1]; ...`). One made
  before is iterated as JAX iterates an Array: one `unstack` of up to 99 rows. For a longer one
  JAX's 100-row chunking computes the chunk count with a staged `divmod` and raises
  TracerIntegerConversionError (0.10.2); jaxlite indexes its rows one by one."""
  owner = core.made_under(x)
  if (owner is None or not owner.alive) and x.shape[0] < 100:
    return iter(core.unstack(x))
  return (core.index_in_dim(x, i, 0, keepdims=False) for i in range(x.shape[0]))


class ArrayImpl(core.Array):
  # `_made_under` (unset on eager Arrays): see core.staging_trace
  __slots__ = ("_value", "weak_type", "_device", "_aval", "_local_shards", "_made_under",
               "__weakref__")
  __array_priority__ = 100

  def __init__(self, value, weak_type: bool = False, device=None):
    value = np.asarray(value)
    canon = dtypes.canonicalize_dtype(value.dtype)
    if canon != value.dtype:
      value = value.astype(canon)
    self._value = value
    self.weak_type = weak_type
    self._device = device
    self._aval = None
    if _trace_state.trace is not _eval_trace:
      _note_staging_trace(self)

  # -- abstract value and metadata -------------------------------------------------------------
  @property
  def aval(self) -> core.ShapedArray:
    aval = self._aval
    if aval is None:
      p = self._device
      typed = p if p is not None and not devices.is_device(p) and \
          devices.sharding_in_type(p) else None
      aval = self._aval = core.ShapedArray(self._value.shape, self._value.dtype, self.weak_type,
                                           typed)
    return aval

  @property
  def shape(self):
    aval = self._aval
    return self._value.shape if aval is None else aval.shape

  @property
  def dtype(self):
    aval = self._aval
    return self._value.dtype if aval is None else aval.dtype

  @property
  def ndim(self):
    aval = self._aval
    return self._value.ndim if aval is None else len(aval.shape)

  size = property(lambda self: self._value.size if self._aval is None else self._aval.size)
  itemsize = property(lambda self: self.dtype.itemsize)
  nbytes = property(lambda self: self.size * self.dtype.itemsize)
  # (an XLA device buffer records its own commitment: `device_put` to an XLA device)
  committed = property(lambda self: self._device is not None or
                       getattr(self._value, "committed", False) is True)

  def _host_value(self) -> np.ndarray:
    """The whole array as one host NumPy value (the accessor everything outside the backend
    uses; with one buffer it is that buffer, never to be written)."""
    v = self._value
    t = type(v)
    if t is np.ndarray:
      return v
    if t is NON_ADDRESSABLE:
      raise RuntimeError(_NON_ADDRESSABLE)
    if t in core.eager_routes:  # a device buffer: its host copy, made once and kept
      return v.host()
    return v

  @property
  def sharding(self):
    d = _xla_device_of(self)
    if d is not None:
      return d.sharding_object()
    p = self._device
    if p is None or devices.is_device(p):
      return devices.SingleDeviceSharding(p or devices.default_device())
    return p

  def devices(self) -> set:
    return set(self.sharding.device_set)

  @property
  def device(self):
    """The device of a single-device array; the sharding of a sharded one (as JAX 0.10)."""
    p = self._device
    if type(self._value) is DeletedBuffer:
      self._value._fail()
    if p is None:
      d = _xla_device_of(self)
      return devices.default_device() if d is None else d
    if devices.is_device(p) or len(p._device_assignment) > 1:
      return p
    return p._device_assignment[0]

  @property
  def is_fully_addressable(self):
    p = self._device
    return p is None or devices.is_device(p) or p.is_fully_addressable

  @property
  def is_fully_replicated(self):
    p = self._device
    return p is None or devices.is_device(p) or p.is_fully_replicated

  @property
  def addressable_shards(self):
    """One `Shard` per device: its index into the global array, its replica number among the
    devices holding the same index, and its data (a view of the global buffer, committed to
    that device)."""
    d = _xla_device_of(self)
    if d is not None:  # one device buffer: the one shard is the array itself
      return [devices.Shard(d, (slice(None),) * self.ndim, 0, self)]
    return [devices.Shard(d, idx, rid, _shard_data(view, self.weak_type, d))
            for d, idx, rid, view in shard_views(self)]

  global_shards = addressable_shards

  def addressable_data(self, index):
    return self.addressable_shards[index].data

  def block_until_ready(self):
    v = self._value
    if type(v) is DeletedBuffer:
      from jaxlite._src.base.errors import JaxRuntimeError
      raise JaxRuntimeError(
          "INVALID_ARGUMENT: BlockHostUntilReady() called on deleted or donated buffer")
    if type(v) in core.eager_routes:  # asynchronous dispatch: wait for the device
      v.block_until_ready()
    return self

  def is_deleted(self) -> bool:
    return type(self._value) is DeletedBuffer

  def delete(self):
    """Frees the buffer (`x.delete()`, and jit's donation): every later use of the Array's data
    raises JAX's RuntimeError; its shape, dtype and sharding stay readable. Idempotent."""
    v = self._value
    if type(v) is DeletedBuffer:
      return
    aval = self.aval
    # A device buffer is freed now unless a call in flight still holds it (jit's donation
    # deletes the Array before running the executable, which XLA then lets write into it).
    # The references counted: `self._value`, the local `v` and getrefcount's argument.
    if type(v) in core.eager_routes and sys.getrefcount(v) <= 3:
      v.delete()
    self._value = DeletedBuffer(aval)  # shape and dtype now come from the aval alone
    self._local_shards = None

  def copy_to_host_async(self):
    v = self._value
    if type(v) in core.eager_routes:  # a device buffer: its device-to-host copy starts now
      v.copy_to_host_async()

  def unsafe_buffer_pointer(self):
    if type(self._value) is DeletedBuffer:
      from jaxlite._src.base.errors import JaxRuntimeError
      raise JaxRuntimeError("INVALID_ARGUMENT: Buffer has been deleted or donated.")
    v = self._value
    if type(v) in core.eager_routes:  # a device buffer: its address on the device
      return v.buf.unsafe_buffer_pointer()
    if type(v) is not np.ndarray:  # a NumPy scalar has no buffer: hold it as a 0-d array
      v = self._value = np.asarray(v)
    return v.ctypes.data

  # -- conversions -----------------------------------------------------------------------------
  def __array__(self, dtype=None, copy=None):
    # NumPy 2's protocol: copy=None shares the buffer if it can, copy=False must share it or
    # raise ValueError, copy=True always copies. A shared buffer goes out as a read-only view
    # so that `np.asarray(x)[0] = 1` cannot mutate the immutable Array.
    v = self._host_value()
    if dtype is not None and np.dtype(dtype) != v.dtype:
      if copy is False:
        raise ValueError(f"__array__: converting a {dtypes.dtype_name(v.dtype)} Array to "
                         f"{np.dtype(dtype)} requires a copy, but copy=False")
      return np.asarray(v).astype(dtype)
    if copy:
      return np.array(v)
    out = v.view() if isinstance(v, np.ndarray) else np.asarray(v)
    out.flags.writeable = False
    return out

  def __bool__(self):
    v = self._host_value()
    if v.size != 1:
      raise ValueError("The truth value of an array with more than one element is ambiguous. "
                       "Use a.any() or a.all()")
    return bool(v)

  def __int__(self):
    return int(self._host_value())

  def __float__(self):
    return float(self._host_value())

  def __complex__(self):
    return complex(self._host_value())

  def __index__(self):
    v = self._host_value()
    if v.ndim or v.dtype.kind not in ("i", "u"):  # JAX's check_integer_conversion: bools too
      raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
    return int(v)

  def __len__(self):
    if not self.ndim:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self._value.ndim:
      raise TypeError("iteration over a 0-d array")
    if getattr(core.current_trace(), "stages_constants", False):
      return _staged_rows(self)
    weak = self.weak_type
    return (_from_numpy(v, weak) for v in self._host_value())

  def __hash__(self):
    raise TypeError("unhashable type: 'ArrayImpl'")

  def __reduce__(self):
    # The buffer, weak type and committed device (None when uncommitted) travel together.
    return (ArrayImpl, (np.asarray(self._value), self.weak_type, self._device))

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return ArrayImpl(np.array(self._value), self.weak_type, self._device)

  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    from jaxlite._src.base import dlpack
    return dlpack.to_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device,
                            copy=copy)

  def __dlpack_device__(self):
    from jaxlite._src.base import dlpack
    return dlpack.dlpack_device(self)

  def item(self, *args):
    return self._host_value().item(*args)

  def tolist(self):
    return self._host_value().tolist()

  def to_py(self):
    return np.asarray(self._host_value())

  def __format__(self, spec):
    v = self._host_value()
    if v.ndim == 0:
      return format(v[()] if isinstance(v, np.ndarray) else v, spec)
    return format(np.asarray(v), spec) if spec else str(self)

  # -- printing --------------------------------------------------------------------------------
  def __str__(self):
    if type(self._value) is NON_ADDRESSABLE:
      return repr(self)
    return str(self._host_value())

  def __repr__(self):
    prefix = "Array("
    d = f"dtype={dtypes.dtype_name(self.dtype)}" + (", weak_type=True" if self.weak_type else "")
    if type(self._value) is NON_ADDRESSABLE:  # other processes hold parts: JAX prints the type
      return f"{prefix}shape={self.shape}, {d})"
    width = np.get_printoptions()["linewidth"]
    if self._value.size == 0:
      s = f"[], shape={self._value.shape}"
    else:
      s = np.array2string(np.asarray(self._value), prefix=prefix, suffix=",", separator=", ",
                          max_line_width=width)
    last_len = len(s) - s.rfind("\n") - 1
    sep = " " if last_len + len(d) + 4 <= width else " " * len(prefix)
    return f"{prefix}{s},{sep}{d})"

  # -- the Array API standard's placement methods -----------------------------------------------
  def to_device(self, device, *, stream=None):
    """A copy committed to `device` (a Device or a Sharding), as JAX's `Array.to_device`."""
    if stream is not None:
      raise NotImplementedError("stream argument of array.to_device()")
    return core.device_put(self, device)


def shard_views(x):
  """(device, index, replica_id, view) for each addressable device of Array `x`'s placement,
  in the sharding's device order; `view` is `x`'s buffer at `index` (no copy)."""
  value = x._value
  if type(value) is NON_ADDRESSABLE:
    return list(x._local_shards)
  partial = getattr(x, "_local_shards", None)
  if partial is not None:  # unreduced over some mesh axes: each device's partial value
    return list(partial)
  out = _global_shards(x.sharding, value.shape, lambda idx: value[idx])
  if not x.is_fully_addressable:
    me = devices.process_index()
    out = [s for s in out if s[0].process_index == me]
  return out


def _global_shards(sharding, shape, data):
  """(device, index, replica_id, data(index)) for every device of `sharding`, in order."""
  index_map = sharding.devices_indices_map(shape)
  seen = {}
  out = []
  for d in sharding._device_assignment:
    idx = index_map[d]
    key = tuple((s.start, s.stop) for s in idx)
    rid = seen.get(key, 0)
    seen[key] = rid + 1
    out.append((d, idx, rid, data(idx) if d.process_index == devices.process_index() else None))
  return out


def from_local_shards(shards, aval, sharding):
  """An Array over a sharding that spans other processes' devices, from this process's shards:
  (device, index, replica_id, NumPy buffer) for each of its addressable devices, in order."""
  a = object.__new__(ArrayImpl)
  a._value = _NonAddressable(aval.shape, aval.dtype)
  a.weak_type = aval.weak_type
  a._device = sharding
  a._aval = aval
  a._local_shards = tuple(shards)
  return a


def is_non_addressable(x) -> bool:
  """Whether Array `x` has shards in other processes (its buffer here is a placeholder)."""
  return type(x._value) is NON_ADDRESSABLE


def sole_owner(x) -> bool:
  """Whether `x` is an unsharded Array whose NumPy buffer nothing but `x` references, so that
  jit's donation may overwrite it. A view (`base` set) may share memory with anything; a buffer
  with other references (another Array, a user's `np.asarray(x)` view, a compiled constant)
  is shared. Sharded Arrays are never reused (as JAX: donated, deleted, not aliased)."""
  if type(x) is not ArrayImpl:
    return False
  d = x._device
  if d is not None and not devices.is_device(d):
    return False
  v = x._value
  if type(v) in core.eager_routes:  # a device buffer: XLA writes into it only when donated
    return True
  if type(v) is not np.ndarray or v.base is not None or not v.flags.writeable \
      or not v.flags.c_contiguous:
    return False
  # The references counted: `x._value`, the local `v` and getrefcount's argument.
  return sys.getrefcount(v) <= 3


def host_value(x) -> np.ndarray:
  """The host NumPy value of an ArrayImpl (see the module docstring: the accessor)."""
  v = x._value
  # a device buffer (an XLA array) or shards elsewhere: the accessor's host copy or error
  return v if type(v) is np.ndarray else x._host_value()


def _shard_data(view, weak_type, device):
  """A shard's data: a view of the global buffer committed to `device`; on an XLA device, a
  device buffer there (`XlaDevice._device_put`)."""
  if type(device) is not devices.CpuDevice and hasattr(device, "_device_put"):
    return device._device_put(_from_numpy(np.ascontiguousarray(view), weak_type))
  return from_host(view, weak_type, device)


def from_host(value, weak_type=False, device=None):
  """An Array of a canonical-dtype NumPy value, committed to `device` when one is given. Over
  a sharding that spans other processes (not replicated), `value` is the global value, the
  same in every process, of which this process keeps its shards."""
  # (a device, the NumPy backend's or an XLA one, is addressable; a sharding may not be)
  if device is not None and type(device) is not devices.CpuDevice and \
      not getattr(device, "is_fully_addressable", True) and not device.is_fully_replicated:
    aval = core.ShapedArray(value.shape, value.dtype, weak_type,
                            device if devices.sharding_in_type(device) else None)
    return from_local_shards(
        [s[:3] + (np.array(s[3]),) for s in _global_shards(device, value.shape,
                                                           lambda idx: value[idx])
         if s[0].process_index == devices.process_index()], aval, device)
  a = _from_numpy(value, weak_type)
  if device is not None:  # (else uncommitted, or over the context mesh: `_from_numpy`)
    a._device = device
  return a


def is_sharded(x) -> bool:
  """Whether Array `x` lives on a multi-device sharding (eager NumPy fast paths that cannot
  tell the result's layout step aside for the primitives and their sharding rules)."""
  d = x._device
  return d is not None and not devices.is_device(d)


def numpy_eager(x) -> bool:
  """Whether an eager NumPy fast path may compute on Array `x` itself: NumPy is the default
  backend (`core.default_eager_route` unset) and `x`'s buffer is a NumPy value. Otherwise the
  caller takes the general path, whose one dispatch (`core.EvalTrace.process_primitive`)
  routes the application to the backend that owns the buffer."""
  return core.default_eager_route is None and core.numpy_buffer(x._value)


def like(x, value, weak_type):
  """A result computed in NumPy from Array `x` alone (an eager fast path), placed as `x` is."""
  a = _from_numpy(value, weak_type)
  if x._device is not None:  # (else uncommitted, or over the context mesh: `_from_numpy`)
    a._device = x._device
  return a


def bind_uniform(primitive, arrays, **params):
  """An eager bind of `primitive` on concrete Arrays of one dtype and weak type, without its
  abstract evaluation (the eager fast path of joins; the impl's NumPy ValueError stands for a
  shape error), placed as `core.EvalTrace` would place it. None when an argument is not a
  concrete Array or dtypes or weak types differ: the caller takes the general path."""
  first = arrays[0]
  if type(first) is not ArrayImpl or core.default_eager_route is not None:
    return None
  dtype, weak, device = first._value.dtype, first.weak_type, None
  for a in arrays:
    if type(a) is not ArrayImpl:
      return None
    v = a._value  # (core.numpy_buffer's test inline: one Python call fewer per operand)
    if type(v) is not np.ndarray and not isinstance(v, np.generic) or v.dtype != dtype \
        or a.weak_type != weak:
      return None  # another backend's buffer, or shards in other processes: the general path
    if a._device is not None:
      device = primitive_device(primitive, arrays)
  out = _from_numpy(primitive.impl(*[a._value for a in arrays], **params), weak)
  if device is None:
    return out
  return place_outputs(out, device, primitive, arrays, params)


def committed_device(args):
  """The device shared by the committed Arrays among `args` (None if none), or JAX's error:
  for eager fast paths that compute several Arrays' result in NumPy."""
  for a in args:
    if getattr(a, "_device", None) is not None:
      return devices.common_device(args, lambda: [f"args[{i}]" for i in range(len(args))],
                                   "jit")
  return None


def place_outputs(out, device, primitive=None, args=None, params=None):
  """Commits freshly made results (an Array or a list of them) to `device` (a device or a
  multi-device sharding). On a multi-device sharding a result keeps the placement its type gave
  it (`_from_numpy_aval`), else the one `primitive`'s sharding rule gives it
  (`devices.output_placements`), else is replicated over the same devices."""
  multi = device is not None and not devices.is_device(device)
  outs = out if type(out) is list else (out,)
  placements = None
  # A result the context mesh placed (`_from_numpy`) is placed here as an unplaced one is; if
  # that placement is replicated it keeps the context's (JAX: P(None, ...), not P()).
  ctx = [(type(a) is ArrayImpl or type(a) is core.key_array_type) and a._device is not None
         and is_context_placement(a._device, a.ndim) for a in outs] if devices.context_meshes else \
      [False] * len(outs)
  if multi and primitive is not None and any(
      (type(a) is ArrayImpl or type(a) is core.key_array_type)
      and (a._device is None or c) and a._aval is None for a, c in zip(outs, ctx)):
    placements = devices.output_placements(device, outs, primitive, args, params)
  for i, a in enumerate(outs):
    if type(a) is ArrayImpl or type(a) is core.key_array_type:
      if not multi:
        a._device = device
      elif ctx[i]:
        p = placements[i] if placements is not None and a._aval is None else \
            devices.output_placement(device, a.shape)
        if not getattr(p, "is_fully_replicated", False) or \
            devices.placement_devices(p) != devices.placement_devices(a._device):
          a._device = p
      elif a._device is not None:
        pass  # placed by its type (`_from_numpy_aval`)
      elif a._aval is not None and a._aval.sharding is not None:
        a._device = rules.concrete_sharding(a._aval.sharding, device) or \
            devices.output_placement(device, a.shape)
      elif placements is not None:
        a._device = placements[i]
      else:
        a._device = devices.output_placement(device, a.shape)
  return out


def primitive_device(primitive, args):
  """The device of an eager primitive's committed arguments (JAX's error if they disagree)."""
  return devices.common_device(
      args, lambda: devices.primitive_arg_names(primitive, len(args)), primitive.name)


def place_off_mesh(out, primitive, params, n_args):
  """Results (an Array or a list of them) of `primitive` on `n_args` operands on no mesh, made
  under `jax.set_mesh`: see `replicate_off_mesh`, the types' meshes by the primitive's rule."""
  outs = out if type(out) is list else [out]
  if any(_on_context_mesh(a) for a in outs):
    replicate_off_mesh(outs, rules.results_name_mesh(primitive, params, len(outs),
                                                     [False] * n_args))
  return out


def replicate_off_mesh(outs, named) -> None:
  """Of fresh results made under `jax.set_mesh` (placed on its mesh as P(None, ...) by
  `_from_numpy`), those whose type names no mesh (`named`, one bool each: False for a unary
  op's or a reduction's on operands on no mesh, `rules.results_name_mesh`) are placed as JAX
  reads XLA's layout of them back: replicated, P()."""
  for a, n in zip(outs, named):
    if not n and _on_context_mesh(a):
      a._device = a._device._replicated()


def _on_context_mesh(a) -> bool:
  return (type(a) is ArrayImpl or type(a) is core.key_array_type) and \
      is_context_placement(a._device, a.ndim)


def off_context_mesh(x) -> bool:
  """Whether Array `x` is committed to one device while `jax.set_mesh` has set a mesh: a
  computation on it raises JAX's incompatible-devices error unless the mesh is that device
  alone, so eager fast paths that compute in NumPy leave it to the dispatch that checks
  (`devices.common_device`)."""
  return bool(devices.context_meshes) and x._device is not None and \
      devices.is_device(x._device)


def is_context_placement(p, ndim) -> bool:
  """Whether placement `p` is the one the context mesh (`devices.context_placement`) gave a
  fresh Array of rank `ndim` (rather than its arguments', a sharding rule's or its type's)."""
  return devices.context_meshes and p is devices.context_placement(ndim)


def _eager_from_numpy(value, weak_type=False):
  """Wraps a NumPy result whose dtype is already canonical, computed eagerly (eager dispatch's
  results, `core.host_array_from_numpy`; a jit call's): no staging trace to record."""
  a = object.__new__(ArrayImpl)
  a._value = value
  a.weak_type = weak_type
  # (under `jax.set_mesh`, on its mesh: with none set, one test more)
  a._device = None if not devices.context_meshes else devices.context_placement(value.ndim)
  a._aval = None
  return a


def _from_numpy(value, weak_type=False):
  """Wraps a NumPy value whose dtype is already canonical: an Array made by a creation function
  (jnp.array...), which may run while a trace stages (core.staging_trace). Reading the current
  trace costs a thread-local lookup, which eager dispatch's results skip (_eager_from_numpy)."""
  a = object.__new__(ArrayImpl)
  a._value = value
  a.weak_type = weak_type
  a._device = None if not devices.context_meshes else devices.context_placement(value.ndim)
  a._aval = None
  if _trace_state.trace is not _eval_trace:
    _note_staging_trace(a)
  return a


_trace_state = core._state
_eval_trace = core.eval_trace


def _note_staging_trace(a):
  """Records on a fresh Array the staging trace it is made under, if any (core.staging_trace)."""
  owner = core.staging_trace(_trace_state.trace)
  if owner is not None:
    a._made_under = weakref.ref(owner)


def _from_numpy_aval(value, aval):
  if value.dtype != aval.dtype:
    if getattr(aval.dtype, "_rules", None) is not None:
      # a user extended dtype (extended_dtypes.py): the physical value, typed by its aval
      out = _from_numpy(value, aval.weak_type)
      out._aval = aval
      return out
    if hasattr(aval.dtype, "_is_extended"):  # typed PRNG keys: see prng.PRNGKeyArray
      out = aval.dtype._make_array(value, aval)
      if aval.sharding is not None:
        _place_by_type(out, aval.sharding)
      return out
    value = np.asarray(value, aval.dtype) if aval.dtype != dtypes.float0 else \
        np.zeros(value.shape, dtypes.float0)
  out = _eager_from_numpy(value, aval.weak_type)  # (core.make_array: eager results)
  if aval.sharding is not None:
    _place_by_type(out, aval.sharding)
  return out


def _place_by_type(a, sharding):
  """A result whose type carries a sharding lives on it (over the concrete mesh: a type may
  name an AbstractMesh, matched with the mesh `set_mesh` set)."""
  from jaxlite._src.sharding import rules
  a._device = rules.concrete_sharding(sharding)
  if a._device is None and type(a) is ArrayImpl:
    # No concrete mesh to name yet (a type over an AbstractMesh): the type is kept, and
    # `place_outputs` places the result over the mesh of the computation's arguments.
    a._aval = core.ShapedArray(a._value.shape, a._value.dtype, a.weak_type, sharding)


_NON_ADDRESSABLE = (
    "Fetching value for `jax.Array` that spans non-addressable (non process local) devices is "
    "not possible. You can use `jax.experimental.multihost_utils.process_allgather` to print "
    "the global array or use `.addressable_shards` method of jax.Array to inspect the "
    "addressable (process local) shards.")



class _NonAddressable:
  """The `_value` of an Array whose shards live in several processes: code that reads buffers
  directly (eager dispatch, jnp's fast paths, jit's dispatch) meets this instead of a NumPy
  array. It answers the metadata those paths read (shape, dtype, ndim, size), so they go on to
  the primitives, which run partitioned over the global mesh (distributed/sharded_jit.py); any
  read of the data raises JAX's RuntimeError. Test for it with `type(v) is NON_ADDRESSABLE`."""
  __slots__ = ("shape", "dtype")

  def __init__(self, shape, dtype):
    self.shape, self.dtype = tuple(shape), dtype

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape)))
  itemsize = property(lambda self: self.dtype.itemsize)
  nbytes = property(lambda self: self.size * self.dtype.itemsize)

  def _fail(self, *args, **kwargs):
    raise RuntimeError(
        _NON_ADDRESSABLE + " (jaxlite: read its `.addressable_shards`, or gather it with "
        "`multihost_utils.process_allgather`)")

  def __repr__(self):
    return "<non-addressable buffer>"

  def __getattr__(self, name):
    self._fail()


# The special methods NumPy and Python look up on a buffer's type (never through __getattr__).
_BUFFER_DUNDERS = (
    "__array__", "__array_ufunc__", "__array_function__", "__getitem__", "__len__", "__iter__",
    "__bool__", "__int__", "__float__", "__complex__", "__index__", "__neg__", "__pos__",
    "__abs__", "__invert__",
    *(f"__{r}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                "matmul", "and", "or", "xor", "lshift", "rshift")
      for r in ("", "r")),
    "__lt__", "__le__", "__gt__", "__ge__")
for _name in _BUFFER_DUNDERS:
  setattr(_NonAddressable, _name, _NonAddressable._fail)
NON_ADDRESSABLE = _NonAddressable  # the type of such a `_value`


class DeletedBuffer:
  """The `_value` of a deleted (or donated) Array. Like `NON_ADDRESSABLE`, the direct buffer
  readers (eager dispatch, jnp's fast paths, jit's dispatch) meet it instead of a NumPy array:
  any use raises JAX's RuntimeError "Array has been deleted with shape=float32[3].", at no cost
  to the paths that never meet it."""
  __slots__ = ("_aval",)

  def __init__(self, aval):
    self._aval = aval  # the message is written only when a use fails

  def _fail(self, *args, **kwargs):
    raise RuntimeError(
        f"Array has been deleted with shape={self._aval.str_short(short_dtypes=False)}.")

  def __repr__(self):
    return "<deleted buffer>"

  def __getattr__(self, name):
    self._fail()


for _name in _BUFFER_DUNDERS + ("__str__", "__format__", "__eq__", "__ne__", "__reduce__"):
  setattr(DeletedBuffer, _name, DeletedBuffer._fail)

core.register(array_type=ArrayImpl, array_from_numpy=_from_numpy,
              host_array_from_numpy=_eager_from_numpy, make_array=_from_numpy_aval,
              primitive_device=primitive_device, place_outputs=place_outputs,
              place_off_mesh=place_off_mesh, non_addressable=_NonAddressable)


def make_array_from_value(value, aval):
  return _from_numpy_aval(value, aval)
