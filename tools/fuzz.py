"""Differential fuzzer: random jnp/lax/nn/random programs run in jaxlite and in real JAX (separate
worker processes, batched), compared mode by mode; mismatches are minimised and written as repros.

  python tools/fuzz.py --seed 0 --n 200 [--mode eager,jit,grad,vmap,jaxpr] [--out DIR] [--jobs 1]

Compared exactly: result structure, shapes, dtypes, weak types, raised error classes, jaxpr text;
values to JAX-COMPAT §10's tolerances (`step_tol`). The generator is tools/fuzz_gen.py and
tools/fuzz_ops.py, the worker tools/fuzz_worker.py; documented differences (JAX bugs,
backend-dependent behaviour) are tests/fuzz/known_differences.py.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import os
import pickle
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))

from fuzz_gen import generate, one_line, render  # noqa: E402
from fuzz_worker import MODES  # noqa: E402

_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
_TINY = {"float16": 6.1e-5, "bfloat16": 1.2e-38, "float32": 1.2e-38, "float64": 2.3e-308}


# ----- running the workers ---------------------------------------------------------------------

def _worker_env():
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "src"), env.get("PYTHONPATH", "")])
  env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", JAX_PLATFORMS="cpu",
             XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
             TF_CPP_MIN_LOG_LEVEL="3")
  return env


def _crash(progs, modes, why):
  crash = ("err", "WorkerCrash", "WorkerCrash", why[-400:])
  return {pr["id"]: {m: crash for m in modes} for pr in progs}


def run_workers(progs: list[dict], timeout: float = 1800, modes=MODES) -> tuple[dict, dict]:
  """Evaluate `progs` in a fresh JAX worker and a fresh jaxlite worker (concurrently)."""
  with tempfile.TemporaryDirectory(prefix="fuzz") as d:
    src = os.path.join(d, "progs.json")
    with open(src, "w") as fh:
      json.dump(progs, fh)
    procs = {}
    for lib in ("jax", "jaxlite"):
      procs[lib] = subprocess.Popen(
        [sys.executable, os.path.join(TOOLS, "fuzz_worker.py"), lib, src,
         os.path.join(d, f"{lib}.pkl"), ",".join(modes)], env=_worker_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out = {}
    for lib, p in procs.items():
      try:
        _, err = p.communicate(timeout=timeout)
      except subprocess.TimeoutExpired:
        p.kill()
        err = b"worker timed out"
      path = os.path.join(d, f"{lib}.pkl")
      if p.returncode != 0 or not os.path.exists(path):
        out[lib] = _crash(progs, modes, err.decode(errors="replace"))
      else:
        with open(path, "rb") as fh:
          out[lib] = pickle.load(fh)
  return out["jax"], out["jaxlite"]


class WorkerPair:
  """A JAX worker and a jaxlite worker kept alive across batches (`fuzz_worker.py --serve`):
  the libraries are imported once and JAX's in-memory compilation caches stay warm. A worker
  that crashes or times out is killed, its batch reported as WorkerCrash, and restarted lazily.
  The programs of a batch already share a process, so sharing one across batches changes
  nothing the comparison relies on; repros are still re-checked in fresh workers."""

  def __init__(self):
    self.dir = tempfile.mkdtemp(prefix="fuzzpool")
    self.procs = {}
    self.n = 0

  def _proc(self, lib):
    p = self.procs.get(lib)
    if p is None or p.poll() is not None:
      err = open(os.path.join(self.dir, f"{lib}.err"), "wb")
      p = self.procs[lib] = subprocess.Popen(
        [sys.executable, os.path.join(TOOLS, "fuzz_worker.py"), lib, "--serve"],
        env=_worker_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
        text=True)
    return p

  def _err_tail(self, lib):
    try:
      with open(os.path.join(self.dir, f"{lib}.err"), "rb") as fh:
        return fh.read()[-400:].decode(errors="replace")
    except OSError:
      return ""

  def run(self, progs, timeout: float = 1800, modes=MODES):
    self.n += 1
    src = os.path.join(self.dir, f"b{self.n}.json")
    with open(src, "w") as fh:
      json.dump(progs, fh)
    dst = {lib: os.path.join(self.dir, f"b{self.n}.{lib}.pkl") for lib in ("jax", "jaxlite")}
    procs = {}
    for lib in ("jax", "jaxlite"):
      p = self._proc(lib)
      try:
        p.stdin.write(f"{src} {dst[lib]} {','.join(modes)}\n")
        p.stdin.flush()
      except OSError:
        pass
      procs[lib] = p
    out, deadline = {}, time.time() + timeout
    for lib, p in procs.items():
      reply = []
      reader = threading.Thread(target=lambda: reply.append(p.stdout.readline()), daemon=True)
      reader.start()
      reader.join(max(1.0, deadline - time.time()))
      if reply and reply[0].strip() == "done" and os.path.exists(dst[lib]):
        with open(dst[lib], "rb") as fh:
          out[lib] = pickle.load(fh)
        os.remove(dst[lib])
      else:
        p.kill()
        p.wait()
        self.procs.pop(lib, None)
        out[lib] = _crash(progs, modes, "worker timed out" if not reply else self._err_tail(lib))
    os.remove(src)
    return out["jax"], out["jaxlite"]

  def close(self):
    for p in self.procs.values():
      try:
        p.stdin.close()
        p.wait(timeout=30)
      except (OSError, subprocess.TimeoutExpired):
        p.kill()
    shutil.rmtree(self.dir, ignore_errors=True)


# ----- tolerances (JAX-COMPAT §10) -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Tol:
  ulps: float = 0.0
  atol: float = 0.0
  checked: bool = True

  @property
  def exact(self):
    return self.checked and not self.ulps and not self.atol


EXACT, UNCHECKED = Tol(), Tol(checked=False)


def _mag(mags, name, prog):
  if name in mags:
    return mags[name][0]
  for i in prog["inputs"]:
    if i["name"] == name:
      vals = [abs(float(v)) for v in i["values"] + i["batch"] if math.isfinite(float(v))]
      return max(vals, default=0.0)
  return 0.0


def step_tol(op: dict, ins: list[Tol], in_mags: list[float], out_eps: float, mode: str) -> Tol:
  """How far jaxlite's value of one op may be from JAX's, given its inputs' tolerances."""
  if not all(t.checked for t in ins):
    return UNCHECKED
  exact_in = all(t.exact for t in ins)
  cls = op["cls"]
  if cls == "struct":
    return Tol(sum(t.ulps for t in ins), sum(t.atol for t in ins))
  if cls in ("exact", "disc"):
    return EXACT if exact_in else UNCHECKED
  if cls == "arith":
    own = op["ulps"] + (1.0 if mode in ("jit", "grad") else 0.0)
    if exact_in:
      return Tol(own)
    t = op["tmpl"]
    if any(s in t for s in (" + ", " - ", "add(", "subtract(", "sub(", "lax.cond",
                            "switch", "at[")):
      atol = sum(t_.ulps * out_eps * m + t_.atol for t_, m in zip(ins, in_mags))
      return Tol(own + max(t_.ulps for t_ in ins), atol)
    if all(not t_.atol for t_ in ins) and any(s in t for s in ("*", "/", "multiply(", "mul(",
                                                               "divide(", "square(")):
      return Tol(own + sum(t_.ulps for t_ in ins))
    return UNCHECKED
  if cls == "transc":
    if not exact_in:
      return UNCHECKED
    if "truncated_normal(" in op["tmpl"]:
      # sqrt(2) * erfinv(u) near 0: an ulp of u (about 1) is an absolute error; its bound 2.0
      return Tol(op["ulps"], op["ulps"] * out_eps * 2.0)
    if "gelu(" in op["tmpl"] or "log_softmax(" in op["tmpl"]:
      # x/2 * (1 + tanh(...)) cancels for negative x: tanh's ulps (of ~1) become an absolute
      # error scaled by |x| (seed 531: gelu(-2.5) is 32 ulps off in JAX, 47 in jaxlite).
      # log_softmax's (x - max) - log(sum(exp(x - max))) cancels too: an ulp of the log (up to
      # ~|x|) is absolute (seed 3005: uint16 [65535, 9, 8] gives 10 - 10.313295; the f32 log
      # is half an ulp off each way in JAX and jaxlite, 25 ulps of the result apart)
      floor = 1.0 if "log_softmax(" in op["tmpl"] else 0.0  # the log of a sum >= 1
      return Tol(op["ulps"], op["ulps"] * out_eps * max(max(in_mags, default=1.0), floor))
    return Tol(op["ulps"])
  # reductions: rtol 1e-5 of the sum of magnitudes (bounded by max|x| * terms per output)
  scale = op["red"] * math.prod(max(m, 1e-30) for m in in_mags[:2] or [1.0])
  extra = sum(t.ulps * out_eps + t.atol for t in ins) * scale
  return Tol(1.0, 1e-5 * scale * (16 if out_eps > 1e-6 else 1) + extra)


