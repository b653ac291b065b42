"""Tier 1's runtime: its code loads only when a compile needs it, and its tiles are scheduled so
that the calling thread never waits for a worker that has not started."""
import importlib.util
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
TIER1_MODULES = ("jaxlite._src.compiler.tier1_backend", "jaxlite._src.compiler.fusion",
                 "jaxlite._src.compiler.tiled_executor", "jaxlite._src.compiler.native",
                 "numba")


def _python(code: str, **env) -> str:
  # (the NumPy backend's tiers: JAXLITE_BACKEND=xla, the suite's, left out)
  full = {k: v for k, v in os.environ.items()
          if k not in ("JAXLITE_TIER", "JAXLITE_NATIVE", "JAXLITE_BACKEND")}
  full.update(PYTHONPATH=SRC, **env)
  out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr
  return out.stdout.strip()


_LOADED = f"[m for m in {TIER1_MODULES!r} if m in sys.modules]"
HAVE_NUMBA = importlib.util.find_spec("numba") is not None


# --- lazy loading --------------------------------------------------------------------------------

def test_import_and_small_programs_load_no_tier1_code():
  out = _python(
      "import sys, numpy as np, jaxlite, jaxlite.numpy as jnp\n"
      "from jaxlite._src.compiler import backend\n"
      f"print({_LOADED}, backend.installed().name)\n"
      "f = jaxlite.jit(lambda x: jnp.tanh(x) * 2 + 1)\n"
      "x = np.linspace(-1, 1, 1000, dtype=np.float32)\n"
      "np.testing.assert_array_equal(np.asarray(f(x)), np.tanh(x) * 2 + 1)\n"
      "s = jaxlite.jit(lambda x: jaxlite.lax.scan(lambda c, y: (c + y, c), 0.0, x))(x)\n"
      f"print({_LOADED}, backend.installed().name)")
  assert out.splitlines() == ["[] numpy-tier1-pending", "[] numpy-tier1-pending"]


def test_big_values_read_only_by_matmuls_load_no_tier1_code():
  # An MLP loss: its weights are big, but only matmuls read them; nothing to tile.
  out = _python(
      "import sys, numpy as np, jaxlite, jaxlite.numpy as jnp\n"
      "from jaxlite._src.compiler import backend\n"
      "w = np.full((784, 512), 0.01, np.float32); x = np.ones((128, 784), np.float32)\n"
      "f = jaxlite.jit(lambda x, w: jnp.maximum(x @ w - 1, 0).sum())\n"
      "np.testing.assert_allclose(float(f(x, w)), 128 * 512 * 6.84, rtol=1e-4)\n"
      # its product is big enough for BLAS threads: the count is chosen per call all the same
      "from jaxlite._src.compiler import blas, tiers\n"
      "exe = tiers.PENDING.compile(jaxlite.make_jaxpr(lambda x, w: (x @ w).sum())(x, w))\n"
      "lib = blas.openblas()\n"
      "print(type(exe).__name__ if lib and lib[0]() > 1 else 'AdaptiveThreads')\n"
      f"print({_LOADED}, backend.installed().name)")
  assert out.splitlines() == ["AdaptiveThreads", "[] numpy-tier1-pending"]


def test_first_big_program_loads_and_installs_tier1():
  out = _python(
      "import sys, numpy as np, jaxlite, jaxlite.numpy as jnp\n"
      "from jaxlite._src.compiler import backend\n"
      "small = jaxlite.jit(lambda x: jnp.exp(x) - 1)\n"
      "xs = np.linspace(-1, 1, 100, dtype=np.float32)\n"
      "a = np.asarray(small(xs))\n"
      "big = jaxlite.jit(lambda x: jnp.exp(x) - 1)\n"
      "xb = np.linspace(-1, 1, 1 << 18, dtype=np.float32).reshape(512, 512)\n"
      "b = np.asarray(big(xb))\n"
      "np.testing.assert_array_equal(b, np.exp(xb) - 1)\n"
      "np.testing.assert_array_equal(np.asarray(small(xs)), a)\n"
      "text = big.lower(xb).compile().as_text()\n"
      f"print('tiled_executor' in str({_LOADED}), backend.installed().name, '_k0_tile' in text)",
      JAXLITE_NATIVE="0")
  assert out == "True numpy-tiled True"


