"""Helpers that define whole families of primitives from one rule body each.

A family helper makes the primitive, its NumPy impl, its abstract eval with JAX's TypeErrors,
its eager weak-type rule, and registers its template in the NumPy backend's tables, in one call.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base import primitive_kinds as _kinds  # `kinds` names dtype kinds here
from jaxlite._src.compiler import numpy_codegen
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.xla import lowering as hlo_lowering
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.base.core import all_weak, first_weak, never_weak  # noqa: F401 - the weak rules
from jaxlite._src.interpreters import batching
from jaxlite._src.sharding import rules as sharding_rules

# The NumPy backend's lowering tables, under the names the primitive modules register with
# (`numpy_templates[prim] = ...`): they live in compiler/numpy_codegen.py, not here.
# templates: primitive -> fn(params) -> format string over arg names, e.g. "np.add({0}, {1})".
numpy_templates = numpy_codegen.TABLES.templates
# eqn templates: primitive -> fn(eqn) -> format string or None (falls back to the template).
numpy_eqn_templates = numpy_codegen.TABLES.eqn_templates
# One NumPy ufunc call each: the executor may pass `out=` to reuse a dead intermediate buffer.
ufunc_primitives = numpy_codegen.TABLES.ufuncs
# May raise NumPy floating-point warnings that JAX never shows.
numpy_quiet_primitives = numpy_codegen.TABLES.quiet
# The result never aliases an input (a matmul): a later ufunc may write into its dead buffer.
fresh_output_primitives = numpy_codegen.TABLES.fresh_outputs


def lower_to_numpy(prim, template: str, ufunc: bool = False) -> None:
  """Registers a fixed NumPy template for `prim` in the NumPy backend (`ufunc`: one ufunc call
  of the operands, which may write into a dead input's buffer)."""
  numpy_templates[prim] = lambda **params: template
  if ufunc:
    ufunc_primitives.add(prim)


_KIND_NAMES = {
    "f": "floating", "c": "complexfloating", "i": "signedinteger", "u": "unsignedinteger",
    "b": "bool",
}


def kind_of(dtype) -> str:
  if dtypes.is_ml_float(dtype):
    return "f"
  return dtype.kind


def accepted_kinds_text(kinds: str) -> str:
  """The accepted dtype classes as JAX's dtype rules name them: signed and unsigned together
  are "integer", listed first, then floating, complexfloating, bool; signed or unsigned alone
  (abs) come after the inexact kinds."""
  ints = "i" in kinds, "u" in kinds
  head = ["integer"] if all(ints) else []
  tail = ["signedinteger"] if ints[0] and not ints[1] else \
      ["unsignedinteger"] if ints[1] and not ints[0] else []
  return ", ".join(head + [_KIND_NAMES[k] for k in "fc" if k in kinds] + tail +
                   (["bool"] if "b" in kinds else []))


def check_dtype_kinds(name: str, dtype, kinds: str, position: int | None = None) -> None:
  """JAX's dtype-rule TypeError; n-ary primitives name the operand's `position`."""
  if kind_of(dtype) not in kinds:
    raise dtype_kind_error(name, dtype, accepted_kinds_text(kinds), position)


def dtype_kind_error(name: str, dtype, accepted: str, position: int | None = None):
  at = "" if position is None else f" at position {position}"
  return TypeError(f"{name} does not accept dtype {dtypes.dtype_name(dtype)}{at}. Accepted "
                   f"dtypes{at} are subtypes of {accepted}.")


def broadcast_shapes_lax(name: str, *shapes) -> tuple:
  """lax's broadcasting: equal ranks (size-1 dims stretch) or rank-0 operands."""
  nonscalar = [s for s in shapes if len(s)]
  if not nonscalar:
    return ()
  rank = len(nonscalar[0])
  if any(len(s) != rank for s in nonscalar):
    raise _shape_error(name, shapes)
  out = []
  for dims in zip(*nonscalar):
    big = {d for d in dims if d != 1}
    if len(big) > 1:
      raise _shape_error(name, shapes)
    out.append(big.pop() if big else 1)
  return tuple(out)


def _shape_error(name, shapes):
  return TypeError(f"{name} got incompatible shapes for broadcasting: "
                   f"{', '.join(str(tuple(s)) for s in shapes)}.")


def _same_dtypes(name, dts):
  if any(d != dts[0] for d in dts[1:]):
    names = ", ".join(dtypes.dtype_name(d) for d in dts)
    tip = _JNP_TIP.get(name)
    tip = "" if tip is None else (f" (Tip: jnp.{tip} is a similar function that does automatic "
                                  "type promotion on inputs).")
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {names}.{tip}")


# The binary primitives whose mismatched-dtype TypeError points to a jnp function, as JAX
# 0.10.2's does (checked op by op: rem, the ordered comparisons, and/or/xor and the special
# functions get no tip there).
_JNP_TIP = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
            "max": "maximum", "min": "minimum", "atan2": "arctan2", "nextafter": "nextafter",
            "eq": "equal", "ne": "not_equal", "shift_left": "left_shift",
            "shift_right_arithmetic": "right_shift", "shift_right_logical": "right_shift"}


def primitive(name: str, impl, abstract_eval, weak=None):
  """A primitive with its impl and abstract eval.

  Without a `weak` rule the eval trace runs the abstract eval before the impl, so eager calls
  get the same TypeErrors as traced ones; pass a rule only where the impl validates itself.
  """
  p = core.Primitive(name)
  p.def_impl(impl)
  p.def_abstract_eval(abstract_eval)
  p.eager_weak_type = weak
  return p


