"""Closed jaxprs to StableHLO module text: the lowering API of the XLA backend.

This module imports neither jaxlib nor anything above `core`: primitive modules (`lax/`) import
it to register their rules next to their primitives, and `import jaxlite` pays only for these
definitions. The text it emits is StableHLO in MLIR's generic op form (`"stablehlo.add"(%a, %b)
: (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>`), which every MLIR parser accepts without
the dialect's custom syntax; jaxlib's compiler parses it (see README.md in this folder).

A rule is `rule(ctx, *operands, **params) -> Value | list[Value]`: `operands` are `Value`s (an
SSA name and its aval), `params` the equation's params, and `ctx` a `LoweringContext` that knows
the equation's avals and emits ops into the function being built.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes

# primitive -> rule(ctx, *operands, **params) -> Value or list of Values: every platform's,
# unless `platform_rules` has the primitive for the module's platform
rules: dict = {}
# platform ("tpu", "cuda", ...) -> {primitive -> rule}: a platform's own lowering (JAX's
# `register_lowering(..., platform=...)`): XLA's ops or the custom calls that platform has where
# the default rule calls one it lacks (the LAPACK kernels exist only in jaxlib's CPU client)
platform_rules: dict = {}
# primitives whose eager evaluation on an XLA device is their impl, as in JAX (checkify's check
# reads its predicate on the host and raises there; staged without checkify it is an error)
eager_by_impl: set = set()


def register(prim, rule=None, platform: str | None = None):
  """Registers `rule` as `prim`'s StableHLO lowering (usable as a decorator: `@register(p)`);
  with `platform`, only for modules lowered for that platform."""
  if rule is None:
    return lambda r: register(prim, r, platform)
  (rules if platform is None else platform_rules.setdefault(platform, {}))[prim] = rule
  return rule


def register_none(prim, platform: str) -> None:
  """`prim` has no lowering on `platform` (as in JAX, where no rule is registered for it
  there): lowering it raises JAX's "rule not found for platform" error, not the default rule's
  (a LAPACK custom call the platform's compiler would reject)."""
  platform_rules.setdefault(platform, {})[prim] = None


def rule_for(prim, platform: str = "cpu"):
  """`prim`'s rule in a module for `platform`: the platform's own, else the default; None."""
  own = platform_rules.get(platform)
  if own and prim in own:
    return own[prim]
  return rules.get(prim)


def register_elementwise(prim, op: str, **attrs) -> None:
  """`prim` lowers to the one elementwise StableHLO op `op` (a name such as "sine" or
  "stablehlo.sine"), its operands broadcast to the result's shape (lax broadcasting: rank-0
  operands and size-1 dimensions stretch) and `attrs` added to the op."""
  name = op if "." in op else f"stablehlo.{op}"

  def rule(ctx, *args, **params):
    out = ctx.aval_out
    return ctx.op(name, [ctx.broadcast_to(a, out.shape) for a in args], out, attrs or None)
  rules[prim] = rule


class LoweringError(NotImplementedError):
  """A primitive has no StableHLO lowering rule (or its rule rejects the params)."""


# --- types --------------------------------------------------------------------------------

_ELEMENT_TYPES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "complex64": "complex<f32>", "complex128": "complex<f64>",
    "int4": "i4", "uint4": "ui4", "int2": "i2", "uint2": "ui2",
    "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2", "float8_e4m3fnuz": "f8E4M3FNUZ",
    "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e4m3b11fnuz": "f8E4M3B11FNUZ",
    "float8_e3m4": "f8E3M4", "float8_e4m3": "f8E4M3", "float8_e8m0fnu": "f8E8M0FNU",
    "float4_e2m1fn": "f4E2M1FN",
    # float0 (the tangent type of integers) has no data: JAX lowers it as bool
    "float0": "i1",
}


def storage_dtype(dtype):
  """The NumPy dtype values of `dtype` are stored in: itself, or a user-defined extended dtype's
  physical element type (its `_rules.physical_element_aval`: flax's fp8 meta dtype is float32
  data; jaxlite keeps such values as that data, only avals carry the extended dtype)."""
  rules = getattr(dtype, "_rules", None)
  if rules is not None and getattr(dtype, "_is_extended", False) is True:
    return np.dtype(rules.physical_element_aval(dtype).dtype)
  return np.dtype(dtype)


def element_type(dtype) -> str:
  """The MLIR element type of a NumPy (or ml_dtypes) dtype: f32, bf16, ui32, i1, complex<f32>."""
  dtype = storage_dtype(dtype)
  try:
    return _ELEMENT_TYPES[dtype.name if dtype != dtypes.float0 else "float0"]
  except KeyError:
    raise TypeError(f"StableHLO lowering: no element type for dtype {dtype}") from None


def tensor_type(shape, dtype) -> str:
  """`tensor<2x3xf32>`; a scalar is `tensor<f32>`."""
  if any(d < 0 for d in shape):  # NumPy's error, where the NumPy backend's impl raises it
    raise ValueError(f"negative dimensions are not allowed: shape {tuple(shape)}")
  et = element_type(dtype)
  return f"tensor<{'x'.join(map(str, shape))}x{et}>" if len(shape) else f"tensor<{et}>"


