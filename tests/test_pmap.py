"""jax.pmap over the SPMD runtime: values against NumPy, and against JAX 0.10.2 where installed
(output shardings, printed jaxprs, gradients, compositions with vmap, and its errors).

One subprocess per library (the CPU device count freezes at first use) prints a JSON record."""

import numpy as np
import pytest

from conftest import oracle, run_json_program

_PROGRAM = r"""
import json, re, sys
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 8)
lax, jnp = jax.lax, jax.numpy
x = np.arange(24., dtype=np.float32).reshape(4, 6)
out = {"values": {}, "errors": {}}
V = out["values"]
ring = [(i, (i + 1) % 4) for i in range(4)]
V["psum"] = jax.pmap(lambda b: lax.psum(b, "i") * b, axis_name="i")(x)
V["ppermute"] = jax.pmap(lambda b: lax.ppermute(b, "i", ring), axis_name="i")(x)
V["all_gather"] = jax.pmap(lambda b: lax.all_gather(b, "i"), axis_name="i", out_axes=None)(x)
V["axis_index_out1"] = jax.pmap(lambda b: b * lax.axis_index("i"), axis_name="i", out_axes=1)(x)
V["in_axes"] = jax.pmap(lambda a, b: a - b, in_axes=(1, None))(x[:, :4], x[:, 0])
V["static"] = jax.pmap(lambda a, n: a * n, static_broadcasted_argnums=1)(x, 3)
V["static_again"] = jax.pmap(lambda a, n: a * n, static_broadcasted_argnums=1)(x, 5)
V["tree"] = jax.pmap(lambda d: d["a"] + d["b"].sum())({"a": x, "b": x.reshape(4, 3, 2)})
V["devices"] = jax.pmap(lambda b: b * 2, devices=jax.devices()[4:])(x)
V["grad"] = jax.grad(lambda a: jax.pmap(lambda b: lax.psum(jnp.sin(b), "i"),
                                        axis_name="i")(a).sum())(x)
V["pmap_of_vmap"] = jax.pmap(jax.vmap(lambda b: lax.psum(b, "i"), axis_name="j"),
                             axis_name="i")(x.reshape(4, 2, 3))
V["vmap_of_pmap"] = jax.vmap(jax.pmap(lambda b: lax.psum(b, "i"), axis_name="i"))(
    x.reshape(2, 4, 3))
V = {k: np.asarray(v).tolist() for k, v in V.items()}
out["values"] = V
pm = jax.pmap(lambda b: lax.psum(b, "i"), axis_name="i")
out["sharding"] = [repr(pm(x).sharding), repr(jax.pmap(lambda b: b)(x).sharding),
                   repr(jax.pmap(lambda b: b, devices=jax.devices()[4:])(x).sharding)]
out["jaxpr"] = re.sub(r"frozenset\(\{[^}]*\}\)", "FS", str(jax.make_jaxpr(pm)(x)))
def err(name, thunk):
  try:
    thunk()
    out["errors"][name] = None
  except Exception as e:
    out["errors"][name] = [type(e).__name__, str(e)]
err("mismatch", lambda: jax.pmap(lambda a, b: a + b)(x, x[:3]))
err("too_many", lambda: jax.pmap(lambda a: a)(np.ones((9, 2))))
err("unbound", lambda: jax.pmap(lambda a: lax.psum(a, "j"), axis_name="i")(x))
err("in_axes_len", lambda: jax.pmap(lambda a, b: a, in_axes=(0, 0, 0))(x, x))
err("in_axes_type", lambda: jax.pmap(lambda a, b: a, in_axes=[0, 0])(x, x))
# Rank errors: JAX's messages come from its jit-level sharding check, so only the classes are
# compared with JAX (the first mapped leaf sizes the map: IndexError; a later one: ValueError).
out["rank_errors"] = {}
for name, thunk in [("rank0_second", lambda: jax.pmap(lambda a, n: a * n)(x, 3)),
                    ("rank0_first", lambda: jax.pmap(lambda a: a)(np.float32(3))),
                    ("axis_too_big", lambda: jax.pmap(lambda a, b: a, in_axes=(0, 1))(x, x[0])),
                    ("negative_axis", lambda: jax.pmap(lambda a, b: a, in_axes=(0, -1))(x, 2.))]:
  try:
    thunk()
    out["rank_errors"][name] = None
  except Exception as e:
    out["rank_errors"][name] = type(e).__name__
print(json.dumps(out))
"""


def _run(mod):
  return run_json_program(_PROGRAM, mod, PYTHONHASHSEED="0")


@pytest.fixture(scope="module")
def ours():
  return _run("jaxlite")


X = np.arange(24., dtype=np.float32).reshape(4, 6)

KNOWN = {
    "psum": X * X.sum(0),
    "ppermute": X[[3, 0, 1, 2]],
    "all_gather": X,
    "axis_index_out1": (X * np.arange(4)[:, None]).T,
    "in_axes": (X[:, :4] - X[:, :1]).T,
    "static": X * 3,
    "static_again": X * 5,
    "tree": X + X.sum(1, keepdims=True),
    "devices": X * 2,
    "grad": np.cos(X) * 4,
    "pmap_of_vmap": np.broadcast_to(X.reshape(4, 2, 3).sum(0), (4, 2, 3)),
    "vmap_of_pmap": np.stack([np.broadcast_to(h.sum(0), (4, 3))
                              for h in X.reshape(2, 4, 3)]),
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_pmap_values(ours, name):
  np.testing.assert_allclose(ours["values"][name], KNOWN[name], rtol=1e-5, atol=1e-5)


ERRORS = [("mismatch", "IndivisibleError", "the dimension size is 3"),
          ("too_many", "IndivisibleError", "partitioned 8 times, but the dimension size is 9"),
          ("unbound", "NameError", "Found an unbound axis name: j"),
          ("in_axes_len", "ValueError", "pmap in_axes[0]"),
          ("in_axes_type", "ValueError", "different types at key path")]


RANK_ERRORS = {"rank0_second": "ValueError", "rank0_first": "IndexError",
               "axis_too_big": "ValueError", "negative_axis": "ValueError"}


def test_pmap_rank_errors(ours):
  assert ours["rank_errors"] == RANK_ERRORS


@pytest.mark.parametrize("name,cls,substring", ERRORS)
def test_pmap_bad_input(ours, name, cls, substring):
  got = ours["errors"][name]
  assert got is not None and got[0] == cls and substring in got[1], got


def test_pmap_equals_jax(ours):
  oracle()
  theirs = _run("jax")
  for k, v in theirs["values"].items():
    np.testing.assert_allclose(ours["values"][k], v, rtol=2e-5, atol=2e-5, err_msg=k)
  assert ours["sharding"] == theirs["sharding"]
  assert ours["jaxpr"] == theirs["jaxpr"]
  assert ours["errors"] == theirs["errors"]
  assert ours["rank_errors"] == theirs["rank_errors"]
