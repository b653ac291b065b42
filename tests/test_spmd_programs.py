"""What each device of a shard_map runs (spmd/programs.py): runs of psums fused into one
rendezvous, replicated outputs computed by one device each (balanced), the other replicas'
work pruned; checked on a data-parallel MLP step (unchecked: values equal on 1, 2 and 4
devices; checked: JAX's values, the gradient summed by the implicit pvary's transpose) and
against JAX for which replica a check_vma=False output reads.

One subprocess per library with 4 CPU devices (the count freezes at first use)."""

import os

import numpy as np
import pytest

from conftest import oracle, run_json_program

_PROGRAM = r"""
import itertools, json, sys
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 4)
lax, jnp = jax.lax, jax.numpy
P, NS, Mesh = jax.sharding.PartitionSpec, jax.sharding.NamedSharding, jax.sharding.Mesh
out = {}
SIZES, BATCH, LR = (12, 8, 8, 4), 16, 0.1
rng = np.random.default_rng(0)
params0 = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            rng.standard_normal(n).astype(np.float32) / 10) for m, n in itertools.pairwise(SIZES)]
X = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
Y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]

def loss(params, x, y):
  h = x
  for w, b in params[:-1]:
    h = jnp.tanh(h @ w + b)
  w, b = params[-1]
  return -jnp.sum(jax.nn.log_softmax(h @ w + b) * y) / BATCH

def local_step(params, x, y):
  lv, grads = jax.value_and_grad(loss)(params, x, y)
  lv, grads = lax.psum((lv, grads), "b")
  return lv, jax.tree.map(lambda p, g: p - LR * g, params, grads)

for check in (True, False):
  for n in (1, 2, 4):
    mesh = Mesh(np.array(jax.devices()[:n]), ("b",))
    step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("b"), P("b")),
                                 out_specs=(P(), P()), check_vma=check))
    params, losses = params0, []
    for _ in range(4):
      lv, params = step(params, X, Y)
      losses.append(float(lv))
    key = f"dp_{n}" + ("" if check else "_unchecked")
    out[key] = [losses, [np.asarray(l).tolist() for l in jax.tree.leaves(params)]]
    out[key + "_specs"] = [repr(l.sharding.spec) for l in jax.tree.leaves(params)]

mesh = Mesh(np.array(jax.devices()), ("b",))
A = np.arange(8, dtype=np.float32).reshape(4, 2)
f = jax.shard_map(lambda a: a + lax.axis_index("b"), mesh=mesh, in_specs=P("b"), out_specs=P(),
                  check_vma=False)
out["unchecked_replica"] = np.asarray(f(A)).tolist()
out["unchecked_replica_jit"] = np.asarray(jax.jit(f)(A)).tolist()
g = jax.shard_map(lambda a: (lax.psum(a, "b"), lax.pmax(a, "b") * 2, lax.psum(a * a, "b"), a),
                  mesh=mesh, in_specs=P("b"), out_specs=(P(), P(), P(), P("b")))
out["mixed"] = [np.asarray(v).tolist() for v in g(A)]

if sys.argv[1] == "jaxlite":
  from jaxlite._src import shard_map as sm
  from jaxlite._src.spmd import programs, runtime
  calls = []
  real = runtime.exchange_parallel
  def counted(*a, **k):
    calls.append(1)
    return real(*a, **k)
  runtime.exchange_parallel = counted
  mesh2 = Mesh(np.array(jax.devices()[:2]), ("b",))
  sm_step = jax.shard_map(local_step, mesh=mesh2, in_specs=(P(), P("b"), P("b")),
                          out_specs=(P(), P()))
  sm_step(params0, X, Y)
  runtime.exchange_parallel = real
  out["rendezvous_per_device"] = len(calls) / 2
  closed = jax.make_jaxpr(sm_step)(params0, X, Y).eqns[0].params["jaxpr"]
  avals = closed.out_avals
  writers = sm._writers(tuple(P() for _ in avals), mesh2, avals, True)
  out["writers"] = [sorted(w) for w in writers]
  progs = programs.device_programs(closed, mesh2, writers)
  out["eqns"] = [len(p.closed.jaxpr.eqns) for p in progs]
  out["eqns_whole"] = len(programs.fuse_psums(closed).jaxpr.eqns)
  from jaxlite._src.lax import parallel
  fused = jax.vmap(lambda a, b: parallel.psum_fused_p.bind(a, b, axes=("i",)), axis_name="i")
  out["fused_vmap"] = [np.asarray(o).tolist() for o in fused(np.arange(3.), A[:3])]
  out["fused"] = [sum(e.primitive.name == "psum_fused" for e in p.closed.jaxpr.eqns)
                  for p in progs]
  # psums interleaved with work that does not read them (a backward pass's per-layer gradient
  # psums) are deferred into one run; a pmax in between keeps the collective order.
  def interleaved(a):
    s1 = lax.psum(a, "b")
    t = s1.T @ a  # reads s1: deferred with it
    s2 = lax.psum(a * 3, "b")
    s3 = lax.psum(t, "b")  # reads a deferred value: runs after the first run
    return s1, s2, s3, lax.pmax(a, "b"), lax.psum(a - 1, "b")
  isp = jax.shard_map(interleaved, mesh=mesh, in_specs=P("b"), out_specs=P())
  body = jax.make_jaxpr(isp)(A).eqns[0].params["jaxpr"]
  out["sunk"] = [e.primitive.name for e in programs.fuse_psums(body).jaxpr.eqns]
  out["sunk_values"] = [np.asarray(v).tolist() for v in jax.jit(isp)(A)]
print(json.dumps(out))
"""