def aval_type(aval) -> str:
  if isinstance(aval, core.AbstractToken):
    return "!stablehlo.token"
  aval = physical_aval(aval)
  return tensor_type(aval.shape, aval.dtype)


# --- extended dtypes (typed PRNG keys) ------------------------------------------------------
# A value of an extended dtype lowers as its data (a key<fry>[3] as a ui32 tensor<3x2>): Values
# keep the logical aval and print the physical type. The dtype's module registers (higher layers
# fill these tables; this module imports nothing of theirs):
# type(dtype) -> (fn(aval) -> physical aval, fn(host value) -> physical NumPy data)
extended_types: dict = {}
# primitives whose rules take extended operands and results as they come (calls, control flow,
# the random_* ops); any other primitive meeting one goes through `extended_fallback[0]`,
# fn(ctx, *operands, **params) -> outputs (the primitive on the physical data).
extended_aware: set = set()
extended_fallback: list = [None]


def is_extended(aval) -> bool:
  return type(getattr(aval, "dtype", None)) in extended_types


def physical_aval(aval):
  """The aval of `aval`'s data: itself unless its dtype is extended."""
  entry = extended_types.get(type(getattr(aval, "dtype", None)))
  return aval if entry is None else entry[0](aval)


def physical(v: Value) -> Value:
  """The same SSA value seen as its data (a key array as ui32 [..., 2]); others unchanged."""
  return Value(v.name, physical_aval(v.aval))


def with_aval(v: Value, aval) -> Value:
  """The same SSA value seen with `aval`: data seen as the extended (key) array it holds."""
  return Value(v.name, aval)


# --- attribute text -----------------------------------------------------------------------

def i64_array(values) -> str:
  """`array<i64: 0, 1>` (dimension lists of broadcast_in_dim, transpose, reduce...)."""
  values = [int(v) for v in values]
  return f"array<i64: {', '.join(map(str, values))}>" if values else "array<i64>"


def i64_list(values) -> str:
  """`[0, 1]`: the dimension lists inside #stablehlo attributes (dot, gather, conv)."""
  return f"[{', '.join(str(int(v)) for v in values)}]"


def dense_i64(values, shape=None) -> str:
  """A dense i64 tensor attribute (pad amounts, window strides in the older ops)."""
  arr = np.asarray(values, np.int64)
  shape = arr.shape if shape is None else shape
  return f"dense<{_nested(arr.reshape(shape).tolist())}> : {tensor_type(shape, np.int64)}"


def _nested(x) -> str:
  if isinstance(x, list):
    return "[" + ", ".join(_nested(e) for e in x) + "]"
  if isinstance(x, bool):
    return "true" if x else "false"
  return str(x)


def string_attr(s: str) -> str:
  return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dense_elements(value, dtype=None) -> str:
  """A `dense<...> : tensor<...>` attribute holding NumPy `value` exactly: a splat in decimal
  where the text round-trips (ints, bools, finite reals), else the raw little-endian bytes in
  hex (one element's bytes make a splat)."""
  arr = np.asarray(value, dtype) if dtype is not None else np.asarray(value)
  if arr.dtype == dtypes.float0:
    arr = np.zeros(arr.shape, np.bool_)
  ttype = tensor_type(arr.shape, arr.dtype)
  if arr.size == 0:
    return f"dense<> : {ttype}"
  if arr.dtype == np.bool_:
    if arr.all() or not arr.any():
      return f"dense<{'true' if arr.flat[0] else 'false'}> : {ttype}"
    return f"dense<{_nested(arr.tolist())}> : {ttype}"
  flat = np.ascontiguousarray(arr).reshape(-1)
  if _all_same_bits(flat):
    one = flat[:1]
    if arr.dtype.kind in "iu":
      return f"dense<{int(one[0])}> : {ttype}"
    if (arr.dtype.kind == "f" or dtypes.is_ml_float(arr.dtype)) and arr.dtype.itemsize >= 2:
      f = float(one[0])
      if math.isfinite(f):
        text = repr(f)
        if "." not in text.split("e")[0]:  # MLIR's float literals need the point: 1.0e-05
          text = text.replace("e", ".0e")
        return f"dense<{text}> : {ttype}"
    flat = one
  data = flat.astype(flat.dtype.newbyteorder("<"), copy=False) if flat.dtype.byteorder == ">" \
      else flat
  return f'dense<"0x{data.tobytes().hex().upper()}"> : {ttype}'


def _all_same_bits(flat) -> bool:
  raw = np.ascontiguousarray(flat).view(np.uint8).reshape(flat.size, -1)
  return bool((raw == raw[:1]).all())


# --- values and the function being built --------------------------------------------------

class Value:
  """An SSA value of the function being built: its name (`%3`, `%arg0`, `%5#1`) and aval."""
  __slots__ = ("name", "aval")

  def __init__(self, name: str, aval):
    self.name = name
    self.aval = aval

  @property
  def type(self) -> str:
    return aval_type(self.aval)

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)

  def __repr__(self):
    return f"{self.name} : {self.type}"


