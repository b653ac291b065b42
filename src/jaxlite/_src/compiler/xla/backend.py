"""The XLA backend: closed jaxprs compiled by XLA through a PJRT client, run on device buffers.

One `XlaBackend` per platform ("xla" is the CPU client's; "xla:tpu", "xla:cuda", ... the
accelerators'). Its buffers are `DeviceBuffer`s: a jaxlib array on one device plus the host copy,
made only when asked for (`np.asarray`, printing) and then kept. Executables run asynchronously:
a call returns as soon as XLA has enqueued the work; `block_until_ready` waits.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import devices as devices_lib
from jaxlite._src.base import dtypes
from jaxlite._src.base.errors import JaxRuntimeError
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.xla import client as client_lib
from jaxlite._src.compiler.xla import compile_cache
from jaxlite._src.compiler.xla import lowering
from jaxlite._src.compiler.xla import spmd


class _Aval:
  """The aval jaxlib's arrays carry (shape, dtype, weak type): a plain object, so that jaxlib
  never builds JAX's own (which would import `jax`)."""
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type=False):
    self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type


_sharding_class = None


def _sharding_type():
  """jaxlib's SingleDeviceSharding with the Python-side methods its transfer and result code
  calls (JAX defines them on its own subclass; these are what one device needs)."""
  global _sharding_class
  if _sharding_class is None:
    _jax, xc = client_lib.jax_ext(), client_lib.xla_client()

    class _OneDevice(_jax.SingleDeviceSharding):
      def _to_xla_hlo_sharding(self, ndim):
        return xc.HloSharding.replicate()

      memory_kind = property(lambda self: None)
      _device_assignment = property(lambda self: (self._device,))
      device_set = property(lambda self: {self._device})
      is_fully_replicated = property(lambda self: True)
      is_fully_addressable = property(lambda self: True)

      def is_equivalent_to(self, other, ndim):
        return getattr(other, "_device", None) == self._device
    _sharding_class = _OneDevice
  return _sharding_class


class XlaDevice(devices_lib.Device):
  """A device of a PJRT client, printed as JAX prints it (`CpuDevice(id=0)`, `TpuDevice(id=0,
  ...)`)."""
  __slots__ = ("pjrt", "platform", "id", "device_kind", "process_index", "_sharding", "backend")

  def __init__(self, pjrt, backend):
    self.pjrt = pjrt
    self.platform = pjrt.platform if pjrt.platform != "gpu" else backend.platform
    self.id = pjrt.id
    self.device_kind = pjrt.device_kind
    self.process_index = pjrt.process_index
    self.backend = backend
    self._sharding = None

  @property
  def sharding(self):
    s = self._sharding
    if s is None:
      s = self._sharding = _sharding_type()(self.pjrt)
    return s

  host_id = property(lambda self: self.process_index)
  client = property(lambda self: self.pjrt.client)

  def memory_stats(self):
    return self.pjrt.memory_stats()

  def sharding_object(self):
    """`Array.sharding` of an array on this device (jaxlite's SingleDeviceSharding)."""
    return devices_lib.SingleDeviceSharding(self)

  def _device_put(self, arr):
    """`jax.device_put(x, device)`: an Array's buffer copied device to device, a host value
    transferred."""
    v = getattr(arr, "_value", None)
    if isinstance(v, DeviceBuffer):
      # on this device already: the same buffer, committed (deleting either deletes both, as
      # JAX's aliasing device_put)
      buf = _wrap(type(v), v.buf, v.shape, v.dtype, self) if v.device == self else \
          self.backend.copy_to(v, self)
      buf._host = v._host
    else:
      buf = self.backend.to_device(arr._host_value() if hasattr(arr, "_host_value") else
                                   np.asarray(arr), self)
    buf.committed = True
    out = core.make_array(buf, core.ShapedArray(buf.shape, buf.dtype,
                                                getattr(arr, "weak_type", False)))
    out._device = self  # committed, as JAX's device_put commits (jit and eager ops follow it)
    return out

  coords = property(lambda self: getattr(self.pjrt, "coords", None))

  def memory(self, kind=None):
    return self.pjrt.default_memory() if kind is None else self.pjrt.memory(kind)

  def addressable_memories(self):
    return self.pjrt.addressable_memories()

  def __repr__(self):
    return repr(self.pjrt)

  def __str__(self):  # `cpu:0`, as JAX's devices print with str()
    return str(self.pjrt)

  def __eq__(self, other):
    return type(other) is XlaDevice and other.pjrt == self.pjrt

  def __hash__(self):
    return hash((XlaDevice, self.platform, self.id))

  def __reduce__(self):  # pickled by name (meshes of XLA devices pickle, as jaxlite's do)
    return (_device_by_id, (self.backend.platform, self.id))


