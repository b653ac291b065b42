"""The dtype lattice: canonicalization under x64, weak types and JAX's type promotion.

Promotion is the least upper bound on JAX's lattice (Python scalar kinds i*, f*, c* as extra
nodes); results are memoised per (dtype, weak) signature so eager dispatch pays a dict lookup.
"""
from __future__ import annotations

import functools
import sys
import warnings

import numpy as np

from jaxlite._src.base.config import config

# bfloat16, float8 and int4 come from ml_dtypes (an optional extra). Importing it costs most of
# a second, so it is loaded only when asked for (jnp.bfloat16) or when the user already has it.
_ml = None
bfloat16 = None
float8_dtypes = ()
int4 = uint4 = None


def load_ml_dtypes() -> bool:
  """Makes bfloat16 & co. known to the lattice; True if ml_dtypes is installed."""
  global _ml, bfloat16, float8_dtypes, int4, uint4
  if _ml is not None:
    return True
  try:
    import ml_dtypes
  except ImportError:
    return False
  _ml = ml_dtypes
  bfloat16 = np.dtype(ml_dtypes.bfloat16)
  names = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz",
           "float8_e5m2fnuz")
  float8_dtypes = tuple(np.dtype(getattr(ml_dtypes, n)) for n in names if hasattr(ml_dtypes, n))
  int4, uint4 = np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)
  _SHORT[bfloat16] = "bf16"
  for d in float8_dtypes:
    _SHORT[d] = d.name.replace("float8", "f8")
  _SHORT[int4], _SHORT[uint4] = "i4", "u4"
  _upper_bounds.cache_clear()
  _promotion_cache.clear()
  return True


def _is_ml_dtype_unloaded(dtype) -> bool:
  """True when `dtype` is an ml_dtypes dtype (NumPy kind 'V') met before load_ml_dtypes ran:
  the user imported ml_dtypes after jaxlite built its tables. Loads it then (cheap: the module
  is already imported), so the tables pick bfloat16 & co. up lazily."""
  if _ml is not None or getattr(dtype, "kind", None) != "V":
    return False
  if not getattr(dtype.type, "__module__", "").startswith("ml_dtypes"):
    return False
  return load_ml_dtypes()


class TypePromotionError(ValueError):
  pass


bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# float0 is the tangent dtype of integer primals: zero bytes per element.
float0 = np.dtype([("float0", np.void, 0)])

_SHORT = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
    uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", float32: "f32",
    float64: "f64", complex64: "c64", complex128: "c128", float0: "float0",
}


def short_dtype_name(dtype) -> str:
  if hasattr(dtype, "_short_name"):
    return dtype._short_name
  dtype = np.dtype(dtype)
  short = _SHORT.get(dtype)
  if short is None and _is_ml_dtype_unloaded(dtype):
    short = _SHORT.get(dtype)
  return short or dtype.name


def dtype_name(dtype) -> str:
  if hasattr(dtype, "_short_name") or hasattr(dtype, "_is_extended"):
    return dtype.name
  if dtype == float0:
    return "float0"
  return np.dtype(dtype).name


# --- canonicalization --------------------------------------------------------------------------

_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def canonicalize_dtype(dtype, allow_extended: bool = True):
  """The dtype an array of `dtype` actually gets: 64-bit types shrink unless x64 is on."""
  if hasattr(dtype, "_is_extended"):
    return dtype
  dtype = np.dtype(dtype)
  if config.jax_enable_x64:
    return dtype
  return _TO_32.get(dtype, dtype)


def check_user_dtype(dtype, fun_name: str | None = None):
  """Canonicalizes an explicitly requested dtype, warning like JAX when x64 truncates it."""
  if dtype is None:
    return None
  if hasattr(dtype, "_is_extended"):
    return dtype
  if isinstance(dtype, type) and hasattr(dtype, "dtype") and not issubclass(dtype, np.generic):
    dtype = dtype.dtype
  if dtype is int:
    return default_int_dtype()
  if dtype is float:
    return default_float_dtype()
  if dtype is complex:
    return default_complex_dtype()
  np_dtype = _user_np_dtype(dtype)
  if np_dtype is None:
    where = f" in {fun_name}" if fun_name else ""
    raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype {dtype}{where}")
  out = canonicalize_dtype(np_dtype)
  if out != np_dtype:
    mode = config.jax_explicit_x64_dtypes
    where = f" requested in {fun_name}" if fun_name else ""
    if str(mode).lower() == "error":  # JAX's own wording here (no space after "options.")
      raise ValueError(f"Explicitly requested dtype {np_dtype.name}{where} is not available. To "
                       "enable more dtypes, set the jax_enable_x64 or allow_explicit_x64_dtypes "
                       "configuration options.See https://github.com/jax-ml/jax#current-gotchas "
                       "for more.")
    if str(mode).lower() != "allow":
      warnings.warn(f"Explicitly requested dtype {np_dtype.name}{where} is not available, and "
                    f"will be truncated to dtype {out.name}. To enable more dtypes, set the "
                    "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment "
                    "variable. See https://github.com/jax-ml/jax#current-gotchas for more.",
                    UserWarning, stacklevel=3)
  return out