class RefCell:
  """A mutable array reference while lowering (a jaxpr value of type `Ref{...}`): `value` is the
  Value of its contents at this point of the program. The ref primitives' rules read and replace
  it; loops and branches carry it through their state and results (`thread_refs`), and `@main`
  takes the refs it is given as arguments and returns their final contents, so the state is
  discharged into pure StableHLO as the program is emitted."""
  __slots__ = ("value", "aval")

  def __init__(self, value: Value, aval):
    self.value, self.aval = value, aval

  def __repr__(self):
    return f"RefCell({self.value!r})"


def is_ref_aval(aval) -> bool:
  """The aval of a mutable array reference (`AbstractRef`, which lives above this module)."""
  return hasattr(aval, "inner_aval")


class RefThreading:
  """How an op with regions carries the refs among its operands: each distinct ref travels once
  in the op's state as its current contents (a ref passed twice shares one slot), each region
  sees it as a fresh `RefCell` over its block argument, and the op's results update the outer
  cells.

  `operands(args)`: the args with every ref replaced by its contents;
  `cells(block_args)`: the block args with a fresh inner RefCell at every ref position;
  `yields(inner)`: what a region returns in the ref positions (each inner cell's final value);
  `update(outs)`: writes the op's results at the ref positions into the outer cells."""

  def __init__(self, args):
    self.outer = list(args)
    self.first: dict = {}  # position -> first position of the same cell
    seen: dict = {}
    for i, a in enumerate(args):
      if isinstance(a, RefCell):
        self.first[i] = seen.setdefault(id(a), i)

  def __bool__(self):
    return bool(self.first)

  def operands(self, args=None):
    return [a.value if isinstance(a, RefCell) else a for a in (args or self.outer)]

  def cells(self, block_args):
    out = list(block_args)
    made: dict = {}
    for i, j in self.first.items():
      if j not in made:
        made[j] = RefCell(block_args[j], self.outer[j].aval)
      out[i] = made[j]
    return out

  def yields(self, inner):
    return [a.value if isinstance(a, RefCell) else a for a in inner]

  def update(self, outs) -> None:
    for i, j in self.first.items():
      if i == j:
        self.outer[i].value = outs[i]


def shaped_aval(shape, dtype) -> core.ShapedArray:
  """The aval of a `shape` array of `dtype` (what rules give `op` for the results they make)."""
  return core.ShapedArray(tuple(shape), np.dtype(dtype))


class FunctionBuilder:
  """The body of one `func.func`: lines of ops and a counter for fresh SSA names (shared with
  the regions nested in it, so that every name is unique in the function)."""

  def __init__(self, module: ModuleBuilder):
    self.module = module
    self.lines: list[str] = []
    self.counter = 0
    self.indent = 4
    # the token that orders the host transfers of the body (or region) being emitted: each
    # callback on a platform that reaches the host by send/recv takes it and yields the next
    self.token = None

  def fresh(self) -> str:
    n = self.counter
    self.counter += 1
    return f"%{n}"

  def emit(self, line: str) -> None:
    self.lines.append(" " * self.indent + line)


class ModuleBuilder:
  """A StableHLO module: `func.func public @main` plus the private functions it calls."""

  def __init__(self, name: str = "jit_fn", platform: str = "cpu"):
    self.name = _symbol(name)
    self.platform = platform  # picks `platform_rules` and the host-callback mechanism
    self.channel = 1  # the last channel id handed out (host transfers and collectives share)
    self.funcs: list[str] = []
    self._called: dict = {}   # id(jaxpr) -> (jaxpr kept alive, function name)
    self._names: set = set()
    self.attributes = {"mhlo.num_partitions": "1 : i32", "mhlo.num_replicas": "1 : i32"}
    # what the module's host callbacks run: Python functions (the CPU and GPU custom calls
    # index them) or `HostTransferCallback`s (send/recv platforms); compiled with the module
    self.host_callbacks: list = []

  def next_channel(self) -> int:
    """A fresh channel id (XLA's host transfers take 16-bit ids)."""
    self.channel += 1
    if self.channel >= 1 << 16:
      raise LoweringError("the module uses more than 65535 channels (host transfers and "
                          "collectives); PJRT supports no more")
    return self.channel

  def unique(self, name: str) -> str:
    base, i = _symbol(name), 0
    out = base
    while out in self._names:
      i += 1
      out = f"{base}_{i}"
    self._names.add(out)
    return out

  def text(self) -> str:
    attrs = ", ".join(f"{k} = {v}" for k, v in self.attributes.items())
    return (f"module @{self.name} attributes {{{attrs}}} {{\n" + "\n".join(self.funcs) +
            "\n}\n")


def _symbol(name: str) -> str:
  """A symbol name for `name`, as JAX spells its modules (`jit_<lambda>` -> `jit__lambda`)."""
  name = str(name).replace(">", "")
  out = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
  return out if out and not out[0].isdigit() else f"_{out}"


