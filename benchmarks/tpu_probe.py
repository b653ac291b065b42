"""Checks of arrays on the default accelerator (run by tpu_run.sh on the TPU machine): device
to host readback of every dtype, placement of created arrays, device_put between the TPU and
NumPy's CPU device, delete / is_deleted / block_until_ready, float64. `--jax` runs the same
checks' JAX side for comparison."""
import sys
import time
import traceback

import numpy as np


def check(label, fn):
  try:
    print(f"{label}: {fn()}", flush=True)
  except Exception as err:  # noqa: BLE001
    print(f"{label}: FAILED {type(err).__name__}: {str(err)[:400]}", flush=True)
    traceback.print_exc(limit=4)


def main(use_jax):
  if use_jax:
    import jax
  else:
    import jaxlite as jax
  import ml_dtypes
  jnp = jax.numpy
  check("devices", lambda: (jax.devices(), jax.devices("cpu"), jax.default_backend()))
  x = jnp.ones(3)
  check("jnp.ones placement", lambda: (x.devices(), type(getattr(x, "_value", None)).__name__))
  y = jnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
  check("asarray devices", lambda: y.devices())
  f = jax.jit(lambda a: a * 2 + 1)
  check("jit readback f32", lambda: np.asarray(f(y)).tolist())
  check("eager x+1", lambda: (np.asarray(x + 1).tolist(), (x + 1).devices()))
  for dt in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float16", "int8", "uint32", "bool",
             "complex64", "int4"):
    def rb(dt=dt):
      d = np.dtype(getattr(ml_dtypes, dt, None) or dt)
      z = jax.jit(lambda a: (a * 2).astype(d))(np.arange(6, dtype=np.float32))
      h = np.asarray(z)
      return h.dtype, h.tolist(), str(z).replace("\n", " ")
    check(f"readback {dt}", rb)
  check("printing", lambda: repr(f(y)))
  t0 = time.perf_counter()
  big = jax.jit(lambda a: a + 1)(jnp.zeros((1024, 1024)))
  big.block_until_ready()
  t1 = time.perf_counter()
  h = np.asarray(big)
  t2 = time.perf_counter()
  check("4 MiB readback", lambda: f"{(t2 - t1) * 1e3:.2f} ms, sum {h.sum()}")
  cpu = jax.devices("cpu")[0]
  check("device_put to cpu", lambda: (lambda c: (c.devices(), np.asarray(c).tolist(),
                                                 (c + 1).devices()))(jax.device_put(y, cpu)))
  check("device_put cpu->default", lambda: (lambda t: (t.devices(), np.asarray(t * 2).tolist()))(
      jax.device_put(jax.device_put(y, cpu), jax.devices()[0])))
  check("device_put numpy->default", lambda: jax.device_put(np.ones(2), jax.devices()[0]).devices())
  with jax.default_device(cpu):
    check("default_device(cpu)", lambda: (jnp.ones(2).devices(), (jnp.ones(2) + 1).devices()))
  check("device_get", lambda: type(jax.device_get(f(y))).__name__)
  d = f(y)
  check("block_until_ready", lambda: d.block_until_ready() is d)
  def dele():
    e = f(y)
    before = e.is_deleted()
    e.delete()
    try:
      np.asarray(e)
      after = "readable after delete!"
    except Exception as err:  # noqa: BLE001
      after = f"{type(err).__name__}: {err}"
    return before, e.is_deleted(), after
  check("delete", dele)
  check("memory_stats", lambda: {k: v for k, v in (jax.devices()[0].memory_stats() or {}).items()
                                 if k in ("bytes_in_use", "bytes_limit")})
  check("copy_to_host_async", lambda: (f(y).copy_to_host_async(), "ok"))
  check("f64 x64 off", lambda: jnp.ones(2, jnp.float64).dtype)
  jax.config.update("jax_enable_x64", True)
  def f64():
    z = jnp.ones(3, jnp.float64)
    return z.dtype, z.devices(), np.asarray(z * 2).tolist(), np.asarray(jax.jit(
        lambda a: jnp.sin(a) @ a)(z)).tolist(), jnp.arange(3.0).dtype
  check("f64 x64 on", f64)
  jax.config.update("jax_enable_x64", False)
  check("key bits", lambda: np.asarray(jax.random.bits(jax.random.key(0), (4,), np.uint32)).tolist())
  if not use_jax:
    print("jax imported by jaxlite:", "jax" in sys.modules)


main("--jax" in sys.argv)