def rescale_tol(t: Tol, eps_in: float, eps_out: float) -> Tol:
  """A tolerance counted in ulps of a value's dtype (`eps_in`), counted again in ulps of the
  dtype a cast takes it to (`eps_out`): a bfloat16 ulp is 2**16 float32 ulps. Narrowing adds
  one ulp of the coarser dtype: values a fraction of an ulp apart can round to neighbours."""
  if not t.checked or t.exact or eps_in == eps_out:
    return t
  return Tol(t.ulps * eps_in / eps_out + (1.0 if eps_out > eps_in else 0.0), t.atol)


def _dtype_of(mags, name, prog):
  if name in mags and len(mags[name]) > 2:
    return mags[name][2]
  return next((i["dtype"] for i in prog["inputs"] if i["name"] == name), None)


def output_tols(prog: dict, mags: dict, mode: str, out_dtypes: list[str]) -> list[Tol]:
  """Each output's tolerance, built op by op. Each step counts ulps in its own dtype (JAX's
  eager dtype, recorded with the magnitudes; the output dtype where none was recorded), so a
  half-precision step followed by a cast to float32 keeps its half-precision ulp."""
  tols = {i["name"]: EXACT for i in prog["inputs"]}
  default = _EPS.get(out_dtypes[0] if out_dtypes else "float32", 2.0**-23)
  eps_of = {}
  for name in [i["name"] for i in prog["inputs"]] + [op["out"] for op in prog["ops"]]:
    eps_of[name] = _EPS.get(_dtype_of(mags, name, prog), None)
  for op in prog["ops"]:
    eps = eps_of[op["out"]] or default
    ins = [rescale_tol(tols[a], eps_of[a] or eps, eps) for a in op["args"]]
    in_mags = [_mag(mags, a, prog) for a in op["args"]]
    tols[op["out"]] = step_tol(op, ins, in_mags, eps, mode)
  outs = [tols[o] for o in prog["outs"]]
  if mode == "grad":  # derivative rules add their own rounding: a loose, magnitude-scaled bound
    t = outs[0]
    if not t.checked:
      return [UNCHECKED]
    n = len(prog["ops"]) + 1
    big = max([m for m, *_ in mags.values()] + [_mag(mags, prog["inputs"][0]["name"], prog),
                                               1.0])
    inexact = any(op["cls"] in ("transc", "reduce", "arith") for op in prog["ops"])
    return [Tol(t.ulps + 4 * n, (t.atol + 1e-5 * n * big) if inexact else 0.0)]
  return outs


