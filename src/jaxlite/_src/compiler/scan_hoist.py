"""Tier 1's scan loops: per-step work that reads no carry runs once, batched, before the loop;
small loop-invariant broadcasts are made dense.

In `h = tanh(h @ w + x @ u + b)` the product `x_t @ u` depends only on the scanned input and a
constant, so all `length` of them are one product of the stacked xs (`xs.reshape(-1, k) @ u`):
a few big BLAS calls instead of `length` small ones, which run beside the loop on tier 1's pool
(`_Run`: by chunks of steps, the first computed before the loop starts). The loop then reads
step i's row of its chunk, `_h0[_i - _lo]`, a view.

Which eqns (`plan`): the *stacked* eqns are pure, of a primitive in `HOISTABLE` (elementwise,
shape ops, reductions, dot_general: ops whose per-step result is the batched op's row, with no
randomness, effects or control flow), over plain NumPy dtypes, and read only the scanned xs,
loop invariants, literals and other stacked values, at least one of them per-step. The cost
model hoists those that a *stacked product* needs (a dot_general with one per-step operand, no
batch dimensions, which the batched form turns into one matmul) and the product itself:
elementwise work alone runs in cache per step, and hoisting it would only add a trip through
memory for the stacked intermediate. Without a stacked product there is only the plain loop.

The batched program is the stacked eqns as a jaxpr batched over the scan axis by the vmap rules
(`control_flow.common.batch_body`), compiled by the backend itself (so big elementwise chains in
it get tier 1's tiles); it is built per scan length on first use. A scan shorter than
`MIN_LENGTH` (nothing to amortize) or whose stacked values would exceed `MAX_BYTES` runs the
plain loop (`AdaptiveLoop`; which also times both where the BLAS's threads are out of reach).
The stacked products run on one BLAS thread (`blas.openblas`): the per-step products they
replace ran on one too, and a multi-threaded OpenBLAS call leaves its workers spinning through
the loop; the second core is used by the pipeline instead.

The plain loop is tier 0's, except that loop-invariant broadcasts (`b` stretched to the batch:
a stride-0 view) of at most `DENSE_BYTES` that the loop reads are copied into dense arrays before
it (`_dense_broadcasts`): same values, a faster ufunc path each step (RNN anchor: ~0.8 us of the
step's ~25). Without any, it is tier 0's loop exactly.

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
import threading
import time

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.compiler import adaptive
from jaxlite._src.compiler import blas
from jaxlite._src.compiler import fusion
from jaxlite._src.compiler import numpy_codegen as tier0
from jaxlite._src.compiler import passes
from jaxlite._src.compiler import tiled_executor
from jaxlite._src.base.core import Literal

# Primitives whose batched form computes exactly the per-step rows (vmap's rules): elementwise
# ops and converts, shape ops, reductions, products. No random bits, gathers/scatters (their
# batched indexing is a different kernel), control flow, custom rules or collectives.
HOISTABLE = kinds.hoistable  # registered with each primitive (primitive_kinds)

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
# Scans of this many steps or more compute their stacked values by chunks of at least
# PIPELINE_MIN_CHUNK steps, at most PIPELINE_CHUNKS of them, on tier 1's pool beside the loop.
PIPELINE_MIN = 64
PIPELINE_MIN_CHUNK = 16
PIPELINE_CHUNKS = 16
# Batched programs kept per loop (one per scan length seen); past it the cache starts over.
MAX_LENGTHS = 8


class Plan:
  """The stacked eqns of a scan body, in order, and what the loop reads of them."""

  def __init__(self, eqns, inputs, outputs, step_bytes):
    self.eqns = eqns            # the hoisted (stacked) eqns, in the body's order
    self.inputs = inputs        # vars the batched program reads: xs, invariants, consts
    self.batched = None         # per input: stacked (an xs)
    self.outputs = outputs      # stacked vars the loop reads (or returns)
    self.step_bytes = step_bytes  # bytes of one step's row of every stacked value


def _plain_dtype(v) -> bool:
  return type(v) is Literal or isinstance(getattr(v.aval, "dtype", None), np.dtype)


def _stacked_product(eqn, stacked) -> bool:
  """A dot_general that batching turns into one product: one per-step operand, no batch dims."""
  if eqn.primitive is not kinds.roles.dot_general:
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
  candidates = []
  for eqn in jaxpr.eqns:
    if id(eqn) in hoisted_ids:
      continue
    ok = (eqn.primitive in HOISTABLE and not eqn.effects
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
  """`start(length, *inputs) -> _Run`: the plan's eqns batched over the scan axis by the vmap
  rules (compiled by `backend` once per length), computed for the loop's chunks of steps."""

  def __init__(self, backend, p: Plan, reverse: bool):
    self.backend = backend
    self.closed = core.ClosedJaxpr(core.Jaxpr([], p.inputs, p.outputs, p.eqns), [])
    self.batched = p.batched
    self.reverse = reverse
    self.by_length = {}
    self.pipeline = False  # the next call's way (AdaptiveLoop sets it)

  def can_pipeline(self, length) -> bool:
    """Whether a scan of `length` steps could run its stacked products beside the loop."""
    if length < PIPELINE_MIN or threading.current_thread().name.startswith("jaxlite-tier1"):
      return False
    executor, workers = tiled_executor.POOL.get()
    return executor is not None and workers > 1

  def exe(self, length):
    exe = self.by_length.get(length)
    if exe is None:
      from jaxlite._src.interpreters import batching
      batched, _ = batching.batch_body(self.closed, batching.AxisData(None, length),
                                     self.batched, [True] * len(self.closed.jaxpr.outvars))
      exe = self.backend.compile(batched)
      if len(self.by_length) >= MAX_LENGTHS:
        self.by_length.clear()
      self.by_length[length] = exe
    return exe

  def start(self, length, *args):
    return _Run(self, length, args)


