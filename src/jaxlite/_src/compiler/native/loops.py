"""Whole `scan` and `while_loop` loops as one numba function: the body's array ops (elementwise,
broadcasts, reshapes, slices, 1-D/2-D matrix products through numba's BLAS `np.dot`) inlined in a
compiled loop over the steps, so a step costs no Python dispatch (tier 1 spends ~15 NumPy calls
a step on the scan RNN).

`scan_source` writes the module (an explicit signature: every value C-contiguous, each dtype
numba's) or raises codegen.Unsupported; the native backend wraps the tier-1 loop in a HotSwap
that compiles it in the background when hot and keeps it only when its calls are faster.

0-d values (fori_loop's counter, scalar accumulators) are numba scalars cast to their dtype
after every op. `while_source` compiles a while_loop with one 0-d predicate the same way.
Not covered (stay on tier 1): a batched (vmapped) while predicate, reductions, integer
division, float-to-int converts, gathers and every other primitive
`_array_expr` does not name. Nothing here imports numba.
"""
from __future__ import annotations

import os
import re

import numpy as np

from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.native import codegen
from jaxlite._src.base.core import Literal

# Off by default (JAXLITE_NATIVE_LOOPS=1 turns it on): on the scan RNN anchor (tanh, 1000 steps,
# hidden 128, batch 32; 2-core AMD EPYC, 2026-12-05) the compiled loop's best call is 31 ms
# against tier 1's 20 ms, so the HotSwap rejects it. Tier 1 hoists the step's x @ u out of the
# loop (scan_hoist: one stacked product, on the other core beside the loop); the compiled loop
# makes both products every step (2 x ~9.5 us of its ~31 us). Its float32 transcendentals are
# support.py's, mapped by `_map_*` helpers (a (32, 128) tanh 2.7 us; numba's own np.tanh, a
# scalar libm call per element, took 27 us and the loop 55 ms). On by default it would spend a
# background compile (~5 s of CPU) and slow trial calls on every hot loop of this kind.
ENABLED = os.environ.get("JAXLITE_NATIVE_LOOPS", "0").strip().lower() in ("1", "true", "on")

# Code text keyed by the operation a primitive computes (`primitive_kinds.operation`).
_UNARY = {"tanh": "np.tanh({0})", "exp": "np.exp({0})", "log": "np.log({0})",
          "sin": "np.sin({0})", "cos": "np.cos({0})", "sqrt": "np.sqrt({0})",
          "log1p": "np.log1p({0})", "expm1": "np.expm1({0})", "abs": "np.abs({0})",
          "neg": "(-{0})"}
_FLOAT_ONLY = {"tanh", "exp", "log", "sin", "cos", "sqrt", "log1p", "expm1", "div", "pow",
               "logistic"}
_BINARY = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})",
           "div": "({0} / {1})", "max": "np.maximum({0}, {1})", "min": "np.minimum({0}, {1})",
           "pow": "np.power({0}, {1})", "and": "({0} & {1})", "or": "({0} | {1})",
           "xor": "({0} ^ {1})", "lt": "({0} < {1})", "gt": "({0} > {1})",
           "le": "({0} <= {1})", "ge": "({0} >= {1})", "eq": "({0} == {1})",
           "ne": "({0} != {1})"}
_BITWISE = {"and", "or", "xor"}


def _array_type(aval, readonly: bool = True) -> str:
  """numba type of a kernel argument of `aval`, C-contiguous (a 0-d value travels as a
  shape-(1,) array). Inputs are declared read-only and always passed as read-only views:
  jaxlite's buffers are read-only, and a signature accepts only the flag it names."""
  name = codegen._TYPES.get(np.dtype(aval.dtype), (None,))[0]
  if name is None:
    raise codegen.Unsupported(f"dtype {aval.dtype}")
  return f"types.Array(types.{name}, {max(len(aval.shape), 1)}, 'C', readonly={readonly})"


