"""Small API gaps found by running optax/chex/flax/equinox's own suites on jaxlite (ECOSYSTEM.md):
each case against real JAX (oracle) or a known answer."""
import functools
import importlib
import re
import warnings

import numpy as np
import pytest

import jaxlite
from jaxlite import lax

from conftest import oracle

# (per-member shape, named-axis size, swapped axis)
PSWAPAXES_CASES = [((4, 3), 4, 0), ((2, 3), 3, 1), ((5, 2), 2, 1), ((2, 2, 2), 2, 2)]


@pytest.mark.parametrize("shape,n,axis", PSWAPAXES_CASES)
def test_pswapaxes_matches_jax(shape, n, axis):
  jax = oracle()
  x = np.arange(n * int(np.prod(shape)), dtype=np.float32).reshape((n,) + shape)
  got = jaxlite.vmap(lambda v: lax.pswapaxes(v, "i", axis), axis_name="i")(x)
  want = jax.vmap(lambda v: jax.lax.pswapaxes(v, "i", axis), axis_name="i")(x)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_pswapaxes_known_answer():
  # Member i holds row i of x; swapping the named axis with axis 0 transposes x.
  x = np.arange(9, dtype=np.float32).reshape(3, 3)
  got = jaxlite.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)
  np.testing.assert_array_equal(np.asarray(got), x.T)


def test_pswapaxes_size_mismatch_raises():
  x = np.zeros((3, 2), np.float32)
  with pytest.raises(ValueError, match="all_to_all"):
    jaxlite.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(x)


class _DuckArray:
  """Not an array: only a shape and a dtype, which JAX's eval_shape accepts."""
  shape = (2, 3)
  dtype = np.dtype("float32")


# (argument builder taking the library module, function) -> eval_shape's result must match JAX.
EVAL_SHAPE_CASES = [
  ("ShapedArray np dtypes", lambda m: (m.core.ShapedArray((2, 3), np.dtype("float32")),
                                       m.core.ShapedArray((3,), np.dtype("int32"))),
   lambda a, b: a + b),
  ("ShapedArray scalar-type dtype", lambda m: (m.core.ShapedArray((4, 1), m.numpy.float32),),
   lambda a: a.sum(0)),
  ("weak ShapedArray", lambda m: (m.core.ShapedArray((), m.numpy.float32, weak_type=True),),
   lambda a: a * 2),
  ("duck-typed array", lambda m: (_DuckArray(),), lambda a: a.T),
]


@pytest.mark.parametrize("name,make_args,fun", EVAL_SHAPE_CASES,
                         ids=[c[0] for c in EVAL_SHAPE_CASES])
def test_eval_shape_takes_abstract_and_duck_typed_args(name, make_args, fun):
  jax = oracle()
  importlib.import_module("jax.core")  # make_args reads jax.core.ShapedArray
  importlib.import_module("jaxlite.core")
  got = jaxlite.eval_shape(fun, *make_args(jaxlite))
  want = jax.eval_shape(fun, *make_args(jax))
  assert (got.shape, np.dtype(got.dtype), got.weak_type) == (
      want.shape, np.dtype(want.dtype), want.weak_type)


def test_eval_shape_rejects_value_without_dtype():
  with pytest.raises(TypeError, match="not a valid JAX type"):
    jaxlite.eval_shape(lambda a: a, object())


def _pmap_kw_cases(m):
  """(name, thunk) pairs calling m.pmap with keyword arguments (mapped over axis 0 in JAX)."""
  jnp = m.numpy
  x = jnp.arange(6.0).reshape(1, 6)
  y = jnp.ones((1, 6))

  def foo(x, y, flag=True):
    return x * 2 + y if flag else x - y

  return [
    ("all keywords", lambda: m.pmap(foo)(x=x, y=y)),
    ("mixed", lambda: m.pmap(foo)(x, y=y)),
    ("keyword flag", lambda: m.pmap(foo, static_broadcasted_argnums=2)(x, y, False)),
    ("in_axes None positional", lambda: m.pmap(foo, in_axes=(None,))(x[0], y=y)),
    ("partial keyword", lambda: m.pmap(functools.partial(foo, flag=False))(x=x, y=y)),
    ("jit of pmap", lambda: m.jit(m.pmap(foo))(x=x, y=y)),
    ("dict keyword", lambda: m.pmap(lambda x, d: x + d["a"])(x, d={"a": y})),
  ]


@pytest.mark.parametrize("i", range(7))
def test_pmap_keyword_arguments_match_jax(i):
  jax = oracle()
  name, got = _pmap_kw_cases(jaxlite)[i]
  _, want = _pmap_kw_cases(jax)[i]
  np.testing.assert_array_equal(np.asarray(got()), np.asarray(want()), err_msg=name)


# Probabilities as NumPy float64 (flax's Dropout passes `1 - rate` from np.arange): JAX takes the
# canonical float32 without warning.
BERNOULLI_P = [np.float64(0.3), np.float64(0.7), np.array([0.1, 0.9]), 0.5]


@pytest.mark.parametrize("mode", ["low", "high"])
@pytest.mark.parametrize("p", BERNOULLI_P, ids=repr)
def test_bernoulli_float64_p_matches_jax_without_warning(p, mode):
  jax = oracle()
  shape = (2, 4) if np.ndim(p) == 0 else (3, 2)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    got = jaxlite.random.bernoulli(jaxlite.random.key(0), p, shape, mode=mode)
  want = jax.random.bernoulli(jax.random.key(0), p, shape, mode=mode)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# Lowered.compile(compiler_options=...): equinox's filter_jit always passes the keyword.
COMPILE_OPTIONS = [(None, None), ({}, None), ({"xla_embed_ir_in_executable": True}, None),
                   ({"an option that does not make sense": "bad value"}, "No such compile option")]