class LoweringContext:
  """What a rule sees: the equation's avals, its primitive, and the ops it can emit.

  avals_in / avals_out   the equation's input and output avals (`aval_out`: the only output)
  op(...)                any StableHLO (or func/chlo) op in generic form
  constant / broadcast_to / convert / compare / select   the usual building blocks
  region(...)            a region for reduce / while / case / sort bodies
  lower_jaxpr(...)       a sub-jaxpr inlined at this point (pjit, cond branches, loop bodies)
  call(...)              a sub-jaxpr as a private function and a `func.call` of it
  """

  def __init__(self, fn: FunctionBuilder, primitive=None, avals_in=(), avals_out=(),
               params=None):
    self.fn = fn
    self.module = fn.module
    self.primitive = primitive
    self.avals_in = list(avals_in)
    self.avals_out = list(avals_out)
    self.params = params or {}

  @property
  def aval_out(self):
    return self.avals_out[0]

  def with_avals(self, avals_in, avals_out) -> LoweringContext:
    """The same function and primitive with other avals (a rule lowering a helper op)."""
    return LoweringContext(self.fn, self.primitive, avals_in, avals_out, self.params)

  # -- the one emitter -------------------------------------------------------------------------
  def op(self, name: str, operands, results, attrs=None, regions=()):
    """Emits `name(operands)` with result avals `results` (one aval, or a list: then a list of
    Values comes back). `attrs`: a dict of attribute name -> attribute text, or None. `regions`:
    texts from `region(...)`."""
    single = not isinstance(results, (list, tuple))
    avals = [results] if single else list(results)
    name = name if "." in name else f"stablehlo.{name}"
    operands = list(operands)
    for v in operands:
      if not isinstance(v, Value):
        raise TypeError(f"StableHLO lowering of {self.primitive}: operand {v!r} of {name} is not "
                        "a lowered Value")
    res = self.fn.fresh()
    head = "" if not avals else (f"{res} = " if len(avals) == 1 else f"{res}:{len(avals)} = ")
    args = ", ".join(v.name for v in operands)
    region_text = f" ({', '.join(regions)})" if regions else ""
    attr_text = ""
    if attrs:
      attr_text = " {" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + "}"
    in_types = ", ".join(v.type for v in operands)
    out_types = ", ".join(aval_type(a) for a in avals)
    if len(avals) != 1:
      out_types = f"({out_types})"
    self.fn.emit(f'{head}"{name}"({args}){region_text}{attr_text} : ({in_types}) -> {out_types}')
    if len(avals) == 1:
      outs = [Value(res, avals[0])]
    else:
      outs = [Value(f"{res}#{i}", a) for i, a in enumerate(avals)]
    return outs[0] if single else outs

  # -- building blocks -------------------------------------------------------------------------
  def constant(self, value, dtype=None, shape=None) -> Value:
    """A constant: a NumPy value (dtype kept unless `dtype` is given), broadcast to `shape` when
    given (the literal stays one scalar in the text)."""
    arr = np.asarray(value, dtype) if dtype is not None else np.asarray(value)
    out = self.op("stablehlo.constant", [], shaped_aval(arr.shape, arr.dtype),
                  {"value": dense_elements(arr)})
    if shape is not None and tuple(shape) != arr.shape:
      out = self.broadcast_to(out, shape)
    return out

  def broadcast_to(self, v: Value, shape, dims=None) -> Value:
    """`v` broadcast to `shape` (lax broadcasting by default: a rank-0 `v` fills it, an
    equal-rank one stretches its size-1 dimensions; else `dims` maps v's dims into shape)."""
    shape = tuple(shape)
    if tuple(v.shape) == shape and dims is None:
      return v
    if dims is None:
      dims = range(len(v.shape)) if len(v.shape) == len(shape) else \
          range(len(shape) - len(v.shape), len(shape))
    return self.op("stablehlo.broadcast_in_dim", [v], shaped_aval(shape, v.dtype),
                   {"broadcast_dimensions": i64_array(dims)})

  def convert(self, v: Value, dtype) -> Value:
    dtype = storage_dtype(dtype)
    if storage_dtype(v.dtype) == dtype:
      return v
    return self.op("stablehlo.convert", [v], shaped_aval(v.shape, dtype))

  def reshape(self, v: Value, shape) -> Value:
    if tuple(v.shape) == tuple(shape):
      return v
    return self.op("stablehlo.reshape", [v], shaped_aval(shape, v.dtype))

  def compare(self, a: Value, b: Value, direction: str, compare_type: str | None = None):
    """`stablehlo.compare` (EQ NE LT LE GT GE) with the comparison type of the operands' dtype
    (FLOAT, SIGNED, UNSIGNED; TOTALORDER when asked)."""
    if compare_type is None:
      compare_type = comparison_type(a.dtype)
    shape = np.broadcast_shapes(a.shape, b.shape) if len(a.shape) != len(b.shape) else \
        tuple(max(x, y) for x, y in zip(a.shape, b.shape))
    a, b = self.broadcast_to(a, shape), self.broadcast_to(b, shape)
    return self.op("stablehlo.compare", [a, b], shaped_aval(shape, np.bool_),
                   {"comparison_direction": f"#stablehlo<comparison_direction {direction}>",
                    "compare_type": f"#stablehlo<comparison_type {compare_type}>"})

  def select(self, pred: Value, on_true: Value, on_false: Value) -> Value:
    shape = on_true.shape
    return self.op("stablehlo.select", [self.broadcast_to(pred, shape), on_true,
                                        self.broadcast_to(on_false, shape)], on_true.aval)

  def zeros(self, shape, dtype) -> Value:
    return self.constant(np.zeros((), dtype), shape=shape)

  # -- regions and sub-computations ------------------------------------------------------------
  def region(self, arg_avals, body) -> str:
    """The text of a one-block region whose arguments have `arg_avals`: `body(ctx, *args)`
    returns the Values the block yields (`stablehlo.return`). Regions may read outer values."""
    fn = self.fn
    names = [fn.fresh().replace("%", "%r") for _ in arg_avals]
    args = [Value(n, a) for n, a in zip(names, arg_avals)]
    saved, saved_indent, saved_token = fn.lines, fn.indent, fn.token
    fn.lines, fn.indent, fn.token = [], saved_indent + 4, None  # a region orders its own
    try:
      outs = body(self.with_avals(arg_avals, []), *args)
      outs = [outs] if isinstance(outs, Value) else list(outs)
      ret_types = ", ".join(v.type for v in outs)
      fn.emit(f'"stablehlo.return"({", ".join(v.name for v in outs)}) : ({ret_types}) -> ()')
      body_lines = fn.lines
    finally:
      fn.lines, fn.indent, fn.token = saved, saved_indent, saved_token
    header = ", ".join(f"{v.name}: {v.type}" for v in args)
    pad = " " * (saved_indent + 2)
    return "{\n" + pad + f"^bb0({header}):\n" + "\n".join(body_lines) + "\n" + \
        " " * saved_indent + "}"

  def scalar_region(self, dtype, op: str, nargs: int = 2) -> str:
    """A reduction body over scalars of `dtype` applying the elementwise op `op` (reduce,
    reduce_window, scatter combiners)."""
    av = shaped_aval((), dtype)
    return self.region([av] * nargs, lambda c, *xs: c.op(op, xs, av))

  def lower_jaxpr(self, jaxpr, consts, args) -> list:
    """Lowers `jaxpr` (a Jaxpr, or a ClosedJaxpr whose consts are used when `consts` is None)
    inline, with `args` as its inputs; its output Values."""
    if isinstance(jaxpr, core.ClosedJaxpr):
      consts = jaxpr.consts if consts is None else consts
      jaxpr = jaxpr.jaxpr
    return lower_jaxpr_body(self.fn, jaxpr, consts or [], args)

  def host_callback(self, fn) -> int:
    """Registers Python `fn` with the module; its index for a host-callback custom call."""
    self.module.host_callbacks.append(fn)
    return len(self.module.host_callbacks) - 1

  def call(self, closed, args, name: str = "call") -> list:
    """`closed` as a private function of the module (made once per jaxpr) and a `func.call` of
    it with `args`."""
    key = id(closed)
    hit = self.module._called.get(key)
    if hit is None:
      fname = self.module.unique(name)
      emit_function(self.module, closed, fname, visibility="private")
      hit = self.module._called[key] = (closed, fname)
    return self.op("func.call", args, list(closed.out_avals),
                   {"callee": f"@{hit[1]}"}) if len(closed.out_avals) != 1 else \
        [self.op("func.call", args, closed.out_avals[0], {"callee": f"@{hit[1]}"})]


