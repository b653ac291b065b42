"""jnp.fft and the lax fft primitive: values and dtypes against NumPy and JAX, the transpose
rules through grads, vmap/jit, printed forms."""
import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite import lax

from conftest import oracle, x64

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 6)).astype(np.float32)
XC = (X + 1j * RNG.standard_normal(X.shape)).astype(np.complex64)
NORMS = [None, "backward", "ortho", "forward"]

CASES = [
    ("fft", XC, {}), ("fft", X, dict(n=5, axis=0)), ("fft", X, dict(n=8, axis=1)),
    ("ifft", XC, dict(n=4)), ("rfft", X, {}), ("rfft", X, dict(n=9)),
    ("irfft", XC, {}), ("irfft", XC, dict(n=7)), ("hfft", XC, {}), ("hfft", XC, dict(n=5)),
    ("ihfft", X, {}), ("fft2", XC, {}), ("ifft2", X, dict(s=(3, 5))),
    ("rfft2", X, dict(axes=(0, 2))), ("irfft2", XC, {}), ("fftn", XC, {}),
    ("ifftn", XC, dict(axes=(0, 2))), ("rfftn", X, {}), ("irfftn", XC, dict(s=(2, 3, 4))),
    ("fftn", X[0], dict(s=(2, 8))),
]


def _close(got, want, tol=2e-5):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape, (got.shape, want.shape)
  np.testing.assert_allclose(got, want, atol=tol * (1 + np.abs(want).max()), rtol=tol)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name, x, kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_numpy(name, x, kw, norm):
  got = getattr(jnp.fft, name)(x, norm=norm, **kw)
  want = getattr(np.fft, name)(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64),
                               norm=norm, **kw)
  assert got.dtype == (np.float32 if want.dtype.kind == "f" else np.complex64)
  _close(got, want)


@pytest.mark.parametrize("name, x, kw", CASES[::2], ids=[c[0] for c in CASES[::2]])
def test_matches_jax_values_and_dtypes(name, x, kw):
  jax_ = oracle()
  got = getattr(jnp.fft, name)(x, **kw)
  want = getattr(jax_.numpy.fft, name)(x, **kw)
  assert got.dtype == want.dtype
  _close(got, want)


