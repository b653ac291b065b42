"""The promotion lattice: JAX-COMPAT §3.4's result table, weak types, x64, oracle agreement."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite._src.base import dtypes

from conftest import oracle, x64

# JAX-COMPAT §3.4, verbatim (x32, symmetric). `*` marks a weak result.
TABLE = """
        b1   u8  u16  u32   i8  i16  i32 bf16  f16  f32  c64   i*   f*   c*
   b1   b1   u8  u16  u32   i8  i16  i32 bf16  f16  f32  c64 i32* f32* c64*
   u8   u8   u8  u16  u32  i16  i16  i32 bf16  f16  f32  c64   u8 f32* c64*
  u16  u16  u16  u16  u32  i32  i32  i32 bf16  f16  f32  c64  u16 f32* c64*
  u32  u32  u32  u32  u32  i32  i32  i32 bf16  f16  f32  c64  u32 f32* c64*
   i8   i8  i16  i32  i32   i8  i16  i32 bf16  f16  f32  c64   i8 f32* c64*
  i16  i16  i16  i32  i32  i16  i16  i32 bf16  f16  f32  c64  i16 f32* c64*
  i32  i32  i32  i32  i32  i32  i32  i32 bf16  f16  f32  c64  i32 f32* c64*
 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16  f32  f32  c64 bf16 bf16  c64
  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  c64  f16  f16  c64
  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  c64  f32  f32  c64
  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64
   i* i32*   u8  u16  u32   i8  i16  i32 bf16  f16  f32  c64 i32* f32* c64*
   f* f32* f32* f32* f32* f32* f32* f32* bf16  f16  f32  c64 f32* f32* c64*
   c* c64* c64* c64* c64* c64* c64* c64*  c64  c64  c64  c64 c64* c64* c64*
