"""Python operators and NumPy-style methods of `jax.Array`, shared by arrays and tracers.

They are set on the common base class `core.Array`, so a tracer supports exactly what a
concrete array does. Methods defer to jnp functions (imported lazily to keep import cheap).
"""
from __future__ import annotations

import importlib
import sys

import numpy as np

from jaxlite._src.base import fp_quiet
from jaxlite._src.base.config import config
from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.rng import prng
from jaxlite._src.base.array import ArrayImpl, _eager_from_numpy
from jaxlite._src.numpy import ufuncs as uf
from jaxlite._src.numpy.util import _scalar_partner
from jaxlite._src.state.types import AbstractRef


_FAST_TYPES = {int, float, complex, bool}


def _defer_to_unrecognized(fn, refused=None):
  # Returning NotImplemented for foreign types lets their reflected operator run.
  def op(self, other):
    if type(other) not in _FAST_TYPES:
      other = _unwrap_jax_array(other)
      if not _accepted(other):
        return _decline(self, other, refused)
    return fn(self, other)
  op.__name__ = fn.__name__
  return op


# JAX's `+`, `*`, `==` and `!=` raise for the Python containers that would otherwise concatenate,
# repeat (asking the array for `__index__`) or compare by identity: (operator, refused types).
_REFUSED = {"add": ("+", (list, tuple)), "mul": ("*", (list, tuple)),
            "eq": ("==", (dict, list, set, tuple)), "ne": ("==", (dict, list, set, tuple))}


def _decline(self, other, refused):
  """NotImplemented, or JAX's TypeError for an operand type it refuses outright.
  `refused` is (operator, types, reflected)."""
  if refused is not None and type(other) in refused[1]:
    names = (type(other).__name__, type(self).__name__) if refused[2] else (
        type(self).__name__, type(other).__name__)
    raise TypeError(f"unsupported operand type(s) for {refused[0]}: {names[0]!r} and "
                    f"{names[1]!r}")
  return NotImplemented


def _unwrap_jax_array(x):
  """An array-like operand (a flax Variable) as its array, taken first as JAX's operators do: the
  array then enters the op, so a tracer inside it is seen by the current trace."""
  if not isinstance(x, core.Array) and hasattr(x, "__jax_array__"):
    return x.__jax_array__()
  return x


_SCALARS = (int, float, complex, bool, np.ndarray, np.generic)


def _eager_arith(np_fn, fn, reflected, refused=None):
  """`+`, `-` or `*` of an uncommitted Array in eager mode with an Array of the same dtype, weak
  type and shape, or with a Python number that keeps its dtype: NumPy's ufunc straight away.
  This is what `fn` would compute through promote_args, the primitive's bind and impl (same
  dtype, same weak type: `_scalar_way` is the promotion fast path's own rule), minus ~2 µs
  of Python per call. Anything else, and any eager hook (`core.eager_fast_trace` is None while
  debug_nans, no_execution... wrap EvalTrace), takes `fn`."""
  at = ArrayImpl
  from_numpy = _eager_from_numpy  # (this path runs on the eval trace only)
  new = object.__new__
  state = core._state
  routes = core.eager_routes  # mutated in place, never rebound
  quiet, loud = fp_quiet.quiet, fp_quiet.loud
  ways, ways_by_x64 = _SCALAR_WAYS, _SCALAR_WAYS_BY_X64
  dev = devices  # (its context_meshes is rebound by set_mesh: read through the module)

  def op(self, other):
    if state.trace is core.eager_fast_trace and type(self) is at and self._device is None \
        and core.default_eager_route is None:
      v = self._value
      t = type(other)
      if routes and (type(v) in routes or t is at and type(other._value) in routes):
        pass  # another backend's buffer: the general path routes it
      elif t is float or t is int:
        if not self.weak_type:  # (a weak array with a Python number: the general path)
          way = ways[t][v.dtype]
          if way is _BY_X64:
            way = ways_by_x64[t, bool(config.jax_enable_x64)][v.dtype]
          if way is not None:
            s = other if way is _AS_IS else way(other)
            token = quiet()  # as eager dispatch (core): XLA never warns
            try:
              out = np_fn(s, v) if reflected else np_fn(v, s)
            finally:
              loud(token)
            if dev.context_meshes:  # placed on the context mesh (set_mesh): the full call
              return from_numpy(out, False)
            a = new(at)  # _from_numpy(out, False), inline: its call is ~4% of this path
            a._value, a.weak_type, a._device, a._aval = out, False, None, None
            return a
      elif t is at and other._device is None and v.dtype.kind in "fiuc":
        w = other._value
        if w.dtype == v.dtype and w.shape == v.shape and other.weak_type == self.weak_type:
          token = quiet()
          try:
            return from_numpy(np_fn(w, v) if reflected else np_fn(v, w), self.weak_type)
          finally:
            loud(token)
    if type(other) not in _FAST_TYPES:
      other = _unwrap_jax_array(other)
      if not _accepted(other):
        return _decline(self, other, refused)
    return fn(self, other)
  op.__name__ = fn.__name__
  return op


