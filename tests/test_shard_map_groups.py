"""axis_index_groups (psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all, pswapaxes)
in shard_map bodies, pmap and vmap, checked against NumPy and, where installed, JAX 0.10.2:
each group of indices along the named axes joins only its own members.

JAX 0.10.2's rules, which jaxlite follows: under shard_map's default check_vma=True a psum (so a
pmean) of a traced value with groups raises NotImplementedError (its psum_invariant has no
groups), while pmax, pmin and the data movers keep them; with check_vma=False and under pmap
every one of them joins its group; vmap's rules refuse groups (NotImplementedError).

The device count freezes at first use, so each library runs `_PROGRAM` (8 CPU devices) in a
fresh process that prints a JSON record; the tests compare the records."""
import importlib.util

import numpy as np
import pytest

from conftest import oracle, run_json_program_once

_PROGRAM = r"""
import json, sys
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 8)
lax, jnp, P = jax.lax, jax.numpy, jax.sharding.PartitionSpec
mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
X = np.arange(64, dtype=np.float32).reshape(16, 4) / 9 - 3
G, R = [[0, 1], [2, 3]], [[1, 0], [3, 2]]  # R: members ranked in the order listed
def sm(f, check_vma=False, i=P("x", "y"), o=P("x", "y")):
  return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, check_vma=check_vma)
VALUES = {
  "psum": sm(lambda a: lax.psum(a, "x", axis_index_groups=G)),
  "pmean": sm(lambda a: lax.pmean(jnp.sin(a), "x", axis_index_groups=G)),
  "pmax": sm(lambda a: lax.pmax(a, "x", axis_index_groups=R)),
  "pmin": sm(lambda a: lax.pmin(a, "x", axis_index_groups=G)),
  "all_gather": sm(lambda a: lax.all_gather(a, "x", axis_index_groups=R, tiled=True)),
  "all_gather_untiled": sm(lambda a: lax.all_gather(a, "x", axis_index_groups=G, axis=1)
                           .reshape(4, 4)),
  "psum_scatter": sm(lambda a: lax.psum_scatter(a, "x", axis_index_groups=R, tiled=True)),
  "all_to_all": sm(lambda a: lax.all_to_all(a, "x", 0, 0, axis_index_groups=R, tiled=True)),
  "pswapaxes": sm(lambda a: lax.pswapaxes(a, "x", 1, axis_index_groups=G)),
  # over two axes the indices are row-major in the order the names are given
  "psum_xy": sm(lambda a: lax.psum(a, ("x", "y"), axis_index_groups=[[0, 1, 2, 3], [4, 5, 6, 7]])),
  "psum_yx": sm(lambda a: lax.psum(a, ("y", "x"), axis_index_groups=[[0, 1, 2, 3], [4, 5, 6, 7]])),
  "all_gather_yx": sm(lambda a: lax.all_gather(a, ("y", "x"), tiled=True,
                                               axis_index_groups=[[0, 5, 2, 7], [4, 1, 6, 3]])),
  # under check_vma=True: a psum of a Python value counts the group; pmax, pmin, all_gather keep
  # their groups
  "vma_psum_const": sm(lambda a: a + lax.psum(1.0, "x", axis_index_groups=G), True),
  "vma_pmean_const": sm(lambda a: a * lax.pmean(3.0, "x", axis_index_groups=G), True),
  "vma_pmax": sm(lambda a: lax.pmax(a, "x", axis_index_groups=R), True),
  "vma_all_gather": sm(lambda a: lax.all_gather(a, "x", axis_index_groups=G, tiled=True), True),
  "vma_psum_scatter": sm(lambda a: lax.psum_scatter(a, "x", axis_index_groups=G, tiled=True),
                         True),
}
out = {"values": {}, "errors": {}}
for k, f in VALUES.items():
  out["values"][k] = np.asarray(f(X)).tolist()
  out["values"][k + "_jit"] = np.asarray(jax.jit(f)(X)).tolist()
W = np.arange(64, dtype=np.float32).reshape(16, 4) / 5
loss = lambda a: (VALUES["psum"](a * a) * W).sum()
out["values"]["grad_psum"] = np.asarray(jax.grad(loss)(X)).tolist()
out["values"]["grad_psum_jit"] = np.asarray(jax.jit(jax.grad(loss))(X)).tolist()
V = X[:4]
PMAP = {
  "psum": lambda v: lax.psum(v, "i", axis_index_groups=G),
  "pmean": lambda v: lax.pmean(v, "i", axis_index_groups=G),
  "pmax": lambda v: lax.pmax(v, "i", axis_index_groups=R),
  "pmin": lambda v: lax.pmin(v, "i", axis_index_groups=G),
  "all_gather": lambda v: lax.all_gather(v, "i", axis_index_groups=R),
  "psum_scatter": lambda v: lax.psum_scatter(v, "i", axis_index_groups=G, tiled=True),
  "all_to_all": lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=R, tiled=True),
}
for k, f in PMAP.items():
  out["values"]["pmap_" + k] = np.asarray(jax.pmap(f, axis_name="i")(V)).tolist()
def error(f, *args):
  try:
    f(*args)
  except Exception as e:
    return [type(e).__name__, str(e)]
  return None
ERRORS = {
  "vma_psum": sm(lambda a: lax.psum(a, "x", axis_index_groups=G), True),
  "vma_pmean": sm(lambda a: lax.pmean(a, "x", axis_index_groups=G), True),
  "vma_psum_of_ones": sm(lambda a: a + lax.psum(jnp.ones(2), "x", axis_index_groups=G), True),
  "not_a_cover": sm(lambda a: lax.pmax(a, "x", axis_index_groups=[[0, 1], [1, 2]])),
  "positional": sm(lambda a: lax.psum(a, ("x", 0), axis_index_groups=G)),
}
for k, f in ERRORS.items():
  out["errors"][k] = error(f, X)
  out["errors"][k + "_jit"] = error(jax.jit(f), X)
VMAP = {
  "psum": lambda v: lax.psum(v, "i", axis_index_groups=G),
  "pmax": lambda v: lax.pmax(v, "i", axis_index_groups=G),
  "all_gather": lambda v: lax.all_gather(v, "i", axis_index_groups=G),
  "psum_scatter": lambda v: lax.psum_scatter(v, "i", axis_index_groups=G, tiled=True),
  "all_to_all": lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=G, tiled=True),
}
# a value known outside the vmap is no batched value: the group's size times it (JAX)
out["values"]["vmap_psum_known"] = np.asarray(jax.vmap(
    lambda v: lax.psum(1.5 * jnp.ones(4), "i", axis_index_groups=G) + v, axis_name="i")(V)).tolist()
for k, f in VMAP.items():
  out["errors"]["vmap_" + k] = error(jax.vmap(f, axis_name="i"), V)
# A check_vma=False shard_map inside a checked one keeps its psum's groups (JAX's inner body is
# untyped); nested SPMD runs are the xla backend's (the NumPy runtime does not nest them)
if __import__("os").environ.get("JAXLITE_BACKEND") != "numpy":
  def outer(a):
    inner = jax.shard_map(lambda b: lax.psum(b, "x", axis_index_groups=G),
                          mesh=jax.sharding.get_abstract_mesh(), in_specs=P("x"),
                          out_specs=P("x"), axis_names={"x"}, check_vma=False)
    return inner(a)
  nested = jax.jit(jax.shard_map(outer, mesh=mesh, in_specs=P(None, "y"), out_specs=P(None, "y"),
                                 axis_names={"y"}))
  out["nested"] = np.asarray(nested(X)).tolist()
print(json.dumps(out))
"""