def _expr(eqn, ins) -> str:
  """The numba expression of one eqn over array or scalar operands `ins`. A 0-d result is a
  numba scalar cast to its dtype: numba computes int32 + int32 in int64 and float32 math may
  widen, NumPy's 0-d arrays (tier 0) keep the dtype, and the cast wraps as they do."""
  out, op = eqn.outvars[0].aval, kinds.operation.get(eqn.primitive)
  if not out.shape:
    if op in ("dot_general", "reshape", "broadcast_in_dim"):
      raise codegen.Unsupported(f"0-d {eqn.primitive.name}")
    if op == "select_n":
      if len(ins) != 3 or np.dtype(eqn.invars[0].aval.dtype) != np.bool_:
        raise codegen.Unsupported("select_n beyond a bool predicate")
      return f"{codegen._cast(out.dtype)}({ins[2]} if {ins[0]} else {ins[1]})"
    if op == "convert_element_type":
      _array_expr(eqn, ins)  # its checks (no float -> int)
      return f"{codegen._cast(out.dtype)}({ins[0]})"
    if op == "squeeze":  # a one-element array's element
      return f"{codegen._cast(out.dtype)}(np.ascontiguousarray({ins[0]}).ravel()[0])"
    if op in _UNARY or op == "logistic":
      _array_expr(eqn, ins)  # its checks (float operands, one dtype)
      return f"{codegen._cast(out.dtype)}({_unary(op, out.dtype, ins[0], True)})"
    return f"{codegen._cast(out.dtype)}({_array_expr(eqn, ins)})"
  if op == "broadcast_in_dim" and not eqn.invars[0].aval.shape:
    return f"np.full({tuple(out.shape)!r}, {ins[0]}, {codegen._cast(out.dtype)})"
  return _array_expr(eqn, ins)


def _unary(op: str, dtype, x: str, scalar: bool) -> str:
  """Unary operation `op` of `x` (a numba scalar where `scalar`, else an array). Where support.py has a
  libm-free version for the dtype (codegen._VECTOR), a scalar calls it and an array maps it
  with a generated helper (`_MAP_HELPER`, added by `_kernel_head`), so the loop over the
  elements vectorizes: numba's own np.tanh over an array is one scalar libm call per element
  (no SVML here; 27 us against 2.7 us for a (32, 128) float32 tanh)."""
  if op == "logistic":
    one = codegen.literal(1, dtype)
    return f"({one} / ({one} + {_unary('exp', dtype, f'(-{x})', scalar)}))"
  dtype = np.dtype(dtype)
  if op in codegen._VECTOR.get(dtype, ()):
    fn = f"{op}_f{dtype.itemsize * 8}"
    return f"_s.{fn}({x})" if scalar else f"_map_{fn}({x})"
  return _UNARY[op].format(x)


# One helper per support.py function an array expression maps (`_unary`): the elements of a
# C-contiguous copy (a view where the operand already is) through the scalar function, into a
# fresh array of the same shape.
_MAP_HELPER = """@njit(nogil=True, error_model="numpy")
def _map_{fn}(a):
  a = np.ascontiguousarray(a)
  out = np.empty(a.shape, a.dtype)
  src, dst = a.reshape(a.size), out.reshape(out.size)
  for i in range(src.size):
    dst[i] = _s.{fn}(src[i])
  return out
"""


def _kernel_head(body_lines, sig, params) -> list:
  """The generated module up to the kernel's `def` line: imports, the map helpers `body_lines`
  call, and the kernel's signature `sig` (numba types) over `params`."""
  text = "\n".join(body_lines)
  used = sorted(set(re.findall(r"\b_map_(\w+?)\(", text)))
  head = ["import numpy as np", "from numba import njit, types"]
  if used or "_s." in text:
    head.append("from jaxlite._src.compiler.native import support as _s")
  head.append("")
  for fn in used:
    head += [_MAP_HELPER.format(fn=fn)]
  return head + [
      f"@njit(types.void({', '.join(sig)}), cache=True, nogil=True, error_model='numpy')",
      f"def kernel({', '.join(params)}):"]