# NumPy's own weak scalar rule (NEP 50) casts a Python number to a native float or complex
# array's dtype exactly as `_scalar_partner`'s converter would: no conversion call needed there.
_NEP50_CASTS = frozenset({np.float16, np.float32, np.float64, np.complex64, np.complex128})
_AS_IS = object()


def _scalar_way(scalar_type, dt):
  """How `_eager_arith` passes a Python number of `scalar_type` to NumPy beside a non-weak array
  of dtype `dt`, under the current jax_enable_x64: as it is (`_AS_IS`), through a converter, or
  None (the general path: the result's dtype is not `dt`, or `dt` is not a plain numeric
  dtype)."""
  if dt.kind not in "fiuc":
    return None
  conv = _scalar_partner(scalar_type, dt, False)
  if conv is None:
    return None
  return _AS_IS if conv in _NEP50_CASTS else conv


# x64 decides the way only for the 64-bit dtypes, the ones JAX's canonicalization narrows
# without it (an int64 array made under x64 meets an int32 number, and promotes, once x64 is
# off), and for a Python int beside an integer array (the int is checked against int32's range
# without x64, int64's with it); for every other pair the way is the same in both modes
# (tests/test_fast_paths.py checks this).
_X64_DEPENDENT = frozenset(map(np.dtype, ("int64", "uint64", "float64", "complex128")))


def _x64_decides(scalar_type, dt) -> bool:
  return dt in _X64_DEPENDENT or scalar_type is int and dt.kind in "iu"


_BY_X64 = object()


class _Ways(dict):
  """{dtype: way} for one scalar type, filled on first use: `_scalar_way`, or in
  `_SCALAR_WAYS` where x64 decides (`_x64_decides`) `_BY_X64`: look again in the table of this
  scalar type and x64 setting, `_SCALAR_WAYS_BY_X64[scalar_type, x64]`."""
  __slots__ = ("scalar_type", "by_x64")

  def __init__(self, scalar_type, by_x64: bool):
    super().__init__()
    self.scalar_type, self.by_x64 = scalar_type, by_x64

  def __missing__(self, dt):
    if not self.by_x64 and _x64_decides(self.scalar_type, dt):
      way = _BY_X64
    else:
      way = _scalar_way(self.scalar_type, dt)  # (read under the x64 this table is for)
    self[dt] = way
    return way


_SCALAR_WAYS = {t: _Ways(t, False) for t in (int, float)}
_SCALAR_WAYS_BY_X64 = {(t, x64): _Ways(t, True) for t in (int, float) for x64 in (False, True)}


_EAGER_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def _accepted(x) -> bool:
  return isinstance(x, (core.Array,) + _SCALARS) or type(x) in (list, tuple) and False \
      or hasattr(x, "__jax_array__")


def _swap(fn):
  def rop(self, other):
    return fn(other, self)
  return rop


_BINARY = {
    "add": uf.add, "sub": uf.subtract, "mul": uf.multiply, "truediv": uf.true_divide,
    "floordiv": uf.floor_divide, "mod": uf.remainder, "pow": uf.power, "and": uf.bitwise_and,
    "or": uf.bitwise_or, "xor": uf.bitwise_xor, "lshift": uf.left_shift,
    "rshift": uf.right_shift,
}
_COMPARE = {"eq": uf.equal, "ne": uf.not_equal, "lt": uf.less, "le": uf.less_equal,
            "gt": uf.greater, "ge": uf.greater_equal}


def _matmul(a, b):
  from jaxlite._src.numpy import matmul as linalg_basic
  return linalg_basic.matmul(a, b)


