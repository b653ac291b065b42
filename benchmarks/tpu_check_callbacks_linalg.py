"""Host callbacks and linalg on the default device (the TPU on the TPU machine), jaxlite beside
real JAX, each in its own process (one process at a time may hold a TPU chip).

  cd <checkout> && PYTHONPATH=src:$PYTHONPATH python benchmarks/tpu_check_callbacks_linalg.py \
      [--out DIR]

runs `--framework jaxlite` and then `--framework jax` as child processes, one per group of
cases (callbacks, linalg; each stopped after `--timeout` seconds, so that a hang loses one
group only); each writes DIR/<framework>_<group>.npz (values) and .json (what the callbacks
saw, errors, the device); then every case is compared: callbacks' logs must be equal, values within float
tolerance (both sides under `jax_default_matmul_precision="highest"`; eigenvectors and singular
vectors compared through their reconstructions and up to sign), and a case that raises must
raise on both sides. Exit status 1 when a case differs. Without a TPU both run on the CPU.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import traceback

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
GROUPS = ("callbacks", "linalg")
RNG = np.random.default_rng(0)
A = RNG.standard_normal((6, 6)).astype(np.float32)
SPD = (A @ A.T + 6 * np.eye(6)).astype(np.float32)
TALL = RNG.standard_normal((7, 4)).astype(np.float32)
B = RNG.standard_normal((6, 3)).astype(np.float32)
BATCH = RNG.standard_normal((3, 4, 4)).astype(np.float32)


# --- the cases: each takes the framework module `m` and a log (a list the callbacks append to),
# and returns a list of NumPy values ----------------------------------------------------------

def callback_cases(m):
  jnp, lax = m.numpy, m.lax
  from_io = m.experimental.io_callback

  def c_pure(log):
    f = m.jit(lambda x: m.pure_callback(lambda y: np.asarray(y) * 2,
                                        m.ShapeDtypeStruct((3,), np.float32), jnp.sin(x)))
    return [f(np.arange(3, dtype=np.float32))]

  def c_pure_no_operands(log):
    f = m.jit(lambda x: x + m.pure_callback(lambda: np.float32(7),
                                            m.ShapeDtypeStruct((), np.float32)))
    return [f(np.float32(1))]

  def c_pure_empty_result(log):
    def f(x):
      e, v = m.pure_callback(lambda y: (np.zeros((0, 2), np.float32), np.asarray(y) + 1),
                             (m.ShapeDtypeStruct((0, 2), np.float32),
                              m.ShapeDtypeStruct((2,), np.int32)), x)
      return e, v
    return list(m.jit(f)(np.arange(2, dtype=np.int32)))

  def c_io_ordered(log):
    def f(x):
      for i in range(3):
        from_io(lambda v, i=i: log.append([i, float(v)]), None, x + i, ordered=True)
      return x * 2
    return [m.jit(f)(np.float32(1.5))]

  def c_debug_callback(log):
    def f(x):
      m.debug.callback(lambda v: log.append(np.asarray(v).tolist()), x)
      return x + 1
    return [m.jit(f)(np.arange(4, dtype=np.float32))]

  def c_debug_print(log):
    return [m.jit(lambda x: (m.debug.print("x = {}", x), x * 3)[1])(np.float32(2))]

  def c_in_fori_loop(log):
    def body(i, c):
      m.debug.callback(lambda a, b: log.append([int(a), float(b)]), i, c)
      return c * 2
    return [m.jit(lambda c: lax.fori_loop(0, 4, body, c))(np.float32(1))]

  def c_in_cond(log):
    def f(p, x):
      return lax.cond(p, lambda x: m.pure_callback(lambda v: np.asarray(v) + 100,
                                                    m.ShapeDtypeStruct((), np.float32), x),
                      lambda x: x - 1, x)
    g = m.jit(f)
    return [g(True, np.float32(1)), g(False, np.float32(1))]

  def c_vmap_sequential(log):
    f = m.jit(m.vmap(lambda x: m.pure_callback(
        lambda v: np.asarray(v) ** 2, m.ShapeDtypeStruct((), np.float32), x,
        vmap_method="sequential")))
    return [f(np.arange(5, dtype=np.float32))]

  def c_vmap_expand_dims(log):
    f = m.jit(m.vmap(lambda x: m.pure_callback(
        lambda v: np.asarray(v) * 10, m.ShapeDtypeStruct((2,), np.float32), x,
        vmap_method="expand_dims")))
    return [f(np.arange(6, dtype=np.float32).reshape(3, 2))]

  def c_grad_with_print(log):
    def loss(w):
      m.debug.callback(lambda v: log.append(float(v)), jnp.sum(w))
      return jnp.sum(jnp.tanh(w) ** 2)
    return [m.jit(m.grad(loss))(np.linspace(-1, 1, 5).astype(np.float32))]

  def c_bool_and_int_operands(log):
    def f(x, b):
      return m.pure_callback(lambda x, b: np.where(b, x, -x).astype(np.int32),
                             m.ShapeDtypeStruct((3,), np.int32), x, b)
    return [m.jit(f)(np.arange(3, dtype=np.int32), np.array([True, False, True]))]

  return {k: v for k, v in locals().items() if k.startswith("c_")}


def linalg_cases(m):
  jnp, lax, sl = m.numpy, m.lax, m.scipy.linalg
  J = m.jit

  def recon_eigh(x):
    w, v = jnp.linalg.eigh(x)
    return [w, (v * w[..., None, :]) @ jnp.swapaxes(v, -1, -2), jnp.abs(v)]

  def recon_svd(x, full):
    u, s, vh = jnp.linalg.svd(x, full_matrices=full)
    k = s.shape[-1]
    return [s, (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], jnp.abs(u[..., :, :k]),
            jnp.abs(vh[..., :k, :])]

  cases = {
      "l_cholesky": lambda: [J(jnp.linalg.cholesky)(SPD)],
      "l_cholesky_batched": lambda: [J(jnp.linalg.cholesky)(
          np.einsum("bij,bkj->bik", BATCH, BATCH) + 4 * np.eye(4, dtype=np.float32))],
      "l_solve_triangular": lambda: [J(lambda a, b: sl.solve_triangular(a, b, lower=True))(
          np.tril(SPD), B)],
      "l_cho_solve": lambda: [J(lambda a, b: sl.cho_solve(sl.cho_factor(a), b))(SPD, B)],
      "l_lu_factor": lambda: list(J(sl.lu_factor)(A)),
      "l_lu": lambda: list(J(sl.lu)(A)),
      "l_solve": lambda: [J(jnp.linalg.solve)(A, B)],
      "l_inv": lambda: [J(jnp.linalg.inv)(A)],
      "l_det": lambda: [J(jnp.linalg.det)(A)],
      "l_slogdet": lambda: list(J(jnp.linalg.slogdet)(A)),
      "l_qr_reduced": lambda: [jnp.abs(o) for o in J(jnp.linalg.qr)(TALL)],
      "l_qr_complete": lambda: [jnp.abs(o) for o in J(
          lambda x: jnp.linalg.qr(x, mode="complete"))(TALL)],
      "l_householder_product": lambda: [J(lambda a, t: lax.linalg.householder_product(a, t))(
          TALL, np.linspace(0.1, 0.5, 4).astype(np.float32))],
      "l_eigh": lambda: J(recon_eigh)(SPD),
      "l_eigh_batched": lambda: J(recon_eigh)(BATCH + np.swapaxes(BATCH, -1, -2)),
      "l_eigvalsh": lambda: [J(jnp.linalg.eigvalsh)(SPD)],
      "l_svd_square": lambda: J(lambda x: recon_svd(x, True))(A),
      "l_svd_tall_reduced": lambda: J(lambda x: recon_svd(x, False))(TALL),
      "l_svd_wide_full": lambda: J(lambda x: recon_svd(x, True))(TALL.T),
      "l_svdvals_batched": lambda: [J(lambda x: jnp.linalg.svd(x, compute_uv=False))(BATCH)],
      "l_pinv": lambda: [J(jnp.linalg.pinv)(TALL)],
      "l_norm2": lambda: [J(lambda x: jnp.linalg.norm(x, ord=2))(A)],
      "l_matrix_rank": lambda: [J(jnp.linalg.matrix_rank)(TALL @ TALL.T)],
      "l_grad_cholesky": lambda: [J(m.grad(lambda x: jnp.sum(jnp.linalg.cholesky(x))))(SPD)],
      "l_grad_eigh": lambda: [J(m.grad(lambda x: jnp.sum(jnp.linalg.eigvalsh(x) ** 2)))(SPD)],
      "l_eig": lambda: [np.sort_complex(np.asarray(J(jnp.linalg.eigvals)(A)))],
      "l_tridiagonal_solve": lambda: [J(lax.linalg.tridiagonal_solve)(
          np.r_[0, np.ones(5)].astype(np.float32), 4 * np.ones(6, np.float32),
          np.r_[np.ones(5), 0].astype(np.float32), B)],
  }
  return {k: (lambda log, f=f: f()) for k, f in cases.items()}


# --- one framework's run ------------------------------------------------------------------------

def _main_child(name: str, group: str, out: pathlib.Path) -> None:
  if name == "jaxlite":
    import jaxlite as m
    import jaxlite.experimental  # noqa: F401
    import jaxlite.scipy.linalg  # noqa: F401
  else:
    import jax as m
    import jax.experimental  # noqa: F401
    import jax.scipy.linalg  # noqa: F401
  m.config.update("jax_default_matmul_precision", "highest")
  info = {"device": str(m.devices()[0]), "platform": m.devices()[0].platform, "cases": {}}
  values = {}
  cases = (callback_cases if group == "callbacks" else linalg_cases)(m)
  for key, case in cases.items():
    log: list = []
    try:
      outs = case(log)
      for i, o in enumerate(outs):
        values[f"{key}.{i}"] = np.asarray(o)
      info["cases"][key] = {"ok": True, "n": len(outs), "log": log}
    except Exception as err:  # noqa: BLE001 (a case that raises is compared with the other side)
      info["cases"][key] = {"ok": False, "error": f"{type(err).__name__}: {err}"[:400],
                            "log": log}
      traceback.print_exc(limit=2)
    print(f"{name} {key}: {'ok' if info['cases'][key]['ok'] else 'raised'}", flush=True)
    # written after every case: a case that hangs loses only itself and those after it
    np.savez(out / f"{name}_{group}.npz", **values)
    (out / f"{name}_{group}.json").write_text(json.dumps(info, indent=1, default=str))


def _load(out, name):
  info, vals = {"device": "?", "cases": {}}, {}
  for group in GROUPS:
    path = out / f"{name}_{group}.json"
    if not path.exists():
      continue
    part = json.loads(path.read_text())
    info["device"] = part["device"]
    info["cases"].update(part["cases"])
    npz = out / f"{name}_{group}.npz"
    if npz.exists():
      vals.update(dict(np.load(npz)))
  return info, vals


def compare(out: pathlib.Path) -> int:
  loaded = {n: _load(out, n) for n in ("jaxlite", "jax")}
  infos = {n: v[0] for n, v in loaded.items()}
  vals = {n: v[1] for n, v in loaded.items()}
  print(f"devices: jaxlite {infos['jaxlite']['device']}, jax {infos['jax']['device']}")
  every = {m: None for n in infos for m in infos[n]["cases"]}
  for key in every:
    for n in infos:
      infos[n]["cases"].setdefault(key, {"ok": False, "error": "did not finish", "log": []})
  bad = 0
  for key, mine in infos["jaxlite"]["cases"].items():
    theirs = infos["jax"]["cases"].get(key, {"ok": False, "error": "missing"})
    if mine["ok"] != theirs["ok"]:
      bad += 1
      print(f"DIFF  {key}: jaxlite {'ok' if mine['ok'] else mine['error']} | jax "
            f"{'ok' if theirs['ok'] else theirs['error']}")
      continue
    if not mine["ok"]:
      print(f"both raise  {key}: jaxlite {mine['error'][:150]!r} | jax {theirs['error'][:150]!r}")
      continue
    if mine["log"] != theirs["log"]:
      bad += 1
      print(f"DIFF  {key}: callback log {mine['log']} vs {theirs['log']}")
      continue
    worst = 0.0
    for i in range(mine["n"]):
      a, b = vals["jaxlite"].get(f"{key}.{i}"), vals["jax"].get(f"{key}.{i}")
      if a is None or b is None:
        worst = np.inf
        break
      if a.shape != b.shape or a.dtype != b.dtype:
        worst = np.inf
        print(f"      {key}.{i}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
        break
      if a.size:
        scale = max(float(np.max(np.abs(b))), 1e-30)
        worst = max(worst, float(np.max(np.abs(a.astype(b.dtype) - b))) / scale)
    ok = worst <= 2e-4
    bad += not ok
    print(f"{'ok   ' if ok else 'DIFF '} {key}: max rel err {worst:.2e}"
          f"{'  log ' + str(mine['log'])[:80] if mine['log'] else ''}")
  print(f"{len(infos['jaxlite']['cases']) - bad} of {len(infos['jaxlite']['cases'])} cases agree")
  return 1 if bad else 0


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--framework", choices=("jaxlite", "jax"))
  ap.add_argument("--out", default="/tmp/tpu_check")
  ap.add_argument("--group", choices=GROUPS)
  ap.add_argument("--timeout", type=float, default=150)
  ap.add_argument("--compare", action="store_true")
  args = ap.parse_args()
  out = pathlib.Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  if args.framework:
    _main_child(args.framework, args.group, out)
    return
  if not args.compare:
    for name in ("jaxlite", "jax"):
      for group in (args.group,) if args.group else GROUPS:  # --group alone: that group only
        try:
          subprocess.run([sys.executable, __file__, "--framework", name, "--group", group,
                          "--out", str(out)], env=os.environ, check=False,
                         timeout=args.timeout)
        except subprocess.TimeoutExpired:
          print(f"{name} {group}: stopped after {args.timeout:.0f} s", flush=True)
  sys.exit(compare(out))


if __name__ == "__main__":
  main()
