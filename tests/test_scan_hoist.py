"""Tier 1's scan loops with carry-free products hoisted out and run batched (compiler/scan_hoist.py)
against tier 0's plain loop, and against real JAX where installed.

Each case's body mixes carry-dependent work with per-step work that reads only the xs and
constants; tier 1 must hoist the latter where it contains a product (`_hoist(` in the loop's
source) and give tier 0's values (float tolerance: a stacked product may sum in another order in
BLAS; integers exactly).
"""
import os
import time

import numpy as np
import pytest

import jaxlite
from conftest import oracle
from jaxlite._src.base import core
from jaxlite._src.compiler import (adaptive, backend, blas, numpy_codegen, scan_hoist,
                                   tier1_backend, tiled_executor)

TIER0, TIER1 = numpy_codegen.NUMPY, tier1_backend.TIER1
RNG = np.random.default_rng(7)


def _f32(*shape):
  return RNG.standard_normal(shape).astype(np.float32)


H, B, K, L = 8, 3, 5, 12
W, U, BIAS = _f32(H, H) * 0.3, _f32(K, H) * 0.3, _f32(H)
H0, XS = _f32(B, H), _f32(L, B, K)


def rnn(m, reverse=False):
  def f(h0, xs):
    def step(h, x):
      h = m.numpy.tanh(h @ W + x @ U + BIAS)
      return h, h
    return m.lax.scan(step, h0, xs, reverse=reverse)
  return f


def preprocessed(m):
  # elementwise and a convert before the product; a stacked value (x2) also read in the loop
  def f(h0, xs):
    def step(h, x):
      x2 = m.numpy.sin(x) * 2.0
      h = m.numpy.tanh(h @ W + x2.astype(np.float16).astype(np.float32) @ U) + x2.sum()
      return h, (h, x2 @ U)
    return m.lax.scan(step, h0, xs)
  return f


def vector_steps(m):
  # x_t is a vector: x @ U is a vector-matrix product, its result broadcast against the batch
  def f(h0, xs):
    def step(h, x):
      z = x @ U
      return m.numpy.tanh(h @ W + z[None, :] + BIAS), z
    return m.lax.scan(step, h0, xs)
  return f


def two_xs(m):
  # xs of different dtypes: int32 counts (elementwise with the carry), float32 inputs (product)
  def f(h0, xs, ns):
    def step(c, xn):
      x, n = xn
      h, total = c
      h = m.numpy.tanh(h @ W + (x @ U) * n.astype(np.float32))
      return (h, total + n * 3), (n * 2, h[0])
    return m.lax.scan(step, (h0, np.int32(0)), (xs, ns))
  return f


def rhs_product(m):
  # the per-step operand on the right: W^T @ x_t^T (k-major steps)
  def f(h0, xs):
    def step(h, x):
      return m.numpy.tanh(h @ W + (U.T @ x.T).T), None
    return m.lax.scan(step, h0, xs)
  return f


def carry_is_stacked(m):
  # the new carry is the stacked product itself (no carry dependence in its value)
  def f(h0, xs):
    def step(h, x):
      p = x @ U
      return p, h.sum() + p.sum()
    return m.lax.scan(step, h0, xs)
  return f


def invariant_inputs(m):
  # a loop invariant (2 * U + 1) feeds the hoisted product and the loop both
  def f(h0, xs, u):
    def step(h, x):
      u2 = u * 2.0 + 1.0
      return m.numpy.tanh(h @ W + x @ u2 + u2[0]), None
    return m.lax.scan(step, h0, xs)
  return f


def nested(m):
  def f(h0, xs):
    def outer(h, x3):  # x3: [4, B, K]
      def inner(g, x):
        return m.numpy.tanh(g @ W + x @ U), None
      g, _ = m.lax.scan(inner, h, x3)
      return g + x3[0] @ U, g
    return m.lax.scan(outer, h0, xs.reshape(3, 4, B, K))
  return f


