"""The `hlo` (StableHLO) dialect's op builders as a lowering rule uses them
(`from jax._src.lib.mlir.dialects import hlo`; `hlo.AddOp(hlo.MulOp(x, y), z).result`).

Each builder is the lax operation of the same meaning applied to the traced values behind its
operands (see jax.interpreters.mlir): the rule's ops become equations of the jaxpr that
replaces the primitive in compiled code. Builders take operands (`mlir.Value`s or ops with one
result) positionally; those whose result type MLIR cannot infer take it first, as in MLIR's
Python bindings (`hlo.ConvertOp(mlir.aval_to_ir_type(aval), x)`). An op not listed here is
`mlir.UnsupportedOp` (an AttributeError): the rule is then left to the primitive's impl.
"""
from __future__ import annotations

from jaxlite import lax
from jaxlite.interpreters import mlir


class _Op:
  """One built op: its results are `Value`s (`.result` when there is one)."""
  __slots__ = ("results",)
  fn = None

  def __init__(self, *operands):
    out = type(self).fn(*[_operand(o) for o in operands])
    self.results = [mlir.Value(o) for o in (out if isinstance(out, (list, tuple)) else [out])]

  @property
  def result(self):
    if len(self.results) != 1:
      raise ValueError(f"{type(self).__name__} has {len(self.results)} results, not one")
    return self.results[0]

  def __repr__(self):
    return f"{type(self).__name__}({', '.join(map(repr, self.results))})"


def _operand(o):
  """The traced value behind an operand; attributes (dimension lists) pass as they are."""
  return mlir.unwrap(o) if isinstance(o, (mlir.Value, _Op)) else o


def _op(name, fn):
  return type(name, (_Op,), {"fn": staticmethod(fn), "__slots__": ()})


_ELEMENTWISE = {
    # binary
    "AddOp": lax.add, "SubtractOp": lax.sub, "MulOp": lax.mul, "DivOp": lax.div,
    "MaxOp": lax.max, "MinOp": lax.min, "PowOp": lax.pow, "RemOp": lax.rem,
    "Atan2Op": lax.atan2, "AndOp": lax.bitwise_and, "OrOp": lax.bitwise_or,
    "XorOp": lax.bitwise_xor, "ShiftLeftOp": lax.shift_left,
    "ShiftRightArithmeticOp": lax.shift_right_arithmetic,
    "ShiftRightLogicalOp": lax.shift_right_logical, "ComplexOp": lax.complex,
    # unary
    "NegOp": lax.neg, "AbsOp": lax.abs, "ExpOp": lax.exp, "LogOp": lax.log,
    "Log1pOp": lax.log1p, "Expm1Op": lax.expm1, "SqrtOp": lax.sqrt, "RsqrtOp": lax.rsqrt,
    "CbrtOp": lax.cbrt, "SineOp": lax.sin, "CosineOp": lax.cos, "TanOp": lax.tan,
    "TanhOp": lax.tanh, "LogisticOp": lax.logistic, "SignOp": lax.sign, "FloorOp": lax.floor,
    "CeilOp": lax.ceil, "RoundOp": lax.round,
    "RoundNearestEvenOp": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
    "NotOp": lax.bitwise_not, "IsFiniteOp": lax.is_finite,
    "PopulationCountOp": lax.population_count, "RealOp": lax.real, "ImagOp": lax.imag,
    # others whose result type is inferred
    "SelectOp": lambda pred, on_true, on_false: lax.select(pred, on_true, on_false),
}
globals().update({name: _op(name, fn) for name, fn in _ELEMENTWISE.items()})


class _TypedOp(_Op):
  """An op whose result type comes first: `Op(result_type, *operands, *attributes)`."""
  __slots__ = ()

  def __init__(self, result_type, *operands):
    out = type(self).fn(result_type.aval, *[_operand(o) for o in operands])
    self.results = [mlir.Value(out)]


def _typed(name, fn):
  return type(name, (_TypedOp,), {"fn": staticmethod(fn), "__slots__": ()})


ConvertOp = _typed("ConvertOp", lambda aval, x: lax.convert_element_type(x, aval.dtype))
ReshapeOp = _typed("ReshapeOp", lambda aval, x: lax.reshape(x, aval.shape))
BroadcastInDimOp = _typed("BroadcastInDimOp", lambda aval, x, dims: lax.broadcast_in_dim(
    x, aval.shape, tuple(dims)))
TransposeOp = _op("TransposeOp", lambda x, perm: lax.transpose(x, tuple(perm)))


def __getattr__(name):
  raise mlir.UnsupportedOp(f"jaxlite does not interpret the hlo op `{name}` in a lowering rule")
