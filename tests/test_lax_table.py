"""Every lax primitive checked by value against NumPy (no JAX needed), eager and under jit, with
x64 on and off, over integer boundary values and the special floats (±0, ±inf, NaN)."""
import importlib
import pkgutil
import warnings

import numpy as np
import pytest

import jaxlite as jax
import jaxlite._src.lax as lax_pkg
from jaxlite import lax
from jaxlite._src import core
from conftest import x64

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "float32", "float64")
SIGNED, UNSIGNED = INTS[:4], INTS[4:]

# Primitives whose values are checked by their own suites (they need named axes, sub-jaxprs,
# window or index specs, or decompositions that a table of boundary values does not exercise).
EXCLUDED = {
    **dict.fromkeys(("cond", "while", "scan"), "control flow: tests/test_control_flow.py"),
    **dict.fromkeys(("psum", "pmax", "pmin", "all_gather", "axis_index"),
                    "need a named axis: tests/test_vmap.py"),
    **dict.fromkeys(("gather", "scatter", "scatter-add", "scatter-mul", "scatter-min",
                     "scatter-max", "scatter-sub"), "index specs: tests/test_indexing.py"),
    **dict.fromkeys(("conv_general_dilated", "reduce_window_sum", "reduce_window_max",
                     "reduce_window_min", "reduce_window"), "windows: tests/test_windowed.py"),
    "fft": "transforms: tests/test_fft.py",
    **dict.fromkeys(("cholesky", "eigh", "eig", "lu", "lu_pivots_to_permutation", "qr", "svd",
                     "triangular_solve", "schur", "cholesky_update", "symmetric_product",
                     "householder_product", "tridiagonal_solve"),
                    "decompositions: tests/test_linalg.py"),
}


def lax_primitive_names() -> set:
  """Every primitive defined in a module of jaxlite._src.lax (a new one needs a row here)."""
  names = set()
  for info in pkgutil.walk_packages(lax_pkg.__path__, "jaxlite._src.lax."):
    for v in vars(importlib.import_module(info.name)).values():
      if isinstance(v, core.Primitive):
        names.add(v.name)
  return names


# --- values ------------------------------------------------------------------------------------

def int_values(dt) -> np.ndarray:
  i = np.iinfo(dt)
  vals = [i.min, i.max, 0, 1, 2, 7, i.max // 2, i.max - 1]
  vals += [-1, -2, i.min + 1] if i.min < 0 else [i.max // 2 + 1]
  return np.array(vals, dt)


def float_values(dt) -> np.ndarray:
  # No subnormal inputs or results: XLA's CPU backend flushes them to zero, NumPy does not.
  f = np.finfo(dt)
  return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 0.5, -2.5, 3.5, 0.75, f.max,
                   -f.max, 100], dt)


def values(dt) -> np.ndarray:
  return int_values(dt) if np.dtype(dt).kind in "iu" else float_values(dt)


def pairs(dt):
  v = values(dt)
  return np.repeat(v, len(v)), np.tile(v, len(v))


def dtypes_for(kinds: str, enabled: bool):
  out = [d for d in INTS + FLOATS if np.dtype(d).kind in kinds]
  return out if enabled else [d for d in out if np.dtype(d).itemsize < 8]


# --- references for integer semantics (Python ints, wrapped to the dtype) ----------------------

def wrap(v: int, dt) -> int:
  bits = np.dtype(dt).itemsize * 8
  v %= 1 << bits
  return v - (1 << bits) if np.dtype(dt).kind == "i" and v >= 1 << (bits - 1) else v


def per_int(fn):
  """A NumPy reference from a rule over Python ints (result wrapped to the operand dtype)."""
  def ref(*args):
    dt = args[0].dtype
    b = np.broadcast_arrays(*args)
    out = [wrap(fn(dt, *map(int, vs)), dt) for vs in zip(*(a.ravel() for a in b))]
    return np.array(out, dt).reshape(b[0].shape)
  return ref


def _bits(dt):
  return np.dtype(dt).itemsize * 8


def _unsigned(dt, v):
  return v % (1 << _bits(dt))


def _trunc_div(dt, x, y):
  if y == 0:
    return -1  # XLA: all bits set
  q = abs(x) // abs(y)
  return q if (x < 0) == (y < 0) else -q


def _trunc_rem(dt, x, y):
  if y == 0:
    return x
  return x - _trunc_div(dt, x, y) * y


def _shift_left(dt, x, s):
  return 0 if s < 0 or s >= _bits(dt) else x << s