@pytest.mark.parametrize("code, want", [
    # asking for the installed backend loads it (the native one where numba is installed)
    ("print(backend.get_backend().name)", "numpy-native" if HAVE_NUMBA else "numpy-tiled"),
    # asking for tier 1 by name loads it, and leaves the pending one installed
    ("print(backend.get_backend('numpy-tiled').name, backend.installed().name)",
     "numpy-tiled numpy-tier1-pending"),
    # switching tiers before anything loaded: nothing loads
    ("jaxlite.config.update('jax_jaxlite_tier', 0); a = backend.installed().name\n"
     "jaxlite.config.update('jax_jaxlite_tier', 1)\n"
     f"print(a, backend.installed().name, {_LOADED})", "numpy numpy-tier1-pending []"),
    # the native flag is read when tier 1 loads
    ("jaxlite.config.update('jax_jaxlite_native', False)\n"
     f"print(backend.get_backend().name, {_LOADED})",
     "numpy-tiled ['jaxlite._src.compiler.tier1_backend', 'jaxlite._src.compiler.fusion', "
     "'jaxlite._src.compiler.tiled_executor', 'jaxlite._src.compiler.native']"),
])
def test_pending_tier_resolves_on_request(code, want):
  out = _python("import sys, jaxlite\nfrom jaxlite._src.compiler import backend\n" + code)
  assert out == want


def test_tier0_env_never_loads_tier1():
  out = _python(
      "import sys, numpy as np, jaxlite, jaxlite.numpy as jnp\n"
      "from jaxlite._src.compiler import backend\n"
      "jaxlite.jit(lambda x: jnp.exp(x) - 1)(np.ones((512, 512), np.float32))\n"
      f"print(backend.get_backend().name, {_LOADED})", JAXLITE_TIER="0")
  assert out == "numpy []"


# --- tile scheduling -----------------------------------------------------------------------------

from jaxlite._src.compiler import (  # noqa: E402  (after the subprocess tests' doc)
    adaptive,
    tiled_executor,
)


def _kernel(tile_fn, n=64, rows=4):
  return tiled_executor.TiledKernel(tile_fn, n, rows, [True], [((n,), np.float64)], False)


def _pool_of(workers):
  pool = tiled_executor._Pool()
  from concurrent.futures import ThreadPoolExecutor
  pool.executor, pool.workers = ThreadPoolExecutor(workers - 1), workers
  return pool


def test_caller_takes_every_tile_when_workers_are_busy(monkeypatch):
  # The pool's one worker is blocked: the caller must run all tiles itself and return, not
  # wait for that worker (a fixed split would hang here until the worker is free).
  pool = _pool_of(2)
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  release = threading.Event()
  pool.executor.submit(release.wait)
  try:
    x = np.arange(64.0)
    k = _kernel(lambda lo, n, x, o: np.multiply(x, 2, out=o))
    (out,) = k(x)
    np.testing.assert_array_equal(out, x * 2)
    assert k.last_tiles == 16 and k.last_threads == 1
  finally:
    release.set()
    pool.executor.shutdown()


def test_workers_take_tiles_while_the_caller_is_busy(monkeypatch):
  # Neither thread finishes a tile before the other has started one: both take tiles.
  pool = _pool_of(2)
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  seen, other, caller = set(), threading.Event(), threading.Event()
  main = threading.get_ident()

  def tile(lo, n, x, o):  # each side's first tile waits until the other side has one
    seen.add(threading.get_ident())
    mine, theirs = (caller, other) if threading.get_ident() == main else (other, caller)
    mine.set()
    assert theirs.wait(30)
    np.add(x, 1, out=o)
  try:
    x = np.arange(64.0)
    k = _kernel(tile)
    (out,) = k(x)
    np.testing.assert_array_equal(out, x + 1)
    assert k.last_threads == 2 and len(seen) == 2
  finally:
    pool.executor.shutdown()