def _divmod(a, b):
  return uf.floor_divide(a, b), uf.remainder(a, b)


def _operator_round(self, ndigits=None):
  """Builtin `round(x)`: elementwise at any shape and traceable, as JAX's; without `ndigits`
  the result is cast to the default integer dtype (Python's `round(2.5)` is an int), not
  converted with `int()`, which only a concrete scalar allows."""
  out = uf.round(self, ndigits or 0)
  return out if ndigits is not None else out.astype(int)


def _getitem(self, idx):
  if isinstance(self, core.Tracer) and type(self.aval) is AbstractRef:  # a ref staged by jit
    from jaxlite._src.state import primitives
    return primitives.ref_get(self, idx)
  from jaxlite._src.numpy import indexing
  return indexing.getitem(self, idx)


def _setitem(self, idx, val):
  if isinstance(self, core.Tracer) and type(self.aval) is AbstractRef:
    from jaxlite._src.state import primitives
    return primitives.ref_set(self, idx, val)
  raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                  "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
                  "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")


def _jnp():
  # sys.modules first: import_module costs microseconds on every method call (x.sum()).
  return sys.modules.get("jaxlite.numpy") or importlib.import_module("jaxlite.numpy")


def _method(name):
  def m(self, *args, **kwargs):
    return getattr(_jnp(), name)(self, *args, **kwargs)
  m.__name__ = name
  return m


_METHODS = ("all", "any", "argmax", "argmin", "argpartition", "argsort", "choose",
            "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "max",
            "mean", "min", "nonzero", "prod", "ptp", "repeat", "searchsorted", "sort",
            "squeeze", "std", "sum", "swapaxes", "take", "trace", "var", "round")


def _clip(self, min=None, max=None):  # noqa: A002 - numpy's names
  # JAX's method passes the bounds by keyword, so jnp.clip's jaxpr takes them as (max, min).
  return _jnp().clip(self, min=min, max=max)


def _compress(self, condition, axis=None, *, size=None, fill_value=0):
  # x.compress(c) is jnp.compress(c, x): the condition comes first in the function.
  return _jnp().compress(condition, self, axis, size=size, fill_value=fill_value)


def _astype(self, dtype, copy=False, device=None):
  """JAX's astype: one convert_element_type (none for a strong array already of `dtype`, a
  strong cast for a weak one), then a `copy` only when asked for."""
  from jaxlite._src.numpy.creation import array
  from jaxlite._src.base import dtypes as dt
  dtype = dt.default_float_dtype() if dtype is None else dt.check_user_dtype(dtype, "astype")
  out = array(self, dtype=dtype, copy=False)
  if copy:
    from jaxlite._src.lax.identity_ops import copy_p
    out = copy_p.bind(out)
  return out


def _reshape(self, *args, order="C", **kw):
  from jaxlite._src.numpy.where_reshape import reshape
  shape = args[0] if len(args) == 1 else args
  if "shape" in kw:
    shape = kw["shape"]
  return reshape(self, shape, order)


def _transpose(self, *args):
  from jaxlite._src.numpy.where_reshape import transpose
  axes = args[0] if len(args) == 1 and not isinstance(args[0], int) else (args or None)
  return transpose(self, axes)


def _at(self):
  from jaxlite._src.numpy import index_update
  return index_update._IndexUpdateHelper(self)


def _flatten(self, order="C"):
  from jaxlite._src.numpy.where_reshape import ravel
  return ravel(self, order)


def _T(self):
  from jaxlite._src.numpy.where_reshape import transpose
  return transpose(self)


def _mT(self):
  from jaxlite._src.numpy.where_reshape import matrix_transpose
  return matrix_transpose(self)


def _real(self):
  return uf.real(self)


def _imag(self):
  return uf.imag(self)


def _copy(self):
  from jaxlite._src.numpy.creation import array
  return array(self, copy=True)


def _view(self, dtype=None, type=None):
  """The array's bits read as `dtype` (NumPy's `ndarray.view`): the last axis scales by the ratio
  of the item sizes; bool and complex go through uint8 and their real parts."""
  from jaxlite._src.numpy.creation import asarray
  from jaxlite._src.numpy.scalar_types import dtype as jnp_dtype
  if type is not None:
    raise NotImplementedError("`type` argument of array.view() is not supported.")
  if dtype is None:
    return self
  return _bitcast_view(asarray(self), np.dtype(jnp_dtype(dtype)))


