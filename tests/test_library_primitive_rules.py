"""A primitive a user defines with `jax.extend.core.Primitive` (JAX's "JAX primitives" tutorial,
jax-primitives in the docs suite): which of its rules run when, and what they receive, against
JAX. Eagerly JAX calls the impl on bind's arguments (no abstract evaluation); JVP and batching
rules get tuples; under jit the registered MLIR lowering builds the code (the impl never runs),
and with no lowering jit raises NotImplementedError."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import jaxlite
from conftest import oracle


def _mod(m, name):
  return importlib.import_module(f"{m.__name__}.{name}")


def _define(m, calls, lowering=True):
  """The tutorial's multiply_add primitive on module `m` (jaxlite or JAX); `calls` records
  (rule name, argument types/containers)."""
  p = _mod(m, "extend.core").Primitive("multiply_add")

  def impl(x, y, z):
    calls.append(("impl", tuple(type(a).__name__ for a in (x, y, z))))
    return np.add(np.multiply(x, y), z)

  def abstract_eval(xs, ys, zs):
    calls.append(("abstract_eval", None))
    return _mod(m, "core").ShapedArray(xs.shape, xs.dtype)

  p.def_impl(impl)
  p.def_abstract_eval(abstract_eval)
  if lowering:
    hlo = _mod(m, "_src.lib.mlir.dialects").hlo
    mlir = importlib.import_module(f"{m.__name__}.interpreters.mlir")

    def lowering_rule(ctx, xc, yc, zc):
      calls.append(("lowering", len(ctx.avals_in)))
      return [hlo.AddOp(hlo.MulOp(xc, yc), zc).result]
    assert mlir.register_lowering(p, lowering_rule, platform="cpu") is None
  ad = importlib.import_module(f"{m.__name__}.interpreters.ad")
  batching = importlib.import_module(f"{m.__name__}.interpreters.batching")

  def jvp(arg_values, arg_tangents):
    calls.append(("jvp", (type(arg_values).__name__, type(arg_tangents).__name__)))
    x, y, z = arg_values
    xt, yt, zt = arg_tangents
    zero = lambda t: m.lax.full_like(x, 0) if type(t) is ad.Zero else t
    return p.bind(x, y, z), p.bind(zero(xt), y, p.bind(x, zero(yt), zero(zt)))

  def batch(vals, dims):
    calls.append(("batch", (type(vals).__name__, type(dims).__name__, tuple(dims))))
    return p.bind(*vals), dims[0]

  ad.primitive_jvps[p] = jvp
  batching.primitive_batchers[p] = batch
  return p


def _both():
  real = oracle()
  return [(jaxlite, []), (real, [])]


def test_eager_bind_calls_the_impl_only():
  """JAX: eager bind is `impl(*args)`: no abstract_eval, the impl's own result comes back."""
  outs = []
  for m, calls in _both():
    p = _define(m, calls)
    out = p.bind(2.0, 2.0, 10.0)
    outs.append((type(out).__name__, float(out)))
    assert calls == [("impl", ("TypedFloat",) * 3)], (m.__name__, calls)
  assert outs[0] == outs[1] == ("float64", 14.0)


def test_rules_get_tuples():
  """The JVP rule's primals and tangents and the batching rule's values and dims are tuples."""
  records = []
  for m, calls in _both():
    p = _define(m, calls)
    out, tan = m.jvp(lambda a, b: p.bind(a, a, b), (2.0, 10.0), (1.0, 1.0))
    assert (float(out), float(tan)) == (14.0, 5.0)
    ys = m.vmap(lambda a, b: p.bind(a, a, b))(np.array([2.0, 3.0]), np.array([10.0, 20.0]))
    np.testing.assert_allclose(np.asarray(ys), [14.0, 29.0])
    records.append([c for c in calls if c[0] in ("jvp", "batch")])
  assert records[0] == records[1]
  assert records[0][0] == ("jvp", ("tuple", "tuple"))
  assert records[0][-1] == ("batch", ("tuple", "tuple", (0, 0, 0)))