def test_error_in_a_worker_tile_reaches_the_caller(monkeypatch):
  pool = _pool_of(2)
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  main = threading.get_ident()
  other = threading.Event()

  def tile(lo, n, x, o):
    if threading.get_ident() != main:
      other.set()
      raise ValueError(f"tile at {lo}")
    assert other.wait(30)
    o[...] = x
  try:
    with pytest.raises(ValueError, match="tile at"):
      _kernel(tile)(np.arange(64.0))
  finally:
    pool.executor.shutdown()


# --- the cost model: tier 0's code where nothing is tiled, tier 0's reuse between kernels --------

import jaxlite  # noqa: E402
import jaxlite.numpy as jnp  # noqa: E402
from jaxlite._src.compiler import numpy_codegen, tier1_backend  # noqa: E402


def test_program_with_nothing_to_tile_is_tier0_code():
  # Big values, but only a matmul and a one-op kernel on one worker or a scalar epilogue: no
  # kernel that can win from tiling, so the program is tier 0's code (its `del`s and `out=`).
  a = np.random.default_rng(1).normal(size=(512, 512)).astype(np.float32)
  closed = jaxlite.make_jaxpr(lambda a: (a @ a).sum() * 2)(a)
  exe = tier1_backend.TIER1.compile(closed)
  assert exe.__jaxlite_kernels__ == []
  src0 = numpy_codegen.NUMPY.compile(closed).__jaxlite_source__
  strip = lambda s: s.split("\n", 1)[1]  # noqa: E731  (the function's name differs)
  assert strip(exe.__jaxlite_source__) == strip(src0)
  np.testing.assert_array_equal(exe(a)[0], numpy_codegen.NUMPY.compile(closed)(a)[0])


def test_tier0_lines_between_kernels_reuse_donated_and_free_dead_buffers():
  rng = np.random.default_rng(2)
  w = rng.normal(size=(64, 64)).astype(np.float32)
  x = rng.normal(size=(1024, 512)).astype(np.float32)
  m = rng.normal(size=(512, 512)).astype(np.float32)

  def f(w, x, m):
    y = jnp.tanh(x) * 2          # a tiled kernel
    z = (y @ m) @ m              # y dies at the first matmul: freed there
    return w * 0.5 + 1, z.sum()  # w is donated: its update goes into its buffer
  closed = jaxlite.make_jaxpr(f)(w, x, m)
  exe = tier1_backend.TIER1.compile(closed, (0,))
  assert len(exe.__jaxlite_kernels__) == 1
  src = exe.__jaxlite_source__
  main = src[src.index("def _jaxpr_fn"):]
  assert "del " in main
  want = numpy_codegen.NUMPY.compile(closed)(w.copy(), x, m)
  w_buf = w.copy()
  got = exe(w_buf, x, m)
  assert np.shares_memory(got[0], w_buf)
  for g, e in zip(got, want):
    np.testing.assert_array_equal(g, e)


def test_sgd_update_writes_into_the_donated_weights():
  # An SGD update `w - lr * g` whose w is donated and also read by matmuls before it (the
  # backward pass): a matmul's result is new memory, so w stays the program's to overwrite, and
  # the fused update writes into w's buffer (the gradient's dies with it either way), as JAX's
  # donation does.
  rng = np.random.default_rng(4)
  w = (rng.normal(size=(784, 512)) / 28).astype(np.float32)
  x = rng.normal(size=(128, 784)).astype(np.float32)

  def step(w, x):
    g = jaxlite.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
    return w - 0.01 * g
  closed = jaxlite.make_jaxpr(step)(w, x)
  exe = tier1_backend.TIER1.compile(closed, (0,))
  assert len(exe.__jaxlite_kernels__) >= 1
  src = exe.__jaxlite_source__
  (update,) = [line for line in src.splitlines() if "into" in line and "784 rows" in line]
  want = numpy_codegen.NUMPY.compile(closed)(w.copy(), x)
  w_buf = w.copy()
  got = exe(w_buf, x)
  assert np.shares_memory(got[0], w_buf), update
  np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)


