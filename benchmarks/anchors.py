"""Issue 15's anchor table: eight workloads, every jaxlite tier beside JAX, NumPy and PyTorch.

  cd <checkout> && PYTHONPATH=src python3 benchmarks/anchors.py [substring ...]

(substrings filter the rows by name). About 4-6 minutes on the project's 2-core machine, most
of it torch.compile's compiles. BLAS threads are set before NumPy loads: OPENBLAS_NUM_THREADS,
OMP_NUM_THREADS and MKL_NUM_THREADS default to the core count (an explicit environment value
wins) and torch.set_num_threads gets the same; the script prints what was used.

Columns: JAX (jit, block_until_ready), jaxlite tier 0 (`jax_jaxlite_tier=0`), tier 1
(`jax_jaxlite_tier=1`, `jax_jaxlite_native=False`), xla tier (the default install where jaxlib
is: tier 1, native where numba is, and `jax_jaxlite_xla_tier`: each function is called until
its programs are hot, the background XLA builds are waited for and the trials run before
timing; its note says which programs stayed on their tier and the trials' times; the other
jaxlite columns run with the XLA tier off), native (tier 1 with the native tier on;
only where numba is installed: each function is called until its kernels are hot, the
background compiles are waited for with `native.wait()`, and the HotSwap trials run, all before
timing, so the compile is never timed; for tier 1 and native, the 9 calls in which each kernel
probes its three ways to run are made before timing too: benchmarks/harness.py), NumPy,
PyTorch eager, torch.compile (rows where it
fuses something; a failure is written in its cell). A cell is the median time per call and the
cores kept busy (process CPU time / wall time over the timed calls), in every column.
Every jaxlite column builds its own jitted function, so no column reuses another's executable.

Ratios: best = the fastest jaxlite tier; best/JAX (target <= 1), best/t0, and each tier / tier
0 ("no workload slower than tier 0": <= 1, noise allowing). Below the table: the first call of
a fresh jitted MLP loss (target < 15 ms), in a process where nothing else was compiled yet.
"""
from __future__ import annotations

import os
import sys

try:  # the cores this process may use (taskset narrows them), as jaxlite counts them
  _CORES = len(os.sched_getaffinity(0))
except (AttributeError, OSError):
  _CORES = os.cpu_count() or 1
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
  os.environ.setdefault(_var, str(_CORES))

import gc  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402

from harness import time_callable_cpu  # noqa: E402
import bench_mlp  # noqa: E402
import bench_scan  # noqa: E402
import bench_vmap  # noqa: E402

import jaxlite  # noqa: E402
from jaxlite._src.compiler import native  # noqa: E402
from jaxlite._src.compiler import xla_tier  # noqa: E402


def _optional(name):
  try:
    return __import__(name)
  except Exception:  # noqa: BLE001 - an optional comparison that does not import is left out
    return None


jax = _optional("jax")
torch = _optional("torch")
if torch is not None:
  torch.set_num_threads(_CORES)

# Timing budget per cell: a warm-up call, then up to REPEATS medians of >= MIN_REPEAT_S each,
# capped at MAX_CELL_S (the 10M-element rows get 3 repeats).
MIN_REPEAT_S, REPEATS, MAX_CELL_S = 0.05, 5, 2.5

COLUMNS = ("JAX", "tier 0", "tier 1", "native", "xla tier", "NumPy", "torch", "torch.compile")
JL_COLUMNS = ("tier 0", "tier 1", "native", "xla tier")


# --- jaxlite tiers ---------------------------------------------------------------------------

def _set_tier(column: str) -> None:
  jaxlite.config.update("jax_jaxlite_tier", 0 if column == "tier 0" else 1)
  jaxlite.config.update("jax_jaxlite_native", column == "native" or
                        column == "xla tier" and native.available())
  jaxlite.config.update("jax_jaxlite_xla_tier", column == "xla tier")