def grad_of_scan(m):
  def f(w, u, xs):
    def loss(w, u):
      def step(h, x):
        h = m.numpy.tanh(h @ w + x @ u + BIAS)
        return h, h
      h, hs = m.lax.scan(step, H0, xs)
      return (hs ** 2).sum() + h.sum()
    return m.grad(loss, argnums=(0, 1))(w, u)
  return f


def vmap_of_scan(m):
  def f(h0s, xs):
    return m.vmap(rnn(m), in_axes=(0, None))(h0s, xs)
  return f


CASES = [
    ("rnn", rnn, lambda: (H0, XS), True),
    ("rnn_reverse", lambda m: rnn(m, reverse=True), lambda: (H0, XS), True),
    ("preprocessed", preprocessed, lambda: (H0, XS), True),
    ("vector_steps", vector_steps, lambda: (H0, _f32(L, K)), True),
    ("two_xs", two_xs, lambda: (H0, XS, np.arange(L, dtype=np.int32) - 4), True),
    ("rhs_product", rhs_product, lambda: (H0, XS), True),
    ("carry_is_stacked", carry_is_stacked, lambda: (_f32(B, H), XS), True),
    ("invariant_inputs", invariant_inputs, lambda: (H0, XS, U), True),
    ("nested", nested, lambda: (H0, XS), True),
    ("grad_of_scan", grad_of_scan, lambda: (W, U, XS), True),
    ("vmap_of_scan", vmap_of_scan, lambda: (np.stack([H0, -H0]), XS), True),
    ("vmap_of_scan_xs", lambda m: m.vmap(rnn(m), in_axes=(None, 1), out_axes=1),
     lambda: (H0, _f32(L, 2, B, K)), True),
    # lengths below MIN_LENGTH run the plain loop (length 0 runs none)
    ("length_0", rnn, lambda: (H0, XS[:0]), True),
    ("length_1", rnn, lambda: (H0, XS[:1]), True),
    ("length_below_min", rnn, lambda: (H0, XS[:scan_hoist.MIN_LENGTH - 1]), True),
    ("length_min", rnn, lambda: (H0, XS[:scan_hoist.MIN_LENGTH]), True),
]


def _scan_bodies(jaxpr):
  """Every scan eqn's (body, num_consts, num_carry, reverse), nested ones included."""
  found = []
  for e in jaxpr.eqns:
    if e.primitive.name == "scan":
      p = e.params
      found.append((p["jaxpr"], p["num_consts"], p["num_carry"], p["reverse"]))
      found += _scan_bodies(p["jaxpr"].jaxpr)
    for sub in e.params.values():
      if hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns") and e.primitive.name != "scan":
        found += _scan_bodies(sub.jaxpr)
  return found


def _run(b, closed, args):
  with backend.using_backend(b):
    return [np.asarray(o) for o in b.compile(closed)(*args)]


def _assert_close(got, want):
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.shape == w.shape and g.dtype == w.dtype
    if g.dtype.kind in "iub":
      np.testing.assert_array_equal(g, w)
    else:
      np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


class _Pool:
  """tiled_executor.POOL's stand-in: a pool of two threads, whatever the machine has."""

  def __init__(self):
    from concurrent.futures import ThreadPoolExecutor
    self.executor = ThreadPoolExecutor(2, thread_name_prefix="test-pool")

  def get(self):
    return self.executor, 3


def _pipelined(monkeypatch):
  """Every scan of 4 or more steps pipelined in chunks of 2-3 steps on a pool."""
  monkeypatch.setattr(tiled_executor, "POOL", _Pool())
  monkeypatch.setattr(scan_hoist, "PIPELINE_MIN", 4)
  monkeypatch.setattr(scan_hoist, "PIPELINE_MIN_CHUNK", 2)
  monkeypatch.setattr(scan_hoist, "PIPELINE_CHUNKS", 5)


