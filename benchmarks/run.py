"""Runs every benchmark module (bench_*.py) and prints medians with ratios to jaxlite.

Usage: python benchmarks/run.py [substring ...]   (substrings filter workload names)
Ratios are impl time / jaxlite time: above 1 means jaxlite is faster.
"""
from __future__ import annotations

import importlib.util
import pathlib
import platform
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from harness import run_workloads  # noqa: E402


def load_modules():
  for path in sorted(HERE.glob("bench_*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield path.stem, mod


def main(argv):
  import numpy as np
  print(f"# python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.machine()}, {__import__('os').cpu_count()} cpus")
  for other in ("jax", "torch"):
    try:
      m = importlib.import_module(other)
      print(f"# {other} {m.__version__}")
    except ImportError:
      print(f"# {other} not installed")
  print(f"{'workload':42s} {'impl':8s} {'median':>12s}  {'vs jaxlite':>9s}")
  for name, mod in load_modules():
    try:
      workloads = mod.workloads()
    except Exception as e:
      print(f"{name}: could not build workloads: {type(e).__name__}: {e}")
      continue
    run_workloads(workloads, only=argv[1:] or None)


if __name__ == "__main__":
  main(sys.argv)
