"""No NumPy RuntimeWarning (invalid value, divide by zero, overflow) reaches a user where JAX
shows none (issue 33): eager dispatch, the `x + y` fast path, eager scatters and jitted kernels
(every tier) compute with NumPy's floating-point warnings off (`_src/base/fp_quiet.py`)."""
import warnings

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp

from conftest import configured, oracle

F32 = np.array([0., -1., np.nan, np.inf, -np.inf, 3e38, 1e-45, 2.0], np.float32)
I32 = np.array([0, -1, 2, 7, -2147483648], np.int32)

OPS = {
  "mul": lambda m, x: x * x, "add": lambda m, x: x + x, "add-big": lambda m, x: x + 3e38,
  "sub": lambda m, x: x - x, "div": lambda m, x: x / x, "div0": lambda m, x: x / 0,
  "rdiv": lambda m, x: 1 / x, "floordiv0": lambda m, x: x // 0, "mod0": lambda m, x: x % 0,
  "pow": lambda m, x: x ** 1000, "exp": lambda m, x: m.numpy.exp(x),
  "log": lambda m, x: m.numpy.log(x), "sqrt": lambda m, x: m.numpy.sqrt(x),
  "arcsin": lambda m, x: m.numpy.arcsin(x), "arctanh": lambda m, x: m.numpy.arctanh(x),
  "cast-int": lambda m, x: x.astype(m.numpy.int32), "cast-u8": lambda m, x: x.astype("uint8"),
  "cast-f16": lambda m, x: x.astype(m.numpy.float16), "sum": lambda m, x: m.numpy.sum(x),
  "prod": lambda m, x: m.numpy.prod(x), "var": lambda m, x: m.numpy.var(x),
  "cumprod": lambda m, x: m.numpy.cumprod(x), "norm": lambda m, x: m.numpy.linalg.norm(x),
  "logsumexp": lambda m, x: m.nn.logsumexp(x), "softmax": lambda m, x: m.nn.softmax(x),
  "gelu": lambda m, x: m.nn.gelu(x), "dot": lambda m, x: m.numpy.dot(x, x),
  "outer": lambda m, x: m.numpy.outer(x, x), "isclose": lambda m, x: m.numpy.isclose(x, x),
  "round": lambda m, x: m.numpy.round(x, 3), "at-add": lambda m, x: x.at[m.numpy.array(
      [0, 0])].add(3e38), "at-min-nan": lambda m, x: x.at[m.numpy.array([0, 0])].min(np.nan),
  "fmod0": lambda m, x: m.numpy.fmod(x, 0.), "lgamma": lambda m, x: m.lax.lgamma(x),
  "nanmean": lambda m, x: m.numpy.nanmean(x), "mean-empty": lambda m, x: m.numpy.mean(x[:0]),
  "grad-log": lambda m, x: m.vmap(m.grad(m.numpy.log))(x),
  "grad-div": lambda m, x: m.vmap(m.grad(lambda y: 1 / y))(x),
  "scan": lambda m, x: m.lax.scan(lambda c, r: (c * r * 1e30, c / r), x[0], x)[1],
}


def _warnings_of(fn):
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    # JAX's own FutureWarning (an int array updated with floats) is JAX's to show too
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
      out = fn()
      for leaf in jax.tree_util.tree_leaves(out):
        np.asarray(leaf)
    except (RuntimeWarning, FloatingPointError) as w:
      return f"{type(w).__name__}: {w}"
    except (TypeError, ValueError):  # a dtype the op refuses: raised as JAX does, no warning
      return None
  return None


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bfloat16"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_no_numpy_runtime_warning(op, dtype, mode):
  x = jnp.asarray((I32 if dtype == "int32" else F32).astype(
      jnp.bfloat16 if dtype == "bfloat16" else dtype))
  fn = (lambda: OPS[op](jax, x)) if mode == "eager" else (lambda: jax.jit(
      lambda v: OPS[op](jax, v))(x))
  assert _warnings_of(fn) is None


@pytest.mark.parametrize("op", ["mul", "div0", "log", "cast-int", "at-add", "gelu", "dot"])
def test_jax_shows_none_either(op):
  real = oracle()
  x = real.numpy.asarray(F32)
  assert _warnings_of(lambda: OPS[op](real, x)) is None
  assert _warnings_of(lambda: real.jit(lambda v: OPS[op](real, v))(x)) is None


@pytest.mark.parametrize("tier", [0, 1])
def test_every_tier_is_quiet(tier):
  with configured(jax_jaxlite_tier=tier):
    f = jax.jit(lambda v: (v * v - v, jnp.log(v), v / 0, (v * 1e30).astype(jnp.int32)))
    assert _warnings_of(lambda: f(jnp.asarray(F32))) is None


def test_users_own_numpy_keeps_its_warnings():
  jnp.log(jnp.asarray(F32))  # jaxlite's quiet state ends with its kernel
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    with pytest.raises(RuntimeWarning):
      np.log(np.float32(-1.0))


def test_donating_jit_reusing_buffers_is_quiet():
  # the donation path runs its own executable (one that writes into the donated buffer)
  f = jax.jit(lambda x: x * x, donate_argnums=0)
  x = jnp.asarray(np.array([0., 3e38], np.float32))
  assert _warnings_of(lambda: f(x)) is None
  np.testing.assert_array_equal(np.asarray(f(jnp.asarray(np.array([2., 3e38], np.float32)))),
                                np.array([4., np.inf], np.float32))
