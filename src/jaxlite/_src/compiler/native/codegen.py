"""numba source for tier 1's fused kernels: one `prange` loop over the flat elements, each eqn a
scalar statement from the RULES table (operation -> lines), with tier 0's semantics. RULES is
keyed by the operation a primitive computes (`primitive_kinds.operation`, registered next to the
primitive), never by its name.

A kernel is native-eligible when every value it makes has the same element count N (elementwise
chains with their views, converts and selects; row reductions stay on tier 1) and every dtype
has a numba scalar type. Nothing here imports numba: it only writes source.
"""
from __future__ import annotations

import functools
import math
import re
import time

import numpy as np

from jaxlite._src.base import machine
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.compiler import fusion
from jaxlite._src.compiler import native
from jaxlite._src.base.core import Literal

# dtype -> (numba signature name, cast in the generated source)
_TYPES = {np.dtype(t): (n, c) for t, n, c in (
    (np.bool_, "boolean", "np.bool_"), (np.int8, "int8", "np.int8"),
    (np.int16, "int16", "np.int16"), (np.int32, "int32", "np.int32"),
    (np.int64, "int64", "np.int64"), (np.uint8, "uint8", "np.uint8"),
    (np.uint16, "uint16", "np.uint16"), (np.uint32, "uint32", "np.uint32"),
    (np.uint64, "uint64", "np.uint64"), (np.float32, "float32", "np.float32"),
    (np.float64, "float64", "np.float64"))}


# Kernels run their loop on numba's threads. The scalar-rule tests turn it off: a serial compile
# of the same statements takes a third of the time.
PARALLEL = True


class Unsupported(Exception):
  """The kernel has something the native tier does not compile: it stays on tier 1."""


def _cast(dtype) -> str:
  try:
    return _TYPES[np.dtype(dtype)][1]
  except (KeyError, TypeError):
    raise Unsupported(f"dtype {dtype}") from None


def literal(value, dtype) -> str:
  """Source of a scalar constant of `dtype` (exact: floats by repr of the double)."""
  dtype = np.dtype(dtype)
  t = _cast(dtype)
  v = np.asarray(value, dtype)[()]
  if dtype.kind == "b":
    return "True" if v else "False"
  if dtype.kind == "f":
    f = float(v)
    if math.isnan(f):
      return f"{t}(np.nan)"
    if math.isinf(f):
      return f"{t}({'-' if f < 0 else ''}np.inf)"
    return f"{t}({f!r})"
  return f"{t}({int(v)})"


# --- the rules: (out, ins, in dtypes, out dtype, params) -> statement lines --------------------

RULES: dict = {}


def _rule(ops, kinds):
  """Registers `fn(c) -> expression or lines` for the primitives computing operations `ops`
  (`primitive_kinds.operation`) on operand kinds `kinds` (NumPy kinds of the first operand,
  'b' bool, 'i' int, 'u' uint, 'f' float)."""
  def register(fn):
    for op in ops.split():
      RULES.setdefault(op, []).append((kinds, fn))
    return fn
  return register


class _Ctx:
  __slots__ = ("out", "ins", "in_dtypes", "dtype", "params", "T")

  def __init__(self, out, ins, in_dtypes, dtype, params):
    self.out, self.ins, self.in_dtypes, self.dtype, self.params = out, ins, in_dtypes, dtype, \
        params
    self.T = _cast(dtype)

  @property
  def kind(self) -> str:
    return self.in_dtypes[0].kind

  @property
  def width(self) -> int:
    return self.in_dtypes[0].itemsize * 8


_MATH = {n: f"math.{n}({{0}})" for n in
         "exp log log1p expm1 tanh sin cos tan asin acos atan sinh cosh asinh acosh atanh "
         "sqrt".split()}
_MATH.update(exp2="np.exp2({0})", is_finite="np.isfinite({0})", floor="np.floor({0})",
             ceil="np.ceil({0})", atan2="math.atan2({0}, {1})", pow="np.power({0}, {1})")

# Versions without libm calls (support.py): a loop that calls them vectorizes.
_VECTOR = {np.dtype(np.float32): ("exp", "log", "log1p", "expm1", "tanh"),
           np.dtype(np.float64): ("exp", "log", "log1p")}


def _math(op, dtype, *args) -> str:
  dtype = np.dtype(dtype)
  if op in _VECTOR.get(dtype, ()):
    return f"_s.{op}_f{dtype.itemsize * 8}({', '.join(args)})"
  return _MATH[op].format(*args)


for _op in _MATH:
  _rule(_op, "f")(lambda c, op=_op: _math(op, c.dtype, *c.ins))


# Tier 0 computes these in float64 and rounds once.
for _op in ("erf", "erfc"):
  _rule(_op, "f")(lambda c, op=_op: f"math.{op}(np.float64({c.ins[0]}))")


@_rule("erf_inv", "f")
def _erf_inv(c):
  if c.dtype != np.float32:
    raise Unsupported("erf_inv beyond float32")
  return f"_s.erf_inv_f32({c.ins[0]})"


