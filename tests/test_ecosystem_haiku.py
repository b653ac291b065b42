"""What dm-haiku 0.0.17's suite relies on (issue 34), each against real JAX."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from conftest import oracle


def _checkpoint_sees(m):
  seen = []

  def f(x):
    seen.append(isinstance(x, m.core.Tracer))
    return m.numpy.sin(x) * 2

  g = m.checkpoint(f)
  outs = [g(m.numpy.float32(0.5)), g(m.numpy.float32(0.25)), m.grad(g)(m.numpy.float32(0.5))]
  return seen, [float(o) for o in outs]


def test_eager_checkpoint_traces_its_function():
  """haiku raises JaxUsageError when its state is used inside jax.checkpoint: it sees the
  function run on tracers even when the checkpoint is called eagerly, as in JAX."""
  got, want = _checkpoint_sees(jax), _checkpoint_sees(oracle())
  assert got[0] == want[0]
  assert got[0][0] is True
  np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_jit_forwards_private_function_attributes():
  """haiku's summarise reads `jax.jit(init)._original_fn`: JAX's jit copies the function's
  __dict__ as functools.wraps does, private names included."""
  for m in (jax, oracle()):
    def init(x):
      return x + 1
    init._original_fn = "f"
    init.public = 3
    jitted = m.jit(init)
    assert jitted._original_fn == "f" and jitted.public == 3
    assert float(jitted(jnp.float32(1.0) if m is jax else 1.0)) == 2.0
    # a grad of a jit keeps working (it carries the jit's own state)
    assert float(m.grad(m.jit(lambda x: x * x))(3.0)) == 6.0


def _name_stacks(m):
  """Each eqn's primitive and `str(eqn.source_info.name_stack)` (nested jaxprs indented)."""
  def g(x):
    return m.numpy.sin(x) * 2

  def f(x):
    y = m.numpy.cos(x)
    with m.named_scope("outer"):
      y = y + 1
      with m.named_scope("inner"):
        y = m.numpy.exp(y)
      y = m.named_call(g, name="gee")(y)
      y = m.jit(g)(y)  # a jit's body starts a fresh stack; its eqn carries the outer one
    return m.named_call(g)(y)

  def loss(x):
    with m.named_scope("model"):
      y = m.numpy.tanh(x) * x
    return m.numpy.sum(y)

  out = []

  def walk(jaxpr, depth):
    for e in jaxpr.eqns:
      out.append((depth, e.primitive.name, str(e.source_info.name_stack)))
      inner = e.params.get("jaxpr")
      if inner is not None:
        walk(getattr(inner, "jaxpr", inner), depth + 1)

  walk(m.make_jaxpr(f)(1.0).jaxpr, 0)
  walk(m.make_jaxpr(m.grad(loss))(m.numpy.ones(3)).jaxpr, 0)
  walk(m.make_jaxpr(lambda x: m.jvp(loss, (x,), (x,)))(m.numpy.ones(3)).jaxpr, 0)
  return out


def test_eqn_name_stacks_from_named_scopes_and_transforms():
  """haiku's jaxpr_info groups eqns into modules by `eqn.source_info.name_stack`: scopes from
  named_scope/named_call, `jvp(...)` around what a jvp or grad stages, `transpose(jvp(...))`
  around its backward pass, a jit's body restarting the stack: as JAX's, eqn by eqn."""
  got, want = _name_stacks(jax), _name_stacks(oracle())
  assert got == want
  assert ("outer/inner" in {s for _, _, s in got} and "transpose(jvp(model))" in
          {s for _, _, s in got})