"""

dtypes.load_ml_dtypes()
_NAMES = {"b1": "bool", "u8": "uint8", "u16": "uint16", "u32": "uint32", "i8": "int8",
          "i16": "int16", "i32": "int32", "bf16": "bfloat16", "f16": "float16",
          "f32": "float32", "c64": "complex64"}
_WEAK = {"i*": int, "f*": float, "c*": complex}


def _operand(name):
  """An example value of the row/column type: Python scalars for the weak kinds."""
  if name in _WEAK:
    return _WEAK[name](1)
  return jnp.zeros((), dtype=getattr(jnp, _NAMES[name]))


def _cases():
  lines = [l.split() for l in TABLE.strip().splitlines()]
  cols = lines[0]
  for row in lines[1:]:
    for col, want in zip(cols, row[1:]):
      yield row[0], col, want


@pytest.mark.parametrize("a,b,want", list(_cases()))
def test_promotion_table(a, b, want):
  out = jnp.add(_operand(a), _operand(b)) if "b1" not in (a, b) or a == b else None
  dt, weak = dtypes.result_type(_operand(a), _operand(b), return_weak_type_flag=True)
  got = dtypes.short_dtype_name(dt).replace("bool", "b1") + ("*" if weak else "")
  assert got == want
  if out is not None and a != "b1" and b != "b1":
    assert (dtypes.short_dtype_name(out.dtype) + ("*" if out.weak_type else "")) == want


@pytest.mark.parametrize("expr,want", [
    (lambda: jnp.arange(3) + 1.0, "Array([1., 2., 3.], dtype=float32, weak_type=True)"),
    (lambda: jnp.ones(2) + np.float64(1), "Array([2., 2.], dtype=float32)"),
    (lambda: jnp.int8(1) + 1, "Array(2, dtype=int8)"),
    (lambda: jnp.int8(1) + 1000, "Array(-23, dtype=int8)"),
    (lambda: jnp.float16(1) + 1.0, "Array(2., dtype=float16)"),
    (lambda: jnp.add(1, 1.0), "Array(2., dtype=float32, weak_type=True)"),
    (lambda: jnp.add(1, 2), "Array(3, dtype=int32, weak_type=True)"),
    (lambda: jax.lax.add(1., 2.), "Array(3., dtype=float32, weak_type=True)"),
    (lambda: jnp.array(True) + True, "Array(True, dtype=bool)"),
    (lambda: jnp.array(True) * 1, "Array(1, dtype=int32, weak_type=True)"),
    (lambda: jnp.arange(3) / 2, "Array([0. , 0.5, 1. ], dtype=float32)"),
    (lambda: jnp.arange(3) // 2, "Array([0, 0, 1], dtype=int32)"),
    (lambda: jnp.array(1.0) > 0, "Array(True, dtype=bool, weak_type=True)"),
    (lambda: jnp.array(1) , "Array(1, dtype=int32, weak_type=True)"),
    (lambda: jnp.array(1j), "Array(0.+1.j, dtype=complex64, weak_type=True)"),
    (lambda: jnp.array([1, 2.5]), "Array([1. , 2.5], dtype=float32)"),
    (lambda: jnp.array(np.float32(3)), "Array(3., dtype=float32)"),
    (lambda: jnp.full((2,), 3), "Array([3, 3], dtype=int32, weak_type=True)"),
    (lambda: jnp.ones((2,), int), "Array([1, 1], dtype=int32)"),
    (lambda: jnp.float32(1), "Array(1., dtype=float32)"),
    (lambda: jnp.sin(jnp.array(1.0)) * 0 + 1, "Array(1., dtype=float32, weak_type=True)"),
    (lambda: jnp.array(1.0).astype(jnp.float32), "Array(1., dtype=float32)"),
    (lambda: jax.jit(lambda x: x)(1.0), "Array(1., dtype=float32, weak_type=True)"),
])
def test_weak_type_results(expr, want):
  assert repr(expr()) == want


@pytest.mark.parametrize("value,want", [(1, "~int32[]"), (1.0, "~float32[]"),
                                        (1j, "~complex64[]"), (True, "bool[]")])
def test_typeof_python_scalars(value, want):
  assert str(jax.typeof(value)) == want


def test_errors():
  with pytest.raises(OverflowError, match="Python int 2147483648 too large to convert to int32"):
    jnp.array(2**31)
  assert jnp.array(2**31, dtype=jnp.uint32).dtype == np.uint32
  with pytest.raises(TypeError, match=r"lax.add requires arguments to have the same dtypes, got "
                                      r"int32, float32"):
    jax.lax.add(1, 1.0)


def test_x64_mode():
  with x64():
    assert jnp.arange(3).dtype == np.int64 if hasattr(jnp, "arange") else True
    assert str(jax.typeof(1.0)) == "~float64[]"
    assert repr(jnp.array(2**40)) == "Array(1099511627776, dtype=int64, weak_type=True)"
  assert str(jax.typeof(1.0)) == "~float32[]"


def test_explicit_x64_request_warns():
  with pytest.warns(UserWarning, match="Explicitly requested dtype float64 requested in zeros"):
    assert jnp.zeros(2, jnp.float64).dtype == np.float32


def test_promote_types_does_not_canonicalize():
  assert jnp.promote_types(np.uint64, np.int64) == np.float64
  assert jnp.promote_types(np.int8, np.uint8) == np.int16


def test_strict_promotion():
  jax.config.update("jax_numpy_dtype_promotion", "strict")
  try:
    with pytest.raises(dtypes.TypePromotionError, match="jax_numpy_dtype_promotion=strict"):
      jnp.add(jnp.float32(1), jnp.int32(1))
    assert jnp.add(jnp.float32(1), 1.0).dtype == np.float32
  finally:
    jax.config.update("jax_numpy_dtype_promotion", "standard")


_ORACLE_TYPES = ["bool", "uint8", "uint16", "uint32", "int8", "int16", "int32", "float16",
                 "float32", "complex64", "bfloat16"]


def test_promotion_matches_real_jax():
  rjax = oracle()
  rjnp = rjax.numpy
  for a in _ORACLE_TYPES + ["int", "float", "complex"]:
    for b in _ORACLE_TYPES + ["int", "float", "complex"]:
      def mk(mod, n):
        return {"int": 1, "float": 1.0, "complex": 1j}[n] if n in ("int", "float", "complex") \
            else mod.zeros((), getattr(mod, n))
      want = rjnp.result_type(mk(rjnp, a), mk(rjnp, b))
      got = jnp.result_type(mk(jnp, a), mk(jnp, b))
      assert np.dtype(got) == np.dtype(want), (a, b)
