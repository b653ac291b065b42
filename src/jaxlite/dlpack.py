"""`jax.dlpack`: arrays from DLPack-exporting objects (NumPy, PyTorch, ...), and the dtypes the
protocol carries. jaxlite's Array exports itself through `__dlpack__`/`__dlpack_device__`."""
from __future__ import annotations

import numpy as np

_BUILTIN = tuple(np.dtype(t) for t in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "float32", "float64", "complex64", "complex128", "bool"))


def _bfloat16():
  # ml_dtypes' bfloat16 (loading it costs most of a second: only when asked)
  import jaxlite.numpy as jnp
  return np.dtype(jnp.bfloat16)


def __getattr__(name):
  if name == "SUPPORTED_DTYPES":
    return _BUILTIN + (_bfloat16(),)
  raise AttributeError(f"module 'jaxlite.dlpack' has no attribute {name!r}")


def is_supported_dtype(dtype) -> bool:
  """Whether arrays of `dtype` can cross DLPack into or out of jaxlite."""
  if dtype is None:
    # np.dtype(None) is float64: refuse it rather than answer for a dtype nobody named
    raise TypeError(f"Expected a string or dtype-like object; got dtype={dtype}")
  dtype = np.dtype(dtype)
  return dtype in _BUILTIN or (dtype.name == "bfloat16" and dtype == _bfloat16())


def from_dlpack(external_array, device=None, copy: bool | None = None):
  """A jaxlite Array with the contents of `external_array`, any object implementing
  `__dlpack__` and `__dlpack_device__` (on the CPU: jaxlite has no other device)."""
  from jaxlite._src.numpy.more_functions import from_dlpack as _from_dlpack
  if not hasattr(external_array, "__dlpack__"):
    raise TypeError(f"from_dlpack: expected an object implementing __dlpack__, got "
                    f"{type(external_array).__name__}")
  host = np.from_dlpack(external_array)
  if not is_supported_dtype(host.dtype):
    raise TypeError(f"from_dlpack: array type {host.dtype} is not supported by DLPack "
                    f"in jaxlite; supported: {[str(d) for d in _BUILTIN]} and bfloat16")
  return _from_dlpack(host, device=device, copy=copy)
