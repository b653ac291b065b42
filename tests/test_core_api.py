"""jax.core, jax.extend and jax.interpreters: a user-defined primitive through jit/grad/vmap
(JAX's "How primitives work" tutorial), partial evaluation and linear_util as libraries use them.
"""
import importlib

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from conftest import oracle


def _define_multiply_add(jax):
  """The tutorial's multiply_add primitive, defined through `jax`'s public extension API."""
  mod = lambda name: importlib.import_module(f"{jax.__name__}.{name}")
  ecore, jcore, ad = mod("extend.core"), mod("core"), mod("interpreters.ad")
  batching, mlir, np_ = mod("interpreters.batching"), mod("interpreters.mlir"), mod("numpy")
  p = ecore.Primitive("multiply_add")
  prim = lambda x, y, z: p.bind(x, y, z)
  p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))

  def abstract_eval(xs, ys, zs):
    assert xs.shape == ys.shape == zs.shape
    return jcore.ShapedArray(xs.shape, xs.dtype)
  p.def_abstract_eval(abstract_eval)
  mlir.register_lowering(p, mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))

  def jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = tangents
    zero = lambda t: np_.zeros_like(x) if type(t) is ad.Zero else t
    return prim(x, y, z), prim(zero(xt), y, prim(x, zero(yt), zero(zt)))
  ad.primitive_jvps[p] = jvp

  def transpose(ct, x, y, z):
    if not ad.is_undefined_primal(x):
      assert ad.is_undefined_primal(y)
      ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else prim(x, ct, np_.zeros_like(x))
      return None, ct_y, ct
    ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else prim(ct, y, np_.zeros_like(y))
    return ct_x, None, ct
  ad.primitive_transposes[p] = transpose

  def batch(vals, dims):
    assert dims[0] == dims[1] == dims[2]
    return prim(*vals), dims[0]
  batching.primitive_batchers[p] = batch
  return lambda a, b: prim(a, a, b)  # square_add


def _tutorial_results(jax):
  f = _define_multiply_add(jax)
  a, b = np.float32(2.0), np.float32(10.0)
  xs = np.arange(3, dtype=np.float32)
  return {
      "eager": f(a, b), "jit": jax.jit(f)(a, b),
      "jvp": jax.jvp(f, (a, b), (np.float32(1.0), np.float32(1.0))),
      "grad": jax.grad(f)(a, b), "jit_grad": jax.jit(jax.grad(f))(a, b),
      "grad_both": jax.grad(f, argnums=(0, 1))(a, b),
      "vmap": jax.vmap(f)(xs, xs), "jit_vmap": jax.jit(jax.vmap(f))(xs, xs),
      "jaxpr": str(jax.make_jaxpr(f)(a, b)),
      "grad_jaxpr": str(jax.make_jaxpr(jax.grad(f))(a, b)),
      "vmap_jaxpr": str(jax.make_jaxpr(jax.vmap(f))(xs, xs)),
  }


def test_multiply_add_tutorial_known_answers():
  r = _tutorial_results(jaxlite)
  assert float(r["eager"]) == 14.0 and float(r["jit"]) == 14.0
  assert [float(v) for v in r["jvp"]] == [14.0, 5.0]
  assert float(r["grad"]) == 4.0 and float(r["jit_grad"]) == 4.0
  assert [float(v) for v in r["grad_both"]] == [4.0, 1.0]
  np.testing.assert_array_equal(r["vmap"], [0.0, 2.0, 6.0])
  assert "multiply_add a a b" in r["jaxpr"]


def test_multiply_add_tutorial_matches_jax():
  jax = oracle()
  ours, theirs = _tutorial_results(jaxlite), _tutorial_results(jax)
  for key in ours:
    if key.endswith("jaxpr"):
      assert ours[key] == theirs[key], key
    else:
      for o, t in zip(np.atleast_1d(ours[key]), np.atleast_1d(theirs[key])):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(t), err_msg=key)
        assert np.asarray(o).dtype == np.asarray(t).dtype, key


