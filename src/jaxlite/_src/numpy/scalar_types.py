"""jnp's scalar types (`jnp.float32(1)` makes an Array) and dtype utilities."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.base.core import Tracer


class _ScalarMeta(type):
  """A scalar type usable as a dtype (`np.dtype(jnp.float32)`) and callable like JAX's."""

  def __hash__(cls):
    return hash(cls.dtype.type)

  def __eq__(cls, other):
    return id(cls) == id(other) or cls.dtype.type == other

  def __ne__(cls, other):
    return not cls == other

  def __call__(cls, x):
    # JAX's is asarray: a traced value of the type stays itself (no `copy` eqn). A concrete
    # value takes array's shorter path (eager `jnp.float32(1.0)` is hot; the result is equal)
    from jaxlite._src.numpy.creation import array, asarray
    return (asarray if isinstance(x, Tracer) else array)(x, dtype=cls.dtype)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)


def _make_scalar_type(np_type, name=None):
  name = name or np.dtype(np_type).name
  return _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type)})


bool_ = bool = _make_scalar_type(np.bool_, "bool")  # noqa: A001
int8 = _make_scalar_type(np.int8)
int16 = _make_scalar_type(np.int16)
int32 = _make_scalar_type(np.int32)
int64 = _make_scalar_type(np.int64)
uint8 = _make_scalar_type(np.uint8)
uint16 = _make_scalar_type(np.uint16)
uint32 = _make_scalar_type(np.uint32)
uint64 = _make_scalar_type(np.uint64)
float16 = _make_scalar_type(np.float16)
float32 = _make_scalar_type(np.float32)
float64 = _make_scalar_type(np.float64)
complex64 = _make_scalar_type(np.complex64)
complex128 = _make_scalar_type(np.complex128)
_lazy_types = {}


def lazy_scalar_type(name: str):
  """jnp.bfloat16 and the float8 types: loads ml_dtypes on first use."""
  if name not in _lazy_types:
    if not dtypes.load_ml_dtypes():
      raise AttributeError(f"jax.numpy.{name} requires the ml_dtypes package")
    import ml_dtypes
    _lazy_types[name] = _make_scalar_type(getattr(ml_dtypes, name), name)
  return _lazy_types[name]


LAZY_SCALAR_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz",
                     "float8_e4m3fnuz", "float8_e5m2fnuz", "int4", "uint4", "int1", "int2",
                    "uint1", "uint2", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
                    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128

generic, number, integer = np.generic, np.number, np.integer
signedinteger, unsignedinteger = np.signedinteger, np.unsignedinteger
inexact, floating, complexfloating = np.inexact, np.floating, np.complexfloating

finfo = dtypes.finfo
iinfo = dtypes.iinfo
issubdtype = dtypes.issubdtype
promote_types = dtypes.promote_types


def dtype(obj, align=False, copy=False):
  if isinstance(obj, _ScalarMeta):
    return obj.dtype
  if obj is int:
    return dtypes.default_int_dtype()
  if obj is float:
    return dtypes.default_float_dtype()
  if obj is complex:
    return dtypes.default_complex_dtype()
  if hasattr(obj, "dtype") and not isinstance(obj, (type, np.dtype, str)):
    return obj.dtype
  try:
    return np.dtype(obj)
  except TypeError:
    # 'bfloat16', 'float8_e4m3fn', 'int4', ...: NumPy knows ml_dtypes' names once it is
    # imported, which JAX always does and jaxlite only on demand.
    if not isinstance(obj, str) or not dtypes.load_ml_dtypes():
      raise
    return np.dtype(obj)


def can_cast(from_, to, casting="safe"):
  return np.can_cast(dtype(from_), dtype(to), casting)


_as_dtype = dtype  # isdtype's argument `dtype` shadows the function
_ISDTYPE_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
                  "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype, kind) -> bool:  # the standard names the first argument `dtype`
  dt = _as_dtype(dtype)
  kinds = kind if isinstance(kind, tuple) else (kind,)
  for k in kinds:
    if isinstance(k, str) and k in _ISDTYPE_KINDS:
      if dtypes.kind_of_dtype(dt) in _ISDTYPE_KINDS[k]:
        return True
      continue
    if not isinstance(k, (str, np.dtype, type)) and not hasattr(k, "dtype"):
      raise TypeError(f"isdtype: expected kind to be a dtype, string, or tuple; got kind={k!r}")
    try:
      kd = _as_dtype(k)
    except TypeError:
      raise ValueError(f"isdtype: unrecognized kind={k!r}, expected one of "
                       f"{list(_ISDTYPE_KINDS)}, or a compatible input for jnp.dtype()") from None
    if kd == dt:
      return True
  return False