def _shift_right_logical(dt, x, s):
  return 0 if s < 0 or s >= _bits(dt) else _unsigned(dt, x) >> s


def _shift_right_arithmetic(dt, x, s):
  signed = wrap(x, dt.str.replace("u", "i"))
  return signed >> min(max(s, _bits(dt) - 1) if s < 0 else s, _bits(dt) - 1)


def _clz(dt, x):
  return _bits(dt) - _unsigned(dt, x).bit_length()


def _popcount(dt, x):
  return bin(_unsigned(dt, x)).count("1")


def _mulhi(dt, x, y):
  return (x * y) >> _bits(dt)


def _integer_pow3(dt, x):
  return x ** 3


# --- references for floats --------------------------------------------------------------------

def _f64(fn):
  """A float reference computed in float64 and rounded to the operand dtype."""
  def ref(*args):
    with np.errstate(all="ignore"):
      return np.asarray(fn(*(np.asarray(a, np.float64) for a in args))).astype(args[0].dtype)
  return ref


def _round_away(x):
  with np.errstate(invalid="ignore"):
    up = np.abs(x - np.trunc(x)) >= 0.5
  return np.copysign(np.abs(np.trunc(x)) + up, x).astype(x.dtype)


def _sign(x):
  return np.where(x == 0, x, np.sign(x))


def _max(x, y):  # NaN propagates; +0 is above -0
  return np.where(np.isnan(x) | np.isnan(y), np.nan,
                  np.where((x == y) & (x == 0), np.where(np.signbit(x), y, x), np.maximum(x, y)))


def _min(x, y):
  return np.where(np.isnan(x) | np.isnan(y), np.nan,
                  np.where((x == y) & (x == 0), np.where(np.signbit(x), x, y), np.minimum(x, y)))


def _logistic(x):
  return 1 / (1 + np.exp(-x))


def _rem_float(x, y):
  return np.fmod(x, y)


# Unary rows: name -> (call, kinds, exact reference for ints, reference for floats, exact floats)
UNARY = {
    "neg": (lax.neg, "iuf", per_int(lambda dt, x: -x), np.negative, True),
    "sign": (lax.sign, "iuf", per_int(lambda dt, x: (x > 0) - (x < 0)), _sign, True),
    "abs": (lax.abs, "if", per_int(lambda dt, x: abs(x)), np.abs, True),
    "not": (lax.bitwise_not, "iu", per_int(lambda dt, x: ~x), None, True),
    "population_count": (lax.population_count, "iu", per_int(_popcount), None, True),
    "clz": (lax.clz, "iu", per_int(_clz), None, True),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), "iuf", per_int(_integer_pow3),
                    _f64(lambda x: x ** 3), False),
    "square": (lax.square, "iuf", per_int(lambda dt, x: x * x), _f64(np.square), True),
    "floor": (lax.floor, "f", None, np.floor, True),
    "ceil": (lax.ceil, "f", None, np.ceil, True),
    "round": (lax.round, "f", None, _round_away, True),
    "is_finite": (lax.is_finite, "f", None, np.isfinite, True),
    "sqrt": (lax.sqrt, "f", None, _f64(np.sqrt), True),
    "rsqrt": (lax.rsqrt, "f", None, _f64(lambda x: 1 / np.sqrt(x)), False),
    "cbrt": (lax.cbrt, "f", None, _f64(np.cbrt), False),
    "exp": (lax.exp, "f", None, _f64(np.exp), False),
    "exp2": (lax.exp2, "f", None, _f64(np.exp2), False),
    "log": (lax.log, "f", None, _f64(np.log), False),
    "log1p": (lax.log1p, "f", None, _f64(np.log1p), False),
    "expm1": (lax.expm1, "f", None, _f64(np.expm1), False),
    "tanh": (lax.tanh, "f", None, _f64(np.tanh), False),
    "logistic": (lax.logistic, "f", None, _f64(_logistic), False),
    "sin": (lax.sin, "f", None, _f64(np.sin), False),
    "cos": (lax.cos, "f", None, _f64(np.cos), False),
    "tan": (lax.tan, "f", None, _f64(np.tan), False),
    "asin": (lax.asin, "f", None, _f64(np.arcsin), False),
    "acos": (lax.acos, "f", None, _f64(np.arccos), False),
    "atan": (lax.atan, "f", None, _f64(np.arctan), False),
    "sinh": (lax.sinh, "f", None, _f64(np.sinh), False),
    "cosh": (lax.cosh, "f", None, _f64(np.cosh), False),
    "asinh": (lax.asinh, "f", None, _f64(np.arcsinh), False),
    "acosh": (lax.acosh, "f", None, _f64(np.arccosh), False),
    "atanh": (lax.atanh, "f", None, _f64(np.arctanh), False),
}