# NumPy kinds JAX computes with (bool, ints, floats, complex) and the sizes it has for each: no
# float128/complex256, objects, strings of fixed width, datetimes or records.
_SUPPORTED_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8), "c": (8, 16)}


def _user_np_dtype(dtype):
  """The NumPy dtype a user's dtype names (ml_dtypes names such as 'bfloat16' included), or None
  when JAX has no such dtype."""
  try:
    np_dtype = np.dtype(dtype)
  except TypeError:
    # ml_dtypes loads only here, for a name NumPy does not know (keeps `import jaxlite` cheap);
    # a name neither knows raises NumPy's "data type ... not understood", as in JAX.
    if not (isinstance(dtype, str) and load_ml_dtypes() and hasattr(_ml, dtype)):
      raise
    np_dtype = np.dtype(getattr(_ml, dtype))
  if np_dtype.type.__module__.startswith("ml_dtypes"):
    return np_dtype
  if np_dtype.itemsize not in _SUPPORTED_SIZES.get(np_dtype.kind, ()):
    return None
  return np_dtype


def default_int_dtype():
  return int64 if config.jax_enable_x64 else int32


def default_uint_dtype():
  return uint64 if config.jax_enable_x64 else uint32


def default_float_dtype():
  return float64 if config.jax_enable_x64 else float32


def default_complex_dtype():
  return complex128 if config.jax_enable_x64 else complex64


_PY_SCALAR_KIND = {bool: None, int: "i", float: "f", complex: "c"}


def python_scalar_dtype(x):
  """The dtype a Python scalar gets (weak, except bool)."""
  t = type(x)
  if t is bool:
    return bool_
  if t is int or isinstance(x, int) and not isinstance(x, np.integer) and not hasattr(x, "dtype"):
    return default_int_dtype()
  if t is float or isinstance(x, float) and not hasattr(x, "dtype"):
    return default_float_dtype()
  if t is complex or isinstance(x, complex) and not hasattr(x, "dtype"):
    return default_complex_dtype()
  raise TypeError(f"{x!r} is not a Python scalar")


def is_python_scalar(x) -> bool:
  return type(x) in _PY_SCALAR_KIND


# --- typed Python scalars ----------------------------------------------------------------------
# A weak Python scalar promoted to the default dtype keeps its Python value: jaxprs print
# `mul a 0.1:f32[]` for it, while a NumPy scalar would print 0.10000000149011612.

def _typed_scalar_class(base: type) -> type:
  """A subclass of a Python scalar type that also carries a NumPy dtype (and is weak)."""

  def __new__(cls, value, dtype):
    self = base.__new__(cls, value)
    self.dtype = dtype
    return self

  def __getnewargs__(self):
    return (base(self), self.dtype)

  name = f"Typed{base.__name__.capitalize()}"

  def __repr__(self):  # JAX's: `TypedInt(1, dtype=int32)`
    return f"{name}({base.__repr__(self)}, dtype={np.dtype(self.dtype).name})"
  members = {"weak_type": True, "__new__": __new__, "__repr__": __repr__,
             "__getnewargs__": __getnewargs__, "__module__": __name__}
  if base is float:  # as JAX's, a typed float prints as the float (a typed int does not)
    members["__str__"] = float.__repr__
  return type(name, (base,), members)


TypedInt = _typed_scalar_class(int)
TypedFloat = _typed_scalar_class(float)
TypedComplex = _typed_scalar_class(complex)
typed_scalar_types = (TypedInt, TypedFloat, TypedComplex)


def check_python_int(x: int, dtype) -> None:
  info = np.iinfo(dtype)
  if not info.min <= x <= info.max:
    raise OverflowError(f"Python int {x} too large to convert to {np.dtype(dtype).name}")


def weak_scalar(x):
  """A Python scalar as a weak typed scalar of its default dtype."""
  t = type(x)
  if t is int:
    dt = default_int_dtype()
    check_python_int(x, dt)
    return TypedInt(x, dt)
  if t is float:
    return TypedFloat(x, default_float_dtype())
  if t is complex:
    return TypedComplex(x, default_complex_dtype())
  if t is bool:
    return np.bool_(x)
  return x


