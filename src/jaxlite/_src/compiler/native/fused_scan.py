"""A hoisted scan's step as one compiled loop: matrix products through NumPy's own BLAS, the
elementwise ops between them fused into one loop over the step's elements each, results written
where they are kept (a ys row, the carry's buffer), nothing allocated per step.

Tier 1's hoisted loop (scan_hoist) runs the step's remaining work as NumPy calls from Python:
on the scan RNN anchor (`h = tanh(h @ w + x @ u + b)`, the `x @ u` hoisted) a product, two
adds, a tanh and the views of the step's rows, ~1 us of dispatch each on the TPU machine's
13-core host, plus NumPy's float32 tanh there (no SIMD loop for it with AVX2: 11.3 us of a
~35 us step). `scan_source` writes the loop over a chunk's steps as one numba function:

- a `dot_general` of two C-contiguous 2-D operands contracting lhs's last axis with rhs's first
  (no batch dims, both sides wider than one row or column) calls the CBLAS `sgemm`/`dgemm` of
  the OpenBLAS NumPy itself loaded (`blas.cblas_gemm`), with the arguments NumPy's matmul
  passes it: the same bits as tier 1's `np.matmul`, with no SciPy (numba's `np.dot` needs
  SciPy's BLAS, which `pip install jaxlite` does not bring) and no Python per call. The
  library's address travels as a body const (the cached module stays valid across processes);
- consecutive elementwise eqns with one element count are one loop over the flat elements,
  each eqn a scalar statement of `codegen.RULES` (tier 0's semantics; float32 tanh, exp, log
  are support.py's vectorizing versions, within 2 ulp of NumPy's); a value that outlives its
  loop is stored, the others stay scalars;
- a value kept is stored into its ys row where it is a ys output, else, for a carry, into one
  of two buffers used in turn (the next step reads the carry while writing the new one), else
  into a buffer allocated once before the loop; views (reshapes) are views of those;
- loop-invariant eqns run once before the loop, made C-contiguous (a bias broadcast to the
  batch is then read element by element like the rest).

Anything else (another primitive, a 0-d carry, a product NumPy would not send to gemm, a BLAS
not found) raises codegen.Unsupported and the scan stays tier 1's. Values: products
bit-identical to tier 1's, elementwise ops as tier 0 computes them except the transcendentals
(support.py's, 2 ulp): results agree with tier 0 to float tolerance (tests/test_native_loops.py).
Nothing here imports numba.
"""
from __future__ import annotations

import math
import os
import time

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.base.core import Literal
from jaxlite._src.compiler import blas
from jaxlite._src.compiler import fusion
from jaxlite._src.compiler import passes
from jaxlite._src.compiler.native import codegen
from jaxlite._src.compiler.native import loops

# On by default; JAXLITE_NATIVE_FUSED_SCAN=0 turns it off (tier 1's hoisted loop then runs, or
# loops.HoistedScan's generic compiled body where JAXLITE_NATIVE_HOISTED_LOOPS=1).
ENABLED = os.environ.get("JAXLITE_NATIVE_FUSED_SCAN", "1").strip().lower() not in (
    "0", "false", "off")

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _product_operands(eqn):
  """(m, n, k) of a dot_general NumPy's matmul sends to gemm as it is (2-D C-contiguous
  operands, lhs's last axis against rhs's first, no batch, m and n above 1: a row or a column
  goes to gemv, other bits); raises Unsupported otherwise."""
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  lhs, rhs = (v.aval for v in eqn.invars)
  out = eqn.outvars[0].aval
  dtypes = {np.dtype(lhs.dtype), np.dtype(rhs.dtype), np.dtype(out.dtype)}
  if lb or rb or lhs.ndim != 2 or rhs.ndim != 2 or tuple(lc) != (1,) or tuple(rc) != (0,) \
      or len(dtypes) != 1 or dtypes.pop() not in _FLOATS \
      or eqn.params.get("preferred_element_type") not in (None, np.dtype(out.dtype)):
    raise codegen.Unsupported("a product other than a 2-D matmul")
  if any(type(v) is Literal for v in eqn.invars):
    raise codegen.Unsupported("a literal operand of a product")
  m, k = lhs.shape
  n = rhs.shape[1]
  if m < 2 or n < 2 or k < 1:
    raise codegen.Unsupported("a product NumPy computes with gemv")
  return m, n, k