def _array_expr(eqn, ins) -> str:
  op, p, name = kinds.operation.get(eqn.primitive), eqn.params, eqn.primitive.name
  out = eqn.outvars[0].aval
  dtype_kinds = {np.dtype(v.aval.dtype).kind for v in eqn.invars}
  if op in _FLOAT_ONLY and dtype_kinds - {"f"}:
    raise codegen.Unsupported(f"{name} on {dtype_kinds}")
  if op in _BITWISE and dtype_kinds - {"b", "i", "u"}:
    raise codegen.Unsupported(f"{name} on {dtype_kinds}")
  if any(np.dtype(v.aval.dtype) != np.dtype(out.dtype) for v in eqn.invars) \
      and op not in ("lt", "gt", "le", "ge", "eq", "ne", "select_n", "convert_element_type"):
    raise codegen.Unsupported(f"{name} mixing dtypes")
  if op in _UNARY or op == "logistic":
    return _unary(op, out.dtype, ins[0], False)
  if op in _BINARY:
    return _BINARY[op].format(*ins)
  if op == "integer_pow" and p["y"] == 2:
    return f"({ins[0]} * {ins[0]})"
  if op == "select_n" and len(ins) == 3 and np.dtype(eqn.invars[0].aval.dtype) == np.bool_:
    return f"np.where({ins[0]}, {ins[2]}, {ins[1]})"
  if op == "convert_element_type":
    src = np.dtype(eqn.invars[0].aval.dtype)
    if src.kind == "f" and np.dtype(out.dtype).kind != "f":
      raise codegen.Unsupported("float -> int convert")  # rounding/overflow rules differ
    return f"{ins[0]}.astype({codegen._cast(out.dtype)})"
  if op == "broadcast_in_dim":
    in_shape = eqn.invars[0].aval.shape
    shape = [1] * len(out.shape)
    for d, s in zip(p["broadcast_dimensions"], in_shape):
      shape[d] = s
    x = f"np.ascontiguousarray({ins[0]}).reshape({tuple(shape)!r})"
    return x if tuple(shape) == tuple(out.shape) else f"np.broadcast_to({x}, {tuple(out.shape)!r})"
  if op == "reshape" and p.get("dimensions") is None:
    return f"np.ascontiguousarray({ins[0]}).reshape({tuple(out.shape)!r})"
  if op == "slice":
    strides = p.get("strides") or (1,) * len(p["start_indices"])
    idx = ", ".join(f"{a}:{b}:{c}" for a, b, c in zip(p["start_indices"], p["limit_indices"],
                                                     strides))
    return f"{ins[0]}[{idx}]"
  if op == "squeeze":
    return f"np.ascontiguousarray({ins[0]}).reshape({tuple(out.shape)!r})"
  if op == "dot_general":
    (lc, rc), (lb, rb) = p["dimension_numbers"]
    lhs, rhs = (v.aval for v in eqn.invars)
    if lb or rb or tuple(lc) != (lhs.ndim - 1,) or tuple(rc) != (0,) or lhs.ndim > 2 \
        or rhs.ndim > 2 or dtype_kinds != {"f"} or np.dtype(lhs.dtype) != np.dtype(out.dtype):
      raise codegen.Unsupported("dot_general beyond np.dot")
    return f"np.dot(np.ascontiguousarray({ins[0]}), np.ascontiguousarray({ins[1]}))"
  raise codegen.Unsupported(name)