def test_clear_caches_empties_the_pending_tier_too():
  # The placeholder is installed, not registered: jax.clear_caches still reaches its scan loops.
  from jaxlite._src.compiler import backend, tiers
  closed = jaxlite.make_jaxpr(lambda c, x: (c + x, c * 2))(0.0, 0.0)
  with backend.using_backend(tiers.PENDING):
    loop = backend.compile_scan(closed, 0, 1, False)
    ys = np.zeros(3, np.float32)
    assert loop(np.float32(1), np.arange(3, dtype=np.float32), ys, 3) == (4.0,)
    np.testing.assert_array_equal(ys, [2, 2, 4])
    assert len(tiers.PENDING._scan_loops) == 1
    jaxlite.clear_caches()
    assert len(tiers.PENDING._scan_loops) == 0


# --- adaptive choice of how a kernel runs --------------------------------------------------------

def _timed_kernel(slow):
  """A kernel over 64 rows whose calls sleep when `slow(n_rows_of_this_tile)` says so."""
  import time

  def tile(lo, n, x, o):
    if slow(n):
      time.sleep(0.004)
    np.multiply(x, 3, out=o)
  return _kernel(tile)


@pytest.mark.parametrize("slow, want", [
    (lambda n: n < 64, tiled_executor.WHOLE),   # tiles are slow: one call over all rows wins
    (lambda n: n == 64, None),                  # the whole is slow: a tiled mode wins
])
def test_kernel_settles_on_its_fastest_mode(monkeypatch, slow, want):
  monkeypatch.setattr(adaptive, "ADAPTIVE", True)
  pool = _pool_of(2)
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  try:
    k = _timed_kernel(slow)
    x = np.arange(64.0)
    seen = []
    for _ in range(adaptive.PROBES * 4):
      np.testing.assert_array_equal(k(x)[0], x * 3)
      seen.append(k.last_mode)
    # 16 tiles of 4 rows, two workers: wide tiles are 16 rows (WIDE_FACTOR base tiles)
    assert set(seen) == {tiled_executor.POOLED, tiled_executor.WIDE, tiled_executor.TILES,
                         tiled_executor.WHOLE}
    if want is not None:
      assert k.mode == want
    else:
      assert k.mode in (tiled_executor.POOLED, tiled_executor.WIDE, tiled_executor.TILES)
    for _ in range(3):
      k(x)
      assert k.last_mode == k.mode
  finally:
    pool.executor.shutdown()


def test_kernel_switches_mode_when_another_becomes_faster(monkeypatch):
  monkeypatch.setattr(adaptive, "REPROBE", 4)
  monkeypatch.setattr(adaptive, "ADAPTIVE", True)
  pool = tiled_executor._Pool()
  pool.workers = 1
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  state = {"slow_whole": False}
  k = _timed_kernel(lambda n: (n == 64) == state["slow_whole"])
  x = np.arange(64.0)
  for _ in range(adaptive.PROBES * 2):
    k(x)
  assert k.mode == tiled_executor.WHOLE  # tiles sleep
  state["slow_whole"] = True  # the load changes: now the whole is slow
  for _ in range(12):
    np.testing.assert_array_equal(k(x)[0], x * 3)
  assert k.mode == tiled_executor.TILES


def test_no_whole_call_over_many_tiles(monkeypatch):
  # A kernel of more than WHOLE_MAX_TILES tiles never runs over all rows at once, not even as a
  # probe: that call's whole-array intermediates were the program's peak memory.
  monkeypatch.setattr(adaptive, "ADAPTIVE", True)
  pool = tiled_executor._Pool()
  pool.workers = 1
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  widest = []

  def tile(lo, n, x, o):
    widest.append(n)
    np.multiply(x, 3, out=o)
  many = tiled_executor.WHOLE_MAX_TILES + 1
  k = _kernel(tile, n=many * 4, rows=4)
  x = np.arange(many * 4.0)
  for _ in range(3 * adaptive.PROBES):
    np.testing.assert_array_equal(k(x)[0], x * 3)
  assert k.modes == (tiled_executor.TILES,) and max(widest) == 4
  few = _kernel(tile, n=tiled_executor.WHOLE_MAX_TILES * 4, rows=4)
  few(np.arange(tiled_executor.WHOLE_MAX_TILES * 4.0))
  assert few.modes == (tiled_executor.TILES, tiled_executor.WHOLE)