def test_jit_without_lowering_raises_jax_error():
  msgs = []
  for m, calls in _both():
    p = _define(m, calls, lowering=False)
    with pytest.raises(NotImplementedError) as e:
      m.jit(lambda a, b: p.bind(a, a, b))(2.0, 10.0)
    msgs.append(str(e.value))
    assert not [c for c in calls if c[0] == "impl"]
  assert msgs[0] == msgs[1] == ("MLIR translation rule for primitive 'multiply_add' not found "
                                "for platform cpu")


def test_jit_runs_the_lowering_not_the_impl():
  """Under jit (and jit of grad/vmap/jvp) the lowering builds the code; the impl never runs."""
  results = []
  for m, calls in _both():
    p = _define(m, calls)
    ad = importlib.import_module(f"{m.__name__}.interpreters.ad")

    def transpose(ct, x, y, z):
      if not ad.is_undefined_primal(x):
        return None, p.bind(x, ct, m.lax.full_like(x, 0)), ct
      return p.bind(ct, y, m.lax.full_like(y, 0)), None, ct
    ad.primitive_transposes[p] = transpose
    f = lambda a, b: p.bind(a, a, b)
    got = [float(m.jit(f)(2.0, 10.0)), float(m.jit(f, static_argnums=1)(2.0, 10.0)),
           float(m.jit(m.grad(f))(2.0, 10.0)),
           np.asarray(m.jit(m.vmap(f))(np.array([2.0, 3.0]), np.array([10.0, 20.0]))).tolist(),
           [float(v) for v in m.jit(lambda p_, t: m.jvp(f, p_, t))((2.0, 10.0), (1.0, 1.0))]]
    results.append(got)
    assert not [c for c in calls if c[0] == "impl"], (m.__name__, calls)
    assert ("lowering", 3) in calls
  assert results[0] == results[1] == [14.0, 14.0, 4.0, [14.0, 29.0], [14.0, 5.0]]


def test_lower_fun_rule_and_more_hlo_ops():
  """`mlir.lower_fun(fun)` lowers as `fun` computes; the hlo builders compose (unary, binary,
  select, typed ops)."""
  results = []
  for m in (jaxlite, oracle()):
    mlir = importlib.import_module(f"{m.__name__}.interpreters.mlir")
    hlo = _mod(m, "_src.lib.mlir.dialects").hlo
    p = _mod(m, "extend.core").Primitive("softplus_like")
    p.def_impl(lambda x: (_ for _ in ()).throw(AssertionError("impl ran under jit")))
    p.def_abstract_eval(lambda a: _mod(m, "core").ShapedArray(a.shape, a.dtype))
    mlir.register_lowering(p, mlir.lower_fun(lambda x: m.numpy.logaddexp(x, 0.0),
                                             multiple_results=False))
    q = _mod(m, "extend.core").Primitive("clamp_exp")
    q.def_abstract_eval(lambda a: _mod(m, "core").ShapedArray(a.shape, m.numpy.float32))

    def q_rule(ctx, x):
      e = hlo.ExpOp(hlo.NegOp(x)).result
      t = mlir.aval_to_ir_type(ctx.module_context, ctx.avals_out[0])
      return [hlo.ConvertOp(t, hlo.MinOp(e, hlo.SqrtOp(e))).result]
    mlir.register_lowering(q, q_rule)
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    results.append((np.asarray(m.jit(p.bind)(x)), np.asarray(m.jit(q.bind)(x))))
  np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
  np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def test_lowering_rule_on_the_xla_backend():
  """On the XLA backend the rule's ops are the StableHLO the module holds."""
  pytest.importorskip("jaxlib", reason="the XLA backend needs jaxlib")
  from conftest import configured
  from jaxlite.interpreters import mlir
  from jaxlite._src.lib.mlir.dialects import hlo
  p = jaxlite.extend.core.Primitive("mul_add_y")
  p.def_impl(lambda x, y: (_ for _ in ()).throw(AssertionError("impl ran under jit")))
  p.def_abstract_eval(lambda x, y: x)
  mlir.register_lowering(p, lambda ctx, x, y: [hlo.AddOp(hlo.MulOp(x, y), y).result])
  with configured(jax_jaxlite_backend="xla"):
    f = jaxlite.jit(p.bind)
    assert float(f(np.float32(2), np.float32(3))) == 9.0
    text = f.lower(np.float32(2), np.float32(3)).as_text()
  assert "stablehlo.multiply %arg0, %arg1" in text and "stablehlo.add" in text, text


