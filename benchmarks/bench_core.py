"""Core workloads: eager dispatch, jit dispatch, first-call compile, import time, elementwise
chains, reductions and matmul, plus the machine's memory-copy and BLAS limits.
"""
from __future__ import annotations

import subprocess
import sys
import time
import pathlib

import numpy as np
from harness import tiered

SRC = str(pathlib.Path(__file__).resolve().parent.parent / "src")


def _optional(name):
  try:
    return __import__(name)
  except ImportError:
    return None


def _single_shot(fn):
  fn.single_shot = True
  return fn


def _import_time(module: str, env_path: str | None = None):
  def run():
    code = f"import time,sys; t=time.perf_counter(); import {module}; " \
           "print(time.perf_counter()-t)"
    best = min(float(subprocess.check_output(
        [sys.executable, "-c", code],
        env={**__import__("os").environ, "PYTHONPATH": env_path or ""}).decode())
        for _ in range(3))
    return best
  return _single_shot(run)


def _mlp_loss(np_mod):
  def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
      h = np_mod.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    logits = h @ w + b
    return np_mod.mean((logits - y) ** 2)
  return loss


def _mlp_args(np_mod, rng):
  sizes = [784, 512, 512, 10]
  params = [(np_mod.asarray(rng.normal(size=(m, n)).astype(np.float32) * 0.05),
             np_mod.asarray(np.zeros(n, np.float32))) for m, n in zip(sizes[:-1], sizes[1:])]
  x = np_mod.asarray(rng.normal(size=(128, 784)).astype(np.float32))
  y = np_mod.asarray(rng.normal(size=(128, 10)).astype(np.float32))
  return params, x, y


def _first_call(jit, loss_factory, args):
  def run():
    f = jit(loss_factory())  # a fresh function: nothing cached
    t0 = time.perf_counter()
    out = f(*args)
    getattr(out, "block_until_ready", lambda: None)()
    return time.perf_counter() - t0
  return _single_shot(run)


def workloads():
  import jaxlite
  import jaxlite.numpy as jnp
  jax = _optional("jax")
  rng = np.random.default_rng(0)
  out = []

  x_np = np.ones(100, np.float32)
  x_jl = jnp.asarray(x_np)
  impls = {"jaxlite": lambda: x_jl + 1, "numpy": lambda: x_np + 1}
  if jax:
    x_jx = jax.numpy.asarray(x_np)
    impls["jax"] = lambda: (x_jx + 1).block_until_ready()
  out.append(("eager x + 1 (f32[100])", impls))

  f_jl = jaxlite.jit(lambda x: x * 2 + 1)
  impls = {"jaxlite": lambda: f_jl(x_jl), "numpy": lambda: x_np * 2 + 1}
  if jax:
    f_jx = jax.jit(lambda x: x * 2 + 1)
    impls["jax"] = lambda: f_jx(x_jx).block_until_ready()
  out.append(("jit dispatch x * 2 + 1 (f32[100])", impls))

  impls = {"jaxlite": _first_call(jaxlite.jit, lambda: _mlp_loss(jnp),
                                  _mlp_args(jnp, np.random.default_rng(1)))}
  if jax:
    impls["jax"] = _first_call(jax.jit, lambda: _mlp_loss(jax.numpy),
                               _mlp_args(jax.numpy, np.random.default_rng(1)))
  out.append(("first call of jitted 3-layer MLP loss", tiered(impls)))

  impls = {"jaxlite": _import_time("jaxlite", SRC), "numpy": _import_time("numpy")}
  if jax:
    impls["jax"] = _import_time("jax")
  out.append(("import time", impls))

  big_np = rng.normal(size=10_000_000).astype(np.float32)
  big_jl = jnp.asarray(big_np)
  chain = lambda m: (lambda x: m.tanh(x * 2.0 + 1.0) * 0.5 + x)  # noqa: E731
  c_jl = jaxlite.jit(chain(jnp))
  impls = {"jaxlite": lambda: c_jl(big_jl), "numpy": lambda: chain(np)(big_np)}
  if jax:
    big_jx = jax.numpy.asarray(big_np)
    c_jx = jax.jit(chain(jax.numpy))
    impls["jax"] = lambda: c_jx(big_jx).block_until_ready()
  out.append(("jit elementwise chain, 10M f32", tiered(impls)))

  tes = lambda m: (lambda x: m.tanh(x) * m.exp(x) + m.sin(x))  # noqa: E731
  t_jl = jaxlite.jit(tes(jnp))
  impls = {"jaxlite": lambda: t_jl(big_jl), "numpy": lambda: tes(np)(big_np)}
  if jax:
    t_jx = jax.jit(tes(jax.numpy))
    impls["jax"] = lambda: t_jx(big_jx).block_until_ready()
  out.append(("jit tanh(x)*exp(x)+sin(x), 10M f32", tiered(impls)))

  a_np = rng.normal(size=(2048, 2048)).astype(np.float32)
  a_jl = jnp.asarray(a_np)
  mm = jaxlite.jit(lambda a: a @ a)
  impls = {"jaxlite": lambda: mm(a_jl), "numpy": lambda: a_np @ a_np}
  if jax:
    a_jx = jax.numpy.asarray(a_np)
    mmx = jax.jit(lambda a: a @ a)
    impls["jax"] = lambda: mmx(a_jx).block_until_ready()
  torch = _optional("torch")
  if torch:
    a_t = torch.from_numpy(a_np)
    impls["torch"] = lambda: a_t @ a_t
  out.append(("matmul 2048x2048 f32", impls))

  src = rng.normal(size=(4096, 1024)).astype(np.float32)

  def lse(m):
    def f(x):
      mx = m.max(x, axis=1, keepdims=True)
      return m.log(m.sum(m.exp(x - mx), axis=1)) + mx[:, 0]
    return f
  l_jl = jaxlite.jit(lse(jnp))
  s_jl = jnp.asarray(src)
  impls = {"jaxlite": lambda: l_jl(s_jl), "numpy": lambda: lse(np)(src)}
  if jax:
    s_jx = jax.numpy.asarray(src)
    l_jx = jax.jit(lse(jax.numpy))
    impls["jax"] = lambda: l_jx(s_jx).block_until_ready()
  out.append(("jit logsumexp over (4096, 1024)", tiered(impls)))

  buf = np.ones(64 * 1024 * 1024 // 4, np.float32)
  dst = np.empty_like(buf)
  out.append(("machine: memcpy 64 MiB (numpy)", {"numpy": lambda: np.copyto(dst, buf)}))
  return out


if __name__ == "__main__":
  sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
  from harness import run_workloads
  run_workloads(workloads())