def _run(mod, **env):
  return run_json_program_once(_PROGRAM, mod, **env)


_BACKENDS = ["numpy"] + (["xla"] if importlib.util.find_spec("jaxlib") else [])
X = np.arange(64, dtype=np.float32).reshape(16, 4) / 9 - 3


def _blocks(a):
  """A (16, 4) value laid out by P("x", "y") as its device blocks, [x, y] -> (4, 2)."""
  return np.asarray(a).reshape(4, 4, 2, 2).transpose(0, 2, 1, 3)


def _unblocks(b):
  return b.transpose(0, 2, 1, 3).reshape(16, 4)


@pytest.mark.parametrize("backend", _BACKENDS)
def test_each_group_joins_its_own_members(backend):
  got = _run("jaxlite", JAXLITE_BACKEND=backend)["values"]
  b = _blocks(X)
  pairs = b.reshape(2, 2, 2, 4, 2)  # [x group, member, y, rows, cols]
  want_psum = _unblocks(np.repeat(pairs.sum(1), 2, axis=0))
  want_pmax = _unblocks(np.repeat(pairs.max(1), 2, axis=0))
  want_pmean = _unblocks(np.repeat(np.sin(pairs).mean(1), 2, axis=0))
  for suffix in ("", "_jit"):
    np.testing.assert_allclose(got["psum" + suffix], want_psum, rtol=1e-6)
    np.testing.assert_allclose(got["pmax" + suffix], want_pmax, rtol=1e-6)
    np.testing.assert_allclose(got["vma_pmax" + suffix], want_pmax, rtol=1e-6)
    np.testing.assert_allclose(got["pmean" + suffix], want_pmean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["vma_psum_const" + suffix], X + 2, rtol=1e-6)
  # all_gather over R = [[1, 0], [3, 2]]: members concatenated in the order the group lists them
  gathered = np.concatenate([b[[1, 0]].transpose(1, 0, 2, 3).reshape(2, 8, 2)] * 2
                            + [b[[3, 2]].transpose(1, 0, 2, 3).reshape(2, 8, 2)] * 2)
  np.testing.assert_allclose(got["all_gather"], gathered.reshape(4, 2, 8, 2)
                             .transpose(0, 2, 1, 3).reshape(32, 4))
  # psum over ("y", "x") in groups [0..3], [4..7] of y-major indices: y = 0's devices, y = 1's
  np.testing.assert_allclose(got["psum_yx"], _unblocks(np.broadcast_to(
      b.sum(0, keepdims=True), b.shape)), rtol=1e-6)
  g = np.asarray(got["grad_psum"])  # d/da sum(W * psum_G(a * a)) = 2 a * (W summed in the group)
  wsum = np.repeat(_blocks(np.arange(64, dtype=np.float32).reshape(16, 4) / 5)
                   .reshape(2, 2, 2, 4, 2).sum(1), 2, axis=0)
  np.testing.assert_allclose(g, 2 * X * _unblocks(wsum), rtol=1e-5)
  np.testing.assert_allclose(got["vmap_psum_known"], X[:4] + 3, rtol=1e-6)


