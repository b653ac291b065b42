"""Fast paths for the scalars of loop bodies (a while loop over one PRNG key and one time, as
diffrax's Brownian tree walks): each must give exactly what the general path gives, bit for bit,
and the fast path must be the one taken."""
import math

import numpy as np
import pytest
from conftest import oracle, x64

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax
from jaxlite._src.compiler import numpy_codegen

RNG = np.random.default_rng(5)
pytestmark = pytest.mark.numpy_backend("the NumPy backend's kernels and generated code")


def _source(f, *args):
  return numpy_codegen.compile_jaxpr(jax.make_jaxpr(f)(*args)).__jaxlite_source__


def _bits(x):
  x = np.asarray(x)
  if x.dtype.kind == "c":  # both parts' bits
    x = np.atleast_1d(x).view(x.real.dtype)
  return x.view(f"u{x.dtype.itemsize}")


# --- erf, erfc, erf_inv in float64: small inputs element by element on Python floats ----------

def _special_inputs():
  specials = [0, -0.0, 1, -1, np.nan, np.inf, -np.inf, 1 + 2**-52, -1.5, 5e-324, -5e-324, 0.5,
              -0.5, np.nextafter(0.5, 1), np.nextafter(1, 0), -np.nextafter(1, 0), 0.9966,
              1e-300, 0.75, -0.75, 1.5, 2.5, 4, 6.5, 10, -10, 27, 27.5, 30, 31, 1e300]
  near_one = 1 - RNG.uniform(0, 1e-6, 2000)
  return np.concatenate([specials, RNG.uniform(-1, 1, 20_000), near_one, -near_one,
                         RNG.normal(0, 3, 10_000), RNG.uniform(-40, 40, 5000),
                         RNG.integers(0, 2**64, 2000, dtype=np.uint64).view(np.float64)])


@pytest.mark.parametrize("name", ["erf", "erfc", "erf_inv"])
def test_f64_special_small_inputs_match_the_array_kernel(name):
  from jaxlite._src.lax import special
  array_kernel = {"erf": special._erf64, "erfc": special._erfc64,
                  "erf_inv": special._erf_inv64}[name]
  op = getattr(lax, name)
  x = _special_inputs()
  with np.errstate(all="ignore"):
    want = array_kernel(x.copy())
  with x64():
    assert x.size > special._SCALAR_MAX  # the whole runs the array kernel
    np.testing.assert_array_equal(_bits(op(x)), _bits(want))
    for n in (1, 2, 3, special._SCALAR_MAX):  # element by element
      for start in range(0, 4000, 7 * n):
        got = op(x[start:start + n])
        assert got.dtype == np.float64
        np.testing.assert_array_equal(_bits(got), _bits(want[start:start + n]))
    for i in range(40):  # 0-d operands, as a loop body's
      got = op(x[i])
      assert got.shape == () and got.dtype == np.float64
      np.testing.assert_array_equal(_bits(got), _bits(want[i]))
    grid = op(x[:6].reshape(2, 3))
    np.testing.assert_array_equal(_bits(grid), _bits(want[:6].reshape(2, 3)))


def test_f64_element_path_below_its_size_and_array_kernel_on_a_raise():
  from jaxlite._src.lax import special
  calls = []

  def element(v):
    calls.append(("element", v))
    return 1 / v  # a Python ZeroDivisionError at 0, where NumPy gives inf

  def array_kernel(x):
    calls.append(("array", x.size))
    with np.errstate(all="ignore"):
      return 1 / x
  run = special._elementwise_py(element, array_kernel)
  assert run(np.array([2.0, 4.0])).tolist() == [0.5, 0.25]
  assert calls == [("element", 2.0), ("element", 4.0)]
  calls.clear()
  assert run(np.array([2.0, 0.0])).tolist() == [0.5, np.inf]
  assert calls[-1] == ("array", 2)
  calls.clear()
  big = np.arange(1.0, special._SCALAR_MAX + 2)
  np.testing.assert_array_equal(run(big), 1 / big)
  assert calls == [("array", big.size)]
  assert run(np.array(8.0)).shape == ()


