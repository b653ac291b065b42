"""Shape arithmetic of convolutions and windows, as `jax.lax` exposes it: the permutations of
conv dimension numbers and the output shapes of conv, conv_transpose and reduce_window."""
from __future__ import annotations

import numpy as np

from jaxlite._src.lax.windowed import _conv_transpose_padding, padtype_to_pads


def _stride_dim(d: int, window: int, stride: int) -> int:
  return max(0, (d - window) // stride + 1)


def _dilate_shape(shape, dilation):
  return tuple(0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation))


def conv_general_permutations(dimension_numbers):
  """The (lhs, rhs, out) permutations taking each spec to (N, C, spatial in rhs order...)."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, (a, b) in enumerate(charpairs):
    spec = dimension_numbers[i]
    if not spec.count(a) == spec.count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{a}' and '{b}' exactly once, got {spec}.")
    if len(spec) != len(set(spec)):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, "
                      f"got {spec}.")
  if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
          == set(out_spec) - {"N", "C"}):
    raise TypeError("convolution dimension_numbers elements must each have the same set of "
                    f"spatial characters, got {dimension_numbers}.")

  def perm(spec, pair):
    spatial = [i for i, c in enumerate(spec) if c not in pair]
    if spec is not rhs_spec:  # spatial dims follow the kernel's order
      spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

  return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The NCHW output shape of a conv of an NCHW lhs with an OIHW kernel."""
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError("Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
  if any(p < 0 for p in padded):
    raise ValueError("Negative padding is larger than the size of the corresponding dimension: "
                     f"got padding={pads} for lhs_shape[2:]={tuple(lhs_shape[2:])}")
  space = tuple(_stride_dim(int(p), int(k), int(s))
                for p, k, s in zip(padded, rhs_shape[2:], strides))
  return (int(lhs_shape[0]) // batch_group_count, int(rhs_shape[0])) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
  """The output shape of `conv_general_dilated` (no dilation) in the output spec's layout."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                         window_strides, padding)
  return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
  """The output shape of `conv_transpose` in the output spec's layout."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
  space = [(i - 1) * s - k + 2 + int(np.sum(p))
           for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
  out = (lhs_t[0], rhs_t[0]) + tuple(space)
  return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
  """The output shape of `reduce_window` with explicit (lo, hi) padding."""
  if base_dilation is not None:
    operand_shape = _dilate_shape(operand_shape, base_dilation)
  if window_dilation is not None:
    window_dimensions = _dilate_shape(window_dimensions, window_dilation)
  padded = [d + lo + hi for d, (lo, hi) in zip(operand_shape, padding)]
  return tuple(_stride_dim(p, w, s) for p, w, s in zip(padded, window_dimensions, window_strides))