@pytest.mark.parametrize("pipelined", [False, True], ids=["one_chunk", "pipelined"])
@pytest.mark.parametrize("name, make, args, hoists", CASES, ids=[c[0] for c in CASES])
def test_hoisted_equals_tier0(name, make, args, hoists, pipelined, monkeypatch):
  # always the hoisted loop where the length allows (no timing-based choice)
  monkeypatch.setattr(adaptive, "ADAPTIVE", False)
  if pipelined:
    _pipelined(monkeypatch)
  args = args()
  closed = jaxlite.make_jaxpr(make(jaxlite))(*args)
  sources = [scan_hoist.compile_scan(TIER1, *body).__jaxlite_source__
             for body in _scan_bodies(closed.jaxpr)]
  assert sources
  # Where the body has a carry-free product, some loop hoists it (the grad case's backward scan
  # has none: its products all read the carried cotangent).
  assert any("_hoist.start(" in s for s in sources) == hoists
  want = _run(TIER0, closed, args)
  got = _run(TIER1, closed, args)
  _assert_close(got, want)
  # again: the batched program is cached per length
  _assert_close(_run(TIER1, closed, args), want)


@pytest.mark.parametrize("name, make, args, hoists", CASES, ids=[c[0] for c in CASES])
def test_hoisted_equals_jax(name, make, args, hoists):
  jax = oracle()
  args = args()
  got = jaxlite.tree_util.tree_leaves(jaxlite.jit(make(jaxlite))(*args))
  want = jax.tree_util.tree_leaves(jax.jit(make(jax))(*args))
  assert len(got) == len(want)
  for g, w in zip(got, want):
    g, w = np.asarray(g), np.asarray(w)
    assert g.shape == w.shape and g.dtype == w.dtype
    if g.dtype.kind in "iub":
      np.testing.assert_array_equal(g, w)
    else:  # JAX-COMPAT 10.4/10.5: transcendentals and products
      np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _body(f, *args):
  """((body, num_consts, num_carry, reverse), the loop's operands: consts, carry, xs) of the one
  scan in f's jaxpr."""
  closed = jaxlite.make_jaxpr(f)(*args)
  eqns = closed.jaxpr.eqns
  (at,) = [i for i, e in enumerate(eqns) if e.primitive.name == "scan"]
  eqn = eqns[at]
  before = core.Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars, list(eqn.invars), eqns[:at])
  ins = [np.asarray(v, var.aval.dtype) if isinstance(var.aval.dtype, np.dtype) else v
         for v, var in zip(core.eval_jaxpr(before, closed.consts, *args), eqn.invars)]
  p = eqn.params
  return (p["jaxpr"], p["num_consts"], p["num_carry"], p["reverse"]), ins


def _call(loop, body, ins, length):
  """Runs a scan loop function directly on operands `ins` with xs cut to `length`: (carry, ys)."""
  nc, ncar = body[1], body[2]
  ins = ins[:nc + ncar] + [x[:length] for x in ins[nc + ncar:]]
  ys = [np.empty((length, *a.shape), a.dtype) for a in body[0].out_avals[ncar:]]
  return list(loop(*ins, *ys, length)), ys


def test_loop_sources():
  body, _ = _body(rnn(jaxlite), H0, XS)
  hoisted = scan_hoist.compile_scan(TIER1, *body).__jaxlite_source__
  assert "_hoist.start(_length" in hoisted and "_h0[_i - _lo]" in hoisted
  assert "_xs0[_i]" not in hoisted  # x is read only by the hoisted product
  assert hoisted.count("np.matmul") == 1  # h @ W stays in the loop
  # tier 0 keeps its plain loop: both products per step
  plain = TIER0.compile_scan(*body).__jaxlite_source__
  assert "_hoist" not in plain and plain.count("np.matmul") == 2