def test_name_stacks_are_per_thread():
  """A scope opened in one thread does not name what another thread stages (as JAX's)."""
  import threading

  def stacks(m):
    got = {}

    def other():
      got["other"] = [str(e.source_info.name_stack)
                      for e in m.make_jaxpr(lambda x: m.numpy.sin(x) + 1)(1.0).jaxpr.eqns]

    def here(x):
      with m.named_scope("main"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        return m.numpy.cos(x)

    got["main"] = [str(e.source_info.name_stack) for e in m.make_jaxpr(here)(1.0).jaxpr.eqns]
    return got

  got, want = stacks(jax), stacks(oracle())
  assert got == want == {"other": ["", ""], "main": ["main"]}


def _dot_hlo_lines(m):
  """The `dot(` and `convolution(` lines of XLA's HLO text per precision, names dropped."""
  import re
  x, w = np.ones((1, 1), np.float32), np.ones((1, 1), np.float32)
  img, kern = np.ones((1, 3, 3, 1), np.float32), np.ones((2, 2, 1, 1), np.float32)
  lines = []
  for p in (None, m.lax.Precision.DEFAULT, m.lax.Precision.HIGH, m.lax.Precision.HIGHEST):
    dot = m.jit(lambda x: m.lax.dot(x, w, precision=p)).lower(x).compiler_ir(dialect="hlo")
    conv = m.jit(lambda x: m.lax.conv_general_dilated(
        x, kern, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision=p)).lower(img).compiler_ir(dialect="hlo")
    for text, op in ((dot.as_hlo_text(), "dot("), (conv.as_hlo_text(), "convolution(")):
      line = next(ln for ln in text.split("\n") if op in ln)
      lines.append(re.sub(r"[\w.]+ = ", "", re.sub(r"\([^)]*\)", "()", line)).strip())
  return lines


def test_lowered_compiler_ir_hlo_shows_operand_precision():
  """haiku's Linear/Conv precision tests read `jit(f).lower(x).compiler_ir("hlo")
  .as_hlo_text()` for XLA's `operand_precision`: the XLA backend's lowering, through jaxlib
  (without jaxlib there is no XLA computation: None, as JAX returns when it has none)."""
  import importlib.util
  x = np.ones((1, 1), np.float32)
  lowered = jax.jit(lambda x: x @ x).lower(x)
  if importlib.util.find_spec("jaxlib") is None:
    assert lowered.compiler_ir("hlo") is None and lowered.compiler_ir() is None
    return
  with pytest.raises(ValueError, match="unknown dialect: mhlo"):
    lowered.compiler_ir("mhlo")
  assert "stablehlo.dot_general" in str(lowered.compiler_ir())
  got = _dot_hlo_lines(jax)
  assert "operand_precision={highest,highest}" in got[-2] and "operand_precision" not in got[0]
  assert got == _dot_hlo_lines(oracle())


def _recording_trace(m):
  """haiku's DotTrace in small: a library Trace (built with no arguments) whose tracers are
  `Tracer(trace, aval)` and which forwards each primitive to its parent trace through
  `Primitive.bind_with_trace(parent, vals, avals, params)`."""
  import importlib
  ext = importlib.import_module(m.__name__ + ".extend.core")
  seen = []

  class RecTracer(m.core.Tracer):
    def __init__(self, trace, val):
      super().__init__(trace, m.typeof(val))
      self.val = val

  class RecTrace(m.core.Trace):
    def __init__(self, parent):
      super().__init__()
      self.parent_trace = parent

    def process_primitive(self, primitive, tracers, params):
      vals = [t.val if isinstance(t, RecTracer) else t for t in tracers]
      seen.append(str(primitive))
      out = primitive.bind_with_trace(self.parent_trace, vals, [m.typeof(v) for v in vals],
                                      params)
      return m.tree.map(lambda v: RecTracer(self, v), out)

  def run(x):
    with ext.take_current_trace() as parent:
      trace = RecTrace(parent)
      with ext.set_current_trace(trace):
        s = m.lax.sin(RecTracer(trace, x))
        y = m.lax.mul(s, s)
    return y.val, y.aval

  val, aval = run(m.numpy.float32(0.5))
  return seen, float(val), (aval.shape, str(aval.dtype))


def test_library_trace_classes_built_as_in_jax():
  got = _recording_trace(jax)
  assert got[0] == ["sin", "mul"] and got[2] == ((), "float32")
  np.testing.assert_allclose(got[1], np.sin(0.5) ** 2, rtol=1e-6)
  assert got == _recording_trace(oracle())


def _custom_jvp_call_binders(m):
  eqn = m.make_jaxpr(m.nn.relu)(1.0).jaxpr.eqns[0]
  closed = eqn.params["call_jaxpr"]
  return (str(eqn.primitive), len(closed.constvars), [str(v.aval) for v in closed.invars],
          [str(v.aval) for v in closed.outvars], closed.invars == closed.jaxpr.invars)


def test_closed_jaxpr_forwards_its_binders():
  """haiku's jaxpr_info walks a custom_jvp_call's closed `call_jaxpr` by its constvars, invars
  and outvars, which JAX's ClosedJaxpr forwards from its jaxpr."""
  got = _custom_jvp_call_binders(jax)
  assert got[0] == "custom_jvp_call" and got[1] == 0 and got[4] is True
  want = _custom_jvp_call_binders(oracle())
  assert got[:2] == want[:2] and len(got[2]) == len(want[2]) and got[4] == want[4]