@pytest.mark.parametrize("options,error", COMPILE_OPTIONS, ids=repr)
def test_lowered_compile_compiler_options(options, error):
  jax = oracle()
  for m in (jaxlite, jax):
    lowered = m.jit(lambda x: 2 * x + 1).lower(np.float32(3))
    if error is None:
      assert float(lowered.compile(compiler_options=options)(np.float32(3))) == 7.0
    else:
      with pytest.raises(m.errors.JaxRuntimeError, match=error):
        lowered.compile(compiler_options=options)


# lax.padtype_to_pads returns a list (equinox's Conv does `[(0, 0)] + padding`).
PADTYPE_CASES = [((5,), (3,), (1,), "SAME"), ((5, 6), (3, 2), (2, 2), "VALID"),
                 ((7, 4), (4, 3), (3, 1), "SAME_LOWER"), ((8,), (2,), (2,), "same")]


@pytest.mark.parametrize("args", PADTYPE_CASES, ids=repr)
def test_padtype_to_pads_list_matches_jax(args):
  jax = oracle()
  got, want = lax.padtype_to_pads(*args), jax.lax.padtype_to_pads(*args)
  assert type(got) is list and [tuple(p) for p in got] == [tuple(p) for p in want]


class _OddName:
  """A callable whose `__name__` is not a string (equinox Modules answer a sentinel)."""
  __name__ = property(lambda self: object())

  def __call__(self, x):
    return x * 3


def test_vmap_of_callable_with_non_string_name():
  jax = oracle()
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  got = jaxlite.vmap(_OddName())(x)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.vmap(_OddName())(x)))
  np.testing.assert_array_equal(np.asarray(got), x * 3)


# reduce_window recognizes a monoid by the init's own dtype (equinox's MaxPool: -inf on ints).
REDUCE_WINDOW_CASES = [
  ("int max -inf", np.arange(12, dtype=np.int32).reshape(3, 4), -np.inf, "max"),
  ("int min inf", np.arange(12, dtype=np.int32).reshape(3, 4), np.inf, "min"),
  ("float max -inf", np.arange(12, dtype=np.float32).reshape(3, 4), -np.inf, "max"),
  ("int add 0", np.arange(12, dtype=np.int32).reshape(3, 4), 0, "add"),
]


@pytest.mark.parametrize("name,x,init,op", REDUCE_WINDOW_CASES,
                         ids=[c[0] for c in REDUCE_WINDOW_CASES])
def test_reduce_window_monoid_by_init_dtype(name, x, init, op):
  jax = oracle()

  def run(m):
    f = lambda v: m.lax.reduce_window(v, init, getattr(m.lax, op), (2, 2), (1, 1), "VALID")
    return f(x), re.search(r"reduce_window\w*", str(m.make_jaxpr(f)(x))).group(0)

  with warnings.catch_warnings():
    warnings.simplefilter("error")
    (got, got_prim), (want, want_prim) = run(jaxlite), run(jax)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert np.asarray(got).dtype == np.asarray(want).dtype and got_prim == want_prim


def test_dtypes_bfloat16_is_the_scalar_type():
  jax = oracle()
  import jaxlite.dtypes
  got, want = jaxlite.dtypes.bfloat16, jax.dtypes.bfloat16
  assert got is want  # both ml_dtypes.bfloat16, the scalar type
  assert float(got(1.5)) == 1.5 and np.dtype(got).name == "bfloat16"


def _aot_cases(m):
  """(name, thunk): a compiled jit called with its dynamic arguments only (equinox's AOT)."""
  jnp = m.numpy
  f = lambda x, s, k=1: x * s + k  # noqa: E731
  x = jnp.ones(2)
  return [
    ("static argnum", lambda: m.jit(f, static_argnums=1).lower(x, 3).compile()(x)),
    ("static argname", lambda: m.jit(f, static_argnames="k").lower(x, 3., k=5).compile()(x, 3.)),
    ("two statics", lambda: m.jit(f, static_argnums=(0, 2)).lower(2, x, 7).compile()(x)),
    ("negative argnum", lambda: m.jit(f, static_argnums=-1).lower(x, 2., 4).compile()(x, 2.)),
    ("no statics", lambda: m.jit(f).lower(x, 2.).compile()(x, 2.)),
  ]


@pytest.mark.parametrize("i", range(5))
def test_compiled_called_with_dynamic_args_only(i):
  jax = oracle()
  name, got = _aot_cases(jaxlite)[i]
  np.testing.assert_array_equal(np.asarray(got()), np.asarray(_aot_cases(jax)[i][1]()),
                                err_msg=name)


def test_compiled_rejects_static_args_again():
  compiled = jaxlite.jit(lambda x, s: x * s, static_argnums=1).lower(np.ones(2), 3).compile()
  with pytest.raises(TypeError, match="does not match the input pytree"):
    compiled(np.ones(2), 3)


@pytest.mark.parametrize("arg,want", [("int32", np.int32), (np.float32, np.float32),
                                      (np.dtype("int8"), np.int8), (float, np.float32),
                                      (np.ones(2, np.float32), np.float32), (2, np.int32)])
def test_lax_dtype_of_dtype_likes(arg, want):
  # lax.dtype takes values and dtype-likes alike (flax calls it on scalar types)
  assert lax.dtype(arg) == np.dtype(want)


def test_lax_dtype_truncates_requested_float64_with_a_warning():
  with pytest.warns(UserWarning, match="truncated to dtype float32"):
    assert lax.dtype(np.float64) == np.float32


def test_signature_of_a_jitted_function_without_following_wrappers():
  # chex's fake_pmap asks inspect.signature(fn, follow_wrapped=False) of a jit wrapper
  import inspect

  def f(x, y=2):
    return x
  assert str(inspect.signature(jaxlite.jit(f), follow_wrapped=False)) == "(x, y=2)"

  class A:
    @jaxlite.jit
    def m(self, x):
      return x
  assert str(inspect.signature(A().m)) == "(x)"