# ----- comparing ------------------------------------------------------------------------------

@dataclasses.dataclass
class Mismatch:
  prog: dict
  mode: str
  kind: str
  detail: str
  known: str | None = None

  @property
  def signature(self):
    return (self.mode, self.kind, self.detail.startswith(JIT_LEAVES_EAGER))


def _f64(x):
  return np.asarray(x).astype(np.float64)


def values_close(want: np.ndarray, got: np.ndarray, dtype: str, tol: Tol) -> str | None:
  if not tol.checked or want.size == 0:
    return None
  if dtype in ("bool",) or dtype.startswith(("int", "uint")) or "key" in dtype:
    return None if np.array_equal(want, got) else "values differ"
  if dtype.startswith("complex"):
    w, g = want.astype(np.complex128), got.astype(np.complex128)
    return None if np.allclose(w, g, rtol=1e-5, equal_nan=True) else "values differ"
  w, g = _f64(want), _f64(got)
  if tol.exact:
    num = ~np.isnan(w)  # -0.0 must match; a NaN's sign bit carries no meaning
    ok = np.array_equal(w, g, equal_nan=True) and np.array_equal(np.signbit(w[num]),
                                                                 np.signbit(g[num]))
    return None if ok else "values differ (exact)"
  wf, gf = np.isfinite(w), np.isfinite(g)
  bad = (wf != gf) | (~wf & ~gf & ~((w == g) | (np.isnan(w) & np.isnan(g))))
  eps = _EPS.get(dtype, 2.0**-23)
  allowed = tol.ulps * eps * np.maximum(np.abs(w), np.abs(g)) + tol.atol + _TINY.get(dtype, 0)
  both = wf & gf
  with np.errstate(invalid="ignore"):
    bad |= both & ~(np.abs(w - g) <= allowed)
  if not bad.any():
    return None
  k = tuple(np.argwhere(bad)[0]) if w.ndim else ()
  return f"values differ beyond {tol} at {list(k)}: jax {w[k]!r} jaxlite {g[k]!r}"


