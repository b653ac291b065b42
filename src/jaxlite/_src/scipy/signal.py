"""`jax.scipy.signal`: convolve/correlate (direct, as `lax.conv_general_dilated`), their 2-D
forms, fftconvolve (by FFT) and detrend, with SciPy's modes and output centering."""
from __future__ import annotations

import numpy as np


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
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
  from jaxlite._src.lax import namespace as lax
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
  if method not in ("auto", "fft", "direct"):
    raise ValueError(f"correlate: got method={method!r}; expected 'auto', 'fft', or 'direct'.")
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


# --- spectral estimates: stft, csd, welch -------------------------------------------------------

def _window(window, nperseg, dtype):
  """A periodic window of length nperseg by name ('hann', 'hamming', 'boxcar', ...) or given."""
  if not isinstance(window, str) and not isinstance(window, tuple):
    win = np.asarray(window)
    if win.ndim != 1 or win.shape[0] != nperseg:
      raise ValueError(f"window must be 1-D with length nperseg={nperseg}, got {win.shape}")
    return win.astype(dtype)
  name = window if isinstance(window, str) else window[0]
  n = np.arange(nperseg)
  phase = 2 * np.pi * n / nperseg
  cosine_sums = {"hann": (0.5, 0.5), "hanning": (0.5, 0.5), "hamming": (0.54, 0.46),
                 "boxcar": (1.0,), "rect": (1.0,), "ones": (1.0,),
                 "blackman": (0.42, 0.5, 0.08)}
  if name not in cosine_sums:
    raise ValueError(f"Unknown window type {name!r}; supported: {sorted(cosine_sums)}")
  coefs = cosine_sums[name]
  win = sum((-1) ** k * c * np.cos(k * phase) for k, c in enumerate(coefs))
  return np.asarray(win, dtype)


