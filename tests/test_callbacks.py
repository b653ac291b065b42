"""jax.debug.print/callback, jax.pure_callback and io_callback: when they run, what they see,
their jaxprs, vmap methods and errors under autodiff — against JAX where it is installed."""
import contextlib
import io

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite import debug
from jaxlite._src.transforms.callbacks import pure_callback
from jaxlite.experimental import io_callback
from conftest import oracle


def _stdout(fn, lib=jaxlite):
  """What `fn` prints, its callbacks included: JAX's jit returns before an asynchronous
  program's callbacks have run (on a many-core host they print after the call), so wait for
  them with `effects_barrier`, as JAX's documentation says to."""
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    fn()
    lib.effects_barrier()
  return buf.getvalue()


def _print_cases(jax):
  jnp_ = __import__(f"{jax.__name__}.numpy", fromlist=["x"])
  pr = jax.debug.print
  x3 = jnp_.arange(3.0)
  return [
      ("eager", lambda: pr("x={} y={y}", x3, y=2)),
      ("no_placeholders", lambda: pr("values", x3, 7, skip_format_check=True)),
      ("jit", lambda: jax.jit(lambda x: pr("jit {}", x * 2))(x3)),
      ("jit_twice", lambda: [jax.jit(lambda x: pr("j {}", x))(v) for v in (1.0, 2.0)]),
      ("vmap", lambda: jax.vmap(lambda x: pr("v {}", x))(x3)),
      ("vmap_unbatched", lambda: jax.vmap(lambda x, c: pr("{} {}", x, c),
                                          in_axes=(0, None))(x3, 5.0)),
      ("grad", lambda: jax.grad(lambda x: (pr("g {}", x), x * x)[1])(3.0)),
      ("jit_grad", lambda: jax.jit(jax.grad(lambda x: (pr("jg {}", x), jnp_.sin(x))[1]))(0.0)),
      ("dead_code_in_jit", lambda: jax.jit(lambda x: (pr("kept {}", x), 1.0)[1])(4.0)),
      ("nested_jit", lambda: jax.jit(lambda x: jax.jit(lambda y: pr("inner {}", y))(x))(1.5)),
      ("ordered", lambda: jax.jit(lambda x: (pr("a {}", x, ordered=True),
                                             pr("b {}", x + 1, ordered=True)))(1)),
      ("two_call", lambda: pr(ordered=True)("two {x}", x=3)),
      ("scan", lambda: jax.lax.scan(lambda c, x: (pr("s {} {}", c, x) or c + x, None),
                                    0.0, x3)),
      ("printoptions", lambda: pr("{}", jnp_.array([1.0 / 3.0]))),
  ]


@pytest.mark.parametrize("name", [c[0] for c in _print_cases(jaxlite)])
def test_debug_print_lines_match_jax(name):
  jax = oracle()
  ours = dict(_print_cases(jaxlite))[name]
  theirs = dict(_print_cases(jax))[name]
  assert _stdout(ours) == _stdout(theirs, jax)


def test_debug_print_known_answers():
  assert _stdout(lambda: debug.print("x={} y={y}", jnp.arange(3.0), y=2)) == "x=[0. 1. 2.] y=2\n"
  f = jaxlite.jit(lambda x: (debug.print("t {}", x), x + 1)[1])
  assert _stdout(lambda: f(1.0)) == "t 1.0\n"
  assert _stdout(lambda: f(2.0)) == "t 2.0\n"  # runs at execution, not (only) at trace time


def test_debug_print_format_errors():
  with pytest.raises(ValueError, match="Unused positional arguments"):
    debug.print("{}", 1, 2)
  with pytest.raises(ValueError, match="f-string"):
    debug.print("{x}", x=1, y=2)
  with pytest.raises(TypeError, match="two-call form"):
    debug.print(None, 1)