def _short(x, n=300):
  s = repr(x)
  return s if len(s) <= n else s[:n] + "..."


def compare_mode(prog: dict, mode: str, want, got, mags: dict) -> Mismatch | None:
  def mm(kind, detail):
    return Mismatch(prog, mode, kind, detail)
  if want[0] == "skip" or got[0] == "skip":
    return None if want[0] == got[0] else mm("grad-skip", f"jax {want[0]} jaxlite {got[0]}")
  if want[0] == "err" and want[1] == "Timeout":
    return None  # JAX ran out of its time slot (a loaded machine): nothing to compare with
  if "WorkerCrash" in (want[1] if want[0] == "err" else None, got[1] if got[0] == "err" else None):
    # a worker that died (or never started: no jax, no numpy) compared nothing; two crashes
    # must not read as two equal errors
    return mm("worker-crash", (want[3] if want[0] == "err" else got[3])[-240:])
  if got[0] == "err" and got[1] == "Timeout":
    return mm("timeout", got[3])
  if want[0] == "err":
    if got[0] != "err":
      return mm("missing-error", f"JAX raised {want[1]}: {want[3][:200]}; jaxlite returned "
                                 + _short(got[1], 200))
    if want[1] != got[1]:
      return mm("error-class", f"JAX {want[1]}: {want[3][:160]} | jaxlite {got[1]}: "
                               f"{got[3][:160]}")
    return None
  if got[0] == "err":
    return mm("unexpected-error", f"jaxlite raised {got[1]}: {got[3][:240]}; JAX returned "
                                  + _short(want[1], 200))
  w, g = want[1], got[1]
  if isinstance(w, str):
    if w == got[1]:
      return None
    wl, gl = w.splitlines(), g.splitlines()
    diff = next((f"jax: {a.strip()} | jaxlite: {b.strip()}" for a, b in zip(wl, gl) if a != b),
                f"{len(wl)} vs {len(gl)} lines")
    return mm("jaxpr-text", diff)
  if len(w) != len(g):
    return mm("structure", f"{len(w)} leaves in JAX, {len(g)} in jaxlite")
  tols = output_tols(prog, mags, mode, [r[1] for r in w])
  for k, (a, b) in enumerate(zip(w, g)):
    if a[2] != b[2]:
      return mm("shape", f"leaf {k}: jax {a[2]} jaxlite {b[2]}")
    if a[1] != b[1]:
      return mm("dtype", f"leaf {k}: jax {a[1]} jaxlite {b[1]}")
    if a[3] != b[3]:
      return mm("weak-type", f"leaf {k} ({a[1]}): jax weak={a[3]} jaxlite weak={b[3]}")
    tol = tols[k] if k < len(tols) else UNCHECKED
    msg = values_close(np.asarray(a[4]), np.asarray(b[4]), a[1], tol)
    if msg:
      return mm("value", f"leaf {k} {a[1]}{list(a[2])}: {msg}")
  return None