@_rule("fma", "f")
def _fma(c):
  # random.fused_multiply_add (tier 0's impl of the compiler-made fma) per element, see support
  if c.dtype not in (np.float32, np.float64) or len(set(c.in_dtypes)) != 1:
    raise Unsupported(f"fma on {c.in_dtypes}")
  return f"_s.fma_f{c.width}({', '.join(c.ins)})"


@_rule("rsqrt", "f")
def _rsqrt(c):
  return f"{c.T}(1) / math.sqrt({c.ins[0]})"


@_rule("logistic", "f")
def _logistic(c):
  x, T, o = c.ins[0], c.T, c.out
  # tier 0's 1 / (1 + e**-x) for x >= 0, e**x / (1 + e**x) below: both exps are e**-|x|
  return [f"_ex = {_math('exp', c.dtype, f'(-abs({x}))')}",
          f"{o} = {T}({T}(1) / ({T}(1) + _ex) if {x} >= 0 else _ex / ({T}(1) + _ex))"]


@_rule("neg", "f")
def _neg_f(c):
  return f"-{c.ins[0]}"


@_rule("neg", "iu")
def _neg_i(c):
  return f"{c.T}(0) - {c.ins[0]}"


@_rule("abs", "fi")
def _abs(c):
  return f"abs({c.ins[0]})"


@_rule("abs", "u")
def _abs_u(c):
  return c.ins[0]


@_rule("sign", "f")
def _sign_f(c):
  x, T = c.ins[0], c.T
  return f"({x} if ({x} == 0 or {x} != {x}) else ({T}(1) if {x} > 0 else {T}(-1)))"


@_rule("sign", "iu")
def _sign_i(c):
  x, T = c.ins[0], c.T
  return f"({T}(1) if {x} > 0 else ({T}(-1) if {x} < 0 else {T}(0)))"


@_rule("round", "f")
def _round(c):
  x, T = c.ins[0], c.T
  if int(c.params.get("rounding_method", 0)) == 1:
    return f"np.rint({x})"
  return f"math.copysign(abs(np.trunc({x})) + {T}(abs({x} - np.trunc({x})) >= {T}(0.5)), {x})"


@_rule("not", "b")
def _not_b(c):
  return f"not {c.ins[0]}"


@_rule("not", "iu")
def _not_i(c):
  return f"~{c.ins[0]}"


@_rule("square", "fiu")
def _square(c):
  return f"{c.ins[0]} * {c.ins[0]}"


@_rule("integer_pow", "fiu")
def _integer_pow(c):
  x, T, y = c.ins[0], c.T, int(c.params["y"])
  if y == 0:
    return f"{T}(1)"
  if abs(y) > 64:  # the expression below doubles per squaring: such kernels stay on tier 1
    raise Unsupported(f"integer_pow with |y| = {abs(y)} > 64")
  # tier 0's (and XLA's) square-and-multiply order, each product rounded to T
  acc, base, e = None, x, abs(y)
  while e:
    if e & 1:
      acc = base if acc is None else f"{T}({acc} * {base})"
    e >>= 1
    if e:
      base = f"{T}({base} * {base})"
  return f"{T}(1) / {acc}" if y < 0 else acc


def _binop(sym):
  return lambda c: f"{c.ins[0]} {sym} {c.ins[1]}"


for _op, _sym in (("add", "+"), ("sub", "-"), ("mul", "*")):
  _rule(_op, "fiu")(_binop(_sym))
for _op, _sym in (("and", "&"), ("or", "|"), ("xor", "^")):
  _rule(_op, "biu")(_binop(_sym))
for _op, _sym in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"),
                  ("ge", ">=")):
  _rule(_op, "fiub")(_binop(_sym))


@_rule("div", "f")
def _div_f(c):
  return f"{c.ins[0]} / {c.ins[1]}"


@_rule("rem", "f")
def _rem_f(c):
  return f"np.fmod({c.ins[0]}, {c.ins[1]})"


@_rule("div", "i")
def _div_i(c):
  # C division truncates; x / 0 is -1; INT_MIN / -1 wraps (and must not reach sdiv: it traps).
  a, b, T, o = *c.ins, c.T, c.out
  return [f"if {b} == 0:", f"  {o} = {T}(-1)", f"elif {b} == -1:", f"  {o} = {T}({T}(0) - {a})",
          "else:", f"  _q = {a} // {b}", f"  if _q * {b} != {a} and (({a} < 0) != ({b} < 0)):",
          "    _q += 1", f"  {o} = {T}(_q)"]


@_rule("rem", "i")
def _rem_i(c):
  # C remainder has the dividend's sign; x rem 0 is x.
  a, b, T, o = *c.ins, c.T, c.out
  return [f"if {b} == 0:", f"  {o} = {a}", f"elif {b} == -1:", f"  {o} = {T}(0)", "else:",
          f"  _r = {a} % {b}", f"  if _r != 0 and ((_r < 0) != ({a} < 0)):", f"    _r -= {b}",
          f"  {o} = {T}(_r)"]