class _Run:
  """One scan call's stacked values, by chunks of steps (`chunks`, in the loop's order).

  Pipelined (`AdaptiveLoop`'s choice), with a worker thread (tier 1's pool, a usable core past
  the caller's) and at least `PIPELINE_MIN` steps, the steps are cut into up to
  `PIPELINE_CHUNKS` chunks: the first is computed when the loop asks for it, the others on the
  pool meanwhile, in the loop's order, so the stacked products of later steps run beside the
  loop's own work (RNN anchor: the 1000 steps' x @ u, ~8 ms on one core, overlap the ~15 ms
  loop). Else one chunk, computed here.
  Every stacked product runs on one BLAS thread (`blas.openblas`), held from `start` to `close`:
  the cores are used by the pipeline, not by BLAS threads that would spin between calls. Over
  all threads one stacked product is faster on a quiet machine, but OpenBLAS's workers then
  busy-wait (~0.1 s) for more work through the loop that follows, whose per-step products run
  on one thread anyway (below OpenBLAS's threading size). On the 2-core dev machine with the
  other core busy, that made the RNN anchor's hoisted call 45-78 ms against the plain loop's
  27-35; on one thread the stacked product still beats the per-step ones (0.26 against 0.30 us
  per row, and one call instead of `length`), so hoisting never loses to the plain loop. The
  count is process-wide, for the scan call: BLAS calls other threads make meanwhile run on one
  thread too (same values)."""

  def __init__(self, batched: _Batched, length: int, args):
    self.batched, self.args = batched, args
    if batched.pipeline and batched.can_pipeline(length):
      executor = tiled_executor.POOL.get()[0]
      pieces = max(1, min(PIPELINE_CHUNKS, length // PIPELINE_MIN_CHUNK))
    else:
      executor, pieces = None, 1
    size = -(-length // pieces)
    chunks = [(lo, min(lo + size, length)) for lo in range(0, length, size)]
    if batched.reverse:
      chunks.reverse()
    self.chunks = chunks
    for lo, hi in chunks[:2] + chunks[-1:]:  # compiled here, never on a worker
      batched.exe(hi - lo)
    self.futures = {}
    self.threads = blas.one_thread(blas.openblas())  # the count `close` sets back
    try:
      for lo, hi in chunks[1:]:
        self.futures[lo] = executor.submit(self.compute, lo, hi)
    except BaseException:  # no pool after all (interpreter shutdown): nothing half-set
      self.close()
      raise

  def compute(self, lo, hi):
    n = len(self.chunks)
    args = [a[lo:hi] if b and n > 1 else a for a, b in zip(self.args, self.batched.batched)]
    return self.batched.exe(hi - lo)(*args)

  def wait(self, lo):
    future = self.futures.get(lo)
    if future is None:
      return self.compute(*next(c for c in self.chunks if c[0] == lo))
    return future.result()

  def close(self):
    for future in self.futures.values():
      future.cancel()  # after an exception in the loop: the rest is not needed
    if self.threads:
      blas.openblas()[1](self.threads)


def _dense_broadcasts(invariant, loop) -> list:
  """Loop invariants to materialize before the loop: broadcasts (stride-0 views) of at most
  `DENSE_BYTES` that loop eqns read. A NumPy ufunc over a stride-0 operand takes another
  iterator path: adding a broadcast bias to a 32x128 float32 step cost 1.3 us, against 0.5 us
  for the same values contiguous; at 256x1024 the two are equal (memory-bound)."""
  read = {v for e in loop for v in e.invars if type(v) is not Literal}
  return [e.outvars[0] for e in invariant
          if e.primitive is kinds.roles.broadcast_in_dim and e.outvars[0] in read
          and e.outvars[0].aval.ndim and 0 < tier0._nbytes(e.outvars[0]) <= DENSE_BYTES
          and e.outvars[0].aval.shape != e.invars[0].aval.shape]


def loop_source(jaxpr, consts, num_consts, num_carry, reverse, p: Plan | None, tables):
  """(source, globals) of tier 0's scan loop function with small invariant broadcasts made
  dense and, given a plan, its eqns moved out: their stacked results are computed by
  `_hoist(_length, ...)` before the loop and read by row in it (global `_hoist`, the caller's
  to bind). None when neither applies (tier 0's loop is then the loop)."""
  fn_name = tier0.SCAN_FN
  const_in = jaxpr.invars[:num_consts]
  invariant, loop = passes.split_invariant(jaxpr.eqns, list(jaxpr.constvars) + list(const_in))
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
  last_use = passes.last_uses(invariant + loop, jaxpr.outvars)
  for v, stacked_in in zip(p.inputs, p.batched) if p is not None else ():
    if not stacked_in:  # read by `_hoist` after the invariants: none may write into them
      last_use[v] = len(invariant) + len(loop)
  lines += tier0._eqn_lines(invariant, 0, last_use, namer, atom, glob, counter, "  ", tables)
  # (the loop never writes into invariants: its `out=` targets are its own fresh results)
  lines += [f"  {namer(v)} = np.array({namer(v)})" for v in dense]
  ind = "    "
  if p is not None:
    # By chunks (`_Run`): the loop over a chunk's steps reads its rows, `_h0[_i - _lo]`.
    x_names = dict(zip(x_in, xs))
    hoist_args = [x_names[v] if v in x_names else atom(v) for v in p.inputs]
    stacked = [f"_h{k}" for k in range(len(p.outputs))]
    steps = "range(_hi - 1, _lo - 1, -1)" if reverse else "range(_lo, _hi)"
    lines += [f"  _run = _hoist.start(_length, {', '.join(hoist_args)})",
              "  try:",
              "    for _lo, _hi in _run.chunks:",
              f"      {', '.join(stacked)}, = _run.wait(_lo)",
              f"      for _i in {steps}:"]
    ind = "        "
  else:
    steps = "range(_length - 1, -1, -1)" if reverse else "range(_length)"
    lines.append(f"  for _i in {steps}:")
  body = [f"{ind}{namer(v)} = {x}[_i]" for v, x in zip(x_in, xs) if v in last_use]
  if p is not None:
    body += [f"{ind}{namer(v)} = {h}[_i - _lo]" for v, h in zip(p.outputs, stacked)]
  body += tier0._eqn_lines(loop, len(invariant), last_use, namer, atom, glob, counter,
                           ind, tables)
  body += [f"{ind}{y}[_i] = {atom(v)}" for y, v in zip(ys, y_out)]
  into = _store_into_ys(body, ind) if STORE_INTO_YS else False
  carry = [namer(v) for v in carry_in]
  if carry:
    body.append(f"{ind}{', '.join(carry)}, = "
                f"{tier0._tuple_source([atom(v) for v in carry_out])}")
  lines += body or [f"{ind}pass"]
  if p is not None:
    lines += ["  finally:", "    _run.close()"]
  # A carry that is a stacked row would be a view keeping the whole stacked array alive.
  # So would one computed into a row of ys (`_store_into_ys`), and it would alias that output.
  made = set(p.outputs) if p is not None else set()
  rets = [f"{c}.copy()" if v in made or into else c for c, v in zip(carry, carry_out)]
  lines.append(f"  return {tier0._tuple_source(rets)}")
  return "\n".join(tier0._quiet(lines, jaxpr.eqns, tables)), glob


# Step i's ufunc result that is stored as row i of a ys output is computed into that row.
STORE_INTO_YS = True


def _store_into_ys(body: list, ind: str) -> bool:
  """Rewrites `vN = np.f(.., out=vM)` + `_ysK[_i] = vN` into `vN = np.f(.., out=_ysK[_i])`:
  the step's result is made in its row, not made and then copied there (RNN anchor: the 16 KB
  copy was ~1-1.5 us of a ~30 us step). `out=` lines are ufunc calls (NumPy's, or a table's
  kernel `_name(.., out=)` standing in for a ufunc) writing into a dying buffer of the step
  (tier 0's reuse), so the row takes the same values; a value in ys is live
  to the step's end, so no later line writes into it. Returns whether any line changed (the
  carry may then be a view of a row: the loop returns a copy)."""
  changed = False
  for j, line in enumerate(body):
    head, _, value = line.partition("[_i] = ")
    if not head.startswith(f"{ind}_ys") or not value.isidentifier():
      continue
    for k in range(j - 1, -1, -1):
      made = body[k]
      if made is None:  # a store this rewrite removed
        continue
      if (made.startswith(f"{ind}{value} = np.") or made.startswith(f"{ind}{value} = _")) \
          and ", out=" in made and made.endswith(")") \
          and ", out=_ys" not in made:  # a value stored twice is made in the first row
        body[k] = f"{made[:made.rindex(', out=')]}, out={head.strip()}[_i])"
        body[j] = None
        changed = True
      if made.startswith(f"{ind}{value} = ") or made.startswith(f"{ind}{value}, "):
        break
  body[:] = [line for line in body if line is not None]
  return changed


class AdaptiveLoop:
  """The hoisted loop (pipelined or not) or the plain one, per call.

  Scans of `MIN_LENGTH` to `max_length` steps (stacked values within `MAX_BYTES`) hoist; the
  others run the plain loop. Which way to hoist is the machine's choice, not the program's, so
  where there is a choice the loop times its calls per step, as tier 1's tiled kernels do
  (adaptive.ADAPTIVE; env JAXLITE_TIER1_ADAPT=0: always the first option below): the
  first `PROBES` calls of each option, alternating, then the faster median, trying the other
  after `REPROBE` calls and switching when that beats the current one's median by 10%; each
  losing try doubles the wait (up to `REPROBE_MAX` calls). `last_mode` / `mode`: the latest and
  chosen (True: the first option).

  - Where `blas.openblas` holds the stacked products to one thread, hoisting never loses to the
    plain loop; the choice is pipelined (`_Run`) or in one chunk. The pipeline wins where a
    second core is free (RNN anchor: 21 against 28 ms at cpu/wall 1.4); where it is busy, the
    worker and the loop share one core, and a worker preempted while it holds the GIL stalls
    the loop (41-43 against 33-37 ms under load).
  - Otherwise the BLAS runs a stacked product on all its threads, whose workers may then
    busy-wait through the loop: on a quiet 2-core machine that costs only the idle core (21.5 ms
    hoisted against 24.5 plain, at cpu/wall 2.0), with the other core busy the hoisted call took
    45-78 ms against the plain loop's 29-34. The choice is hoisted (one chunk) or plain."""

  def __init__(self, hoisted, plain, batched, max_length: int, blas: bool):
    self.hoisted, self.plain, self.batched = hoisted, plain, batched
    self.max_length = max_length
    self.blas = blas
    self.__jaxlite_source__ = hoisted.__jaxlite_source__
    self.last_mode = None
    self.chooser = adaptive.ModeChooser((True, False))  # times per step

  @property
  def mode(self):
    return self.chooser.mode

  def __call__(self, *args):
    length = args[-1]
    if not MIN_LENGTH <= length <= self.max_length:
      self.last_mode = None
      return self.plain(*args)
    if self.blas:
      choice = adaptive.ADAPTIVE and self.batched.can_pipeline(length)
    else:
      choice = adaptive.ADAPTIVE
    if not choice:
      self.batched.pipeline = self.blas
      self.last_mode = True
      return self.hoisted(*args)
    mode = self.chooser.pick()
    self.last_mode = mode
    self.batched.pipeline = self.blas and mode
    run = self.hoisted if self.blas or mode else self.plain
    t = time.perf_counter()
    out = run(*args)
    self.chooser.record(mode, (time.perf_counter() - t) / length)
    return out


def compile_scan(backend, closed, num_consts, num_carry, reverse):
  """Tier 1's scan loop: tier 0's with small invariant broadcasts made dense, and where `plan`
  finds carry-free products, an AdaptiveLoop of that loop and one with them hoisted."""
  jaxpr, consts = passes.optimize(closed)
  tables = backend.loop_tables  # the loop's lines (the native tier's has its float32 tanh)
  if not ENABLED:
    return _tier0_loop(jaxpr, consts, num_consts, num_carry, reverse, tables)
  invariant, _ = passes.split_invariant(jaxpr.eqns, list(jaxpr.constvars)
                                        + list(jaxpr.invars[:num_consts]))
  made = loop_source(jaxpr, consts, num_consts, num_carry, reverse, None, tables)
  if made is None:
    plain = _tier0_loop(jaxpr, consts, num_consts, num_carry, reverse, tables)
  else:
    plain = tier0._exec_source(*made, tier0.SCAN_FN)
  p = plan(jaxpr, invariant, num_consts, num_carry)
  if p is None:
    return plain
  src, glob = loop_source(jaxpr, consts, num_consts, num_carry, reverse, p, tables)
  glob["_hoist"] = _Batched(backend, p, reverse)
  hoisted = tier0._exec_source(src, glob, tier0.SCAN_FN)
  return AdaptiveLoop(hoisted, plain, glob["_hoist"], MAX_BYTES // p.step_bytes,
                      blas.openblas() is not None)


def _tier0_loop(jaxpr, consts, num_consts, num_carry, reverse, tables):
  src, glob = tier0.scan_to_source(jaxpr, consts, num_consts, num_carry, reverse,
                                   tier0.SCAN_FN, tables)
  return tier0._exec_source(src, glob, tier0.SCAN_FN)
