"""The examples that train models with JAX libraries (optax, equinox, flax.nnx) run on jaxlite,
lower their loss, and (where real JAX is installed too) print JAX's loss curve to float32
tolerance.

The libraries are found on sys.path or in $JAXLITE_ECOSYSTEM_SITE (a site-packages directory,
e.g. the venv that tools/ecosystem_tests.sh builds); a test skips, naming the library, without it.
"""
import importlib.machinery
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
EXTRA = [p for p in os.environ.get("JAXLITE_ECOSYSTEM_SITE", "").split(os.pathsep) if p]

# (example file, the libraries it needs, short-run arguments)
EXAMPLES = [
    ("optax_mlp.py", ("optax",), ["--steps", "40"]),
    ("equinox_mlp.py", ("equinox", "optax"), ["--steps", "40"]),
    ("flax_nnx.py", ("flax", "optax"), ["--steps", "40"]),
]
# How far the short run must bring the loss down (last / first); equinox's example uses a small
# learning rate (see ECOSYSTEM.md) and falls to ~0.80 of its start in 40 steps, on JAX too.
MAX_FALL_RATIO = {"equinox_mlp.py": 0.9}
STEP_RE = re.compile(r"^step\s+(\d+)\s+loss\s+([-+0-9.eE]+|nan|inf)$", re.M)


def _have(name):
  return importlib.machinery.PathFinder.find_spec(name, [*EXTRA, *sys.path]) is not None


def _run(example, args, on_jaxlite):
  path = os.path.join(ROOT, "examples", example)
  cmd = [sys.executable, "-m", "jaxlite", path, *args] if on_jaxlite else [sys.executable, path,
                                                                            *args]
  env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, *EXTRA]), "OPENBLAS_NUM_THREADS": "1",
         "JAX_PLATFORMS": "cpu"}
  r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
  assert r.returncode == 0, f"{example} failed:\n{r.stdout}\n{r.stderr[-4000:]}"
  steps = [(int(i), float(v)) for i, v in STEP_RE.findall(r.stdout)]
  assert steps, f"{example} printed no loss curve:\n{r.stdout}"
  assert re.search(r"wall_time [0-9.]+s", r.stdout), r.stdout
  return steps


@pytest.mark.parametrize("example,libs,args", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_trains_on_jaxlite(example, libs, args):
  for lib in libs:
    if not _have(lib):
      pytest.skip(f"{lib} is not installed (install it with --no-deps, see ECOSYSTEM.md, or set "
                  "JAXLITE_ECOSYSTEM_SITE)")
  steps = _run(example, args, on_jaxlite=True)
  losses = [v for _, v in steps]
  assert all(v == v and v < float("inf") for v in losses), steps
  ratio = MAX_FALL_RATIO.get(example, 0.7)
  assert losses[-1] < ratio * losses[0], f"{example}: loss did not fall: {steps}"


@pytest.mark.parametrize("example,libs,args", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_matches_real_jax(example, libs, args):
  for lib in ("jax", *libs):
    if not _have(lib):
      pytest.skip(f"{lib} is not installed")
  ours = _run(example, args, on_jaxlite=True)
  theirs = _run(example, args, on_jaxlite=False)
  assert [i for i, _ in ours] == [i for i, _ in theirs]
  for (i, a), (_, b) in zip(ours, theirs):
    assert abs(a - b) <= 1e-5 * max(1.0, abs(b)) + 1e-6, f"step {i}: jaxlite {a} vs JAX {b}"
