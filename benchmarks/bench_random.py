"""PRNG benchmarks: 10M standard normals from one key, raw threefry bits, and key operations
over 100k batched keys (vmap of normal over split keys, with and without fold_in; jitted and
eager).

`workloads()` feeds the shared harness; `python benchmarks/bench_random.py` times them alone.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import tiered

N = 10_000_000


def _normal_impls(n: int) -> dict[str, Callable[[], object]]:
  import jaxlite
  from jaxlite import random
  key = random.key(0)
  impls = {"jaxlite": lambda: random.normal(key, (n,)).block_until_ready()}
  try:
    import jax
    jkey = jax.random.key(0)
    jnormal = jax.jit(jax.random.normal, static_argnums=1)
    impls["jax"] = lambda: jnormal(jkey, (n,)).block_until_ready()
  except ImportError:
    pass
  rng = np.random.default_rng()
  impls["numpy"] = lambda: rng.standard_normal(n, dtype=np.float32)
  try:
    import torch
    gen = torch.Generator().manual_seed(0)
    impls["torch"] = lambda: torch.randn(n, generator=gen)
  except ImportError:
    pass
  del jaxlite
  return impls


def _bits_impls(n: int) -> dict[str, Callable[[], object]]:
  from jaxlite import random
  key = random.key(0)
  impls = {"jaxlite": lambda: random.bits(key, (n,))}
  try:
    import jax
    jkey = jax.random.key(0)
    jbits = jax.jit(jax.random.bits, static_argnums=1)
    impls["jax"] = lambda: jbits(jkey, (n,)).block_until_ready()
  except ImportError:
    pass
  rng = np.random.default_rng()
  impls["numpy"] = lambda: rng.integers(0, 2**32, n, dtype=np.uint32)
  return impls


KEYS = 100_000


def _batched_key_impls(fold: bool, jit: bool) -> dict[str, Callable[[], object]]:
  """`jax.vmap(lambda k: jax.random.normal(k, (4,)))(jax.random.split(key, KEYS))` (with
  `fold_in(k, 7)` first when `fold`), the whole expression jitted or run eagerly."""
  def build(m):
    key = m.random.key(0)

    def sample(k):
      return m.random.normal(m.random.fold_in(k, 7) if fold else k, (4,))

    def run(key):
      return m.vmap(sample)(m.random.split(key, KEYS))
    fn = m.jit(run) if jit else run
    return lambda: fn(key).block_until_ready()
  import jaxlite
  impls = {"jaxlite": build(jaxlite)}
  try:
    import jax
    impls["jax"] = build(jax)
  except ImportError:
    pass
  return impls


def workloads() -> list[tuple[str, dict[str, Callable[[], object]]]]:
  return [(f"random.normal(key, ({N:_},))", tiered(_normal_impls(N))),
          (f"random.bits(key, ({N:_},)) uint32", _bits_impls(N))] + [
      (f"{'jit ' if jit else 'eager '}vmap normal{' fold_in' if fold else ''} {KEYS:_} keys",
       _batched_key_impls(fold, jit)) for fold in (False, True) for jit in (True, False)]


def main() -> None:
  try:
    import jaxlite  # noqa: F401
  except ImportError:  # run from a checkout without installing: use its src/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
  from harness import fmt_seconds, time_callable
  for name, fns in workloads():
    figures = {impl: time_callable(fn, repeats=3, max_total_s=10) for impl, fn in fns.items()}
    cells = "  ".join(f"{impl} {fmt_seconds(s)}" for impl, s in figures.items())
    ratio = f"  (jaxlite/jax {figures['jaxlite'] / figures['jax']:.1f}x)" if "jax" in figures \
        else ""
    print(f"{name:<40} {cells}{ratio}")


if __name__ == "__main__":
  sys.path.insert(0, str(Path(__file__).resolve().parent))
  main()