def _xla_swaps():
  return {id(o): o for o in gc.get_objects() if type(o) is xla_tier.XlaSwap}


def _warm_xla(call, note: list, before: dict) -> None:
  """Runs `call` until its programs are hot for the XLA tier (HOT_CALLS calls over
  HOT_SECONDS: at most 5 s or 2000 calls), waits for the background builds, then runs the trials
  (which keep XLA only where it measured faster than the tier below), all untimed. `before`:
  the XlaSwaps that existed before `call` was built."""
  call()
  new = [s for k, s in _xla_swaps().items() if k not in before]
  t0, calls = time.perf_counter(), 1
  while new and not all(s.program.submitted for s in new) and calls < 2000 \
      and time.perf_counter() - t0 < 5.0:
    call()
    calls += 1
  t = time.perf_counter()
  ok = xla_tier.wait(timeout=300)
  waited = time.perf_counter() - t
  for _ in range(2 * xla_tier.TRIALS + 1):
    call()
  if not new:
    note.append("xla tier: no program wrapped (too small, effects, or jaxlib missing)")
    return
  kept = [s for s in new if s.on_xla]
  failed = [s.program.error for s in new if s.program.error]
  trials = ", ".join(f"tier {s.best_fallback * 1e3:.3g} ms / xla {s.best_xla * 1e3:.3g} ms"
                     for s in new if s.best_xla < float("inf"))
  note.append(f"xla tier: {len(new)} programs wrapped, {len(kept)} on XLA, "
              f"{sum(s.rejected for s in new)} rejected, {len(failed)} failed"
              f"{' (' + failed[0][:80] + ')' if failed else ''}; trials {trials or '-'}; "
              f"waited {waited * 1e3:.0f} ms for the compile{'' if ok else ' (TIMED OUT)'}")


def _native_swaps():
  # type(), not isinstance: isinstance on a dead weakref.proxy raises, on torch's lazy
  # modules it warns.
  return {id(o): o for o in gc.get_objects() if type(o) is native.HotSwap}


def _warm_native(call, note: list) -> None:
  """Runs `call` until its kernels are hot, waits for their background compiles, then runs the
  HotSwap trials (which keep a native kernel only when it beat tier 1), all untimed."""
  before = _native_swaps()
  for _ in range(native.HOT_CALLS + 1):
    call()
  t = time.perf_counter()
  ok = native.wait(timeout=300)
  waited = time.perf_counter() - t
  for _ in range(native.TRIALS + 1):
    call()
  new = [h for k, h in _native_swaps().items() if k not in before]
  if not new:
    return
  kept = sum(1 for h in new if h.native is not None)
  failed = sum(1 for h in new if h.error is not None)
  note.append(f"native: {len(new)} kernels hot-swappable, {kept} kept native, "
              f"{sum(h.rejected for h in new)} rejected (tier 1 faster), {failed} failed; "
              f"waited {waited * 1e3:.0f} ms for the compile{'' if ok else ' (TIMED OUT)'}")


# --- the workloads -----------------------------------------------------------------------------
# Each returns {column: factory}; a factory builds (untimed) and returns the zero-arg callable.
# jaxlite's factories take the jaxlite module and are called once per tier.

def _block(out):
  return jaxlite.block_until_ready(out)


def _lse(m):
  def f(x):
    mx = m.max(x, axis=1, keepdims=True)
    return m.log(m.sum(m.exp(x - mx), axis=1)) + mx[:, 0]
  return f


def w_logsumexp():
  src = np.random.default_rng(0).normal(size=(4096, 1024)).astype(np.float32)

  def jl():
    f, x = jaxlite.jit(_lse(jaxlite.numpy)), jaxlite.numpy.asarray(src)
    return lambda: _block(f(x))
  out = {"jl": jl, "NumPy": lambda: (lambda: _lse(np)(src))}
  if jax:
    def jx():
      f, x = jax.jit(_lse(jax.numpy)), jax.numpy.asarray(src)
      return lambda: f(x).block_until_ready()
    out["JAX"] = jx
  if torch:
    t = torch.from_numpy(src)
    out["torch"] = lambda: (lambda: torch.logsumexp(t, 1))
    out["torch.compile"] = lambda: _compiled(lambda x: torch.logsumexp(x, 1), t)
  return out