@_rule("div", "u")
def _div_u(c):
  a, b, T = *c.ins, c.T
  return f"({T}({np.iinfo(c.dtype).max}) if {b} == 0 else {a} // {b})"


@_rule("rem", "u")
def _rem_u(c):
  a, b = c.ins
  return f"({a} if {b} == 0 else {a} % {b})"


def _extremum(c, op):
  a, b, T = *c.ins, c.T
  if c.kind != "f":
    return f"({a} if {a} {op} {b} else {b})"
  # np.maximum's choice (NaN propagates), then the sign XLA gives zeros of both signs.
  pick = f"({a} if ({a} {op} {b} or {a} != {a}) else {b})"
  sign = "max" if op == ">=" else "min"
  return f"math.copysign({pick}, {sign}(math.copysign({T}(1), {a}), " \
         f"math.copysign({T}(1), {b})))"


_rule("max", "fiu")(lambda c: _extremum(c, ">="))
_rule("min", "fiu")(lambda c: _extremum(c, "<="))


@_rule("clamp", "fiu")
def _clamp(c):
  lo, x, hi = c.ins
  if c.kind == "f":  # np.minimum(np.maximum(x, lo), hi): NaN propagates from either side
    return [f"_m = {x} if ({x} >= {lo} or {x} != {x}) else {lo}",
            f"{c.out} = {c.T}(_m if (_m <= {hi} or _m != _m) else {hi})"]
  return [f"_m = {x} if {x} >= {lo} else {lo}", f"{c.out} = {c.T}(_m if _m <= {hi} else {hi})"]


def _shift(c, op):
  a, b, T, w = *c.ins, c.T, c.width
  big = f"({b} < 0 or {b} >= {w})" if c.kind == "i" else f"{b} >= {w}"
  unsigned = _cast(np.dtype(f"u{w // 8}"))
  signed = _cast(np.dtype(f"i{w // 8}"))
  if op == "shift_left":
    return f"({T}(0) if {big} else {T}({a} << {b}))"
  if op == "shift_right_logical":
    return f"({T}(0) if {big} else {T}({unsigned}({a}) >> {unsigned}({b})))"
  # arithmetic: the sign fills in; a shift past the width is a shift by width - 1
  amount = f"({signed}({w - 1}) if {big} else {signed}({b}))"
  return f"{T}({signed}({a}) >> {amount})"


for _op in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
  _rule(_op, "iu")(lambda c, op=_op: _shift(c, op))


@_rule("convert_element_type", "fiub")
def _convert(c):
  x, T, old, new = c.ins[0], c.T, c.in_dtypes[0], c.dtype
  if new.kind == "b":
    return f"{x} != 0"
  if old.kind == "f" and new.kind in "iu":
    info = np.iinfo(new)  # XLA: saturate, NaN -> 0
    return f"({T}(0) if {x} != {x} else ({T}({info.max}) if {x} >= {float(info.max)!r} else " \
           f"({T}({info.min}) if {x} <= {float(info.min)!r} else {T}({x}))))"
  return x


@_rule("bitcast_convert_type", "fiu")
def _bitcast(c):
  if c.in_dtypes[0].itemsize != c.dtype.itemsize:
    raise Unsupported("bitcast_convert_type between widths")
  return f"_s.bitcast({c.ins[0]}, {c.T}(0))"


@_rule("select_n", "biu")
def _select_n(c):
  which, *cases = c.ins
  if len(cases) == 1:
    return cases[0]
  if c.kind == "b":
    return f"({cases[1]} if {which} else {cases[0]})"
  expr = cases[-1]
  for i in range(len(cases) - 2, -1, -1):
    expr = f"({cases[i]} if {which} == {i} else {expr})"
  return expr


def statement(prim, out, ins, in_dtypes, dtype, params) -> list:
  """The lines computing an eqn of `prim` into local `out` (raises Unsupported where no rule)."""
  c = _Ctx(out, ins, [np.dtype(d) for d in in_dtypes], np.dtype(dtype), params)
  for dtype_kinds, fn in RULES.get(kinds.operation.get(prim), ()):
    if c.kind in dtype_kinds:
      result = fn(c)
      if isinstance(result, list):
        return result
      return [f"{out} = {c.T}({result})"]
  raise Unsupported(f"{prim.name} on {c.in_dtypes[0]}")


# --- kernels ---------------------------------------------------------------------------------

