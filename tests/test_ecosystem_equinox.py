"""JAX behaviours equinox 0.13.8's own suite depends on (issue 34), each against real JAX when it
is installed and against values recorded from JAX 0.10.2 otherwise.
"""
import logging

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp


def _jax_or_none():
  try:
    import jax as real
  except ImportError:
    return None
  return real


# --- a failing pure_callback / io_callback -----------------------------------------------------


def _callback_failures(m, caplog):
  """(exception type name, its message's head and tail, what was logged) for a callback that
  raises, eagerly and under jit, through pure_callback and io_callback."""
  experimental = __import__(m.__name__ + ".experimental", fromlist=["io_callback"])

  def boom(x):
    raise ValueError("boom")

  sds = m.ShapeDtypeStruct((), np.float32)
  calls = {
    "pure eager": lambda x: m.pure_callback(boom, sds, x),
    "pure jit": m.jit(lambda x: m.pure_callback(boom, sds, x)),
    "io eager": lambda x: experimental.io_callback(boom, sds, x),
    "io jit": m.jit(lambda x: experimental.io_callback(boom, sds, x)),
  }
  seen = {}
  for name, call in calls.items():
    caplog.clear()
    with caplog.at_level(logging.ERROR):
      try:
        call(m.numpy.array(1.0))
        seen[name] = None
        continue
      except Exception as e:  # noqa: BLE001 - what it raises is what is compared
        err = e
    text = str(err)
    seen[name] = (type(err).__name__, isinstance(err, RuntimeError), err.__cause__ is None,
                  text.split("Traceback")[0], text.rstrip().splitlines()[-1],
                  sorted({(r.name, r.getMessage()) for r in caplog.records}))
  return seen


_RECORDED_CALLBACK_FAILURES = {  # JAX 0.10.2 on CPU
  "pure eager": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
                 "ValueError: boom", [("jax._src.callback", "jax.pure_callback failed")]),
  "pure jit": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
               "ValueError: boom", [("jax._src.callback", "jax.pure_callback failed")]),
  "io eager": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
               "ValueError: boom", [("jax._src.callback", "jax.io_callback failed")]),
  "io jit": ("JaxRuntimeError", True, True, "INTERNAL: CpuCallback error calling callback: ",
             "ValueError: boom", [("jax._src.callback", "jax.io_callback failed")]),
}


def test_a_failing_callback_raises_jax_runtime_error_with_the_traceback(caplog):
  """equinox's `error_if` raises inside a pure_callback; its `filter_jit` catches JAX's
  JaxRuntimeError, finds its own error's name in the message and re-raises it as
  EquinoxRuntimeError, and filters the `jax._src.callback` logger's record."""
  real = _jax_or_none()
  want = _RECORDED_CALLBACK_FAILURES if real is None else _callback_failures(real, caplog)
  assert want == _RECORDED_CALLBACK_FAILURES
  assert _callback_failures(jax, caplog) == want


# --- a 0-d result of a compiled program, updated in place ---------------------------------------


def _scalar_updates(m):
  x = m.jit(lambda k: m.random.normal(k, ()))(m.random.PRNGKey(0))  # a 0-d program output
  y = m.jit(lambda a: a * 2 + 1)(m.numpy.float32(1.5))
  return [float(x.at[()].set(3)), float(x.at[()].add(1) - x), float(y.at[...].multiply(2)),
          float(y.at[()].get())]


def test_scalar_program_output_updates_with_at():
  """equinox's ω operators (`test_misc.py::test_ω_inplace`) `.at[()].set` a 0-d array that a
  jitted function returned; jaxlite's compiled programs may hand those back as NumPy scalars."""
  real = _jax_or_none()
  want = [3.0, 1.0, 8.0, 4.0] if real is None else _scalar_updates(real)
  np.testing.assert_allclose(want, [3.0, 1.0, 8.0, 4.0], rtol=1e-6)
  np.testing.assert_allclose(_scalar_updates(jax), want, rtol=1e-6)
  assert jnp.asarray(2.0).at[()].set(5).shape == ()


