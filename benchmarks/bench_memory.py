"""Peak resident memory of jaxlite's anchor workloads beside real JAX (issue 15 item 5).

Usage: python benchmarks/bench_memory.py [substring ...]   (substrings filter workload names)

Each (workload, implementation) runs in a fresh subprocess, so that one's high-water mark never
hides another's. A child reads `ru_maxrss` after its imports and inputs (the baseline) and after
the workload (the peak); the table prints the peak and the growth over the baseline, which is
what the workload itself needed, and for jaxlite also tracemalloc's peak of Python/NumPy
allocations during the workload (XLA's buffers are invisible to tracemalloc, so JAX has none).
Ratios are jaxlite's growth over JAX's: below 1 means jaxlite needs less.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SRC = str(HERE.parent / "src")
N = 10_000_000
MLP_SIZES, MLP_BATCH, MLP_STEPS = (784, 512, 512, 10), 128, 50

# (name, jaxlite's environment or None for JAX): the columns. Tier 1 without and with the native
# tier (numba and LLVM loaded, kernels compiled in the background: their memory is counted).
# The background XLA tier is off in these three and on in `jl-xla-tier` (tier 1 with the native
# tier where numba is, and the XLA tier where jaxlib is: the `xla` extra's configuration; jaxlib,
# its CPU client and the compiled programs are counted, the child waiting for the builds).
IMPLS = [("jaxlite-t0", {"JAXLITE_TIER": "0", "JAXLITE_XLA_TIER": "0"}),
         ("jaxlite-t1", {"JAXLITE_TIER": "1", "JAXLITE_NATIVE": "0", "JAXLITE_XLA_TIER": "0"}),
         ("jl-native", {"JAXLITE_TIER": "1", "JAXLITE_NATIVE": "1", "JAXLITE_XLA_TIER": "0"}),
         ("jl-xla-tier", {"JAXLITE_TIER": "1", "JAXLITE_NATIVE": "1", "JAXLITE_XLA_TIER": "1"}),
         ("jax", None)]


def workloads():
  """Timed workloads for benchmarks/run.py: none (peak memory is measured by running this file,
  each workload in its own process)."""
  return []


# --- the workloads, run inside a child ------------------------------------------------------------

def _mlp(jax, donate: bool):
  jnp = jax.numpy
  import numpy as np
  rng = np.random.default_rng(0)
  params = [(jnp.asarray(rng.standard_normal((m, n), np.float32) / np.float32(np.sqrt(m))),
             jnp.zeros(n, jnp.float32)) for m, n in zip(MLP_SIZES[:-1], MLP_SIZES[1:])]
  x = jnp.asarray(rng.standard_normal((MLP_BATCH, MLP_SIZES[0]), np.float32))
  y = jnp.asarray(rng.integers(0, MLP_SIZES[-1], MLP_BATCH))

  def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
      h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

  def step(params, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return value, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

  step = jax.jit(step, donate_argnums=0 if donate else ())

  def run():
    nonlocal params
    for _ in range(MLP_STEPS):
      value, params = step(params, x, y)
    return float(value)
  return run


def _chain(jax):
  jnp = jax.numpy
  import numpy as np
  # Made without a float64 temporary, which would raise the baseline's high-water mark.
  x = jnp.asarray(np.random.default_rng(0).standard_normal(N, np.float32))
  f = jax.jit(lambda x: jnp.tanh(x) * jnp.exp(x) + jnp.sin(x))

  def run():
    out = None
    for _ in range(3):
      out = f(x)
    return float(out[0])
  return run


def _normal(jax):
  key = jax.random.key(0)
  f = jax.jit(lambda k: jax.random.normal(k, (N,)))

  def run():
    out = None
    for _ in range(3):
      out = f(key)
    return float(out[0])
  return run


WORKLOADS = {
    "MLP train 784-512-512-10 b128, 50 steps, donated params": lambda jax: _mlp(jax, True),
    "MLP train 784-512-512-10 b128, 50 steps, no donation": lambda jax: _mlp(jax, False),
    "elementwise chain tanh*exp+sin, 10M f32, 3 calls": _chain,
    "jit(random.normal) 10M f32, 3 calls": _normal,
}


def _maxrss_mb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(impl: str, name: str) -> None:
  """Runs one workload and prints its measurements as JSON."""
  if impl == "jax":
    import jax
  else:
    import jaxlite as jax
  run = WORKLOADS[name](jax)
  baseline = _maxrss_mb()
  traced = impl != "jax"
  if traced:
    import tracemalloc
    tracemalloc.start()
  t0 = time.perf_counter()
  check = run()
  wall = time.perf_counter() - t0
  if traced:  # background compiles (native kernels, XLA programs) count once finished
    from jaxlite._src.compiler import background
    background.wait(600)
  peak_traced = tracemalloc.get_traced_memory()[1] / 2**20 if traced else None
  print(json.dumps({"baseline": baseline, "peak": _maxrss_mb(), "traced": peak_traced,
                    "wall": wall, "check": check}))


def measure(impl: str, jl_env, name: str):
  env = dict(os.environ)
  if jl_env is not None:
    if impl == "jl-native" and importlib.util.find_spec("numba") is None:
      return None  # the native extra is not installed
    if impl == "jl-xla-tier" and importlib.util.find_spec("jaxlib") is None:
      return None  # the xla extra is not installed
    env.update(jl_env)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
  r = subprocess.run([sys.executable, __file__, "--child", "jax" if jl_env is None else impl,
                      name], capture_output=True, text=True, env=env, timeout=1800)
  if r.returncode != 0:
    if jl_env is None and "No module named 'jax'" in r.stderr:
      return None
    return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
  return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv) -> None:
  import platform
  import numpy as np
  print(f"# python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cpus; peak RSS (ru_maxrss) per process, MiB")
  print(f"{'workload':58s} {'impl':11s} {'peak':>8s} {'growth':>8s} {'traced':>8s} "
        f"{'wall s':>7s}  {'growth vs jax':>13s}")
  for name in WORKLOADS:
    if argv and not any(s in name for s in argv):
      continue
    rows = {impl: measure(impl, jl_env, name) for impl, jl_env in IMPLS}
    ref = rows.get("jax")
    for impl, _ in IMPLS:
      row = rows[impl]
      if row is None:
        print(f"{name:58s} {impl:11s} {'(not installed)':>8s}")
        continue
      if "error" in row:
        print(f"{name:58s} {impl:11s} error: {row['error'][:80]}")
        continue
      growth = row["peak"] - row["baseline"]
      traced = f"{row['traced']:8.1f}" if row["traced"] is not None else f"{'-':>8s}"
      ratio = ""
      if ref and "error" not in ref and impl != "jax":
        ref_growth = ref["peak"] - ref["baseline"]
        ratio = f"{growth / ref_growth:12.2f}x" if ref_growth > 0.5 else "   (jax ~0)"
      print(f"{name:58s} {impl:11s} {row['peak']:8.1f} {growth:8.1f} {traced} "
            f"{row['wall']:7.2f}  {ratio:>13s}")


if __name__ == "__main__":
  if len(sys.argv) > 1 and sys.argv[1] == "--child":
    sys.path.insert(0, SRC)
    child(sys.argv[2], sys.argv[3])
  else:
    main(sys.argv[1:])