class Plan:
  """What a native kernel needs: `specs[j]` says how argument j is made from the tier-1
  operands (index, kind, extra, dtype); `count` is the parallel loop's trip count (elements,
  or rows where the kernel reduces); `outputs` each output's (dtype, element count);
  `source()` is the module's text."""

  def __init__(self, count, specs, scalars, body, outputs):
    self.count, self.specs, self.scalars = count, specs, scalars
    self.body, self.outputs = body, outputs
    self.parallel = PARALLEL
    self.in_place = {}  # output j -> argument written in place (write_in_place)

  def write_in_place(self, reuse, sizes) -> None:
    """Outputs written into the buffer of the operand tier 1 reuses for them (`reuse[j]`, an
    operand index, or -1; `sizes[r]` operand r's element count): the loop then loads and
    stores one array at each index. Passed as a separate output, the same buffer made LLVM's
    overlap check fail at run time, and the loop ran its scalar version: the MLP step's
    bias + relu kernel took 41 us in place against 15 us into a fresh buffer. Only where the
    operand is one argument read element by element (never spread, scalar or converted)."""
    for j, r in enumerate(reuse or ()):
      mine = [s for s, spec in enumerate(self.specs) if spec[0] == r]
      if r >= 0 and len(mine) == 1 and self.specs[mine[0]][1] == "flat" and \
          sizes[r] == self.outputs[j][1] > 1 and \
          np.dtype(self.specs[mine[0]][3]) == self.outputs[j][0] and \
          mine[0] not in self.in_place.values():
        self.in_place[j] = mine[0]

  def signature(self) -> str:
    """Source of the numba signature: read-only C arrays in (NativeKernel passes read-only
    views, so a read-only buffer matches too), writable C arrays out (and in place)."""
    written = set(self.in_place.values())
    arrays = [f"_t.{_TYPES[d][0]}[::1]" if s in written else
              f"_t.Array(_t.{_TYPES[d][0]}, 1, 'C', readonly=True)"
              for s, (*_, d) in enumerate(self.specs)] + \
        [f"_t.{_TYPES[d][0]}[::1]" for j, (d, _) in enumerate(self.outputs)
         if j not in self.in_place]
    return f"_t.void(_t.int64, {', '.join(arrays)})"

  def source(self) -> str:
    args = [f"a{j}" for j in range(len(self.specs))] + \
        [f"o{j}" for j in range(len(self.outputs)) if j not in self.in_place]
    body = self.body
    for j, s in self.in_place.items():  # output j's stores go to argument s
      store = re.compile(rf"^(\s*)o{j}\[")
      body = [store.sub(rf"\1a{s}[", ln) for ln in body]
    lines = ["import math", "import numpy as np",
             "from numba import njit, prange",
             "from numba import types as _t",
             "from jaxlite._src.compiler.native import support as _s", "",
             f"@njit({self.signature()}, parallel={self.parallel}, cache=True, nogil=True, "
             "error_model='numpy')",
             f"def kernel(_n, {', '.join(args)}):"]
    lines += ["  " + ln for ln in self.scalars]
    lines.append("  for _i in prange(_n):")
    lines += ["    " + ln for ln in body]
    return "\n".join(lines) + "\n"


# Row reductions: (init, combine) statements over accumulator `acc` and element `val`, and the
# result's expression. Float sums accumulate in float64 (a row's sum then stays within
# JAX-COMPAT's reduction tolerance of tier 0's pairwise one) through `_s.radd`, whose add may be
# reassociated, so the row loop vectorizes (lanes of partial sums); products in their own dtype,
# in order, so that overflow and inf * 0 come out as in tier 0; float max/min propagate NaN as
# np.max/np.min do, through llvm.maximum/minimum (vectorizable; -0 counts below +0, where
# np.max's pick among zeros of both signs depends on their order and its SIMD lanes).
def _reduction(prim, acc, val, dtype):
  T, kind = _cast(dtype), np.dtype(dtype).kind
  op = kinds.operation.get(prim)
  if op in ("reduce_sum", "reduce_prod") and kind in "fiu":
    sym, unit = ("+", 0) if op == "reduce_sum" else ("*", 1)
    if kind == "f" and op == "reduce_sum":
      return f"{acc} = np.float64({unit})", f"{acc} = _s.radd({acc}, np.float64({val}))", \
          f"{T}({acc})"
    return f"{acc} = {T}({unit})", f"{acc} = {T}({acc} {sym} {val})", acc
  if op in ("reduce_max", "reduce_min") and kind in "fiu":
    cmp = ">" if op == "reduce_max" else "<"
    if kind == "f":
      init = f"{T}({'-' if op == 'reduce_max' else ''}np.inf)"
      fn = "fmaximum" if op == "reduce_max" else "fminimum"
      step = f"{acc} = _s.{fn}({acc}, {val})"
    else:
      info = np.iinfo(dtype)
      init = f"{T}({info.min if op == 'reduce_max' else info.max})"
      step = f"{acc} = {val} if {val} {cmp} {acc} else {acc}"
    return f"{acc} = {init}", step, acc
  if op in ("reduce_and", "reduce_or", "reduce_max", "reduce_min") and kind == "b":
    conj = op in ("reduce_and", "reduce_min")
    return f"{acc} = {conj}", f"{acc} = {acc} {'and' if conj else 'or'} {val}", acc
  raise Unsupported(f"{prim.name} on {np.dtype(dtype)}")


