"""shard_map with check_vma=True (JAX 0.10.2's default): values in the body are typed by the
manual mesh axes they vary over as they are traced (shard_map_vma.TraceTyping). A bind whose
operands vary over different axes casts the less-varying ones up with `pvary`, as JAX's binds
do, so `jax.typeof` in the body prints `{V:x}` and `grad` taken in the body differentiates
through the pvary (its transpose is a psum): a replicated input's gradient is summed over the
devices that share it. Also psum's mixed-state error and collectives over unknown axis names.

One table program per library in a subprocess with 4 CPU devices (the count freezes at first
use); values checked against NumPy, and everything against JAX where installed."""

import numpy as np
import pytest

from conftest import oracle, run_json_program

_PROGRAM = r"""
import json, sys
import numpy as np
jax = __import__(sys.argv[1])
jax.config.update("jax_num_cpu_devices", 4)
lax, jnp = jax.lax, jax.numpy
P = jax.sharding.PartitionSpec
AT = jax.sharding.AxisType
mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AT.Auto,) * 2)
X = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
W = np.array([1.5, -2.0], np.float32)
out = {}

def sm(f, i, o, **kw):
  return jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)

def rec(name, thunk):
  try:
    r = thunk()
    out[name] = r if isinstance(r, (str, list)) and name.startswith(("typeof", "eqns")) else \
        jax.tree_util.tree_map(lambda a: np.asarray(a).tolist(), r)
  except Exception as e:
    out[name] = [type(e).__name__, str(e)[:1000]]

def typeof_rows(f, i, args):
  seen = []
  def body(*a):
    return f(seen, *a)
  sm(body, i, P(), check_vma=False)(*args)
  return seen

def eqns(f, i, o, args):
  closed = jax.make_jaxpr(sm(f, i, o))(*args)
  inner = [e for e in closed.eqns if e.primitive.name == "shard_map"][0].params["jaxpr"]
  inner = getattr(inner, "jaxpr", inner)
  return [[e.primitive.name, [str(v.aval) for v in e.outvars]] for e in inner.eqns]

def t(x):
  return str(jax.typeof(x))

# typeof inside the body (check_vma=True types: sharded {V:x}, replicated untyped, ...)
def types_body(seen, a, w):
  z = a * w
  seen.extend([t(a), t(w), t(z), t(lax.psum(z, "x")), t(jnp.sum(z)), t(w + 1.0),
               t(lax.pcast(w, "x", to="varying")), t(lax.pcast(w, ("x", "y"), to="varying")),
               t(lax.axis_index("y")), t(z * lax.axis_index("y")), t(lax.psum(w, "x")),
               t(lax.all_gather(z, "x")), t(lax.pmax(z, "x")), t(jnp.dot(a, w))])
  return jnp.zeros(())
def run_types():
  seen = []
  def body(a, w):
    types_body(seen, a, w)
    return jnp.zeros(())
  sm(body, (P("x"), P()), P(), check_vma=True)(X, W)
  return seen
rec("typeof_body", run_types)
def run_types_2d():
  seen = []
  def body(a, w):
    seen.extend([t(a), t(a * w), t(lax.psum(a, "y")), t(lax.psum(a, ("x", "y")))])
    return jnp.zeros(())
  sm(body, (P("x", "y"), P()), P())(X, W)
  return seen
rec("typeof_2d", run_types_2d)
def run_types_unchecked():
  seen = []
  def body(a, w):
    seen.extend([t(a), t(a * w)])
    return jnp.zeros(())
  sm(body, (P("x"), P()), P(), check_vma=False)(X, W)
  return seen
rec("typeof_unchecked", run_types_unchecked)

def loss(a, w):
  return jnp.sum(jnp.sin(a * w))
# gradients taken inside the body
rec("grad_replicated", lambda: sm(lambda a, w: jax.grad(loss, 1)(a, w), (P("x"), P()), P())(X, W))
rec("grad_replicated_2d", lambda: sm(lambda a, w: jax.grad(loss, 1)(a, w), (P("x", "y"), P()), P())(X, W))
rec("grad_replicated_jit", lambda: jax.jit(sm(lambda a, w: jax.grad(loss, 1)(a, w), (P("x"), P()), P()))(X, W))
rec("grad_sharded", lambda: sm(lambda a, w: jax.grad(loss, 0)(a, w), (P("x"), P()), P("x"))(X, W))
rec("grad_both", lambda: sm(lambda a, w: jax.grad(loss, (0, 1))(a, w), (P("x"), P()), (P("x"), P()))(X, W))
rec("grad_inner_jit", lambda: sm(lambda a, w: jax.grad(jax.jit(loss), 1)(a, w), (P("x"), P()), P())(X, W))
rec("grad_vmap_inside", lambda: sm(lambda a, w: jax.grad(lambda w: jnp.sum(jax.vmap(lambda r: jnp.cos(r * w))(a)))(w), (P("x"), P()), P())(X, W))
rec("value_and_grad_psum", lambda: sm(lambda a, w: lax.psum(jax.value_and_grad(loss, 1)(a, w), "x"), (P("x"), P()), P())(X, W))
rec("grad_replicated_unchecked", lambda: sm(lambda a, w: jax.grad(loss, 1)(a, w), (P("x"), P()), P("x"), check_vma=False)(X, W))
rec("vjp_replicated", lambda: sm(lambda a, w: jax.vjp(lambda w: jnp.sin(a * w), w)[1](jnp.ones_like(a))[0], (P("x"), P()), P())(X, W))
rec("jvp_replicated", lambda: sm(lambda a, w: jax.jvp(lambda w: jnp.sin(a * w), (w,), (jnp.ones_like(w),))[1], (P("x"), P()), P("x"))(X, W))
# gradients of the whole shard_map (outside)
def outer(a, w):
  return jnp.sum(sm(lambda a, w: lax.psum(jnp.sum(jnp.sin(a * w)), "x"), (P("x"), P()), P())(a, w))
rec("grad_outside", lambda: jax.grad(outer, (0, 1))(X, W))
# the traced body: each eqn's primitive and result types (pvary where JAX's binds put it)
rec("eqns_mul", lambda: eqns(lambda a, w: a * w, (P("x"), P()), P("x"), (X, W)))
rec("eqns_grad", lambda: eqns(lambda a, w: jax.grad(loss, 1)(a, w), (P("x"), P()), P(), (X, W)))
rec("eqns_psum_invariant", lambda: eqns(lambda a, w: (lax.psum(w, "x"), a + lax.axis_index("y")), (P("x"), P()), (P(), P("x", "y")), (X, W)))
# bad input under check_vma
rec("err_psum_mixed", lambda: sm(lambda a: lax.psum(a, ("x", "y")), P("x"), P())(X))
rec("err_out_replicated", lambda: sm(lambda a, w: a * w, (P("x"), P()), P())(X, W))
rec("err_grad_out_replicated", lambda: sm(lambda a, w: jax.grad(loss, 0)(a, w), (P("x"), P()), P())(X, W))
rec("err_psum_unknown", lambda: sm(lambda a: lax.psum(a, "z"), P("x"), P("x"))(X))
rec("err_pmean_unknown", lambda: sm(lambda a: lax.pmean(a, "z"), P("x"), P("x"))(X))
rec("err_pmax_unknown", lambda: sm(lambda a: lax.pmax(a, "z"), P("x"), P("x"))(X))
rec("err_ppermute_unknown", lambda: sm(lambda a: lax.ppermute(a, "z", [(0, 1)]), P("x"), P("x"))(X))
rec("err_all_gather_unknown", lambda: sm(lambda a: lax.all_gather(a, "z"), P("x"), P("x"))(X))
rec("err_psum_unknown_unchecked", lambda: sm(lambda a: lax.psum(a, "z"), P("x"), P("x"), check_vma=False)(X))
rec("err_pmean_unknown_unchecked", lambda: sm(lambda a: lax.pmean(a, "z"), P("x"), P("x"), check_vma=False)(X))
rec("err_all_gather_unknown_unchecked", lambda: sm(lambda a: lax.all_gather(a, "z"), P("x"), P("x"), check_vma=False)(X))
rec("err_psum_scatter_unknown", lambda: sm(lambda a: lax.psum_scatter(a, "z"), P("x"), P("x"))(X))
rec("err_psum_unknown_jit", lambda: jax.jit(lambda a: lax.pmean(a, "z"))(X))
rec("err_pmean_unknown_eager", lambda: lax.pmean(X, "z"))
# control flow: carries and branches must agree in their varying axes (JAX's TypeErrors)
rec("scan_varying_carry", lambda: sm(lambda a, w: lax.scan(lambda c, r: (c + r * w, c), jnp.zeros_like(a[0]), a)[0], (P("x"), P()), P("x"))(X, W))
rec("cond_varying_pred", lambda: sm(lambda a, w: lax.cond(a[0, 0] > 0, lambda: w * 2, lambda: w), (P("x"), P()), P("x"))(X, W))
rec("grad_remat_inside", lambda: sm(lambda a, w: jax.grad(jax.checkpoint(lambda w: jnp.sum(jnp.sin(a * w))))(w), (P("x"), P()), P())(X, W))
rec("grad_custom_jvp_inside", lambda: sm(lambda a, w: jax.grad(lambda w: jnp.sum(jax.nn.relu(a * w)))(w), (P("x"), P()), P())(X, W))
rec("err_scan_invariant_carry", lambda: sm(lambda a, w: lax.scan(lambda c, r: (c + r, c), w, a)[0], (P("x"), P()), P("x"))(X, W))
rec("err_fori_invariant_carry", lambda: sm(lambda a, w: lax.fori_loop(0, 3, lambda i, c: c * a[0], w), (P("x"), P()), P("x"))(X, W))
rec("err_while_invariant_carry", lambda: sm(lambda a, w: lax.while_loop(lambda c: c[0] < 10, lambda c: c * 2 + a[0], w), (P("x"), P()), P("x"))(X, W))
rec("err_cond_branches_differ", lambda: sm(lambda a, w: lax.cond(w[0] > 0, lambda: a[0], lambda: w), (P("x"), P()), P("x"))(X, W))
rec("err_grad_scan_inside", lambda: sm(lambda a, w: jax.grad(lambda w: jnp.sum(lax.scan(lambda c, r: (jnp.sin(c * r), None), w, a)[0]))(w), (P("x"), P()), P())(X, W))
rec("err_lax_pvary_removed", lambda: lax.pvary)
# a collective whose result nothing reads, beside a replicated output one device computes
for cv in (True, False):
  rec(f"dead_collective_{cv}", lambda: sm(lambda a: (lax.psum(a, "x"), jnp.zeros(()))[1],
                                          P("x"), P(), check_vma=cv)(X))
print(json.dumps(out))
"""

X = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
W = np.array([1.5, -2.0], np.float32)


def _run(mod):
  return run_json_program(_PROGRAM, mod)


@pytest.fixture(scope="module")
def ours():
  return _run("jaxlite")


@pytest.fixture(scope="module")
def theirs():
  oracle()
  return _run("jax")


def _close(a, b):
  if isinstance(a, list) and a and isinstance(a[0], list) and not isinstance(a[0][0], (int, float)):
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
  try:
    return np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-5, atol=1e-6)
  except ValueError:  # ragged: a tuple of results
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))


# --- known answers (NumPy) -------------------------------------------------------------------

def _dloss_dw(a):  # d/dw sum(sin(a * w)) on block a
  return (a * np.cos(a * W)).sum(0)


def test_grad_of_replicated_input_inside_body_is_summed_over_devices(ours):
  whole = _dloss_dw(X)
  for name in ("grad_replicated", "grad_replicated_jit", "grad_inner_jit"):
    np.testing.assert_allclose(ours[name], whole, rtol=1e-5, atol=1e-6, err_msg=name)
  # P('x', 'y'): (4, 1) blocks, each broadcast against w; summed over all four devices
  blocks = [X[r:r + 4, c:c + 1] for r in (0, 4) for c in (0, 1)]
  np.testing.assert_allclose(ours["grad_replicated_2d"], sum(_dloss_dw(b) for b in blocks),
                             rtol=1e-5, atol=1e-6)
  # unchecked: each device's own part (out_specs P('x') concatenates the two x-blocks)
  per_block = np.concatenate([_dloss_dw(X[:4]), _dloss_dw(X[4:])])
  np.testing.assert_allclose(ours["grad_replicated_unchecked"], per_block, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ours["grad_both"][1], whole, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ours["grad_both"][0], W * np.cos(X * W), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ours["grad_sharded"], W * np.cos(X * W), rtol=1e-5, atol=1e-6)
  # value_and_grad then psum over x: the already-summed gradient is summed again (x has 2)
  np.testing.assert_allclose(ours["value_and_grad_psum"][1], 2 * whole, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ours["value_and_grad_psum"][0], np.sin(X * W).sum(), rtol=1e-5)