# (comparison, first keys, second keys) on PRNG key arrays: flax.nnx's rngs tests and chex's
# tree asserts compare keys with these (JAX compares keys by equality).
KEY_COMPARE_CASES = [
    ("array_equal", lambda r: r.key(0), lambda r: r.key(1)),
    ("array_equal", lambda r: r.key(0), lambda r: r.key(0)),
    ("array_equal", lambda r: r.split(r.key(0), 3), lambda r: r.key(0)),
    ("allclose", lambda r: r.split(r.key(0), 3), lambda r: r.split(r.key(0), 3)),
    ("allclose", lambda r: r.key(0), lambda r: r.key(2)),
    ("isclose", lambda r: r.split(r.key(0), 3), lambda r: r.split(r.key(0), 3)[1]),
]


@pytest.mark.parametrize("fun,a,b", KEY_COMPARE_CASES)
def test_key_array_comparisons_match_jax(fun, a, b):
  jax = oracle()
  got = getattr(jaxlite.numpy, fun)(a(jaxlite.random), b(jaxlite.random))
  jitted = jaxlite.jit(getattr(jaxlite.numpy, fun))(a(jaxlite.random), b(jaxlite.random))
  want = getattr(jax.numpy, fun)(a(jax.random), b(jax.random))
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  np.testing.assert_array_equal(np.asarray(jitted), np.asarray(want))


def test_key_array_compared_with_numbers_raises():
  with pytest.raises(TypeError, match="isclose: a PRNG key array can only be compared"):
    jaxlite.numpy.isclose(jaxlite.random.key(0), 1.0)


@pytest.mark.parametrize("shape", [(3,), (2, 2), ()])
def test_broadcast_to_of_a_key_array_matches_jax(shape):
  jax = oracle()  # flax.nnx's RngStream.broadcast replicates a key this way
  got = jaxlite.numpy.broadcast_to(jaxlite.random.key(7), shape)
  want = jax.numpy.broadcast_to(jax.random.key(7), shape)
  assert got.shape == want.shape and got.dtype.name == want.dtype.name
  np.testing.assert_array_equal(np.asarray(jaxlite.random.key_data(got)),
                                np.asarray(jax.random.key_data(want)))


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "vjp", "jvp"])
@pytest.mark.parametrize("under_jit", [False, True])
def test_aux_nodes_are_rebuilt_at_the_callers_trace(transform, under_jit):
  # flax.nnx Variables returned as aux record the trace they are rebuilt under; JAX rebuilds aux
  # outside the differentiation trace, so the caller can update them.
  def run(jx):
    gots = importlib.import_module(jx.__name__ + ".extend.core").get_opaque_trace_state
    made = []

    class Obj:
      def __init__(self, v):
        self.v, self.state = v, gots(convention="nnx")
        made.append(self)

    jx.tree_util.register_pytree_node(Obj, lambda o: ((o.v,), None), lambda _, c: Obj(c[0]))
    f = lambda x: (x * 2.0, Obj(x))

    def outer(x):
      here = gots(convention="nnx")
      if transform == "grad":
        aux = jx.grad(f, has_aux=True)(x)[1]
      elif transform == "value_and_grad":
        aux = jx.value_and_grad(f, has_aux=True)(x)[0][1]
      elif transform == "vjp":
        aux = jx.vjp(f, x, has_aux=True)[2]
      else:
        aux = jx.jvp(f, (x,), (1.0,), has_aux=True)[2]
      return aux.state == here, aux.v

    if under_jit:
      seen = []
      jx.jit(lambda x: seen.append(outer(x)[0]) or x)(1.0)
      return seen[0]
    return outer(1.0)[0]

  jax = oracle()
  assert run(jaxlite) == run(jax) == True  # noqa: E712


@pytest.mark.parametrize("types", [("Explicit", "Explicit"), ("Auto", "Auto"), ("Manual",),
                                   ("Explicit", "Auto"), ()])
def test_mesh_are_all_axes_match_jax(types):
  jax = oracle()
  names = tuple("xyz"[:len(types)])

  def flags(jx):
    axis_types = tuple(getattr(jx.sharding.AxisType, t) for t in types)
    mesh = jx.sharding.AbstractMesh((1,) * len(types), names, axis_types=axis_types)
    return (mesh.are_all_axes_explicit, mesh.are_all_axes_auto, mesh.are_all_axes_manual)

  assert flags(jaxlite) == flags(jax)


@pytest.mark.parametrize("under_jit", [False, True])
def test_scan_stacks_key_outputs_like_jax(under_jit):
  # flax.nnx's split Rngs inside nnx.scan/vmap stack PRNG keys as scan outputs.
  def run(jx):
    def body(c, _):
      k1, k2 = jx.random.split(c)
      return k1, k2

    f = lambda k: jx.lax.scan(body, k, None, length=3)
    carry, ys = (jx.jit(f) if under_jit else f)(jx.random.key(0))
    return ys.shape, np.asarray(jx.random.key_data(ys)), np.asarray(jx.random.key_data(carry))

  jax = oracle()
  got, want = run(jaxlite), run(jax)
  assert got[0] == want[0]
  np.testing.assert_array_equal(got[1], want[1])
  np.testing.assert_array_equal(got[2], want[2])