def scan_source(closed, num_consts: int, num_carry: int, reverse: bool):
  """(numba module source, body consts): the module's `kernel(*body consts, *consts,
  *carry_in, *xs, *ys, *carry_out, length)` running the scan of body `closed` and writing ys
  and the final carry in place."""
  jaxpr, consts = passes.optimize(closed)
  consts = [np.asarray(c, v.aval.dtype) for c, v in zip(consts, jaxpr.constvars)]
  names, counter = {}, iter(range(1 << 30))

  def name(v):
    if v not in names:
      names[v] = f"v{next(counter)}"
    return names[v]

  def atom(v):
    if type(v) is Literal:
      return codegen.literal(v.val, v.aval.dtype)
    return name(v)

  def scalar(v) -> bool:
    return not v.aval.shape

  invars = jaxpr.invars
  n_in = num_consts + num_carry
  xs_vars = invars[n_in:]
  outs = jaxpr.outvars
  if any(type(v) is Literal for v in outs):
    raise codegen.Unsupported("a literal result")
  params, sig = [], []
  for i, v in enumerate(jaxpr.constvars):
    params.append(f"k{i}")
    sig.append(_array_type(v.aval))
  for i, v in enumerate(invars[:num_consts]):
    params.append(f"a{i}")
    sig.append(_array_type(v.aval))
  carry_vars = invars[num_consts:n_in]
  for i, v in enumerate(carry_vars):
    params.append(f"c{i}")
    sig.append(_array_type(v.aval))
  for i, v in enumerate(xs_vars):
    params.append(f"xs{i}")
    sig.append(_array_type(_stacked(v.aval)))
  for i, v in enumerate(outs[num_carry:]):
    params.append(f"ys{i}")
    sig.append(_array_type(_stacked(v.aval), readonly=False))
  for i, v in enumerate(outs[:num_carry]):
    params.append(f"co{i}")
    sig.append(_array_type(v.aval, readonly=False))
  params.append("length")
  sig.append("types.int64")
  body = _eqn_lines(jaxpr, name, atom)
  lines = _kernel_head(body, sig, params)
  lines += [f"  {name(v)} = k{i}{'[0]' if scalar(v) else ''}"
            for i, v in enumerate(jaxpr.constvars)]
  lines += [f"  {name(v)} = a{i}{'[0]' if scalar(v) else ''}"
            for i, v in enumerate(invars[:num_consts])]
  lines += [f"  {name(v)} = c{i}[0]" if scalar(v) else f"  {name(v)} = c{i}.copy()"
            for i, v in enumerate(carry_vars)]
  lines.append("  for _t in range(length):")
  lines.append(f"    _i = {'length - 1 - _t' if reverse else '_t'}")
  lines += [f"    {name(v)} = xs{i}[_i]" for i, v in enumerate(xs_vars)]
  lines += [f"    {line}" for line in body]
  lines += [f"    ys{i}[_i] = {name(v)}" for i, v in enumerate(outs[num_carry:])]
  # The next step's carry: C-contiguous copies (types stay one across iterations, and a
  # carry never aliases a value the next step's results overwrite).
  new = [f"{codegen._cast(v.aval.dtype)}({atom(v)})" if scalar(v)
         else f"np.ascontiguousarray({name(v)}).copy()" for v in outs[:num_carry]]
  if carry_vars:
    lines.append(f"    {', '.join(name(v) for v in carry_vars)} = {', '.join(new)}")
  lines += [f"  co{i}[{'0' if scalar(v) else '...'}] = {name(v)}"
            for i, v in enumerate(carry_vars)]
  return "\n".join(lines) + "\n", consts


def _eqn_lines(jaxpr, name, atom) -> list:
  lines = []
  for eqn in jaxpr.eqns:
    if len(eqn.outvars) != 1:
      raise codegen.Unsupported(f"{eqn.primitive.name}: several results")
    lines.append(f"{name(eqn.outvars[0])} = {_expr(eqn, [atom(v) for v in eqn.invars])}")
  return lines