# --- generated code: templates decided by the eqn's avals instead of kernel calls --------------

def _check_jit_matches_eager(f, *args, template: str, kernel: str | None = None):
  """jit(f) (generated code) gives eager f's bits and dtype; its source has `template` and no
  call of the primitive's kernel (named `kernel`), or, with template None, has the kernel."""
  src = _source(f, *args)
  jitted, eager = jax.jit(f)(*args), f(*args)
  assert jitted.dtype == eager.dtype and jitted.shape == eager.shape
  np.testing.assert_array_equal(_bits(jitted), _bits(eager))
  if template is None:
    assert f"= _{kernel}" in src, src
  else:
    assert template in src and f"= _{kernel}" not in src, src


@pytest.mark.parametrize("shape", [(), (3,), (4, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_, np.complex64])
def test_select_n_small_is_np_where(shape, dtype):
  with x64():
    which = RNG.random(shape) > 0.5
    a, b = (np.asarray(RNG.normal(size=shape) * 3).astype(dtype) for _ in range(2))
    _check_jit_matches_eager(lax.select, which, a, b, template="np.where(", kernel="select_n")
    scalar_which = np.bool_(True)
    _check_jit_matches_eager(lambda a, b: lax.select(scalar_which, a, b), a, b,
                             template="np.where(", kernel="select_n")


def test_select_n_of_one_key_is_the_chosen_key():
  # a 0-d predicate choosing one of two PRNG keys: the operand itself (no np.where over the
  # key's fields), the same key data as eager and as JAX
  keys = jax.random.split(jax.random.key(7))
  for p in (True, False):
    f = lambda p, a, b: lax.select(p, a, b)
    src = _source(f, np.bool_(p), keys[0], keys[1])
    assert " if " in src and "np.where(" not in src and "= _select_n" not in src, src
    got = jax.random.key_data(jax.jit(f)(np.bool_(p), keys[0], keys[1]))
    eager = jax.random.key_data(f(np.bool_(p), keys[0], keys[1]))
    np.testing.assert_array_equal(got, eager)
    np.testing.assert_array_equal(got, jax.random.key_data(keys[0 if p else 1]))


def test_select_n_of_one_key_as_jax():
  real = oracle()
  for p in (True, False):
    keys, rkeys = jax.random.split(jax.random.key(7)), real.random.split(real.random.key(7))
    got = jax.jit(lambda p, a, b: jax.random.normal(lax.select(p, a, b)))(p, *keys)
    want = real.jit(lambda p, a, b: real.random.normal(real.lax.select(p, a, b)))(p, *rkeys)
    np.testing.assert_array_equal(jax.random.key_data(jax.jit(
        lambda p, a, b: lax.select(p, a, b))(p, *keys)), real.random.key_data(real.jit(
            lambda p, a, b: real.lax.select(p, a, b))(p, *rkeys)))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_select_n_big_or_n_way_keeps_the_kernel():
  which = RNG.random((64, 64)) > 0.5  # the bitwise select's size
  a, b = RNG.normal(size=(2, 64, 64)).astype(np.float32)
  _check_jit_matches_eager(lax.select, which, a, b, template=None, kernel="select_n")
  idx = RNG.integers(0, 3, 5).astype(np.int32)
  c = RNG.normal(size=(3, 5)).astype(np.float32)
  _check_jit_matches_eager(lambda i, c: lax.select_n(i, c[0], c[1], c[2]), idx, c,
                           template=None, kernel="select_n")


def test_pow_div_templates_and_their_fallbacks():
  with x64():
    x = np.asarray(RNG.uniform(0.1, 3, 7))
    for y in (np.int32(-3), np.asarray(RNG.uniform(-2, 2, 7)), np.float64(0.5)):
      _check_jit_matches_eager(lax.pow, x, y, template="np.power(", kernel="pow")
    _check_jit_matches_eager(lax.pow, np.float64(2.0), np.int32(-7), template="np.power(",
                             kernel="pow")
    # float32 ** int32: NumPy's power would widen to float64; the kernel casts back
    _check_jit_matches_eager(lax.pow, x.astype(np.float32), np.int32(3), template=None,
                             kernel="pow")
    for dtype in (np.float32, np.float64, np.complex128):
      a, b = (RNG.normal(size=5).astype(dtype) for _ in range(2))
      b[0] = 0  # x / 0 without a warning
      _check_jit_matches_eager(lax.div, a, b, template="np.true_divide(", kernel="div")
    ints = np.array([7, -7, 5, 0], np.int32), np.array([2, 2, 0, 3], np.int32)
    _check_jit_matches_eager(lax.div, *ints, template=None, kernel="div")  # C truncation


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_shift_right_logical_by_a_literal(dtype):
  width = np.dtype(dtype).itemsize * 8
  x = RNG.integers(0, np.iinfo(dtype).max, 9, dtype=dtype, endpoint=True)
  with x64(width == 64):
    for amount in (0, 1, width - 1):
      _check_jit_matches_eager(lambda v: lax.shift_right_logical(v, dtype(amount)), x,
                               template="np.right_shift(", kernel="shift_right_logical")
    for amount in (width, width + 3):  # out of range: the kernel's masking (zeros)
      _check_jit_matches_eager(lambda v: lax.shift_right_logical(v, dtype(amount)), x,
                               template=None, kernel="shift_right_logical")
    signed = x.view(f"i{width // 8}")  # a signed operand shifts its unsigned view: the kernel
    _check_jit_matches_eager(lambda v: lax.shift_right_logical(v, signed.dtype.type(1)),
                             signed, template=None, kernel="shift_right_logical")


def test_bitcast_and_squeeze_templates():
  with x64():
    bits = RNG.integers(0, 2**64, 6, dtype=np.uint64)
    to_float = lambda b: lax.bitcast_convert_type(b, np.float64)
    _check_jit_matches_eager(to_float, bits, template=".view('float64')",
                             kernel="bitcast_convert_type")
    _check_jit_matches_eager(to_float, bits[0], template=".view('float64')",
                             kernel="bitcast_convert_type")
    narrow = lambda b: lax.bitcast_convert_type(b, np.uint32)  # a new last axis: the kernel
    _check_jit_matches_eager(narrow, bits, template=None, kernel="bitcast_convert_type")
    x = RNG.normal(size=(1, 3, 1))
    _check_jit_matches_eager(lambda v: lax.squeeze(v, (0, 2)), x, template="np.squeeze(",
                             kernel="squeeze")


def test_brownian_walk_in_a_while_loop_matches_op_by_op():
  """A while loop of scalar splits and normal draws (a Brownian tree's walk): the generated
  body's values equal the eager op-by-op loop's."""
  from jaxlite import random

  def walk(key, t):
    def cond(c):
      return c[0] < 12

    def body(c):
      level, key, w, s = c
      key, sub = random.split(key)
      half = 2.0 ** (-level.astype(jnp.float64))
      z = random.normal(sub, (), jnp.float64)
      right = t > s + half
      return (level + 1, key, w + jnp.sqrt(half) * z / 2, jnp.where(right, s + half, s))
    return lax.while_loop(cond, body, (jnp.int32(0), key, jnp.float64(0), jnp.float64(0)))

  with x64():
    key, t = random.key(3), np.float64(0.3)
    jitted = jax.jit(walk)(key, t)
    with jax.disable_jit():
      eager = walk(key, t)
    for a, b in zip(jitted[2:], eager[2:]):
      np.testing.assert_array_equal(_bits(a), _bits(b))
    # the binary search of t: the largest multiple of 2**-11 below it
    assert math.isfinite(float(jitted[2])) and float(jitted[3]) == math.floor(0.3 * 2**11) / 2**11
