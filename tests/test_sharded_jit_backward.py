"""Backward sharding propagation from jit's out_shardings: the producers of a result that
out_shardings asks split compute split (as JAX's propagation has them), seen through
`inspect_array_sharding` inside the jit, the results' shardings and their values.

One subprocess per library (4 CPU devices; the count freezes at first use) prints a JSON
record per case: the inspected shardings, the results' specs and values (and, for jaxlite,
whether each requested result came out of the partitioned program already in its spec)."""

import numpy as np
import pytest

from conftest import oracle, run_json_program

_PROGRAM = r"""
import json, sys
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 4)
jnp = jax.numpy
P, NS, AxisType = jax.sharding.PartitionSpec, jax.sharding.NamedSharding, jax.sharding.AxisType
mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(32, dtype=np.float32).reshape(8, 4) / 7 - 2
W = (np.arange(24, dtype=np.float32).reshape(4, 6) % 5) / 3 - 0.5
rep = NS(mesh, P())
x, w = jax.device_put(X, rep), jax.device_put(W, rep)
xs = jax.device_put(X, NS(mesh, P("x")))
out = {}

def probe(name, f, args, out_sh):
  seen = []
  def tap(v, tag):
    jax.debug.inspect_array_sharding(v, callback=lambda s: seen.append((tag, repr(s.spec))))
    return v
  g = jax.jit(lambda *a: f(tap, *a), out_shardings=out_sh)
  r = g(*args)
  rec = {"seen": sorted(seen), "out": [repr(l.sharding.spec) for l in jax.tree.leaves(r)],
         "val": [np.asarray(l).tolist() for l in jax.tree.leaves(r)]}
  if sys.argv[1] == "jaxlite":  # the partitioned program left nothing to move at its end
    from jaxlite._src.sharding.partition import PLANS
    (_, program), = [v for k, v in g._sharded_cache.items() if k != PLANS]
    rec["in_place"] = [program._read_spec(v) == s for v, s in
                       zip(program.closed.jaxpr.outvars, program.out_specs)]
  out[name] = rec

def shared(t, a):
  b = t(jnp.sin(a), "sin")
  return b * 2, b.sum()

probe("elementwise", lambda t, a: t(jnp.sin(a), "sin") * 2, (x,), NS(mesh, P("x")))
probe("chain", lambda t, a: jnp.exp(t(jnp.cos(t(a + 1, "add")), "cos")), (x,),
      NS(mesh, P("x", "y")))
probe("dot_rows", lambda t, a, b: t(a @ b, "dot") + 1, (x, w), NS(mesh, P("x")))
probe("dot_cols", lambda t, a, b: jnp.tanh(t(a @ b, "dot")), (x, w), NS(mesh, P(None, "y")))
probe("transpose", lambda t, a: t(jnp.sin(a), "sin").T, (x,), NS(mesh, P(None, "x")))
probe("reduce", lambda t, a: t(jnp.sin(a), "sin").sum(1), (x,), NS(mesh, P("x")))
probe("broadcast", lambda t, a: t(jnp.sin(a)[:, :, None], "sin") * jnp.ones(2), (x,),
      NS(mesh, P("x", None, "y")))
probe("two_results", lambda t, a: (t(jnp.sin(a), "sin") * 2, t(jnp.sin(a), "sin2").sum()),
      (x,), (NS(mesh, P("x")), None))
probe("shared", shared, (x,), (NS(mesh, P("x")), None))
probe("reshape", lambda t, a: t(jnp.sin(a), "sin").reshape(8, 2, 2), (x,), NS(mesh, P("x")))
probe("relu_of_dot", lambda t, a, b: jax.nn.relu(t(a @ b, "dot")), (x, w), NS(mesh, P("x")))
probe("through_custom_jvp", lambda t, a: jax.nn.relu(t(a * 2, "mul")), (x,), NS(mesh, P("x")))
probe("through_jit", lambda t, a: jax.nn.log_softmax(t(a * 2, "mul"), axis=1), (x,),
      NS(mesh, P("x")))
probe("refines_argument", lambda t, a: t(jnp.sin(a), "sin") * 2, (xs,), NS(mesh, P("x", "y")))
# inputs that come uncommitted (NumPy) take what the backward pass asks of them; their other
# uses follow (committed replicated inputs keep their sharding)
probe("free_other_use", lambda t, a, b: (a @ b, t(a - 1, "sub")), (X, W), (NS(mesh, P("x")), None))
probe("free_elementwise", lambda t, a: (jnp.sin(a) * 2, t(jnp.cos(a), "cos")), (X,),
      (NS(mesh, P("x", "y")), None))
probe("committed_other_use", lambda t, a, b: (a @ b, t(a - 1, "sub")), (x, w),
      (NS(mesh, P("x")), None))
print(json.dumps(out))
"""


