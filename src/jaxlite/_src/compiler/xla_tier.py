"""The background XLA tier (issue 32): a hot jit program of the NumPy backends compiled by XLA on
the background compile thread and swapped in when its calls measure faster.

Where jaxlib is installed (the `xla` extra) and `jax_jaxlite_xla_tier` (env JAXLITE_XLA_TIER) is
on, a jit program compiled by tier 0 or tier 1 (native included) runs there at once; its
executable is wrapped in an `XlaSwap`:

1. *Which programs* (`reason_to_skip`, decided once at compile time, so that the others pay
   nothing per call): no effects, no host callbacks (XLA would call Python from its own threads,
   outside the order the NumPy tiers keep), no mutable refs, arguments and results of NumPy's
   own dtypes or threefry keys (jaxlib exports no bfloat16/float8 through the buffer protocol),
   and at least `MIN_WORK` element operations (`estimated_work`: results' elements, products'
   multiply-adds, loops times their trip counts). A cached call of a smaller program costs a few
   microseconds on the NumPy tiers, which a call into XLA cannot beat (JAX's own cached call
   of `x * 2 + 1` on f32[100] took 7.7 us against tier 1's 4.1 us on the 13-core host,
   BENCHMARKS.md), and the wrapper's extra Python call would only slow it down.
2. *When it is hot*: after `HOT_CALLS` (3) calls that together took `HOT_SECONDS` (20 ms)
   and whose fastest took `MIN_CALL_S` (100 us) or more. XLA's CPU compile takes 0.05-1 s of
   one core (the anchors' programs, on the 2-core machine); a program that has not yet cost
   20 ms is as likely a one-off as a loop body, and its compile would cost more than it can
   save; under 100 us a call leaves little room to beat XLA's dispatch and the hand-off to its
   worker threads. The call that makes it hot submits the build to the shared background
   compile thread (`background.py`, the native tier's too: one compile at a time) and still
   runs on its tier: the caller never waits for XLA. At exit, builds not started are dropped
   and a running one is waited for (an XLA compile returning into a finalizing interpreter
   aborts the process).
3. *The build* (`_Program.build`): lowers the closed jaxpr to StableHLO and compiles it with an
   `XlaBackend` of its own, never registered, so that no eager route or buffer type is added to
   dispatch (NumPy-backed Arrays stay NumPy-backed, and the eager hot path stays as it was). A
   `LoweringError` (a primitive without an XLA rule) or any compile failure leaves the program
   on its tier for good, remembered on the program (`error`). One build per jaxpr, shared by
   the donating and non-donating executables of a jit.
4. *The swap, by measurement*: the next `2 * TRIALS` calls alternate XLA and the tier, each
   timed (not while the compile thread is busy: compiling holds the GIL); XLA is kept when its
   fastest call is under `KEEP_RATIO` (0.95) of the tier's fastest, else the tier stays
   (`rejected`). The XLA call includes its whole cost: NumPy arguments handed to XLA
   (zero-copy where the buffer is 64-byte aligned, as XLA's own results are, else copied) and
   its results returned as NumPy arrays (read-only views of XLA's buffers, no copy), so a
   program whose copies eat the gain stays on its tier.
5. *Fork*: in a child forked after the parent made its XLA client, every program stays on its
   tier (the client's threads are not in the child).
6. *Donation*: XLA's executable is compiled without input/output aliases (a donated argument's
   Array is deleted by jit anyway; XLA writes fresh buffers), so donating and non-donating calls
   share it. Results agree with tier 0 to JAX-COMPAT §10's float tolerance (XLA's
   transcendentals, FMA contraction, flushed denormals); integers and PRNG bits exactly
   (tests/test_xla_tier.py).

`stats()` lists every wrapped program's state (benchmarks print it).
"""
from __future__ import annotations

import importlib.util
import math
import os
import threading
import time
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.compiler import background
from jaxlite._src.base.config import config