def test_vmap_of_grad_hits_the_tutorial_assertion():
  # The tutorial's batching rule asserts equal batch dims; under vmap(grad) the transpose binds
  # it with one unbatched operand, in JAX and here alike.
  f = _define_multiply_add(jaxlite)
  xs = np.arange(3, dtype=np.float32)
  with pytest.raises(AssertionError):
    jaxlite.vmap(jaxlite.grad(f))(xs, xs)


def test_multiple_results_primitive_and_deflinear():
  from jaxlite.extend.core import Primitive
  from jaxlite.interpreters import ad, batching
  from jaxlite.core import ShapedArray
  p = Primitive("split_scale")
  p.multiple_results = True
  p.def_impl(lambda x: [2.0 * x, 3.0 * x])
  p.def_abstract_eval(lambda a: [ShapedArray(a.shape, a.dtype)] * 2)
  from jaxlite.interpreters import mlir  # jit needs its lowering, as in JAX
  mlir.register_lowering(p, mlir.lower_fun(lambda x: [2.0 * x, 3.0 * x], multiple_results=True))
  ad.deflinear(p, lambda cts: [2.0 * ad.instantiate_zeros(cts[0])
                               + 3.0 * ad.instantiate_zeros(cts[1])])
  batching.primitive_batchers[p] = lambda vals, dims: (p.bind(*vals), [dims[0]] * 2)
  f = lambda x: jnp.sum(p.bind(x)[0] + p.bind(x)[1] ** 2)
  x = jnp.arange(3.0)
  np.testing.assert_allclose(jaxlite.grad(f)(x), 2.0 + 18.0 * np.arange(3.0))
  np.testing.assert_allclose(jaxlite.jit(jaxlite.grad(f))(x), 2.0 + 18.0 * np.arange(3.0))
  out = jaxlite.vmap(lambda v: p.bind(v)[1])(jnp.ones((4, 2)))
  np.testing.assert_array_equal(out, np.full((4, 2), 3.0))


def test_jax_core_names_match_jax():
  import jaxlite.core as core
  expected = ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
              "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim", "min_dim"]
  assert sorted(n for n in dir(core) if not n.startswith("_")) == expected
  assert isinstance(jaxlite.typeof(jnp.ones(2)), core.AbstractValue)
  assert core.max_dim(3, 5) == 5 and core.min_dim(3, 5) == 3


def test_eval_jaxpr_and_jaxpr_as_fun():
  from jaxlite.core import eval_jaxpr
  from jaxlite.extend.core import jaxpr_as_fun, ClosedJaxpr, Jaxpr, JaxprEqn, Var
  closed = jaxlite.make_jaxpr(lambda x, y: jnp.sin(x) * y)(1.0, 2.0)
  assert isinstance(closed, ClosedJaxpr) and isinstance(closed.jaxpr, Jaxpr)
  assert all(isinstance(e, JaxprEqn) for e in closed.jaxpr.eqns)
  assert all(isinstance(v, Var) for v in closed.jaxpr.invars)
  (out,) = eval_jaxpr(closed.jaxpr, closed.consts, 1.0, 2.0)
  np.testing.assert_allclose(out, np.sin(1.0) * 2.0, rtol=1e-6)
  np.testing.assert_allclose(jaxpr_as_fun(closed)(1.0, 2.0)[0], np.sin(1.0) * 2.0, rtol=1e-6)
  # eval_jaxpr binds on the current trace, so transformations see through it.
  g = jaxlite.grad(lambda x: eval_jaxpr(closed.jaxpr, closed.consts, x, 2.0)[0])(1.0)
  np.testing.assert_allclose(g, 2.0 * np.cos(1.0), rtol=1e-6)