N = 10_000_000


def w_normals():
  def jl():
    f, key = jaxlite.jit(lambda k: jaxlite.random.normal(k, (N,))), jaxlite.random.key(0)
    return lambda: _block(f(key))
  rng = np.random.default_rng(0)
  out = {"jl": jl, "NumPy": lambda: (lambda: rng.standard_normal(N, dtype=np.float32))}
  if jax:
    def jx():
      f, key = jax.jit(lambda k: jax.random.normal(k, (N,))), jax.random.key(0)
      return lambda: f(key).block_until_ready()
    out["JAX"] = jx
  if torch:
    gen = torch.Generator().manual_seed(0)
    out["torch"] = lambda: (lambda: torch.randn(N, generator=gen))
  return out


def w_mlp():
  params, x, labels = bench_mlp._data()
  out = {"jl": lambda: bench_mlp._jax_callable(jaxlite, params, x, labels),
         "NumPy": lambda: (lambda: bench_mlp._numpy_step(params, x, labels))}
  if jax:
    out["JAX"] = lambda: bench_mlp._jax_callable(jax, params, x, labels)
  if torch:
    out["torch"] = lambda: bench_mlp._torch_callable(torch, params, x, labels)
  return out


def w_per_example():
  w, b, xs, ys = bench_vmap._data()

  def jl():
    f = bench_vmap._per_example_grads(jaxlite)
    return lambda: _block(f((w, b), xs, ys))
  out = {"jl": jl, "NumPy": lambda: (lambda: bench_vmap._per_example_numpy(w, b, xs, ys))}
  if jax:
    def jx():
      f = bench_vmap._per_example_grads(jax)
      args = [jax.numpy.asarray(a) for a in (w, b, xs, ys)]
      return lambda: jax.block_until_ready(f((args[0], args[1]), args[2], args[3]))
    out["JAX"] = jx
  if torch:
    def tc():
      from torch.func import grad, vmap
      tw, txs, tys = (torch.from_numpy(a) for a in (w, xs, ys))
      tb = torch.tensor(float(b))

      def loss(w, b, x, y):
        return (x @ w + b - y) ** 2
      g = vmap(grad(loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))
      return lambda: g(tw, tb, txs, tys)
    out["torch"] = tc
  return out


def w_scan():
  data = bench_scan._data()
  out = {"jl": lambda: bench_scan._rnn_scan(jaxlite, *data),
         "NumPy": lambda: (lambda: bench_scan._rnn_numpy(*data))}
  if jax:
    out["JAX"] = lambda: bench_scan._rnn_scan(jax, *data)
  if torch:
    def tc():
      w, u, b, h0, xs = (torch.from_numpy(a) for a in data)

      def run():
        h, hs = h0, torch.empty_like(xs)
        for t in range(xs.shape[0]):
          h = torch.tanh(h @ w + xs[t] @ u + b)
          hs[t] = h
        return h, hs
      return run
    out["torch"] = tc
  return out


def _tes(m):
  return lambda x: m.tanh(x) * m.exp(x) + m.sin(x)


def w_chain():
  src = np.random.default_rng(0).normal(size=N).astype(np.float32)

  def jl():
    f, x = jaxlite.jit(_tes(jaxlite.numpy)), jaxlite.numpy.asarray(src)
    return lambda: _block(f(x))
  out = {"jl": jl, "NumPy": lambda: (lambda: _tes(np)(src))}
  if jax:
    def jx():
      f, x = jax.jit(_tes(jax.numpy)), jax.numpy.asarray(src)
      return lambda: f(x).block_until_ready()
    out["JAX"] = jx
  if torch:
    t = torch.from_numpy(src)
    out["torch"] = lambda: (lambda: _tes(torch)(t))
    out["torch.compile"] = lambda: _compiled(_tes(torch), t)
  return out


