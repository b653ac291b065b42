"""Tier 1's ways to run a fused kernel, each forced, beside tier 0 and tier 1's own choice, in one
process with the calls interleaved (issue 32: do the tiles use every core?).

  cd <checkout> && PYTHONPATH=src python3 benchmarks/bench_tier1_modes.py [rows] [--reps 9]

Rows: logsumexp and softmax over (4096, 1024) f32, a layer normalisation of it, 10M normals
(the threefry hash), tanh*exp+sin over 10M f32. Columns: tier 0; tier 1 with every kernel in
`pool` (L2-sized tiles on the calling thread plus the pool), `pool-wide` (4x the rows a tile,
fewer GIL hand-offs), `tiles` (one thread), `whole` (one call over all rows, where the kernel
has at most 16 tiles), `adaptive` (tier 1 as shipped: it times the modes and keeps the
fastest) and `xla` (the program taken over by the background XLA tier whatever its trials
measure, where jaxlib is installed: XLA's time with NumPy arguments in and NumPy results out;
the XLA tier as shipped keeps it only when it measured faster than tier 1). The scan RNN row
has no tiled kernel: only tier 0, adaptive (tier 1's hoisted loop) and xla apply.
A cell is the median time per call over the interleaved rounds, its ratio to tier 0
and the cores kept busy (process CPU time / wall time of its calls): a pooled mode near 1.0 on a
many-core host means its threads wait for the GIL instead of computing. The native tier is off
(JAXLITE_NATIVE=0 is set here): this measures the pure-NumPy path.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ["JAXLITE_NATIVE"] = "0"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import jaxlite  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite._src.base import machine  # noqa: E402
from jaxlite._src.compiler import tiled_executor as te  # noqa: E402
from jaxlite._src.compiler import xla_tier  # noqa: E402

MODES = (te.POOLED, te.WIDE, te.TILES, te.WHOLE)


def _lse(x):
  mx = jnp.max(x, axis=1, keepdims=True)
  return jnp.log(jnp.sum(jnp.exp(x - mx), axis=1)) + mx[:, 0]


def _norm(x):
  m = x.mean(-1, keepdims=True)
  return (x - m) * jaxlite.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def _rnn():
  import bench_scan
  w, u, b, h0, xs = bench_scan._data()

  def rnn(xs):
    def step(h, x):
      h = jnp.tanh(h @ w + x @ u + b)
      return h, h
    return jaxlite.lax.scan(step, jnp.asarray(h0), xs)
  return rnn, jnp.asarray(xs)


def _rows():
  x = jnp.asarray(np.random.default_rng(0).normal(size=(4096, 1024)).astype(np.float32))
  c = jnp.asarray(np.random.default_rng(0).normal(size=10_000_000).astype(np.float32))
  return {
      "logsumexp (4096,1024)": (_lse, x),
      "softmax (4096,1024)": (jaxlite.nn.softmax, x),
      "normalise (4096,1024)": (_norm, x),
      "10M normals": (lambda k: jaxlite.random.normal(k, (10_000_000,)), jaxlite.random.key(0)),
      "tanh*exp+sin 10M": (lambda v: jnp.tanh(v) * jnp.exp(v) + jnp.sin(v), c),
      "scan RNN 1000 steps h128 b32": _rnn(),
  }


def _build_xla(fn, arg):
  """A fresh jitted fn on tier 1 whose program the XLA tier has taken over, whatever its
  trials measure (its thresholds at zero for the build): XLA's time with the NumPy arguments
  handed over and the results returned as NumPy arrays. None where XLA cannot take it."""
  saved = {k: getattr(xla_tier, k) for k in ("HOT_CALLS", "HOT_SECONDS", "MIN_CALL_S",
                                             "MIN_WORK", "KEEP_RATIO")}
  jaxlite.config.update("jax_jaxlite_tier", 1)
  jaxlite.config.update("jax_jaxlite_xla_tier", True)
  try:
    xla_tier.HOT_CALLS, xla_tier.HOT_SECONDS, xla_tier.MIN_CALL_S = 1, 0.0, 0.0
    xla_tier.MIN_WORK, xla_tier.KEEP_RATIO = 0, float("inf")
    f = jaxlite.jit(lambda a: fn(a))
    jaxlite.block_until_ready(f(arg))
    xla_tier.wait(600)
    for _ in range(2 * xla_tier.TRIALS):
      jaxlite.block_until_ready(f(arg))
    exe = f.lower(arg).compile()._entry.executable
    if not getattr(exe, "on_xla", False):
      print(f"# xla: stays on tier 1 ({getattr(getattr(exe, 'program', None), 'error', None)})")
      return None
  finally:
    for k, v in saved.items():
      setattr(xla_tier, k, v)
    jaxlite.config.update("jax_jaxlite_xla_tier", False)
  return lambda: jaxlite.block_until_ready(f(arg))


def _build(fn, arg, tier, mode=None):
  """(call, kernels): a fresh jitted fn at `tier` and its tiled kernels; with `mode`, each
  kernel forced into it (None when a kernel lacks that mode)."""
  jaxlite.config.update("jax_jaxlite_tier", tier)
  compiled = jaxlite.jit(lambda a: fn(a)).lower(arg).compile()
  jaxlite.block_until_ready(compiled(arg))  # settles each kernel's modes
  kernels = list(getattr(compiled._entry.executable, "__jaxlite_kernels__", None) or [])
  if mode is not None:
    if not kernels or not all(mode in k.modes for k in kernels):
      return None, kernels
    for k in kernels:
      k.modes, k.chooser = (mode,), None
  else:
    for _ in range(4 * 3):  # past the adaptive probes
      jaxlite.block_until_ready(compiled(arg))
  return (lambda: jaxlite.block_until_ready(compiled(arg))), kernels


def main(argv):
  reps = 9
  if "--reps" in argv:
    i = argv.index("--reps")
    reps = int(argv[i + 1])
    argv = argv[:i] + argv[i + 2:]
  print(f"# {machine.usable_cores()} usable cores, L2 {machine.cache_bytes(2)} B, tiles of "
        f"{te.TILE_BYTES} B, pool of {te.worker_count()} threads; cells: median (ratio to tier "
        f"0, cpu/wall)")
  cols = ["tier 0"] + list(MODES) + ["adaptive", "xla"]
  jaxlite.config.update("jax_jaxlite_xla_tier", False)  # every column but "xla": its tier
  print("| workload | " + " | ".join(cols) + " | chosen |")
  print("|---" * (len(cols) + 2) + "|")
  for name, (fn, arg) in _rows().items():
    if argv and not any(a in name for a in argv):
      continue
    calls = {"tier 0": _build(fn, arg, 0)[0]}
    for mode in MODES:
      calls[mode] = _build(fn, arg, 1, mode)[0]
    calls["adaptive"], kernels = _build(fn, arg, 1)
    if xla_tier.available():
      calls["xla"] = _build_xla(fn, arg)
    chosen = sorted({str(k.mode or k.last_mode) for k in kernels})
    times = {k: [] for k, c in calls.items() if c is not None}
    busy = {k: [0.0, 0.0] for k in times}
    for _ in range(reps):
      for k in times:
        c0, t0 = time.process_time(), time.perf_counter()
        calls[k]()
        w = time.perf_counter() - t0
        times[k].append(w)
        busy[k][0] += time.process_time() - c0
        busy[k][1] += w
    base = statistics.median(times["tier 0"])
    cells = []
    for k in cols:
      if k not in times:
        cells.append("—")
        continue
      med = statistics.median(times[k])
      cells.append(f"{med * 1e3:.2f} ms ({med / base:.2f}, {busy[k][0] / busy[k][1]:.2f})")
    print(f"| {name} | " + " | ".join(cells) + f" | {', '.join(chosen)} |", flush=True)
  jaxlite.config.update("jax_jaxlite_tier", 1)


if __name__ == "__main__":
  main(sys.argv[1:])
