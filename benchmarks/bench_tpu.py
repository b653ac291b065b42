"""Issue 30's accelerator table: the anchor workloads on the default device (the TPU on the TPU
machine), jaxlite's XLA backend beside real JAX, each in its own process (one process at a time
may hold a TPU chip).

  cd <checkout> && PYTHONPATH=src:$PYTHONPATH python benchmarks/bench_tpu.py [--out DIR]

runs `--framework jaxlite` and then `--framework jax` as two child processes, each writing
DIR/<framework>.json (times) and DIR/<framework>.npz (values), then prints the table
(`--compare DIR` prints it again from the files). Without an accelerator both run on the CPU.

A cell is the median time per call, `block_until_ready` included (harness.time_callable).
"first call" is the first call of a freshly jitted function (trace, lower, compile, run) in a
process where nothing of that workload was compiled before; "cached call" and "eager x + 1"
are dispatch overheads on f32[100]. Values: every workload's result is computed once more with
`jax_default_matmul_precision="highest"` on both sides and compared (max |a-b| / max |b|); the
PRNG bits (`random.bits` of key 0, and the 10M normals' first 4096 values' bits through the
same transform) must be identical.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

N = 10_000_000
D_MODEL, HEADS, SEQ, BATCH = 1024, 8, 512, 8


# --- the workloads: each takes the framework module `m` and returns (call, value) ---------------
# `call()` runs one step and waits for it; `value()` is the step's result as NumPy (computed
# under the "highest" matmul precision by the caller).

def _lse(m):
  def f(x):
    mx = m.numpy.max(x, axis=1, keepdims=True)
    return m.numpy.log(m.numpy.sum(m.numpy.exp(x - mx), axis=1)) + mx[:, 0]
  return f


def w_logsumexp(m):
  x = m.numpy.asarray(np.random.default_rng(0).normal(size=(4096, 1024)).astype(np.float32))
  f = m.jit(_lse(m))
  return (lambda: f(x).block_until_ready()), (lambda: [np.asarray(m.jit(_lse(m))(x))])


def w_normals(m):
  key = m.random.key(0)
  f = m.jit(lambda k: m.random.normal(k, (N,)))

  def value():
    bits = m.jit(lambda k: m.random.bits(k, (4096,), np.uint32))(key)
    return [np.asarray(f(key))[:65536], np.asarray(bits)]
  return (lambda: f(key).block_until_ready()), value


def _tes(m):
  return lambda x: m.numpy.tanh(x) * m.numpy.exp(x) + m.numpy.sin(x)


def w_chain(m):
  x = m.numpy.asarray(np.random.default_rng(0).normal(size=N).astype(np.float32))
  f = m.jit(_tes(m))
  return (lambda: f(x).block_until_ready()), (lambda: [np.asarray(m.jit(_tes(m))(x))])


def w_mlp(m):
  import bench_mlp
  params, x, labels = bench_mlp._data()
  step = bench_mlp._jax_step(m)
  jp = m.tree_util.tree_map(m.numpy.asarray, params)
  jx, jl = m.numpy.asarray(x), m.numpy.asarray(labels)

  def value():
    out = bench_mlp._jax_step(m)(jp, jx, jl)
    return [np.asarray(v) for v in m.tree_util.tree_leaves(out)]
  return (lambda: m.block_until_ready(step(jp, jx, jl))), value


def w_per_example(m):
  import bench_vmap
  w, b, xs, ys = bench_vmap._data()
  f = bench_vmap._per_example_grads(m)
  args = [m.numpy.asarray(a) for a in (w, b, xs, ys)]

  def value():
    out = bench_vmap._per_example_grads(m)((args[0], args[1]), args[2], args[3])
    return [np.asarray(v) for v in m.tree_util.tree_leaves(out)]
  return (lambda: m.block_until_ready(f((args[0], args[1]), args[2], args[3]))), value


def w_scan(m):
  import bench_scan
  data = bench_scan._data()
  call = bench_scan._rnn_scan(m, *data)

  def value():
    return [np.asarray(v) for v in m.tree_util.tree_leaves(bench_scan._rnn_scan(m, *data)())]
  return call, value


def _transformer(m):
  """One pre-LayerNorm transformer block (8-head self-attention, 4x MLP with gelu) in bfloat16:
  loss = mean(block(x)^2), its gradient, an SGD update; returns (loss, new params)."""
  jnp = m.numpy
  bf = jnp.bfloat16

  def layer_norm(x, g, b):
    x32 = x.astype(jnp.float32)
    mu = x32.mean(-1, keepdims=True)
    var = ((x32 - mu) ** 2).mean(-1, keepdims=True)
    return ((x32 - mu) * m.lax.rsqrt(var + 1e-5)).astype(bf) * g + b

  def block(p, x):
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    qkv = h @ p["w_qkv"]  # [B, S, 3D]
    q, k, v = jnp.split(qkv, 3, axis=-1)
    split = lambda t: t.reshape(BATCH, SEQ, HEADS, D_MODEL // HEADS).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    s = (q @ k.transpose(0, 1, 3, 2)).astype(jnp.float32) / np.sqrt(D_MODEL // HEADS)
    a = m.nn.softmax(s, axis=-1).astype(bf)
    o = (a @ v).transpose(0, 2, 1, 3).reshape(BATCH, SEQ, D_MODEL)
    x = x + o @ p["w_o"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    return x + m.nn.gelu(h @ p["w_1"]) @ p["w_2"]

  def loss(p, x):
    return jnp.mean(block(p, x).astype(jnp.float32) ** 2)

  def step(p, x):
    val, g = m.value_and_grad(loss)(p, x)
    return val, m.tree_util.tree_map(lambda w, d: (w - 1e-3 * d).astype(bf), p, g)
  return step


def _transformer_data(m):
  rng = np.random.default_rng(0)
  bf = m.numpy.bfloat16
  d = D_MODEL

  def w(*shape):
    return m.numpy.asarray((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
                           ).astype(bf)
  p = {"ln1_g": m.numpy.ones(d, bf), "ln1_b": m.numpy.zeros(d, bf), "w_qkv": w(d, 3 * d),
       "w_o": w(d, d), "ln2_g": m.numpy.ones(d, bf), "ln2_b": m.numpy.zeros(d, bf),
       "w_1": w(d, 4 * d), "w_2": w(4 * d, d)}
  x = m.numpy.asarray(rng.standard_normal((BATCH, SEQ, d)).astype(np.float32)).astype(bf)
  return p, x


def w_transformer(m):
  p, x = _transformer_data(m)
  step = m.jit(_transformer(m))

  def value():
    loss, new = m.jit(_transformer(m))(p, x)
    return [np.asarray(loss)] + [np.asarray(new[k]).astype(np.float32)
                                 for k in ("w_qkv", "w_2")]
  return (lambda: m.block_until_ready(step(p, x))), value


def w_cached(m):
  x = m.numpy.asarray(np.ones(100, np.float32))
  f = m.jit(lambda x: x * 2 + 1)
  return (lambda: f(x).block_until_ready()), (lambda: [np.asarray(f(x))])


def w_eager(m):
  x = m.numpy.asarray(np.ones(100, np.float32))
  return (lambda: (x + 1).block_until_ready()), (lambda: [np.asarray(x + 1)])


ROWS = [
    ("logsumexp (4096,1024) f32, jit", w_logsumexp),
    ("10M normals, jit(random.normal)", w_normals),
    ("tanh*exp+sin 10M f32, jit", w_chain),
    ("MLP train step 784-512-512-10 b128", w_mlp),
    ("per-example grads jit(vmap(grad)) 256x1024", w_per_example),
    ("scan RNN 1000 steps h128 b32", w_scan),
    ("transformer block train step bf16 d1024 h8 s512 b8", w_transformer),
    ("cached jit call x*2+1, f32[100]", w_cached),
    ("eager x + 1, f32[100]", w_eager),
]


def run_framework(name: str, out_dir: pathlib.Path, only=None) -> None:
  if name == "jax":
    import jax as m
  else:
    sys.path.insert(0, str(HERE.parent / "src"))
    import jaxlite as m
  from harness import time_callable
  times, values = {}, {}
  info = {"framework": name, "devices": [str(d) for d in m.devices()],
          "backend": m.default_backend()}
  print(f"# {name}: {info['devices']}", flush=True)
  for i, (row, make) in enumerate(ROWS):
    if only and not any(s in row for s in only):
      continue
    entry = {}
    try:
      t0 = time.perf_counter()
      call, value = make(m)
      call()
      entry["first"] = time.perf_counter() - t0
      entry["median"] = time_callable(call, max_total_s=8.0)
      with m.default_matmul_precision("highest"):
        for j, v in enumerate(value()):
          values[f"{i}_{j}"] = v
    except Exception as err:  # noqa: BLE001 - a failure lands in the table's cell
      entry["error"] = f"{type(err).__name__}: {str(err)[:300]}"
    times[row] = entry
    print(f"{row}: {entry}", flush=True)
  if "jaxlite" in sys.modules:
    import jaxlite
    print("jax imported by the jaxlite process:", "jax" in sys.modules, flush=True)
  info["times"] = times
  (out_dir / f"{name}.json").write_text(json.dumps(info, indent=1))
  np.savez(out_dir / f"{name}.npz", **values)


def _fmt(s):
  if s is None:
    return "-"
  return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def compare(out_dir: pathlib.Path) -> str:
  lite = json.loads((out_dir / "jaxlite.json").read_text())
  real = json.loads((out_dir / "jax.json").read_text())
  lv, jv = np.load(out_dir / "jaxlite.npz"), np.load(out_dir / "jax.npz")
  lines = [f"# jaxlite devices {lite['devices']}, JAX devices {real['devices']}",
           "| workload | jaxlite | JAX | ratio | first call jaxlite | first call JAX | "
           "first ratio | values (max rel diff) |",
           "|---|---|---|---|---|---|---|---|"]
  for i, (row, _) in enumerate(ROWS):
    a, b = lite["times"].get(row), real["times"].get(row)
    if a is None or b is None:
      continue
    if "error" in a or "error" in b:
      lines.append(f"| {row} | {a.get('error', _fmt(a.get('median')))} | "
                   f"{b.get('error', _fmt(b.get('median')))} | | | | | |")
      continue
    diffs = []
    for key in sorted(k for k in jv.files if k.split("_")[0] == str(i)):
      x, y = lv[key] if key in lv.files else None, jv[key]
      if x is None or x.shape != y.shape:
        diffs.append("missing" if x is None else f"shape {x.shape} vs {y.shape}")
      elif y.dtype.kind in "ui":
        diffs.append("bits identical" if np.array_equal(x, y) else
                     f"{np.mean(x != y):.1%} ints differ")
      else:
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        diffs.append(f"{np.max(np.abs(x64 - y64)) / max(np.max(np.abs(y64)), 1e-30):.1e}")
    lines.append(f"| {row} | {_fmt(a['median'])} | {_fmt(b['median'])} | "
                 f"{a['median'] / b['median']:.2f} | {_fmt(a['first'])} | {_fmt(b['first'])} | "
                 f"{a['first'] / b['first']:.2f} | {', '.join(diffs)} |")
  return "\n".join(lines)


def main(argv):
  ap = argparse.ArgumentParser()
  ap.add_argument("--framework", choices=["jaxlite", "jax"])
  ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/bench_tpu")
  ap.add_argument("--compare", action="store_true")
  ap.add_argument("only", nargs="*")
  args = ap.parse_args(argv)
  out = pathlib.Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  if args.framework:
    run_framework(args.framework, out, args.only)
    return
  if not args.compare:
    for fw in ("jaxlite", "jax"):
      t0 = time.perf_counter()
      subprocess.run([sys.executable, __file__, "--framework", fw, "--out", str(out),
                      *args.only], check=False)
      print(f"# {fw} process took {time.perf_counter() - t0:.0f} s", flush=True)
  table = compare(out)
  print(table)
  (out / "table.md").write_text(table + "\n")


if __name__ == "__main__":
  main(sys.argv[1:])
