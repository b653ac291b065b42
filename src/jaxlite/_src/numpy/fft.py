"""`jnp.fft`: NumPy's FFT API over the lax fft primitive: axes moved last, inputs cropped or
zero-padded to the requested lengths, then one fft eqn and the normalization scale.
"""
from __future__ import annotations

import operator

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import fft as lax_fft
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax import slicing
from jaxlite._src.lax.fft import FftType
from jaxlite._src.numpy.util import check_arraylike, promote_dtypes_inexact

_NORMS = (None, "backward", "ortho", "forward")
_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                 "forward": "backward"}


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _as_inexact(name, a):
  check_arraylike(name, a)
  (a,) = promote_dtypes_inexact(a)
  if not isinstance(a, (core.Tracer, core.array_type)):
    a = _jnp().asarray(a)
  return a


def _canonical_axes(name, ndim, s, axes):
  if axes is None:
    axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
  axes = tuple(operator.index(a) for a in axes)
  for a in axes:
    if not -ndim <= a < ndim:
      raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
  axes = tuple(a % ndim for a in axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes {axes}.")
  if s is not None and len(s) != len(axes):
    raise ValueError("Shape and axes have different lengths.")
  return axes


def _resize(a, axis, size):
  """a cropped or zero-padded along `axis` to `size`."""
  n = a.shape[axis]
  if size == n:
    return a
  if size < n:
    return slicing.slice_in_dim(a, 0, size, axis=axis)
  config = tuple((0, size - n if i == axis else 0, 0) for i in range(a.ndim))
  return shape_prims.pad_p.bind(a, np.zeros((), a.dtype), padding_config=config)


def _move_last(a, axes):
  rest = [i for i in range(a.ndim) if i not in axes]
  perm = tuple(rest) + tuple(axes)
  if perm == tuple(range(a.ndim)):
    return a, None
  return shape_prims.transpose_p.bind(a, permutation=perm), perm


def _move_back(a, perm):
  if perm is None:
    return a
  return shape_prims.transpose_p.bind(a, permutation=tuple(int(i) for i in np.argsort(perm)))


def _scale(out, norm, lengths, inverse: bool):
  """The normalization: lax transforms leave the forward unscaled and the inverse 1/n."""
  if norm not in _NORMS:
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
  n = float(np.prod(lengths))
  if norm in (None, "backward"):
    return out
  if norm == "ortho":
    factor = np.sqrt(n) if inverse else 1 / np.sqrt(n)
  else:
    factor = n if inverse else 1 / n
  return out * np.asarray(factor, out.dtype if out.dtype.kind == "f" else
                          lax_fft._real_of(out.dtype)).astype(out.dtype)


def _fft_core(name, fft_type, a, s, axes, norm, return_lengths=False):
  a = _as_inexact(name, a)
  if s is not None:
    s = tuple(operator.index(n) for n in s)
    if any(n < 1 for n in s):
      raise ValueError(f"jax.numpy.fft.{name}: invalid fft lengths {s}")
  axes = _canonical_axes(name, a.ndim, s, axes)
  if not axes:
    return a
  if len(axes) > 3:
    return _fft_in_groups(name, fft_type, a, s, axes, norm)
  if fft_type == FftType.RFFT and a.dtype.kind == "c":
    raise ValueError("only real valued inputs supported for rfft")
  lengths = list(s) if s is not None else [a.shape[ax] for ax in axes]
  if fft_type == FftType.RFFT and 0 in lengths:
    raise ValueError(f"jax.numpy.fft.{name}: real transforms need non-empty axes, got "
                     f"lengths {tuple(lengths)}")
  if fft_type == FftType.IRFFT:
    if s is None:
      lengths[-1] = 2 * (a.shape[axes[-1]] - 1)
    sizes = lengths[:-1] + [lengths[-1] // 2 + 1]
  else:
    sizes = lengths
  for ax, size in zip(axes, sizes):
    a = _resize(a, ax, size)
  moved, perm = _move_last(a, axes)
  out = lax_fft.fft(moved, fft_type, tuple(lengths))
  out = _move_back(out, perm)
  if return_lengths:
    return out, lengths
  return _scale(out, norm, lengths, fft_type in (FftType.IFFT, FftType.IRFFT))


def _fft_in_groups(name, fft_type, a, s, axes, norm):
  """More than three axes (XLA's limit): the real transform takes the last three axes and a
  complex transform of the same direction the others (after RFFT, before IRFFT)."""
  head, tail = axes[:-3], axes[-3:]
  s_head, s_tail = (None, None) if s is None else (s[:-3], s[-3:])
  if fft_type == FftType.IRFFT:
    a = _fft_core(name, FftType.IFFT, a, s_head, head, norm)
    return _fft_core(name, FftType.IRFFT, a, s_tail, tail, norm)
  a = _fft_core(name, fft_type, a, s_tail, tail, norm)
  complex_type = FftType.IFFT if fft_type == FftType.IFFT else FftType.FFT
  return _fft_core(name, complex_type, a, s_head, head, norm)


def _one_axis(n, axis):
  return (None if n is None else (n,)), (axis,)


def fft(a, n=None, axis: int = -1, norm=None):
  s, axes = _one_axis(n, axis)
  return _fft_core("fft", FftType.FFT, a, s, axes, norm)


def ifft(a, n=None, axis: int = -1, norm=None):
  s, axes = _one_axis(n, axis)
  return _fft_core("ifft", FftType.IFFT, a, s, axes, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
  s, axes = _one_axis(n, axis)
  return _fft_core("rfft", FftType.RFFT, a, s, axes, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
  s, axes = _one_axis(n, axis)
  return _fft_core("irfft", FftType.IRFFT, a, s, axes, norm)


def _conj(x):
  return _jnp().conj(x) if x.dtype.kind == "c" else x


def hfft(a, n=None, axis: int = -1, norm=None):
  """The FFT of a Hermitian-symmetric signal given by its first half: a real spectrum."""
  a = _as_inexact("hfft", a)
  nn = 2 * (a.shape[axis] - 1) if n is None else n
  return irfft(_conj(a), nn, axis, _SWAPPED_NORM[norm] if norm in _NORMS else norm)


def ihfft(a, n=None, axis: int = -1, norm=None):
  """The inverse of hfft: the first half of a Hermitian spectrum from a real signal."""
  a = _as_inexact("ihfft", a)
  s, axes = _one_axis(n, axis)
  out, lengths = _fft_core("ihfft", FftType.RFFT, a, s, axes, "backward", return_lengths=True)
  swapped = _SWAPPED_NORM[norm] if norm in _NORMS else norm
  return _scale(_conj(out), swapped, lengths, inverse=False)


def fft2(a, s=None, axes=(-2, -1), norm=None):
  return _fft_core("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
  return _fft_core("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
  return _fft_core("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
  return _fft_core("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm=None):
  return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
  return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
  return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
  return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# --- frequencies and shifts -------------------------------------------------------------------

def _freq_dtype(dtype):
  if dtype is None:
    return dtypes.default_float_dtype()
  return dtypes.check_user_dtype(dtype, "fftfreq")


def _check_n(name, n):
  try:
    return operator.index(n)
  except TypeError as err:
    raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. Got n = "
                     f"{n!r}.") from err


def fftfreq(n, d=1.0, *, dtype=None, device=None):
  """The sample frequencies [0, 1, …, -(n//2), …, -1] / (d n)."""
  jnp = _jnp()
  n = _check_n("fftfreq", n)
  k = jnp.arange(n, dtype=_freq_dtype(dtype))
  # Counting up from n // 2 modulo n, shifted back: the negative half wraps to the end.
  k = jnp.remainder(k + n // 2, n) - n // 2
  return k / (d * n)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
  """The non-negative sample frequencies [0, 1, …, n//2] / (d n) of rfft."""
  n = _check_n("rfftfreq", n)
  return _jnp().arange(n // 2 + 1, dtype=_freq_dtype(dtype)) / (d * n)


@internal_jit(static_argnums=(1, 2), name="_roll_static")
def _roll_static(x, shifts, axes):
  for shift, ax in zip(shifts, axes):
    n = x.shape[ax]
    if n == 0:
      continue
    shift = shift % n
    if shift:
      tail = slicing.slice_in_dim(x, n - shift, n, axis=ax)
      head = slicing.slice_in_dim(x, 0, n - shift, axis=ax)
      x = shape_prims.concatenate_p.bind(tail, head, dimension=ax)
  return x


def _shift(name, x, axes, sign):
  check_arraylike(name, x)
  x = x if isinstance(x, (core.Tracer, core.array_type)) else _jnp().asarray(x)
  if axes is None:
    axes = tuple(range(x.ndim))
  elif isinstance(axes, int):
    axes = (axes,)
  for a in axes:  # AxisError: JAX's IndexError here, and NumPy's ValueError
    if not -max(x.ndim, 1) <= operator.index(a) < max(x.ndim, 1):
      raise np.exceptions.AxisError(
          f"{name}: axis {a} is out of bounds for array of dimension {x.ndim}")
  axes = tuple(operator.index(a) % max(x.ndim, 1) for a in axes)
  shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
  return _roll_static(x, shifts, axes)


def fftshift(x, axes=None):
  """Moves the zero frequency to the center."""
  return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
  """The inverse of fftshift."""
  return _shift("ifftshift", x, axes, -1)
