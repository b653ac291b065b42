"""Bad input to the sharding APIs (issue 12, item 7), one table: indivisible dimensions, unknown
and repeated axis names, specs longer than the rank, arrays on different meshes, collectives
over unbound axes, out_specs claiming replication, invalid reshards, collectives that cannot
complete. Each row names JAX 0.10.2's exception class and phrases its message must hold; the
same program runs under JAX (where installed) and its class and phrases are checked too.

The device count freezes at first use, so the cases run in one subprocess per library (4 CPU
devices), which prints {case: [class name, message] or None} as JSON."""

import os

import pytest

from conftest import oracle, run_json_program

_PROGRAM = r"""
import json, os, sys, time
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 4)
lax, jnp = jax.lax, jax.numpy
P, NS, AxisType = jax.sharding.PartitionSpec, jax.sharding.NamedSharding, jax.sharding.AxisType
reshard = jax.sharding.reshard
auto = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
expl = jax.make_mesh((2, 2), ("x", "y"))
m4 = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
half = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Auto,))
upper = jax.sharding.Mesh(np.array(jax.devices()[2:]).reshape(2, 1), ("x", "y"),
                          axis_types=(AxisType.Auto,) * 2)
X6 = np.arange(24, dtype=np.float32).reshape(6, 4)
X = np.arange(32, dtype=np.float32).reshape(8, 4)
on_half = jax.device_put(X[:4], NS(half, P("x")))
on_m4 = jax.device_put(X[:4], NS(m4, P("x")))
on_upper = jax.device_put(X, NS(upper, P("x")))
ex = jax.device_put(X, NS(expl, P("x")))
ex6 = jax.device_put(X6, NS(expl, P()))
out = {}

def sm(f, i=P("x"), o=P("x"), mesh=auto, **kw):
  return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)

def under(mesh, thunk):
  def run():
    with jax.set_mesh(mesh):
      return thunk()
  return run

def stuck(mesh, body, i=P("x"), o=P("x")):
  def run():
    t = time.time()
    try:
      jax.block_until_ready(sm(body, i=i, o=o, mesh=mesh, check_vma=False)(X))
    finally:
      out["stuck_seconds"] = max(out.get("stuck_seconds", 0), time.time() - t)
  return run

CASES = {
  # indivisible dimensions
  "device_put_indivisible": lambda: jax.device_put(X6, NS(m4, P("x"))),
  "device_put_indivisible_explicit": lambda: jax.device_put(X6, NS(expl, P(("x", "y")))),
  "device_put_indivisible_tuple": lambda: jax.device_put(X[:, :2], NS(auto, P(None, ("x", "y")))),
  "shard_map_in_indivisible": lambda: sm(lambda a: a, mesh=m4)(X6),
  "shard_map_in_indivisible_jit": lambda: jax.jit(sm(lambda a: a, mesh=m4))(X6),
  "jit_in_indivisible": lambda: jax.jit(jnp.sin, in_shardings=NS(m4, P("x")))(X6),
  "jit_out_indivisible": lambda: jax.jit(jnp.sin, out_shardings=NS(m4, P("x")))(X6),
  "wsc_indivisible_eager": lambda: lax.with_sharding_constraint(X6, NS(m4, P("x"))),
  # unknown axis names
  "named_sharding_unknown": lambda: NS(auto, P("z")),
  "device_put_unknown": lambda: jax.device_put(X, NS(auto, P("z"))),
  "shard_map_in_unknown": lambda: sm(lambda a: a, i=P("z"))(X),
  "shard_map_out_unknown": lambda: sm(lambda a: a, o=P("z"))(X),
  "shard_map_out_unknown_jit": lambda: jax.jit(sm(lambda a: a, o=P("z")))(X),
  "shard_map_axis_names": lambda: sm(lambda a: a, axis_names={"q"})(X),
  "jit_in_pspec_unknown": under(auto, lambda: jax.jit(jnp.sin, in_shardings=P("z"))(X)),
  "wsc_unknown": lambda: jax.jit(lambda a: lax.with_sharding_constraint(a, NS(auto, P("z"))))(X),
  # repeated axis names
  "named_sharding_dup": lambda: NS(auto, P("x", "x")),
  "named_sharding_dup_tuple": lambda: NS(auto, P(("x", "x"))),
  "device_put_dup": lambda: jax.device_put(X, NS(auto, P("x", "x"))),
  "shard_map_in_dup": lambda: sm(lambda a: a, i=P("x", "x"))(X),
  "shard_map_in_dup_tuple": lambda: sm(lambda a: a, i=P(("x", "x")))(X),
  "shard_map_out_dup": lambda: sm(lambda a: a, o=P("x", "x"))(X),
  "jit_in_dup": under(auto, lambda: jax.jit(jnp.sin, in_shardings=P("x", "x"))(X)),
  "jit_out_dup": under(auto, lambda: jax.jit(jnp.sin, out_shardings=P("x", "x"))(X)),
  "wsc_dup": under(auto, lambda: jax.jit(lambda a: lax.with_sharding_constraint(
      a, P("x", "x")))(X)),
  # specs longer than the rank
  "device_put_too_long": lambda: jax.device_put(X, NS(auto, P("x", None, None))),
  "shard_map_in_too_long": lambda: sm(lambda a: a, i=P("x", None, None))(X),
  "shard_map_out_too_long": lambda: sm(lambda a: a, o=P("x", None, None))(X),
  "jit_in_too_long": lambda: jax.jit(jnp.sin, in_shardings=NS(auto, P("x", None, None)))(X),
  "jit_out_too_long": lambda: jax.jit(jnp.sin, out_shardings=NS(auto, P("x", None, None)))(X),
  "jit_out_too_long_tuple": lambda: jax.jit(lambda a: (a, jnp.sin(a)), out_shardings=(
      None, NS(auto, P("x", None, None))))(X),
  # arrays on different meshes
  "eager_meshes": lambda: on_half + on_m4,
  "jit_meshes": lambda: jax.jit(lambda a, b: a + b)(on_half, on_m4),
  "jit_in_sharding_other_mesh": lambda: jax.jit(jnp.sin, in_shardings=NS(m4, P("x")))(on_half),
  "shard_map_arg_other_mesh": lambda: sm(lambda a: a)(on_upper),
  "shard_map_arg_other_mesh_jit": lambda: jax.jit(sm(lambda a: a))(on_upper),
  # collectives over axis names nothing binds
  "psum_outside": lambda: lax.psum(X, "z"),
  "pmax_outside": lambda: lax.pmax(X, "x"),
  "all_gather_outside": lambda: lax.all_gather(X, "x"),
  "ppermute_outside": lambda: lax.ppermute(X, "x", [(0, 1)]),
  "pshuffle_outside": lambda: lax.pshuffle(X, "x", [0]),
  "axis_index_outside": lambda: lax.axis_index("x"),
  "psum_in_jit": lambda: jax.jit(lambda a: lax.psum(a, "x"))(X),
  "ppermute_in_jit": lambda: jax.jit(lambda a: lax.ppermute(a, "x", [(0, 1)]))(X),
  "axis_index_in_jit": lambda: jax.jit(lambda a: a * lax.axis_index("x"))(X),
  "psum_unbound_in_shard_map": lambda: sm(lambda a: lax.psum(a, "z"), o=P())(X),
  "all_gather_unbound_in_shard_map": lambda: sm(lambda a: lax.all_gather(a, "z"), o=P())(X),
  "psum_non_manual_axis": lambda: sm(lambda a: lax.psum(a, "y"), axis_names={"x"})(X),
  # out_specs claiming replication the body does not produce (check_vma)
  "out_replicated_not": lambda: sm(lambda a: a, o=P())(X),
  "out_replicated_not_y": lambda: sm(lambda a: a * lax.axis_index("y"))(X),
  "out_replicated_not_jit": lambda: jax.jit(sm(lambda a: a, o=P()))(X),
  # reshard to an invalid sharding
  "reshard_unknown": under(expl, lambda: reshard(ex, P("z"))),
  "reshard_dup": under(expl, lambda: reshard(ex, P("x", "x"))),
  "reshard_indivisible": under(expl, lambda: reshard(ex6, P(("x", "y")))),
  "reshard_named_indivisible": lambda: reshard(ex6, NS(expl, P(("x", "y")))),
  "reshard_in_jit_indivisible": under(expl, lambda: jax.jit(
      lambda a: reshard(a, P(("x", "y"))))(ex6)),
  "reshard_in_jit_unknown": under(expl, lambda: jax.jit(lambda a: reshard(a, P("z")))(ex)),
  "reshard_no_mesh": lambda: reshard(X, P("x")),
  "reshard_auto_axis": under(auto, lambda: reshard(X, P("x"))),
  "reshard_auto_mesh_sharding": lambda: reshard(ex, NS(m4, P("x"))),
}
# JAX aborts the whole process (XLA's rendezvous timeout) here, and so does jaxlite on the xla
# backend (the same XLA collectives); jaxlite's own SPMD runtime raises CollectiveError.
if sys.argv[1] == "jaxlite" and os.environ.get("JAXLITE_BACKEND") != "xla":
  CASES.update({
    "stuck_cond": stuck(m4, lambda a: lax.cond(lax.axis_index("x") == 0,
                                               lambda b: lax.psum(b, "x"), lambda b: b * 2, a)),
    "stuck_other_axis": stuck(auto, lambda a: lax.cond(
        lax.axis_index("x") == 0, lambda b: lax.psum(b, "y"), lambda b: lax.psum(b, "x"), a),
        i=P(("x", "y")), o=P(("x", "y"))),
  })
for name, thunk in CASES.items():
  try:
    jax.block_until_ready(thunk())
    out[name] = None
  except Exception as e:
    out[name] = [type(e).__name__, str(e)]
# Allowed by JAX: the results are checked against the unsharded values.
allowed = {
  "wsc_indivisible_jit": lambda: jax.jit(lambda a: lax.with_sharding_constraint(
      a * 2, NS(m4, P("x"))))(X6),
  "reshard_trailing_nones": lambda: reshard(ex, NS(expl, P("x", None, None))),
}
for name, thunk in allowed.items():
  r = thunk()
  out[name] = [np.asarray(r).tolist(), repr(r.sharding.spec)]
print(json.dumps(out))
"""