def comparison_type(dtype) -> str:
  dtype = np.dtype(dtype)
  if dtypes.is_ml_float(dtype) or dtype.kind in "fc":
    return "FLOAT"
  if dtype.kind == "u" or dtype == np.bool_:
    return "UNSIGNED"
  return "SIGNED"


# --- jaxprs to functions --------------------------------------------------------------------

# A library primitive's (jax.extend.core.Primitive) lowering: `library_lowering[0](eqn,
# platform)` gives the ClosedJaxpr its registered rule builds, None when the rule needs the
# primitive's impl; jax.interpreters.mlir fills it (as passes.library_lowering).
library_lowering: list = [None]

def lower_jaxpr_body(fn: FunctionBuilder, jaxpr, consts, args) -> list:
  """Emits `jaxpr`'s equations into `fn` with `args` (Values) for its invars and `consts`
  (NumPy values or Values) for its constvars; returns the Values of its outvars."""
  env: dict = {}
  ctx0 = LoweringContext(fn)
  for v, c in zip(jaxpr.constvars, consts):
    env[v] = c if isinstance(c, (Value, RefCell)) else _const_value(ctx0, c, v.aval)
  for v, a in zip(jaxpr.invars, args):
    env[v] = a

  def read(x):
    if type(x) is core.Literal:
      return ctx0.constant(np.asarray(x.val, x.aval.dtype))
    return env[x]

  platform = fn.module.platform
  for eqn in jaxpr.eqns:
    rule = rule_for(eqn.primitive, platform)
    if rule is None and eqn.primitive.library and library_lowering[0] is not None:
      # a library's primitive: what its registered rule builds (jax.interpreters.mlir)
      lowered = library_lowering[0](eqn, platform)
      if lowered is not None:
        outs = lower_jaxpr_body(fn, lowered.jaxpr, lowered.consts,
                                [read(x) for x in eqn.invars])
        for var, val in zip(eqn.outvars, outs):
          env[var] = val
        continue
    if rule is None and _outside_jaxlite(eqn.primitive):
      rule = impl_on_host_rule(eqn.primitive)
    if rule is None:
      raise LoweringError(f"MLIR translation rule for primitive '{eqn.primitive.name}' not "
                          f"found for platform {platform}")
    ctx = LoweringContext(fn, eqn.primitive, [x.aval for x in eqn.invars],
                          [x.aval for x in eqn.outvars], eqn.params)
    if extended_types and eqn.primitive not in extended_aware and any(
        is_extended(a) for a in (*ctx.avals_in, *ctx.avals_out)):
      rule = extended_fallback[0] or rule
    outs = rule(ctx, *[read(x) for x in eqn.invars], **eqn.params)
    if isinstance(outs, (Value, RefCell)):
      outs = [outs]
    outs = list(outs)
    if len(outs) != len(eqn.outvars):
      raise LoweringError(f"StableHLO lowering of {eqn.primitive.name} gave {len(outs)} results "
                          f"for {len(eqn.outvars)} outputs")
    for var, val in zip(eqn.outvars, outs):
      if type(var).__name__ != "DropVar":
        env[var] = val
  return [read(v) for v in jaxpr.outvars]