def test_control_flow_in_body(ours):
  # scan: c = 0 + sum_r r * w per x-block (zeros_like(a[0]) varies as a does)
  want = np.concatenate([(X[:4] * W).sum(0), (X[4:] * W).sum(0)])
  np.testing.assert_allclose(ours["scan_varying_carry"], want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ours["cond_varying_pred"],
                             np.concatenate([W * 2 if X[0, 0] > 0 else W, W * 2 if X[4, 0] > 0 else W]))
  np.testing.assert_allclose(ours["grad_remat_inside"], _dloss_dw(X), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ours["grad_custom_jvp_inside"], (X * (X * W > 0)).sum(0),
                             rtol=1e-5, atol=1e-6)
  for name in ("err_scan_invariant_carry", "err_fori_invariant_carry",
               "err_while_invariant_carry", "err_grad_scan_inside"):
    cls, msg = ours[name]
    assert cls == "TypeError" and "so the manual axis types do not match" in msg, (name, msg)
    assert "jax.lax.pcast(..., ('x',), to='varying')" in msg
  assert "input carry component loop_carry[1] has type float32[2]" in ours["err_fori_invariant_carry"][1]
  cls, msg = ours["err_cond_branches_differ"]
  assert cls == "TypeError" and msg.startswith("cond branches must have equal output types")
  assert "has type float32[2]{V:x} but the corresponding output of false_fun has type float32[2]" in msg