JIT_LEAVES_EAGER = "JAX's jit differs from JAX's eager, which jaxlite's jit matches: "


def compare(prog: dict, rj: dict, rl: dict, modes) -> list[Mismatch]:
  out = []
  for mode in modes:
    if mode not in rj or mode not in rl:
      continue
    m = compare_mode(prog, mode, rj[mode], rl[mode], rj.get("mags", {}))
    if m is not None and mode == "jit" and m.kind == "value" and "eager" in rj:
      # XLA rewrites a jitted program (drops bfloat16/float16 round trips, contracts to FMA):
      # when JAX's own jit leaves JAX's eager answer and jaxlite's jit keeps it, say so, so that
      # the documented difference `xla-jit-precision` can recognise it
      mags = rj.get("mags", {})
      if (compare_mode(prog, mode, rj["eager"], rl[mode], mags) is None
          and compare_mode(prog, mode, rj["eager"], rj[mode], mags) is not None):
        m.detail = JIT_LEAVES_EAGER + m.detail
    if m is not None:
      if mode == "grad" and m.kind == "grad-skip" and any(x.mode == "eager" for x in out):
        continue
      if mode == "grad" and m.kind == "grad-skip":
        # grad runs where the eager result is a float: a grad-only run (no eager mode) says
        # which side's eager run failed, so documented eager errors are recognised here too
        m.detail += "".join(f"; {who} eager raised {r[1]}: {r[3][:200]}"
                            for who, r in (("JAX", rj.get("eager")), ("jaxlite", rl.get("eager")))
                            if r is not None and r[0] == "err")
      out.append(m)
  return out


def classify_known(m: Mismatch) -> str | None:
  try:
    from known_differences import KNOWN
  except ImportError:
    return None
  line = one_line(m.prog, batch=m.mode == "vmap")  # vmap ran on the batch rows too
  for entry in KNOWN:
    if entry.matches(m.mode, m.kind, m.detail, line):
      return entry.name
  return None


# ----- minimising ----------------------------------------------------------------------------

def _prune(prog: dict) -> dict:
  """Drop ops and inputs the outputs do not use."""
  need = set(prog["outs"])
  ops = []
  for op in reversed(prog["ops"]):
    if op["out"] in need:
      ops.append(op)
      need.update(op["args"])
  ops.reverse()
  inputs = [i for i in prog["inputs"] if i["name"] in need]
  if not inputs:
    inputs = prog["inputs"][:1]
  return dict(prog, ops=ops, inputs=inputs)


def _subst(op, old, new):
  return dict(op, args=[new if a == old else a for a in op["args"]])


def candidates(prog: dict):
  """Smaller variants of a program: fewer ops, fewer outputs, smaller inputs."""
  ops = prog["ops"]
  if len(prog["outs"]) > 1:
    for o in prog["outs"]:
      yield _prune(dict(prog, outs=[o]))
  for k in range(len(ops) - 1):  # end the program at an earlier op
    yield _prune(dict(prog, outs=[ops[k]["out"]]))
  for k, op in enumerate(ops):  # bypass one op
    for a in dict.fromkeys(op["args"]):
      rest = [_subst(o, op["out"], a) for o in ops[k + 1:]]
      outs = [a if o == op["out"] else o for o in prog["outs"]]
      yield _prune(dict(prog, ops=ops[:k] + rest, outs=outs))
  for n, inp in enumerate(prog["inputs"]):  # shrink one input along one axis
    shape = inp["shape"]
    if inp["py"]:
      continue
    vals = np.array(inp["values"], dtype=object).reshape(shape)
    bvals = np.array(inp["batch"], dtype=object).reshape(shape)
    for ax, d in enumerate(shape):
      for keep in ([0], list(range(d - 1))) if d > 1 else ():
        nv = np.take(vals, keep, axis=ax)
        nb = np.take(bvals, keep, axis=ax)
        new = dict(inp, shape=list(nv.shape), values=nv.ravel().tolist(),
                   batch=nb.ravel().tolist())
        yield dict(prog, inputs=prog["inputs"][:n] + [new] + prog["inputs"][n + 1:])
    if len(shape) >= 1 and math.prod(shape) == 1:
      new = dict(inp, shape=[], values=inp["values"][:1], batch=inp["batch"][:1])
      yield dict(prog, inputs=prog["inputs"][:n] + [new] + prog["inputs"][n + 1:])