def test_integer_input_and_more_than_three_axes():
  jax_ = oracle()
  assert jnp.fft.fft(np.arange(4)).dtype == np.complex64
  y = RNG.standard_normal((2, 2, 3, 2, 4)).astype(np.float32)
  for name in ["fftn", "ifftn", "rfftn", "irfftn"]:
    _close(getattr(jnp.fft, name)(y), getattr(jax_.numpy.fft, name)(y))
  with x64():
    out = jnp.fft.fft(np.ones(4))
    assert out.dtype == np.complex128


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_frequencies_and_shifts(n):
  _close(jnp.fft.fftfreq(n, 0.3), np.fft.fftfreq(n, 0.3))
  _close(jnp.fft.rfftfreq(n), np.fft.rfftfreq(n))
  assert jnp.fft.fftfreq(n).dtype == np.float32
  x = np.arange(n * 3).reshape(n, 3)
  for axes in [None, 0, (1,), (0, 1)]:
    np.testing.assert_array_equal(np.asarray(jnp.fft.fftshift(x, axes)), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(np.asarray(jnp.fft.ifftshift(x, axes)),
                                  np.fft.ifftshift(x, axes))


@pytest.mark.parametrize("fn, message", [
    (lambda: jnp.fft.fft(np.ones(3), norm="bad"), "Invalid norm value bad"),
    (lambda: jnp.fft.rfft(np.ones(3, np.complex64)), "only real valued inputs"),
    (lambda: jnp.fft.fftn(np.ones((2, 2)), axes=(0, 0)), "does not support repeated axes"),
    (lambda: jnp.fft.fftn(np.ones((2, 2)), s=(2,), axes=(0, 1)), "Shape and axes"),
    (lambda: jnp.fft.fftfreq(2.5), "only takes an int"),
])
def test_errors(fn, message):
  with pytest.raises(ValueError, match=message):
    fn()


def test_lax_fft_primitive_and_printing():
  jax_ = oracle()
  x = np.arange(8, dtype=np.float32)
  ours = str(jax.make_jaxpr(jnp.fft.fft)(x))
  theirs = str(jax_.make_jaxpr(jax_.numpy.fft.fft)(x))
  assert ours == theirs
  assert str(jax.make_jaxpr(jnp.fft.rfft)(x)) == str(jax_.make_jaxpr(jax_.numpy.fft.rfft)(x))
  _close(lax.fft(x.astype(np.complex64), lax.FftType.FFT, (8,)), np.fft.fft(x))
  _close(lax.fft(x, "rfft", (8,)), np.fft.rfft(x))
  assert str(lax.FftType.IRFFT) == "3"


GRAD_CASES = [
    ("fft", lambda m, x: m.sum(m.abs(m.fft.fft(x)) ** 2)),
    ("fft_n", lambda m, x: m.sum(m.real(m.fft.fft(x, n=9) * (2 - 1j)))),
    ("ifft", lambda m, x: m.sum(m.imag(m.fft.ifft(x * (1 + 1j))))),
    ("rfft", lambda m, x: m.sum(m.abs(m.fft.rfft(x)) ** 2)),
    ("irfft", lambda m, x: m.sum(m.fft.irfft(x) ** 2 * m.arange(10.))),
    ("irfft_odd", lambda m, x: m.sum(m.fft.irfft(x * 1j, n=7) ** 3)),
    ("ifft2", lambda m, x: m.sum(m.real(m.fft.ifft2(x) * (1 + 2j)))),
    ("rfftn", lambda m, x: m.sum(m.imag(m.fft.rfftn(x)) ** 2)),
    ("irfftn", lambda m, x: m.sum(m.fft.irfftn(x, s=(4, 8)) ** 2)),
    ("hfft", lambda m, x: m.sum(m.fft.hfft(x, norm="ortho") ** 2)),
]


@pytest.mark.parametrize("name, fn", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grads_match_jax(name, fn):
  jax_ = oracle()
  x = RNG.standard_normal((4, 6)).astype(np.float32)
  got = jax.grad(lambda x: fn(jnp, x))(x)
  want = jax_.grad(lambda x: fn(jax_.numpy, x))(x)
  _close(got, want, 1e-4)


def test_jvp_is_the_transform_of_the_tangent_and_vjp_is_its_transpose():
  with x64():
    x = RNG.standard_normal((3, 8))
    t = RNG.standard_normal((3, 8))
    for name in ["fft", "ifft", "rfft"]:
      fn = getattr(jnp.fft, name)
      _, tout = jax.jvp(fn, (x,), (t,))
      _close(tout, getattr(np.fft, name)(t), 1e-12)
    # <ct, F t> = <Fᵀ ct, t> (real inner product over the real and imaginary parts).
    c = RNG.standard_normal((3, 5)) + 1j * RNG.standard_normal((3, 5))
    _, vjp = jax.vjp(lambda v: jnp.fft.irfft(v, n=8), c)
    ct = RNG.standard_normal((3, 8))
    (g,) = vjp(ct)
    probe = RNG.standard_normal((3, 5)) + 1j * RNG.standard_normal((3, 5))
    lhs = np.sum(ct * np.fft.irfft(probe, n=8))
    rhs = np.sum(np.real(np.asarray(g)) * probe.real + np.imag(np.asarray(g)) * probe.imag)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def test_vmap_and_jit():
  for name in ["fft", "rfft", "fft2", "irfftn"]:
    fn = getattr(jnp.fft, name)
    x = XC if name == "irfftn" else X
    loop = np.stack([np.asarray(fn(xi)) for xi in x])
    _close(jax.vmap(fn)(x), loop)
    _close(jax.jit(jax.vmap(fn))(x), loop)
    _close(jax.vmap(fn, in_axes=2, out_axes=0)(x), np.stack([np.asarray(fn(x[..., i]))
                                                             for i in range(x.shape[-1])]))
