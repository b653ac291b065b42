"""Old against new on the hot paths, alternating in one run: eager `x + 1` (f32[100]), `x + x`,
`jnp.sin(x)` and `jnp.asarray` of a NumPy array (a creation function), the cached jit call
`f(x)` of `x * 2 + 1`, and the first call of a jitted 3-layer MLP loss.

`python benchmarks/ab_hot_paths.py [--old REF] [--rounds N] [--clock wall|cpu]`: the old side is the `src/` of git
ref REF (default `main`, exported with `git archive` into a temporary folder), the new side this
checkout's `src/`. Each round runs one fresh worker process per side, old and new in turn (their
order swapped every round), so both see the same machine state. Each worker reports, per
workload, its least disturbed figure (the fastest of 15 batches of 2000 calls; the fastest of six
first calls of fresh jitted functions); the driver prints the medians over rounds, the median of
the per-round ratios new/old and their range. On a loaded machine only the ratios mean anything,
and `--clock cpu` (the worker thread's CPU time per call) blurs them least.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

_WORKER = r"""
import json, os, time
import numpy as np
import jaxlite
import jaxlite.numpy as jnp

clock = time.thread_time if os.environ.get("AB_CLOCK") == "cpu" else time.perf_counter

def per_call(fn, calls=2000, batches=15):
  for _ in range(calls):
    fn()
  meds = []
  for _ in range(batches):
    t = clock()
    for _ in range(calls):
      fn()
    meds.append((clock() - t) / calls)
  return float(min(meds))  # the least disturbed batch: the figure a loaded machine blurs least

x = jnp.asarray(np.ones(100, np.float32))
eager = per_call(lambda: x + 1)
host = np.ones(100, np.float32)
more = {"eager x + x": per_call(lambda: x + x), "eager jnp.sin(x)": per_call(lambda: jnp.sin(x)),
        "jnp.asarray(np f32[100])": per_call(lambda: jnp.asarray(host))}
f = jaxlite.jit(lambda x: x * 2 + 1)
jit_call = per_call(lambda: f(x))

def mlp(params, x, y):
  h = x
  for w, b in params[:-1]:
    h = jnp.maximum(h @ w + b, 0.0)
  w, b = params[-1]
  return jnp.mean((h @ w + b - y) ** 2)

rng = np.random.default_rng(1)
sizes = [784, 512, 512, 10]
params = [(jnp.asarray(rng.normal(size=(m, n)).astype(np.float32) * 0.05),
           jnp.asarray(np.zeros(n, np.float32))) for m, n in zip(sizes[:-1], sizes[1:])]
xb = jnp.asarray(rng.normal(size=(128, 784)).astype(np.float32))
yb = jnp.asarray(rng.normal(size=(128, 10)).astype(np.float32))
firsts = []
for i in range(7):
  g = jaxlite.jit(lambda p, x, y: mlp(p, x, y))  # a fresh function: traced and compiled anew
  t = time.perf_counter()
  out = g(params, xb, yb)
  out.block_until_ready()
  firsts.append(time.perf_counter() - t)
print(json.dumps({"eager x + 1": eager, **more, "cached jit call": jit_call,
                  "first MLP loss call": float(min(firsts[1:]))}))
"""


def _export(ref: str) -> str:
  out = tempfile.mkdtemp(prefix="jaxlite_ab_")
  archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], check=True,
                           capture_output=True).stdout
  subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
  return str(Path(out) / "src")


def _run(src: str, clock: str) -> dict:
  env = dict(os.environ, PYTHONPATH=src, OPENBLAS_NUM_THREADS="1", AB_CLOCK=clock)
  out = subprocess.run([sys.executable, "-c", _WORKER], env=env, capture_output=True,
                       text=True, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--old", default="main")
  ap.add_argument("--rounds", type=int, default=6)
  ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                  help="per-call figures in wall time, or in the worker thread's CPU time "
                       "(less blurred on a loaded machine; the first-call figure stays wall)")
  a = ap.parse_args()
  sides = {"old": _export(a.old), "new": str(ROOT / "src")}
  results = {"old": [], "new": []}
  try:
    for r in range(a.rounds):
      for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
        results[side].append(_run(sides[side], a.clock))
  finally:
    shutil.rmtree(Path(sides["old"]).parent, ignore_errors=True)
  print(f"# old = {a.old}, new = this checkout; {a.rounds} rounds, alternating; {a.clock} clock")
  print(f"{'workload':24} {'old':>14} {'new':>14} {'new/old':>8} {'range':>13}")
  for k in results["old"][0]:
    old = [d[k] for d in results["old"]]
    new = [d[k] for d in results["new"]]
    ratios = [n / o for n, o in zip(new, old)]
    unit, scale = ("us", 1e6) if np.median(old) < 1e-3 else ("ms", 1e3)
    print(f"{k:24} {np.median(old) * scale:11.2f} {unit} {np.median(new) * scale:11.2f} {unit} "
          f"{np.median(ratios):8.2f} {min(ratios):6.2f}-{max(ratios):.2f}")


if __name__ == "__main__":
  main()