def test_typeof_in_body(ours):
  assert ours["typeof_body"][:4] == ["float32[4,2]{V:x}", "float32[2]", "float32[4,2]{V:x}",
                                     "float32[4,2]"]
  assert ours["typeof_2d"] == ["float32[4,1]{V:(x,y)}", "float32[4,2]{V:(x,y)}",
                               "float32[4,1]{V:x}", "float32[4,1]"]
  assert ours["typeof_unchecked"] == ["float32[4,2]", "float32[4,2]"]


def test_pvary_in_traced_body(ours):
  assert ours["eqns_mul"] == [["broadcast_in_dim", ["float32[1,2]"]],
                              ["pvary", ["float32[1,2]{V:x}"]],
                              ["mul", ["float32[4,2]{V:x}"]]]
  prims = [p for p, _ in ours["eqns_grad"]]
  assert prims.count("pvary") == 2 and prims.count("psum_invariant") == 1


def test_dead_collective_beside_replicated_output(ours):
  assert ours["dead_collective_True"] == ours["dead_collective_False"] == 0.0


def test_errors(ours):
  assert ours["err_psum_mixed"][0] == "ValueError"
  assert "can only accept axis_name which corresponds to one of varying" in ours["err_psum_mixed"][1]
  for name in ("err_out_replicated", "err_grad_out_replicated"):
    assert ours[name][0] == "ValueError" and "out_specs is P() which implies" in ours[name][1]
  for name in ("err_psum_unknown", "err_pmean_unknown", "err_pmax_unknown",
               "err_ppermute_unknown"):
    assert ours[name][0] == "AssertionError", (name, ours[name])
    assert "Found an unbound axis name: z" in ours[name][1]
  assert ours["err_lax_pvary_removed"] == [
      "AttributeError", "jax.lax.pvary was deprecated in JAX v0.8.2 and removed in JAX v0.10.0; "
      "use `jax.lax.pcast(..., to='varying')"]
  for name in ("err_all_gather_unknown", "err_psum_unknown_unchecked",
               "err_pmean_unknown_unchecked", "err_psum_scatter_unknown"):
    assert ours[name][0] == "NameError", (name, ours[name])


# --- against JAX -------------------------------------------------------------------------------

# Rows whose messages differ in ways that are JAX's own: its AssertionError has no message, its
# replication error names its wrapper '_rem_singleton', its psum error prints a set (any order).
_CLASS_ONLY = {"err_psum_unknown", "err_pmean_unknown", "err_pmax_unknown",
               "err_ppermute_unknown", "err_out_replicated", "err_grad_out_replicated",
               "err_psum_mixed"}


def _rows():
  import re
  return re.findall(r'rec\(f?"([a-z_0-9]+)', _PROGRAM)


@pytest.mark.parametrize("name", [n for n in _rows() if not n.startswith("dead_collective")] +
                         ["dead_collective_True", "dead_collective_False"])
def test_equals_jax(ours, theirs, name):
  got, want = ours[name], theirs[name]
  if name.startswith("err_"):
    assert isinstance(want, list) and got[0] == want[0], (got, want)
    if name not in _CLASS_ONLY:
      assert got == want
    return
  if name.startswith(("typeof", "eqns")):
    assert got == want
    return
  assert _close(got, want), (got, want)
