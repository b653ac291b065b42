"""Diagnostics for issue 32's rows on a many-core host: what sets logsumexp's and the scan RNN's
time there (one section per call, printed as text lines; each section in its own process).

  cd <checkout> && PYTHONPATH=src python3 benchmarks/diag_many_cores.py SECTION

Sections:
  env        the CPU (model, SIMD flags, cores), numba's threading layer and thread count,
             NumPy's SIMD dispatch for the transcendentals, OpenBLAS's thread count.
  lse        the native logsumexp kernel (the anchor's, built through jit) called directly at
             1..all numba threads and three chunk sizes (each: median/min/p90 of 25 calls,
             cpu/wall), then the jitted function as the anchors time it with every native
             call's thread mode and time logged, then JAX's jit beside.
  row NAME   benchmarks/anchors.py's row(s) matching NAME (every column as the anchors print
             it, or those DIAG_COLUMNS names, comma-separated) with the native kernels' calls
             logged per thread mode (count, median) and the scan loops' chosen modes.
  devices [ARGS]  benchmarks/bench_devices.py with ARGS (default: 1, 2 and 8 devices, jaxlite
             and JAX).
  scan       the scan RNN step's parts on this host: the 32x128 @ 128x128 product at 1 and all
             BLAS threads, NumPy's float32 / float64 tanh of 32x128, an add, and a numba
             kernel doing the step's adds and tanh (support.tanh_f32) called from Python.
"""
from __future__ import annotations

import os
import sys
import pathlib
import statistics
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

try:
  _CORES = len(os.sched_getaffinity(0))
except (AttributeError, OSError):
  _CORES = os.cpu_count() or 1
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
  os.environ.setdefault(_var, str(_CORES))

import numpy as np  # noqa: E402


def _stats(times, cpu=None, wall=None):
  times = sorted(times)
  p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
  s = (f"median {statistics.median(times) * 1e3:.3f} ms, min {times[0] * 1e3:.3f}, "
       f"p90 {p90 * 1e3:.3f}")
  if cpu is not None:
    s += f", cpu/wall {cpu / max(wall, 1e-9):.2f}"
  return s


def _timed(call, n):
  out = []
  c0, w0 = time.process_time(), time.perf_counter()
  for _ in range(n):
    t = time.perf_counter()
    call()
    out.append(time.perf_counter() - t)
  return out, time.process_time() - c0, time.perf_counter() - w0


def env():
  import platform
  model, flags = "?", set()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name") and model == "?":
          model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
          flags = set(line.split(":", 1)[1].split())
  except OSError:
    pass
  simd = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl")
          if f in flags]
  print(f"python {platform.python_version()}, numpy {np.__version__}, {model}, "
        f"{_CORES} usable cores of {os.cpu_count()}, flags {' '.join(simd)}")
  try:
    with open("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") as f:
      print(f"cpu0 thread siblings: {f.read().strip()}")
  except OSError:
    print("cpu0 thread siblings: unknown")
  from numpy._core import _multiarray_umath as mu
  feats = getattr(mu, "__cpu_features__", {})
  print("numpy cpu features on: " + " ".join(k for k in ("AVX2", "FMA3", "AVX512F", "AVX512_SKX")
                                             if feats.get(k)))
  disp = getattr(mu, "__cpu_dispatch__", None)
  print(f"numpy dispatch targets: {disp}")
  from jaxlite._src.compiler import blas
  ob = blas.openblas()
  print(f"OpenBLAS threads: {ob[0]() if ob else 'not found'}")
  try:
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def f(n):
      s = 0
      for i in prange(n):
        s += i
      return s
    f(10)
    print(f"numba {numba.__version__}, threading layer {numba.threading_layer()}, "
          f"NUMBA_NUM_THREADS {numba.config.NUMBA_NUM_THREADS}")
  except Exception as e:  # noqa: BLE001
    print(f"numba: {type(e).__name__}: {e}")


def _lse(m):
  def f(x):
    mx = m.max(x, axis=1, keepdims=True)
    return m.log(m.sum(m.exp(x - mx), axis=1)) + mx[:, 0]
  return f


def _log_native_calls():
  """Patches the native kernels' thread chooser to log (chooser id, mode, seconds) per call."""
  from jaxlite._src.compiler.native import codegen
  log = []
  record = codegen._Threads.record

  def logged(self, mode, seconds):
    log.append((id(self), mode, seconds))
    return record(self, mode, seconds)
  codegen._Threads.record = logged
  return log


def _summarize(log, start=0, label=""):
  by = {}
  for key, mode, sec in log[start:]:
    by.setdefault(key, {}).setdefault(mode, []).append(sec)
  for k, modes in by.items():
    parts = [f"{m} threads x{len(v)}: median {statistics.median(v) * 1e3:.3f} ms, "
             f"min {min(v) * 1e3:.3f}, max {max(v) * 1e3:.3f}" for m, v in sorted(modes.items())]
    print(f"  {label}kernel {k % 10000:04d}: " + "; ".join(parts))