def _jaxpr_cases(jax):
  np_ = np
  jnp_ = __import__(f"{jax.__name__}.numpy", fromlist=["x"])
  io_cb = __import__(f"{jax.__name__}.experimental", fromlist=["x"]).io_callback
  sds = jax.ShapeDtypeStruct((), jnp_.float32)
  return {
      "print": lambda x: jax.debug.print("{}", x),
      "print_kwargs_ordered": lambda x: jax.debug.print("{x} {y}", x=x, y=x * 2, ordered=True),
      "pure_callback": lambda x: jax.pure_callback(np_.sin, sds, x),
      "pure_callback_seq": lambda x: jax.pure_callback(np_.sin, sds, x, vmap_method="sequential"),
      "io_callback": lambda x: io_cb(np_.sin, sds, x),
      "io_callback_ordered": lambda x: io_cb(np_.sin, sds, x, ordered=True),
      "vmap_print": jax.vmap(lambda x: jax.debug.print("{}", x)),
      "grad_print": jax.grad(lambda x: (jax.debug.print("{}", x), x * 2)[1]),
  }


@pytest.mark.parametrize("name", list(_jaxpr_cases(jaxlite)))
def test_callback_jaxprs_match_jax(name):
  jax = oracle()
  arg = lambda j: j.numpy.ones(2) if name.startswith("vmap") else 1.0
  ours = str(jaxlite.make_jaxpr(_jaxpr_cases(jaxlite)[name])(arg(jaxlite)))
  theirs = str(jax.make_jaxpr(_jaxpr_cases(jax)[name])(arg(jax)))
  assert ours == theirs


def test_debug_callback_sees_arrays_when_program_runs():
  seen = []
  f = jaxlite.jit(lambda x: (debug.callback(lambda v, k: seen.append((v, k)), x, k="s"), x)[1])
  f(jnp.float32(2.0))
  f(jnp.float32(3.0))
  assert [float(v) for v, _ in seen] == [2.0, 3.0] and [k for _, k in seen] == ["s", "s"]
  assert all(isinstance(v, jaxlite.Array) for v, _ in seen)
  with pytest.raises(TypeError, match="must be callable"):
    debug.callback(3)


@pytest.mark.parametrize("method,shapes", [
    ("sequential", [((), ())] * 3),
    ("expand_dims", [((3,), (1,))]),
    ("broadcast_all", [((3,), (3,))]),
    ("legacy_vectorized", [((3,), ())]),
])
def test_pure_callback_vmap_methods(method, shapes):
  seen = []

  def cb(x, y):
    seen.append((x.shape, y.shape))
    return x + y
  f = lambda x, y: pure_callback(cb, jaxlite.ShapeDtypeStruct((), jnp.float32), x, y,
                                 vmap_method=method)
  out = jaxlite.vmap(f, in_axes=(0, None))(jnp.arange(3.0), jnp.float32(1.0))
  np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
  assert seen == shapes


def test_pure_callback_vmap_methods_match_jax():
  jax = oracle()
  for method in ["sequential", "expand_dims", "broadcast_all", "legacy_vectorized"]:
    results = []
    for lib in (jaxlite, jax):
      seen = []

      def cb(x, y, seen=seen):
        seen.append((np.shape(x), np.shape(y)))
        return (np.asarray(x) * 2).astype(np.float32)
      f = lambda x, y: lib.pure_callback(cb, lib.ShapeDtypeStruct((2,), np.float32), x, y,
                                         vmap_method=method)
      out = lib.vmap(f, in_axes=(1, None))(np.ones((2, 3), np.float32), np.float32(1.0))
      results.append((np.asarray(out), seen))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1], method


def test_pure_callback_pytrees_jit_and_dce():
  calls = []

  def cb(d):
    calls.append(1)
    return {"s": np.sin(d["a"]), "n": np.asarray(d["b"] + 1, np.int32)}
  sds = {"s": jaxlite.ShapeDtypeStruct((2,), jnp.float32),
         "n": jaxlite.ShapeDtypeStruct((), jnp.int32)}
  f = jaxlite.jit(lambda a, b: pure_callback(cb, sds, {"a": a, "b": b}))
  out = f(jnp.array([0.0, 1.0]), jnp.int32(4))
  np.testing.assert_allclose(out["s"], np.sin([0.0, 1.0]), rtol=1e-6)
  assert int(out["n"]) == 5 and out["n"].dtype == np.int32
  unused = jaxlite.jit(lambda a, b: (pure_callback(cb, sds, {"a": a, "b": b}), a)[1])
  calls.clear()
  unused(jnp.ones(2), jnp.int32(0))
  assert calls == []  # pure: removed when its results are not used, as in JAX