# --- the lattice -------------------------------------------------------------------------------

_WEAK_I, _WEAK_F, _WEAK_C = "i*", "f*", "c*"
_WEAK_NODES = (_WEAK_I, _WEAK_F, _WEAK_C)


def _lattice_edges(x64: bool) -> dict:
  if _ml is None and "ml_dtypes" in __import__("sys").modules:
    load_ml_dtypes()
  edges = {
      bool_: [_WEAK_I],
      _WEAK_I: [uint8, int8],
      uint8: [int16, uint16],
      uint16: [int32, uint32],
      uint32: [int64, uint64] if x64 else [int32, uint64],
      uint64: [_WEAK_F],
      int8: [int16],
      int16: [int32],
      int32: [int64],
      int64: [_WEAK_F],
      _WEAK_F: [float16, float32, _WEAK_C] + ([bfloat16] if bfloat16 is not None else [])
               + list(float8_dtypes),
      float16: [float32],
      float32: [float64, complex64],
      float64: [complex128],
      _WEAK_C: [complex64],
      complex64: [complex128],
      complex128: [],
  }
  if bfloat16 is not None:
    edges[bfloat16] = [float32]
    for d in float8_dtypes:
      edges[d] = []
    edges[_WEAK_I] = [uint8, int8, int4, uint4]
    edges[int4] = []
    edges[uint4] = []
  return edges


@functools.lru_cache(maxsize=2)
def _upper_bounds(x64: bool) -> dict:
  edges = _lattice_edges(x64)
  upper = {}

  def visit(node):
    if node in upper:
      return upper[node]
    out = {node}
    for nxt in edges.get(node, ()):
      out |= visit(nxt)
    upper[node] = frozenset(out)
    return upper[node]

  for node in edges:
    visit(node)
  return upper


def _least_upper_bound(nodes, x64: bool):
  upper = _upper_bounds(x64)
  nodes = list(dict.fromkeys(nodes))
  if any(n not in upper and _is_ml_dtype_unloaded(n) for n in nodes):
    upper = _upper_bounds(x64)  # distinct, in input order: error texts name them so
  if len(nodes) == 1:
    return nodes[0]
  common = frozenset.intersection(*(upper[n] for n in nodes))
  for c in common:
    if upper[c] == common:
      return c
  names = tuple(dtype_name(n) if not isinstance(n, str) else n for n in nodes)
  if any(d in float8_dtypes for d in nodes if not isinstance(d, str)):
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
        "unintended promotion, 8-bit floats do not support implicit promotion. If you'd like "
        "your inputs to be promoted to another type, you can do so explicitly using e.g. "
        "x.astype('float32')")
  raise TypePromotionError(f"Input dtypes {names} have no available implicit dtype promotion "
                           "path.")


def _node(dtype, weak: bool):
  if not weak:
    return dtype
  k = dtype.kind
  if k in "iu":
    return _WEAK_I
  if k == "f" or is_bfloat16(dtype):
    return _WEAK_F
  if k == "c":
    return _WEAK_C
  return dtype


def _default_for_node(node):
  if node == _WEAK_I:
    return default_int_dtype()
  if node == _WEAK_F:
    return default_float_dtype()
  return default_complex_dtype()


_promotion_cache: dict = {}


def promote_signature(sig: tuple):
  """(dtype, weak) pairs → (dtype, weak) of the result, memoised per config."""
  key = (sig, config.jax_enable_x64, config.jax_numpy_dtype_promotion)
  out = _promotion_cache.get(key)
  if out is None:
    out = _promotion_cache[key] = _promote_uncached(sig)
  return out


def _promote_uncached(sig):
  x64 = config.jax_enable_x64
  dts = [canonicalize_dtype(d) if not hasattr(d, "_is_extended") else d for d, _ in sig]
  weaks = [w for _, w in sig]
  if any(hasattr(d, "_is_extended") for d in dts):
    if all(d == dts[0] for d in dts):
      return dts[0], False
    raise TypeError(f"Cannot promote extended dtypes {tuple(str(d) for d in dts)}")
  if len(dts) == 1:
    return dts[0], weaks[0]
  if all(d == dts[0] for d in dts[1:]):
    return dts[0], all(weaks)
  nodes = dict.fromkeys(_node(d, w) for d, w in zip(dts, weaks))
  if config.jax_numpy_dtype_promotion == "strict":
    strong = {n for n in nodes if n not in _WEAK_NODES}
    if len(strong) > 1:
      names = tuple(dtype_name(d) for d, w in zip(dts, weaks) if not w)
      raise TypePromotionError(
          f"Input dtypes {names} have no available implicit dtype promotion path when "
          "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
          "output type, or set jax_numpy_dtype_promotion=standard.")
  out = _least_upper_bound(nodes, x64)
  if out in _WEAK_NODES:
    return canonicalize_dtype(_default_for_node(out)), True
  return canonicalize_dtype(out), False