def while_source(cond, body, cond_nconsts: int, body_nconsts: int):
  """(numba module source, cond consts, body consts) of `kernel(*cond consts, *body consts,
  *cond_consts, *body_consts, *carry_in, *carry_out)` running while_loop(cond, body) on one
  0-d predicate (a batched predicate stays on tier 1) and writing the final carry."""
  cj, cconsts = passes.optimize(cond)
  bj, bconsts = passes.optimize(body)
  cconsts = [np.asarray(c, v.aval.dtype) for c, v in zip(cconsts, cj.constvars)]
  bconsts = [np.asarray(c, v.aval.dtype) for c, v in zip(bconsts, bj.constvars)]
  pred = cj.outvars[0]
  if type(pred) is Literal or pred.aval.shape or np.dtype(pred.aval.dtype) != np.bool_:
    raise codegen.Unsupported("a predicate that is not one traced bool")
  if any(type(v) is Literal for v in bj.outvars):
    raise codegen.Unsupported("a literal result")
  names, counter = {}, iter(range(1 << 30))

  def name(v):
    if v not in names:
      names[v] = f"v{next(counter)}"
    return names[v]

  def atom(v):
    return codegen.literal(v.val, v.aval.dtype) if type(v) is Literal else name(v)

  def load(var, arg):
    return f"  {name(var)} = {arg}{'[0]' if not var.aval.shape else ''}"
  carry = bj.invars[body_nconsts:]
  groups = [("ck", cj.constvars), ("bk", bj.constvars), ("ca", cj.invars[:cond_nconsts]),
            ("ba", bj.invars[:body_nconsts]), ("c", carry)]
  params, sig, lines = [], [], []
  for prefix, vs in groups:
    for i, v in enumerate(vs):
      params.append(f"{prefix}{i}")
      sig.append(_array_type(v.aval))
      if prefix == "c" and v.aval.shape:
        lines.append(f"  {name(v)} = c{i}.copy()")
      else:
        lines.append(load(v, f"{prefix}{i}"))
  for i, v in enumerate(carry):
    params.append(f"co{i}")
    sig.append(_array_type(v.aval, readonly=False))
  lines.append("  while True:")
  lines += [f"    {name(cv)} = {name(bv)}" for cv, bv in zip(cj.invars[cond_nconsts:], carry)]
  lines += [f"    {line}" for line in _eqn_lines(cj, name, atom)]
  lines.append(f"    if not {name(pred)}:")
  lines.append("      break")
  lines += [f"    {line}" for line in _eqn_lines(bj, name, atom)]
  new = [f"{codegen._cast(v.aval.dtype)}({atom(v)})" if not v.aval.shape
         else f"np.ascontiguousarray({name(v)}).copy()" for v in bj.outvars]
  if carry:
    lines.append(f"    {', '.join(name(v) for v in carry)} = {', '.join(new)}")
  lines += [f"  co{i}[{'...' if v.aval.shape else '0'}] = {name(v)}"
            for i, v in enumerate(carry)]
  return "\n".join(_kernel_head(lines, sig, params) + lines) + "\n", cconsts, bconsts


class NativeWhile:
  """The compiled while loop with while_p's calling convention `(*cond_consts, *body_consts,
  *carry) -> carry`; a call it cannot take (other dtypes or ranks) runs `fallback`."""

  def __init__(self, fn, cconsts, bconsts, body, body_nconsts, fallback):
    self.fn, self.fallback = fn, fallback
    self.consts = [_readonly(np.ascontiguousarray(c).reshape(np.shape(c) or (1,)))
                   for c in (*cconsts, *bconsts)]
    self.carry_avals = [v.aval for v in body.jaxpr.outvars]

  def __call__(self, *args):
    ins = [_readonly(np.ascontiguousarray(a).reshape(np.shape(a) or (1,))) for a in args]
    outs = [np.empty(a.shape or (1,), a.dtype) for a in self.carry_avals]
    try:
      self.fn(*self.consts, *ins, *outs)
    except TypeError:
      return self.fallback(*args)
    return [o.reshape(a.shape) for o, a in zip(outs, self.carry_avals)]


def _stacked(aval):
  class _A:  # the aval with a leading steps axis (only shape and dtype are read)
    shape = (0, *aval.shape)
    dtype = aval.dtype
  return _A