class _Builder:
  """Arguments and their loads: 'one' (size 1, read once), 'r' (one per row, read at `_i`
  in row mode), 'c' (one row's values, the same for every row: read at `_j`, the index within
  the row), 'e' (one per element, read at the loop's element index)."""

  def __init__(self, k: fusion.Kernel, tables):
    self.k, self.tables = k, tables
    self.index = {}  # input var -> its position among the tier-1 kernel's operands
    for j, (v, _) in enumerate(k.inputs):
      self.index.setdefault(v, j)
    self.specs, self.args, self.scalars, self.row_loads, self.elem_loads = [], {}, [], [], []
    self.col_loads = []

  def argument(self, v, level, kind="flat", extra=None, key=None):
    dtype = np.dtype(v.aval.dtype)
    _cast(dtype)
    k2 = (v, level, kind, key)
    if k2 not in self.args:
      j = len(self.specs)
      self.specs.append((self.index[v], kind, extra, dtype))
      if level == "one":
        self.args[k2] = f"s{j}"
        self.scalars.append(f"s{j} = a{j}[0]")
      elif level == "c":
        self.args[k2] = f"x{j}"
        self.col_loads.append(f"x{j} = a{j}[_j]")
      else:
        self.args[k2] = f"x{j}"
        (self.row_loads if level == "r" else self.elem_loads).append(f"x{j} = a{j}[{{}}]")
    return self.args[k2]

  def operand(self, eqn, v, size, level, sizes):
    """The expression of input `v` for an eqn making values of `level` ('e': `sizes[0]`
    elements, 'r': `sizes[1]` rows)."""
    prim, name = eqn.primitive, eqn.primitive.name  # (the name for messages)
    oshape = tuple(eqn.outvars[0].aval.shape)
    broadcast = prim is kinds.roles.broadcast_in_dim
    vsize, vshape = math.prod(v.aval.shape), tuple(v.aval.shape)
    if vsize == 1:
      return self.argument(v, "one")
    if vsize == size and (vshape == oshape or prim in fusion.VIEWS or prim in fusion.REDUCTIONS):
      return self.argument(v, level)
    if level == "e" and sizes[1] and vsize == sizes[1] and vshape[:1] == (sizes[1],) and \
        (prim in fusion.ELEMENTWISE or broadcast) and _row_broadcast(eqn, vshape):
      return self.argument(v, "r")  # one value per row, spread over the row
    if level == "e" and sizes[1] and vsize * sizes[1] == sizes[0] and \
        (prim in fusion.ELEMENTWISE or broadcast) and _column_broadcast(eqn, vshape):
      return self.argument(v, "c")  # one row, spread over the rows (a bias)
    if broadcast:
      fn = functools.partial(self.tables.kernel(eqn.primitive), **eqn.params)
      return self.argument(v, level, "apply", fn, key=id(eqn))
    if prim in fusion.ELEMENTWISE:
      return self.argument(v, level, "apply", functools.partial(np.broadcast_to, shape=oshape),
                           key=oshape)
    raise Unsupported(f"{name} of a {vshape} operand")


def _row_broadcast(eqn, vshape) -> bool:
  """`vshape` (rows first) stretches over the eqn's rows: size-1 trailing axes, or
  broadcast_in_dim keeping axis 0 first."""
  if eqn.primitive is kinds.roles.broadcast_in_dim:
    dims = eqn.params["broadcast_dimensions"]
    return bool(dims) and dims[0] == 0 and all(s == 1 for s in vshape[1:])
  return len(vshape) == len(eqn.outvars[0].aval.shape) and all(s == 1 for s in vshape[1:])


def _column_broadcast(eqn, vshape) -> bool:
  """`vshape` is one row of the eqn's output, the same for every row: with broadcast_in_dim's
  dims placed (size 1 elsewhere) it is (1, *the output's trailing shape)."""
  oshape = tuple(eqn.outvars[0].aval.shape)
  if eqn.primitive is kinds.roles.broadcast_in_dim:
    placed = [1] * len(oshape)
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
      placed[d] = vshape[i]
    vshape = placed
  return len(vshape) == len(oshape) and vshape[0] == 1 and tuple(vshape[1:]) == oshape[1:]


