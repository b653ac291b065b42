"""DLPack exchange both ways: `Array.__dlpack__`'s export and `jax.dlpack.from_dlpack`'s import,
sharing the NumPy buffer with the other library whenever the memory allows (CPU only)."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base import dtypes

DL_CPU = 1  # DLDeviceType.kDLCPU
DL_CUDA_HOST = 3  # pinned host memory (e.g. torch's pin_memory()): readable as CPU memory

# The dtypes DLPack can describe through NumPy's exporter. JAX also lists bfloat16, which NumPy
# cannot export (ml_dtypes types have no DLPack code there), so jaxlite leaves it out.
_SUPPORTED = frozenset(np.dtype(n) for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))


def is_supported_dtype(dtype) -> bool:
  """True if arrays of `dtype` can go through DLPack."""
  if dtype is None:
    # NumPy would read None as float64, which would be a surprising answer.
    raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
  return np.dtype(dtype) in _SUPPORTED


def dlpack_device(x) -> tuple[int, int]:
  return (DL_CPU, x.device.id)


def to_dlpack(x, *, stream=None, max_version=None, dl_device=None, copy=None):
  """The body of `Array.__dlpack__`: a capsule over `x`'s buffer (a copy only if asked)."""
  if stream is not None:
    raise RuntimeError(f"__dlpack__: stream must be None for CPU arrays, got {stream!r}")
  if dl_device is not None and tuple(dl_device) != dlpack_device(x):
    if int(dl_device[0]) != DL_CPU:
      raise BufferError("The device specification passed to __dlpack__ contains an unsupported "
                        f"device type (DLDeviceType: {dl_device[0]}); only CPU (1) is available")
    if copy is False:
      raise ValueError(f"__dlpack__: dl_device={tuple(dl_device)} requires a copy since the "
                       f"array is on {dlpack_device(x)}, however copy=False")
    copy = True  # all CPU devices share host memory: a copy is the transfer
  value = x._host_value()
  if value.dtype not in _SUPPORTED:
    raise BufferError(f"__dlpack__: dtype {dtypes.dtype_name(value.dtype)} is not supported by "
                      f"DLPack; supported: {sorted(d.name for d in _SUPPORTED)}")
  if copy:
    return np.array(value).__dlpack__(max_version=max_version)
  buf = np.asarray(value)  # a 0-d NumPy scalar becomes a fresh 0-d array here
  if max_version is not None and tuple(max_version) >= (1, 0):
    # DLPack 1.x carries a read-only flag: consumers get a view they cannot write through.
    view = buf.view()
    view.flags.writeable = False
    return view.__dlpack__(max_version=max_version)
  # Legacy (0.x) capsules cannot say "read-only"; like JAX, export the buffer itself then.
  if not buf.flags.writeable:  # e.g. a broadcast view: NumPy refuses to export it writable
    if copy is False:
      raise BufferError("__dlpack__: the buffer is read-only and legacy DLPack (max_version "
                        "None or < (1, 0)) cannot signal that; copy=False forbids a copy")
    buf = np.array(buf)
  return buf.__dlpack__()


def from_dlpack(external_array, device=None, copy: bool | None = None):
  """An Array over a DLPack tensor's memory (shared unless `copy=True` or a cast is needed).

  As in JAX, the result aliases the producer's buffer: writing to that buffer afterwards
  changes the Array, which JAX calls undefined behaviour.
  """
  if isinstance(device, devices.Sharding):
    device_set = device.device_set
    if len(device_set) > 1:
      raise ValueError("from_dlpack can only unpack a dlpack tensor onto a singular device, but "
                       f"a Sharding with {len(device_set)} devices was provided.")
    device, = device_set
  if not hasattr(external_array, "__dlpack__") or \
      not hasattr(external_array, "__dlpack_device__"):
    raise TypeError("The array passed to from_dlpack must have __dlpack__ and __dlpack_device__ "
                    f"methods; got {type(external_array).__name__}")
  dl_type, dl_id = external_array.__dlpack_device__()
  if int(dl_type) not in (DL_CPU, DL_CUDA_HOST):
    raise TypeError("Array passed to from_dlpack is on unsupported device type "
                    f"(DLDeviceType: {dl_type}, array: {external_array!r}); only CPU memory")
  source = devices.devices()[dl_id] if int(dl_type) == DL_CPU and \
      dl_id < len(devices.devices()) else devices.default_device()
  if device is not None and device != source and copy is False:
    raise ValueError(f"Specified {device=} which requires a copy since the source device is "
                     f"{source!r}, however copy=False. Set copy=True or copy=None to perform "
                     "the requested operation.")
  value = np.from_dlpack(external_array)  # NumPy 2.0's from_dlpack has no copy= argument
  canon = dtypes.canonicalize_dtype(value.dtype)
  if canon != value.dtype:  # e.g. float64 without x64: JAX casts, which copies
    if copy is False:
      raise ValueError(f"from_dlpack: dtype {value.dtype} becomes {canon} (x64 is off), which "
                       "requires a copy, however copy=False")
    value = value.astype(canon)
  elif copy:
    value = np.array(value)
  if device is None:
    return core.array_from_numpy(value, False)
  return core.array_type(value, False, device)