def dtype_and_weak(x):
  """(dtype, weak_type) of any array-like: arrays, tracers, Python and NumPy scalars."""
  t = type(x)
  if t in _PY_SCALAR_KIND:
    return python_scalar_dtype(x), t is not bool
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval.dtype, aval.weak_type
  if t in typed_scalar_types:
    return x.dtype, True
  if isinstance(x, (np.ndarray, np.generic)):
    return x.dtype, False
  if hasattr(x, "dtype"):
    dt = x.dtype
    if isinstance(dt, type):
      dt = np.dtype(dt)
    return dt, False
  if isinstance(x, (list, tuple)):
    return np.asarray(x).dtype, False
  if isinstance(x, (int, float, complex)):
    return python_scalar_dtype(x), not isinstance(x, bool)
  raise TypeError(f"Cannot determine dtype of {x!r}")


def _as_dtype_or_value(x):
  if isinstance(x, str) or (isinstance(x, type) and not issubclass(x, (int, float, complex)))\
      or isinstance(x, np.dtype):
    try:
      if hasattr(x, "_is_extended"):
        return x, False
      if isinstance(x, type) and hasattr(x, "dtype") and not issubclass(x, np.generic):
        return np.dtype(x.dtype), False
      return np.dtype(x), False
    except TypeError:
      pass
  if x is int:
    return default_int_dtype(), True
  if x is float:
    return default_float_dtype(), True
  if x is complex:
    return default_complex_dtype(), True
  if hasattr(x, "_is_extended"):
    return x, False
  return dtype_and_weak(x)


def result_type(*args, return_weak_type_flag: bool = False):
  """jnp.result_type: promotion of arrays, scalars and dtypes (Python types count as weak)."""
  if not args:
    raise ValueError("at least one array or dtype is required")
  sig = tuple(_as_dtype_or_value(a) for a in args)
  dtype, weak = promote_signature(sig)
  return (dtype, weak) if return_weak_type_flag else dtype


def promote_types(a, b):
  """jnp.promote_types: lattice join of two dtypes without canonicalization."""
  da, db = _as_dtype_or_value(a)[0], _as_dtype_or_value(b)[0]
  out = _least_upper_bound((da, db), True)
  return {_WEAK_I: int64, _WEAK_F: float64, _WEAK_C: complex128}.get(out, out) \
      if isinstance(out, str) else np.dtype(out)


def is_weakly_typed(x) -> bool:
  return dtype_and_weak(x)[1]


def is_ml_float(dtype) -> bool:
  """bfloat16 or a float8 type. (Compare with care: `np.dtype('float64') == None` is True.)"""
  if _ml is None and not _is_ml_dtype_unloaded(dtype):
    return False
  return dtype == bfloat16 or dtype in float8_dtypes


def is_bfloat16(dtype) -> bool:
  if _ml is None and not _is_ml_dtype_unloaded(dtype):
    return False
  return dtype == bfloat16


_ABSTRACT_FLOATS = (np.floating, np.inexact, np.number, np.generic)


def _load_ml_dtypes_for_names(*xs) -> None:
  """Loads ml_dtypes when a dtype is named by a string NumPy does not know yet ('bfloat16')."""
  if _ml is None and any(isinstance(x, str) and not _numpy_knows(x) for x in xs):
    load_ml_dtypes()


def _numpy_knows(name: str) -> bool:
  try:
    np.dtype(name)
  except TypeError:
    return False
  return True


# `issubdtype` when either side is an extended dtype (keys, libraries' extended dtypes): set by
# rng.prng at its import, as it stands on this module (issue 29).
_issubdtype_extended: list = [None]


def issubdtype(a, b) -> bool:
  _load_ml_dtypes_for_names(a, b)
  if hasattr(a, "_is_extended") or hasattr(b, "_is_extended"):
    return _issubdtype_extended[0](a, b)
  if isinstance(b, type) and hasattr(b, "dtype") and not issubclass(b, np.generic):
    b = b.dtype
  if isinstance(a, type) and hasattr(a, "dtype") and not issubclass(a, np.generic):
    a = a.dtype
  if (_ml is not None or "ml_dtypes" in sys.modules) and _safe_is_ml_float(a):
    # ml_dtypes' scalar types do not subclass np.floating; JAX still counts them as floats.
    if isinstance(b, type) and b in _ABSTRACT_FLOATS:
      return True
    return _safe_eq(b, np.dtype(a))
  return np.issubdtype(a, b)


