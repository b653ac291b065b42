"""jit: one trace per abstract signature, static args, nested jit eqns, tracer errors."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import errors

from conftest import oracle


def _counting(fn):
  calls = []

  def f(*args, **kwargs):
    calls.append(1)
    return fn(*args, **kwargs)
  return f, calls


def test_cache_per_abstract_signature():
  f, calls = _counting(lambda x: x * 2 + 1)
  jf = jax.jit(f)
  x = jnp.ones(3)
  assert jf(x).tolist() == [3.0, 3.0, 3.0]
  jf(x + 1)
  assert len(calls) == 1  # same shape/dtype/weak type: no retrace
  jf(jnp.ones(4))
  assert len(calls) == 2
  jf(jnp.ones(3, jnp.int32))
  assert len(calls) == 3
  jf(1.0)
  jf(2.0)
  assert len(calls) == 4  # Python floats: one weak f32 trace
  jf(jnp.array(1.0))
  assert len(calls) == 4  # weak f32 array has the same signature as a Python float
  jf(jnp.float32(1.0))
  assert len(calls) == 5  # strong f32: weak type is part of the key


def test_static_argnums_and_names():
  f, calls = _counting(lambda x, n: x * n)
  jf = jax.jit(f, static_argnums=1)
  assert jf(jnp.ones(2), 3).tolist() == [3.0, 3.0]
  jf(jnp.ones(2), 3)
  assert len(calls) == 1
  jf(jnp.ones(2), 4)
  assert len(calls) == 2

  def g(x, *, mode):
    return x + 1 if mode == "add" else x - 1
  jg = jax.jit(g, static_argnames="mode")
  assert jg(jnp.zeros(2), mode="add").tolist() == [1.0, 1.0]
  assert jg(jnp.zeros(2), mode="sub").tolist() == [-1.0, -1.0]


def test_unhashable_static_arg():
  jf = jax.jit(lambda x, n: x, static_argnums=1)
  with pytest.raises(ValueError) as e:
    jf(1.0, [1])
  assert str(e.value) == (
      "Non-hashable static arguments are not supported. An error occurred while trying to hash "
      "an object of type <class 'list'>, [1]. The error was:\nTypeError: unhashable type: 'list'\n")
  # (JAX's message ends with that newline too)


def test_non_array_argument():
  with pytest.raises(TypeError, match=r"Error interpreting argument to .* as an abstract array. "
                                      r"The problematic value is of type <class 'str'> and was "
                                      r"passed to the function at path x\['a'\]"):
    jax.jit(lambda x: x)({"a": "hello"})


def test_pytree_arguments_and_outputs():
  @jax.jit
  def f(params, x):
    return {"y": params["w"] * x + params["b"], "n": (x, 2)}
  out = f({"w": jnp.ones(2), "b": jnp.zeros(2)}, jnp.array([1.0, 2.0]))
  assert out["y"].tolist() == [1.0, 2.0]
  assert out["n"][1].tolist() == 2 and out["n"][1].weak_type


def test_tracer_print_and_repr(capsys):
  @jax.jit
  def f(x):
    print(x)
    return x + 1
  f(jnp.ones(5, jnp.int32))
  f(1.0)
  assert capsys.readouterr().out == "JitTracer(int32[5])\nJitTracer(~float32[])\n"


def test_bool_conversion_error():
  @jax.jit
  def f(x):
    if x > 0:
      return x
    return -x
  with pytest.raises(errors.TracerBoolConversionError,
                     match=r"Attempted boolean conversion of traced array with shape bool\[\]"):
    f(1.0)


def test_concretization_errors():
  with pytest.raises(errors.ConcretizationTypeError,
                     match=r"Abstract tracer value encountered where concrete value is expected: "
                           r"traced array with shape int32\[\]"):
    jax.jit(lambda x: int(x))(1)
  with pytest.raises(errors.TracerIntegerConversionError,
                     match=r"The __index__\(\) method was called on traced array with shape "
                           r"int32\[\]"):
    jax.jit(lambda x: [1, 2][x])(1)
  with pytest.raises(errors.TracerArrayConversionError,
                     match=r"The numpy.ndarray conversion method __array__\(\) was called on "
                           r"traced array with shape float32\[2\]"):
    jax.jit(lambda x: np.asarray(x))(jnp.ones(2))


def test_leaked_tracer():
  leaked = []

  @jax.jit
  def f(x):
    leaked.append(x)
    return x
  f(1.0)
  with pytest.raises(errors.UnexpectedTracerError, match="Encountered an unexpected tracer"):
    jnp.sin(leaked[0])
  with pytest.raises(errors.UnexpectedTracerError):
    jax.jit(lambda y: y + leaked[0])(1.0)


def test_disable_jit():
  seen = []

  @jax.jit
  def f(x):
    seen.append(type(x).__name__)
    return x
  with jax.disable_jit():
    f(jnp.ones(2))
  assert seen == ["ArrayImpl"]


def test_nested_jit_and_closures_print_like_jax():
  def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
  x = jnp.ones(5)
  got = str(jax.make_jaxpr(jax.jit(selu))(x))
  assert "name=selu" in got and "name=_where" in got
  closure = str(jax.make_jaxpr(lambda x: jax.jit(lambda y: x + y)(2.0))(1.0))
  assert closure == (
      "{ lambda ; a:f32[]. let\n"
      "    b:f32[] = jit[\n"
      "      name=<lambda>\n"
      "      jaxpr={ lambda ; a:f32[] c:f32[]. let b:f32[] = add a c in (b,) }\n"
      "    ] a 2.0:f32[]\n"
      "  in (b,) }")


def test_constants_become_constvars():
  c = np.ones(3, np.float32)
  got = str(jax.make_jaxpr(lambda x: x + c)(jnp.ones(3)))
  assert got == "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }"


def test_jit_matches_eager_on_random_programs():
  rng = np.random.default_rng(0)
  x = jnp.array(rng.normal(size=(4, 5)).astype(np.float32))

  def f(x):
    y = jnp.sin(x) * 2.0 - jnp.exp(-x * x)
    return jnp.where(y > 0, y, y / 3) + jnp.maximum(x, 0.5)
  np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), np.asarray(f(x)), rtol=1e-6)


def test_aot_stages():
  lowered = jax.jit(lambda x: x * 2).lower(jnp.ones(2))
  assert "mul" in lowered.as_text()
  compiled = lowered.compile()
  assert compiled(jnp.ones(2)).tolist() == [2.0, 2.0]
  assert "np.multiply" in compiled.as_text()


def test_printed_jaxprs_match_real_jax():
  rjax = oracle()
  rjnp = rjax.numpy

  def make(np_mod):
    def selu(x, alpha=1.67, lambda_=1.05):
      return lambda_ * np_mod.where(x > 0, x, alpha * np_mod.exp(x) - alpha)
    return selu
  for f_of, args in [(make, (np.arange(5.0, dtype=np.float32),)),
                     (lambda m: (lambda x, y: m.sin(x) * y + 1), (np.ones(3, np.float32), 2.0)),
                     (lambda m: (lambda x: m.maximum(x, 0.1) / 3), (np.ones((2, 2), np.int32),))]:
    want = str(rjax.make_jaxpr(f_of(rjnp))(*args))
    assert str(jax.make_jaxpr(f_of(jnp))(*args)) == want
    want = str(rjax.make_jaxpr(rjax.jit(f_of(rjnp)))(*args))
    assert str(jax.make_jaxpr(jax.jit(f_of(jnp)))(*args)) == want


def test_explain_cache_misses(caplog):
  jax.config.update("jax_explain_cache_misses", True)
  try:
    def f(x, y):
      return x
    jf = jax.jit(f)
    with caplog.at_level("WARNING"):
      jf(1, 2.0)
      jf(jnp.int32(1), 2.0)
      jf(jnp.ones(3), 2.0)
    msgs = [r.getMessage() for r in caplog.records]
    assert "never seen function:\n    f id=" in msgs[0]
    assert msgs[1].endswith(
        "all previously seen cache keys differ. For the closest previous key:\n"
        "  different input types:\n"
        "  * at x, now i32[]{weak_type=False} and before i32[]{weak_type=True}"
        "https://docs.jax.dev/en/latest/type_promotion.html#weak-types")
    assert "  * at x, now f32[3]({}) and before i32[]({})" in msgs[2]
  finally:
    jax.config.update("jax_explain_cache_misses", False)