_M4 = "NamedSharding(mesh=Mesh('x': 4, axis_types=(Auto,)), spec=P('x',), memory_kind=device)"
_AUTO3 = ("NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Auto, Auto)), "
          "spec=P('x', None, None), memory_kind=device)")
_DUP = "can map every mesh axis to at most one positional dimension, but P('x', 'x') has " \
       "duplicate entries for `x`"
_INCOMPATIBLE = "Received incompatible devices for jitted computation. Got argument"
_REPLICATION = "was given out_specs which require replication which can't be statically " \
               "inferred given the mesh"
_RESHARD_AUTO = "PartitionSpec passed to reshard cannot contain axis names that are of type " \
                "Auto or Manual. Got PartitionSpec: P('x',) with axis name: x of type: " \
                "AxisType.Auto"

# name -> (JAX's exception class, phrases its message holds: function, argument, expected, got)
ROWS = {
    "device_put_indivisible": ("IndivisibleError", [
        f"Sharding {_M4} implies that array axis 0 is partitioned 4 times, but the dimension "
        "size is 6 (full shape: (6, 4), per-dimension tiling factors: [4, 1] should evenly "
        "divide the shape)"]),
    "device_put_indivisible_explicit": ("ValueError", [
        "Sharding spec ('x', 'y') implies that array axis 0 is partitioned 4 times, but does "
        "not evenly divide the dimension size 6. Got shape: (6, 4) and sharding"]),
    "device_put_indivisible_tuple": ("IndivisibleError", [
        "spec=P(None, ('x', 'y'))", "array axis 1 is partitioned 4 times, but the dimension "
        "size is 2 (full shape: (8, 2)"]),
    "shard_map_in_indivisible": ("ValueError", [
        "shard_map applied to the function '<lambda>' was given argument arrays with axis "
        "sizes that are not evenly divisible", "maps array axis 0 (of size 6) to mesh axis 'x' "
        "(of size 4), but 4 does not evenly divide 6"]),
    "shard_map_in_indivisible_jit": ("ValueError", ["4 does not evenly divide 6"]),
    "jit_in_indivisible": ("IndivisibleError", [
        f"Sharding {_M4} implies that array axis 0 is partitioned 4 times, but the dimension "
        "size is 6"]),
    "jit_out_indivisible": ("IndivisibleError", ["array axis 0 is partitioned 4 times, but "
                                                 "the dimension size is 6"]),
    "wsc_indivisible_eager": ("IndivisibleError", ["array axis 0 is partitioned 4 times, but "
                                                   "the dimension size is 6"]),
    "named_sharding_unknown": ("ValueError", [
        "Resource axis: z of P('z',) is not found in mesh: ('x', 'y')."]),
    "device_put_unknown": ("ValueError", ["Resource axis: z of P('z',) is not found in mesh"]),
    "shard_map_in_unknown": ("ValueError", [
        "shard_map in_specs argument must refer to an axis marked as manual",
        "in_specs refers to 'z'"]),
    "shard_map_out_unknown": ("ValueError", [
        "shard_map out_specs argument must refer to an axis marked as manual",
        "out_specs refers to 'z'"]),
    "shard_map_out_unknown_jit": ("ValueError", ["out_specs refers to 'z'"]),
    "shard_map_axis_names": ("ValueError", [
        "jax.shard_map requires axis_names=frozenset({'q'}) to be a subset of "
        "mesh.axis_names"]),
    "jit_in_pspec_unknown": ("ValueError", ["Resource axis: z of P('z',) is not found in mesh"]),
    "wsc_unknown": ("ValueError", ["Resource axis: z of P('z',) is not found in mesh"]),
    "named_sharding_dup": ("DuplicateSpecError", [f"A single NamedSharding spec specification "
                                                  f"{_DUP}"]),
    "named_sharding_dup_tuple": ("DuplicateSpecError", [
        "A single NamedSharding spec specification can map every mesh axis to at most one "
        "positional dimension, but P(('x', 'x'),) has duplicate entries for `x`"]),
    "device_put_dup": ("DuplicateSpecError", [f"A single NamedSharding spec specification "
                                              f"{_DUP}"]),
    "shard_map_in_dup": ("DuplicateSpecError", [_DUP]),
    "shard_map_in_dup_tuple": ("DuplicateSpecError", ["but P(('x', 'x'),) has duplicate "
                                                      "entries for `x`"]),
    "shard_map_out_dup": ("DuplicateSpecError", [_DUP]),
    "jit_in_dup": ("DuplicateSpecError", [f"A single in_shardings specification {_DUP}"]),
    "jit_out_dup": ("DuplicateSpecError", [f"A single out_shardings specification {_DUP}"]),
    "wsc_dup": ("DuplicateSpecError", [f"A single shardings specification {_DUP}"]),
    "device_put_too_long": ("ValueError", [
        f"One of device_put args is incompatible with its sharding annotation {_AUTO3}: "
        f"Sharding {_AUTO3} is only valid for values of rank at least 3, but was applied to a "
        "value of rank 2."]),
    "shard_map_in_too_long": ("ValueError", [
        "shard_map applied to the function '<lambda>' was given an in_specs entry which is too "
        "long", "in_specs is P('x', None, None) which has length 3, but the passed args[0], "
        "where args[0] is bound to <lambda>'s parameter 'a', has shape float32[8,4], which has "
        "rank 2 (and 2 < 3)"]),
    "shard_map_out_too_long": ("ValueError", [
        "was given an out_specs entry which is too long", "out_specs is P('x', None, None) "
        "which has length 3, but <lambda>(*args) has shape float32[4,4], which has rank 2 "
        "(and 2 < 3)"]),
    "jit_in_too_long": ("ValueError", [
        f"One of pjit arguments with pytree key path x is incompatible with its sharding "
        f"annotation {_AUTO3}", "only valid for values of rank at least 3, but was applied to "
        "a value of rank 2."]),
    "jit_out_too_long": ("ValueError", [
        f"One of pjit outputs with pytree key path result is incompatible with its sharding "
        f"annotation {_AUTO3}: Sharding {_AUTO3} is only valid for values of rank at least 3, "
        "but was applied to a value of rank 2."]),
    "jit_out_too_long_tuple": ("ValueError", ["One of pjit outputs with pytree key path "
                                              "result[1] is incompatible"]),
    "eager_meshes": ("ValueError", [
        _INCOMPATIBLE, "x of add with shape float32[4,4] and with device ids [0, 1] on "
        "platform CPU and", "with device ids [0, 1, 2, 3] on platform CPU"]),
    "jit_meshes": ("ValueError", [
        _INCOMPATIBLE, "with shape float32[4,4] and with device ids [0, 1] on platform CPU and "
        "argument b of", "with device ids [0, 1, 2, 3] on platform CPU"]),
    "jit_in_sharding_other_mesh": ("ValueError", [
        "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
        f"sharding: {_M4},\narg sharding: NamedSharding(mesh=Mesh('x': 2, axis_types=(Auto,)), "
        "spec=P('x',), memory_kind=device) for arg type: float32[4,4]"]),
    "shard_map_arg_other_mesh": ("ValueError", [
        f"{_INCOMPATIBLE} args[0] of", "with shape float32[8,4] and with device ids [2, 3] on "
        "platform CPU and shard_map inside jit with device ids [0, 1, 2, 3] on platform CPU"]),
    "shard_map_arg_other_mesh_jit": ("ValueError", [
        f"{_INCOMPATIBLE} a of", "with shape float32[8,4] and with device ids [2, 3] on "
        "platform CPU and shard_map inside jit with device ids [0, 1, 2, 3] on platform CPU"]),
    "psum_outside": ("NameError", ["unbound axis name: z"]),
    "pmax_outside": ("NameError", ["Found an unbound axis name: x. To fix this, please call "
                                   "psum under `jax.shard_map`."]),
    "all_gather_outside": ("NameError", ["unbound axis name: x"]),
    "ppermute_outside": ("NotImplementedError", ["Evaluation rule for 'ppermute' not "
                                                 "implemented"]),
    "pshuffle_outside": ("NotImplementedError", ["Evaluation rule for 'ppermute' not "
                                                 "implemented"]),
    "axis_index_outside": ("NameError", ["Found an unbound axis name: x. To fix this, please "
                                         "call axis_index under `jax.shard_map`."]),
    "psum_in_jit": ("NameError", ["Found an unbound axis name: x. To fix this, please call "
                                  "psum under `jax.shard_map`."]),
    "ppermute_in_jit": ("NameError", ["Found an unbound axis name: x. To fix this, please call "
                                      "ppermute under `jax.shard_map`."]),
    "axis_index_in_jit": ("NameError", ["Found an unbound axis name: x. To fix this, please "
                                        "call axis_index under `jax.shard_map`."]),
    # JAX 0.10.2 fails an internal assertion (an AssertionError without a message) here.
    "psum_unbound_in_shard_map": ("AssertionError", ["Found an unbound axis name: z. To fix this, "
                                                "please call psum under `jax.shard_map`."]),
    "all_gather_unbound_in_shard_map": ("NameError", ["unbound axis name: z"]),
    "psum_non_manual_axis": ("NameError", ["Found an unbound axis name: y."]),
    "out_replicated_not": ("ValueError", [
        _REPLICATION, "The mesh given has shape (2, 2) with corresponding axis names ('x', "
        "'y').", "out_specs is P() which implies that the corresponding output value is only "
        "varying across mesh axes {} and not {x}, but it was inferred to be possibly varying "
        "over {x}", "check_vma=False"]),
    "out_replicated_not_y": ("ValueError", [
        _REPLICATION, "out_specs is P('x',) which implies that the corresponding output value "
        "is replicated across mesh axis 'y', but could not infer replication over any axes"]),
    "out_replicated_not_jit": ("ValueError", [_REPLICATION, "out_specs is P() which implies"]),
    "reshard_unknown": ("ValueError", ["Resource axis: z of P('z',) is not found in mesh"]),
    "reshard_dup": ("DuplicateSpecError", [f"A single NamedSharding spec specification {_DUP}"]),
    "reshard_indivisible": ("ValueError", [
        "Sharding spec ('x', 'y') implies that array axis 0 is partitioned 4 times, but does "
        "not evenly divide the dimension size 6. Got shape: (6, 4) and sharding"]),
    "reshard_named_indivisible": ("ValueError", [
        "Sharding spec ('x', 'y') implies that array axis 0 is partitioned 4 times, but does "
        "not evenly divide the dimension size 6."]),
    "reshard_in_jit_indivisible": ("ValueError", [
        "Sharding spec ('x', 'y') implies that array axis 0 is partitioned 4 times, but does "
        "not evenly divide the dimension size 6."]),
    "reshard_in_jit_unknown": ("ValueError", ["Resource axis: z of P('z',) is not found in "
                                              "mesh"]),
    "reshard_no_mesh": ("ValueError", [
        "Using PartitionSpec when you are not under a mesh context is not allowed. Please pass "
        "a NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got "
        "P('x',)"]),
    "reshard_auto_axis": ("ValueError", [_RESHARD_AUTO]),
    "reshard_auto_mesh_sharding": ("ValueError", [_RESHARD_AUTO]),
}
# Rows where JAX's error is its own internal failure (an AssertionError with no message):
# jaxlite raises JAX's class with the message of the neighbouring NameError rows.
JAX_DIFFERS = {"psum_unbound_in_shard_map"}
# Rows only jaxlite runs: JAX's runtime aborts the process after its 40 s rendezvous timeout.
STUCK = {
    "stuck_cond": "collective over axes ('x',) cannot complete: 1 of 4 devices arrived",
    "stuck_other_axis": "collective over axes ('x',) cannot complete: 1 of 2 devices arrived",
}