def _device_by_id(platform, device_id):
  return next(d for d in get_xla_backend(platform).devices() if d.id == device_id)


class DeviceBuffer:
  """An XLA array on one device, the `_value` of an Array on an XLA device. `host()` copies it
  to host memory once and keeps the copy (arrays are immutable)."""
  __slots__ = ("buf", "shape", "dtype", "device", "_host", "committed", "__weakref__")

  def __init__(self, buf, shape, dtype, device):
    self.buf, self.shape, self.dtype, self.device = buf, tuple(shape), np.dtype(dtype), device
    self._host = None
    self.committed = False  # put on its device by `device_put(x, device)` (JAX's committed)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  def host(self) -> np.ndarray:
    h = self._host
    if h is None:
      h = self._host = self.device.backend.to_host(self)
    return h

  def __array__(self, dtype=None, copy=None):
    h = self.host()
    return h if dtype is None else h.astype(dtype)

  def copy_to_host_async(self) -> None:
    if self._host is None:
      self.device.backend.copy_to_host_async(self)

  def is_deleted(self) -> bool:
    return self.buf.is_deleted()

  def block_until_ready(self):
    self.buf.block_until_ready()
    return self

  def delete(self):
    self.buf.delete()

  def __repr__(self):
    return f"DeviceBuffer({self.shape}, {self.dtype}, {self.device})"


_NUMPY_SCALARS = frozenset(np.dtype(c).type for c in "?bhilqBHILQefdgFDG")


def _wrap(buffer_type, buf, shape, dtype, device):
  """A DeviceBuffer of an executable's result (`shape` a tuple, `dtype` a NumPy dtype already):
  `__init__`'s work without its conversions, on the cached-call path."""
  b = object.__new__(buffer_type)
  b.buf, b.shape, b.dtype, b.device, b._host, b.committed = buf, shape, dtype, device, None, False
  return b