def test_unchecked_body_inside_a_checked_one_keeps_its_groups():
  if "xla" not in _BACKENDS:
    pytest.skip("nested shard_map runs on the xla backend, which needs jaxlib")
  got = np.asarray(_run("jaxlite", JAXLITE_BACKEND="xla")["nested"])
  rows = X.reshape(2, 2, 4, 4)  # [x group, member, rows, cols]: x splits the rows in 4 blocks
  np.testing.assert_allclose(got, np.repeat(rows.sum(1), 2, axis=0).reshape(16, 4), rtol=1e-6)
  oracle()
  np.testing.assert_allclose(got, _run("jax")["nested"], rtol=1e-6)


@pytest.mark.parametrize("backend", _BACKENDS)
def test_check_vma_psum_and_vmap_refuse_groups(backend):
  errors = _run("jaxlite", JAXLITE_BACKEND=backend)["errors"]
  for name in ("vma_psum", "vma_pmean", "vma_psum_of_ones"):
    for suffix in ("", "_jit"):
      cls, msg = errors[name + suffix]
      assert cls == "NotImplementedError" and "check_vma=True" in msg, (name, msg)
  assert errors["not_a_cover"] == ["ValueError",
                                   "axis_index_groups must cover all indices exactly once"]
  assert errors["positional"] == ["ValueError",
                                  "axis_index_groups only supported for sums over just named axes"]
  assert errors["vmap_psum"] == [
      "NotImplementedError",
      "axis_index_groups not supported in vmap collectives. Please open a feature request!"]
  assert errors["vmap_all_gather"] == ["NotImplementedError",
                                       "axis_index_groups not supported in vmap"]


def test_the_backends_agree():
  if len(_BACKENDS) < 2:
    pytest.skip("the xla backend needs jaxlib")
  numpy, xla = (_run("jaxlite", JAXLITE_BACKEND=b) for b in _BACKENDS)
  assert numpy["values"].keys() == xla["values"].keys()
  for name, got in numpy["values"].items():
    np.testing.assert_allclose(got, xla["values"][name], rtol=1e-5, atol=1e-5, err_msg=name)
  assert numpy["errors"] == xla["errors"]


@pytest.mark.parametrize("backend", _BACKENDS)
def test_values_and_errors_are_jax_s(backend):
  oracle()
  theirs = _run("jax")
  ours = _run("jaxlite", JAXLITE_BACKEND=backend)
  assert ours["values"].keys() == theirs["values"].keys()
  for name, got in ours["values"].items():
    np.testing.assert_allclose(got, theirs["values"][name], rtol=1e-5, atol=1e-5, err_msg=name)
  assert ours["errors"].keys() == theirs["errors"].keys()
  for name, theirs_error in theirs["errors"].items():
    assert ours["errors"][name] is not None, name
    # the class always; JAX's message where it gives one (its check_vma psum and some vmap rules
    # raise a bare NotImplementedError: jaxlite says what failed and why)
    assert ours["errors"][name][0] == theirs_error[0], (name, ours["errors"][name], theirs_error)
    assert theirs_error[1] in ours["errors"][name][1], (name, ours["errors"][name][1])