def plan(k: fusion.Kernel, tables) -> Plan:
  """The native plan of tier-1 kernel `k`; raises Unsupported where it has to stay tier 1.

  Elementwise: one parallel loop over the N elements, or, where operands are spread over rows
  or columns, a loop over rows with an inner loop over the row. With row reductions (or values
  of one per row): a parallel loop over rows; each reduction is an inner loop over the row's m
  elements that computes the element values it needs in place (they are recomputed, never
  stored), and element outputs get one more inner loop."""
  if any(e.primitive in kinds.row_sources for e in k.eqns):
    # A tier-1 kernel sourced by random_bits (it hashes its tiles' counters itself): the
    # native threefry is the backend's random_bits kernel, not a rule inside fused loops.
    raise Unsupported("random_bits inside a fused kernel")
  total = max(k.elements, *(math.prod(e.outvars[0].aval.shape) for e in k.eqns))
  rows = k.n if 1 < k.n < total and total % k.n == 0 else 0  # rows of more than one element
  if any(e.primitive in fusion.REDUCTIONS for e in k.eqns) or (
      rows and any(math.prod(e.outvars[0].aval.shape) == rows for e in k.eqns)):
    # Reductions, or values of one per row (per-example grads' residual, spread over the
    # example's row): a loop over rows computing those, and inner loops over the row.
    return _plan_rows(k, tables, total)
  b = _Builder(k, tables)
  env, body = {}, []
  for eqn in k.eqns:
    prim, name, out = eqn.primitive, eqn.primitive.name, eqn.outvars[0]
    if math.prod(out.aval.shape) != total:
      raise Unsupported(f"{name} makes {math.prod(out.aval.shape)} of the kernel's {total} "
                        "elements")
    ins = []
    for v in eqn.invars:
      if type(v) is Literal:
        ins.append(literal(v.val, v.aval.dtype))
      elif v in env:
        ins.append(env[v])
      else:
        ins.append(b.operand(eqn, v, total, "e", (total, rows)))
    if prim in fusion.VIEWS:
      env[out] = ins[0]  # flat C order: a view of the same elements is the same element
      continue
    if prim not in fusion.ELEMENTWISE:
      raise Unsupported(name)
    local = f"v{len(env)}"
    body += statement(prim, local, ins, [v.aval.dtype for v in eqn.invars], out.aval.dtype,
                      eqn.params)
    env[out] = local
  outputs = [(np.dtype(v.aval.dtype), total) for v in k.outputs]
  if not (b.row_loads or b.col_loads):  # one flat loop over the elements
    loads = [ln.format("_i") for ln in b.elem_loads]
    stores = [f"o{j}[_i] = {env[v]}" for j, v in enumerate(k.outputs)]
    return Plan(total, b.specs, b.scalars, loads + body + stores, outputs)
  # Operands spread over rows or columns are read where they are, never copied out to the
  # kernel's size: a loop over rows, and within it one over the row's m elements (unsigned
  # indices: see _plan_rows' `inner`).
  m = total // rows
  loads = [ln.format("_e") for ln in b.elem_loads] + b.col_loads
  stores = [f"o{j}[_e] = {env[v]}" for j, v in enumerate(k.outputs)]
  inner = [f"for _j in range({m}):", f"  _e = np.uint64(_i) * np.uint64({m}) + np.uint64(_j)"]
  inner += ["  " + ln for ln in loads + body + stores]
  return Plan(rows, b.specs, b.scalars, [ln.format("_i") for ln in b.row_loads] + inner,
              outputs)


# Elements per float32 partial sum of a row sum (see _plan_rows' blocked_sum).
_SUM_BLOCK = 256


