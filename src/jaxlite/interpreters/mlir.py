"""`jax.interpreters.mlir`: a library primitive's lowering rules, run by jaxlite's compilers.

In JAX, compiled code runs a primitive through the rule registered with
`register_lowering(p, rule, platform)`: `rule(ctx, *values, **params)` builds StableHLO from
`mlir.ir.Value`s, usually with the `hlo` dialect's op builders (`hlo.AddOp(x, y).result`) or
through `lower_fun(fun)`; the primitive's Python impl never runs under jit.

jaxlite does the same for primitives made with `jax.extend.core.Primitive`: when a jaxpr that
holds one is compiled, its rule is called once per equation with `Value`s that stand for the
operands, and what the rule builds becomes the equations that replace it (traced jaxlite
operations: the `hlo` builders of `jax._src.lib.mlir.dialects.hlo` are the lax operations of
the same names, see `_hlo_ops.py`). A primitive with no rule for the platform raises JAX's
NotImplementedError. A rule that builds an op jaxlite does not interpret (a custom call, an FFI
target) leaves the equation to the primitive's impl, which the host backends run.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.xla import lowering as hlo_text
from jaxlite._src.interpreters import partial_eval as pe

# primitive -> {platform or None: rule}
_lowerings: dict = {}

_PLATFORM_ALIASES = {"cuda": "gpu", "rocm": "gpu"}


def register_lowering(prim, rule, platform: str | None = None) -> None:
  """Registers `rule(ctx, *values, **params) -> [value per result]` for `prim` on `platform`
  (None: every platform)."""
  _lowerings.setdefault(prim, {})[platform] = rule


def _rule_for(prim, platform: str):
  table = _lowerings.get(prim)
  if not table:
    return None
  for key in (platform, _PLATFORM_ALIASES.get(platform), None):
    if key in table:
      return table[key]
  return None


class UnsupportedOp(AttributeError):
  """A lowering rule used an MLIR op or helper jaxlite does not interpret."""


class IrType:
  """An MLIR tensor type as a rule sees it (`value.type`, `aval_to_ir_type`): its aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  shape = property(lambda self: tuple(self.aval.shape))
  element_type = property(lambda self: self.aval.dtype)

  def __eq__(self, other):
    return type(other) is IrType and self.aval.strip_weak_type() == other.aval.strip_weak_type()

  def __hash__(self):
    return hash(self.aval.strip_weak_type())

  def __repr__(self):
    return f"RankedTensorType({hlo_text.tensor_type(self.aval.shape, self.aval.dtype)})"


class Value:
  """An `mlir.ir.Value` in a lowering rule: one operand or op result, backed by the traced
  jaxlite value it stands for."""
  __slots__ = ("traced",)

  def __init__(self, traced):
    self.traced = traced

  @property
  def type(self) -> IrType:
    return IrType(core.get_aval(self.traced))

  # an op's single result (`op.result`) is this Value itself
  result = property(lambda self: self)
  results = property(lambda self: [self])

  def __repr__(self):
    return f"Value({self.type!r})"


def unwrap(v):
  """The traced value behind a rule's `Value` (or an op with one result)."""
  if isinstance(v, Value):
    return v.traced
  if isinstance(v, (list, tuple)) and len(v) == 1:
    return unwrap(v[0])
  res = getattr(v, "result", None)
  if isinstance(res, Value):
    return res.traced
  raise TypeError(f"a lowering rule returned {v!r} where an mlir.ir.Value belongs")


class ModuleContext:
  """`ctx.module_context`: the module being built (here: the platform it is for, and the
  objects a rule asks it to keep alive as long as the module, `add_keepalive`)."""

  def __init__(self, platform):
    self.platforms = (platform,)
    self.keepalives = []

  def add_keepalive(self, keepalive) -> None:
    self.keepalives.append(keepalive)

  def __repr__(self):
    return f"ModuleContext(platforms={self.platforms})"


class LoweringRuleContext:
  """What a rule gets as `ctx`: the equation's primitive, its operand and result avals."""

  def __init__(self, primitive, avals_in, avals_out, platform):
    self.module_context = ModuleContext(platform)
    self.primitive = primitive
    self.avals_in = tuple(avals_in)
    self.avals_out = list(avals_out)
    self.platforms = (platform,)
    self.tokens_in = None
    self.tokens_out = None

  def set_tokens_out(self, tokens_out):
    self.tokens_out = tokens_out

  def __repr__(self):
    return (f"LoweringRuleContext(primitive={self.primitive}, avals_in={self.avals_in}, "
            f"avals_out={self.avals_out}, platforms={self.platforms})")