def _safe_is_ml_float(a) -> bool:
  try:
    return is_ml_float(np.dtype(a))
  except TypeError:
    return False


def _safe_eq(a, b) -> bool:
  try:
    return np.dtype(a) == b
  except TypeError:
    return False


def is_inexact(dtype) -> bool:
  dtype = np.dtype(dtype) if not hasattr(dtype, "_is_extended") else dtype
  return dtype.kind in "fc" or is_ml_float(dtype)


def is_floating(dtype) -> bool:
  return dtype.kind == "f" or is_ml_float(dtype)


def is_complex(dtype) -> bool:
  return np.dtype(dtype).kind == "c"


def is_integer(dtype) -> bool:
  return np.dtype(dtype).kind in "iu"


def to_inexact_dtype(dtype):
  """The float dtype that an integer/bool input of a float-only function becomes."""
  if is_inexact(dtype):
    return dtype
  # Up to 32 bits the result is float32 even with x64 on (JAX 0.10: mean of int32 is float32).
  return float32 if np.dtype(dtype).itemsize <= 4 else default_float_dtype()


def finfo(dtype):
  dtype = _as_dtype_or_value(dtype)[0]
  if is_ml_float(dtype):
    return _ml.finfo(dtype)
  return np.finfo(dtype)


def iinfo(dtype):
  dtype = _as_dtype_or_value(dtype)[0]
  if (int4 is not None or _is_ml_dtype_unloaded(np.dtype(dtype))) and dtype in (int4, uint4):
    return _ml.iinfo(dtype)
  return np.iinfo(dtype)


def coerce_to_array(x, dtype=None):
  """A NumPy array of `x` in its canonical dtype (Python scalars to their default dtype)."""
  if dtype is None:
    dtype, _ = dtype_and_weak(x)
    dtype = canonicalize_dtype(dtype)
  return np.asarray(x, dtype=dtype)


def kind_of_dtype(dtype) -> str:
  """NumPy's kind letter, with bfloat16 and float8 types counted as floating ('f')."""
  if is_ml_float(dtype):
    return "f"
  return np.dtype(dtype).kind


if "ml_dtypes" in __import__("sys").modules:
  load_ml_dtypes()


# --- jax.dtypes helpers (issue 14) -------------------------------------------------------------

_SCALAR_TYPE_OF_KIND = {"b": bool, "i": int, "u": int, "f": float, "V": float, "c": complex}


def scalar_type_of(x) -> type:
  """The Python scalar type (bool, int, float, complex) matching `x`'s dtype kind."""
  dtype = dtype_and_weak(x)[0]
  if is_ml_float(dtype):
    return float
  kind = np.dtype(dtype).kind
  if kind not in _SCALAR_TYPE_OF_KIND or kind == "V":
    raise TypeError(f"Value {x!r} with dtype {dtype} is not a valid JAX array type. Only arrays "
                    "of numeric types are supported by JAX.")
  return _SCALAR_TYPE_OF_KIND[kind]


def itemsize_bits(dtype) -> int:
  """Bits per element of `dtype` (4 for int4; extended dtypes such as keys have none)."""
  if dtype is None or hasattr(dtype, "_is_extended"):
    raise ValueError(f"unexpected input: dtype={dtype}")
  dtype = np.dtype(dtype)
  if dtype.name in ("int4", "uint4", "float4_e2m1fn"):
    return 4
  if dtype.name in ("int2", "uint2"):
    return 2
  return dtype.itemsize * 8


# The float8 types without an infinity, as JAX lists them (JAX counts float4/float6 and
# float8_e8m0fnu as having one, though they have none: its list is the spec here).
_FINITE_FLOATS = frozenset(("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz",
                            "float8_e4m3b11fnuz", "float8_e5m3fnu"))


def supports_inf(dtype) -> bool:
  """Whether `dtype` has infinities, as JAX answers it (flax's fp8 meta dtype's zero asks)."""
  dtype = np.dtype(dtype)
  return dtype.kind in "fc" or (dtype.kind == "V" and dtype.name not in _FINITE_FLOATS
                                and "float" in dtype.name)


def __getattr__(name):  # `jax._src.dtypes` names JAX libraries import; see extended_dtypes.py
  if name in ("extended", "ExtendedDType"):
    from jaxlite._src.base import extended_dtypes
    return getattr(extended_dtypes, name)
  if name == "DType":
    return np.dtype
  raise AttributeError(f"module 'jaxlite._src.base.dtypes' has no attribute {name!r}")