@pytest.mark.parametrize("op", ["add", "mul", "sub", "truediv", "matmul", "lt", "eq"])
def test_jax_array_objects_holding_tracers_enter_operators_under_grad(op):
  # flax Variables are such objects: `v1 + v2` is `v1.value.__add__(v2)` inside nnx.grad; JAX's
  # operators take `__jax_array__()` of the operand first.
  class Box:
    def __init__(self, v):
      self.v = v

    def __jax_array__(self):
      return self.v

  def run(jx):
    def f(x):
      a, b = x * jx.numpy.ones(2), Box(x * jx.numpy.arange(1.0, 3.0))
      out = getattr(type(a), f"__{op}__")(a, b)
      return jx.numpy.sum(out * x) if op in ("lt", "eq") else jx.numpy.sum(out)
    return float(jx.grad(f)(1.5)), float(jx.jit(jx.grad(f))(1.5))

  jax = oracle()
  assert run(jaxlite) == run(jax)


def test_pmap_returns_key_arrays_like_jax():
  # flax.nnx's pmap tests split Rngs per device; the per-device keys come back as one key array.
  def run(jx):
    keys = jx.random.split(jx.random.key(0), 1)
    out = jx.pmap(lambda k: jx.random.split(k)[0])(keys)
    return out.shape, str(out.dtype), np.asarray(jx.random.key_data(out))

  jax = oracle()
  got, want = run(jaxlite), run(jax)
  assert got[:2] == want[:2]
  np.testing.assert_array_equal(got[2], want[2])


# (operand, update) for `x.at[...]` / `x.at[()]` under jit: a scatter with no index dims, which
# flax.nnx's `variable[...] = v` inside nnx.jit and nnx.cond is.
WHOLE_SCATTER_CASES = [
    ("set", np.int32(1), 2), ("add", np.int32(1), 5), ("multiply", np.float32(1.5), 3.0),
    ("set", np.arange(3.0, dtype=np.float32), 7.0), ("add", np.arange(3.0, dtype=np.float32),
                                                     np.ones(3, np.float32)),
]


@pytest.mark.parametrize("method,x,u", WHOLE_SCATTER_CASES)
def test_scatter_of_the_whole_operand_under_jit_matches_jax(method, x, u):
  jax = oracle()

  def run(jx):
    f = lambda x: getattr(jx.numpy.asarray(x).at[...], method)(u)
    return np.asarray(jx.jit(f)(x)), np.asarray(f(x))

  got, want = run(jaxlite), run(jax)
  np.testing.assert_array_equal(got[0], want[0])
  np.testing.assert_array_equal(got[1], want[1])


def _constrain_on_abstract_mesh(jx, mode, in_mesh, make=None):
  """nnx's eager variable sharding: a NamedSharding built on `get_abstract_mesh()`."""
  mesh = jx.make_mesh((1,), ("a",), axis_types=(jx.sharding.AxisType.Auto,))
  amesh = mesh.abstract_mesh
  s = jx.sharding.NamedSharding(amesh, jx.sharding.PartitionSpec("a"))
  f = lambda v: jx.lax.with_sharding_constraint(v, s)
  if mode == "vmap":  # the batcher constrains the unbatched value eagerly
    f = jx.vmap(f, in_axes=1, out_axes=1)
  make = make or (lambda: jx.numpy.arange(6.0).reshape(2, 3))
  if not in_mesh:
    return f(make())
  with jx.set_mesh(mesh):
    return f(make())


@pytest.mark.parametrize("mode", ["eager", "vmap"])
@pytest.mark.parametrize("numpy_input", [False, True])
def test_eager_constraint_on_abstract_mesh_uses_the_context_mesh(mode, numpy_input):
  jax = oracle()
  make = (lambda: np.arange(6.0, dtype=np.float32).reshape(2, 3)) if numpy_input else None
  got = _constrain_on_abstract_mesh(jaxlite, mode, True, make)
  want = _constrain_on_abstract_mesh(jax, mode, True, make)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert type(got.sharding.mesh).__name__ == type(want.sharding.mesh).__name__ == "Mesh"
  assert got.sharding.mesh.shape_tuple == want.sharding.mesh.shape_tuple == (("a", 1),)


def test_eager_constraint_on_abstract_mesh_without_a_mesh_raises_like_jax():
  jax = oracle()
  with pytest.raises(TypeError, match="NamedSharding"):
    _constrain_on_abstract_mesh(jax, "eager", False)
  with pytest.raises(TypeError, match="with_sharding_constraint.*NamedSharding"):
    _constrain_on_abstract_mesh(jaxlite, "eager", False)


class _Wrapped:
  """Like an nnx Variable: not an array, but `__jax_array__` gives its value (maybe a tracer)."""

  def __init__(self, v):
    self.v = v

  def __jax_array__(self):
    return self.v


_REGISTERED = {}


