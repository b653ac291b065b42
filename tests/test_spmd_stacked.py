"""shard_map's stacked path (parallel/shard_map_stacked.py): a body run once, vmapped over the
mesh axes, on every device's block stacked, in place of one program per device on the SPMD
runtime's threads. Checked against the runtime (the same call with the path off) and against
the unsharded computation (a data-parallel MLP step's loss and parameters equal one device's),
with the path's use counted: bodies with host callbacks or collectives under control flow stay
on the runtime, and a psum of a product batched over the devices becomes one product.

One subprocess with 8 CPU devices (the count freezes at first use)."""

import numpy as np
import pytest

from conftest import run_json_program

_PROGRAM = r"""
import itertools, json, sys
import numpy as np
import jaxlite as jax
jax.config.update("jax_num_cpu_devices", 8)
from jaxlite._src.parallel import shard_map_stacked as st
from jaxlite._src.lax import dot
lax, jnp, P = jax.lax, jax.numpy, jax.sharding.PartitionSpec
mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
x = (np.arange(32., dtype=np.float32).reshape(8, 4) / 7 - 2).astype(np.float32)
def sm(f, i=P("x"), o=P("x"), m=mesh, **kw):
  return jax.shard_map(f, mesh=m, in_specs=i, out_specs=o, **kw)
ring = [(i, (i + 1) % 4) for i in range(4)]
STACKED = {
  "psum_x": sm(lambda a: lax.psum(a * a, "x"), o=P()),
  "psum_x_novma": sm(lambda a: lax.psum(a * a, "x"), o=P(), check_vma=False),
  "psum_xy": sm(lambda a: lax.psum(a * a, ("x", "y")), i=P("x", "y"), o=P()),
  "psum_y_of_x": sm(lambda a: jnp.sin(lax.psum(a, "y")) * a),
  # psums of products batched over the devices, folded into one product (fold_device_sums):
  # rows of every device merged, and a product contracting its last dims
  "psum_gram_x": sm(lambda a: lax.psum(a.T @ jnp.sin(a), "x"), o=P()),
  "psum_outer_x": sm(lambda a: lax.psum(a @ a.T, "x"), i=P(None, "x"), o=P()),
  "pmax_x": sm(lambda a: lax.pmax(a, "x") - a, o=P("x")),
  "pmean_x": sm(lambda a: lax.pmean(jnp.sin(a), "x"), o=P()),
  "ppermute_x": sm(lambda a: lax.ppermute(a * a, "x", ring) * a),
  "all_gather_x": sm(lambda a: lax.all_gather(a, "x", tiled=True).sum(0) * a),
  "all_to_all_x": sm(lambda a: lax.all_to_all(a * a, "x", 1, 1, tiled=True)),
  "psum_scatter_x": sm(lambda a: lax.psum_scatter(jnp.sin(a), "x", scatter_dimension=1,
                                                  tiled=True)),
  "axis_index_xy": sm(lambda a: a * lax.axis_index(("x", "y")), i=P("x", "y"), o=P("x", "y")),
  "cond_in_body": sm(lambda a: lax.cond(lax.axis_index("x") > 1, jnp.sin, jnp.cos, a)),
  "dim1": sm(lambda a: a * 2 + lax.axis_index("x"), i=P(None, "x"), o=P(None, "x")),
  "yx": sm(lambda a: a - lax.axis_index("y"), i=P("y", "x"), o=P("y", "x")),
  "tuple_axes": sm(lambda a: jnp.cos(a) * lax.axis_index("y"), i=P(("x", "y")),
                   o=P(("x", "y"))),
  "tuple_axes_yx": sm(lambda a: jnp.sin(a) + lax.axis_index("x"), i=P(("y", "x")),
                      o=P(("y", "x"))),
  "replicated_in": (lambda f: lambda a: f(a, a[0]))(
      sm(lambda a, b: a * b.sum(), i=(P("x"), P()), o=P("x"))),
  "broadcast_out": sm(lambda a: jnp.ones((2, 4)) * 3, o=P("x", "y")),
  "ints": sm(lambda a: lax.psum((a * 7).astype(jnp.int32), "x") % 5, o=P()),
}
# collectives inside scans and nested calls: every device runs them alike
STACKED.update({
  "psum_in_scan": sm(lambda a: lax.scan(lambda c, r: (c + lax.psum(r, "x"), None),
                                        jnp.zeros(4), a)[0], o=P()),
  "psum_in_jit": sm(jax.jit(lambda a: lax.psum(jnp.sin(a), "x")), o=P()),
})
RUNTIME = {  # bodies the stacked path leaves to the per-device runtime
  "pure_callback": sm(lambda a: jax.pure_callback(
      lambda v: np.asarray(v) * 2, jax.ShapeDtypeStruct((2, 4), jnp.float32), a,
      vmap_method="sequential")),
  # a collective under a while_loop or a cond (trip counts and branches may differ by device)
  "psum_in_while": sm(lambda a: lax.while_loop(
      lambda c: c[1] < 3, lambda c: (c[0] + lax.psum(c[0], "x"), c[1] + 1), (a, 0))[0]),
  "psum_in_cond": sm(lambda a: lax.cond(lax.psum(a.sum(), "x") > 0,
                                        lambda b: lax.psum(b, "x") + b, lambda b: b * 4.0, a)),
}
runs = [0]
orig = st.StackedProgram.run
def counted(self, args):
  runs[0] += 1
  return orig(self, args)
st.StackedProgram.run = counted
out = {"values": {}, "grads": {}, "stacked_runs": {}}
for k, g in {**STACKED, **RUNTIME}.items():
  loss = lambda a: (g(a) * jnp.cos(g(a))).sum()
  got = []
  for on in (True, False):
    st.ENABLED = on
    runs[0] = 0
    v = np.asarray(jax.jit(g)(x))
    e = np.asarray(g(x))
    forward = runs[0]
    # (pmax, pure_callback and while_loop have no reverse derivative, as in JAX)
    d = np.asarray(jax.jit(jax.grad(loss))(x)) \
        if v.dtype.kind == "f" and k not in ("pmax_x", "pure_callback", "psum_in_while") else v
    got.append([v.tolist(), e.tolist(), d.tolist(), str(v.dtype), forward, runs[0]])
  out["values"][k] = got
st.ENABLED = True
xa = x.copy()
ident = sm(lambda a: a)
ya, yj = np.asarray(ident(xa)), np.asarray(jax.jit(ident)(xa))
xa[:] = -1  # the results are not views of the operand
out["alias"] = [ya.tolist() == x.tolist(), yj.tolist() == x.tolist()]

# A data-parallel MLP step (shard_map + psum of the gradients) on 1, 2, 4 and 8 devices: the
# loss and new parameters equal one device's; the weight gradients' psums fold to products.
SIZES, BATCH, LR = (12, 16, 16, 4), 32, 0.1
rng = np.random.default_rng(0)
params0 = [((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            rng.standard_normal(n).astype(np.float32) / 10) for m, n in itertools.pairwise(SIZES)]
X = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
Y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
def loss(params, x, y):
  h = x
  for w, b in params[:-1]:
    h = jax.nn.relu(h @ w + b)
  w, b = params[-1]
  return -jnp.sum(jax.nn.log_softmax(h @ w + b) * y) / BATCH
def local_step(params, x, y):
  lv, grads = jax.value_and_grad(loss)(params, x, y)
  lv, grads = lax.psum((lv, grads), "b")
  return lv, jax.tree.map(lambda p, g: p - LR * g, params, grads)
built = []
build = st._build
st._build = lambda *a: built.append(build(*a)) or built[-1]
steps = {}
for n in (1, 2, 4, 8):
  m = jax.make_mesh((n,), ("b",), axis_types=(jax.sharding.AxisType.Auto,),
                    devices=jax.devices()[:n])
  step = jax.jit(jax.shard_map(local_step, mesh=m, in_specs=(P(), P("b"), P("b")),
                               out_specs=(P(), P()), check_vma=False))
  for on in (True, False):
    st.ENABLED = on
    runs[0] = 0
    p = params0
    for _ in range(3):
      lv, p = step(p, X, Y)
    steps[f"{n}_{on}"] = [float(lv)] + [np.asarray(t).tolist() for t in jax.tree.leaves(p)] + \
        [runs[0]]
out["steps"] = steps
out["batched_products_left"] = [
    sum(1 for e in b.closed.jaxpr.eqns if e.primitive is dot.dot_general_p
        and e.params["dimension_numbers"][1][0]) for b in built if b is not None]
out["folded_products"] = [
    sum(1 for e in b.closed.jaxpr.eqns if e.primitive is dot.dot_general_p
        and len(e.invars[0].aval.shape) == 2 and e.params["dimension_numbers"][0][0] == (0,))
    for b in built if b is not None]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def ours():
  return run_json_program(_PROGRAM, "jaxlite")


_STACKED = ["psum_x", "psum_x_novma", "psum_xy", "psum_y_of_x", "psum_gram_x", "psum_outer_x",
            "pmax_x", "pmean_x",
            "ppermute_x", "all_gather_x", "all_to_all_x", "psum_scatter_x", "axis_index_xy",
            "cond_in_body", "dim1", "yx", "tuple_axes", "tuple_axes_yx", "replicated_in",
            "broadcast_out", "ints", "psum_in_scan", "psum_in_jit"]


@pytest.mark.parametrize("case", _STACKED)
def test_stacked_body_gives_the_runtimes_values(ours, case):
  (v, e, d, dtype, forward, runs), (v0, e0, d0, dtype0, _, runs0) = ours["values"][case]
  assert forward == 2 and runs0 == 0  # jit and eager calls took the path; none with it off
  assert dtype == dtype0
  if dtype.startswith("int"):
    assert v == v0 and e == e0
    return
  np.testing.assert_allclose(v, v0, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(e, e0, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(d, d0, rtol=1e-5, atol=1e-6)
  assert np.asarray(v).size  # a real array came back


@pytest.mark.parametrize("case", ["pure_callback", "psum_in_while", "psum_in_cond"])
def test_callbacks_and_collectives_under_control_flow_stay_per_device(ours, case):
  # (the psum's transpose in a gradient, a pvary, meets no peer: that body may be stacked)
  (v, e, d, _, forward, _), (v0, e0, d0, _, _, runs0) = ours["values"][case]
  assert forward == 0 and runs0 == 0
  assert v == v0 and e == e0 and d == d0


def test_results_do_not_alias_the_operands(ours):
  assert ours["alias"] == [True, True]


def test_known_values(ours):
  x = (np.arange(32., dtype=np.float32).reshape(8, 4) / 7 - 2).astype(np.float32)
  blocks = x.reshape(4, 2, 4)
  np.testing.assert_allclose(ours["values"]["psum_x"][0][0], (blocks ** 2).sum(0), rtol=1e-6)
  # axis_index over ("x", "y") on a (4, 2) mesh: the device's row-major index, per 1x2 block
  idx = np.arange(8).reshape(4, 2)
  want = x.reshape(4, 2, 2, 2) * idx[:, None, :, None]
  np.testing.assert_allclose(ours["values"]["axis_index_xy"][0][0], want.reshape(8, 4))
  np.testing.assert_allclose(ours["values"]["broadcast_out"][0][0], np.full((8, 8), 3.0))
  np.testing.assert_allclose(ours["values"]["psum_gram_x"][0][0], x.T @ np.sin(x), rtol=1e-5)
  np.testing.assert_allclose(ours["values"]["psum_outer_x"][0][0], x @ x.T, rtol=1e-5)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_data_parallel_step_equals_one_device(ours, n):
  one = ours["steps"]["1_True"]
  for on in (True, False):
    got = ours["steps"][f"{n}_{on}"]
    assert got[-1] == (3 if on else 0)  # three steps, each one stacked run
    np.testing.assert_allclose(got[0], one[0], rtol=2e-6)
    for a, b in zip(got[1:-1], one[1:-1]):
      np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_weight_gradient_psums_fold_to_one_product(ours):
  # Every stacked data-parallel step (2, 4, 8 devices) has no product batched over the devices
  # left, and its three weight gradients are products contracting the rows of all devices.
  assert len(ours["folded_products"]) >= 3
  assert ours["folded_products"][-3:] == [3, 3, 3]
  assert ours["batched_products_left"][-3:] == [0, 0, 0]