# --- evaluating a jaxpr eqn by eqn on Python numbers -------------------------------------------


def _bound_on_python_numbers(m):
  lax = m.lax
  outs = [lax.not_p.bind(False), lax.add_p.bind(1.0, 2.0), lax.add_p.bind(1, 2),
          lax.neg_p.bind(3), lax.add_p.bind(m.numpy.float32(1), 2.0)]
  return [(np.asarray(o).item(), str(o.dtype), o.weak_type) for o in outs]


_RECORDED_BOUND = [(True, "bool", False), (3.0, "float32", True), (3, "int32", True),
                   (-3, "int32", True), (3.0, "float32", False)]


def test_primitive_bound_eagerly_on_python_numbers():
  """equinox's `finalise_jaxpr` evaluates a jaxpr by binding each eqn's primitive on the values
  it was called with, Python bools and floats included: JAX's eager bind makes them
  arrays of their default dtype, weak but for bools."""
  real = _jax_or_none()
  want = _RECORDED_BOUND if real is None else _bound_on_python_numbers(real)
  assert want == _RECORDED_BOUND
  assert _bound_on_python_numbers(jax) == want


def _custom_jvp_subfuns(m):
  @m.custom_jvp
  def f(x, y):
    return m.numpy.sin(x) * y

  @f.defjvp
  def f_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return f(x, y), 10.0 * tx + 100.0 * ty

  closed = m.make_jaxpr(f)(1.0, 2.0)
  (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "custom_jvp_call"]
  params = eqn.primitive.get_bind_params(eqn.params)
  fun, lifted_jvp = params["subfuns"]
  return [[float(v) for v in fun.call_wrapped(1.0, 2.0)],
          [float(v) for v in eqn.primitive.bind(1.0, 2.0, **params)],
          [float(v) for v in lifted_jvp.call_wrapped(1.0, 2.0, 1.0, 1.0)],
          "symbolic_zeros" in params]


def test_custom_jvp_call_bind_params_carry_its_function_and_rule():
  """equinox's `finalise_jaxpr` inlines a custom_jvp_call through
  `get_bind_params(params)["subfuns"][0].call_wrapped`, and rebinds other eqns with the
  params it returns."""
  real = _jax_or_none()
  recorded = [[1.682942], [1.682942], [1.682942, 110.0], True]
  want = recorded if real is None else _custom_jvp_subfuns(real)
  got = _custom_jvp_subfuns(jax)
  for w, r, g in zip(want[:3], recorded[:3], got[:3]):
    np.testing.assert_allclose(w, r, rtol=1e-6)
    np.testing.assert_allclose(g, w, rtol=1e-6)
  assert got[3] == want[3] == recorded[3]


# --- jax.jvp keeps Python numbers as they are ---------------------------------------------------


def _jvp_value_types(m):
  def kinds(tree):
    return m.tree_util.tree_map(lambda v: (type(v).__name__ if type(v) in (float, int, bool)
                                           else "ndarray" if type(v) is np.ndarray else "Array",
                                           str(getattr(v, "dtype", ""))), tree)

  seen = []

  @m.custom_jvp
  def f(x):
    return x

  @f.defjvp
  def f_jvp(primals, tangents):
    seen.append((type(primals[0]).__name__, type(tangents[0]).__name__))
    return primals[0] * 1, tangents[0] ** 2

  np32 = np.ones(2, np.float32)
  return [kinds(m.jvp(lambda x: x, (2.0,), (3.0,))),
          kinds(m.jvp(lambda x: (x, 1.0), (2.0,), (3.0,))),
          kinds(m.jvp(lambda x: x * 2, (2.0,), (3.0,))),
          kinds(m.jvp(lambda x, y: (x, y), (2.0, True),
                      (3.0, np.zeros((), m.dtypes.float0)))[0]),
          kinds(m.jvp(lambda x: x, (np32,), (np32,))),
          kinds(m.jvp(f, (2.0,), (3.0,))), seen]