def test_dense_broadcast_without_product():
  # no product to hoist, but the bias broadcast the loop adds each step is made dense
  def step(h, x):
    return jaxlite.numpy.tanh(h * x + BIAS), h
  xs = _f32(L, B, H)
  body, ins = _body(lambda h, xs: jaxlite.lax.scan(step, h, xs), H0, xs)
  loop = scan_hoist.compile_scan(TIER1, *body)
  src = loop.__jaxlite_source__
  assert "= np.array(" in src and "_hoist" not in src
  got = _call(loop, body, ins, L)
  want = _call(TIER0.compile_scan(*body), body, ins, L)
  for g, w in zip(got[0] + got[1], want[0] + want[1]):
    np.testing.assert_array_equal(g, w)  # the same NumPy calls: bit for bit


@pytest.mark.parametrize("step", [
    lambda h, x: (jaxlite.numpy.tanh(h + x * 2.0), h),    # elementwise only: cheap per step
    lambda h, x: (h @ W + x[:, :H], None),                 # no product reads only x
    lambda h, x: ((h + x[:, :H]) @ W, None),               # the product reads the carry
])
def test_nothing_to_do_keeps_tier0_loop(step):
  xs = _f32(L, B, H)
  body, _ = _body(lambda h, xs: jaxlite.lax.scan(step, h, xs), H0, xs)
  src = scan_hoist.compile_scan(TIER1, *body).__jaxlite_source__
  assert src == TIER0.compile_scan(*body).__jaxlite_source__


def test_disabled_keeps_tier0_loop(monkeypatch):
  body, _ = _body(rnn(jaxlite), H0, XS)
  monkeypatch.setattr(scan_hoist, "ENABLED", False)
  assert scan_hoist.compile_scan(TIER1, *body).__jaxlite_source__ == \
      TIER0.compile_scan(*body).__jaxlite_source__


def test_random_and_effects_stay_in_loop():
  # random bits from a per-step key: never hoisted (keys are not plain NumPy dtypes)
  def f(h, keys):
    def step(h, k):
      z = jaxlite.random.normal(k, (B, K)) @ U
      return h @ W + z, None
    return jaxlite.lax.scan(step, h, keys)
  keys = jaxlite.random.split(jaxlite.random.key(0), L)
  body, _ = _body(f, H0, keys)
  assert "_hoist" not in scan_hoist.compile_scan(TIER1, *body).__jaxlite_source__