def _size(prog):
  return (len(prog["ops"]), sum(math.prod(i["shape"]) + len(i["shape"]) for i in prog["inputs"]),
          len(prog["inputs"]))


def minimise(m: Mismatch, rounds: int = 10, pair: WorkerPair | None = None) -> Mismatch:
  """Greedily shrink `m.prog` while the same (mode, kind) mismatch persists. Candidates run only
  in the mismatch's mode, in `pair` (warm workers) when given."""
  best = m
  # a jit mismatch that JAX's own eager disagrees with is classified against eager: keep it
  run_modes = ("eager", m.mode) if m.detail.startswith(JIT_LEAVES_EAGER) else (m.mode,)
  evaluate = (lambda ps: pair.run(ps, 900, run_modes)) if pair else (
    lambda ps: run_workers(ps, 900, run_modes))
  for r in range(rounds):
    cands = []
    seen = set()
    for c in candidates(best.prog):
      key = json.dumps([c["ops"], c["inputs"], c["outs"]], sort_keys=True, default=str)
      if key not in seen and _size(c) < _size(best.prog):
        seen.add(key)
        cands.append(dict(c, id=len(cands)))
    if not cands:
      break
    rj, rl = evaluate(cands)
    found = []
    for c in cands:
      ms = compare(c, rj[c["id"]], rl[c["id"]], [m.mode])
      found += [x for x in ms if x.signature == m.signature]
    if not found:
      break
    best = min(found, key=lambda x: _size(x.prog))
  shrunk = best is not m
  best = dataclasses.replace(best, prog=dict(best.prog, id=m.prog["id"]))
  if shrunk:  # a repro must stand alone: recheck the program in fresh workers
    rj, rl = run_workers([best.prog], 900, run_modes)
    pid = best.prog["id"]
    if not any(x.signature == m.signature for x in compare(best.prog, rj[pid], rl[pid],
                                                           [m.mode])):
      best.detail += " [NOT reproduced standalone: depends on earlier programs in its batch]"
  return best


# ----- repro files ---------------------------------------------------------------------------

_CALL = {
  "eager": "f(*ARGS)", "jit": "jax.jit(f)(*ARGS)", "jaxpr": "jax.make_jaxpr(f)(*ARGS)",
  "grad": "jax.grad(lambda *a: jnp.sum(jax.tree_util.tree_leaves(f(*a))[0]))(*ARGS)",
  "vmap": "jax.vmap(f, in_axes=AXES)(*BARGS)",
}


def _lit(v):
  if isinstance(v, float) and not math.isfinite(v):
    return "float('nan')" if v != v else f"float('{'-' if v < 0 else ''}inf')"
  return repr(v)