_RECORDED_JVP_TYPES = [
  (("float", ""), ("float", "")),
  ((("float", ""), ("float", "")), (("float", ""), ("Array", "float32"))),
  (("Array", "float32"), ("Array", "float32")),
  (("float", ""), ("bool", "")),
  (("ndarray", "float32"), ("ndarray", "float32")),
  (("float", ""), ("float", "")),
  [("float", "float")],
]


def test_jvp_keeps_python_numbers_as_they_are():
  """`jax.jvp(f, (2.0,), (3.0,))` hands a custom_jvp rule the floats 2.0 and 3.0, and returns
  what the rule computed from them as floats: equinox's `filter_custom_jvp` treats Python
  floats as static (`test_filter_custom_jvp_*`, `test_nondiff_back` check the float comes
  back). Outputs computed by primitives are Arrays; a constant output's tangent is an Array
  zero."""
  real = _jax_or_none()
  want = _RECORDED_JVP_TYPES if real is None else _jvp_value_types(real)
  assert want == _RECORDED_JVP_TYPES
  assert _jvp_value_types(jax) == want
  primal, tangent = jax.jvp(lambda x: jnp.sin(x) * x, (2.0,), (3.0,))
  np.testing.assert_allclose([primal, tangent],
                             [np.sin(2.0) * 2, 3.0 * (np.cos(2.0) * 2 + np.sin(2.0))], rtol=1e-6)


# --- a lowering rule that calls back to Python -------------------------------------------------


def _host_callback_lowering(m):
  extend_core = __import__(m.__name__ + ".extend.core", fromlist=["Primitive"])
  mlir = __import__(m.__name__ + ".interpreters.mlir", fromlist=["register_lowering"])
  calls = {"impl": 0, "callback": []}
  p = extend_core.Primitive("eqx_host_triple")

  def impl(x):
    calls["impl"] += 1
    return x * 3

  p.def_impl(impl)
  p.def_abstract_eval(lambda x: m.core.ShapedArray(x.shape, x.dtype))

  def rule(ctx, x):
    def on_host(xv):
      calls["callback"].append((type(xv).__name__, str(xv.dtype)))
      return (np.asarray(xv) * 3,)
    results, _, keepalive = mlir.emit_python_callback(
        ctx, on_host, None, [x], ctx.avals_in, ctx.avals_out, has_side_effect=False)
    ctx.module_context.add_keepalive(keepalive)
    return results

  mlir.register_lowering(p, rule)
  f = m.jit(lambda x: p.bind(x) + 1)
  out = [np.asarray(f(m.numpy.arange(3.0))).tolist(), np.asarray(f(m.numpy.ones(3))).tolist()]
  return out, calls


def test_emit_python_callback_calls_back_when_the_program_runs():
  """equinox's `noinline` lowers its primitive with `mlir.emit_python_callback`: under jit the
  callback (a jitted function, traced once) runs on NumPy operands each time the program runs,
  and the primitive's impl never does (`test_noinline.py::test_num_traces`)."""
  recorded = ([[1.0, 4.0, 7.0], [4.0, 4.0, 4.0]],
              {"impl": 0, "callback": [("ndarray", "float32"), ("ndarray", "float32")]})
  real = _jax_or_none()
  want = recorded if real is None else _host_callback_lowering(real)
  assert want == recorded
  assert _host_callback_lowering(jax) == want


# --- jnp.load restores bfloat16 ----------------------------------------------------------------


