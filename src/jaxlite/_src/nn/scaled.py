"""`jax.nn.scaled_matmul` / `scaled_dot_general`: block-scaled (microscaling) matmuls.

Operands carry one scale per block of the contracting axis; jaxlite dequantizes (value * its
block's scale) and contracts in float32, which is what JAX's non-cuDNN path computes.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from jaxlite._src.base import dtypes


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


@dataclasses.dataclass
class BlockScaleConfig:
  """How one operand is quantized: mode, block size, element and scale dtypes."""
  mode: str
  block_size: int
  data_type: Any
  scale_type: Any
  global_scale: Any
  infer_only: bool


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """(B, M, K) x (B, N, K) -> (B, M, N) with per-block scales (B, M, K/bs), (B, N, K/bs)."""
  jnp = _jnp()
  if not all(np.ndim(x) == 3 for x in (lhs, rhs, lhs_scales, rhs_scales)):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
  (b_a, m_a, k_a), (b_b, n_b, k_b) = lhs.shape, rhs.shape
  if k_a != k_b or b_a != b_b:
    raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {lhs.shape} and {rhs.shape}")
  (b_as, m_as, k_as), (b_bs, n_bs, k_bs) = lhs_scales.shape, rhs_scales.shape
  if k_as != k_bs or b_as != b_bs:
    raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                     f"(K) dimensions, but got shapes {lhs_scales.shape} and "
                     f"{rhs_scales.shape}")
  if m_as != m_a or n_bs != n_b:
    raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                     f"inputs, but got shapes a: {lhs.shape}, b: {rhs.shape}, a_scales: "
                     f"{lhs_scales.shape}, b_scales: {rhs_scales.shape}")
  out_dtype = dtypes.check_user_dtype(preferred_element_type, "scaled_matmul")
  a = _dequantize(lhs, lhs_scales)
  b = _dequantize(rhs, rhs_scales)
  return jnp.einsum("bmk,bnk->bmn", a, b, preferred_element_type=np.float32).astype(out_dtype)


def _dequantize(x, scales):
  jnp = _jnp()
  block = x.shape[-1] // scales.shape[-1]
  return x.astype(np.float32) * jnp.repeat(scales.astype(np.float32), block, axis=-1)


def get_scaled_dot_general_config(mode: str, global_scale=None) -> BlockScaleConfig:
  """The quantization config of 'mxfp8' (fp8 e4m3 in blocks of 32, e8m0 scales) or 'nvfp4'
  (fp4 e2m1 in blocks of 16, fp8 e4m3 scales, a float32 global scale)."""
  import ml_dtypes
  dtypes.load_ml_dtypes()
  if mode == "nvfp4":
    one = _jnp().ones((1,), dtype=np.float32)
    return BlockScaleConfig("nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn,
                            one if global_scale is None else global_scale, False)
  if mode == "mxfp8":
    return BlockScaleConfig("mxfp8", 32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu,
                            None, False)
  raise ValueError(f"Unsupported mode: {mode}")


def _to_bmk(x, contracting, batch):
  """`x` transposed and reshaped to (batch, rows, contracting)."""
  jnp = _jnp()
  order = range(x.ndim)
  b = [d for d in order if d in batch]
  k = [d for d in order if d in contracting]
  m = [d for d in order if d not in contracting and d not in batch]
  size = lambda ds: int(np.prod([x.shape[d] for d in ds], dtype=int))
  return jnp.reshape(jnp.transpose(x, b + m + k), (size(b), size(m), size(k)))


def _e8m0_round_up(x):
  """float32 -> e8m0 exponent bits (uint8), rounding any mantissa up to the next power of 2."""
  jnp = _jnp()
  from jaxlite._src.lax import namespace as lax
  bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
  exp, mant = bits >> 23, bits & 0x7FFFFF
  round_up = (mant > 0) & (exp != 0xFE) & ~((exp == 0) & (mant <= 0x400000))
  return jnp.where(round_up, exp + 1, exp).astype(np.uint8)


def _e8m0_value(bits, dtype):
  jnp = _jnp()
  from jaxlite._src.lax import namespace as lax
  value = lax.bitcast_convert_type(bits.astype(np.uint32) << 23, np.float32)
  tiny = 2. ** -15 if dtype == np.float16 else 2. ** -127
  return jnp.where(value == 0, jnp.array(tiny, np.float32), value).astype(dtype)


def _quantize(x, config):
  """(values in config.data_type, per-block scales in config.scale_type) for (B, M, K) `x`."""
  jnp = _jnp()
  shape, bs = x.shape, config.block_size
  if shape[-1] < bs or shape[-1] % bs:
    raise ValueError(f"scaled_dot_general: the contracting size {shape[-1]} must be a multiple "
                     f"of the block size {bs}")
  x = x.reshape(shape[:-1] + (shape[-1] // bs, bs))
  top = np.array(dtypes.finfo(config.data_type).max, x.dtype)
  block_scale = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / top
  if config.mode == "mxfp8":
    scales_q = _e8m0_round_up(block_scale)
    scaled = x / _e8m0_value(scales_q, x.dtype)
  elif config.mode == "nvfp4":
    x = x / config.global_scale
    block_scale = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / top
    scale_top = np.array(dtypes.finfo(config.scale_type).max, x.dtype)
    scales_q = jnp.clip(block_scale, 0, scale_top).astype(config.scale_type)
    scaled = x / scales_q.astype(np.float32)
  else:
    raise ValueError(f"Unrecognized mode: {config.mode}.")
  x_q = jnp.clip(scaled, -top, top).astype(config.data_type).reshape(shape)
  scales_q = jnp.reshape(scales_q, scales_q.shape[:-1])
  if scales_q.dtype != config.scale_type:   # mxfp8's scales are e8m0 bit patterns
    from jaxlite._src.lax import namespace as lax
    scales_q = lax.bitcast_convert_type(scales_q, config.scale_type)
  return x_q, scales_q


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """lax.dot_general with both operands block-quantized by `configs` (None: a plain dot)."""
  from jaxlite._src.lax import namespace as lax
  if implementation is not None:
    import warnings
    warnings.warn("Backend selector, now ignored. The system chooses the backend "
                  "automatically.", DeprecationWarning, stacklevel=2)
  if configs is None:
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
  jnp = _jnp()
  out_dtype = dtypes.check_user_dtype(preferred_element_type, "scaled_dot_general")
  (lc, rc), (lb, rb) = dimension_numbers
  lhs_q, lhs_s = _quantize(_to_bmk(lhs, lc, lb), configs[0])
  rhs_q, rhs_s = _quantize(_to_bmk(rhs, rc, rb), configs[1])
  nvfp4 = configs[0].mode == "nvfp4"
  out = scaled_matmul(lhs_q, rhs_q, lhs_s, rhs_s, np.float32 if nvfp4 else out_dtype)
  if nvfp4:
    out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(out_dtype)
  keep = lambda x, c, b: [x.shape[d] for d in range(x.ndim) if d not in c and d not in b]
  out_shape = [lhs.shape[d] for d in lb] + keep(lhs, lc, lb) + keep(rhs, rc, rb)
  return jnp.reshape(out, out_shape)
