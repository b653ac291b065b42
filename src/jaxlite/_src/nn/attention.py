"""jax.nn.dot_product_attention: scaled dot-product attention over (B, T, N, H) inputs, with
grouped key/value heads, bias, boolean/causal/local-window/sequence-length masks and residuals."""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.interpreters.ad import stop_gradient_p


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _to_4d(t):
  """Rank < 4 operands gain leading unit axes: (T, N, H) is one batch, as in JAX."""
  t = _jnp().asarray(t)
  return t.reshape((1,) * (4 - t.ndim) + t.shape) if t.ndim < 4 else t


def _check(t, shape, dtype, name):
  """JAX's operand checks: rank, dtype (when given) and every dimension that is not -1."""
  if t is None:
    return
  if t.ndim != len(shape):
    raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
  if dtype is not None and t.dtype != dtype:
    raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
  if any(want not in (-1, got) for want, got in zip(shape, t.shape)):
    raise ValueError(f"{name} shape should be {list(shape)}: but got {t.shape}")


def _keep_mask(t, s, mask, is_causal, window, q_len, kv_len):
  """The boolean (B|1, N|1, T, S) mask of logits that take part, or None when all do."""
  jnp = _jnp()
  keep = None

  def both(m):
    return m if keep is None else jnp.logical_and(keep, m)

  if mask is not None:
    keep = both(mask)
  q_pos = np.arange(t)[:, None]
  k_pos = np.arange(s)[None, :]
  if is_causal:
    keep = both(jnp.asarray((k_pos <= q_pos)[None, None]))
  if window is not None:
    left, right = window
    # Token i attends to keys i-left .. i+right.
    keep = both(jnp.asarray(((q_pos <= k_pos + left) & (q_pos >= k_pos - right))[None, None]))
  if q_len is not None:
    keep = both((jnp.arange(t)[None, :, None] < q_len[:, None, None])[:, None])
  if kv_len is not None:
    keep = both((jnp.arange(s)[None, None, :] < kv_len[:, None, None])[:, None])
  return keep


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
  """softmax(q kᵀ · scale + bias, masked) v over (B, T, N, H) (or (T, N, H)) inputs; key and
  value have K heads, N a multiple of K (grouped-query attention)."""
  from jaxlite._src.nn.functions import softmax
  jnp = _jnp()
  if implementation not in (None, "xla"):
    # 'cudnn' needs an NVIDIA GPU, which this CPU-only runtime never has.
    raise ValueError(f"Unsupported implementation option: {implementation}")
  out_shape = jnp.shape(query)
  q, k, v = _to_4d(query), _to_4d(key), _to_4d(value)
  bias = None if bias is None else _to_4d(bias)
  mask = None if mask is None else _to_4d(mask)
  q_len = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
  kv_len = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
  if isinstance(local_window_size, int):
    local_window_size = (local_window_size, local_window_size)
  b, s, kv_heads, h = k.shape
  _check(v, (b, s, kv_heads, h), k.dtype, "value")
  _check(q, (b, -1, -1, h), k.dtype, "query")
  _check(mask, (-1,) * 4, np.dtype(bool), "mask")
  _check(bias, (-1,) * 4, None, "bias")
  _check(q_len, (b,), np.dtype("int32"), "query_seq_lengths")
  _check(kv_len, (b,), np.dtype("int32"), "key_value_seq_lengths")
  heads, t = q.shape[2], q.shape[1]
  if heads % kv_heads:
    raise ValueError("The number of query heads must be a multiple of key/value heads, but got "
                     f"{heads} vs {kv_heads}")
  if heads != kv_heads:  # each key/value head serves heads // kv_heads query heads
    k = jnp.repeat(k, heads // kv_heads, axis=2)
    v = jnp.repeat(v, heads // kv_heads, axis=2)
  scale = 1.0 / np.sqrt(h) if scale is None else scale
  logits_dtype = jnp.promote_types(q.dtype, np.float32)
  logits = jnp.einsum("BTNH,BSNH->BNTS", q, k, preferred_element_type=logits_dtype)
  logits = logits * jnp.asarray(scale, logits_dtype)
  if bias is not None:
    logits = (logits + bias).astype(logits_dtype)
  keep = _keep_mask(t, s, mask, is_causal, local_window_size, q_len, kv_len)
  if keep is not None:
    # A large finite negative (not -inf) so that fully masked rows stay finite; capped at
    # float32's range because the softmax runs in float32.
    big = min(float(dtypes.finfo(logits_dtype).max), float(np.finfo(np.float32).max))
    logits = jnp.where(keep, logits, jnp.asarray(-0.7 * big, logits_dtype))
  logits = logits.astype(np.float32)
  probs = softmax(logits, axis=-1).astype(k.dtype)
  out = jnp.einsum("BNTS,BSNH->BTNH", probs, v)
  if q_len is not None:  # padded query positions give zeros
    out = out * (jnp.arange(t)[None, :] < q_len[:, None])[:, :, None, None].astype(out.dtype)
  out = out.reshape(out_shape)
  if not return_residual:
    return out
  from jaxlite._src.nn.functions import logsumexp
  lse = jnp.transpose(logsumexp(logits, axis=-1).astype(k.dtype), (0, 2, 1))  # B N T -> B T N
  return out, jnp.reshape(stop_gradient_p.bind(lse), out_shape[:-1])