def repro_source(m: Mismatch) -> str:
  prog = m.prog
  lines = [f'"""jaxlite/JAX fuzzer repro (seed program {prog["seed"]}): {m.mode} {m.kind}.',
           "", m.detail.replace('"""', "'''"), "",
           "Run `python THIS.py` for JAX's answer, `python THIS.py jaxlite` for jaxlite's.",
           '"""', "import sys", "", "import ml_dtypes  # noqa: F401", "import numpy as np", "",
           "if sys.argv[1:] == ['jaxlite']:",
           "  import jaxlite as jax", "  import jaxlite.numpy as jnp",
           "  from jaxlite import lax, nn", "else:", "  import jax", "  import jax.numpy as jnp",
           "  from jax import lax, nn", "",
           f"jax.config.update('jax_enable_x64', {bool(prog['x64'])})", "", render(prog)]
  args, bargs, axes = [], [], []
  for i in prog["inputs"]:
    if i["py"]:
      args.append(_lit(i["values"][0]))
      bargs.append(args[-1])
      axes.append("None")
      continue
    dt = "ml_dtypes.bfloat16" if i["dtype"] == "bfloat16" else f"np.{i['dtype']}"
    vals = "[" + ", ".join(_lit(v) for v in i["values"]) + "]"
    bv = "[" + ", ".join(_lit(v) for v in i["batch"]) + "]"
    args.append(f"jnp.asarray(np.array({vals}, dtype={dt}).reshape({tuple(i['shape'])}))")
    bargs.append(f"jnp.asarray(np.array([{vals}, {bv}], dtype={dt})"
                 f".reshape({(2,) + tuple(i['shape'])}))")
    axes.append("0")
  lines += [f"ARGS = [{', '.join(args)}]"]
  if m.mode == "vmap":
    lines += [f"BARGS = [{', '.join(bargs)}]", f"AXES = ({', '.join(axes)},)"]
  lines += [f"MODE = {m.mode!r}", "try:", f"  out = {_CALL[m.mode]}", "except Exception as e:",
            "  print('raises', type(e).__name__, e)", "else:",
            "  for leaf in [out] if MODE == 'jaxpr' else jax.tree_util.tree_leaves(out):",
            "    if hasattr(leaf, 'dtype'):",
            "      print(leaf.dtype, leaf.shape, 'weak' if leaf.weak_type else '', repr(leaf))",
            "    else:", "      print(leaf)", ""]
  return "\n".join(lines)


def write_repro(m: Mismatch, outdir: str) -> str:
  os.makedirs(outdir, exist_ok=True)
  name = f"repro_s{m.prog['seed']}_{m.mode}_{m.kind}.py"
  path = os.path.join(outdir, name)
  with open(path, "w") as fh:
    fh.write(repro_source(m))
  return path


# ----- the campaign --------------------------------------------------------------------------

def fuzz(seed: int, n: int, modes=MODES, batch: int = 40, jobs: int = 1, max_ops: int = 4,
         log=None, pairs: list | None = None, float_inputs: bool = False, wide: bool = True):
  """Generate and compare `n` programs; (mismatches, programs compared per mode). `pairs`: one
  WorkerPair per job, kept warm across batches (made and closed here when not given)."""
  progs = generate(seed, n, max_ops=max_ops, float_inputs=float_inputs, wide=wide)
  batches = [progs[i:i + batch] for i in range(0, len(progs), batch)]
  mismatches, counts = [], collections.Counter()
  own = pairs is None
  pairs = pairs if pairs is not None else [WorkerPair() for _ in range(max(1, jobs))]
  free = queue.Queue()
  for p in pairs:
    free.put(p)

  def one(b):
    pair = free.get()
    try:
      return b, pair.run(b, modes=modes)
    finally:
      free.put(pair)
  try:
    with ThreadPoolExecutor(len(pairs)) as pool:
      for b, (rj, rl) in pool.map(one, batches):
        for p in b:
          for mode in modes:
            res = rj[p["id"]].get(mode, ("skip",))
            mine = rl[p["id"]].get(mode, ("skip",))
            if res[:2] == ("err", "Timeout"):  # not compared: counted apart
              counts["jax-timeout"] += 1
            elif ("err", "WorkerCrash") in (res[:2], mine[:2]):
              counts["worker-crash"] += 1
            elif res[0] != "skip":
              counts[mode] += 1
          for m in compare(p, rj[p["id"]], rl[p["id"]], modes):
            m.known = classify_known(m)
            mismatches.append(m)
        if log:
          log(f"{len(b)} programs done; {len(mismatches)} mismatches so far")
  finally:
    if own:
      for p in pairs:
        p.close()
  return mismatches, counts


