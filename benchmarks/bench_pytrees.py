"""Pytree benchmarks: flatten + unflatten (jit's per-call path), tree.map, treedef lookups.

`workloads()` feeds the shared harness; `python benchmarks/bench_pytrees.py` times them alone.
"""
from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _trees() -> dict[str, object]:
  return {
      "tuple of 10 arrays": tuple(np.zeros(3, np.float32) for _ in range(10)),
      "1000-leaf dict of lists": {f"layer{i:02d}": [np.float32(j) for j in range(10)]
                                  for i in range(100)},
  }


def _impls() -> dict[str, object]:
  """Each installed implementation's tree_util module, by the name the harness reports."""
  from jaxlite import tree_util
  impls = {"jaxlite": tree_util}
  try:
    import jax.tree_util
  except ImportError:
    return impls
  impls["jax"] = jax.tree_util
  return impls


def _round_trip(tu, tree) -> Callable[[], object]:
  return lambda: tu.tree_unflatten(*reversed(tu.tree_flatten(tree)))


def _map_two(tu, tree) -> Callable[[], object]:
  return lambda: tu.tree_map(lambda a, b: b, tree, tree)


def _cache_lookup(tu, tree) -> Callable[[], object]:
  """What a jit cache hit does with the structure: flatten, hash, compare with the stored one."""
  cache = {tu.tree_structure(tree): None}
  return lambda: tu.tree_structure(tree) in cache


def workloads() -> list[tuple[str, dict[str, Callable[[], object]]]]:
  impls, trees = _impls(), _trees()
  out = [(f"pytree flatten+unflatten: {name}", {k: _round_trip(tu, t) for k, tu in impls.items()})
         for name, t in trees.items()]
  big = trees["1000-leaf dict of lists"]
  out.append(("pytree tree.map over 2 trees: 1000-leaf dict of lists",
              {k: _map_two(tu, big) for k, tu in impls.items()}))
  out.append(("pytree structure + treedef cache lookup: 1000-leaf dict of lists",
              {k: _cache_lookup(tu, big) for k, tu in impls.items()}))
  return out


def _median_us(fn: Callable[[], object], repeat: int = 15) -> float:
  number, _ = timeit.Timer(fn).autorange()
  times = sorted(timeit.repeat(fn, number=number, repeat=repeat))
  return times[len(times) // 2] / number * 1e6


def main() -> None:
  try:
    import jaxlite  # noqa: F401
  except ImportError:  # run from a checkout without installing: use its src/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
  for name, fns in workloads():
    figures = {impl: _median_us(fn) for impl, fn in fns.items()}
    ratio = (f"  (jaxlite/jax {figures['jaxlite'] / figures['jax']:.2f}x)"
             if "jax" in figures else "")
    cells = "  ".join(f"{impl} {us:9.2f} µs" for impl, us in figures.items())
    print(f"{name:<66} {cells}{ratio}")


if __name__ == "__main__":
  main()
