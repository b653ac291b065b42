"""`jax.scipy.signal`: convolve/correlate (direct, as `lax.conv_general_dilated`), their 2-D
forms, fftconvolve (by FFT) and detrend, with SciPy's modes and output centering."""
from __future__ import annotations

import numpy as np


def _jnp():
  import jaxlite.numpy as jnp
  return jnp


_MODES = ("full", "same", "valid")


def _check_mode(name, mode):
  if mode not in _MODES:
    raise ValueError(f"{name}: mode must be one of {_MODES}, got {mode!r}")


def _centered(x, shape, axes):
  """The middle `shape` of `x` on `axes` (SciPy's `_centered`)."""
  idx = [slice(None)] * x.ndim
  for ax, n in zip(axes, shape):
    start = (x.shape[ax] - n) // 2
    idx[ax] = slice(start, start + n)
  return x[tuple(idx)]


def _promote(name, in1, in2):
  jnp = _jnp()
  in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
  if in1.ndim != in2.ndim:
    raise ValueError(f"{name}: in1 and in2 should have the same dimensionality, got "
                     f"{in1.ndim} and {in2.ndim}")
  dtype = jnp.result_type(in1, in2)
  if not jnp.issubdtype(dtype, jnp.inexact):
    dtype = jnp.result_type(dtype, 1.0)  # ints convolve in the default float type, as JAX
  return in1.astype(dtype), in2.astype(dtype)


def _convolve_nd(name, in1, in2, mode, precision):
  from jaxlite import lax
  jnp = _jnp()
  _check_mode(name, mode)
  in1, in2 = _promote(name, in1, in2)
  if in1.ndim == 0:
    return in1 * in2
  if mode == "valid" and any(a < b for a, b in zip(in1.shape, in2.shape)):
    if not all(a <= b for a, b in zip(in1.shape, in2.shape)):
      raise ValueError(f"{name}: for 'valid' mode, one must be at least as large as the other "
                       "in every dimension")
    in1, in2 = in2, in1
  if min(in1.shape + in2.shape) == 0:
    raise ValueError(f"{name}: inputs cannot be empty")
  kernel = jnp.flip(in2)  # lax convs correlate; a flipped kernel convolves
  pads = [(k - 1, k - 1) for k in in2.shape] if mode != "valid" else [(0, 0)] * in2.ndim
  nd = in1.ndim
  out = lax.conv_general_dilated(in1[None, None], kernel[None, None], (1,) * nd, pads,
                                 precision=precision)[0, 0]
  if mode == "same":
    out = _centered(out, in1.shape, range(nd))
  return out


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
  """N-dimensional convolution of `in1` with `in2` (`method='fft'` uses fftconvolve)."""
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  if method not in ("direct", "auto"):
    raise ValueError(f"convolve: got method={method!r}; expected 'auto', 'fft' or 'direct'")
  return _convolve_nd("convolve", in1, in2, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
  """N-dimensional cross-correlation: convolution with the flipped conjugate of `in2`."""
  jnp = _jnp()
  in2 = jnp.flip(jnp.conj(jnp.asarray(in2)))
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  return _convolve_nd("correlate", in1, in2, mode, precision)


def _check_2d(name, in1, in2, boundary, fillvalue):
  if np.ndim(in1) != 2 or np.ndim(in2) != 2:
    raise ValueError(f"{name} only supports 2-dimensional inputs, got shapes {np.shape(in1)} "
                     f"and {np.shape(in2)}")
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{name} only supports boundary='fill', fillvalue=0")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
               precision=None):
  """2-D convolution (zero fill at the boundary)."""
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_nd("convolve2d", in1, in2, mode, precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
                precision=None):
  """2-D cross-correlation (zero fill at the boundary)."""
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  jnp = _jnp()
  flipped = jnp.flip(jnp.conj(jnp.asarray(in2)))
  if mode != "same":
    return _convolve_nd("correlate2d", in1, flipped, mode, precision)
  # SciPy centers correlate2d's 'same' window k // 2 into the full output (correlate's
  # (k - 1) // 2): they differ for even kernel sizes.
  full = _convolve_nd("correlate2d", in1, flipped, "full", precision)
  (k0, k1), (n0, n1) = np.shape(in2), np.shape(in1)
  return full[k0 // 2:k0 // 2 + n0, k1 // 2:k1 // 2 + n1]


def fftconvolve(in1, in2, mode: str = "full", axes=None):
  """Convolution by FFT over `axes` (all by default), with SciPy's output modes."""
  jnp = _jnp()
  _check_mode("fftconvolve", mode)
  in1, in2 = _promote("fftconvolve", in1, in2)
  if in1.ndim == 0:
    return in1 * in2
  axes = tuple(range(in1.ndim)) if axes is None else tuple(a % in1.ndim for a in axes)
  if mode == "valid" and any(in1.shape[a] < in2.shape[a] for a in axes):
    in1, in2 = in2, in1
  full = [in1.shape[a] + in2.shape[a] - 1 for a in axes]
  if jnp.iscomplexobj(in1):
    out = jnp.fft.ifftn(jnp.fft.fftn(in1, full, axes) * jnp.fft.fftn(in2, full, axes), full,
                        axes)
  else:
    out = jnp.fft.irfftn(jnp.fft.rfftn(in1, full, axes) * jnp.fft.rfftn(in2, full, axes), full,
                         axes)
  if mode == "same":
    out = _centered(out, [in1.shape[a] for a in axes], axes)
  elif mode == "valid":
    out = _centered(out, [in1.shape[a] - in2.shape[a] + 1 for a in axes], axes)
  return out.astype(in1.dtype)


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):
  """`data` less its mean ('constant') or its least-squares line on each segment between the
  breakpoints `bp` ('linear')."""
  jnp = _jnp()
  if type not in ("constant", "linear"):
    raise ValueError("Trend type must be 'linear' or 'constant'.")
  data = jnp.asarray(data)
  if not jnp.issubdtype(data.dtype, jnp.inexact):
    data = data.astype(jnp.result_type(data.dtype, 1.0))
  if type == "constant":
    return data - data.mean(axis, keepdims=True)
  x = jnp.moveaxis(data, axis, -1)
  n = x.shape[-1]
  bps = np.unique(np.r_[0, np.asarray(bp, int), n])
  if np.any(bps > n):
    raise ValueError("Breakpoints must be less than length of data along given axis.")
  pieces = []
  for lo, hi in zip(bps[:-1], bps[1:]):
    seg = x[..., lo:hi]
    t = np.arange(hi - lo, dtype=np.float64)
    design = np.stack([t, np.ones_like(t)], axis=1)
    proj = design @ np.linalg.pinv(design)  # hat matrix of the line fit
    pieces.append(seg - seg @ jnp.asarray(proj.T, seg.dtype))
  return jnp.moveaxis(jnp.concatenate(pieces, axis=-1), -1, axis)