class NativeScan:
  """The compiled loop with tier 1's calling convention `(*consts, *carry, *xs, *ys, length)
  -> carry`; calls whose buffers it cannot take as they are (not C-contiguous, other dtype)
  run `fallback`."""

  def __init__(self, fn, body_consts, closed, num_consts, num_carry, fallback):
    self.fn, self.fallback = fn, fallback
    # 0-d values travel as shape-(1,) arrays (scan_source reads and writes their element)
    self.body_consts = [_readonly(np.ascontiguousarray(c).reshape(np.shape(c) or (1,)))
                        for c in body_consts]
    self.n_in = num_consts + num_carry
    self.num_consts, self.num_carry = num_consts, num_carry
    self.carry_avals = [v.aval for v in closed.jaxpr.outvars[:num_carry]]
    self.n_ys = len(closed.jaxpr.outvars) - num_carry

  def __call__(self, *args):
    length = args[-1]
    ins = [np.asarray(a) for a in args[:-1]]
    # consts and carry are only read: a contiguous copy will do; xs are read too, but big;
    # ys are written in place, so must be taken as they are.
    n_x = len(ins) - self.n_in - self.n_ys
    ins = [_readonly(np.ascontiguousarray(a).reshape(a.shape or (1,)))
           for a in ins[:self.n_in]] \
        + [_readonly(a) for a in ins[self.n_in:self.n_in + n_x]] + ins[self.n_in + n_x:]
    if not all(a.flags.c_contiguous for a in ins) \
        or not all(a.flags.writeable for a in ins[self.n_in + n_x:]):
      return self.fallback(*args)
    outs = [np.empty(a.shape or (1,), a.dtype) for a in self.carry_avals]
    try:
      self.fn(*self.body_consts, *ins, *outs, int(length))
    except TypeError:  # dtypes or ranks other than the body's avals: tier 1 runs it
      return self.fallback(*args)
    return tuple(o.reshape(a.shape) for o, a in zip(outs, self.carry_avals))


def _readonly(a: np.ndarray) -> np.ndarray:
  """A read-only view of `a` (no copy): what the kernel's input types declare."""
  if not a.flags.writeable:
    return a
  v = a.view()
  v.flags.writeable = False
  return v


# --- the hoisted loop: tier 1's stacked products before the loop, the rest compiled ----------

# Off by default (JAXLITE_NATIVE_HOISTED_LOOPS=1 turns it on): tier 1's hoisted loop with its
# per-step remainder compiled by `scan_source` (numba's np.dot, array expressions). The fused
# step (fused_scan.py, on by default) compiles the bodies it covers instead, through HoistedScan
# too; this one is then used only where that raises Unsupported. On the 13-core host's scan RNN anchor tier 1's step is a 16 us
# product, an 11.4 us NumPy float32 tanh (no SIMD tanh for float32 there) and ~5 us of adds and
# dispatch (35 ms a call against JAX's 32); compiled, the tanh is support.py's vectorized one
# and the dispatch goes. Measured, it does not pay yet: on the 13-core host (2026-12-06, anchors)
# its trials lost to tier 1's 35 ms loop (rejected) after 11.7 s of background compile; on the
# 2-core AMD machine its calls took 33 ms of CPU against tier 1's 30 (numba's np.dot, the
# step's fresh arrays and copies cost what the tanh saves where NumPy's tanh is SIMD: 2 us).
HOISTED = os.environ.get("JAXLITE_NATIVE_HOISTED_LOOPS", "0").strip().lower() in (
    "1", "true", "on")


