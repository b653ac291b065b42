"""Sharded programs on the xla backend (issue 31): Shardy annotations in the lowered module,
shard_map as `sdy.manual_computation`, the collectives as StableHLO collectives with JAX's
replica groups, one executable over 8 XLA CPU devices, values equal to NumPy's and JAX's.

Each side runs in a fresh process (`run_json_program`: the device count is fixed per process):
jaxlite with JAXLITE_BACKEND=xla, and real JAX where installed."""
import importlib.util
import re

import numpy as np
import pytest

from conftest import oracle, run_json_program_once

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jaxlib") is None,
                                reason="the xla backend needs jaxlib")

_PROGRAM = r"""
import json, sys
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 8)
lax = jax.lax
P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
X = np.arange(64, dtype=np.float32).reshape(16, 4) / 9 - 3
sm = lambda f, i=P("x", "y"), o=P("x", "y"): jax.jit(jax.shard_map(
    f, mesh=mesh, in_specs=i, out_specs=o, check_vma=False))
CASES = {
  "psum_x": sm(lambda a: lax.psum(a, "x"), o=P(None, "y")),
  "pmax_y": sm(lambda a: lax.pmax(jnp_sin(a), "y"), o=P("x")),
  "pmin_xy": sm(lambda a: lax.pmin(a, ("x", "y")), o=P()),
  "pmean_x": sm(lambda a: lax.pmean(a * a, "x"), o=P(None, "y")),
  "all_gather_x": sm(lambda a: lax.all_gather(a, "x", tiled=True), o=P(None, "y")),
  "all_gather_untiled": sm(lambda a: lax.all_gather(a, "y", axis=1), o=P("x")),
  "psum_scatter_y": sm(lambda a: lax.psum_scatter(a, "y", scatter_dimension=0, tiled=True)),
  "ppermute_x": sm(lambda a: lax.ppermute(a, "x", [(0, 1), (1, 2), (2, 3), (3, 0)])),
  "all_to_all_x": sm(lambda a: lax.all_to_all(a, "x", 0, 0, tiled=True)),
  "axis_index": sm(lambda a: a * lax.axis_index("x") + lax.axis_index("y")),
}
def jnp_sin(a):
  return jax.numpy.sin(a)
out = {"values": {}, "text": {}}
for name, f in CASES.items():
  out["values"][name] = np.asarray(f(X)).tolist()
  out["text"][name] = f.lower(X).as_text()
w = jax.jit(lambda a: lax.with_sharding_constraint(a * 2, NS(mesh, P("x", None))).sum(0),
            in_shardings=NS(mesh, P("x", "y")))
out["values"]["wsc"] = np.asarray(w(X)).tolist()
out["text"]["wsc"] = w.lower(X).as_text()
step = jax.jit(jax.grad(lambda a, b: jax.numpy.sum(jax.numpy.tanh(a @ b) ** 2), argnums=1),
               in_shardings=(NS(mesh, P("x")), NS(mesh, P(None, "y"))))
out["values"]["grad_2d"] = np.asarray(step(X, X.T[:, :8])).tolist()
out["text"]["grad_2d"] = step.lower(X, X.T[:, :8]).as_text()
# axis_index_groups: each row of devices along "x" split into groups (pmap's and shard_map's)
G, H = [[0, 1], [2, 3]], [[0, 2], [1, 3]]
GROUPS = {
  "psum": sm(lambda a: lax.psum(a, "x", axis_index_groups=G)),
  "pmax": sm(lambda a: lax.pmax(a, "x", axis_index_groups=H)),
  "all_gather": sm(lambda a: lax.all_gather(a, "x", axis_index_groups=G, tiled=True)),
  "psum_scatter": sm(lambda a: lax.psum_scatter(a, "x", axis_index_groups=H, tiled=True)),
  "all_to_all": sm(lambda a: lax.all_to_all(a, "x", 0, 0, axis_index_groups=G, tiled=True)),
  "pmap_psum": jax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=G), axis_name="i"),
}
# Nested shard_map, as JAX writes it: the inner one over the body's context mesh ("x" manual)
def nested_inner(b):
  return lax.psum(b, "y") + lax.axis_index("y")
def nested_outer(a):
  inner = jax.shard_map(nested_inner, mesh=jax.sharding.get_abstract_mesh(), check_vma=False,
                        in_specs=P(None, "y"), out_specs=P(None, None), axis_names={"y"})
  return lax.psum(inner(a), "x")
nested = jax.jit(jax.shard_map(nested_outer, mesh=mesh, in_specs=P("x"), out_specs=P(),
                               axis_names={"x"}))
out["groups"] = {k: np.asarray(f(X[:4] if k.startswith("pmap") else X)).tolist()
                 for k, f in GROUPS.items()}
if __import__("os").environ.get("JAXLITE_BACKEND") != "numpy":  # (NumPy's runtime: not nested)
  out["values"]["nested"] = np.asarray(nested(X)).tolist()
  out["text"]["nested"] = nested.lower(X).as_text()
  out["text"]["psum_groups"] = GROUPS["psum"].lower(X).as_text()
xs = jax.device_put(X, NS(mesh, P("x", "y")))
out["shards"] = [[s.device.id, np.asarray(s.data).tolist()] for s in xs.addressable_shards[:3]]
out["pmap"] = np.asarray(jax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(
    X[:8])).tolist()
print(json.dumps(out))
"""