class XlaExecutable:
  """A loaded XLA executable and what calling it needs: the device, result handlers and the
  module text (`as_text` shows XLA's optimized HLO; `lowered_text` the StableHLO)."""
  __slots__ = ("loaded", "device", "backend", "out_avals", "handlers", "lowered_text",
               "n_in", "ref_inputs", "ref_consts", "n_out", "calls_host", "__jaxlite_source__",
               "_avals", "_elsewhere")

  def __init__(self, loaded, backend, device, in_avals, out_avals, text, ref_consts=()):
    self.loaded, self.backend, self.device = loaded, backend, device
    self._avals = (in_avals, out_avals)
    self._elsewhere = None  # device -> this program compiled for it (`on_device`)
    # Refs (see lowering.emit_function): the module takes the contents of the ref inputs and of
    # the `Ref` objects the function closes over (`ref_consts`), and returns their new contents
    # after its outputs; a call writes them back into the Refs.
    self.ref_inputs = [i for i, a in enumerate(in_avals) if lowering.is_ref_aval(a)]
    self.ref_consts = list(ref_consts)
    self.n_out = len(out_avals)
    out_avals = [*out_avals, *(in_avals[i].inner_aval for i in self.ref_inputs),
                 *(r.aval.inner_aval for r in self.ref_consts)]
    # extended dtypes (typed PRNG keys) travel as their data: ui32 [..., 2] buffers
    out_avals = [lowering.physical_aval(a) for a in out_avals]
    self.out_avals = [(tuple(a.shape), lowering.storage_dtype(a.dtype)) for a in out_avals]
    _jax = client_lib.jax_ext()
    sh = device.sharding
    self.handlers = [_jax.array_result_handler(_Aval(s, d), sh, True, _skip_checks=True)
                     for s, d in self.out_avals]
    self.lowered_text = text
    self.n_in = len(in_avals)
    # A program with host callbacks runs to its end before its call returns, so that what
    # the callbacks do (prints, io) happens before the code after the call (jaxlite's
    # effects_barrier has nothing to wait for); other programs run asynchronously.
    self.calls_host = tuple(getattr(text, "host_callbacks", ()))

  def on_device(self, device) -> "XlaExecutable":
    """This program compiled for `device` (a jit call whose arguments are committed there runs
    there, as JAX compiles a program for its arguments' device)."""
    if device is self.device:
      return self
    if self._elsewhere is None:
      self._elsewhere = {}
    exe = self._elsewhere.get(device)
    if exe is None:
      loaded = self.backend.compile_text(self.lowered_text, device)
      exe = self._elsewhere[device] = XlaExecutable(
          loaded, self.backend, device, *self._avals, self.lowered_text, self.ref_consts)
    return exe

  def _committed_elsewhere(self, values):
    """The device of the arguments committed to another device of this backend, or None."""
    bt, dev = self.backend.buffer_type, self.device
    for v in values:
      if type(v) is bt and v.committed and v.device is not dev:
        return v.device
    return None

  def __call__(self, *values):
    put = self.backend.buffer_for
    dev = self.device
    bt = self.backend.buffer_type
    elsewhere = self._committed_elsewhere(values)
    if elsewhere is not None:
      outs = self.on_device(elsewhere)(*values)
      for o in outs:
        o.committed = True
      return outs
    refs = [values[i] for i in self.ref_inputs] + self.ref_consts if \
        self.ref_inputs or self.ref_consts else None
    if refs:
      values = [v._buf if i in self.ref_inputs else v for i, v in enumerate(values)]
      values += [r._buf for r in self.ref_consts]
    # an argument already on this device (the common case) passes its buffer as it is
    bufs = [v.buf if type(v) is bt and v.device is dev else put(v, dev) for v in values]
    try:
      if self.calls_host:
        results = self.loaded.execute_sharded(bufs, with_tokens=True)
        done = results.consume_token()
        outs = results.consume_with_handlers(self.handlers)
        done.block_until_ready()
        raise_callback_failures(self.calls_host)
      else:
        outs = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
    except Exception as err:
      raise _runtime_error(err, "executing", dev) from None
    outs = [_wrap(bt, o, s, d, dev) for o, (s, d) in zip(outs, self.out_avals)]
    if refs:
      for r, new in zip(refs, outs[self.n_out:]):
        r._buf[...] = new.host()  # in place: the Ref's buffer keeps its address
      outs = outs[:self.n_out]
    return outs

  def one_result_runner(self, dtype, weak_type):
    """jit's cached-call runner for a program with one result of `dtype` (see
    `jit_cache.CacheEntry.fast_runner`): Arrays in, one Array out, the buffers on this
    device passed as they are. None where `__call__` is needed (refs, other layouts)."""
    if self.ref_inputs or self.ref_consts or self.calls_host or len(self.out_avals) != 1 or \
        self.out_avals[0][1] != dtype:
      return None  # (host callbacks: `__call__` waits for them and raises their failures)
    put, dev, bt = self.backend.buffer_for, self.device, self.backend.buffer_type
    execute, handlers = self.loaded.execute_sharded, self.handlers
    (shape, dt), = self.out_avals
    new_array, new = core.host_array_from_numpy, object.__new__

    def run_one(values):
      bufs = []
      for v in values:
        if type(v) is not bt:
          bufs.append(put(v, dev))
        elif v.device is dev:
          bufs.append(v.buf)
        else:  # on another device: the general call (compiled for a committed one's device)
          return new_array(self(*values)[0], weak_type)
      try:
        o = execute(bufs).consume_with_handlers(handlers)[0]
      except Exception as err:
        raise _runtime_error(err, "executing", dev) from None
      b = new(bt)  # (`_wrap`, inline: the cached call's last Python call saved)
      b.buf, b.shape, b.dtype, b.device, b._host, b.committed = o, shape, dt, dev, None, False
      return new_array(b, weak_type)
    return run_one

  def as_text(self) -> str:
    return self.loaded.hlo_modules()[0].to_string()

  def cost_analysis(self) -> dict:
    return dict(self.loaded.cost_analysis())