# --- host callbacks: each platform's way to the host ------------------------------------------
# A compiled program calls back into Python as JAX's lowering makes it on each platform:
# - CPU (and GPU): jaxlib's typed-FFI custom call `xla_ffi_python_cpu_callback`
#   (`..._gpu_callback`); the function is handed to the compiler with the module and the call's
#   `index` picks it; it gets NumPy arrays and returns a tuple of them.
# - TPU: the operands go to the host by `stablehlo.send` and the results come back by
#   `stablehlo.recv` (host transfers on fresh channels, chained by a token); the compiler is
#   handed a `HostTransferCallback` saying which channels carry what, and the compile path
#   (compile_cache.py) makes jaxlib's send/recv callback of it.
# `emit_host_callback(ctx, fn, operands, result_avals, side_effect)` picks by the module's
# platform through `host_callback_emitters`.

def _row_major(rank: int) -> str:
  return f"dense<{i64_list(range(rank - 1, -1, -1))}> : tensor<{rank}xindex>" if rank \
      else "dense<> : tensor<0xindex>"


def _ffi_callback_emitter(target: str):
  def emit(ctx, fn, operands, result_avals, side_effect: bool):
    index = ctx.host_callback(fn)
    attrs = {
        "call_target_name": string_attr(target),
        "api_version": "1 : i32",
        "backend_config": '""',
        "has_side_effect": "true" if side_effect else "false",
        "operand_layouts": f"[{', '.join(_row_major(len(v.shape)) for v in operands)}]",
        "result_layouts": f"[{', '.join(_row_major(len(a.shape)) for a in result_avals)}]",
        "mhlo.backend_config": f"{{index = {index} : ui64}}",
    }
    return ctx.op("stablehlo.custom_call", list(operands), list(result_avals), attrs)
  return emit


class HostTransferCallback:
  """A host callback reached by send/recv: `fn(*operands) -> tuple of results` runs when the
  program has sent every operand (on `send_channels`, in order) and its results go back on
  `recv_channels`; `operand_avals` / `result_avals` are what travels (physical avals).
  `failures`: exceptions the function raised; the program got zeros in its place (it waits
  for an answer on every receive channel) and the executable's call raises afterwards."""
  __slots__ = ("fn", "operand_avals", "result_avals", "send_channels", "recv_channels",
               "failures")

  def __init__(self, fn, operand_avals, result_avals, send_channels, recv_channels):
    self.fn, self.operand_avals, self.result_avals = fn, tuple(operand_avals), tuple(result_avals)
    self.send_channels, self.recv_channels = tuple(send_channels), tuple(recv_channels)
    self.failures: list = []

  def __repr__(self):
    return (f"HostTransferCallback(send={list(self.send_channels)}, "
            f"recv={list(self.recv_channels)})")


_TOKEN = core.AbstractToken()


def _host_transfer_attrs(channel: int, kind: int) -> dict:
  # kind 2: device to host, 3: host to device (StableHLO's ChannelType); the rendezvous
  # handler is PJRT's, named by the channel
  return {"channel_handle": f"#stablehlo.channel_handle<handle = {channel}, type = {kind}>",
          "is_host_transfer": "true",
          "mhlo.frontend_attributes": '{_xla_host_transfer_handler_name = "pjrt_rendezvous", '
                                      f'_xla_host_transfer_rendezvous = "{channel}"}}'}


def _empty(aval) -> bool:
  return any(d == 0 for d in aval.shape)


# The dtype booleans cross a host transfer as (`np.bool_`: XLA's PRED, as JAX sends them)
bool_wire_dtype = np.dtype(np.uint8)