def classify_open(m: Mismatch) -> str | None:
  """The tests/fuzz/open_defects.py entry (a reported, not yet fixed jaxlite defect) `m` is."""
  try:
    from open_defects import OPEN
  except ImportError:
    return None
  line = one_line(m.prog)
  return next((o.name for o in OPEN if o.matches(m.mode, m.kind, m.detail, line)), None)


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--seed", default="0", help="a seed, or several (2,5 or 300-309): the workers "
                  "stay warm from one to the next")
  ap.add_argument("--n", type=int, default=100)
  ap.add_argument("--mode", default=",".join(MODES), help="comma-separated subset of " +
                  ",".join(MODES))
  ap.add_argument("--out", default="fuzz_out", help="directory for repros and the summary")
  ap.add_argument("--batch", type=int, default=40)
  ap.add_argument("--jobs", type=int, default=1)
  ap.add_argument("--max-ops", type=int, default=4)
  ap.add_argument("--float-inputs", action="store_true",
                  help="only floating-point input arrays (the grad campaign: nearly every "
                  "program is differentiable); a different program set from the same seeds")
  ap.add_argument("--no-wide", action="store_true",
                  help="leave out the wide families (tools/fuzz_wide.py: mixed scalars, "
                  "non-arrays, ints into float-only functions, empty reductions, staged "
                  "wrappers): the program set of the campaigns before issue 33")
  ap.add_argument("--minimise", type=int, default=8,
                  help="minimise at most this many mismatches (one per (mode, kind, op))")
  a = ap.parse_args(argv)
  modes = tuple(a.mode.split(","))
  seeds = []
  for part in a.seed.split(","):
    lo, _, hi = part.partition("-")
    seeds += list(range(int(lo), int(hi or lo) + 1))
  pairs = [WorkerPair() for _ in range(max(1, a.jobs))]
  try:
    rc = 0
    for seed in seeds:
      rc |= _campaign(argparse.Namespace(**dict(vars(a), seed=seed)), modes, pairs, time.time())
    return rc
  finally:
    for p in pairs:
      p.close()


def _campaign(a, modes, pairs, t0):
  ms, counts = fuzz(a.seed, a.n, modes, a.batch, a.jobs, a.max_ops,
                    log=lambda s: print(f"[{time.time() - t0:6.0f}s] {s}", flush=True),
                    pairs=pairs, float_inputs=a.float_inputs, wide=not a.no_wide)
  t_run = time.time() - t0
  os.makedirs(a.out, exist_ok=True)
  summary = {"seed": a.seed, "n": a.n, "seconds": round(time.time() - t0), "counts": counts,
             "run_seconds": round(t_run), "modes": list(modes), "batch": a.batch,
             "load": os.getloadavg()[0], "float_inputs": a.float_inputs,
             "wide": not a.no_wide, "mismatches": []}
  minimised = 0
  groups = {}
  for m in ms:
    groups.setdefault((m.mode, m.kind, m.known), []).append(m)
  for (mode, kind, known), group in sorted(groups.items(), key=lambda kv: str(kv[0])):
    print(f"{mode:6} {kind:17} {len(group):4}  {known or ''}")
    for j, m in enumerate(group):
      small = m
      opened = classify_open(m)  # already reported: minimising it again only costs time
      if not known and not opened and j == 0 and minimised < a.minimise:
        small = minimise(m, pair=pairs[0])
        minimised += 1
        small.known = classify_known(small)
        write_repro(small, a.out)
      summary["mismatches"].append({"mode": m.mode, "kind": m.kind, "known": small.known,
                                    "detail": small.detail, "program": one_line(small.prog),
                                    "minimised": small is not m, "seed": m.prog["seed"]})
  summary["seconds"] = round(time.time() - t0)
  with open(os.path.join(a.out, f"summary_{a.seed}.json"), "w") as fh:
    json.dump(summary, fh, indent=1, default=str)
  print(f"{a.n} programs in {time.time() - t0:.0f}s ({t_run:.0f}s before minimising); "
        f"per mode {dict(counts)}; "
        f"{len(ms)} mismatches ({sum(1 for m in ms if m.known)} documented)")
  return 0 if all(m.known for m in ms) else 1


if __name__ == "__main__":
  sys.exit(main())