def _run(mod):
  # The per-device programs are what this module checks: shard_map's stacked path (one program
  # over all devices' blocks, the default where it applies; tests/test_spmd_stacked.py) is off.
  return run_json_program(_PROGRAM, mod, JAXLITE_SPMD_STACKED="0")


@pytest.fixture(scope="module")
def ours():
  return _run("jaxlite")


@pytest.fixture(scope="module")
def theirs():
  oracle()
  return _run("jax")


def test_data_parallel_step_equal_on_1_2_4_devices(ours):
  # check_vma=False: the gradient taken inside the body is the device's own part, so the
  # explicit psum makes the step the same on any number of devices.
  suffix = "_unchecked"
  losses1, params1 = ours["dp_1" + suffix]
  assert losses1[-1] < losses1[0]
  for n in (2, 4):
    losses, params = ours[f"dp_{n}{suffix}"]
    np.testing.assert_allclose(losses, losses1, rtol=1e-5, atol=1e-6)
    for a, b in zip(params, params1):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours[f"dp_{n}{suffix}_specs"] == ["P()"] * 6


@pytest.mark.parametrize("n", [1, 2, 4])
def test_data_parallel_step_checked_equals_jax(ours, theirs, n):
  # check_vma=True: the replicated params meet the sharded batch through an implicit pvary, whose
  # transpose psums, so the gradient is already summed over the devices and the explicit psum
  # sums it again (n times the 1-device step): JAX's values, not the unchecked ones.
  losses, params = ours[f"dp_{n}"]
  want_losses, want_params = theirs[f"dp_{n}"]
  np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
  for a, b in zip(params, want_params):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
  if n > 1:
    assert not np.allclose(losses, ours["dp_1"][0], rtol=1e-3)
  assert ours[f"dp_{n}_specs"] == theirs[f"dp_{n}_specs"] == ["P()"] * 6


def test_one_rendezvous_for_the_gradient_psums(ours):
  # loss + 6 gradients psummed: 7 psums, fused into one exchange per device (jaxlite's SPMD
  # runtime; on the xla backend XLA's all-reduce combiner does this, and nothing rendezvous
  # through the runtime)
  assert ours["rendezvous_per_device"] == (0 if os.environ.get("JAXLITE_BACKEND") == "xla"
                                           else 1)
  assert ours["fused"] == [1, 1]


def test_replicated_outputs_shared_out_and_replicas_pruned(ours):
  # the loss and the 6 updated parameters: the biggest (12x8 weights) on device 0, the next
  # on device 1, ... each device computes only its own updates
  writers = ours["writers"]
  assert sorted(set(d for w in writers for d in w)) == [0, 1]
  assert all(len(w) == 1 for w in writers)
  # each device's program drops the updates of the parameters the other one returns
  assert max(ours["eqns"]) < ours["eqns_whole"]


def test_fused_psum_under_vmap_is_one_psum_per_operand(ours):
  A = np.arange(8, dtype=np.float32).reshape(4, 2)
  a, b = ours["fused_vmap"]
  assert a == [3.0] * 3
  np.testing.assert_array_equal(b, np.tile(A[:3].sum(0), (3, 1)))


def test_mixed_collectives_known_answers(ours):
  A = np.arange(8, dtype=np.float32).reshape(4, 2)
  s, m, q, a = ours["mixed"]
  np.testing.assert_array_equal(s, A.sum(0, keepdims=True))
  np.testing.assert_array_equal(m, A.max(0, keepdims=True) * 2)
  np.testing.assert_array_equal(q, (A * A).sum(0, keepdims=True))
  np.testing.assert_array_equal(a, A)


def test_unchecked_replicated_output_reads_device_0_as_jax():
  want = [[0.0, 1.0]]  # device 0's block, axis_index 0
  ours = _run("jaxlite")
  assert ours["unchecked_replica"] == want and ours["unchecked_replica_jit"] == want
  oracle()
  theirs = _run("jax")
  for k in ("unchecked_replica", "unchecked_replica_jit", "mixed"):
    assert ours[k] == theirs[k], k
  # (check_vma=True differs: JAX's grad of a replicated parameter is already psummed inside
  # the body, so the step's own psum multiplies it by the device count; jaxlite types the
  # body after differentiating it and sums once. Compared here without the check.)
  for n in (1, 2, 4):
    np.testing.assert_allclose(ours[f"dp_{n}_unchecked"][0], theirs[f"dp_{n}_unchecked"][0],
                               rtol=1e-5)
  np.testing.assert_allclose(ours["dp_1"][0], theirs["dp_1"][0], rtol=1e-5)


def test_psums_apart_are_deferred_into_one_run(ours):
  # (check_vma makes the psums psum_invariant eqns)
  names = [n.replace("psum_invariant", "psum") for n in ours["sunk"]
           if n in ("psum", "psum_invariant", "psum_fused", "pmax")]
  # psum(a), psum(a*3) fused; psum(t) reads the deferred dot, so after it; the pmax keeps its
  # place before the last psum
  assert names == ["psum_fused", "psum", "pmax", "psum"], " ".join(ours["sunk"])
  A = np.arange(8, dtype=np.float32).reshape(4, 2)
  blocks = A.reshape(4, 1, 2)
  s1 = blocks.sum(0)
  want = [s1, (blocks * 3).sum(0), sum(s1.T @ b for b in blocks), blocks.max(0),
          (blocks - 1).sum(0)]
  for got, w in zip(ours["sunk_values"], want):
    np.testing.assert_allclose(got, w, rtol=1e-6)