def _items(step) -> list:
  """The step's eqns as ["dot", eqn] / ["view", eqn] / ["group", [eqns], element count]."""
  items = []
  for eqn in step:
    if len(eqn.outvars) != 1 or eqn.effects:
      raise codegen.Unsupported(f"{eqn.primitive.name}: several results or effects")
    prim = eqn.primitive
    if prim is kinds.roles.dot_general:
      items.append(["dot", eqn])
    elif prim in fusion.VIEWS:
      items.append(["view", eqn])
    elif prim in fusion.ELEMENTWISE:
      size = math.prod(eqn.outvars[0].aval.shape)
      if items and items[-1][0] == "group" and items[-1][2] == size:
        items[-1][1].append(eqn)
      else:
        items.append(["group", [eqn], size])
    else:
      raise codegen.Unsupported(prim.name)
  return items


def scan_source(jaxpr, consts, num_consts: int, num_carry: int, reverse: bool, p):
  """(numba module source, body consts) of `kernel(*body consts, *consts, *carry_in, *xs,
  *ys, *carry_out, length)` (loops.NativeScan's convention) for the optimized scan body
  `jaxpr` whose stacked eqns `p` (scan_hoist.plan) run before the loop: their results are read
  as more scanned inputs, after the body's own xs (`p` None: the whole step in the loop, its
  products of xs rows too). Raises codegen.Unsupported where the step has work this loop does
  not compile."""
  n_in = num_consts + num_carry
  readable = set(jaxpr.constvars) | set(jaxpr.invars[:num_consts]) | set(jaxpr.invars[n_in:])
  if p is not None and any(v not in readable for v in p.inputs):
    raise codegen.Unsupported("the stacked eqns read a value the body computes")
  moved = {id(e) for e in p.eqns} if p is not None else set()
  invars = list(jaxpr.invars) + list(p.outputs if p is not None else [])
  rest = core.Jaxpr(list(jaxpr.constvars), invars, list(jaxpr.outvars),
                    [e for e in jaxpr.eqns if id(e) not in moved])
  const_in, carry_in, x_in = invars[:num_consts], invars[num_consts:n_in], invars[n_in:]
  carry_out, y_out = rest.outvars[:num_carry], rest.outvars[num_carry:]
  if any(type(v) is Literal for v in rest.outvars):
    raise codegen.Unsupported("a literal result")
  if any(not v.aval.shape for v in (*carry_in, *carry_out)):
    raise codegen.Unsupported("a 0-d carry")
  invariant, step = passes.split_invariant(rest.eqns, set(rest.constvars) | set(const_in))
  items = _items(step)

  names, counter = {}, iter(range(1 << 30))

  def name(v):
    if v not in names:
      names[v] = f"v{next(counter)}"
    return names[v]

  scalars = {}  # 0-d values read as numba scalars: var -> expression
  arrays = {}   # values held as C-contiguous arrays: var -> expression
  params, sig, head = [], [], []
  for i, v in enumerate(rest.constvars):
    params.append(f"k{i}")
    sig.append(loops._array_type(v.aval))
  # The gemm addresses: body consts after the jaxpr's (NativeScan passes body consts first).
  gemm_dtypes = sorted({np.dtype(it[1].outvars[0].aval.dtype).name for it in items
                        if it[0] == "dot"})
  gemm = {}
  for dt in gemm_dtypes:
    found = blas.cblas_gemm(dt)
    if found is None:
      raise codegen.Unsupported(f"no CBLAS {dt} gemm of NumPy's found")
    gemm[dt] = found
    params.append(f"g_{dt}")
    sig.append("types.Array(types.int64, 1, 'C', readonly=True)")
  for i, v in enumerate(const_in):
    params.append(f"a{i}")
    sig.append(loops._array_type(v.aval))
  for i, v in enumerate(carry_in):
    params.append(f"c{i}")
    sig.append(loops._array_type(v.aval))
  for i, v in enumerate(x_in):
    params.append(f"xs{i}")
    sig.append(loops._array_type(loops._stacked(v.aval)))
  for i, v in enumerate(y_out):
    params.append(f"ys{i}")
    sig.append(loops._array_type(loops._stacked(v.aval), readonly=False))
  for i, v in enumerate(carry_out):
    params.append(f"co{i}")
    sig.append(loops._array_type(v.aval, readonly=False))
  params.append("length")
  sig.append("types.int64")

  for i, v in enumerate(rest.constvars):
    (scalars if not v.aval.shape else arrays)[v] = f"k{i}[0]" if not v.aval.shape else f"k{i}"
  for i, v in enumerate(const_in):
    (scalars if not v.aval.shape else arrays)[v] = f"a{i}[0]" if not v.aval.shape else f"a{i}"
  for v, expr in list(scalars.items()):
    head.append(f"  {name(v)} = {expr}")
    scalars[v] = name(v)

  def atom(v):
    if type(v) is Literal:
      return codegen.literal(v.val, v.aval.dtype)
    return scalars.get(v) or arrays.get(v) or name(v)

  # Loop invariants: array expressions once, then C-contiguous copies where they are arrays.
  for eqn in invariant:
    if len(eqn.outvars) != 1 or eqn.primitive is kinds.roles.dot_general:
      raise codegen.Unsupported(f"loop-invariant {eqn.primitive.name}")  # (np.dot: SciPy)
    out = eqn.outvars[0]
    head.append(f"  {name(out)} = {loops._expr(eqn, [atom(v) for v in eqn.invars])}")
    if out.aval.shape:
      head.append(f"  {name(out)} = np.ascontiguousarray({name(out)})")
      arrays[out] = name(out)
    else:
      scalars[out] = name(out)
  fixed = set(arrays)  # arrays computed before the loop
  made_dense = {}

  def dense(v, shape):
    """A loop invariant `v` broadcast to `shape` (checked as NumPy broadcasts), made once."""
    if np.broadcast_shapes(tuple(v.aval.shape), shape) != shape:
      raise codegen.Unsupported(f"{v.aval.shape} does not broadcast to {shape}")
    if (v, shape) not in made_dense:
      d = core.Var(core.ShapedArray(shape, v.aval.dtype))
      head.append(f"  {name(d)} = np.ascontiguousarray(np.broadcast_to({arrays[v]}, {shape!r}))")
      arrays[d] = name(d)
      made_dense[v, shape] = d
    return made_dense[v, shape]

  # The carry: mutable C-contiguous copies (one array type across iterations).
  for i, v in enumerate(carry_in):
    head.append(f"  {name(v)} = c{i}.copy()")
    arrays[v] = name(v)

  # Readers of each value: the items reading it; jaxpr outputs are read after the step.
  readers = {}
  for j, (kind, *item) in enumerate(items):
    for eqn in (item[0] if kind == "group" else [item[0]]):
      for v in eqn.invars:
        if type(v) is not Literal:
          readers.setdefault(v, set()).add(j)
  outs = {v for v in rest.outvars}
  storage, buffers = {}, []  # per-step value -> where it is stored; buffers allocated once

  def store(v) -> str:
    """Where per-step value `v` is kept: its ys row, a carry's buffer in turn, or a buffer."""
    if v in storage:
      return storage[v]
    shape, dtype = tuple(v.aval.shape), codegen._cast(v.aval.dtype)
    if not shape:
      raise codegen.Unsupported("a 0-d value computed each step")
    if v in y_out:
      where = f"ys{y_out.index(v)}[_i]"
    elif v in carry_out:
      k = carry_out.index(v)
      buffers.append(f"  _cb{k} = np.empty({(2, *shape)!r}, {dtype})")
      where = f"_cb{k}[_t & 1]"
    else:
      buffers.append(f"  _b{len(buffers)} = np.empty({shape!r}, {dtype})")
      where = f"_b{len(buffers) - 1}"
    storage[v] = where
    return where

  body = [f"_i = {'length - 1 - _t' if reverse else '_t'}"]
  for i, v in enumerate(x_in):
    if v in readers or v in outs:
      body.append(f"{name(v)} = xs{i}[_i]")
      (arrays if v.aval.shape else scalars)[v] = name(v)
  for j, (kind, *item) in enumerate(items):
    if kind == "dot":
      eqn = item[0]
      m, n, k = _product_operands(eqn)
      lhs, rhs = (atom(v) for v in eqn.invars)
      if any(v not in arrays for v in eqn.invars):
        raise codegen.Unsupported("a product of values that are not arrays")
      out = eqn.outvars[0]
      dt = np.dtype(out.aval.dtype).name
      where = store(out)
      body.append(f"{name(out)} = {where}")
      arrays[out] = name(out)
      width = "np.int64" if gemm[dt][1] else "np.int32"
      one, zero = codegen.literal(1, dt), codegen.literal(0, dt)
      body.append(f"_s.cblas_gemm(g_{dt}[0], {width}({m}), {width}({n}), {width}({k}), "
                  f"{one}, {lhs}, {rhs}, {zero}, {name(out)})")
    elif kind == "view":
      eqn = item[0]
      src, out = eqn.invars[0], eqn.outvars[0]
      if type(src) is Literal or src not in arrays or not out.aval.shape:
        raise codegen.Unsupported("a view of a value that is not an array")
      body.append(f"{name(out)} = {arrays[src]}.reshape({tuple(out.aval.shape)!r})")
      arrays[out] = name(out)
    else:
      body += _group_lines(item[0], item[1], j, readers, outs, arrays, scalars, name, store,
                           fixed, dense)
  # ys outputs not computed into their rows, then the next step's carry.
  for i, v in enumerate(y_out):
    if storage.get(v) != f"ys{i}[_i]":
      if v not in arrays and v not in scalars:
        raise codegen.Unsupported("a ys output the step does not hold")
      body.append(f"ys{i}[_i] = {atom(v)}")
  new = []
  for v in carry_out:
    if v in carry_in or v in storage:
      new.append(arrays[v] if v in carry_in else storage[v])
    elif v in arrays:  # a row of xs, an invariant, a view: the carry's own copy
      new.append(f"np.ascontiguousarray({arrays[v]}).copy()")
    else:
      raise codegen.Unsupported("a carry the step does not hold")
  if carry_in:
    body.append(f"{', '.join(name(v) for v in carry_in)} = {', '.join(new)}")
  lines = head + buffers + ["  for _t in range(length):"] + [f"    {ln}" for ln in body]
  lines += [f"  co{i}[...] = {name(v)}" for i, v in enumerate(carry_in)]
  module = ["import math"] + loops._kernel_head(lines, sig, params) + lines  # (RULES' math.*)
  consts = [np.asarray(c, v.aval.dtype) for c, v in zip(consts, rest.constvars)]
  consts += [np.array([gemm[dt][0]], np.int64) for dt in gemm_dtypes]
  return "\n".join(module) + "\n", consts