def test_ensure_compile_time_eval_folds_constants_under_jit():
  seen = []

  @jaxlite.jit
  def f(x):
    with jaxlite.ensure_compile_time_eval():
      c = jnp.arange(3.0) * 2.0
      seen.append(type(c).__name__)
      y = x + c  # touches a tracer: still staged
    return y
  np.testing.assert_array_equal(f(jnp.ones(3)), [1.0, 3.0, 5.0])
  assert seen == ["ArrayImpl"]
  jaxpr = str(jaxlite.make_jaxpr(f.__wrapped__)(jnp.ones(3)))
  assert "iota" not in jaxpr and "add" in jaxpr


def test_ensure_compile_time_eval_python_control_flow_matches_jax():
  def f(x):
    with jaxlite.ensure_compile_time_eval():
      n = jnp.sum(jnp.arange(4))
      if n > 5:  # concrete: Python control flow works under jit
        return x * 2
    return x
  assert float(jaxlite.jit(f)(3.0)) == 6.0


def test_find_top_trace_and_opaque_state():
  from jaxlite.extend import core as ecore
  states = []

  def f(x):
    states.append(ecore.get_opaque_trace_state())
    assert type(ecore.find_top_trace([x])).__name__ == "DynamicJaxprTrace"
    states.append(ecore.get_opaque_trace_state())
    return x
  jaxlite.jit(f)(1.0)
  assert states[0] == states[1] and states[0] != ecore.get_opaque_trace_state()


def test_mapped_unmapped_aval():
  from jaxlite.extend import core as ecore
  a = jaxlite.core.ShapedArray((3, 4), np.dtype("float32"))
  assert ecore.mapped_aval(3, 0, a).shape == (4,)
  assert ecore.unmapped_aval(5, 1, a).shape == (3, 5, 4)
  assert ecore.mapped_aval(3, None, a) is a


def test_primitives_module_exposes_the_objects_jit_uses():
  from jaxlite.extend.core import primitives
  from jaxlite._src.lax import elementwise
  assert primitives.sin_p is elementwise.sin_p
  for name in ["add_p", "scan_p", "while_p", "cond_p", "dot_general_p", "jit_p",
               "custom_jvp_call_p", "add_jaxvals_p", "cholesky_p", "random_bits_p"]:
    assert hasattr(primitives, name), name


@pytest.mark.parametrize("known,expect_known", [
    ((True, True), [True, True]),
    ((True, False), [True, False]),
    ((False, True), [True, False]),
])
def test_partial_eval_known_unknown(known, expect_known):
  from jaxlite.interpreters import partial_eval as pe
  from jaxlite.extend import linear_util as lu
  from jaxlite.core import ShapedArray
  calls = []

  def fun(x, y):
    calls.append(1)
    return [jnp.cos(jnp.float32(0.0)) * 3.0, x * y]
  vals = [np.float32(2.0), np.float32(5.0)]
  pvals = [pe.PartialVal.known(v) if k else pe.PartialVal.unknown(ShapedArray((), v.dtype))
           for v, k in zip(vals, known)]
  jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(lu.wrap_init(fun), pvals)
  assert [pv.is_known() for pv in out_pvals] == expect_known
  assert float(out_pvals[0].get_known()) == 3.0
  if expect_known[1]:
    assert float(out_pvals[1].get_known()) == 10.0 and not jaxpr.eqns
  else:
    assert [e.primitive.name for e in jaxpr.eqns] == ["mul"]
    assert len(jaxpr.invars) == 1 and len(jaxpr.constvars) == len(consts)
  assert calls == [1]


def test_linear_util_and_api_util_flatten_like_flax():
  from jaxlite.extend import linear_util as lu
  from jaxlite import api_util
  from jaxlite.interpreters import partial_eval as pe
  fn = lambda p, x: {"y": p["w"] * x, "n": 3}
  args = ({"w": np.float32(2.0)}, np.float32(4.0))
  flat, in_tree = jaxlite.tree_util.tree_flatten((args, {}))
  dbg = api_util.debug_info("lazy_init", fn, (in_tree,), {})
  f_flat, out_tree = api_util.flatten_fun(lu.wrap_init(fn, debug_info=dbg), in_tree)
  _, out_pvals, _ = pe.trace_to_jaxpr_nounits(f_flat, [pe.PartialVal.known(x) for x in flat])
  out = jaxlite.tree_util.tree_unflatten(out_tree(), [pv.const for pv in out_pvals])
  assert float(out["y"]) == 8.0 and int(out["n"]) == 3