HOT_CALLS = max(1, int(os.environ.get("JAXLITE_XLA_HOT_CALLS", "3")))
HOT_SECONDS = float(os.environ.get("JAXLITE_XLA_HOT_SECONDS", "0.02"))
MIN_CALL_S = 100e-6
MIN_WORK = 1 << 16
TRIALS = 3          # timed calls of each side before the choice
# XLA is kept when its best call is under this fraction of the tier's best: a margin over the
# trials' noise (best of three calls each, interleaved), smaller than the native tier's 0.8
# because a swapped program is the whole call (no kernel whose threads slow the code around
# it within the same program), and a win of 5-10% is what the scan RNN anchor has to gain on
# 13 cores (tier 1 34.9 ms, JAX 32.8 ms, issue 32).
KEEP_RATIO = 0.95
# Trip count assumed for a while loop (unknown until run) in the work estimate.
_WHILE_TRIPS = 16

_KEY_STORAGE = np.dtype([("k0", np.uint32), ("k1", np.uint32)])  # prng.KEY_STORAGE


class _State:
  __slots__ = ("on", "jaxlib", "closing")

  def __init__(self):
    self.on = bool(config.jax_jaxlite_xla_tier)
    self.jaxlib = None  # whether jaxlib is importable, looked up on the first compile
    self.closing = False  # the interpreter is exiting: builds not started are dropped


_state = _State()


def available() -> bool:
  """jaxlib is installed (found without importing it)."""
  if _state.jaxlib is None:
    _state.jaxlib = importlib.util.find_spec("jaxlib") is not None
  return _state.jaxlib


def enabled() -> bool:
  return _state.on and available()


def _on_flag(value) -> None:
  _state.on = bool(value)


config._add_listener("jax_jaxlite_xla_tier", _on_flag)


# --- which programs ---------------------------------------------------------------------------

def _sub_jaxprs(params):
  for v in params.values():
    if isinstance(v, (core.ClosedJaxpr, core.Jaxpr)):
      yield v
    elif isinstance(v, (tuple, list)):
      for e in v:
        if isinstance(e, (core.ClosedJaxpr, core.Jaxpr)):
          yield e


# Filled by the module that installs the tier (compiler/tiers.py), which sits above this one:
# the primitives with side effects (passes.effectful_primitives, the set itself), and the
# backend classes whose programs the tier may take over (the NumPy family, tiers 0 and 1).
EFFECTFUL: set = set()
HOST_BACKENDS: tuple = ()


def _host_calls(jaxpr) -> bool:
  """Whether an eqn of `jaxpr` (or of a sub-jaxpr) has effects or calls back into Python."""
  for e in jaxpr.eqns:
    if e.effects or e.primitive in EFFECTFUL or "callback" in e.params:
      return True
    for sub in _sub_jaxprs(e.params):
      if _host_calls(getattr(sub, "jaxpr", sub)):
        return True
  return False


def estimated_work(jaxpr) -> int:
  """Element operations of one run: each eqn's result elements (a product's multiply-adds), a
  sub-jaxpr's work times its trips (scan: its length; while: `_WHILE_TRIPS`; cond: the largest
  branch)."""
  total = 0
  for e in jaxpr.eqns:
    out = sum(math.prod(getattr(v.aval, "shape", ()) or (1,)) for v in e.outvars)
    subs = [getattr(s, "jaxpr", s) for s in _sub_jaxprs(e.params)]
    if subs:
      inner = [estimated_work(s) for s in subs]
      if "length" in e.params:
        total += int(e.params["length"]) * sum(inner)
      elif "branches" in e.params:
        total += max(inner)
      elif "body_jaxpr" in e.params:
        total += _WHILE_TRIPS * sum(inner)
      else:
        total += sum(inner)
      continue
    dims = e.params.get("dimension_numbers") if "precision" in e.params else None
    if dims is not None and len(e.invars) == 2:  # dot_general: out * contracted size
      try:
        (lc, _), _ = dims
        shape = e.invars[0].aval.shape
        out *= math.prod(shape[d] for d in lc) or 1
      except (TypeError, ValueError, IndexError):
        pass
    total += out
  return total


def _host_dtype_ok(aval) -> bool:
  dt = getattr(aval, "dtype", None)
  if dt is None:
    return False
  if hasattr(dt, "_is_extended"):  # typed keys: threefry's (k0, k1) only
    return getattr(getattr(dt, "_impl", None), "name", None) == "threefry2x32"
  return isinstance(dt, np.dtype) and dt.kind in "biufc" and dt.names is None