def _detrend_segments(segments, detrend_type):
  if detrend_type is False or detrend_type is None:
    return segments
  if callable(detrend_type):
    return detrend_type(segments)
  if detrend_type not in ("constant", "linear"):
    raise ValueError(f"Unsupported detrend type: {detrend_type}")
  return detrend(segments, axis=-1, type=detrend_type)


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
  """SciPy's spectral helper: windowed, detrended segments and their (cross) spectra.
  Returns (freqs, times, result) with the segments on the last axis of `result`."""
  jnp = _jnp()
  x = jnp.asarray(x)
  same = y is None
  y = x if same else jnp.asarray(y)
  dtype = jnp.result_type(x, y, np.float32 if x.dtype != np.float64 else np.float64)
  x, y = jnp.moveaxis(x.astype(dtype), axis, -1), jnp.moveaxis(y.astype(dtype), axis, -1)
  if not same and x.shape != y.shape:
    raise ValueError(f"x and y must have one shape along the spectral axis, got {x.shape} and "
                     f"{y.shape}")
  n = x.shape[-1]
  nperseg = n if nperseg is None else min(int(nperseg), n)  # JAX: the whole signal by default
  if nperseg < 1:
    raise ValueError("nperseg must be a positive integer")
  nfft = nperseg if nfft is None else int(nfft)
  if nfft < nperseg:
    raise ValueError("nfft must be greater than or equal to nperseg.")
  noverlap = nperseg // 2 if noverlap is None else int(noverlap)
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  step = nperseg - noverlap
  real_dtype = jnp.finfo(dtype).dtype
  win = jnp.asarray(_window(window, nperseg, real_dtype))

  def prepare(v):
    if boundary is not None:
      if boundary != "zeros":
        raise ValueError(f"Unknown boundary option '{boundary}', supported: 'zeros' or None")
      pad = [(0, 0)] * (v.ndim - 1) + [(nperseg // 2, nperseg // 2)]
      v = jnp.pad(v, pad)
    if padded:
      extra = (-(v.shape[-1] - nperseg) % step) % nperseg
      v = jnp.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, extra)])
    length = v.shape[-1]
    nseg = (length - nperseg) // step + 1
    idx = np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]
    segs = _detrend_segments(v[..., idx], detrend_type) * win
    onesided = return_onesided and not jnp.iscomplexobj(segs)
    return (jnp.fft.rfft(segs, n=nfft) if onesided else jnp.fft.fft(segs, n=nfft)), onesided

  fx, onesided = prepare(x)
  if scaling == "density":
    scale = 1.0 / (fs * jnp.sum(win ** 2))
  elif scaling == "spectrum":
    scale = 1.0 / jnp.sum(win) ** 2
  else:
    raise ValueError(f"Unknown scaling: {scaling}")
  if mode == "stft":
    result = fx * jnp.sqrt(scale)
  else:
    fy = fx if same else prepare(y)[0]
    result = jnp.conj(fx) * fy * scale
    if onesided:
      result = result.at[..., 1:-1 if nfft % 2 == 0 else None].multiply(2)
  freqs = np.fft.rfftfreq(nfft, 1 / fs) if onesided else np.fft.fftfreq(nfft, 1 / fs)
  nseg = result.shape[-2]
  times = (np.arange(nseg) * step + nperseg / 2) / fs
  if boundary is not None:
    times = times - (nperseg / 2) / fs
  result = jnp.moveaxis(result, -2, -1)  # (..., freqs, segments)
  return jnp.asarray(freqs, real_dtype), jnp.asarray(times, real_dtype), result


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap=None, nfft=None,
         detrend=False, return_onesided: bool = True, boundary="zeros", padded: bool = True,
         axis: int = -1):
  """Short-time Fourier transform: (frequencies, segment times, Zxx [..., freqs, times])."""
  if detrend is True:
    raise ValueError("Unsupported detrend type: True")
  f, t, z = _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                      "spectrum",
                      axis, "stft", boundary, padded)
  return f, t, _jnp().moveaxis(z, (-2, -1), (axis - 1, axis) if axis < 0 else (axis, axis + 1))


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided: bool = True, scaling: str = "density",
        axis: int = -1, average: str = "mean"):
  """Cross power spectral density by Welch's method: (frequencies, Pxy)."""
  jnp = _jnp()
  if average not in ("mean", "median"):
    raise ValueError(f"average must be 'median' or 'mean', got {average}")
  f, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                        scaling, axis, "psd")
  nseg = pxy.shape[-1]
  if average == "mean":
    pxy = pxy.mean(axis=-1)
  else:  # the median is biased low for chi-squared data; SciPy divides by that bias
    even = 2 * np.arange(1, (nseg - 1) // 2 + 1)
    bias = 1 + np.sum(1.0 / (even + 1) - 1.0 / even)
    med = jnp.median(pxy.real, axis=-1)
    if jnp.iscomplexobj(pxy):
      med = med + 1j * jnp.median(pxy.imag, axis=-1)
    pxy = med / bias
  if pxy.ndim and axis != -1:
    pxy = jnp.moveaxis(pxy, -1, axis)
  return f, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided: bool = True, scaling: str = "density",
          axis: int = -1, average: str = "mean"):
  """Power spectral density by Welch's method: (frequencies, Pxx)."""
  f, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
               axis, average)
  return f, pxx.real


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2):
  """Inverse STFT by windowed overlap-add: (times, x)."""
  jnp = _jnp()
  Zxx = jnp.asarray(Zxx)
  if Zxx.ndim < 2:
    raise ValueError("Input stft must be at least 2d!")
  if freq_axis % Zxx.ndim == time_axis % Zxx.ndim:
    raise ValueError("Must specify differing time and frequency axes!")
  z = jnp.moveaxis(Zxx, (freq_axis, time_axis), (-2, -1))
  nseg = z.shape[-1]
  n_default = 2 * (z.shape[-2] - 1) if input_onesided else z.shape[-2]
  nperseg = n_default if nperseg is None else int(nperseg)
  if nperseg < 1:
    raise ValueError("nperseg must be a positive integer")
  nfft = nperseg if nfft is None else int(nfft)
  if nfft < nperseg:
    raise ValueError("FFT length is less than the segment length")
  noverlap = nperseg // 2 if noverlap is None else int(noverlap)
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  step = nperseg - noverlap
  segs = (jnp.fft.irfft(z, n=nfft, axis=-2) if input_onesided
          else jnp.fft.ifft(z, n=nfft, axis=-2))[..., :nperseg, :]
  real_dtype = jnp.finfo(segs.dtype).dtype
  win = _window(window, nperseg, real_dtype)
  segs = jnp.moveaxis(segs * win.sum(), -1, -2) * win  # undo stft's scaling, then window
  length = nperseg + (nseg - 1) * step
  idx = np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]
  x = jnp.zeros(segs.shape[:-2] + (length,), segs.dtype).at[..., idx].add(segs)
  norm = np.zeros(length)
  np.add.at(norm, idx, np.broadcast_to(win.astype(np.float64) ** 2, idx.shape))
  if boundary:
    half = nperseg // 2
    x, norm = x[..., half:length - half], norm[half:length - half]
  x = x / np.where(norm > 1e-10, norm, 1.0).astype(real_dtype)
  if input_onesided:
    x = x.real
  # JAX counts the times along the first axis of x (SciPy the last); they agree for 1-D input.
  return jnp.arange(x.shape[0], dtype=real_dtype) / fs, x