def _run(mod, **env):
  return run_json_program_once(_PROGRAM, mod, **env)


@pytest.fixture(scope="module")
def xla():
  return _run("jaxlite", JAXLITE_BACKEND="xla")


def test_values_equal_the_numpy_backend(xla):
  numpy = _run("jaxlite", JAXLITE_BACKEND="numpy")
  for name, got in xla["values"].items():
    if name == "nested":  # the NumPy backend's runtime does not nest SPMD runs
      continue
    np.testing.assert_allclose(got, numpy["values"][name], rtol=1e-5, atol=1e-5, err_msg=name)
  assert xla["shards"] == numpy["shards"]
  np.testing.assert_allclose(xla["pmap"], numpy["pmap"], rtol=1e-6)
  for name, got in xla["groups"].items():  # the NumPy runtime splits the axis into groups too
    np.testing.assert_allclose(got, numpy["groups"][name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_values_equal_jax(xla):
  oracle()
  theirs = _run("jax")
  for name, got in xla["values"].items():
    np.testing.assert_allclose(got, theirs["values"][name], rtol=1e-5, atol=1e-5,
                               err_msg=name)
  assert xla["shards"] == theirs["shards"]
  np.testing.assert_allclose(xla["pmap"], theirs["pmap"], rtol=1e-6)


def test_modules_carry_shardy_annotations_and_jax_collectives(xla):
  text = xla["text"]
  for t in text.values():
    assert "mhlo.num_partitions = 8 : i32" in t
    assert 'sdy.mesh @mesh = <["x"=4, "y"=2]>' in t
  assert "sdy.sharding_constraint" in text["wsc"] and '[{"x"}, {}]' in text["wsc"]
  assert 'manual_axes={"x", "y"}' in text["psum_x"]
  # psum over x: the groups of devices agreeing on y, as JAX emits them
  assert re.search(r'"?stablehlo.all_reduce"?.*replica_groups = dense<\[\[0, 2, 4, 6\], '
                   r'\[1, 3, 5, 7\]\]>', text["psum_x"])
  assert "stablehlo.all_gather" in text["all_gather_x"]
  assert "stablehlo.reduce_scatter" in text["psum_scatter_y"]
  assert "source_target_pairs = dense<[[0, 2], [2, 4], [4, 6], [6, 0], [1, 3], [3, 5], " \
      "[5, 7], [7, 1]]>" in text["ppermute_x"]
  assert "stablehlo.all_to_all" in text["all_to_all_x"]
  assert "stablehlo.partition_id" in text["axis_index"]


def _main_signature(text):
  return next(line for line in text.splitlines() if "func.func public @main" in line)


def test_in_shardings_annotate_the_arguments_as_jax_does(xla):
  wsc, grad = _main_signature(xla["text"]["wsc"]), _main_signature(xla["text"]["grad_2d"])
  assert '%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}' in wsc
  assert '%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}' in grad
  assert '%arg1: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}' in grad
  oracle()
  theirs = _run("jax")
  annotated = r"%arg\d+: \S+ \{sdy\.sharding = #sdy\.sharding<[^>]*>\}"
  for name in ("wsc", "grad_2d"):
    ours = re.findall(annotated, _main_signature(xla["text"][name]))
    assert len(ours) >= 1 and ours == re.findall(
        annotated, _main_signature(theirs["text"][name])), name


def test_axis_index_groups_as_jax(xla):
  # psum over "x" in groups {0, 1} and {2, 3} of its indices: per y, devices (0, 2), (4, 6)
  assert re.search(r'replica_groups = dense<\[\[0, 2\], \[4, 6\], \[1, 3\], \[5, 7\]\]>',
                   xla["text"]["psum_groups"]), xla["text"]["psum_groups"]
  X = np.arange(64, dtype=np.float32).reshape(16, 4) / 9 - 3
  blocks = X.reshape(4, 4, 2, 2).transpose(0, 2, 1, 3)  # [x, y] -> that device's (4, 2) block
  want = np.empty_like(blocks)
  for lo, hi in ([0, 1], [2, 3]):
    want[[lo, hi]] = blocks[lo] + blocks[hi]
  np.testing.assert_allclose(np.asarray(xla["groups"]["psum"]),
                             want.transpose(0, 2, 1, 3).reshape(16, 4), rtol=1e-6)
  oracle()
  theirs = _run("jax")
  for name, got in xla["groups"].items():
    np.testing.assert_allclose(got, theirs["groups"][name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_nested_shard_map_over_the_context_mesh(xla):
  text = xla["text"]["nested"]
  assert text.count("sdy.manual_computation") == 2
  assert 'manual_axes={"x"}' in text and 'manual_axes={"y"}' in text
  X = np.arange(64, dtype=np.float32).reshape(16, 4) / 9 - 3
  a = X.reshape(4, 4, 4)  # [x block, rows, columns]
  # psum over y of the column halves (+ axis_index("y"): 0 on the device whose value is kept,
  # as JAX keeps it: out_specs P() with check_vma=False), then the psum over x's blocks
  want = (a[:, :, :2] + a[:, :, 2:]).sum(0)
  np.testing.assert_allclose(xla["values"]["nested"], want, rtol=1e-5, atol=1e-5)
  oracle()
  theirs = _run("jax")
  np.testing.assert_allclose(xla["values"]["nested"], theirs["values"]["nested"], rtol=1e-5)