def _run(mod):
  return run_json_program(_PROGRAM, mod, JAXLITE_COLLECTIVE_TIMEOUT="120")


@pytest.fixture(scope="module")
def ours():
  return _run("jaxlite")


@pytest.fixture(scope="module")
def theirs():
  oracle()
  return _run("jax")


@pytest.mark.parametrize("name", sorted(ROWS))
def test_raises_jax_class_and_message(ours, name):
  cls, phrases = ROWS[name]
  got = ours[name]
  assert got is not None, f"{name} did not raise"
  assert got[0] == cls, got
  for phrase in phrases:
    assert phrase in got[1], (phrase, got[1])


@pytest.mark.parametrize("name", sorted(ROWS))
def test_rows_hold_for_jax(theirs, name):
  cls, phrases = ROWS[name]
  got = theirs[name]
  if name in JAX_DIFFERS:
    assert got is not None and got[0] == cls == "AssertionError", got
    return
  assert got is not None and got[0] == cls, got
  for phrase in phrases:
    assert phrase in got[1], (phrase, got[1])


@pytest.mark.skipif(os.environ.get("JAXLITE_BACKEND") == "xla",
                    reason="on the xla backend XLA's collectives abort the process, as JAX's do")
def test_collective_that_cannot_complete_raises_at_once(ours):
  for name, phrase in STUCK.items():
    cls, msg = ours[name]
    assert cls == "CollectiveError" and msg.startswith(phrase), ours[name]
  # Found stuck when the last running device waits, not after the 120 s timeout.
  assert ours["stuck_seconds"] < 30, ours["stuck_seconds"]


def test_uneven_constraint_under_jit_and_trailing_nones_are_allowed(ours):
  import numpy as np
  X6 = np.arange(24, dtype=np.float32).reshape(6, 4)
  X = np.arange(32, dtype=np.float32).reshape(8, 4)
  np.testing.assert_array_equal(ours["wsc_indivisible_jit"][0], X6 * 2)
  assert ours["reshard_trailing_nones"] == [X.tolist(), "P('x', None)"]


def test_allowed_cases_match_jax(ours, theirs):
  assert ours["reshard_trailing_nones"] == theirs["reshard_trailing_nones"]
  assert ours["wsc_indivisible_jit"][0] == theirs["wsc_indivisible_jit"][0]