def test_linear_util_transformation_with_aux():
  from jaxlite.extend import linear_util as lu

  def scale(f, store, k, *args):
    out = f(*args)
    store.store(len(args))
    return out * k
  wrapped, aux = lu.transformation_with_aux2(scale)(lu.wrap_init(lambda a, b: a + b), 10)
  assert wrapped.call_wrapped(1, 2) == 30 and aux() == 2
  with pytest.raises(lu.StoreException):
    lu.transformation_with_aux2(scale)(lu.wrap_init(lambda: 0), 1)[1]()


def test_batching_axis_primitive_batchers_adapter():
  from jaxlite.extend.core import Primitive
  from jaxlite.interpreters import batching
  from jaxlite.core import ShapedArray
  p = Primitive("add_axis_size")
  p.def_impl(lambda x: x)
  p.def_abstract_eval(lambda a: ShapedArray(a.shape, a.dtype))
  seen = []

  def rule(size, name, trace_type, vals, dims):
    seen.append((size, name))
    (x,), (d,) = vals, dims
    return x + size, d
  batching.axis_primitive_batchers[p] = rule
  out = jaxlite.vmap(p.bind, axis_name="i")(jnp.zeros(3))
  np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])
  assert seen == [(3, "i")]


def test_mlir_registration_is_what_jit_runs():
  """As in JAX, compiled code runs the registered lowering, never the impl; a rule for another
  platform does not count."""
  from jaxlite.interpreters import mlir
  from jaxlite.extend.core import Primitive
  p = Primitive("noop_lowering")
  p.def_impl(lambda x: 1 / 0)
  p.def_abstract_eval(lambda a: a)
  mlir.register_lowering(p, lambda ctx, x: [x], platform="tpu")
  with pytest.raises(NotImplementedError, match="'noop_lowering' not found for platform cpu"):
    jaxlite.jit(p.bind)(jnp.ones(2))
  mlir.register_lowering(p, lambda ctx, x: [x], platform="cpu")
  np.testing.assert_array_equal(jaxlite.jit(p.bind)(jnp.ones(2)), np.ones(2))


def test_extend_random_matches_jax():
  from jaxlite.extend import random as xr
  keys = xr.random_seed(jnp.uint32(3), impl=xr.threefry_prng_impl)
  np.testing.assert_array_equal(jaxlite.random.key_data(keys), [0, 3])
  bits = xr.threefry_2x32(np.array([1, 2], np.uint32), np.arange(4, dtype=np.uint32))
  np.testing.assert_array_equal(bits, [4128513521, 3192206206, 2345921600, 3057534555])
  oracle()
  import jax.extend.random as jr
  theirs = jr.threefry_2x32(np.array([1, 2], np.uint32), np.arange(4, dtype=np.uint32))
  np.testing.assert_array_equal(bits, theirs)
  assert str(xr.seed_with_impl(xr.threefry_prng_impl, 5)) == str(
      jr.seed_with_impl(jr.threefry_prng_impl, 5))


def test_source_info_and_traceback_util_as_flax_uses_them():
  from jaxlite.extend import source_info_util as siu
  from jaxlite._src.compat import traceback_util
  traceback_util.register_exclusion("/no/such/dir")
  assert traceback_util.api_boundary(len)([1, 2]) == 2  # a boundary calls through
  info = siu.current()
  assert info.traceback and info.traceback[0].file_name == __file__
  with siu.extend_name_stack("outer"):
    with siu.extend_name_stack("inner"):
      assert str(siu.current_name_stack()) == "outer/inner"
  assert str(siu.current_name_stack()) == ""
