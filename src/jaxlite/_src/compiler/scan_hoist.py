"""Tier 1's scan loops: per-step work that reads no carry runs once, batched, before the loop;
small loop-invariant broadcasts are made dense.

In `h = tanh(h @ w + x @ u + b)` the product `x_t @ u` depends only on the scanned input and a
constant, so all `length` of them are one product of the stacked xs (`xs.reshape(-1, k) @ u`):
one big BLAS call instead of `length` small ones (the RNN anchor, 32x128 @ 128x128: ~4 us per
step against ~8). The loop then reads step i's row, `_h0[_i]`, a view.

Which eqns (`plan`): the *stacked* eqns are pure, of a primitive in `HOISTABLE` (elementwise,
shape ops, reductions, dot_general: ops whose per-step result is the batched op's row, with no
randomness, effects or control flow), over plain NumPy dtypes, and read only the scanned xs,
loop invariants, literals and other stacked values, at least one of them per-step. The cost
model hoists those that a *stacked product* needs (a dot_general with one per-step operand, no
batch dimensions, which the batched form turns into one matmul) and the product itself:
elementwise work alone runs in cache per step, and hoisting it would only add a trip through
memory for the stacked intermediate. Without a stacked product the loop is tier 0's exactly.

The batched program is the stacked eqns as a jaxpr batched over the scan axis by the vmap rules
(`control_flow.common.batch_body`), compiled by the backend itself (so big elementwise chains in
it get tier 1's tiles); it is built per scan length on first use. A scan shorter than
`MIN_LENGTH` (nothing to amortize) or whose stacked values would exceed `MAX_BYTES` runs tier 0's
loop (compiled on first need).

Loop-invariant broadcasts (`b` stretched to the batch: a stride-0 view) of at most `DENSE_BYTES`
that the loop reads are copied into dense arrays before it (`_dense_broadcasts`): same values,
a faster ufunc path each step (RNN anchor: ~0.8 us of the step's ~25).

Values: each stacked value's row equals the per-step value up to the batched kernels' order of
summation. Elementwise ops are the same NumPy calls over more elements (bit for bit). A product
of stacked rows is one matmul where the loop made `length`; each output element is still one
dot product over the same k terms, and OpenBLAS's (0.3.31, Haswell kernels) result was
bit-identical to the per-step products on every shape checked (RNN anchor data, 1x16@16x16 to
256x512@512x512), but a BLAS may block a long k differently for a taller matrix: rounding-level
differences (float32 ~1e-7 relative), within JAX-COMPAT's float tolerance. Reductions batched
may run NumPy's pairwise summation over a different loop order: the same bound.
"""
from __future__ import annotations

import os

import numpy as np

from jaxlite._src import core
from jaxlite._src.compiler import fusion
from jaxlite._src.compiler import numpy_codegen as tier0
from jaxlite._src.compiler import passes
from jaxlite._src.core import Literal

# Primitives whose batched form computes exactly the per-step rows (vmap's rules): elementwise
# ops and converts, shape ops, reductions, products. No random bits, gathers/scatters (their
# batched indexing is a different kernel), control flow, custom rules or collectives.
HOISTABLE = frozenset(fusion.ELEMENTWISE) | frozenset((
    "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "rev", "slice",
    "concatenate", "pad", "copy", "dot_general", "reduce_sum", "reduce_max", "reduce_min",
    "reduce_prod", "reduce_and", "reduce_or", "argmax", "argmin"))

# JAXLITE_SCAN_HOIST=0 turns this module off (tier 1's loops are then tier 0's): comparisons.
ENABLED = os.environ.get("JAXLITE_SCAN_HOIST", "1") != "0"
# Stacked values (all steps' rows of every hoisted eqn's results together) above this many bytes
# run the plain loop: the batched program's memory is bounded, and past the caches a stacked
# product gains nothing more.
MAX_BYTES = 64 << 20
# Scans shorter than this run the plain loop: the batched program's call costs more than the
# few per-step products it would merge.
MIN_LENGTH = 4
# Loop-invariant broadcasts up to this size read in the loop are made dense before it.
DENSE_BYTES = 64 << 10
# Batched programs kept per loop (one per scan length seen); past it the cache starts over.
MAX_LENGTHS = 8


class Plan:
  """The stacked eqns of a scan body, in order, and what the loop reads of them."""

  def __init__(self, eqns, inputs, outputs, step_bytes):
    self.eqns = eqns            # the hoisted (stacked) eqns, in the body's order
    self.inputs = inputs        # vars the batched program reads: invariants/consts, then xs
    self.batched = None         # per input: stacked (an xs)
    self.outputs = outputs      # stacked vars the loop reads (or returns)
    self.step_bytes = step_bytes  # bytes of one step's row of every stacked value


def _plain_dtype(v) -> bool:
  return type(v) is Literal or isinstance(getattr(v.aval, "dtype", None), np.dtype)