def lower_to_hlo(prim, hlo) -> None:
  """Registers `prim`'s StableHLO lowering for the XLA backend: `hlo` is the name of one
  elementwise op ("sine", "chlo.asin"), or a rule `fn(ctx, *operands, **params)`."""
  if callable(hlo):
    hlo_lowering.register(prim, hlo)
  else:
    hlo_lowering.register_elementwise(prim, hlo)


def unop(name: str, np_fn, kinds: str = "fc", out_dtype=None, template: str | None = None,
         primitive_type=core.Primitive, fuse: bool = True, hlo=None):
  """An elementwise unary primitive computed by `np_fn` (an instance of `primitive_type`, for
  one whose `bind` adds params). `fuse`: tier 1 may fuse it (its kernel checked against tier
  0's: see primitive_kinds). `hlo`: its StableHLO op or rule (`lower_to_hlo`)."""
  prim = primitive_type(name)
  _kinds.register(prim, _kinds.ELEMENTWISE, fuse=fuse, op=name)

  def abstract_eval(x, **params):
    check_dtype_kinds(name, x.dtype, kinds)
    dt = x.dtype if out_dtype is None else out_dtype(x.dtype)
    return ShapedArray(x.shape, dt, x.weak_type)

  if out_dtype is None:
    def impl(x, **params):
      if kind_of(x.dtype) not in kinds:
        check_dtype_kinds(name, x.dtype, kinds)
      out = np_fn(x)
      return out if out.dtype == x.dtype else out.astype(x.dtype)
  else:
    def impl(x, **params):
      check_dtype_kinds(name, x.dtype, kinds)
      return np.asarray(np_fn(x), out_dtype(x.dtype))

  prim.def_impl(impl)
  prim.def_abstract_eval(abstract_eval)
  prim.eager_weak_type = first_weak
  batching.defvectorized(prim)
  sharding_rules.elementwise(prim)
  if template is not None:
    lower_to_numpy(prim, template, ufunc=out_dtype is None)
  if hlo is not None:
    lower_to_hlo(prim, hlo)
  return prim


def _is_key_pair(x, y) -> bool:
  """Both operands typed PRNG keys (an extended dtype) of one implementation."""
  return hasattr(x.dtype, "_is_extended") and x.dtype == y.dtype


def binop(name: str, np_fn, kinds: str = "fciub", out_dtype=None, template: str | None = None,
          keys: bool = False, fuse: bool = True, hlo=None):
  """An elementwise binary primitive with lax broadcasting (rank-0 or equal-rank operands).
  `keys`: typed PRNG key operands are accepted too (eq/ne: keys are equal when their data is),
  compared whole through NumPy's structured `==`/`!=`, which has no ufunc loop. `fuse`: as
  `unop`'s."""
  prim = core.Primitive(name)
  _kinds.register(prim, _kinds.ELEMENTWISE, fuse=fuse, op=name)

  def abstract_eval(x, y, **params):
    if keys and _is_key_pair(x, y):
      return ShapedArray(broadcast_shapes_lax(name, x.shape, y.shape), out_dtype, False)
    check_dtype_kinds(name, x.dtype, kinds, 0)
    check_dtype_kinds(name, y.dtype, kinds, 1)
    _same_dtypes(name, (x.dtype, y.dtype))
    shape = broadcast_shapes_lax(name, x.shape, y.shape)
    dt = x.dtype if out_dtype is None else out_dtype
    return ShapedArray(shape, dt, x.weak_type and y.weak_type)

  def impl(x, y, **params):
    # keys' values are structured (named fields); bfloat16 and the float8 types are kind "V" too
    if keys and x.dtype.names is not None and y.dtype.names is not None:
      return _compare_keys(name, x, y)
    if x.dtype != y.dtype or (x.ndim != y.ndim and x.ndim and y.ndim) \
        or kind_of(x.dtype) not in kinds:
      abstract_eval(core.get_aval(x), core.get_aval(y))
    try:
      out = np_fn(x, y)
    except ValueError:
      abstract_eval(core.get_aval(x), core.get_aval(y))
      raise
    if out_dtype is None and out.dtype != x.dtype:
      out = out.astype(x.dtype)
    return out

  prim.def_impl(impl)
  prim.def_abstract_eval(abstract_eval)
  prim.eager_weak_type = all_weak
  batching.defbroadcasting(prim)
  sharding_rules.elementwise(prim)
  sharding_rules.names_context_mesh(prim)  # JAX's broadcasting rule: operands on no mesh
  if not keys:
    passes.scalar_operand_primitives.add(prim)
  if template is not None:
    lower_to_numpy(prim, template, ufunc=True)
  if hlo is not None:
    lower_to_hlo(prim, hlo)
  if keys:  # key operands lower to the structured comparison instead of the ufunc template
    op = _KEY_COMPARISONS[name]
    numpy_eqn_templates[prim] = lambda eqn: (
        f"np.asarray({{0}} {op} {{1}}, dtype=bool)"
        if _is_key_pair(*(v.aval for v in eqn.invars)) else None)
  return prim


_KEY_COMPARISONS = {"eq": "==", "ne": "!="}


def _compare_keys(name, x, y):
  """eq/ne of typed PRNG keys: their structured NumPy values compared key by key."""
  x, y = (v._host_value() if isinstance(v, core.Array) else np.asarray(v) for v in (x, y))
  out = (x == y) if _KEY_COMPARISONS[name] == "==" else (x != y)
  return np.asarray(out, dtype=bool)


def naryop_shape_dtype(name: str, avals, kinds_per_arg=None):
  shape = broadcast_shapes_lax(name, *(a.shape for a in avals))
  return shape
