"""The fft primitive (complex, inverse, real and inverse-real transforms over trailing dims) and
`lax.fft`, staged as a `jit[name=fft]` eqn like JAX's; it is linear, so its AD rules are FFTs.
"""
from __future__ import annotations

import enum

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax.families import kind_of


class FftType(enum.IntEnum):
  """lax.FftType; printed in jaxprs as its integer value (`fft_type=0`)."""
  FFT = 0
  IFFT = 1
  RFFT = 2
  IRFFT = 3

  def __str__(self):
    return str(int(self))

  __repr__ = enum.Enum.__repr__


_NUMPY_FFTS = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn,
               FftType.RFFT: np.fft.rfftn, FftType.IRFFT: np.fft.irfftn}


def _complex_of(dtype):
  return np.dtype(np.complex128) if dtype in (np.float64, np.complex128) else \
      np.dtype(np.complex64)


def _real_of(dtype):
  return np.dtype(np.float64) if dtype in (np.float64, np.complex128) else np.dtype(np.float32)


def _fft_impl(x, *, fft_type, fft_lengths):
  fft_type = FftType(fft_type)
  x = np.asarray(x)
  k = len(fft_lengths)
  axes = tuple(range(x.ndim - k, x.ndim))
  if x.size == 0 or 0 in fft_lengths:
    return np.zeros(_fft_abstract(core.get_aval(x), fft_type=fft_type,
                                  fft_lengths=fft_lengths).shape, _out_dtype(x.dtype, fft_type))
  if fft_type in (FftType.RFFT, FftType.IRFFT):
    out = _NUMPY_FFTS[fft_type](x, s=fft_lengths, axes=axes)
  else:
    out = _NUMPY_FFTS[fft_type](x, axes=axes)
  return out.astype(_out_dtype(x.dtype, fft_type), copy=False)


def _out_dtype(dtype, fft_type):
  if fft_type == FftType.RFFT:
    return _complex_of(dtype)
  if fft_type == FftType.IRFFT:
    return _real_of(dtype)
  return dtype


def _fft_abstract(x, *, fft_type, fft_lengths):
  fft_type = FftType(fft_type)
  k = len(fft_lengths)
  if not 1 <= k <= 3 or x.ndim < k:
    raise ValueError(f"FFT lengths {tuple(fft_lengths)} must have 1 to 3 entries and at most "
                     f"the operand's rank {x.ndim}")
  want = "f" if fft_type == FftType.RFFT else "c"
  if kind_of(x.dtype) != want:
    kind = "real" if want == "f" else "complex"
    raise TypeError(f"{fft_type.name} requires a {kind} input, got {dtypes.dtype_name(x.dtype)}")
  lead, trail = x.shape[:-k], tuple(x.shape[-k:])
  if fft_type == FftType.RFFT:
    if trail != tuple(fft_lengths):
      raise ValueError(f"RFFT input shape {x.shape} must end with fft_lengths {fft_lengths}")
    shape = lead + tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
  elif fft_type == FftType.IRFFT:
    expect = tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
    if trail != expect:
      raise ValueError(f"IRFFT input shape {x.shape} must end with {expect} for fft_lengths "
                       f"{fft_lengths}")
    shape = lead + tuple(fft_lengths)
  else:
    if trail != tuple(fft_lengths):
      raise ValueError(f"FFT input shape {x.shape} must end with fft_lengths {fft_lengths}")
    shape = x.shape
  return ShapedArray(shape, _out_dtype(x.dtype, fft_type))


fft_p = core.Primitive("fft")
fft_p.def_impl(_fft_impl)
fft_p.def_abstract_eval(_fft_abstract)


def _fft_hlo(ctx, x, *, fft_type, fft_lengths):
  return ctx.op("stablehlo.fft", [x], ctx.aval_out,
                {"fft_type": f"#stablehlo<fft_type {FftType(fft_type).name}>",
                 "fft_length": xla.i64_array(fft_lengths)})


xla.register(fft_p, _fft_hlo)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
  """FFT matrices are symmetric, so FFT and IFFT transpose to themselves; the real transforms
  transpose through their zero-padded (RFFT) or Hermitian-weighted (IRFFT) full-length forms."""
  fft_type = FftType(fft_type)
  if fft_type in (FftType.FFT, FftType.IFFT):
    return fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)
  if fft_type == FftType.RFFT:
    return _rfft_transpose(ct, fft_lengths)
  return _irfft_transpose(ct, fft_lengths)


def _rfft_transpose(ct, fft_lengths):
  """Re(FFTₙ(ct zero-padded along the last axis to its full length))."""
  from jaxlite._src.lax.shape import pad_p
  n = fft_lengths[-1]
  config = ((0, 0, 0),) * (ct.ndim - 1) + ((0, n - ct.shape[-1], 0),)
  full = pad_p.bind(ct, np.zeros((), ct.dtype), padding_config=config)
  out = fft_p.bind(full, fft_type=FftType.FFT, fft_lengths=fft_lengths)
  return ew.real_p.bind(out)


def _irfft_transpose(ct, fft_lengths):
  """RFFT(ct) weighted by 1/n for the bins counted once and 2/n for the mirrored bins."""
  n = fft_lengths[-1]
  size = int(np.prod(fft_lengths))
  out = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
  weights = np.full(n // 2 + 1, 2.0)
  weights[0] = 1.0
  if n % 2 == 0:
    weights[-1] = 1.0
  weights = np.broadcast_to(weights / size, out.shape).astype(out.dtype)
  return ew.mul_p.bind(out, weights)


def _fft_batcher(vals, dims, *, fft_type, fft_lengths):
  (x,), (d,) = vals, dims
  x = batching.moveaxis(x, d, 0)
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


ad.deflinear(fft_p, lambda ct, x, **params: [_fft_transpose(ct, x, **params)])
batching.primitive_batchers[fft_p] = _fft_batcher


@internal_jit(static_argnums=(1, 2), name="fft")
def _fft_jit(x, fft_type, fft_lengths):
  x = _as_input_dtype(x, fft_type)
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


def _as_input_dtype(x, fft_type):
  """Complex transforms take complex input, RFFT real input: convert inside the jit like JAX."""
  dtype = core.get_aval(x).dtype
  want = _real_of(dtype) if fft_type == FftType.RFFT else _complex_of(dtype)
  want = dtypes.canonicalize_dtype(want)
  if dtype == want:
    return x
  return casts.convert_element_type_p.bind(x, new_dtype=want, weak_type=False)


def fft(x, fft_type, fft_lengths):
  """The FFT of `fft_type` (FftType or 'fft', 'ifft', 'rfft', 'irfft') over the trailing
  len(fft_lengths) dims."""
  if isinstance(fft_type, str):
    fft_type = FftType[fft_type.upper()]
  fft_type = FftType(fft_type)
  lengths = tuple(int(n) for n in fft_lengths)
  return _fft_jit(x, fft_type, lengths)