def _plan_rows(k: fusion.Kernel, tables, total: int) -> Plan:
  rows = k.n
  m = total // rows
  if m <= 1 or rows * m != total:
    raise Unsupported(f"row reduction over {m} elements")
  b = _Builder(k, tables)
  env, level = {}, {}
  elem = {}  # element-level var -> (statement lines, element-level vars it reads), in order
  row_body = []

  def closure(needs) -> list:
    todo, seen = list(needs), set()
    while todo:
      v = todo.pop()
      if v not in seen:
        seen.add(v)
        todo.extend(elem[v][1])
    return [ln for v, (lines, _) in elem.items() if v in seen for ln in lines]

  def inner(lines, span=f"range({m})") -> list:
    loads = [ln.format("_e") for ln in b.elem_loads] + b.col_loads
    # An unsigned index: numba then skips the wraparound of negative indices, a select that
    # keeps LLVM from seeing consecutive loads (the loop would not vectorize). All of it
    # unsigned: prange's index may be either, and numba types uint64 op int64 as float64.
    return [f"for _j in {span}:", f"  _e = np.uint64(_i) * np.uint64({m}) + np.uint64(_j)"] + \
        ["  " + ln for ln in loads + lines]

  def blocked_sum(val, lines) -> list:
    # A float32 row sum: float32 partial sums over blocks of _SUM_BLOCK elements (vectorized:
    # 8 lanes of float32, where float64 lanes would halve the width of the whole loop, exp and
    # all), added into the float64 `_acc`: each block's error is a few float32 ulps of its sum
    # of magnitudes, far inside JAX-COMPAT's rtol 1e-5, and blocks do not compound it.
    step = f"_bacc = _s.radd(_bacc, {val})"
    if m <= _SUM_BLOCK:
      return ["_bacc = np.float32(0)"] + inner(lines + [step]) + ["_acc = np.float64(_bacc)"]
    end = f"_b + {_SUM_BLOCK}" if m % _SUM_BLOCK == 0 else f"min(_b + {_SUM_BLOCK}, {m})"
    body = inner(lines + [step], f"range(_b, {end})")
    return ["_acc = np.float64(0)", f"for _b in range(0, {m}, {_SUM_BLOCK}):",
            "  _bacc = np.float32(0)"] + ["  " + ln for ln in body] + \
        ["  _acc = _acc + np.float64(_bacc)"]

  for eqn in k.eqns:
    prim, name, out = eqn.primitive, eqn.primitive.name, eqn.outvars[0]
    size = math.prod(out.aval.shape)
    lvl = "e" if size == total else "r" if size == rows else None
    if lvl is None:
      raise Unsupported(f"{name} makes {size} elements, neither {total} nor {rows} rows")
    ins, deps = [], set()
    for v in eqn.invars:
      if type(v) is Literal:
        ins.append(literal(v.val, v.aval.dtype))
      elif v in env:
        if level[v] == "e" and lvl == "r" and prim not in fusion.REDUCTIONS:
          raise Unsupported(f"{name} from elements to rows")
        if level[v] == "r" and lvl == "e" and not _row_broadcast(eqn, tuple(v.aval.shape)):
          raise Unsupported(f"{name} spreads a {v.aval.shape} value")
        ins.append(env[v])
        if level[v] == "e":
          deps.add(v)
      elif prim in fusion.REDUCTIONS:
        ins.append(b.operand(eqn, v, total, "e", (total, rows)))
      else:
        ins.append(b.operand(eqn, v, size, lvl, (total, rows)))
    local = f"v{len(env)}"
    if prim in fusion.VIEWS:
      env[out], level[out] = ins[0], lvl
      if lvl == "e":
        elem[out] = ([], deps)
      continue
    if prim in fusion.REDUCTIONS:
      rank = len(eqn.invars[0].aval.shape)
      if tuple(sorted(eqn.params["axes"])) != tuple(range(1, rank)) or lvl != "r":
        raise Unsupported(f"{name} over axes {eqn.params['axes']} of a rank-{rank} value")
      if prim is kinds.roles.reduce_sum and np.dtype(out.aval.dtype) == np.float32:
        row_body += blocked_sum(ins[0], closure(deps)) + [f"{local} = np.float32(_acc)"]
      else:
        init, step, final = _reduction(prim, "_acc", ins[0], out.aval.dtype)
        row_body += [init] + inner(closure(deps) + [step]) + [f"{local} = {final}"]
    elif prim in fusion.ELEMENTWISE:
      lines = statement(prim, local, ins, [v.aval.dtype for v in eqn.invars], out.aval.dtype,
                        eqn.params)
      if lvl == "r":
        row_body += lines
      else:
        elem[out] = (lines, deps)
    else:
      raise Unsupported(name)
    env[out], level[out] = local, lvl
  row_outs = [f"o{j}[_i] = {env[v]}" for j, v in enumerate(k.outputs) if level[v] == "r"]
  elem_outs = [(j, v) for j, v in enumerate(k.outputs) if level[v] == "e"]
  if elem_outs:
    stores = [f"o{j}[_e] = {env[v]}" for j, v in elem_outs]
    row_body += inner(closure([v for _, v in elem_outs]) + stores)
  loads = [ln.format("_i") for ln in b.row_loads]
  outputs = [(np.dtype(v.aval.dtype), total if level[v] == "e" else rows) for v in k.outputs]
  return Plan(rows, b.specs, b.scalars, loads + row_body + row_outs, outputs)