def reason_to_skip(closed) -> str | None:
  """Why `closed` never goes to XLA (None: it may)."""
  jaxpr = closed.jaxpr
  if jaxpr.effects or _host_calls(jaxpr):
    return "effects or host callbacks"
  for a in (*closed.in_avals, *closed.out_avals):
    if type(a) is not core.ShapedArray or not _host_dtype_ok(a):
      return f"argument or result {a} is not a NumPy or threefry-key array"
  if estimated_work(jaxpr) < MIN_WORK:
    return "too little work"
  return None


# --- the XLA side -------------------------------------------------------------------------------

_xla = [None]  # the tier's own XlaBackend (unregistered), made on the first build
_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_programs_lock = threading.Lock()


def _xla_backend():
  if _xla[0] is None:
    from jaxlite._src.compiler.xla import backend as xla_backend
    _xla[0] = xla_backend.XlaBackend("cpu")
  return _xla[0]


class _Runner:
  """An XLA executable called with NumPy values, returning NumPy arrays (read-only views of
  XLA's result buffers)."""
  __slots__ = ("loaded", "handlers", "put", "sharding", "devices", "ins", "outs", "semantics")

  def __init__(self, exe, in_avals, out_avals):
    from jaxlite._src.compiler.xla import backend as xla_backend
    from jaxlite._src.compiler.xla import client as client_lib
    from jaxlite._src.compiler.xla import lowering
    _jax = client_lib.jax_ext()
    self.loaded, self.handlers = exe.loaded, exe.handlers
    self.put, self.semantics = _jax.batched_device_put, _jax.HostBufferSemantics.ZERO_COPY
    self.sharding, self.devices = exe.device.sharding, [exe.device.pjrt]
    self.ins = []
    for a in in_avals:
      p = lowering.physical_aval(a)
      key = p is not a
      self.ins.append((xla_backend._Aval(p.shape, p.dtype), np.dtype(p.dtype), key))
    self.outs = [tuple(a.shape) if hasattr(a.dtype, "_is_extended") else None
                 for a in out_avals]

  def __call__(self, *values):
    put, sh, devs, sem = self.put, self.sharding, self.devices, self.semantics
    bufs = []
    for v, (aval, dt, key) in zip(values, self.ins):
      if key:  # a threefry key array: its (k0, k1) records as uint32 [..., 2]
        x = np.ascontiguousarray(v).view(np.uint32).reshape(aval.shape)
      else:
        x = np.asarray(v, dt)
        if not x.flags.c_contiguous:
          x = np.ascontiguousarray(x)
      bufs.append(put(aval, sh, [x], devs, True, False, sem, True))
    outs = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
    res = []
    for o, key_shape in zip(outs, self.outs):
      h = np.asarray(o)  # waits for the result; a view of XLA's buffer, kept alive by it
      if key_shape is not None:
        h = np.ascontiguousarray(h).view(_KEY_STORAGE).reshape(key_shape)
      res.append(h)
    return res


class _Program:
  """One jaxpr's XLA build, shared by its executables (donating or not)."""
  __slots__ = ("closed_ref", "runner", "error", "submitted", "done", "__weakref__")

  def __init__(self, closed):
    self.closed_ref = weakref.ref(closed)
    self.runner, self.error, self.submitted, self.done = None, None, False, False

  def submit(self) -> None:
    if self.submitted:
      return
    self.submitted = True
    _exit_waits_for_builds()
    background.COMPILER.submit(self.build)

  def build(self) -> None:
    try:
      if _state.closing is True:
        raise RuntimeError("the interpreter is exiting")
      closed = self.closed_ref()
      if closed is None:
        raise RuntimeError("the program was freed before its XLA build")
      xla = _xla_backend()
      exe = xla.compile(closed)
      self.runner = _Runner(exe, closed.in_avals, closed.out_avals)
    except Exception as e:  # noqa: BLE001 - LoweringError or XLA's: the program stays on its tier
      self.error = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    finally:
      self.done = True


def _exit_waits_for_builds() -> None:
  """At exit, drops the builds not started and waits for the running one: an XLA compile that
  returns into a finalizing interpreter aborts the process (its thread is ended inside C++)."""
  if _state.closing is False:
    import atexit
    _state.closing = None  # registered, not closing yet

    def drain():
      _state.closing = True
      wait(60)
    atexit.register(drain)


def _program(closed) -> _Program:
  with _programs_lock:
    p = _programs.get(closed)
    if p is None:
      p = _programs[closed] = _Program(closed)
    return p


def _compiler_busy() -> bool:
  return background.COMPILER.pending > 0


