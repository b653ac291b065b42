"""Tier 1's choice of the BLAS thread count per program (compiler/blas.py): programs with a
matrix product big enough for OpenBLAS's threads time their calls on all threads and on one,
and run the faster; values never change. A fake BLAS (get, set) stands in for OpenBLAS where
the test is about the choice; the last test uses NumPy's own OpenBLAS where it has one."""
import os
import time

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite._src.compiler import adaptive, blas, numpy_codegen, tier1_backend


class FakeBlas:
  """A BLAS thread count the program reads: `fn` sleeps longer on the slow count."""

  def __init__(self, threads=4):
    self.threads, self.sets = threads, []

  def get(self):
    return self.threads

  def set(self, n):
    self.sets.append(n)
    self.threads = n


def _program(slow_on_one: bool, fake: FakeBlas, calls: list):
  def fn(x):
    calls.append(fake.threads)
    one = fake.threads == 1
    time.sleep(0.004 if one == slow_on_one else 0.001)
    return (x * 2,)
  return fn


@pytest.mark.parametrize("slow_on_one, want", [(True, blas.ALL), (False, blas.ONE)])
def test_faster_count_is_chosen_and_count_restored(monkeypatch, slow_on_one, want):
  monkeypatch.setattr(adaptive, "ADAPTIVE", True)
  fake, calls = FakeBlas(), []
  exe = blas.AdaptiveThreads(_program(slow_on_one, fake, calls), fake.get, fake.set)
  x = np.arange(4.0)
  for _ in range(2 * adaptive.PROBES + 4):
    np.testing.assert_array_equal(exe(x)[0], x * 2)
    assert fake.threads == 4  # restored after every call
  # the probes alternate all threads (the count as set) and one
  assert calls[:2 * adaptive.PROBES] == [4, 1] * adaptive.PROBES
  assert exe.mode == want
  assert calls[2 * adaptive.PROBES:] == [4 if want == blas.ALL else 1] * 4
  # a ONE call sets 1 and then the count it found
  assert fake.sets[:2] == [1, 4] and len(fake.sets) == 2 * calls.count(1)


def test_exception_restores_count(monkeypatch):
  monkeypatch.setattr(adaptive, "ADAPTIVE", True)
  fake = FakeBlas()

  def boom(x):
    raise ValueError("inside the program")
  exe = blas.AdaptiveThreads(boom, fake.get, fake.set)
  for _ in range(2):  # one call on all threads, one on one thread
    with pytest.raises(ValueError, match="inside the program"):
      exe(np.zeros(2))
    assert fake.threads == 4
  assert fake.sets == [1, 4]


def _jaxpr(f, *shapes):
  args = [np.zeros(s, np.float32) for s in shapes]
  return jaxlite.make_jaxpr(f)(*args).jaxpr


def test_threaded_products_by_gemm_size():
  mm = lambda a, b: a @ b  # noqa: E731
  assert blas.threaded_products(_jaxpr(mm, (128, 784), (784, 512)))  # the MLP's first layer
  assert not blas.threaded_products(_jaxpr(mm, (32, 64), (64, 64)))  # 131072 <= 2**18
  assert blas.threaded_products(_jaxpr(mm, (64, 128), (128, 64)))  # 524288
  # a batched product: OpenBLAS sees one gemm per batch element, each 16 * 16 * 16
  bmm = lambda a, b: jnp.einsum("bij,bjk->bik", a, b)  # noqa: E731
  assert not blas.threaded_products(_jaxpr(bmm, (4096, 16, 16), (4096, 16, 16)))
  assert not blas.threaded_products(_jaxpr(lambda a: jnp.tanh(a) * 2, (1024, 1024)))

  # products inside loop bodies and branches count
  def layers(h, ws):  # a scan over layers: one 128x512x512 product per step
    return jaxlite.lax.scan(lambda h, w: (jnp.tanh(h @ w), None), h, ws)[0]
  assert blas.threaded_products(_jaxpr(layers, (128, 512), (4, 512, 512)))
  assert not blas.threaded_products(_jaxpr(layers, (8, 32), (4, 32, 32)))

  def branch(p, a, b):
    return jaxlite.lax.cond(p.sum() > 0, lambda: a @ b, lambda: a)
  assert blas.threaded_products(_jaxpr(branch, (2,), (128, 256), (256, 256)))

  def looped(h, w):
    return jaxlite.lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h @ w), h)
  assert blas.threaded_products(_jaxpr(looped, (128, 256), (256, 256)))