def _group_lines(eqns, size, j, readers, outs, arrays, scalars, name, store, fixed,
                 dense) -> list:
  """One loop over the `size` flat elements computing elementwise `eqns` (item `j`): operands
  loaded from flat views of their arrays, values kept past the loop stored. An operand of
  another shape (NumPy's broadcasting: a `(1, m)` bias) is one of the loop invariants `fixed`,
  read from its copy at the loop's shape, `dense(v, shape)`."""
  local, loads, flats, lines = {}, {}, {}, []

  def operand(v, shape):
    if type(v) is Literal:
      return codegen.literal(v.val, v.aval.dtype)
    if v in local:
      return local[v]
    if v in scalars:
      return scalars[v]
    if v in arrays and tuple(v.aval.shape) != tuple(shape) and v in fixed:
      v = dense(v, tuple(shape))  # an invariant operand broadcast: made dense once
    if v in arrays and tuple(v.aval.shape) == tuple(shape):
      if v not in loads:
        flat = f"_f{j}_{len(flats)}"
        flats[v] = f"{flat} = {arrays[v]}.reshape({size})"
        loads[v] = f"_e{j}_{len(loads)}"
      return loads[v]
    raise codegen.Unsupported(f"an operand of shape {v.aval.shape} in an elementwise loop")

  for eqn in eqns:
    out = eqn.outvars[0]
    ins = [operand(v, out.aval.shape) for v in eqn.invars]
    lines += codegen.statement(eqn.primitive, name(out), ins,
                               [v.aval.dtype for v in eqn.invars], out.aval.dtype, eqn.params)
    local[out] = name(out)
  pre, stores = [], []
  for eqn in eqns:
    v = eqn.outvars[0]
    if v in outs or readers.get(v, set()) - {j}:
      where = store(v)
      arr = f"{name(v)}_a"
      pre.append(f"{arr} = {where}")
      pre.append(f"{arr}_f = {arr}.reshape({size})")
      stores.append(f"{arr}_f[_e] = {name(v)}")
      arrays[v] = arr
  head = [flats[v] for v in flats]
  load_lines = [f"{loads[v]} = {flats[v].split(' = ')[0]}[_e]" for v in loads]
  return pre + head + [f"for _e in range({size}):"] + [
      f"  {ln}" for ln in load_lines + lines + stores]


