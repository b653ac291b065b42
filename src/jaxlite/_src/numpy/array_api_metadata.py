"""The Array API standard's metadata: `__array_api_version__`, `__array_namespace_info__()` and
`Array.__array_namespace__`, answering exactly what JAX 0.10.2's `jax.numpy` answers."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import devices as _devices
from jaxlite._src.base import dtypes as _dtypes
from jaxlite._src.base.config import config

__array_api_version__ = "2024.12"

# The standard's dtype kinds and the names each holds (JAX's `_dtype_kinds`); "numeric" is every
# integral, real and complex type. 64-bit names are listed only under x64, as JAX does.
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]
_X64_ONLY = frozenset({"int64", "uint64", "float64", "complex128"})


# The `jaxlite.numpy` module: it sets this at its import (`import jaxlite` loads it).
namespace = None


def __array_namespace__(self, *, api_version: str | None = None):
  """`Array.__array_namespace__`: the `jaxlite.numpy` module (only 2024.12 is offered)."""
  if api_version is not None and api_version != __array_api_version__:
    raise ValueError(f"{api_version=!r} is not available; "
                     f"available versions are: {[__array_api_version__]}")
  return namespace


def __array_namespace_info__() -> ArrayNamespaceInfo:
  return ArrayNamespaceInfo()


class ArrayNamespaceInfo:
  """What `jaxlite.numpy` supports, in the standard's inspection API."""
  # Boolean masks and data-dependent shapes fail under `jit` (tracing fixes every shape), so
  # JAX reports neither; 64 is XLA's rank limit, which JAX reports and jaxlite mirrors.
  _capabilities = {"boolean indexing": False, "data-dependent shapes": False,
                   "max dimensions": 64}

  def capabilities(self):
    return dict(self._capabilities)

  def default_device(self):
    # Arrays are uncommitted by default (device None: placement is left to jaxlite), as in JAX.
    return None

  def devices(self) -> list:
    return [None, *_devices.devices()]

  def default_dtypes(self, *, device=None):
    del device  # the same on every (CPU) device
    return {"real floating": _dtypes.default_float_dtype(),
            "complex floating": _dtypes.default_complex_dtype(),
            "integral": _dtypes.default_int_dtype(),
            "indexing": _dtypes.default_int_dtype()}

  def dtypes(self, *, device=None, kind: str | tuple[str, ...] | None = None):
    del device
    if kind is None:
      names = _KINDS["numeric"] + _KINDS["bool"]
    else:
      names = ()
      for k in kind if isinstance(kind, tuple) else (kind,):
        if k not in _KINDS:
          raise KeyError(f"__array_namespace_info__().dtypes: kind must be one of "
                           f"{sorted(_KINDS)} or a tuple of them, got {k!r}")
        names += _KINDS[k]
    x64 = config.jax_enable_x64
    return {n: np.dtype(n) for n in names if x64 or n not in _X64_ONLY}