def test_losing_tries_back_off(monkeypatch):
  # The other mode always loses: tries of it come after 4, 8, 16, 32, 64, 64... calls.
  monkeypatch.setattr(adaptive, "REPROBE", 4)
  monkeypatch.setattr(adaptive, "REPROBE_MAX", 64)
  monkeypatch.setattr(adaptive, "ADAPTIVE", True)
  pool = tiled_executor._Pool()
  pool.workers = 1
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  k = _timed_kernel(lambda n: n < 64)  # tiles sleep: the whole wins
  x = np.arange(64.0)
  modes = []
  for _ in range(200):
    k(x)
    modes.append(k.last_mode)
  assert k.mode == tiled_executor.WHOLE
  tries = [i for i, m in enumerate(modes)
           if i >= adaptive.PROBES * 2 and m == tiled_executor.TILES]
  assert [b - a for a, b in zip(tries, tries[1:])][:5] == [8, 16, 32, 64, 64]


def test_adaptation_off_always_tiles(monkeypatch):
  monkeypatch.setattr(adaptive, "ADAPTIVE", False)
  pool = tiled_executor._Pool()
  pool.workers = 1
  monkeypatch.setattr(tiled_executor, "POOL", pool)
  k = _timed_kernel(lambda n: False)
  for _ in range(5):
    k(np.arange(64.0))
    assert k.last_mode == tiled_executor.TILES and k.last_tiles == 16


# --- output buffers lent to intermediates, dying operands taking outputs -------------------------

def _both(f, *args):
  """Outputs of tier 0 and of tier 1 with every kernel tiled in tiles of 2 rows, each of tier
  1's modes; and tier 1's source."""
  closed = jaxlite.make_jaxpr(f)(*args)
  want = numpy_codegen.NUMPY.compile(closed)(*args)
  old = tiled_executor.SMALL_ELEMENTS, tiled_executor.TILE_BYTES
  tiled_executor.SMALL_ELEMENTS, tiled_executor.TILE_BYTES = 1, 64
  try:
    exe = tier1_backend.TIER1.compile(closed)
  finally:
    tiled_executor.SMALL_ELEMENTS, tiled_executor.TILE_BYTES = old
  for _ in range(4):  # pooled, wide, tiles, whole
    got = exe(*args)
    for g, w in zip(got, want):
      np.testing.assert_array_equal(g, w)
  return exe.__jaxlite_source__


X = np.random.default_rng(4).normal(size=(40, 4)).astype(np.float32)
M = np.random.default_rng(5).normal(size=(4, 4)).astype(np.float32)


def test_intermediate_chain_is_written_into_the_output():
  src = _both(lambda x: jnp.exp(x * 2) * 3 - 1, X)
  tile = src[src.index("def _k0_tile"):src.index("def _jaxpr_fn")]
  assert "np.empty" not in tile and tile.count("out=_o0") >= 2


def test_output_not_lent_to_a_value_read_after_it():
  # a is read after out1 is written: it must not live in out1's rows (it may use out2's).
  def f(x):
    a = x * 2
    out1 = a + 1
    return out1, a * 3
  src = _both(f, X)
  tile = src[src.index("def _k0_tile"):src.index("def _jaxpr_fn")]
  first = [ln for ln in tile.splitlines() if "np.multiply" in ln][0]
  assert "out=_o0" not in first


def test_output_not_lent_while_a_view_of_its_occupant_is_live():
  def f(x):
    a = x * 2
    b = jnp.reshape(a, (40, 2, 2))
    c = jnp.exp(x) + 1  # made while b (a view of a) is still to be read
    return c, b * 3 + jnp.reshape(c, (40, 2, 2))
  _both(f, X)


@pytest.mark.parametrize("f", [
    lambda x, m: jnp.tanh(x @ m) * 2 + (x @ m),        # the dying matmul result, read twice
    lambda x, m: jnp.exp((x @ m) * 0.5) - 1,             # read first, its rows taken after
    lambda x, m: ((x @ m) * 2, jnp.sin(x @ m) + 1),      # two outputs, one dying operand
    lambda x, m: (x @ m) - jnp.max(x @ m, axis=1, keepdims=True),  # a row reduction of it
])
def test_dying_operand_takes_the_output(f):
  src = _both(f, X, M)
  assert "into" in src  # the kernel writes an output into the matmul result's buffer