def test_callbacks_stay_in_loop():
  # a callback's result feeding the product: the callback runs once per step, in order, and
  # the product that reads it stays in the loop with it
  seen = []

  def double(x):
    seen.append(float(x[0, 0]))
    return x * 2

  def f(h, xs):
    def step(h, x):
      x2 = jaxlite.pure_callback(double, jaxlite.ShapeDtypeStruct(x.shape, x.dtype), x)
      return jaxlite.numpy.tanh(h @ W + x2 @ U), None
    return jaxlite.lax.scan(step, h, xs)
  body, ins = _body(f, H0, XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  assert "_hoist" not in loop.__jaxlite_source__
  got = _call(loop, body, ins, L)
  assert seen == [float(x) for x in XS[:, 0, 0]]
  want = _call(TIER0.compile_scan(*body), body, ins, L)
  np.testing.assert_array_equal(got[0][0], want[0][0])


def test_outside_length_range_runs_plain_loop(monkeypatch):
  body, ins = _body(rnn(jaxlite), H0, XS)
  want = _call(TIER0.compile_scan(*body), body, ins, L)
  # A budget below one scan's stacked values: the plain loop runs, nothing is batched.
  monkeypatch.setattr(scan_hoist, "MAX_BYTES", 16)
  loop = scan_hoist.compile_scan(TIER1, *body)
  assert isinstance(loop, scan_hoist.AdaptiveLoop) and loop.max_length == 0
  got = _call(loop, body, ins, L)
  assert loop.last_mode is None and not loop.hoisted.__globals__["_hoist"].by_length
  for g, w in zip(got[0] + got[1], want[0] + want[1]):
    np.testing.assert_array_equal(g, w)


def test_stacked_carry_is_not_a_view(monkeypatch):
  monkeypatch.setattr(adaptive, "ADAPTIVE", False)
  body, ins = _body(carry_is_stacked(jaxlite), _f32(B, H), XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  (carry,), _ = _call(loop, body, ins, L)
  assert loop.last_mode is True
  assert loop.hoisted.__globals__["_hoist"].by_length[L] is not None
  # a copy of the last row, not a view keeping all L rows alive
  assert carry.flags.owndata and carry.base is None
  np.testing.assert_allclose(carry, XS[-1] @ U, rtol=1e-6, atol=1e-6)


def test_batched_program_per_length(monkeypatch):
  monkeypatch.setattr(adaptive, "ADAPTIVE", False)
  body, ins = _body(rnn(jaxlite), H0, XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  for n in (L, L - 2, L):
    got = _call(loop, body, ins, n)
    want = _call(TIER0.compile_scan(*body), body, ins, n)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
      np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
  assert sorted(loop.hoisted.__globals__["_hoist"].by_length) == [L - 2, L]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [11, 12, 4, 3])
def test_pipelined_chunks(monkeypatch, length, reverse):
  _pipelined(monkeypatch)
  monkeypatch.setattr(adaptive, "ADAPTIVE", False)
  body, ins = _body(rnn(jaxlite, reverse), H0, XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  loop.batched.pipeline = True
  run = loop.batched.start(length, *ins[3:4], U)
  run.close()
  covered = sorted(i for lo, hi in run.chunks for i in range(lo, hi))
  assert covered == list(range(length))  # every step once
  if length < 4:
    assert len(run.chunks) == 1
  else:  # chunks of at least 2 steps, at most 5 chunks
    assert 1 < len(run.chunks) <= 5 and all(hi - lo >= 2 for lo, hi in run.chunks)
  firsts = [lo for lo, _ in run.chunks]
  assert firsts == sorted(firsts, reverse=reverse)  # the loop's order
  got = _call(loop, body, ins, length)
  want = _call(TIER0.compile_scan(*body), body, ins, length)
  for g, w in zip(got[0] + got[1], want[0] + want[1]):
    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_exception_in_loop_restores_blas_threads(monkeypatch):
  _pipelined(monkeypatch)
  monkeypatch.setattr(adaptive, "ADAPTIVE", False)
  calls = []
  monkeypatch.setattr(blas, "_BLAS", [(lambda: 4, calls.append)])

  def boom(x):
    if x[0, 0] == XS[5, 0, 0]:
      raise ValueError("step 5")
    return x

  def f(h, xs):
    def step(h, x):
      x2 = jaxlite.pure_callback(boom, jaxlite.ShapeDtypeStruct(x.shape, x.dtype), x)
      return jaxlite.numpy.tanh(h @ W + x @ U) + x2[:, :1], None
    return jaxlite.lax.scan(step, h, xs)
  body, ins = _body(f, H0, XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  assert "_hoist.start(" in loop.__jaxlite_source__
  # (the callback's error arrives as JAX reports it: a JaxRuntimeError holding its traceback)
  with pytest.raises(jaxlite.errors.JaxRuntimeError, match="ValueError: step 5"):
    _call(loop, body, ins, L)
  assert calls == [1, 4]


def test_stacked_product_on_one_blas_thread(monkeypatch):
  calls = []
  monkeypatch.setattr(blas, "_BLAS", [(lambda: 4, calls.append)])
  body, ins = _body(rnn(jaxlite), H0, XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  assert loop.blas
  _call(loop, body, ins, L)
  assert loop.last_mode is True and calls == [1, 4]  # one thread, then the count restored


def test_openblas_found_where_numpy_uses_it():
  config = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
  lib = blas.openblas()
  if "openblas" not in config["name"].lower() or not os.path.exists("/proc/self/maps"):
    pytest.skip(f"NumPy's BLAS is {config['name']}")
  get, set_threads = lib
  n = get()
  set_threads(1)
  try:
    assert get() == 1
  finally:
    set_threads(n)
  assert get() == n


def test_adaptive_pipeline_or_one_chunk(monkeypatch):
  _pipelined(monkeypatch)
  monkeypatch.setattr(blas, "_BLAS", [(lambda: 1, lambda n: None)])
  body, ins = _body(rnn(jaxlite), H0, XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  want = _call(TIER0.compile_scan(*body), body, ins, L)
  chunks = []
  start = loop.batched.start

  def counting_start(*args):
    run = start(*args)
    chunks.append(len(run.chunks))
    return run
  loop.batched.start = counting_start
  modes = []
  for _ in range(2 * adaptive.PROBES + 2):
    got = _call(loop, body, ins, L)
    modes.append(loop.last_mode)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
      np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
  assert modes[:2 * adaptive.PROBES] == [True, False] * adaptive.PROBES
  assert loop.mode is not None and modes[-1] == loop.mode
  # pipelined (several chunks) exactly when the mode was True
  assert [n > 1 for n in chunks] == modes


def test_adaptive_probes_both_then_keeps_the_faster(monkeypatch):
  # without control of the BLAS's threads, the loop times both
  monkeypatch.setattr(blas, "_BLAS", [None])
  body, ins = _body(rnn(jaxlite), H0, XS)
  loop = scan_hoist.compile_scan(TIER1, *body)
  want = _call(TIER0.compile_scan(*body), body, ins, L)
  modes = []
  for _ in range(2 * adaptive.PROBES):
    got = _call(loop, body, ins, L)
    modes.append(loop.last_mode)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
      np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
  assert modes == [True, False] * adaptive.PROBES
  assert loop.mode is not None  # the faster median per step
  # the plain loop made 3x slower: the choice is the hoisted one from then on
  plain = loop.plain
  loop2 = scan_hoist.compile_scan(TIER1, *body)
  assert loop2 is not loop

  def slow_plain(*args):
    out = plain(*args)
    time.sleep(0.002)
    return out
  loop2.plain = slow_plain
  for _ in range(2 * adaptive.PROBES + 3):
    _call(loop2, body, ins, L)
  assert loop2.mode is True and loop2.last_mode is True


@pytest.mark.parametrize("reverse", [False, True])
def test_step_results_made_in_their_ys_rows(reverse):
  # A step's ufunc result that is a ys row is computed into that row (no copy): stored twice it
  # is made in the first row and copied to the second; the final carry, which was the last row,
  # is returned as a copy, so writing into it leaves ys as it was. Values as tier 0's.
  def f(h0, xs):
    def step(h, x):
      h = jaxlite.numpy.tanh(h @ W + x @ U + BIAS)
      return h, (h, h, h * 2.0)
    return jaxlite.lax.scan(step, h0, xs, reverse=reverse)
  closed = jaxlite.make_jaxpr(f)(H0, XS)
  want = TIER0.compile(closed)(H0, XS)
  got = TIER1.compile(closed)(H0, XS)
  for a, b in zip(want, got):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-6)
  carry, ys0, ys1, ys2 = (np.asarray(o) for o in got)
  assert not np.shares_memory(carry, ys0) and not np.shares_memory(ys0, ys1)
  np.testing.assert_array_equal(ys0, ys1)
  np.testing.assert_array_equal(carry, ys0[0 if reverse else -1])
  (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
  p = eqn.params
  loop = scan_hoist.compile_scan(TIER1, p["jaxpr"], p["num_consts"], p["num_carry"], reverse)
  for fn in (loop.hoisted, loop.plain):
    src = fn.__jaxlite_source__
    assert "out=_ys0[_i])" in src and "_ys0[_i] = " not in src and "_ys1[_i] = " in src
    assert "return (v3.copy(),)" in src or ".copy()," in src