def lower_fun(fun, multiple_results: bool = True):
  """The rule that lowers a primitive as `fun(*operands, **params)` does (JAX traces `fun`
  into the module; here `fun` runs on the traced operands)."""
  def f_lowered(ctx, *args, **params):
    outs = fun(*[unwrap(a) for a in args], **params)
    if not multiple_results:
      outs = [outs]
    return [Value(o) for o in outs]
  f_lowered.__name__ = getattr(fun, "__name__", "f_lowered")
  return f_lowered


class _HostCallback:
  """The Python function of `emit_python_callback`, called as JAX's host callback calls it:
  on the operands as NumPy arrays, returning a sequence of results. Equal for the same
  function (the callback primitive's param)."""
  __slots__ = ("fun",)

  def __init__(self, fun):
    self.fun = fun

  def __call__(self, *args):
    return list(self.fun(*[np.asarray(a) for a in args]))

  def __eq__(self, other):
    return type(other) is _HostCallback and other.fun == self.fun

  def __hash__(self):
    return hash(self.fun)


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect: bool, returns_token: bool = True,
                         partitioned: bool = False, sharding=None):
  """A call of `callback` on the host in the compiled program (JAX emits an FFI custom call):
  here the eqn of `io_callback` (with side effects) or `pure_callback` that calls it when the
  program runs. Returns (result Values, the token, what to keep alive), as JAX's does."""
  from jaxlite._src.transforms import callbacks
  if partitioned and result_avals:
    raise ValueError("Partitioned callback not supported with return values.")
  vals = [unwrap(o) for o in operands]
  avals = tuple(core.ShapedArray(tuple(a.shape), a.dtype) for a in result_avals)
  host = _HostCallback(callback)
  if has_side_effect:
    outs = callbacks.io_callback_p.bind(*vals, callback=host, result_avals=avals,
                                        sharding=None, ordered=False)
  else:
    outs = callbacks.pure_callback_p.bind(*vals, callback=host, result_avals=avals,
                                          sharding=None, vmap_method=None)
  return [Value(o) for o in outs], token, host


def aval_to_ir_type(*args) -> IrType:
  """`aval_to_ir_type(module_context, aval)` (JAX 0.10's signature) or `(aval)`."""
  return IrType(args[-1])


def aval_to_ir_types(*args) -> tuple:
  return (IrType(args[-1]),)


def dense_int_array(xs) -> tuple:
  return tuple(int(x) for x in xs)


dense_int_elements = dense_int_array


def ir_constant(val) -> Value:
  """A constant operand: `val` (a NumPy or Python scalar/array) as an MLIR constant."""
  from jaxlite._src.lax.elementwise_functions import asarg
  return Value(asarg(np.asarray(val)))


def ir_constants(val) -> list:
  return [ir_constant(val)]


def expand(eqn, platform: str = "cpu"):
  """The ClosedJaxpr that `eqn`'s registered lowering rule builds, or None when the rule uses
  an op jaxlite does not interpret (the primitive's impl then runs). NotImplementedError (JAX's
  message) when the primitive has no rule for `platform`."""
  rule = _rule_for(eqn.primitive, platform)
  if rule is None:
    raise NotImplementedError(f"MLIR translation rule for primitive '{eqn.primitive.name}' "
                              f"not found for platform {platform}")
  avals_in = [v.aval for v in eqn.invars]
  avals_out = [v.aval for v in eqn.outvars]

  def body(*xs):
    ctx = LoweringRuleContext(eqn.primitive, avals_in, avals_out, platform)
    outs = rule(ctx, *[Value(x) for x in xs], **eqn.params)
    if isinstance(outs, Value):
      outs = [outs]
    outs = [unwrap(o) for o in outs]
    if len(outs) != len(avals_out):
      raise ValueError(f"the lowering rule of {eqn.primitive.name} returned {len(outs)} "
                       f"values for {len(avals_out)} results")
    return outs
  with core.set_current_trace(core.eval_trace):
    try:
      return pe.trace_to_jaxpr(body, avals_in)
    except UnsupportedOp:
      if eqn.primitive.impl is None:
        raise
      return None


passes.library_lowering[0] = expand
hlo_text.library_lowering[0] = expand


def __getattr__(name):
  if name == "hlo":
    from jaxlite.interpreters import _hlo_ops
    return _hlo_ops
  raise UnsupportedOp(f"jax.interpreters.mlir.{name} is not available in jaxlite: jaxlite "
                      "compiles lowering rules' hlo operations, not MLIR modules")