# Binary rows: name -> (call, kinds, reference for ints, reference for floats, exact floats)
BINARY = {
    "add": (lax.add, "iuf", per_int(lambda dt, x, y: x + y), np.add, True),
    "sub": (lax.sub, "iuf", per_int(lambda dt, x, y: x - y), np.subtract, True),
    "mul": (lax.mul, "iuf", per_int(lambda dt, x, y: x * y), np.multiply, True),
    "div": (lax.div, "iuf", per_int(_trunc_div), np.divide, True),
    "rem": (lax.rem, "iuf", per_int(_trunc_rem), _rem_float, True),
    "max": (lax.max, "iuf", per_int(lambda dt, x, y: max(x, y)), _max, True),
    "min": (lax.min, "iuf", per_int(lambda dt, x, y: min(x, y)), _min, True),
    "and": (lax.bitwise_and, "iu", per_int(lambda dt, x, y: x & y), None, True),
    "or": (lax.bitwise_or, "iu", per_int(lambda dt, x, y: x | y), None, True),
    "xor": (lax.bitwise_xor, "iu", per_int(lambda dt, x, y: x ^ y), None, True),
    "shift_left": (lax.shift_left, "iu", per_int(_shift_left), None, True),
    "shift_right_logical": (lax.shift_right_logical, "iu", per_int(_shift_right_logical), None,
                            True),
    "shift_right_arithmetic": (lax.shift_right_arithmetic, "iu",
                               per_int(_shift_right_arithmetic), None, True),
    "mulhi": (lax.mulhi, "iu", per_int(_mulhi), None, True),
    "pow": (lax.pow, "f", None, _f64(np.power), False),
    "atan2": (lax.atan2, "f", None, _f64(np.arctan2), False),
    "nextafter": (lax.nextafter, "f", None, lambda x, y: np.where(x == y, y, np.nextafter(x, y)),
                  True),
}

COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}

_TOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13}


def assert_same(got, want, exact=True):
  """Same dtype and shape; equal values, NaN where NaN, the sign of zero kept; else tolerance."""
  got = np.asarray(got)
  want = np.asarray(want).astype(got.dtype) if want.dtype != got.dtype and got.dtype.kind == "b" \
      else np.asarray(want)
  assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
  if got.dtype.kind != "f":
    np.testing.assert_array_equal(got, want)
    return
  assert (np.isnan(got) == np.isnan(want)).all(), (got, want)
  fin = np.isfinite(want)
  assert (got[~fin & ~np.isnan(want)] == want[~fin & ~np.isnan(want)]).all(), (got, want)
  if exact:
    ok = np.isnan(want) | ((got == want) & (np.signbit(got) == np.signbit(want)))
    assert ok.all(), f"got {got[~ok]} want {want[~ok]} at {np.nonzero(~ok)[0]}"
  else:
    np.testing.assert_allclose(got[fin], want[fin], rtol=_TOL[got.dtype.name], atol=0)


def eager_and_jit(fn, *args):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return fn(*args), jax.jit(fn)(*args)


def _cases(table):
  return [(name, dt, on) for on in (False, True) for name, row in table.items()
          for dt in dtypes_for(row[1], on)]


@pytest.mark.parametrize("name,dt,x64_on", _cases(UNARY))
def test_unary(name, dt, x64_on):
  call, _, int_ref, float_ref, exact = UNARY[name]
  x = values(dt)
  with x64(x64_on):
    want = int_ref(x) if np.dtype(dt).kind in "iu" else float_ref(x)
    for got in eager_and_jit(call, x):
      assert_same(got, want, exact or np.dtype(dt).kind in "iu")


@pytest.mark.parametrize("name,dt,x64_on", _cases(BINARY))
def test_binary(name, dt, x64_on):
  call, _, int_ref, float_ref, exact = BINARY[name]
  x, y = pairs(dt)
  with x64(x64_on):
    with np.errstate(all="ignore"):
      want = int_ref(x, y) if np.dtype(dt).kind in "iu" else float_ref(x, y)
    for got in eager_and_jit(call, x, y):
      assert_same(got, want, exact or np.dtype(dt).kind in "iu")