def _run(mod):
  return run_json_program(_PROGRAM, mod)


@pytest.fixture(scope="module")
def ours():
  return _run("jaxlite")


@pytest.fixture(scope="module")
def theirs():
  oracle()
  return _run("jax")


X = np.arange(32, dtype=np.float32).reshape(8, 4) / 7 - 2
W = (np.arange(24, dtype=np.float32).reshape(4, 6) % 5) / 3 - 0.5


def _log_softmax(a):
  s = a - a.max(1, keepdims=True)
  return s - np.log(np.exp(s).sum(1, keepdims=True))


# case -> (values of the results, what the taps inside see, the results' specs)
CASES = {
    "elementwise": ([np.sin(X) * 2], [["sin", "P('x',)"]], ["P('x',)"]),
    "chain": ([np.exp(np.cos(X + 1))], [["add", "P('x', 'y')"], ["cos", "P('x', 'y')"]],
              ["P('x', 'y')"]),
    "dot_rows": ([X @ W + 1], [["dot", "P('x',)"]], ["P('x',)"]),
    "dot_cols": ([np.tanh(X @ W)], [["dot", "P(None, 'y')"]], ["P(None, 'y')"]),
    "transpose": ([np.sin(X).T], [["sin", "P('x',)"]], ["P(None, 'x')"]),
    "reduce": ([np.sin(X).sum(1)], [["sin", "P('x',)"]], ["P('x',)"]),
    "broadcast": ([np.repeat(np.sin(X)[:, :, None], 2, 2)], [["sin", "P('x',)"]],
                  ["P('x', None, 'y')"]),
    "two_results": ([np.sin(X) * 2, np.sin(X).sum()], [["sin", "P('x',)"], ["sin2", "P()"]],
                    ["P('x',)", "P()"]),
    "shared": ([np.sin(X) * 2, np.sin(X).sum()], [["sin", "P('x',)"]], ["P('x',)", "P()"]),
    "reshape": ([np.sin(X).reshape(8, 2, 2)], [["sin", "P('x',)"]], ["P('x',)"]),
    "relu_of_dot": ([np.maximum(X @ W, 0)], [["dot", "P('x',)"]], ["P('x',)"]),
    "through_custom_jvp": ([np.maximum(X * 2, 0)], [["mul", "P('x',)"]], ["P('x',)"]),
    "through_jit": ([_log_softmax(X * 2)], [["mul", "P('x',)"]], ["P('x',)"]),
    "refines_argument": ([np.sin(X) * 2], [["sin", "P('x', 'y')"]], ["P('x', 'y')"]),
    "free_other_use": ([X @ W, X - 1], [["sub", "P('x',)"]], ["P('x',)", "P('x',)"]),
    "free_elementwise": ([np.sin(X) * 2, np.cos(X)], [["cos", "P('x', 'y')"]],
                         ["P('x', 'y')", "P('x', 'y')"]),
    "committed_other_use": ([X @ W, X - 1], [["sub", "P()"]], ["P('x',)", "P()"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_producers_compute_in_the_requested_sharding(ours, name):
  values, seen, specs = CASES[name]
  got = ours[name]
  for v, want in zip(got["val"], values):
    np.testing.assert_allclose(np.asarray(v, np.float32), want, rtol=2e-5, atol=2e-5)
  assert got["seen"] == seen
  assert got["out"] == specs
  assert all(got["in_place"]), got["in_place"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(ours, theirs, name):
  assert (ours[name]["seen"], ours[name]["out"]) == (theirs[name]["seen"], theirs[name]["out"])
  for a, b in zip(ours[name]["val"], theirs[name]["val"]):
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)