def _loaded(m, tmp_path):
  import io
  out = []
  for value in (m.numpy.array([2, 4, 6], dtype="bfloat16"), m.numpy.array(1, dtype="bfloat16"),
                np.array([1.5], np.float32)):
    f = io.BytesIO()
    np.save(f, np.asarray(value))
    f.seek(0)
    got = m.numpy.load(f)
    out.append((isinstance(got, m.Array), str(got.dtype), np.asarray(got).tolist()))
  return out


def test_load_restores_bfloat16(tmp_path):
  """NumPy writes bfloat16 as 2-byte void; `jnp.load` views it as bfloat16 again (equinox's
  `tree_deserialise_leaves` of a bfloat16 leaf)."""
  pytest.importorskip("ml_dtypes", reason="bfloat16 comes from ml_dtypes, an optional extra")
  recorded = [(True, "bfloat16", [2.0, 4.0, 6.0]), (True, "bfloat16", 1.0),
              (True, "float32", [1.5])]
  real = _jax_or_none()
  want = recorded if real is None else _loaded(real, tmp_path)
  assert want == recorded
  assert _loaded(jax, tmp_path) == want


# --- pmap(f).lower ------------------------------------------------------------------------------


def _pmap_lowered(m):
  f = m.pmap(lambda x, y: 2 * x + y, in_axes=(0, None))
  x, y = m.numpy.array([3]), m.numpy.array(4)
  lowered = f.lower(x, y)
  text = lowered.as_text()
  compiled = lowered.compile()
  return (isinstance(text, str) and len(text) > 0, np.asarray(compiled(x, y)).tolist(),
          np.asarray(compiled(m.numpy.array([5]), m.numpy.array(1))).tolist(),
          np.asarray(f(x, y)).tolist())


def test_pmap_lower_and_compile():
  """equinox's `filter_pmap(f).lower(...)` lowers the `jax.pmap` it builds, prints it and
  compiles it; the compiled program is called with the pmapped function's arguments
  (`test_pmap.py::test_aot_compilation`)."""
  recorded = (True, [10], [11], [10])
  real = _jax_or_none()
  want = recorded if real is None else _pmap_lowered(real)
  assert want == recorded
  assert _pmap_lowered(jax) == want


# --- a library primitive's transpose reads its constant operand's aval -------------------------


def _transpose_operand_types(m):
  extend_core = __import__(m.__name__ + ".extend.core", fromlist=["Primitive"])
  ad = __import__(m.__name__ + ".interpreters.ad", fromlist=["primitive_jvps"])
  seen = []
  p = extend_core.Primitive("eqx_shift")
  p.def_impl(lambda x, y: x + y)
  p.def_abstract_eval(lambda x, y: m.core.ShapedArray(y.shape, y.dtype))

  def jvp(primals, tangents):
    x, y = primals
    # the tangent part adds a constant zero, made by jnp.zeros inside the rule, as equinox's
    # select_if_vmap rule does for a symbolic-zero tangent
    return p.bind(x, y), p.bind(m.numpy.zeros(y.shape, y.dtype), tangents[1])

  def transpose(ct, x, y):
    seen.append((ad.is_undefined_primal(x), ad.is_undefined_primal(y),
                 tuple(x.aval.shape), str(x.aval.dtype)))
    return None, ct

  ad.primitive_jvps[p] = jvp
  ad.primitive_transposes[p] = transpose
  g = m.grad(lambda y: p.bind(m.numpy.float32(2.0), y) * 3.0)(m.numpy.float32(1.0))
  return float(g), seen


def test_library_transpose_gets_arrays_for_constant_operands():
  """JAX hands a library primitive's transpose rule its non-linear operands as Arrays, constants
  folded into the linear program included: equinox's `select_if_vmap` transpose asserts
  `ct.shape == x.aval.shape` (`test_while_loop.py::test_symbolic_zero`)."""
  recorded = (3.0, [(False, True, (), "float32")])
  real = _jax_or_none()
  want = recorded if real is None else _transpose_operand_types(real)
  assert want == recorded
  assert _transpose_operand_types(jax) == want