def _stacked_product(eqn, stacked) -> bool:
  """A dot_general that batching turns into one product: one per-step operand, no batch dims."""
  if eqn.primitive.name != "dot_general":
    return False
  (_, _), (lb, rb) = eqn.params["dimension_numbers"]
  lhs, rhs = eqn.invars
  return not lb and not rb and (lhs in stacked) != (rhs in stacked)


def plan(jaxpr: core.Jaxpr, invariant_eqns, num_consts: int, num_carry: int):
  """The Plan for hoisting `jaxpr`'s carry-free per-step work, or None when nothing pays."""
  x_in = jaxpr.invars[num_consts + num_carry:]
  invariant = set(jaxpr.constvars) | set(jaxpr.invars[:num_consts])
  for e in invariant_eqns:
    invariant.update(e.outvars)
  hoisted_ids = {id(e) for e in invariant_eqns}
  stacked = set(x_in)
  candidates = []  # (eqn, its position in the body)
  for pos, eqn in enumerate(jaxpr.eqns):
    if id(eqn) in hoisted_ids:
      continue
    ok = (eqn.primitive.name in HOISTABLE and not eqn.effects
          and eqn.primitive not in passes.effectful_primitives
          and all(_plain_dtype(v) for v in (*eqn.invars, *eqn.outvars))
          and all(type(v) is Literal or v in stacked or v in invariant for v in eqn.invars)
          and any(type(v) is not Literal and v in stacked for v in eqn.invars))
    if ok:
      stacked.update(eqn.outvars)
      candidates.append(eqn)
  # The cost model: keep the stacked products and what they need.
  needed, keep = set(), []
  for eqn in reversed(candidates):
    if _stacked_product(eqn, stacked) or any(v in needed for v in eqn.outvars):
      keep.append(eqn)
      needed.update(v for v in eqn.invars if type(v) is not Literal)
  if not keep:
    return None
  keep.reverse()
  made = {v for e in keep for v in e.outvars}
  rest = [e for e in jaxpr.eqns if id(e) not in hoisted_ids and all(
      v not in made for v in e.outvars)]
  read = {v for e in rest for v in e.invars if type(v) is not Literal}
  read.update(v for v in jaxpr.outvars if type(v) is not Literal)
  outputs = [v for e in keep for v in e.outvars if v in read]
  if not outputs:
    return None
  inputs = list(dict.fromkeys(v for e in keep for v in e.invars
                              if type(v) is not Literal and v not in made))
  step_bytes = sum(tier0._nbytes(v) for v in made)
  p = Plan(keep, inputs, outputs, max(step_bytes, 1))
  p.batched = [v in x_in for v in inputs]
  return p


class _Batched:
  """`hoist(length, *inputs) -> stacked outputs`: the plan's eqns batched over the scan axis by
  the vmap rules, compiled by `backend` once per length."""

  def __init__(self, backend, p: Plan):
    self.backend = backend
    self.closed = core.ClosedJaxpr(core.Jaxpr([], p.inputs, p.outputs, p.eqns), [])
    self.batched = p.batched
    self.by_length = {}

  def __call__(self, length, *args):
    exe = self.by_length.get(length)
    if exe is None:
      exe = self._compile(length)
    return exe(*args)

  def _compile(self, length):
    from jaxlite._src.interpreters import batching
    from jaxlite._src.lax.control_flow import common
    batched, _ = common.batch_body(self.closed, batching.AxisData(None, length), self.batched,
                                   [True] * len(self.closed.jaxpr.outvars))
    exe = self.backend.compile(batched)
    if len(self.by_length) >= MAX_LENGTHS:
      self.by_length.clear()
    self.by_length[length] = exe
    return exe


class _PlainLoop:
  """Tier 0's loop of the body, compiled on its first call (short or huge scans)."""

  def __init__(self, jaxpr, consts, num_consts, num_carry, reverse, tables):
    self.args = (jaxpr, consts, num_consts, num_carry, reverse)
    self.tables = tables
    self.fn = None

  def __call__(self, *args):
    if self.fn is None:
      src, glob = tier0.scan_to_source(*self.args, tier0.SCAN_FN, self.tables)
      self.fn = tier0._exec_source(src, glob, tier0.SCAN_FN)
    return self.fn(*args)


def _dense_broadcasts(invariant, loop) -> list:
  """Loop invariants to materialize before the loop: broadcasts (stride-0 views) of at most
  `DENSE_BYTES` that loop eqns read. A NumPy ufunc over a stride-0 operand takes another
  iterator path: adding a broadcast bias to a 32x128 float32 step cost 1.3 us, against 0.5 us
  for the same values contiguous; at 256x1024 the two are equal (memory-bound)."""
  read = {v for e in loop for v in e.invars if type(v) is not Literal}
  return [e.outvars[0] for e in invariant
          if e.primitive.name == "broadcast_in_dim" and e.outvars[0] in read
          and e.outvars[0].aval.ndim and 0 < tier0._nbytes(e.outvars[0]) <= DENSE_BYTES
          and e.outvars[0].aval.shape != e.invars[0].aval.shape]


