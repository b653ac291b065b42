"""Fuzzer worker: evaluates a JSON batch of programs in ONE library (jaxlite or real JAX) in the
requested modes and pickles the results: `python fuzz_worker.py {jax|jaxlite} IN.json OUT.pkl
[MODES]`, or `python fuzz_worker.py {jax|jaxlite} --serve` to evaluate batch after batch (one
`IN OUT MODES` line each on stdin, answered by a `done` line) without re-importing the library.

Only this process imports its library, so the two libraries never share state.
"""
from __future__ import annotations

import json
import pickle
import signal
import sys
import warnings

import numpy as np

MODES = ("eager", "jit", "grad", "vmap", "jaxpr")
PER_PROGRAM_S = 60


class Hang(BaseException):
  """A program exceeded its time slot (BaseException so library `except Exception` misses it)."""


def _alarm(signum, frame):
  raise Hang()


def load_library(name: str) -> dict:
  # ml_dtypes first: jaxlite only learns bfloat16 if ml_dtypes is imported before its dtype
  # lattice is first used (a jaxlite defect the fuzzer found; RELIABILITY.md) and we want the
  # campaign to look past it.
  import ml_dtypes  # noqa: F401
  if name == "jax":
    import jax
    import jax.numpy as jnp
    from jax import lax, nn
  else:
    import jaxlite as jax
    import jaxlite.numpy as jnp
    from jaxlite import lax, nn
  return {"jax": jax, "jnp": jnp, "lax": lax, "nn": nn, "np": np}


def np_dtype(name: str):
  if name == "bfloat16":
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)
  return np.dtype(name)


def make_inputs(prog: dict, jnp, batched: bool):
  args, axes = [], []
  for i in prog["inputs"]:
    if i["py"]:
      args.append(i["values"][0])
      axes.append(None)
      continue
    dt = np_dtype(i["dtype"])
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      a = np.array(i["values"], dtype=np.float64 if dt.kind == "f" or dt.name == "bfloat16"
                   else object).astype(dt).reshape(i["shape"])
      if batched:
        b = np.array(i["batch"], dtype=np.float64 if dt.kind == "f" or dt.name == "bfloat16"
                     else object).astype(dt).reshape(i["shape"])
        a = np.stack([a, b])
    args.append(jnp.asarray(a))
    axes.append(0)
  return args, tuple(axes)


def leaf_record(jax, x):
  """(kind, dtype name, shape, weak_type, numpy value) for one output leaf."""
  if not hasattr(x, "dtype"):
    return ("py", type(x).__name__, (), True, np.asarray(x))
  dt = x.dtype
  name = str(dt)
  if "key<" in name:
    x = jax.random.key_data(x)
  return ("arr", name, tuple(x.shape), bool(getattr(x, "weak_type", False)), np.asarray(x))


def error_record(e: BaseException):
  builtin = next((c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"),
                 "BaseException")
  return ("err", type(e).__name__, builtin, str(e)[:400])


def evaluate(lib: str, prog: dict, ns: dict, src: str, hooked: str | None,
             modes=MODES) -> dict:
  jax, jnp = ns["jax"], ns["jnp"]
  jax.config.update("jax_enable_x64", bool(prog["x64"]))
  env = dict(ns)
  exec(src, env)  # noqa: S102 - the program under test
  f = env["f"]
  leaves = jax.tree_util.tree_leaves
  out = {}

  def call(mode, thunk):
    try:
      res = thunk()
      out[mode] = ("ok", res if isinstance(res, str) else [leaf_record(jax, v) for v in
                                                            leaves(res)])
    except Hang:
      out[mode] = ("err", "Timeout", "Timeout", "program exceeded its time slot")
    except Exception as e:  # noqa: BLE001 - the error class is what is compared
      out[mode] = error_record(e)

  args, axes = make_inputs(prog, jnp, batched=False)
  if "eager" in modes or "grad" in modes:  # grad runs only where eager gives a float result
    call("eager", lambda: f(*args))
  if "jit" in modes:
    call("jit", lambda: jax.jit(f)(*args))
  if "jaxpr" in modes:
    call("jaxpr", lambda: str(jax.make_jaxpr(f)(*args)))
  if "grad" in modes:
    first = prog["inputs"][0]
    eager = out["eager"]
    float_out = (eager[0] == "ok" and eager[1] and eager[1][0][1] in
                 ("float16", "bfloat16", "float32", "float64"))
    if not first["py"] and first["dtype"] in ("float16", "bfloat16", "float32", "float64") \
        and float_out:
      def loss(*a):
        return jnp.sum(leaves(f(*a))[0])
      call("grad", lambda: jax.grad(loss)(*args))
    else:
      out["grad"] = ("skip",)
  if "vmap" in modes:
    bargs, _ = make_inputs(prog, jnp, batched=True)
    call("vmap", lambda: jax.vmap(f, in_axes=axes)(*bargs))
  # JAX's eager intermediates: magnitudes for the tolerance model (jaxpr text needs none)
  if hooked is not None and set(modes) - {"jaxpr"}:
    mags = {}

    def T(name, v):
      try:
        a0 = np.asarray(v)
        a = a0.astype(np.float64)
        fin = np.abs(a[np.isfinite(a)])
        # the dtype lets the tolerance model count each step's ulps in its own precision
        mags[name] = (float(fin.max(initial=0.0)), int(a.size), str(a0.dtype))
      except Exception:  # noqa: BLE001 - keys and other non-numeric values carry no magnitude
        pass
      return v
    env2 = dict(ns, T=T)
    try:
      exec(hooked, env2)  # noqa: S102
      env2["f"](*args)
    except Exception:  # noqa: BLE001
      pass
    out["mags"] = mags
  return out


def run_batch(lib: str, ns: dict, src_path: str, dst_path: str, modes=MODES):
  from fuzz_gen import render
  with open(src_path) as fh:
    progs = json.load(fh)
  results = {}
  for prog in progs:
    signal.alarm(PER_PROGRAM_S)
    try:
      results[prog["id"]] = evaluate(lib, prog, ns, render(prog),
                                     render(prog, hook=True) if lib == "jax" else None, modes)
    except Hang:
      results[prog["id"]] = {m: ("err", "Timeout", "Timeout", "hang") for m in modes}
    except Exception as e:  # noqa: BLE001 - a crash of the harness on one program
      results[prog["id"]] = {m: error_record(e) for m in modes}
    finally:
      signal.alarm(0)
  with open(dst_path + ".part", "wb") as fh:
    pickle.dump(results, fh)
  import os
  os.replace(dst_path + ".part", dst_path)


def main(argv):
  lib = argv[1]
  sys.path.insert(0, __file__.rsplit("/", 1)[0])
  warnings.simplefilter("ignore")
  ns = load_library(lib)
  signal.signal(signal.SIGALRM, _alarm)
  if argv[2] == "--serve":  # one batch per stdin line; the library stays imported (and warm)
    reply, sys.stdout = sys.stdout, sys.stderr  # programs' prints must not look like replies
    for line in sys.stdin:
      src_path, dst_path, modes = line.split()
      run_batch(lib, ns, src_path, dst_path, tuple(modes.split(",")))
      print("done", file=reply, flush=True)
    return
  modes = tuple(argv[4].split(",")) if len(argv) > 4 else MODES
  run_batch(lib, ns, argv[2], argv[3], modes)


if __name__ == "__main__":
  main(sys.argv)