def _bitcast_view(x, dtype):
  from jaxlite._src.lax.elementwise_functions import bitcast_convert_type
  from jaxlite._src.numpy.shape_ops import stack
  if x.ndim == 0:
    if x.dtype.itemsize != dtype.itemsize:
      raise ValueError("view() of a 0d array is only supported if the itemsize is unchanged.")
    return _bitcast_view(x[None], dtype)[0]
  if (x.shape[-1] * x.dtype.itemsize) % dtype.itemsize:
    raise ValueError("When changing to a larger dtype, its size must be a divisor of the total "
                     "size in bytes of the last axis of the array.")
  if x.dtype == dtype:
    return x
  if x.dtype == np.bool_:
    return _bitcast_view(x.astype(np.uint8), dtype)
  if x.dtype.kind == "c":  # (..., n) complex -> (..., 2n) real: re, im interleaved
    parts = stack([uf.real(x), uf.imag(x)], axis=-1)
    return _bitcast_view(parts.reshape(*x.shape[:-1], 2 * x.shape[-1]), dtype)
  if dtype == np.bool_:
    return _bitcast_view(x, np.dtype(np.uint8)).astype(np.bool_)
  if dtype.kind == "c":
    parts = _bitcast_view(x, np.dtype(f"f{dtype.itemsize // 2}"))
    return (parts[..., 0::2] + 1j * parts[..., 1::2]).astype(dtype)
  ratio_up, ratio_down = dtype.itemsize // x.dtype.itemsize, x.dtype.itemsize // dtype.itemsize
  if ratio_up > 1:  # lax's bitcast takes a trailing axis of the ratio
    return bitcast_convert_type(x.reshape(*x.shape[:-1], x.shape[-1] // ratio_up, ratio_up),
                                dtype)
  out = bitcast_convert_type(x, dtype)
  return out.reshape(*out.shape[:-2], out.shape[-2] * out.shape[-1]) if ratio_down > 1 else out


def set_array_methods(cls) -> None:
  for name, fn in _BINARY.items():
    op, types = _REFUSED.get(name, (None, None))
    refused, rrefused = (op, types, False), (op, types, True)
    if op is None:
      refused = rrefused = None
    if name in _EAGER_ARITH:
      setattr(cls, f"__{name}__", _eager_arith(_EAGER_ARITH[name], fn, False, refused))
      setattr(cls, f"__r{name}__", _eager_arith(_EAGER_ARITH[name], _swap(fn), True, rrefused))
      continue
    setattr(cls, f"__{name}__", _defer_to_unrecognized(fn, refused))
    setattr(cls, f"__r{name}__", _defer_to_unrecognized(_swap(fn), rrefused))
  for name, fn in _COMPARE.items():
    op, types = _REFUSED.get(name, (None, None))
    setattr(cls, f"__{name}__", _defer_to_unrecognized(fn, op and (op, types, False)))
  cls.__matmul__ = _defer_to_unrecognized(_matmul)
  cls.__rmatmul__ = _defer_to_unrecognized(_swap(_matmul))
  cls.__divmod__ = _defer_to_unrecognized(_divmod)
  cls.__rdivmod__ = _defer_to_unrecognized(_swap(_divmod))
  cls.__neg__ = uf.negative
  cls.__pos__ = uf.positive
  cls.__abs__ = uf.absolute
  cls.__invert__ = uf.invert
  cls.__getitem__ = _getitem
  cls.__setitem__ = _setitem
  cls.__round__ = _operator_round
  for name in _METHODS:
    setattr(cls, name, _method(name))
  cls.astype = _astype
  cls.clip = _clip
  cls.compress = _compress
  cls.reshape = _reshape
  cls.transpose = _transpose
  cls.at = property(_at)
  cls.flatten = _flatten
  cls.ravel = _flatten
  cls.T = property(_T)
  cls.mT = property(_mT)
  cls.real = property(_real)
  cls.imag = property(_imag)
  cls.copy = _copy
  cls.view = _view
  from jaxlite._src.numpy.array_api_metadata import __array_namespace__
  cls.__array_namespace__ = __array_namespace__


set_array_methods(core.Array)
# ArrayImpl and Tracer define their own __eq__-sensitive __hash__; keep them unhashable.
core.Array.__hash__ = None


prng.register_above(getitem=_getitem)