def loop_source(jaxpr, consts, num_consts, num_carry, reverse, p: Plan | None, tables):
  """(source, globals) of tier 0's scan loop function with small invariant broadcasts made
  dense and, given a plan, its eqns moved out: their stacked results are computed by
  `_hoist(_length, ...)` before the loop and read by row in it. Globals `_hoist` and `_plain`
  (tier 0's loop, for lengths outside the hoisting range) are the caller's to bind.
  None when neither applies (tier 0's loop is then the loop)."""
  fn_name = tier0.SCAN_FN
  const_in = jaxpr.invars[:num_consts]
  invariant, loop = tier0._split_invariant(jaxpr, list(jaxpr.constvars) + list(const_in))
  moved = set() if p is None else {id(e) for e in p.eqns}
  loop = [e for e in loop if id(e) not in moved]
  dense = _dense_broadcasts(invariant, loop)
  if p is None and not dense:
    return None
  namer, glob, atom, counter = tier0._source_context(jaxpr, consts)
  carry_in = jaxpr.invars[num_consts:num_consts + num_carry]
  x_in = jaxpr.invars[num_consts + num_carry:]
  carry_out, y_out = jaxpr.outvars[:num_carry], jaxpr.outvars[num_carry:]
  xs = [f"_xs{k}" for k in range(len(x_in))]
  ys = [f"_ys{k}" for k in range(len(y_out))]
  args = [namer(v) for v in const_in + carry_in] + xs + ys + ["_length"]
  lines = [f"def {fn_name}({', '.join(args)}):"]
  if p is not None:
    max_length = max(MAX_BYTES // p.step_bytes, 0)
    lines += [f"  if not {MIN_LENGTH} <= _length <= {max_length}:",
              f"    return _plain({', '.join(args)})"]
  last_use = passes.last_uses(invariant + loop, jaxpr.outvars)
  for v, stacked_in in zip(p.inputs, p.batched) if p is not None else ():
    if not stacked_in:  # read by `_hoist` after the invariants: none may write into them
      last_use[v] = len(invariant) + len(loop)
  lines += tier0._eqn_lines(invariant, 0, last_use, namer, atom, glob, counter, "  ", tables)
  # (the loop never writes into invariants: its `out=` targets are its own fresh results)
  lines += [f"  {namer(v)} = np.array({namer(v)})" for v in dense]
  stacked = []
  if p is not None:
    x_names = dict(zip(x_in, xs))
    hoist_args = [x_names[v] if v in x_names else atom(v) for v in p.inputs]
    stacked = [f"_h{k}" for k in range(len(p.outputs))]
    lines.append(f"  {', '.join(stacked)}, = _hoist(_length, {', '.join(hoist_args)})")
  steps = "range(_length - 1, -1, -1)" if reverse else "range(_length)"
  lines.append(f"  for _i in {steps}:")
  body = [f"    {namer(v)} = {x}[_i]" for v, x in zip(x_in, xs) if v in last_use]
  body += [f"    {namer(v)} = {h}[_i]" for v, h in zip(p.outputs if p else (), stacked)]
  body += tier0._eqn_lines(loop, len(invariant), last_use, namer, atom, glob, counter,
                           "    ", tables)
  body += [f"    {y}[_i] = {atom(v)}" for y, v in zip(ys, y_out)]
  carry = [namer(v) for v in carry_in]
  if carry:
    body.append(f"    {', '.join(carry)}, = {tier0._tuple_source([atom(v) for v in carry_out])}")
  lines += body or ["    pass"]
  # A carry that is a stacked row would be a view keeping the whole stacked array alive.
  made = set(p.outputs) if p is not None else set()
  rets = [f"{c}.copy()" if v in made else c for c, v in zip(carry, carry_out)]
  lines.append(f"  return {tier0._tuple_source(rets)}")
  return "\n".join(tier0._quiet(lines, jaxpr.eqns, tables)), glob


def compile_scan(backend, closed, num_consts, num_carry, reverse):
  """Tier 1's scan loop: tier 0's, with carry-free products hoisted where `plan` finds some and
  small invariant broadcasts made dense."""
  jaxpr, consts = passes.optimize(closed)
  invariant, _ = tier0._split_invariant(jaxpr, list(jaxpr.constvars)
                                        + list(jaxpr.invars[:num_consts]))
  p = plan(jaxpr, invariant, num_consts, num_carry) if ENABLED else None
  made = loop_source(jaxpr, consts, num_consts, num_carry, reverse, p, backend.tables) \
      if ENABLED else None
  if made is None:
    src, glob = tier0.scan_to_source(jaxpr, consts, num_consts, num_carry, reverse,
                                     tier0.SCAN_FN, backend.tables)
    return tier0._exec_source(src, glob, tier0.SCAN_FN)
  src, glob = made
  if p is not None:
    glob["_hoist"] = _Batched(backend, p)
    glob["_plain"] = _PlainLoop(jaxpr, consts, num_consts, num_carry, reverse, backend.tables)
  return tier0._exec_source(src, glob, tier0.SCAN_FN)
