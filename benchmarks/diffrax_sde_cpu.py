"""diffrax's adaptive Ito-Milstein solve on a VirtualBrownianTree (its test_solver.py's
test_adaptive_dt0_milstein, with a fixed key): jaxlite beside JAX, by CPU time, each column in
its own process (jaxlite through the `jax` shim; diffrax and equinox installed without jax).

The solve is one jitted program whose while loop takes ~1,200 steps; each step walks the Brownian
tree through a nested while loop of scalar PRNG splits and normal draws (~80,000 iterations in
all). A loaded machine stretches wall time, so the figures are CPU seconds (process time) of the
first call (trace, compile, run) and of a second call (run).

Usage (the two interpreters and where the libraries are, as in ECO_ENV.md):
  python benchmarks/diffrax_sde_cpu.py --lite-python /work/venv-eco/bin/python \\
      --jax-python /work/venv/bin/python --jax-path /work/eco-jaxlibs
`--lite-src DIR` (repeatable) runs a jaxlite column for each `src/` tree named (another
checkout's, say: a change beside the tree before it), in the order given; by default this
checkout's. `--repeat N` runs the jaxlite columns N times round robin and keeps each one's
least CPU time.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

WORKLOAD = r"""
import json, time
c0 = time.process_time()
import jax, diffrax
jax.config.update("jax_enable_x64", True)

def solve(seed):
  bm = diffrax.VirtualBrownianTree(0, 1, 1e-3, (), key=jax.random.key(seed))
  terms = diffrax.MultiTerm(diffrax.ODETerm(lambda t, y, args: y),
                            diffrax.ControlTerm(lambda t, y, args: y, bm))
  return diffrax.diffeqsolve(terms, diffrax.HalfSolver(diffrax.ItoMilstein()), 0, 1, None, 1.0,
                             stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5))

c1 = time.process_time()
first = solve(0)
jax.block_until_ready(first.ys)
c2 = time.process_time()
second = solve(0)
jax.block_until_ready(second.ys)
c3 = time.process_time()
print(json.dumps({"import": c1 - c0, "first": c2 - c1, "second": c3 - c2,
                  "steps": int(first.stats["num_steps"]), "y1": float(first.ys[0])}))
"""


def run_column(python: str, path: str, lite: bool, src: Path = SRC) -> dict:
  env = dict(os.environ, OPENBLAS_NUM_THREADS="1", JAX_PLATFORMS="cpu")
  env["PYTHONPATH"] = (f"{src / 'jaxlite' / '_jax_shim'}{os.pathsep}{src}" if lite else path)
  out = subprocess.run([python, "-c", WORKLOAD], env=env, capture_output=True, text=True,
                       check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--lite-python", default=sys.executable)
  parser.add_argument("--jax-python", default=None, help="an interpreter with jax and diffrax")
  parser.add_argument("--jax-path", default="", help="PYTHONPATH for the JAX column")
  parser.add_argument("--lite-src", action="append", type=Path, default=None,
                      help="a jaxlite src/ tree to run (repeatable); default this checkout's")
  parser.add_argument("--repeat", type=int, default=1,
                      help="runs of each jaxlite column, round robin; the least CPU time counts "
                           "(CPU time on a loaded machine still varies by ~5%% run to run)")
  args = parser.parse_args()
  srcs = args.lite_src or [SRC]
  runs = [[] for _ in srcs]
  for _ in range(args.repeat):
    for src, col in zip(srcs, runs):
      col.append(run_column(args.lite_python, "", True, src.resolve()))
  columns = []
  for src, col in zip(srcs, runs):
    lite = dict(col[0], first=min(r["first"] for r in col), second=min(r["second"] for r in col))
    assert all((r["steps"], r["y1"]) == (lite["steps"], lite["y1"]) for r in col)
    columns.append(lite)
    each = "" if len(col) == 1 else " (runs: " + ", ".join(
        f"{r['first']:.2f}/{r['second']:.2f}" for r in col) + ")"
    print(f"jaxlite ({src}): steps {lite['steps']}, y(1) {lite['y1']!r}; CPU s: import "
          f"{lite['import']:.2f}, first call {lite['first']:.2f}, second call "
          f"{lite['second']:.2f}{each}")
  for src, other in zip(args.lite_src[1:] if args.lite_src else [], columns[1:]):
    print(f"{src} / {args.lite_src[0]} CPU time: first call "
          f"{other['first'] / columns[0]['first']:.2f}x, second call "
          f"{other['second'] / columns[0]['second']:.2f}x")
  if args.jax_python:
    jax = run_column(args.jax_python, args.jax_path, False)
    print(f"JAX:     steps {jax['steps']}, y(1) {jax['y1']:.10g}; CPU s: import "
          f"{jax['import']:.2f}, first call {jax['first']:.2f}, second call {jax['second']:.2f}")
    for src, lite in zip(srcs, columns):
      print(f"jaxlite ({src}) / JAX CPU time: first call {lite['first'] / jax['first']:.2f}x, "
            f"second call {lite['second'] / jax['second']:.2f}x")


if __name__ == "__main__":
  main()