def hoisted_scan_source(jaxpr, consts, num_consts: int, num_carry: int, reverse: bool, p):
  """(numba module source, body consts) of the loop of an optimized scan body `jaxpr` whose
  stacked eqns `p` (scan_hoist.plan) run before it: `scan_source` of the body without them,
  their results read as more scanned inputs (after the body's own xs). Raises
  codegen.Unsupported where the batched program reads a value the loop makes (an invariant eqn
  of the body: `HoistedScan` passes only consts and xs to it) or the rest has no native plan."""
  from jaxlite._src.base import core
  n_in = num_consts + num_carry
  readable = set(jaxpr.constvars) | set(jaxpr.invars[:num_consts]) | set(jaxpr.invars[n_in:])
  if any(v not in readable for v in p.inputs):
    raise codegen.Unsupported("the stacked eqns read a value the body computes")
  if any(np.dtype(v.aval.dtype) == np.bool_ for v in p.outputs):
    raise codegen.Unsupported("a stacked bool")
  moved = {id(e) for e in p.eqns}
  rest = core.Jaxpr(list(jaxpr.constvars), list(jaxpr.invars) + list(p.outputs),
                    list(jaxpr.outvars), [e for e in jaxpr.eqns if id(e) not in moved])
  if any(e.primitive is kinds.roles.dot_general for e in rest.eqns):
    import importlib.util
    if importlib.util.find_spec("scipy") is None:  # numba's np.dot calls SciPy's BLAS
      raise codegen.Unsupported("np.dot without SciPy")
  return scan_source(core.ClosedJaxpr(rest, consts), num_consts, num_carry, reverse)


class HoistedScan:
  """Tier 1's scan calling convention `(*consts, *carry, *xs, *ys, length) -> carry` over the
  stacked values of `batched` (a scan_hoist._Batched: computed by chunks of steps, on tier 1's
  pool beside the loop where a worker is free, on one BLAS thread) and the compiled loop
  `loop` (a NativeScan of `hoisted_scan_source`'s body), called once per chunk with the carry
  passed on. `inputs` says where each input of the batched program comes from: ("c", k) the
  k-th const argument, ("k", k) the k-th body const, ("x", k) the k-th xs. A call whose buffers
  the loop cannot take runs `fallback` (tier 1's loop) whole."""

  # `keep_ratio`: the compiled loop is serial (the pool threads it uses are tier 1's pipeline's
  # too), so it is kept where it beats tier 1's loop by a serial kernel's margin.

  def __init__(self, loop, batched, inputs, body_consts, num_consts, num_carry, n_ys, fallback,
               min_length):
    from jaxlite._src.compiler import native
    self.keep_ratio = native.SERIAL_KEEP_RATIO
    self.loop, self.batched, self.inputs = loop, batched, inputs
    self.body_consts = body_consts
    self.num_consts, self.num_carry, self.n_ys = num_consts, num_carry, n_ys
    self.fallback = fallback
    self.min_length = min_length  # scan_hoist.MIN_LENGTH, given by the backend above this module

  def __call__(self, *args):
    length = int(args[-1])
    nc, ncar = self.num_consts, self.num_carry
    n_in = nc + ncar
    n_x = len(args) - 1 - n_in - self.n_ys
    xs, ys = args[n_in:n_in + n_x], args[n_in + n_x:-1]
    # the lengths tier 1 hoists (stacked values within scan_hoist.MAX_BYTES), buffers as taken
    if not self.min_length <= length <= self.fallback.max_length or not all(
        isinstance(y, np.ndarray) and y.flags.c_contiguous and y.flags.writeable for y in ys) \
        or not all(np.asarray(x).flags.c_contiguous for x in xs):
      return self.fallback(*args)
    where = {"c": args[:nc], "k": self.body_consts, "x": xs}
    ins = [where[kind][k] for kind, k in self.inputs]
    self.batched.pipeline = self.batched.can_pipeline(length)
    run = self.batched.start(length, *ins)
    try:
      carry = args[nc:n_in]
      for lo, hi in run.chunks:
        stacked = [np.ascontiguousarray(h) for h in run.wait(lo)]
        carry = self.loop(*args[:nc], *carry, *[x[lo:hi] for x in xs], *stacked,
                          *[y[lo:hi] for y in ys], hi - lo)
    except Refused:  # the loop's types refused a chunk: tier 1 runs the whole call again
      pass
    else:
      return carry
    finally:
      run.close()
    return self.fallback(*args)


class Refused(Exception):
  """A chunk's buffers the compiled loop cannot take (HoistedScan then runs tier 1's loop)."""


def refuse(*args):
  raise Refused