def raise_callback_failures(callbacks) -> None:
  """Raises what a send/recv host callback of the program raised (`lowering.HostTransferCallback`
  answers zeros to the device in its place, which would otherwise wait forever)."""
  for c in callbacks:
    failures = getattr(c, "failures", None)
    if failures:
      err = failures[0]
      failures.clear()
      if isinstance(err, JaxRuntimeError):
        raise err
      raise JaxRuntimeError(f"INTERNAL: a host callback failed: {type(err).__name__}: "
                            f"{err}") from err


def _without_dead_eqns(closed):
  """`closed` without the eqns whose results nothing uses, as JAX lowers a jaxpr: an unused
  pure_callback must not run (on the TPU its host transfers are side effects XLA keeps)."""
  jaxpr = passes.dce(closed.jaxpr)
  return closed if jaxpr is closed.jaxpr else core.ClosedJaxpr(jaxpr, closed.consts)


def _runtime_error(err, what, device):
  """jaxlib's runtime error as JAX raises it: JaxRuntimeError with XLA's message as it stands (a
  failed host callback's holds the callback's traceback: equinox reads its last line), raised
  `from None`; other errors name what was being done, and where."""
  if isinstance(err, JaxRuntimeError):
    return err
  if type(err).__name__ in ("XlaRuntimeError", "JaxRuntimeError"):
    return JaxRuntimeError(str(err))
  return JaxRuntimeError(f"{err} ({what} on {device!r})")