def _fake_blas(monkeypatch, threads):
  fake = FakeBlas(threads)
  monkeypatch.setattr(blas, "_BLAS", [(fake.get, fake.set)])
  return fake


def test_tier1_programs_with_big_products_adapt_tier0_does_not(monkeypatch):
  monkeypatch.setattr(adaptive, "ADAPTIVE", True)
  fake = _fake_blas(monkeypatch, 2)
  rng = np.random.default_rng(0)
  x = rng.normal(size=(128, 256)).astype(np.float32)
  w = rng.normal(size=(256, 256)).astype(np.float32)
  closed = jaxlite.make_jaxpr(lambda x, w: jnp.maximum(x @ w, 0).sum())(x, w)
  exe = tier1_backend.TIER1.compile(closed)
  assert isinstance(exe, blas.AdaptiveThreads)
  t0 = numpy_codegen.NUMPY.compile(closed)
  assert not isinstance(t0, blas.AdaptiveThreads)
  want = t0(x, w)[0]
  for _ in range(2 * adaptive.PROBES + 2):
    np.testing.assert_array_equal(exe(x, w)[0], want)
  assert exe.mode in (blas.ALL, blas.ONE) and fake.threads == 2
  assert 1 in fake.sets  # the one-thread probes ran
  assert exe.__jaxlite_source__ == exe.fn.__jaxlite_source__  # as_text shows the program


@pytest.mark.parametrize("why", ["small product", "one thread", "no OpenBLAS", "adapt off"])
def test_no_choice_no_wrapper(monkeypatch, why):
  monkeypatch.setattr(adaptive, "ADAPTIVE", why != "adapt off")
  if why == "no OpenBLAS":
    monkeypatch.setattr(blas, "_BLAS", [None])
  else:
    _fake_blas(monkeypatch, 1 if why == "one thread" else 2)
  n = 16 if why == "small product" else 256
  x = np.ones((n, n), np.float32)
  closed = jaxlite.make_jaxpr(lambda x: (x @ x).sum())(x)
  exe = tier1_backend.TIER1.compile(closed)
  assert not isinstance(exe, blas.AdaptiveThreads)
  np.testing.assert_allclose(exe(x)[0], n ** 3, rtol=1e-6)


def test_jitted_mlp_step_on_numpys_openblas():
  # The real library: a jitted MLP step gives tier 0's values on either count, and the count
  # NumPy had is what it has after every call.
  lib = blas.openblas()
  if lib is None or not os.path.exists("/proc/self/maps"):
    pytest.skip("NumPy's BLAS is not a loaded OpenBLAS")
  get, set_threads = lib
  before = get()
  set_threads(2)
  try:
    rng = np.random.default_rng(3)
    w1 = (rng.normal(size=(256, 128)) / 16).astype(np.float32)
    w2 = (rng.normal(size=(128, 10)) / 11).astype(np.float32)
    x = rng.normal(size=(64, 256)).astype(np.float32)

    def loss(w1, w2, x):
      return jnp.mean(jaxlite.nn.logsumexp(jnp.maximum(x @ w1, 0) @ w2, axis=1))
    step = jaxlite.jit(jaxlite.value_and_grad(loss, argnums=(0, 1)))
    old = jaxlite.config.jax_jaxlite_tier
    jaxlite.config.update("jax_jaxlite_tier", 0)
    try:
      want = jaxlite.jit(jaxlite.value_and_grad(loss, argnums=(0, 1)))(w1, w2, x)
    finally:
      jaxlite.config.update("jax_jaxlite_tier", old)
    for _ in range(2 * adaptive.PROBES + 2):
      got = step(w1, w2, x)
      assert get() == 2
      for g, w in zip(jaxlite.tree_util.tree_leaves(got), jaxlite.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-7)
  finally:
    set_threads(before)