@pytest.mark.parametrize("cb,lib_fn,match", [
    ("pure", "grad", "Pure callbacks do not support JVP"),
    ("pure", "jvp", "Pure callbacks do not support JVP"),
    ("io", "grad", "IO callbacks do not support JVP"),
])
def test_callback_autodiff_errors(cb, lib_fn, match):
  sds = jaxlite.ShapeDtypeStruct((), jnp.float32)
  call = pure_callback if cb == "pure" else io_callback
  f = lambda x: call(lambda v: v, sds, x)
  with pytest.raises(ValueError, match=match):
    if lib_fn == "grad":
      jaxlite.grad(f)(1.0)
    else:
      jaxlite.jvp(f, (1.0,), (1.0,))


def test_pure_callback_vmap_without_method_raises():
  sds = jaxlite.ShapeDtypeStruct((), jnp.float32)
  with pytest.raises(NotImplementedError, match="vmap_method=None"):
    jaxlite.vmap(lambda x: pure_callback(lambda v: v, sds, x))(jnp.ones(2))
  with pytest.raises(ValueError, match="vmap_method must be"):
    pure_callback(lambda v: v, sds, 1.0, vmap_method="bogus")


def test_pure_callback_wrong_result_shape_raises_runtime_error():
  from jaxlite._src.base.errors import JaxRuntimeError
  sds = jaxlite.ShapeDtypeStruct((3,), jnp.float32)
  with pytest.raises(JaxRuntimeError, match=r"Expected: \(3,\), Actual: \(2,\)"):
    pure_callback(lambda v: v, sds, jnp.ones(2))
  with pytest.raises(JaxRuntimeError):
    jaxlite.jit(lambda x: pure_callback(lambda v: v, sds, x))(jnp.ones(2))


def test_io_callback_runs_even_when_unused_and_vmaps_sequentially():
  log = []

  def cb(x):
    log.append(float(x))
    return np.float32(x) * 2
  sds = jaxlite.ShapeDtypeStruct((), jnp.float32)
  f = jaxlite.jit(lambda x: (io_callback(cb, sds, x), x)[1])
  f(1.0)
  assert log == [1.0]
  log.clear()
  out = jaxlite.vmap(lambda x: io_callback(cb, sds, x))(jnp.arange(3.0))
  np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
  assert log == [0.0, 1.0, 2.0]
  with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
    jaxlite.vmap(lambda x: io_callback(cb, sds, x, ordered=True))(jnp.arange(3.0))


def test_debug_log_goes_to_logging(caplog):
  import logging
  with caplog.at_level(logging.INFO, logger="jax._src.debugging"):
    jaxlite.jit(lambda x: debug.log("logged {}", x))(2.0)
  assert [r.getMessage() for r in caplog.records] == ["logged 2.0"]


def test_breakpoint_can_be_disabled(monkeypatch):
  monkeypatch.setenv("JAXLITE_DEBUG_BREAKPOINT", "0")
  assert jaxlite.jit(lambda x: (debug.breakpoint(), x + 1)[1])(1.0) == 2.0


def test_unused_pure_callback_is_not_lowered():
  """An unused pure_callback is dropped before lowering, as JAX lowers a jaxpr: on the TPU its
  host transfers are side effects XLA would keep (the callback ran there)."""
  calls = []

  def cb(x):
    calls.append(1)
    return x
  f = jaxlite.jit(lambda a: (pure_callback(cb, jaxlite.ShapeDtypeStruct((2,), jnp.float32), a),
                             a + 1)[1])
  text = f.lower(jnp.ones(2)).as_text()  # StableHLO on the xla backend, else the jaxpr
  assert "custom_call" not in text and "stablehlo.send" not in text
  np.testing.assert_array_equal(f(jnp.ones(2)), [2.0, 2.0])
  assert calls == []