class NativeKernel:
  """Calls the compiled loop with tier 1's operands: flattens (or broadcasts) them, allocates
  the outputs and returns them in the kernel's output shapes.

  The loop runs on all `threads` or on one, whichever its calls show faster (`_Threads`), in
  the chunks `threads.chunk` gives (a thread that loses its core then holds up only its
  chunk). Both are numba's settings of the calling thread, set around the call (set inside
  the kernel they would keep numba from caching it) and restored after."""
  __slots__ = ("fn", "count", "specs", "outs", "source", "from_cache", "threads", "chunk",
               "_numba", "written", "keep_ratio")

  def __init__(self, fn, plan_: Plan, out_shapes, source: str, from_cache: bool,
               threads: int = 1):
    import numba  # loaded already: the kernel was compiled
    from jaxlite._src.compiler.native import threads as pool
    self.fn, self.count, self.specs = fn, plan_.count, plan_.specs
    # (shape, dtype, size, argument written in place or -1) per output
    self.outs = [(shape, d, size, plan_.in_place.get(j, -1))
                 for j, (shape, (d, size)) in enumerate(zip(out_shapes, plan_.outputs))]
    self.written = frozenset(plan_.in_place.values())
    self.source, self.from_cache = source, from_cache
    self.threads = _Threads(threads)
    self.chunk = pool.chunk(plan_.count) if threads > 1 else 0
    self._numba = numba
    self.keep_ratio = native.KEEP_RATIO if threads > 1 else native.SERIAL_KEEP_RATIO

  @property
  def reuse(self) -> tuple:
    """Per output, the operand whose buffer it is written into (in place), or -1."""
    return tuple(self.specs[s][0] if s >= 0 else -1 for *_, s in self.outs)

  def __call__(self, *operands):
    arrays = []
    for s, (j, kind, extra, dtype) in enumerate(self.specs):
      x = operands[j]
      if kind == "apply":
        x = extra(x)
      if s in self.written:
        # Output into this operand's buffer (a dying one tier 1 would reuse too: no fresh
        # pages to fault in, ~0.1 ms a MiB here); a copy where it cannot be written.
        if not (type(x) is np.ndarray and x.dtype == dtype and x.flags.c_contiguous
                and x.flags.writeable):
          x = np.array(x, dtype, order="C")
        arrays.append(x.reshape(-1))
        continue
      x = np.ascontiguousarray(x, dtype).reshape(-1).view()
      x.flags.writeable = False
      arrays.append(x)
    outs = [arrays[s] if s >= 0 else np.empty(size, d) for _, d, size, s in self.outs]
    fresh = [o for o, (*_, s) in zip(outs, self.outs) if s < 0]
    if self.count and self.threads.modes == (1,):  # serial: numba's thread settings unused
      self.fn(self.count, *arrays, *fresh)
    elif self.count:
      nb, mode = self._numba, self.threads.pick()
      # all threads = this program's share while CPU devices run programs at once (the SPMD
      # runtime's machine.sharing): each OpenMP team of its own size, together the cores
      nt = machine.share(mode) if mode > 1 else 1
      nt0 = nb.get_num_threads()
      if nt != nt0:  # each of these calls costs ~1-2 us: only the needed ones
        nb.set_num_threads(nt)
      cs0 = nb.set_parallel_chunksize(self.chunk)
      try:
        t = time.perf_counter()
        self.fn(self.count, *arrays, *fresh)
        self.threads.record(mode, time.perf_counter() - t)
      finally:
        if cs0 != self.chunk:
          nb.set_parallel_chunksize(cs0)
        if nt != nt0:
          nb.set_num_threads(nt0)
    return [o.reshape(shape) for o, (shape, *_) in zip(outs, self.outs)]


class _Threads:
  """Thread count of a native kernel's calls, by timing: its first calls alternate all threads
  and one (all first), then the faster runs. The other is tried again after `wait` calls, or
  after wait / 8 when the current count's latest call took over 1.5x the other's best (a
  second thread that lost its core makes every call wait for the chunk it holds: 8 ms against
  3 ms on one thread, measured on logsumexp's kernel), and taken when 10% faster than the
  median of the current count's latest three calls (`recent`); a losing try doubles the wait
  (up to 2048). Tier 1's executor adapts the same way: a second thread pays only when a core
  is free. The median, not the latest call alone: one call of all threads that hit a hiccup (a
  thread descheduled for a moment) must not hand the kernel to one thread for the next REPROBE
  calls. (On the 13-core host logsumexp's kernel took 0.72-0.76 ms alone at 6-13 threads, and
  1.67 ms at 3.8 cores busy in the anchors' timed batches, as if some ran on one thread.)"""
  __slots__ = ("modes", "best", "last", "current", "calls", "wait", "probing", "probed",
               "slow", "recent")

  PROBES, REPROBE, MAX_WAIT = 3, 32, 2048

  def __init__(self, threads: int):
    self.modes = (threads, 1) if threads > 1 else (1,)
    self.best = {m: float("inf") for m in self.modes}
    self.last = dict(self.best)
    self.current, self.calls, self.wait, self.probing = self.modes[0], 0, self.REPROBE, None
    self.probed, self.slow = 0, False
    self.recent = []  # the current count's latest calls (3 at most)

  def _other(self) -> int:
    return self.modes[1 - self.modes.index(self.current)]

  def pick(self) -> int:
    n = self.calls
    self.calls += 1
    probes = self.PROBES * len(self.modes)
    if n < probes:
      return self.modes[n % len(self.modes)]
    if n == probes:
      self.current, self.probed = min(self.modes, key=self.best.__getitem__), n
    elif len(self.modes) > 1:
      since = n - self.probed
      if since >= self.wait or (self.slow and since >= max(4, self.wait // 8)):
        self.probing, self.probed = self._other(), n
        return self.probing
    return self.current

  def record(self, mode: int, seconds: float) -> None:
    self.best[mode] = min(self.best[mode], seconds)
    self.last[mode] = seconds
    if mode == self.probing:
      self.probing = None
      recent = sorted(self.recent) or [self.last[self.current]]
      if seconds < 0.9 * recent[len(recent) // 2]:
        self.current, self.wait, self.recent = mode, self.REPROBE, [seconds]
      else:
        self.wait = min(2 * self.wait, self.MAX_WAIT)
      self.slow = False
    elif mode == self.current and len(self.modes) > 1:
      self.recent.append(seconds)
      if len(self.recent) > 3:
        del self.recent[0]
      self.slow = seconds > 1.5 * self.best[self._other()]