def _host_transfer_emitter(ctx, fn, operands, result_avals, side_effect: bool):
  """The callback as host transfers (the TPU's way, as JAX lowers it there). XLA's TPU
  transfers need at least one operand and carry no empty arrays, so: a callback of no operands
  sends one dummy float; its empty results are not received (the program makes them as
  constants); one of no (non-empty) results receives a dummy float, so that the program waits
  for the callback to finish. The token chain of the body orders its callbacks as written. A
  callback that raises answers zeros and is reported after the program (`failures`)."""
  fnb = ctx.fn
  token = fnb.token if fnb.token is not None else ctx.op("stablehlo.after_all", [], _TOKEN)
  operands = [physical(v) for v in operands]
  # booleans travel as `bool_wire_dtype` both ways (one byte each, as the host holds them)
  wire = bool_wire_dtype
  bools_in = [v.dtype == np.bool_ and wire != np.bool_ for v in operands]
  operands = [ctx.convert(v, wire) if b else v for v, b in zip(operands, bools_in)]
  sent_avals = [v.aval for v in operands]
  no_operands = not operands
  if no_operands:
    operands = [ctx.constant(np.zeros((1,), np.float32))]
    sent_avals = [operands[0].aval]
  send_channels = []
  for v in operands:
    channel = ctx.module.next_channel()
    token = ctx.op("stablehlo.send", [v, token], _TOKEN, _host_transfer_attrs(channel, 2))
    send_channels.append(channel)
  physical_results = [physical_aval(a) for a in result_avals]
  received = [shaped_aval(a.shape, wire) if a.dtype == np.bool_ else a
              for a in physical_results if not _empty(a)]
  dummy = not received
  if dummy:
    received = [shaped_aval((), np.float32)]
  recv_channels, values = [], []
  for a in received:
    channel = ctx.module.next_channel()
    value, token = ctx.op("stablehlo.recv", [token], [a, _TOKEN],
                          _host_transfer_attrs(channel, 3))
    recv_channels.append(channel)
    values.append(value)
  fnb.token = token

  given = 0 if no_operands else len(operands)

  def run(*xs):
    try:
      xs = [x.view(np.bool_) if b else x for x, b in zip(xs[:given], bools_in)]
      outs = fn(*xs)
      if dummy:
        return (np.zeros((), np.float32),)
      return tuple(np.asarray(o).astype(wire) if a.dtype == np.bool_ else o
                   for o, a in zip(outs, physical_results) if not _empty(a))
    except BaseException as err:  # (an unanswered receive would hang the device)
      record.failures.append(err)
      return tuple(np.zeros(a.shape, a.dtype) for a in received)
  record = HostTransferCallback(run, sent_avals, received, send_channels, recv_channels)
  ctx.host_callback(record)
  it = iter(values)
  outs = [ctx.constant(np.zeros(a.shape, a.dtype)) if _empty(a) else
          ctx.convert(next(it), a.dtype) for a in physical_results]
  return [with_aval(o, a) for o, a in zip(outs, result_avals)]


# platform -> emit(ctx, fn, operands, result_avals, side_effect) -> result Values; platforms
# missing here use the CPU's custom call
host_callback_emitters: dict = {
    "cpu": _ffi_callback_emitter("xla_ffi_python_cpu_callback"),
    "cuda": _ffi_callback_emitter("xla_ffi_python_gpu_callback"),
    "rocm": _ffi_callback_emitter("xla_ffi_python_gpu_callback"),
    "tpu": _host_transfer_emitter,
}


def emit_host_callback(ctx, fn, operands, result_avals, side_effect: bool):
  """A call of Python `fn` (NumPy arrays in, a tuple of NumPy arrays out) on `operands` from
  the compiled program, the way the module's platform reaches the host; its result Values."""
  emit = host_callback_emitters.get(ctx.module.platform, host_callback_emitters["cpu"])
  return emit(ctx, fn, list(operands), list(result_avals), side_effect)


def _outside_jaxlite(prim) -> bool:
  """A primitive defined outside jaxlite (a user's or a library's) with a Python impl."""
  impl = getattr(prim, "impl", None)
  impl = getattr(impl, "__wrapped__", impl)  # jax.extend.core.Primitive wraps a library's impl
  return impl is not None and not getattr(impl, "__module__", "jaxlite").startswith("jaxlite.")


def impl_on_host_rule(prim):
  """The rule of a primitive defined outside jaxlite that has a Python impl and no rule: the
  impl runs on the host from the compiled program, as the NumPy backend runs it (JAX would ask
  for `mlir.register_lowering`)."""
  def rule(ctx, *args, **params):
    avals = list(ctx.avals_out)

    def run(*xs):
      out = prim.impl(*xs, **params)
      out = out if prim.multiple_results else [out]
      return tuple(np.asarray(o, a.dtype).reshape(a.shape) for o, a in zip(out, avals))
    outs = emit_host_callback(ctx, run, args, avals, side_effect=False)
    return outs if prim.multiple_results else outs[0]
  return rule


def _const_value(ctx, c, aval) -> Value:
  if not is_extended(aval):
    return ctx.constant(_host(c), aval.dtype)
  return with_aval(ctx.constant(_host(c), physical_aval(aval).dtype), aval)


def _host(c):
  """A constant's host value (an Array's, a NumPy value's); an extended one's data."""
  if isinstance(c, core.Array) and hasattr(c, "_host_value"):
    entry = extended_types.get(type(getattr(c, "dtype", None)))
    return c._host_value() if entry is None else entry[1](c._host_value())
  return np.asarray(c)


def ref_consts(closed) -> list:
  """Indices of `closed`'s constants that are mutable array references (a `Ref` the function
  closes over): they become arguments of the function after its inputs (see emit_function)."""
  return [i for i, v in enumerate(closed.jaxpr.constvars) if is_ref_aval(v.aval)]