def test_tangents_under_grad_are_partial_eval_tracers():
  """Under grad a JVP rule sees its tangents as JAX's partial-evaluation tracers: the class
  `...partial_eval.JaxprTracer` (the tutorial's printer tests its name), `Traced<...>` text."""
  got = []
  for m, calls in _both():
    seen = []
    cj = m.custom_jvp(lambda x: x * 3.0)

    def rule(p, t):
      seen.append((str(type(t[0])).split(".")[-1], repr(t[0]), "partial_eval.JaxprTracer" in
                   str(type(t[0]))))
      return cj(p[0]), t[0] * 3.0
    cj.defjvp(rule)
    m.grad(cj)(1.0)
    m.jit(m.grad(cj))(1.0)
    got.append(seen)
  assert got[0] == got[1] == [("JaxprTracer'>", "Traced<~float32[]:JaxprTrace>", True)] * 2


def test_grad_reevaluates_a_library_jvp_once_per_signature():
  """JAX linearizes a library primitive by tracing its JVP rule on its own and re-emitting the
  tangent eqns: each tangent eqn's abstract evaluation runs again (through JAX's cache, so once
  per signature in the process), which instrumented rules observe (the primitives tutorial).
  Three grads without a transpose rule and one with: the same abstract_eval counts as JAX."""
  def counts(m):
    calls = []
    p = _define(m, calls, lowering=False)
    f = lambda x: p.bind(x, x, 10.0)
    seen = []
    for attempt in range(3):
      if attempt == 2:
        ad = importlib.import_module(f"{m.__name__}.interpreters.ad")
        ad.primitive_transposes[p] = lambda ct, x, y, z: [None, None, ct]
      calls.clear()
      try:
        m.grad(f)(2.0)
      except NotImplementedError:
        pass
      seen.append(sum(1 for c in calls if c[0] == "abstract_eval"))
    return seen

  assert counts(jaxlite) == [4, 2, 2]  # recorded from JAX 0.10.2
  jax = oracle()
  assert counts(jax) == counts(jaxlite)


def test_grad_replay_keeps_weak_types():
  """The re-emitted tangent eqns see the types the rule's own eqns saw: weak literals and
  residuals stay weak (`~float32[]`), as in JAX (the primitives tutorial prints them)."""
  def seen(m):
    avals = []
    p = _mod(m, "extend.core").Primitive("weak_fma")
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    p.def_abstract_eval(lambda *a: (avals.append(tuple(str(v) for v in a)),
                                    _mod(m, "core").ShapedArray(a[0].shape, a[0].dtype))[1])
    ad = importlib.import_module(f"{m.__name__}.interpreters.ad")

    def jvp(vals, tans):
      x, y, z = vals
      tans = [m.lax.full_like(x, 0) if type(t) is ad.Zero else t for t in tans]
      return p.bind(x, y, z), p.bind(x, tans[1], p.bind(tans[0], y, tans[2]))
    ad.primitive_jvps[p] = jvp
    try:
      m.grad(lambda x: p.bind(x, x, 10.0))(2.0)
    except NotImplementedError:  # no transpose rule
      pass
    return avals

  ours = seen(jaxlite)
  assert ours[-2:] == [("~float32[]", "~float32[]", "~float32[]"),
                       ("~float32[]", "~float32[]", "float32[]")]  # recorded from JAX 0.10.2
  assert ours == seen(oracle())