# --- the swap -----------------------------------------------------------------------------------

class XlaSwap:
  """A jit program's executable: `fallback` (its tier's) until the program is hot and its XLA
  build measured faster, then XLA's. Attributes the tools read (`__jaxlite_source__`,
  `__jaxlite_kernels__`) are the fallback's."""
  __slots__ = ("fallback", "program", "settled", "calls", "spent", "best_fallback", "best_xla",
               "trials", "rejected", "__weakref__")

  def __init__(self, fallback, program: _Program):
    self.fallback, self.program = fallback, program
    self.settled = None  # the callable chosen for good (XLA's runner or the fallback)
    self.calls, self.spent = 0, 0.0
    self.best_fallback = self.best_xla = float("inf")
    self.trials, self.rejected = 0, False

  def __getattr__(self, name):
    return getattr(self.fallback, name)

  @property
  def on_xla(self) -> bool:
    return self.settled is not None and self.settled is not self.fallback

  def __call__(self, *args):
    settled = self.settled
    if settled is not None and _state.on:
      return settled(*args)
    if not _state.on:
      return self.fallback(*args)
    program = self.program
    if program.done:
      if program.runner is None:  # the build failed: this tier for good
        self.settled = self.fallback
        return self.fallback(*args)
      return self._trial(args)
    t = time.perf_counter()
    out = self.fallback(*args)
    dt = time.perf_counter() - t
    if not program.submitted:
      self.calls += 1
      self.spent += dt
      self.best_fallback = min(self.best_fallback, dt)
      if self.calls >= HOT_CALLS and self.spent >= HOT_SECONDS \
          and self.best_fallback >= MIN_CALL_S:
        program.submit()
    return out

  def _trial(self, args):
    """Alternates XLA's runner and the fallback, each timed, TRIALS times each; then keeps the
    faster for good."""
    if _compiler_busy():  # another compile holds the GIL in stretches: times would lie
      return self.program.runner(*args)
    xla_turn = self.trials % 2 == 0
    fn = self.program.runner if xla_turn else self.fallback
    t = time.perf_counter()
    try:
      out = fn(*args)
    except Exception as e:  # noqa: BLE001 - XLA's runtime refused: the tier answers, for good
      if not xla_turn:
        raise
      self.program.error = f"{type(e).__name__} running: {str(e).splitlines()[0][:200]}"
      self.settled, self.rejected = self.fallback, True
      return self.fallback(*args)
    dt = time.perf_counter() - t
    if xla_turn:
      self.best_xla = min(self.best_xla, dt)
    else:
      self.best_fallback = min(self.best_fallback, dt)
    self.trials += 1
    if self.trials >= 2 * TRIALS:
      if self.best_xla < KEEP_RATIO * self.best_fallback:
        self.settled = self.program.runner
      else:
        self.settled, self.rejected = self.fallback, True
    return out


_swaps: "weakref.WeakSet" = weakref.WeakSet()


def wrap(closed, executable, backend):
  """The program hook (`backend.program_hooks`): `executable` of jit program `closed` on
  `backend`, wrapped in an XlaSwap where the tier is on and the program may go to XLA."""
  if not _state.on or not available():
    return executable
  if not isinstance(backend, HOST_BACKENDS) or reason_to_skip(closed) is not None:
    return executable
  swap = XlaSwap(executable, _program(closed))
  _swaps.add(swap)
  return swap


def _after_fork_in_child() -> None:
  """A forked child cannot use the parent's XLA client (its worker threads did not survive the
  fork: a call would wait for them forever): once the parent made one, every wrapped program
  of the child stays on its tier and nothing new is wrapped."""
  if _xla[0] is None:
    return
  _state.jaxlib = False
  for s in list(_swaps):
    s.settled = s.fallback


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_after_fork_in_child)


def wait(timeout: float | None = None) -> bool:
  """Blocks until every submitted background compile has finished (tests, benchmarks)."""
  return background.wait(timeout)


def stats() -> list:
  """(state, best tier call, best XLA call, error) of every live XlaSwap."""
  out = []
  for s in list(_swaps):
    p = s.program
    state = ("xla" if s.on_xla else "rejected" if s.rejected else "failed" if p.error
             else "trials" if p.done else "compiling" if p.submitted else "cold")
    out.append((state, s.best_fallback, s.best_xla, p.error))
  return out