# --- CPU devices of one process split the cores (spmd/runtime.py) -------------------------------

class _Device:
  process_index = 0


class _Mesh:
  """The little of a Mesh that run_spmd reads: n devices of this process on axis "i"."""
  axis_names = ("i",)

  def __init__(self, n):
    self.devices = np.array([_Device() for _ in range(n)], dtype=object)


@pytest.mark.parametrize("devices, cores, want", [(4, 8, 2), (2, 13, 6), (8, 8, 1), (4, 2, 1)])
def test_device_programs_split_blas_threads_and_pool(monkeypatch, devices, cores, want):
  # While n device programs run at once each gets cores // n pool workers and, under the
  # "share" BLAS policy, as many BLAS threads (together never more than the cores); the count is
  # set back when the run ends.
  from jaxlite._src.base import machine
  from jaxlite._src.spmd import runtime
  fake = FakeBlas(threads=cores)
  monkeypatch.setattr(blas, "_BLAS", [(fake.get, fake.set)])
  monkeypatch.setattr(runtime, "_CORES", cores)
  monkeypatch.setattr(runtime, "DEVICE_BLAS", "share")
  seen = []

  def program():
    seen.append((fake.threads, machine.programs(), machine.share(cores)))
    return runtime.current_context().index
  assert runtime.run_spmd(_Mesh(devices), program, [()] * devices) == list(range(devices))
  busy = min(devices, cores)
  assert seen == [(want, busy, max(1, cores // busy))] * devices
  assert fake.threads == cores and machine.programs() == 1
  assert fake.sets == ([want, cores] if want < cores else [])


@pytest.mark.parametrize("policy, devices, want", [
    ("one", 4, 1), ("one", 1, 8), ("all", 4, 8), ("share", 4, 2), ("share", 16, 1)])
def test_device_blas_policies(monkeypatch, policy, devices, want):
  # JAXLITE_DEVICE_BLAS: one thread per busy device, every core each, or cores // devices; a
  # lone device program keeps them all.
  from jaxlite._src.spmd import runtime
  monkeypatch.setattr(runtime, "DEVICE_BLAS", policy)
  monkeypatch.setattr(runtime, "_CORES", 8)
  assert runtime.device_blas_threads(devices) == want
  fake = FakeBlas(threads=8)
  monkeypatch.setattr(blas, "_BLAS", [(fake.get, fake.set)])
  seen = []
  runtime.run_spmd(_Mesh(devices), lambda: seen.append(fake.threads), [()] * devices)
  assert seen == [want] * devices and fake.threads == 8


def test_device_programs_keep_a_lower_blas_count(monkeypatch):
  # A count the user set below the share (OPENBLAS_NUM_THREADS=1) is left as it is.
  from jaxlite._src.spmd import runtime
  fake = FakeBlas(threads=1)
  monkeypatch.setattr(blas, "_BLAS", [(fake.get, fake.set)])
  monkeypatch.setattr(runtime, "_CORES", 8)
  seen = []
  runtime.run_spmd(_Mesh(2), lambda: seen.append(fake.threads), [()] * 2)
  assert seen == [1, 1] and fake.sets == []


def test_device_programs_give_tier0_results_with_split_blas():
  # A data-parallel step (shard_map + psum) on 1, 2 and 4 CPU devices, whose programs run with
  # the split BLAS count and pool, gives tier 0's single-program values.
  import subprocess
  import sys
  src = """
import numpy as np, jaxlite as jax, jaxlite.numpy as jnp
jax.config.update("jax_num_cpu_devices", 4)
P = jax.sharding.PartitionSpec
rng = np.random.default_rng(0)
w = rng.standard_normal((64, 96)).astype(np.float32)
x = rng.standard_normal((512, 64)).astype(np.float32)
def loss(w, x):
  return jnp.sum(jnp.tanh(x @ w) ** 2)
jax.config.update("jax_jaxlite_tier", 0)
want = jax.grad(loss)(w, x)
jax.config.update("jax_jaxlite_tier", 1)
for n in (1, 2, 4):
  mesh = jax.make_mesh((n,), ("b",), devices=jax.devices()[:n])
  f = jax.jit(jax.shard_map(lambda w, x: jax.lax.psum(jax.grad(loss)(w, x), "b"), mesh=mesh,
                            in_specs=(P(), P("b")), out_specs=P(), check_vma=False))
  S = jax.sharding.NamedSharding
  ws, xs = jax.device_put(w, S(mesh, P())), jax.device_put(x, S(mesh, P("b")))
  for _ in range(8):  # past the BLAS count's probes
    got = f(ws, xs)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-4)
print("ok")
"""
  out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                       env={**os.environ, "JAXLITE_TIER1_ADAPT": "1"}, timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.strip().endswith("ok")


_TABLE_ON_DEVICES = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
import jaxlite as jax
jax.config.update("jax_num_cpu_devices", 4)
from test_tier1 import (BINARY_FLOAT, INT_OPS, REDUCE_FLOAT, TIER0, UNARY_FLOAT, assert_same,
                        values)
from jaxlite._src.compiler import tiled_executor, tiers
# every kernel of the device programs tiled, tiles of a few rows (test_tier1.force_tiles)
tiers.SMALL_ELEMENTS = tiled_executor.SMALL_ELEMENTS = 1
tiled_executor.TILE_BYTES = 64
P = jax.sharding.PartitionSpec
mesh = jax.make_mesh((4,), ("b",))
# ops that read only their own rows (a per-device block of rows is then the whole op's rows)
LOCAL_INT = {{"neg", "sign", "abs", "not", "population_count", "clz", "add", "div", "rem",
             "shift_left", "shift_right_arithmetic", "shift_right_logical", "to_float32",
             "bitcast", "clamp", "row_sum", "row_max", "row_min", "row_prod"}}
f32 = lambda k=0: values((64, 24), np.float32, offset=k)  # noqa: E731
cases = ([(n, f, (f32(),)) for n, f in UNARY_FLOAT + REDUCE_FLOAT]
         + [(n, f, (f32(), f32(5))) for n, f in BINARY_FLOAT]
         + [(n, f, (values((64, 24), np.int32),)) for n, f in INT_OPS if n in LOCAL_INT])
for name, f, args in cases:
  want = TIER0.compile(jax.make_jaxpr(f)(*args))(*args)
  sharded = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=(P("b"),) * len(args),
                                  out_specs=P("b")))
  placed = [jax.device_put(a, jax.sharding.NamedSharding(mesh, P("b"))) for a in args]
  for _ in range(4):  # each kernel's first calls try its modes (pooled, wide, tiles, whole)
    try:
      assert_same(want, jax.tree.leaves(sharded(*placed)))
    except AssertionError as e:
      raise AssertionError(name) from e
import gc
kernels = [o for o in gc.get_objects() if type(o) is tiled_executor.TiledKernel]
# tiled kernels ran (their first call pooled, on the device's share of the pool's workers)
assert len(kernels) > 60 and sum(tiled_executor.POOLED in (k.modes or ()) for k in kernels) > 60
print(len(cases))
"""


@pytest.mark.parametrize("policy", ["share", "one", "all"])
def test_device_programs_give_tier0_on_the_primitive_table(policy):
  # Tier 1's primitive table (test_tier1's cases, edge values) as the per-device programs of a
  # 4-device shard_map, run concurrently under each BLAS thread policy with the cores split:
  # each device's rows are tier 0's bits.
  import os
  import subprocess
  import sys
  tests = os.path.dirname(os.path.abspath(__file__))
  env = {**os.environ, "JAXLITE_DEVICE_BLAS": policy, "JAXLITE_NATIVE": "0",
         "PYTHONPATH": os.path.join(os.path.dirname(tests), "src")}
  out = subprocess.run([sys.executable, "-c", _TABLE_ON_DEVICES.format(tests=tests)],
                       capture_output=True, text=True, env=env, timeout=600)
  assert out.returncode == 0, out.stderr[-2000:]
  assert int(out.stdout.split()[-1]) > 60