def lse():
  import numba
  import jaxlite
  from jaxlite._src.compiler import native
  from jaxlite._src.compiler.native import codegen
  from harness import time_callable_cpu
  src = np.random.default_rng(0).normal(size=(4096, 1024)).astype(np.float32)
  x = jaxlite.numpy.asarray(src)
  f = jaxlite.jit(_lse(jaxlite.numpy))
  for _ in range(native.HOT_CALLS + 1):
    f(x)
  t = time.perf_counter()
  native.wait(300)
  print(f"native compile waited {time.perf_counter() - t:.2f} s; numba threading layer "
        f"{numba.threading_layer()}, {numba.config.NUMBA_NUM_THREADS} threads")
  for _ in range(native.TRIALS + 1):
    f(x)
  import gc
  swaps = [o for o in gc.get_objects() if type(o) is native.HotSwap and
           isinstance(o.native, codegen.NativeKernel)]
  if not swaps:
    print("no native kernel kept")
    return
  h = swaps[0]
  k = h.native
  print(f"kernel count {k.count} rows, chunk {k.chunk}, trials best native "
        f"{h.best_native * 1e3:.3f} ms, tier 1 {h.best_fallback * 1e3:.3f} ms")
  arrays = [np.ascontiguousarray(src).reshape(-1)]
  out = np.empty(4096, np.float32)
  nt0 = numba.get_num_threads()
  counts = sorted({1, 2, 4, 6, 8, 10, 12, nt0} & set(range(1, nt0 + 1)))
  for chunk in (k.chunk, 0, max(1, k.count // (4 * nt0))):
    for nt in counts:
      numba.set_num_threads(nt)
      numba.set_parallel_chunksize(chunk)
      k.fn(k.count, *arrays, out)
      times, cpu, wall = _timed(lambda: k.fn(k.count, *arrays, out), 25)
      print(f"direct kernel: {nt:2d} threads, chunk {chunk:4d}: {_stats(times, cpu, wall)}")
  numba.set_num_threads(nt0)
  numba.set_parallel_chunksize(0)
  log = _log_native_calls()
  call = lambda: jaxlite.block_until_ready(f(x))  # noqa: E731
  start = len(log)
  sec, busy = time_callable_cpu(call, 0.05, 5, 2.5)
  print(f"jit (anchors' timing, same function): {sec * 1e3:.3f} ms, cpu/wall {busy:.2f}")
  _summarize(log, start)
  times, cpu, wall = _timed(call, 100)
  print(f"jit, 100 more calls one by one: {_stats(times, cpu, wall)}")
  f2 = jaxlite.jit(_lse(jaxlite.numpy))  # a fresh kernel, chooser from the start
  start = len(log)
  sec, busy = time_callable_cpu(lambda: jaxlite.block_until_ready(f2(x)), 0.05, 5, 2.5)
  print(f"fresh jit (anchors' timing incl. warm-up): {sec * 1e3:.3f} ms, cpu/wall {busy:.2f}")
  _summarize(log, start)
  try:
    import jax
  except ImportError:
    print("JAX: not installed")
    return
  g, xj = jax.jit(_lse(jax.numpy)), jax.numpy.asarray(src)
  call = lambda: g(xj).block_until_ready()  # noqa: E731
  sec, busy = time_callable_cpu(call, 0.05, 5, 2.5)
  times, cpu, wall = _timed(call, 50)
  print(f"JAX jit: {sec * 1e3:.3f} ms, cpu/wall {busy:.2f}; one by one {_stats(times, cpu, wall)}")
  # the native kernel again, after JAX's threads ran (they may spin or hold cores)
  numba.set_parallel_chunksize(k.chunk)
  times, cpu, wall = _timed(lambda: k.fn(k.count, *arrays, out), 25)
  print(f"direct kernel after JAX: {nt0} threads, chunk {k.chunk}: {_stats(times, cpu, wall)}")
  start = len(log)
  times, cpu, wall = _timed(lambda: jaxlite.block_until_ready(f(x)), 50)
  print(f"jaxlite jit after JAX, one by one: {_stats(times, cpu, wall)}")
  _summarize(log, start)


def row(names):
  import anchors
  cols = os.environ.get("DIAG_COLUMNS")  # a subset of the anchors' columns, comma-separated
  if cols:
    anchors.COLUMNS = tuple(c for c in anchors.COLUMNS if c in cols.split(","))
  from jaxlite._src.compiler import scan_hoist
  log = _log_native_calls()
  loops = []
  init = scan_hoist.AdaptiveLoop.__init__

  def tracked(self, *a, **kw):
    init(self, *a, **kw)
    loops.append(self)
  scan_hoist.AdaptiveLoop.__init__ = tracked
  for name, make in anchors.ROWS:
    if not any(n in name for n in names):
      continue
    start = len(log)
    before = anchors._native_swaps()
    t = time.perf_counter()
    anchors.run_row(name, make)
    print(f"  (row took {time.perf_counter() - t:.1f} s; columns {', '.join(anchors.COLUMNS)})")
    _summarize(log, start, "native ")
    for k, h in anchors._native_swaps().items():
      if k not in before:
        kind = getattr(h.native, "__name__", type(h.native).__name__) if h.native else "fallback"
        print(f"  HotSwap {h.name}: {kind}, "
              f"trials best native {h.best_native * 1e3:.3f} ms / fallback "
              f"{h.best_fallback * 1e3:.3f} ms, rejected {h.rejected}, error {h.error}")
    for lp in loops:
      print(f"  tier 1 scan loop: blas={lp.blas} chosen mode {lp.mode} (True: pipelined or "
            f"hoisted), last {lp.last_mode}")
    loops.clear()


def scan():
  import jaxlite  # noqa: F401  (blas lookup needs NumPy's OpenBLAS loaded: it is)
  from jaxlite._src.compiler import blas
  rng = np.random.default_rng(0)
  h = rng.standard_normal((32, 128)).astype(np.float32)
  w = (rng.standard_normal((128, 128)) / 11).astype(np.float32)
  a = rng.standard_normal((32, 128)).astype(np.float32)
  b = np.zeros((32, 128), np.float32)
  out = np.empty_like(h)
  ob = blas.openblas()
  n0 = ob[0]() if ob else None

  def med(fn, n=2000):
    fn()
    ts = []
    for _ in range(5):
      t = time.perf_counter()
      for _ in range(n // 5):
        fn()
      ts.append((time.perf_counter() - t) / (n // 5))
    return statistics.median(ts) * 1e6
  for nt in sorted({1, 2, n0 or 1}):
    if ob:
      ob[1](nt)
    print(f"(32,128)@(128,128) f32, {nt} BLAS threads: {med(lambda: np.matmul(h, w, out=out)):.2f} us")
  if ob:
    ob[1](n0)
  print(f"np.tanh f32 (32,128): {med(lambda: np.tanh(h, out=out)):.2f} us; f64: "
        f"{med(lambda: np.tanh(h.astype(np.float64))):.2f} us (incl. astype)")
  print(f"np.exp f32 (32,128): {med(lambda: np.exp(h, out=out)):.2f} us; np.add f32: "
        f"{med(lambda: np.add(h, a, out=out)):.2f} us")
  try:
    from numba import njit
    from jaxlite._src.compiler.native import support as _s
  except ImportError as e:
    print(f"numba: {e}")
    return

  @njit("void(float32[::1], float32[::1], float32[::1], float32[::1])", nogil=True,
        error_model="numpy")
  def tail(x, y, z, o):
    for i in range(o.shape[0]):
      o[i] = _s.tanh_f32(x[i] + y[i] + z[i])
  o = out.reshape(-1)
  hf, af, bf = h.reshape(-1), a.reshape(-1), b.reshape(-1)
  tail(hf, af, bf, o)
  ref = np.tanh(h + a + b).reshape(-1)
  print(f"numba add+add+tanh kernel (32,128) called from Python: "
        f"{med(lambda: tail(hf, af, bf, o)):.2f} us (max |diff| vs NumPy "
        f"{float(np.max(np.abs(o - ref))):.2e}); NumPy's three calls: "
        f"{med(lambda: np.tanh(np.add(np.add(h, a, out=out), b, out=out), out=out)):.2f} us")
  # The step loop as tier 1 runs it (the x @ u rows hoisted: `xw`), its adds and tanh as
  # NumPy calls, and the same loop with them as one numba call (through a Python wrapper that
  # flattens, as a NativeKernel call does): 1000 steps, BLAS on one thread.
  steps = 1000
  xw = rng.standard_normal((steps, 32, 128)).astype(np.float32)
  ys = np.empty_like(xw)
  h0 = np.zeros((32, 128), np.float32)

  def loop_numpy():
    hh = h0
    for i in range(steps):
      t = np.matmul(hh, w)
      np.add(t, xw[i], out=t)
      np.add(t, b, out=t)
      hh = np.tanh(t, out=ys[i])

  def native_call(x, y, z, out):
    tail(x.reshape(-1), y.reshape(-1), z.reshape(-1), out.reshape(-1))
    return out

  def loop_tail():
    hh = h0
    for i in range(steps):
      t = np.matmul(hh, w)
      hh = native_call(t, xw[i], b, ys[i])
  if ob:
    ob[1](1)
  for name, fn in (("NumPy calls", loop_numpy), ("numba tail", loop_tail)) * 2:
    fn()
    ts = []
    for _ in range(5):
      t0 = time.perf_counter()
      fn()
      ts.append(time.perf_counter() - t0)
    print(f"step loop, {steps} steps, {name}: {statistics.median(ts) * 1e3:.2f} ms")
  if ob:
    ob[1](n0)


def devices(argv):
  import bench_devices
  bench_devices.main(argv or ["--counts", "1,2,8", "--impls", "jaxlite,JAX"])


if __name__ == "__main__":
  what = sys.argv[1] if len(sys.argv) > 1 else "env"
  {"env": lambda: env(), "lse": lambda: lse(), "scan": lambda: scan(),
   "row": lambda: row(sys.argv[2:]), "devices": lambda: devices(sys.argv[2:])}[what]()
