"""Tokens (`create_token`, `after_all`), `dce_sink`, and the identity-like primitives (`copy_p`,
`device_put_p`, `stage`, `empty2_p`, `eq_to_p`/`le_to_p`/`lt_to_p`, `shape_as_value`): printed
jaxprs, values and types against JAX 0.10.2 and known answers."""
import importlib

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jlnp
from conftest import oracle


def _sem(jax, name):
  if jax is jaxlite:
    from jaxlite._src.lax.identity_ops import ArrayCopySemantics
  else:
    from jax._src.dispatch import ArrayCopySemantics
  return getattr(ArrayCopySemantics, name)


def _jaxprs(jax):
  lax, P = jax.lax, importlib.import_module(jax.__name__ + ".extend.core.primitives")
  f32 = np.float32
  return [
      jax.make_jaxpr(lambda x: lax.after_all(lax.create_token(), lax.create_token()))(1.0),
      jax.make_jaxpr(lambda x: lax.after_all())(1.0),
      jax.make_jaxpr(lambda x: lax.dce_sink(x))(1.0),
      jax.make_jaxpr(lambda x: lax.dce_sink((x, 2 * x), prevent_mlir_dce=True))(1.0),
      jax.make_jaxpr(lambda x: lax.copy_p.bind(x))(1.0),
      jax.make_jaxpr(lambda x: lax.device_put_p.bind(
          x, devices=(None,), srcs=(None,), copy_semantics=(_sem(jax, "REUSE_INPUT"),)))(1.0),
      jax.make_jaxpr(lambda: lax.stage(1.0))(),
      jax.make_jaxpr(lambda x: lax.stage(x))(f32(1)),
      jax.make_jaxpr(lambda x: P.empty2_p.bind(dtype=np.dtype(f32),
                                               memory_space=jax.memory.Space.Device))(1.0),
      jax.make_jaxpr(lambda x, y: (lax.eq_to_p.bind(x, y), lax.le_to_p.bind(x, y),
                                   lax.lt_to_p.bind(x, y)))(np.int32(1), np.int32(2)),
      jax.make_jaxpr(lambda: lax.shape_as_value((2, 3)))(),
  ]


KNOWN = {
    0: ("{ lambda ; a:f32[]. let\n    b:Tok = create_token \n    c:Tok = create_token \n"
        "    d:Tok = after_all b c\n  in (d,) }"),
    2: "{ lambda ; a:f32[]. let dce_sink[prevent_mlir_dce=False] a in () }",
    4: "{ lambda ; a:f32[]. let b:f32[] = copy a in (b,) }",
    6: "{ lambda ; . let  in (1.0:f32[],) }",
    10: "{ lambda a:i32[2]; . let  in (a,) }",
}


def test_printed_jaxprs_match_jax():
  got = [str(j) for j in _jaxprs(jaxlite)]
  for i, want in KNOWN.items():
    assert got[i] == want
  jax = oracle()
  assert got == [str(j) for j in _jaxprs(jax)]


def _values(jax):
  lax, P = jax.lax, importlib.import_module(jax.__name__ + ".extend.core.primitives")
  i32 = np.int32
  x = jax.numpy.arange(3.0)
  return [
      lax.copy_p.bind(x),
      lax.device_put_p.bind(x, devices=(None,), srcs=(None,),
                            copy_semantics=(_sem(jax, "ALWAYS_COPY"),))[0],
      lax.stage(1.0), lax.stage(np.arange(2)),
      P.empty2_p.bind(dtype=np.dtype(np.float32), memory_space=jax.memory.Space.Device),
      lax.eq_to_p.bind(i32(1), i32(2)), lax.le_to_p.bind(i32(1), i32(2)),
      lax.lt_to_p.bind(i32(2), i32(2)),
      lax.shape_as_value((2, 3)),
      jax.grad(lambda v: lax.copy_p.bind(v * v))(3.0),
      jax.grad(lambda v: lax.stage(v) * v)(3.0),
      jax.vmap(lambda v: lax.copy_p.bind(v) + 1.0)(x),
      jax.jit(lambda v: (lax.dce_sink(v), lax.after_all(lax.create_token()), v * 2)[2])(x),
  ]


def test_values_match_jax():
  got = _values(jaxlite)
  want = [np.arange(3.0), np.arange(3.0), 1.0, np.arange(2), 0.0, False, True, False,
          np.array([2, 3]), 6.0, 6.0, np.arange(1.0, 4.0), 2 * np.arange(3.0)]
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), w)
  assert type(got[8]) is np.ndarray and got[8].dtype == np.int32  # as JAX: a NumPy array
  jax = oracle()
  for g, w in zip(got, _values(jax)):
    assert type(g) is np.ndarray if type(w) is np.ndarray else True
    g, w = np.asarray(g), np.asarray(w)
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(g, w)


def test_tokens_are_tokens():
  t = jaxlite.lax.create_token()
  assert isinstance(t, jaxlite.extend.core.Token)
  assert isinstance(jaxlite.lax.after_all(t, t), jaxlite.extend.core.Token)
  assert jaxlite.lax.dce_sink(jlnp.ones(2)) is None
  with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
    jaxlite.lax.after_all(t, 1.0)
  with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
    jaxlite.jit(lambda x: jaxlite.lax.after_all(x))(1.0)


def test_dce_sink_survives_dce():
  # The sink's eqn is kept by jit's passes (an effect), while an unused plain op is dropped.
  from jaxlite._src.compiler import passes
  closed = jaxlite.make_jaxpr(lambda x: (jaxlite.lax.dce_sink(x * 2.0), jlnp.sin(x), x)[2])(1.0)
  kept = passes.dce(closed.jaxpr)
  assert [e.primitive.name for e in kept.eqns] == ["mul", "dce_sink"]


def test_memory_space_matches_jax():
  space = jaxlite.memory.Space
  assert [repr(m) for m in space] == ["MemorySpace.Device", "MemorySpace.Host", "MemorySpace.Any"]
  jax = oracle()
  assert [repr(m) for m in space] == [repr(m) for m in jax.memory.Space]
  assert [m.value for m in space] == [m.value for m in jax.memory.Space]


def test_trace_tag_equality_matches_jax():
  from jaxlite.extend.core import TraceTag
  a, b = TraceTag(), TraceTag()
  assert a == b and hash(a) == hash(b) and a != object()
  jax = oracle()
  ext = importlib.import_module(jax.__name__ + ".extend.core")
  assert (ext.TraceTag() == ext.TraceTag()) == (a == b)