class AdaptiveFused:
  """The fused loop hoisted (`hoisted`: loops.HoistedScan, the stacked products by chunks on
  tier 1's pool beside the loop) or not (`plain`: loops.NativeScan of the whole step, every
  product in the loop), per call, timed per step as tier 1's AdaptiveLoop times its ways
  (adaptive.ModeChooser; JAXLITE_TIER1_ADAPT=0: always hoisted). Hoisting moves the stacked
  products off the loop's path where a core is free, at more CPU in all (one 32000-row product
  on one BLAS thread took 12.5 ms of CPU on the 2-core machine, the per-step products it
  replaces ~9.6 ms): on a machine whose cores are all busy the plain loop is the faster."""

  def __init__(self, hoisted, plain):
    from jaxlite._src.compiler import adaptive
    from jaxlite._src.compiler import native
    self.hoisted, self.plain = hoisted, plain
    self.keep_ratio = native.SERIAL_KEEP_RATIO  # (HotSwap's margin for a serial loop)
    self.adaptive = adaptive
    self.chooser = adaptive.ModeChooser((True, False))
    self.last_mode = None

  @property
  def mode(self):
    return self.chooser.mode

  def __call__(self, *args):
    if not self.adaptive.ADAPTIVE:
      self.last_mode = True
      return self.hoisted(*args)
    mode = self.last_mode = self.chooser.pick()
    t = time.perf_counter()
    if mode:
      out = self.hoisted(*args)  # (one BLAS thread while its stacked products run: _Run)
    else:  # one BLAS thread too: the step's products are below OpenBLAS's threading size
      lib = blas.openblas()    # or just past it (2 threads: 17.7 against 15.9 us, 13-core
      restore = blas.one_thread(lib)  # host), and its workers would spin between steps
      try:
        out = self.plain(*args)
      finally:
        if restore:
          lib[1](restore)
    self.chooser.record(mode, (time.perf_counter() - t) / max(int(args[-1]), 1))
    return out