def w_eager():
  x_np = np.ones(100, np.float32)

  def jl():
    x = jaxlite.numpy.asarray(x_np)
    return lambda: x + 1
  out = {"jl": jl, "NumPy": lambda: (lambda: x_np + 1)}
  if jax:
    def jx():
      x = jax.numpy.asarray(x_np)
      return lambda: (x + 1).block_until_ready()
    out["JAX"] = jx
  if torch:
    t = torch.from_numpy(x_np)
    out["torch"] = lambda: (lambda: t + 1)
  return out


def w_cached_jit():
  x_np = np.ones(100, np.float32)
  fn = lambda x: x * 2 + 1  # noqa: E731

  def jl():
    f, x = jaxlite.jit(lambda x: x * 2 + 1), jaxlite.numpy.asarray(x_np)
    return lambda: f(x)
  out = {"jl": jl, "NumPy": lambda: (lambda: fn(x_np))}
  if jax:
    def jx():
      f, x = jax.jit(lambda x: x * 2 + 1), jax.numpy.asarray(x_np)
      return lambda: f(x).block_until_ready()
    out["JAX"] = jx
  if torch:
    t = torch.from_numpy(x_np)
    out["torch"] = lambda: (lambda: fn(t))
    out["torch.compile"] = lambda: _compiled(lambda x: x * 2 + 1, t)
  return out


def _compiled(fn, *args):
  c = torch.compile(fn)
  c(*args)  # compiles here, untimed (an error lands in the cell)
  return lambda: c(*args)


ROWS = [
    ("logsumexp (4096,1024) f32, jit", w_logsumexp),
    ("10M normals, jit(random.normal)", w_normals),
    ("MLP train step 784-512-512-10 b128", w_mlp),
    ("per-example grads jit(vmap(grad)) 256x1024", w_per_example),
    ("scan RNN 1000 steps h128 b32", w_scan),
    ("elementwise tanh*exp+sin 10M f32, jit", w_chain),
    ("eager x + 1, f32[100]", w_eager),
    ("cached jit call x * 2 + 1, f32[100]", w_cached_jit),
]


# --- running and printing ------------------------------------------------------------------------

def _fmt(s: float) -> str:
  if s < 1e-3:
    return f"{s * 1e6:.2f} us"
  if s < 1:
    return f"{s * 1e3:.3g} ms"
  return f"{s:.3g} s"


def _time(call):
  return time_callable_cpu(call, MIN_REPEAT_S, REPEATS, MAX_CELL_S)


def run_row(name, make):
  factories = make()
  cells, times, notes = {}, {}, []
  for col in COLUMNS:
    if col in JL_COLUMNS:
      if col == "native" and not native.available():
        cells[col] = "n/a (no numba)"
        continue
      if col == "xla tier" and not xla_tier.available():
        cells[col] = "n/a (no jaxlib)"
        continue
      _set_tier(col)
      factory = factories["jl"]
    elif col in factories:
      factory = factories[col]
    else:
      cells[col] = "—"
      continue
    try:
      swaps_before = _xla_swaps() if col == "xla tier" else None
      call = factory()
      if col == "native":
        _warm_native(call, notes)
      if col == "xla tier":
        if native.available():
          _warm_native(call, [])
        _warm_xla(call, notes, swaps_before)
      sec, busy = _time(call)
    except Exception as e:  # noqa: BLE001 - a failing column is reported in its cell
      cells[col] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:60] if str(e) else ''}"
      continue
    times[col] = sec
    cells[col] = f"{_fmt(sec)} ({busy:.2f})"
  _set_tier("xla tier")  # the default again (native where numba is, XLA tier where jaxlib is)
  jl = {c: times[c] for c in JL_COLUMNS if c in times}
  ratios = []
  if jl:
    best_col = min(jl, key=jl.get)
    best = jl[best_col]
    if "JAX" in times:
      ratios.append(f"best({best_col})/JAX {best / times['JAX']:.2f}")
    if "tier 0" in jl:
      ratios.append(f"best/t0 {best / jl['tier 0']:.2f}")
      ratios += [f"{c.replace('tier ', 't')}/t0 {jl[c] / jl['tier 0']:.2f}"
                 for c in ("tier 1", "native", "xla tier") if c in jl]
  print("| " + " | ".join([name] + [cells[c] for c in COLUMNS] + [", ".join(ratios)]) + " |",
        flush=True)
  for n in notes:
    print(f"|   ↳ {n} |", flush=True)
  return times