class XlaBackend(backend_lib.Backend):
  """Compiles closed jaxprs with XLA for one PJRT platform."""
  aliases_donations = True  # jit's donated inputs become XLA input/output aliases

  def __init__(self, platform: str = "cpu"):
    super().__init__()
    self.platform = platform
    self.name = "xla" if platform == "cpu" else f"xla:{platform}"
    self.tables = backend_lib.LoweringTables()  # unused: rules live in lowering.rules
    self._transfers: dict = {}  # buffer_for's transfers kept (scalars, key data)
    self._devices = None
    self._lock = threading.RLock()
    # The type of this backend's Array buffers: each platform its own, so that the buffer's type
    # names its backend (`backend.buffer_backends`, `core.eager_routes`).
    self.buffer_type = DeviceBuffer if platform == "cpu" else type(
        "DeviceBuffer", (DeviceBuffer,), {"__slots__": (), "__module__": __name__,
                                          "__qualname__": f"DeviceBuffer[{platform}]"})

  # -- devices -------------------------------------------------------------------------------
  @property
  def client(self):
    return client_lib.get_client(self.platform)

  def devices(self) -> list:
    if self._devices is None:
      self._devices = [XlaDevice(d, self) for d in self.client.local_devices()]
    return self._devices

  def default_device(self):
    return self.devices()[0]

  # -- compiling -----------------------------------------------------------------------------
  def compile(self, closed, device=None):
    return self._compile(closed, device, None)

  def compile_donating(self, closed, donated):
    """Inputs `donated` alias the first outputs of their shape and dtype (JAX's matching):
    XLA writes those results into the donated buffers."""
    taken, aliases = set(), {}
    outs = closed.out_avals
    for i in donated:
      a = closed.in_avals[i]
      for o, b in enumerate(outs):
        if o not in taken and tuple(b.shape) == tuple(a.shape) and b.dtype == a.dtype:
          taken.add(o)
          aliases[i] = o
          break
    return self._compile(closed, None, aliases)

  def lower(self, closed, donated_to=None, name: str = "jit_fn") -> str:
    closed = _without_dead_eqns(closed)
    if spmd.has_spmd(closed.jaxpr):  # a sharded program: its arguments and results annotated
      text, _ = spmd.lower_spmd(closed, name, donated_to=donated_to, platform=self.platform)
      if text is not None:
        return text
    return lowering.lower_closed_jaxpr(closed, module_name=name, donated_to=donated_to,
                                       platform=self.platform)

  def lower_text(self, closed, name: str = "jit_fn") -> str:
    """What `jit(f).lower(x).as_text()` shows: the module in StableHLO's pretty form, as JAX
    prints it (parsed and printed by jaxlib's MLIR), else the generic form lowering emits."""
    return pretty_text(self.lower(closed, name=name))

  def _compile(self, closed, device, aliases, name="jit_fn"):
    closed = _without_dead_eqns(closed)
    name = _module_name(closed, name)
    if spmd.has_spmd(closed.jaxpr):  # compiled for every device of its mesh (spmd.py)
      exe = spmd.compile_spmd(self, closed, name, donated_to=aliases)
      if exe is not None:
        return exe
    text = self.lower(closed, aliases, name)
    device = device or self.default_device()
    loaded = self.compile_text(text, device)
    return XlaExecutable(loaded, self, device, closed.in_avals, closed.out_avals, text,
                         [closed.consts[i] for i in lowering.ref_consts(closed)])

  def compile_text(self, text: str, device):
    """XLA's executable of StableHLO module `text` on `device` (through the persistent
    compilation cache when `jax_compilation_cache_dir` is set)."""
    xc = client_lib.xla_client()
    options = xc.CompileOptions()
    # one replica on `device` (XLA assigns device 0 otherwise, and rejects buffers elsewhere)
    options.executable_build_options.device_assignment = xc.DeviceAssignment.create(
        np.array([[device.pjrt.id]], np.int64))
    return compile_cache.compile_or_load(self.client, text, device, options, self.platform)

  def cost_analysis(self, closed, name: str = "jit_fn") -> dict:
    """`Lowered.cost_analysis()`: XLA's cost model over the HLO of `closed` before XLA's
    optimizations, as JAX's (`Compiled.cost_analysis()` is the optimized executable's)."""
    client = self.client
    if "PJRT C API" in getattr(client, "platform_version", ""):
      raise NotImplementedError(  # JAX's error: plugins count only compiled programs
          f"Lowered.cost_analysis not implemented on platform '{self.platform}'. Use "
          "compile().cost_analysis() for post-compilation cost estimates.")
    _jax = client_lib.jax_ext()
    computation = _jax.mlir.mlir_module_to_xla_computation(
        str(self.lower(closed, name=name)), use_tuple_args=False)
    return dict(_jax.hlo_module_cost_analysis(client, computation.as_hlo_module()))

  def as_text(self, executable) -> str:
    if isinstance(executable, XlaExecutable):
      return executable.as_text()
    return super().as_text(executable)

  # -- buffers -------------------------------------------------------------------------------
  def buffer_for(self, value, device):
    """The jaxlib array of `value` on `device`: a DeviceBuffer's own (copied when it lives on
    another device), or a host value transferred. Scalars (`x + 1`'s `1`) and typed PRNG key
    data (immutable, held by their key Array) are transferred once per device and reused: a
    transfer is a synchronization with the device, the dearest part of a small eager op."""
    t = type(value)
    if t in _NUMPY_SCALARS:  # `x + 1`'s partner (jnp's promotion made it a NumPy scalar)
      key = (t, value.tobytes(), id(device))  # (devices live as long as their backend)
      hit = self._transfers.get(key)
      if hit is None or hit.is_deleted():  # (a donated argument's buffer is consumed)
        hit = self._remember(key, self.to_device(np.asarray(value), device).buf)
      return hit
    if isinstance(value, DeviceBuffer):
      if value.device is device or value.device == device:
        return value.buf
      return self.copy_to(value, device).buf
    x = value if t is np.ndarray else np.asarray(value)
    if x.ndim == 0 and x.dtype.names is None:
      key = (x.dtype, x.tobytes(), device.pjrt)
      hit = self._transfers.get(key)
      if hit is None or hit.is_deleted():  # (a donated argument's buffer is consumed)
        hit = self._remember(key, self.to_device(x, device).buf)
      return hit
    if x.dtype.names is not None and x is value:  # a key Array's data: cached by identity
      key = (id(x), device)
      hit = self._transfers.get(key)
      if hit is not None and hit[0]() is x and not hit[1].is_deleted():
        return hit[1]
      buf = self.to_device(x, device).buf
      self._remember(key, (weakref.ref(x), buf))
      return buf
    return self.to_device(x, device).buf

  def _remember(self, key, entry):
    cache = self._transfers
    if len(cache) >= 1024:
      cache.pop(next(iter(cache)))
    cache[key] = entry
    return entry

  def to_device(self, host_value, device=None, keep_host=False) -> DeviceBuffer:
    """`host_value` transferred to `device`; `keep_host`: the value (a canonical-dtype array)
    stays as the buffer's host copy."""
    device = device or self.default_device()
    x = host = np.asarray(host_value)
    if x.dtype.names is not None:  # typed PRNG keys (k0, k1 records): their data, [..., 2]
      x = np.stack([x[name] for name in x.dtype.names], axis=-1)
    if not x.flags.c_contiguous:
      x = np.ascontiguousarray(x)
    if x.dtype == dtypes.float0:
      x = np.zeros(x.shape, np.bool_)
    _jax = client_lib.jax_ext()
    try:
      buf = _jax.batched_device_put(_Aval(x.shape, x.dtype), device.sharding, [x], [device.pjrt],
                                    True, True, enable_x64=True)
    except Exception as err:
      raise _runtime_error(err, "transferring to", device) from err
    out = device.backend.buffer_type(buf, x.shape, x.dtype, device)
    if keep_host and x is host:
      h = x.view()
      h.flags.writeable = False
      out._host = h
    return out

  def copy_to(self, value: DeviceBuffer, device) -> DeviceBuffer:
    """`value` on another device: device to device where the two share a client, else through
    host memory (explicitly: a `device_put` between platforms)."""
    if value.device.pjrt.client is device.pjrt.client:
      _jax, xc = client_lib.jax_ext(), client_lib.xla_client()
      out = _jax.batched_copy_array_to_devices_with_sharding(
          [value.buf], [xc.DeviceList((device.pjrt,))], [device.sharding],
          [_jax.ArrayCopySemantics.ALWAYS_COPY])[0]
      return device.backend.buffer_type(out, value.shape, value.dtype, device)
    return device.backend.to_device(value.host(), device)

  def to_host(self, buffer) -> np.ndarray:
    """The host copy of `buffer`, read through jaxlib's device-to-host transfer (every platform
    and dtype: bfloat16 and float8 come back as ml_dtypes arrays); read-only."""
    if not isinstance(buffer, DeviceBuffer):
      return np.asarray(buffer)
    if buffer.buf.is_deleted():
      raise RuntimeError("Array has been deleted with shape=" +
                         f"{dtypes.dtype_name(buffer.dtype)}{list(buffer.shape)}.")
    try:
      with client_lib.no_jax_import():
        out, copied = buffer.buf._single_device_array_to_np_array_did_copy()
    except Exception as err:
      raise _runtime_error(err, "copying to the host from", buffer.device) from err
    if not copied:
      # A zero-copy view of a CPU device buffer: it would pin the buffer (an external
      # reference, which donation refuses); the host copy is our own.
      out = np.array(out, copy=True)
    if out.dtype != buffer.dtype:  # extended dtypes travel as their data (PRNG keys: uint32)
      out = out.view(buffer.dtype) if out.dtype.itemsize == buffer.dtype.itemsize else \
          out.astype(buffer.dtype)
    out.flags.writeable = False
    return out

  def copy_to_host_async(self, buffer) -> None:
    """Starts `buffer`'s device-to-host copy (`Array.copy_to_host_async`); `to_host` then
    waits for it instead of starting one."""
    if buffer._host is None and not buffer.buf.is_deleted():
      with client_lib.no_jax_import():
        buffer.buf._copy_single_device_array_to_host_async()



def _module_name(closed, default):
  """`jit_<function name>` as JAX names its modules (`jit_<lambda>` for a lambda)."""
  info = getattr(closed.jaxpr, "debug_info", None)
  src = getattr(info, "func_src_info", None)
  if isinstance(src, str) and src:
    return "jit_" + src.split(" ")[0]
  return default


_backends: dict = {}


def get_xla_backend(platform: str = "cpu") -> XlaBackend:
  """The registered XLA backend of `platform` (made and registered on first ask)."""
  b = _backends.get(platform)
  if b is None:
    from jaxlite._src.compiler.xla import eager
    b = _backends[platform] = XlaBackend(platform)
    backend_lib._backends[b.name] = b
    # The eager routing contract: this backend's buffers route eager ops and jit calls here.
    core.eager_routes[b.buffer_type] = eager.route
    backend_lib.buffer_backends[b.buffer_type] = b.name
  return b


def pretty_text(text: str) -> str:
  """`text` (generic-form MLIR) printed in the dialects' own syntax by jaxlib's MLIR bindings;
  unchanged where they are missing or fail."""
  try:
    return str(client_lib.parse_module(text))
  except Exception:  # no MLIR bindings in this jaxlib, or a module they cannot print
    return text