@pytest.mark.parametrize("fun", ["sin", "exp", "negative", "add", "maximum"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_jnp_unwraps_jax_array_objects_before_tracing_like_jax(fun, dtype):
  jax = oracle()

  for jx in (jax, jaxlite):  # JAX unwraps only pytree-registered objects, as nnx Variables are
    if _Wrapped not in _REGISTERED.setdefault(jx.__name__, set()):
      jx.tree_util.register_pytree_node(_Wrapped, lambda w: ((w.v,), None),
                                        lambda _, c: _Wrapped(c[0]))
      _REGISTERED[jx.__name__].add(_Wrapped)

  def make(jx):
    f = getattr(jx.numpy, fun)
    unary = fun in ("sin", "exp", "negative")
    return lambda v: f(_Wrapped(v)) if unary else f(_Wrapped(v), _Wrapped(v))
  x = np.arange(3, dtype=dtype)
  got = jaxlite.make_jaxpr(make(jaxlite))(x)
  want = jax.make_jaxpr(make(jax))(x)
  assert not got.consts  # the wrapper was not captured as a constant
  assert str(got) == str(want)
  np.testing.assert_allclose(np.asarray(jaxlite.jit(make(jaxlite))(x)),
                             np.asarray(jax.jit(make(jax))(x)), rtol=1e-6)


@pytest.mark.parametrize("fun", ["sin", "cos", "tan"])
@pytest.mark.parametrize("jit", [False, True])
def test_trig_of_infinity_is_nan_without_numpy_warnings(fun, jit):
  jax = oracle()
  x = np.array([np.inf, -np.inf, 1.0], np.float32)
  want = getattr(jax.numpy, fun)(x)
  f = getattr(jaxlite.numpy, fun)
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # flax's pytest setup turns warnings into errors
    got = (jaxlite.jit(f) if jit else f)(x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


VMAP_OUT_AXES_CASES = [
    (lambda x: {"a": x, "b": [x * 0, x]}, {"a": 0, "b": [None, None]}),
    (lambda x: (x, x), None),
    (lambda x: x, None),
    (lambda x: (1.0, x), (None, None)),
]


@pytest.mark.parametrize("i", range(len(VMAP_OUT_AXES_CASES)))
def test_vmap_out_axes_none_error_names_the_leaf_like_jax(i):
  jax = oracle()
  f, out_axes = VMAP_OUT_AXES_CASES[i]
  msgs = []
  for jx in (jax, jaxlite):
    with pytest.raises(ValueError) as e:
      jx.vmap(f, out_axes=out_axes)(np.ones(3, np.float32))
    msgs.append(str(e.value).split("\n")[0])
  assert msgs[0] == msgs[1]


@pytest.mark.parametrize("distribution", ["truncated_normal", "uniform", "normal"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("mode", ["fan_in", "fan_avg"])
def test_variance_scaling_complex_draws_match_jax(distribution, dtype, mode):
  jax = oracle()  # flax's linen Dense with complex params uses the truncated-normal disk
  got = jaxlite.nn.initializers.variance_scaling(2.0, mode, distribution)(
      jaxlite.random.key(3), (4, 3), dtype)
  want = jax.nn.initializers.variance_scaling(2.0, mode, distribution)(
      jax.random.key(3), (4, 3), dtype)
  assert got.dtype == want.dtype
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-7)


def _custom_fns(jx):
  """A custom_jvp and a custom_vjp whose nondiff (and diff) arguments have defaults."""
  @functools.partial(jx.custom_jvp, nondiff_argnums=(1, 2))
  def f(x, p=2.0, q=None):
    return x * p

  @f.defjvp
  def f_jvp(p, q, primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x, p, q), t * p * 10 + (0 if q is None else q)

  @functools.partial(jx.custom_vjp, nondiff_argnums=(1,))
  def g(x, p=3.0, y=1.0):
    return x * p * y
  g.defvjp(lambda x, p, y: (g(x, p, y), (x, y)),
           lambda p, r, ct: (ct * p * r[1] * 10, ct * r[0]))
  return f, g


CUSTOM_DEFAULT_CASES = [
    lambda jx, f, g, x: jx.grad(f)(x),
    lambda jx, f, g, x: jx.jit(jx.grad(f))(x),
    lambda jx, f, g, x: jx.grad(lambda v: f(v, 3.0))(x),
    lambda jx, f, g, x: jx.grad(g)(x),
    lambda jx, f, g, x: jx.grad(lambda v: g(v, 2.0))(x),
    lambda jx, f, g, x: jx.grad(g)(x, 2.0, 5.0),
]


@pytest.mark.parametrize("i", range(len(CUSTOM_DEFAULT_CASES)))
def test_custom_rules_get_omitted_default_arguments_like_jax(i):
  jax = oracle()  # flax's fp8 dot_general_with_precision leaves its nondiff args default
  case, x = CUSTOM_DEFAULT_CASES[i], np.float32(1.5)
  got = case(jaxlite, *_custom_fns(jaxlite), x)
  want = case(jax, *_custom_fns(jax), x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacfwd", "jacrev", "hessian",
                                       "vmap", "checkpoint"])
def test_transformed_functions_expose_wrapped_like_jax(transform):
  jax = oracle()  # equinox warns on a transformed Module attribute by following __wrapped__

  def fun(x):
    return x * x
  for jx in (jax, jaxlite):
    g = getattr(jx, transform)(fun)
    while hasattr(g, "__wrapped__") and g is not fun:
      g = g.__wrapped__
    assert g is fun, (jx.__name__, transform)
  g = getattr(jaxlite, transform)(fun)
  assert g.__name__ == getattr(jax, transform)(fun).__name__ == "fun"


# jnp.dtype of ml_dtypes' names (optax numerics_test's safe_increment over "bfloat16").
DTYPE_NAMES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4", "float16", "int8"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_jnp_dtype_of_ml_dtypes_names(name):
  import ml_dtypes
  got = jaxlite.numpy.dtype(name)
  assert got == np.dtype(getattr(ml_dtypes, name, name)) and got.name == name
  jax = oracle()
  assert got == jax.numpy.dtype(name)


def test_jnp_dtype_unknown_name_is_numpys_type_error():
  with pytest.raises(TypeError, match="data type 'bfloat17' not understood"):
    jaxlite.numpy.dtype("bfloat17")


# vmap over an empty batch where operand and index are both batched (optax's hungarian_algorithm
# under vmap with k=0: a dynamic_slice inside a while inside a scan).
EMPTY_BATCH_CASES = [
    ("dynamic_slice", lambda L, x, i: L.lax.dynamic_slice(x, (i, 0), (1, 2))),
    ("index", lambda L, x, i: x[i]),
    ("in_while", lambda L, x, i: L.lax.while_loop(
        lambda c: c[1] < 2, lambda c: (c[0] + L.lax.dynamic_slice(x, (i, 0), (1, 3)), c[1] + 1),
        (L.numpy.zeros((1, 3)), 0))[0]),
]


@pytest.mark.parametrize("name,fn", EMPTY_BATCH_CASES, ids=[c[0] for c in EMPTY_BATCH_CASES])
def test_vmap_over_empty_batch_with_batched_operand_and_index(name, fn):
  x, i = np.zeros((0, 4, 3), np.float32), np.zeros((0,), np.int32)
  got = jaxlite.jit(jaxlite.vmap(functools.partial(fn, jaxlite)))(x, i)
  jax = oracle()
  want = jax.jit(jax.vmap(functools.partial(fn, jax)))(x, i)
  assert got.shape == want.shape and got.dtype == want.dtype and got.shape[0] == 0


# jnp.iscomplexobj of dtype-carrying objects (optax alias_test skips complex cases through
# `jnp.iscomplexobj(jnp.complex64)`).
ISCOMPLEXOBJ_CASES = [
    ("jnp_complex64", lambda L: L.numpy.complex64, True),
    ("jnp_float32", lambda L: L.numpy.float32, False),
    ("shape_dtype_complex", lambda L: L.ShapeDtypeStruct((2,), np.complex64), True),
    ("shape_dtype_float", lambda L: L.ShapeDtypeStruct((2,), np.float32), False),
    ("complex_array", lambda L: L.numpy.zeros(2, np.complex64), True),
    ("python_complex", lambda L: 1j, True),
    ("float_list", lambda L: [1.0, 2.0], False),
]


@pytest.mark.parametrize("name,make,want", ISCOMPLEXOBJ_CASES,
                         ids=[c[0] for c in ISCOMPLEXOBJ_CASES])
def test_iscomplexobj_of_dtype_like_objects(name, make, want):
  assert jaxlite.numpy.iscomplexobj(make(jaxlite)) is want
  assert jaxlite.numpy.isrealobj(make(jaxlite)) is (not want)
  jax = oracle()
  assert jax.numpy.iscomplexobj(make(jax)) is want


# Key entries built with keywords, as optax's state_utils tests write them.
KEY_ENTRY_KEYWORDS = [
    ("DictKey", {"key": "learning_rate"}, "['learning_rate']"),
    ("SequenceKey", {"idx": 1}, "[1]"),
    ("GetAttrKey", {"name": "mu"}, ".mu"),
    ("FlattenedIndexKey", {"key": 3}, "[<flat index 3>]"),
]


@pytest.mark.parametrize("cls,kwargs,text", KEY_ENTRY_KEYWORDS,
                         ids=[c[0] for c in KEY_ENTRY_KEYWORDS])
def test_key_entries_take_their_field_as_keyword(cls, kwargs, text):
  tu = jaxlite.tree_util
  k = getattr(tu, cls)(**kwargs)
  assert str(k) == text and k == getattr(tu, cls)(*kwargs.values())
  jax = oracle()
  assert str(getattr(jax.tree_util, cls)(**kwargs)) == text


# A Python bool predicate (optax's join_schedules: `jnp.where(step < boundary, ...)` with an int
# step) reaches select_n's eager impl as a bool.
WHERE_PY_BOOL_CASES = [
    ("weak_scalars", lambda L: L.numpy.where(True, 1.0, 2.0)),
    ("typed_scalars", lambda L: L.numpy.where(False, L.numpy.float32(1.0), L.numpy.float32(2.0))),
    ("array_case", lambda L: L.numpy.where(0 < 3, L.numpy.asarray([1.0, 3.0]), 2.0)),
    ("select_n", lambda L: L.lax.select_n(True, L.numpy.float32(1.0), L.numpy.float32(2.0))),
]


@pytest.mark.parametrize("name,fn", WHERE_PY_BOOL_CASES, ids=[c[0] for c in WHERE_PY_BOOL_CASES])
def test_where_with_a_python_bool_predicate(name, fn):
  got = fn(jaxlite)
  jax = oracle()
  want = fn(jax)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  assert got.dtype == want.dtype and got.weak_type == want.weak_type


# jnp.issubdtype of ml_dtypes' names (optax schedule_free's explicit-dtype tests).
ISSUBDTYPE_NAME_CASES = [("bfloat16", "complexfloating", False), ("bfloat16", "floating", True),
                         ("bfloat16", "inexact", True), ("float8_e4m3fn", "bfloat16", False),
                         ("bfloat16", "bfloat16", True), ("float32", "bfloat16", False)]


@pytest.mark.parametrize("a,b,want", ISSUBDTYPE_NAME_CASES)
def test_issubdtype_of_ml_dtypes_names(a, b, want):
  lite_b = getattr(jaxlite.numpy, b) if b in ("complexfloating", "floating", "inexact") else b
  assert jaxlite.numpy.issubdtype(a, lite_b) is want
  jax = oracle()
  jax_b = getattr(jax.numpy, b) if b in ("complexfloating", "floating", "inexact") else b
  assert jax.numpy.issubdtype(a, jax_b) is want


# jnp.reshape / ravel / Array.reshape with order='F' (optax microbatching: 36 tests).
RESHAPE_F_SHAPES = [(6, 4), (4, -1), 24, (2, 12), (2, 3, 4)]


@pytest.mark.parametrize("shape", RESHAPE_F_SHAPES, ids=str)
def test_reshape_fortran_order(shape):
  x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
  want = np.reshape(x, shape, order="F")
  np.testing.assert_array_equal(jaxlite.numpy.reshape(x, shape, order="F"), want)
  np.testing.assert_array_equal(jaxlite.numpy.asarray(x).reshape(shape, order="F"), want)
  jax = oracle()
  f = functools.partial(jax.numpy.reshape, shape=shape, order="F")
  assert str(jaxlite.make_jaxpr(functools.partial(
      jaxlite.numpy.reshape, shape=shape, order="F"))(x)) == str(jax.make_jaxpr(f)(x))


def test_ravel_fortran_order_and_bad_orders():
  x = np.arange(6).reshape(2, 3)
  np.testing.assert_array_equal(jaxlite.numpy.ravel(x, order="F"), x.ravel(order="F"))
  with pytest.raises(NotImplementedError, match="order=A is not implemented"):
    jaxlite.numpy.reshape(x, 6, order="A")
  with pytest.raises(ValueError, match="Unexpected value for 'order' argument: K"):
    jaxlite.numpy.reshape(x, 6, order="K")


# logsumexp with zero weights b: JAX leaves those terms out and stops the shift's gradient, so
# second derivatives stay finite (optax sigmoid_focal_loss's Hessian at extreme logits).
def _focal_like(L, x):
  jnp = L.numpy
  labels = jnp.array([0.9, 0.1, 0.8, 0.2, 1.0, 0.0])
  lp, lq = L.nn.log_sigmoid(x), L.nn.log_sigmoid(-x)
  lse = L.scipy.special.logsumexp(jnp.stack([lp, lq], -1), axis=-1,
                                  b=jnp.stack([1 - labels, labels], -1))
  return jnp.sum(jnp.exp(0.5 * lse) * x)


def test_logsumexp_zero_weights_have_finite_hessians():
  x = np.array([100.0, -100.0, 75.0, -75.0, 50.0, -50.0], np.float32)
  got = np.asarray(jaxlite.hessian(functools.partial(_focal_like, jaxlite))(x))
  assert np.isfinite(got).all()
  np.testing.assert_allclose(jaxlite.scipy.special.logsumexp(
      np.array([1.0, np.inf]), b=np.array([1.0, 0.0])), 1.0)
  jax = oracle()
  want = np.asarray(jax.hessian(functools.partial(_focal_like, jax))(x))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30)


# --- user-defined extended dtypes with `_rules` (flax's fp8 meta dtype), issue 18 --------------

def _max_meta_dtype(jx):
  """An extended dtype built like flax's `fp8_meta_dtype_wrapper` against `jx` (jaxlite or JAX):
  stored as float32, cotangents start at -inf and accumulate by max."""
  import dataclasses
  core = importlib.import_module(jx.__name__ + "._src.core")
  dtypes = importlib.import_module(jx.__name__ + "._src.dtypes")
  f32 = np.dtype("float32")

  class Rules:
    @staticmethod
    def physical_element_aval(dt):
      return core.ShapedArray((), dt.float_dtype)

    @staticmethod
    def convert_from(dt, other):
      return dt.float_dtype == other

    @staticmethod
    def convert_to(other, dt):
      return dt.float_dtype == other

    @staticmethod
    def add(dt, x, y):
      to_f = functools.partial(jx.lax.convert_element_type, new_dtype=dt.float_dtype)
      return jx.lax.convert_element_type(jx.lax.max(to_f(x), to_f(y)), dt)

    @staticmethod
    def zero(dt):
      return jx.lax.convert_element_type(np.array(-np.inf, dt.float_dtype), dt)

    @staticmethod
    def tangent_dtype(dt):
      return dt

    @staticmethod
    def global_sharded_result_handler(aval, out_sharding, committed):
      # JAX makes eager arrays of the dtype through it, as flax's rules do; jaxlite never calls it
      pxla = importlib.import_module(jx.__name__ + "._src.interpreters.pxla")
      earray = importlib.import_module(jx.__name__ + "._src.earray")
      handler = pxla.global_result_handlers[core.ShapedArray](
          core.physical_aval(aval), out_sharding, committed)
      return lambda bufs: earray.EArray(aval, handler(bufs))

  class max_meta(dtypes.extended):
    pass

  @dataclasses.dataclass(frozen=True)
  class MaxMeta(dtypes.ExtendedDType):
    float_dtype: object
    _rules: type = Rules
    type: type = max_meta
    name = property(lambda self: "max_meta32")

  return MaxMeta(f32)


def _max_meta_grad(jx):
  """grad of a scan whose body taps a max-meta history through a custom_vjp: the history's
  cotangents from the three iterations must meet by max (JAX's `_rules.add`), not by sum."""
  dt = _max_meta_dtype(jx)
  f32 = np.float32

  @jx.custom_vjp
  def tap(x, h):
    return x

  def tap_fwd(x, h):
    return x, h

  def tap_bwd(h, g):
    amax = jx.lax.max(jx.lax.convert_element_type(h, f32), jx.numpy.max(jx.numpy.abs(g)))
    return g, jx.lax.convert_element_type(amax, dt)

  tap.defvjp(tap_fwd, tap_bwd)

  def outer(x, h):
    hm = jx.lax.convert_element_type(h, dt)
    c, _ = jx.lax.scan(lambda c, _: (tap(c, hm) * 2.0, None), x, None, length=3)
    return c.sum()

  return jx.jit(jx.grad(outer, (0, 1)))(np.array([0.5, -1.5], f32), np.array(0.25, f32))


def test_user_extended_dtype_cotangents_accumulate_by_its_rules_like_jax():
  jax = oracle()
  got, want = _max_meta_grad(jaxlite), _max_meta_grad(jax)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  assert float(got[1]) == 8.0  # max of |g| over 2, 4, 8 (a sum would give 14)


def test_user_extended_dtype_casts_follow_its_rules():
  dt = _max_meta_dtype(jaxlite)
  f = jaxlite.jit(lambda x: lax.convert_element_type(lax.convert_element_type(x, dt),
                                                     np.float32) * 2)
  np.testing.assert_array_equal(np.asarray(f(np.arange(3, dtype=np.float32))), [0., 2., 4.])
  jpr = jaxlite.make_jaxpr(lambda x: lax.convert_element_type(x, dt))(np.float32(1))
  assert jpr.out_avals[0].dtype == dt
  with pytest.raises(ValueError, match="Cannot convert_element_type"):
    jaxlite.make_jaxpr(lambda x: lax.convert_element_type(x, dt))(np.int32(1))


def _bwd_of_zero_cotangent(jx):
  """A custom_vjp whose output does not reach the loss: JAX still runs its bwd (with zeros),
  and what bwd returns for the inputs counts (flax's fp8 `in_q` passes new scales out so)."""
  @jx.custom_vjp
  def f(x, s):
    return x * 3.0

  f.defvjp(lambda x, s: (x * 3.0, s), lambda s, g: (g * 3.0, s + 1.0))

  @jx.custom_vjp
  def use(x, y):  # y reaches the output, but its bwd gives y no cotangent
    return x + y

  use.defvjp(lambda x, y: (x + y, None), lambda _, g: (g, None))

  def loss(x, s):
    return use(x, f(x, s)).sum()

  return jx.jit(jx.grad(loss, (0, 1)))(np.ones(2, np.float32), np.float32(5.0))


def test_custom_vjp_bwd_runs_on_zero_cotangents_like_jax():
  jax = oracle()
  got, want = _bwd_of_zero_cotangent(jaxlite), _bwd_of_zero_cotangent(jax)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  assert float(got[1]) == 6.0


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "complex64", "int32", "bool",
                                  "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                  "float8_e5m2fnuz", "float4_e2m1fn", "float8_e8m0fnu"])
def test_supports_inf_matches_jax(name):
  oracle()  # skips without real JAX
  import ml_dtypes
  dtype = np.dtype(getattr(ml_dtypes, name, None) or name)
  from jax._src import dtypes as jax_dtypes
  from jaxlite._src.base import dtypes as lite_dtypes
  assert lite_dtypes.supports_inf(dtype) == jax_dtypes.supports_inf(dtype)


# --- flax.nnx: a hijax Variable closed over by jax.jit, issue 18 ---------------------------------

_NNX_CLOSED_OVER = """
import jax, jax.numpy as jnp
from flax import nnx
with nnx.var_defaults(hijax=True):
  v = nnx.Variable(jnp.arange(3.0))
  w = nnx.Variable(jnp.ones(()))

@jax.jit
def f(x):
  v[...] = v[...] * 2 + x   # closed over (not an argument) and mutated inside
  return v[...] + w[...]    # w only read

rows = []
for i in range(3):
  out = f(jnp.full(3, float(i)))
  rows.append((out.tolist(), type(v[...]).__name__, v[...].tolist(), w[...].tolist()))
try:
  jax.jit(lambda: v.__setitem__(..., v[...] / 0 + jnp.ones((2,))))()
except Exception as e:
  rows.append(type(e).__name__)
rows.append(v[...].tolist())
print(repr(rows))
"""


def test_nnx_hijax_variable_closed_over_by_jit_matches_jax(tmp_path):
  """The Variable gets the jit's results back (not its tracers), and each call reads its current
  value, as JAX's jit functionalizes it; a failed trace leaves it as it was."""
  import subprocess
  import sys
  oracle()
  pytest.importorskip("flax")
  script = tmp_path / "nnx_closed_over.py"
  script.write_text(_NNX_CLOSED_OVER)
  src = str(__import__("pathlib").Path(jaxlite.__file__).parents[1])
  env = {**__import__("os").environ, "PYTHONPATH": src, "JAX_PLATFORMS": "cpu"}
  outs = []
  for cmd in ([sys.executable, "-m", "jaxlite", str(script)], [sys.executable, str(script)]):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    outs.append(r.stdout.strip().splitlines()[-1])
  assert outs[0] == outs[1]
  assert "Tracer" not in outs[0]


def _max_meta_eager(jx):
  """The same max-accumulating dtype eagerly (no jit): grad through a scan, and the arrays of it
  that eager casts and jit outputs make."""
  dt = _max_meta_dtype(jx)
  f32 = np.float32

  @jx.custom_vjp
  def tap(x, h):
    return x

  tap.defvjp(lambda x, h: (x, h), lambda h, g: (g, jx.lax.convert_element_type(
      jx.lax.max(jx.lax.convert_element_type(h, f32), jx.numpy.max(jx.numpy.abs(g))), dt)))

  def outer(x, h):
    hm = jx.lax.convert_element_type(h, dt)
    c, _ = jx.lax.scan(lambda c, _: (tap(c, hm) * 2.0, None), x, None, length=3)
    return c.sum()

  grads = jx.grad(outer, (0, 1))(np.array([0.5, -1.5], f32), np.array([0.25, 9.0], f32))
  x = jx.lax.convert_element_type(np.arange(3, dtype=f32), dt)
  y = jx.jit(lambda v: jx.lax.convert_element_type(v, dt))(np.arange(3, dtype=f32))
  back = jx.lax.convert_element_type(y, f32)
  return grads, x, y, back, dt


def test_user_extended_dtype_eager_arrays_like_jax():
  jax = oracle()
  (g_lite, x_lite, y_lite, b_lite, dt_lite) = _max_meta_eager(jaxlite)
  (g_jax, x_jax, y_jax, b_jax, dt_jax) = _max_meta_eager(jax)
  for g, w in zip(g_lite, g_jax):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  np.testing.assert_array_equal(np.asarray(g_lite[1]), [8.0, 9.0])  # max, not sum
  for lite, ref, dt in ((x_lite, x_jax, dt_jax), (y_lite, y_jax, dt_jax)):
    assert lite.dtype == dt_lite and ref.dtype == dt and lite.shape == ref.shape == (3,)
  np.testing.assert_array_equal(np.asarray(b_lite), np.asarray(b_jax))
  assert b_lite.dtype == np.float32
  from jaxlite._src.compat import earray
  assert isinstance(x_lite, earray.EArray) and not isinstance(b_lite, earray.EArray)
  with pytest.raises(ValueError, match="Cannot convert_element_type"):
    lax.convert_element_type(np.arange(3, dtype=np.int32), dt_lite)