_FIRST_CALL = """
import statistics, sys
sys.path.insert(0, {here!r})
import numpy as np
import jaxlite
import bench_core
args = bench_core._mlp_args(jaxlite.numpy, np.random.default_rng(1))
run = bench_core._first_call(jaxlite.jit, lambda: bench_core._mlp_loss(jaxlite.numpy), args)
first = run()
print(first, statistics.median(run() for _ in range(5)))
"""


def first_call_mlp():
  """The first call of a fresh jitted 3-layer MLP loss at the default tier, in a fresh process
  that imported only jaxlite (JAX's and torch's objects would make its garbage collections
  theirs): the process's very first one, then the median of 5 more fresh functions."""
  import subprocess
  out = subprocess.check_output(
      [sys.executable, "-c", _FIRST_CALL.format(here=str(HERE))],
      env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")})
  first, rest = map(float, out.split())
  return first, rest


def _numba_layer() -> str:
  """numba's threading layer as the native tier configures it (native/threads.py)."""
  from jaxlite._src.compiler.native import cache  # noqa: F401  (configures the layer)
  from jaxlite._src.compiler.native import threads
  return threads.layer()


def main(argv):
  first = first_call_mlp()
  print(f"# python {platform.python_version()}, numpy {np.__version__}, jaxlite from "
        f"{pathlib.Path(jaxlite.__file__).parent}, {platform.machine()}, {_CORES} cpus")
  numba = _optional("numba") if native.available() else None
  print(f"# jax {getattr(jax, '__version__', 'not installed')}, torch "
        f"{getattr(torch, '__version__', 'not installed')}, numba "
        f"{getattr(numba, '__version__', 'not installed')}")
  print("# BLAS threads: " + ", ".join(f"{v}={os.environ[v]}" for v in
                                       ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                        "MKL_NUM_THREADS"))
        + (f"; torch.set_num_threads({torch.get_num_threads()})" if torch else "")
        + (f"; numba threads {__import__('numba').config.NUMBA_NUM_THREADS}, "
           f"layer {_numba_layer()}" if native.available() else ""))
  from jaxlite._src.compiler.native import loops
  print(f"# native whole-scan loops: {'on' if loops.ENABLED else 'off'} "
        "(JAXLITE_NATIVE_LOOPS=1 turns them on; tier 1's loop otherwise)")
  print("# cells: median per call (cpu/wall); ratios are times, <= 1 meets a target")
  print("| workload | " + " | ".join(COLUMNS) + " | ratios |")
  print("|---" * (len(COLUMNS) + 2) + "|")
  t0 = time.perf_counter()
  for name, make in ROWS:
    if argv and not any(a in name for a in argv):
      continue
    run_row(name, make)
  print(f"\nfirst call of a fresh jitted MLP loss (default tier, fresh process): first "
        f"{first[0] * 1e3:.2f} ms, median of 5 more {first[1] * 1e3:.2f} ms (target < 15 ms)")
  print(f"# table took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
  main(sys.argv[1:])