def emit_function(module: ModuleBuilder, closed, name: str, visibility: str = "public",
                  arg_attrs=None, result_attrs=None) -> None:
  """Adds `closed` to `module` as `func.func <visibility> @name`. `arg_attrs[i]` /
  `result_attrs[i]`: attribute text for argument / result i (`tf.aliasing_output = 0 : i32`).

  Refs: a `Ref` input is an argument holding its contents, and a `Ref` constant (`ref_consts`)
  one more argument after the inputs; the function returns, after its outputs, the final
  contents of its ref inputs, then of its ref constants (the caller writes them back)."""
  fn = FunctionBuilder(module)
  jaxpr = closed.jaxpr
  args = [Value(f"%arg{i}", v.aval.inner_aval if is_ref_aval(v.aval) else v.aval)
          for i, v in enumerate(jaxpr.invars)]
  consts = list(closed.consts)
  for k, i in enumerate(ref_consts(closed)):
    aval = jaxpr.constvars[i].aval
    args.append(Value(f"%arg{len(jaxpr.invars) + k}", aval.inner_aval))
    consts[i] = RefCell(args[-1], aval)
  ins = [RefCell(a, v.aval) if is_ref_aval(v.aval) else a for a, v in zip(args, jaxpr.invars)]
  outs = lower_jaxpr_body(fn, jaxpr, consts, ins)
  outs = [_retype(fn, o, v.aval) for o, v in zip(outs, jaxpr.outvars)]
  cells = [c for c in (*ins, *consts) if isinstance(c, RefCell)]
  outs += [c.value for c in cells]
  out_avals = [v.aval for v in jaxpr.outvars] + [c.aval.inner_aval for c in cells]

  def with_attrs(text, attrs):
    return f"{text} {{{attrs}}}" if attrs else text
  sig = ", ".join(with_attrs(f"{a.name}: {a.type}", (arg_attrs or {}).get(i))
                  for i, a in enumerate(args))
  res = ", ".join(with_attrs(aval_type(a), (result_attrs or {}).get(i))
                  for i, a in enumerate(out_avals))
  ret = ", ".join(o.name for o in outs)
  ret_types = ", ".join(o.type for o in outs)
  lines = [f"  func.func {visibility} @{name}({sig}) -> ({res}) {{", *fn.lines,
           f'    "func.return"({ret}) : ({ret_types}) -> ()', "  }"]
  module.funcs.append("\n".join(lines))


def _retype(fn, v: Value, aval) -> Value:
  """An output whose lowered type differs from the jaxpr's (a weak-typed literal) converted."""
  if isinstance(aval, core.AbstractToken) or is_extended(aval) or (
      tuple(v.shape) == tuple(aval.shape) and v.dtype == aval.dtype):
    return v
  ctx = LoweringContext(fn)
  return ctx.convert(ctx.broadcast_to(v, aval.shape), aval.dtype)


class ModuleText(str):
  """Module text that calls back into Python: `host_callbacks[i]` is the function its custom
  call with `index = i` runs (the compiler is handed them with the module)."""
  host_callbacks: tuple = ()


def lower_closed_jaxpr(closed, module_name: str = "jit_fn", donated_to=None,
                       platform: str = "cpu") -> str:
  """The StableHLO module text of `closed` as `@main`, for `platform` ("cpu", "tpu", ...: its
  rules and its way to the host). `donated_to`: {input index: output index} pairs that alias
  (jit's donation, as XLA input/output aliases). A module with host callbacks comes back as a
  `ModuleText` carrying them."""
  module = ModuleBuilder(module_name, platform)
  arg_attrs = {i: f"tf.aliasing_output = {o} : i32" for i, o in (donated_to or {}).items()}
  emit_function(module, closed, "main", "public", arg_attrs)
  text = module.text()
  if module.host_callbacks:
    text = ModuleText(text)
    text.host_callbacks = tuple(module.host_callbacks)
  return text


# --- rule factories the primitive modules use -------------------------------------------------

def compare_rule(direction: str):
  """The rule of a comparison primitive: `stablehlo.compare` in `direction` (EQ NE LT LE GT GE)
  with the operands' comparison type."""
  def rule(ctx, x, y, **params):
    return ctx.compare(x, y, direction)
  return rule


def register_call(prim, jaxpr_param: str = "jaxpr") -> None:
  """`prim` calls the closed jaxpr in its param `jaxpr_param` on its operands (jit, checkpoint,
  custom_jvp/custom_vjp calls, whose compiled form runs the primal): lowered inline (XLA sees
  one program and inlines calls anyway; the text stays one function)."""
  def rule(ctx, *args, **params):
    closed = params[jaxpr_param]
    if isinstance(closed, core.ClosedJaxpr):
      return ctx.lower_jaxpr(closed, None, args)
    return ctx.lower_jaxpr(closed, [], args)
  rules[prim] = rule


def register_identity(prim) -> None:
  """`prim` returns its operands unchanged in compiled code (stop_gradient, name tags)."""
  rules[prim] = lambda ctx, *args, **params: list(args) if prim.multiple_results else args[0]
