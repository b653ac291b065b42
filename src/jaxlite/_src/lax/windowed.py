"""Windowed primitives: conv_general_dilated and the reduce_window family (sum, max, min).

Both run in NumPy as one strided window view of the padded, dilated operand (no Python loops):
convolution as one batched matmul of the im2col patches, reductions as one ufunc reduce.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from jaxlite._src.base import core, dtypes
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.compiler import backend
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import casts
from jaxlite._src.lax import families, reductions, slicing
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax import windowed_lowering
from jaxlite._src.lax.dot import canonicalize_precision
from jaxlite._src.lax.elementwise_functions import asarg


class ConvDimensionNumbers(NamedTuple):
  """Axis positions of (batch, feature, spatial...) in lhs and out, (out, in, spatial...) in rhs."""
  lhs_spec: tuple
  rhs_spec: tuple
  out_spec: tuple


def _ints(xs) -> tuple:
  return tuple(operator.index(x) for x in xs)


def _pairs(padding) -> tuple:
  return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)


# --- shared window arithmetic ------------------------------------------------------------------

def _dilate(d: int, dilation: int) -> int:
  return 0 if d == 0 else 1 + dilation * (d - 1)


def _window_out(padded: int, window: int, stride: int) -> int:
  return max(0, (padded - window) // stride + 1) if padded >= window else 0


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> list:
  """A list (as JAX's: callers concatenate it) of (lo, hi) pairs for 'VALID', 'SAME' or
  'SAME_LOWER' (XLA's convention: extra pad goes high)."""
  kind = padding.upper() if isinstance(padding, str) else padding
  if kind == "VALID":
    return [(0, 0)] * len(in_shape)
  if kind not in ("SAME", "SAME_LOWER"):
    raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', "
                       f"got {padding}.")
  pads = []
  for d, w, s in zip(in_shape, window_shape, window_strides):
    total = max(0, (-(-d // s) - 1) * s + w - d)
    small = total // 2
    pads.append((small, total - small) if kind == "SAME" else (total - small, small))
  return pads


def _padded_view(x, fill, padding, dilation, axes):
  """`x` padded by `padding` (negative crops) and dilated along `axes`, filled with `fill`."""
  config = [(0, 0, 0)] * x.ndim
  for ax, (lo, hi), d in zip(axes, padding, dilation):
    config[ax] = (lo, hi, d - 1)
  if all(c == (0, 0, 0) for c in config):
    return x
  return shape_prims._pad_impl(x, fill, config)


def _windows(xp, window, strides, window_dilation, axes):
  """A view with the window positions along `axes` and the window offsets as trailing axes."""
  dilated = [_dilate(w, wd) for w, wd in zip(window, window_dilation)]
  view = sliding_window_view(xp, dilated, axis=axes)
  index = [slice(None)] * xp.ndim
  for ax, s in zip(axes, strides):
    index[ax] = slice(None, None, s)
  return view[tuple(index) + tuple(slice(None, None, wd) for wd in window_dilation)]


# --- conv_general_dilated ----------------------------------------------------------------------

def _conv_shape(lhs_shape, rhs_shape, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count):
  """The output shape, with JAX's errors for inconsistent operands."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                    f"{len(lhs_shape)} and {len(rhs_shape)}.")
  nsp = len(lhs_shape) - 2
  for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                  ("rhs_dilation", rhs_dilation), ("padding", padding)):
    if len(v) != nsp:
      raise ValueError(f"conv_general_dilated window and {name} must have the same number of "
                       f"dimensions, but got {nsp} and {len(v)}")
  for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                  ("rhs_dilation", rhs_dilation)):
    if any(s <= 0 for s in v):
      raise ValueError(f"conv_general_dilated {name} must be positive, got {tuple(v)}")
  n, c = lhs_shape[lhs_spec[0]], lhs_shape[lhs_spec[1]]
  o, i = rhs_shape[rhs_spec[0]], rhs_shape[rhs_spec[1]]
  g, b = feature_group_count, batch_group_count
  if g > 1 and b > 1:
    raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, got "
                     f"batch_group_count={b} and feature_group_count={g}")
  if c % g:
    raise ValueError("conv_general_dilated feature_group_count must divide lhs feature "
                     f"dimension size, but {g} does not divide {c}.")
  if c // g != i:
    raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                     "feature_group_count must equal the rhs input feature dimension size, but "
                     f"{c} // {g} != {i}.")
  if o % g:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of feature_group_count, but {o} is not a multiple of {g}.")
  if n % b:
    raise ValueError("conv_general_dilated batch_group_count must divide lhs batch dimension "
                     f"size, but {b} does not divide {n}.")
  if o % b:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of batch_group_count, but {o} is not a multiple of {b}.")
  lhs_sp = [lhs_shape[d] for d in lhs_spec[2:]]
  rhs_sp = [rhs_shape[d] for d in rhs_spec[2:]]
  padded = [_dilate(d, ld) + lo + hi
            for d, ld, (lo, hi) in zip(lhs_sp, lhs_dilation, padding)]
  if any(p < 0 for p in padded):
    raise ValueError("Negative padding is larger than the size of the corresponding dimension: "
                     f"got padding={tuple(padding)} for lhs_shape[2:]={tuple(lhs_sp)}")
  spatial = [_window_out(p, _dilate(k, rd), s)
             for p, k, rd, s in zip(padded, rhs_sp, rhs_dilation, window_strides)]
  canonical = [n // b, o, *spatial]
  out = [0] * len(canonical)
  for pos, size in zip(out_spec, canonical):
    out[pos] = size
  return tuple(out)


def _conv_dtype(lhs_dtype, rhs_dtype, preferred_element_type):
  if lhs_dtype != rhs_dtype:
    raise TypeError("lax.conv_general_dilated requires arguments to have the same dtypes, got "
                    f"{dtypes.dtype_name(lhs_dtype)}, {dtypes.dtype_name(rhs_dtype)}.")
  return lhs_dtype if preferred_element_type is None else np.dtype(preferred_element_type)


def _conv_abstract(lhs, rhs, *, precision, preferred_element_type, out_sharding, **params):
  shape = _conv_shape(lhs.shape, rhs.shape, **params)
  dtype = _conv_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
  return core.ShapedArray(shape, dtype, weak)


def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision,
               preferred_element_type, out_sharding):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  dtype = np.result_type(lhs) if preferred_element_type is None else \
      np.dtype(preferred_element_type)
  # Canonical layouts: x is (N, C, spatial...), w is (O, I, spatial...).
  x = np.transpose(np.asarray(lhs), lhs_spec).astype(dtype, copy=False)
  w = np.transpose(np.asarray(rhs), rhs_spec).astype(dtype, copy=False)
  nsp = x.ndim - 2
  axes = tuple(range(2, 2 + nsp))
  n, c = x.shape[:2]
  o, kernel = w.shape[0], w.shape[2:]
  b, g = batch_group_count, feature_group_count
  out_shape = _conv_shape(lhs.shape, rhs.shape, window_strides=window_strides, padding=padding,
                          lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                          dimension_numbers=dimension_numbers, feature_group_count=g,
                          batch_group_count=b)
  spatial = tuple(out_shape[d] for d in out_spec[2:])
  if 0 in out_shape or 0 in kernel or c == 0:
    return np.zeros(out_shape, dtype)
  xp = _padded_view(x, np.zeros((), dtype), padding, lhs_dilation, axes)
  view = _windows(xp, kernel, window_strides, rhs_dilation, axes)
  view = view[(slice(None), slice(None)) + tuple(slice(0, s) for s in spatial)]
  # Groups: N splits as (b, N/b), C as (g, C/g) and O as (b, g, O/(b g)); one of b, g is 1.
  view = view.reshape(b, n // b, g, c // g, *spatial, *kernel)
  perm = (0, 2, 1, *range(4, 4 + nsp), 3, *range(4 + nsp, 4 + 2 * nsp))
  cols = view.transpose(perm).reshape(b, g, (n // b) * math.prod(spatial), -1)
  mat = w.reshape(b, g, o // (b * g), -1).transpose(0, 1, 3, 2)
  out = np.matmul(cols, mat).reshape(b, g, n // b, *spatial, o // (b * g))
  out = out.transpose(2, 0, 1, 3 + nsp, *range(3, 3 + nsp)).reshape(n // b, o, *spatial)
  return np.transpose(out, np.argsort(out_spec))


conv_general_dilated_p = families.primitive("conv_general_dilated", _conv_impl, _conv_abstract)
xla.register(conv_general_dilated_p, windowed_lowering.conv_rule)


def _conv_lhs_transpose(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, **params):
  """The lhs cotangent: a convolution of the stride-dilated cotangent with the flipped kernel."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_shape, rhs_shape = lhs.aval.shape, core.get_aval(rhs).shape
  out_shape = core.get_aval(ct).shape
  kernel = [rhs_shape[d] for d in rhs_spec[2:]]
  pads = []
  for d, k, (lo, hi), s, ld, rd, o in zip(
      [lhs_shape[d] for d in lhs_spec[2:]], kernel, padding, window_strides, lhs_dilation,
      rhs_dilation, [out_shape[d] for d in out_spec[2:]]):
    padded = _dilate(d, ld) + lo + hi
    pads.append(((k - 1) * rd - lo, padded - _dilate(o, s) - hi))
  groups = feature_group_count * batch_group_count
  # Kernel: out features O = (groups, O/groups) give their group factor to the in features.
  kernel = rhs if groups == 1 else _move_group(rhs, rhs_spec[0], rhs_spec[1], groups)
  flipped = shape_prims.rev_p.bind(kernel, dimensions=tuple(rhs_spec[2:]))
  dn = ConvDimensionNumbers(out_spec, (rhs_spec[1], rhs_spec[0], *rhs_spec[2:]), lhs_spec)
  out = conv_general_dilated_p.bind(
      ct, flipped, window_strides=tuple(lhs_dilation), padding=tuple(pads),
      lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
      dimension_numbers=dn, feature_group_count=groups, batch_group_count=1, **params)
  if batch_group_count > 1:
    # Features came out as (groups, C); the group factor belongs to the batch.
    out = _move_group(out, lhs_spec[1], lhs_spec[0], batch_group_count)
  return _cast_like(out, lhs.aval)


def _move_group(x, src, dst, groups):
  """Splits axis `src` as (groups, rest) and merges the group factor into axis `dst` (major)."""
  shape = list(core.get_aval(x).shape)
  split = shape[:src] + [groups, shape[src] // groups] + shape[src + 1:]
  x = shape_prims.reshape_p.bind(x, new_sizes=tuple(split), dimensions=None, sharding=None)
  dst_in_split = dst + (dst > src)
  order = [ax for ax in range(len(split)) if ax != src]
  order.insert(order.index(dst_in_split), src)
  merged = list(shape)
  merged[src] //= groups
  merged[dst] *= groups
  return shape_prims.reshape_p.bind(x, new_sizes=tuple(merged), dimensions=tuple(order),
                                    sharding=None)


def _conv_rhs_transpose(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, **params):
  """The rhs cotangent: lhs convolved with the cotangent as kernel; the group kinds swap."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_shape, rhs_shape = core.get_aval(lhs).shape, rhs.aval.shape
  out_shape = core.get_aval(ct).shape
  pads = []
  for d, k, (lo, hi), s, ld, rd, o in zip(
      [lhs_shape[d] for d in lhs_spec[2:]], [rhs_shape[d] for d in rhs_spec[2:]], padding,
      window_strides, lhs_dilation, rhs_dilation, [out_shape[d] for d in out_spec[2:]]):
    padded = _dilate(d, ld) + lo + hi
    extra = padded - _dilate(o, s) - (k - 1) * rd
    pads.append((lo, hi - extra))
  swap = lambda spec: (spec[1], spec[0], *spec[2:])
  dn = ConvDimensionNumbers(swap(lhs_spec), swap(out_spec), swap(rhs_spec))
  out = conv_general_dilated_p.bind(
      lhs, ct, window_strides=tuple(rhs_dilation), padding=tuple(pads),
      lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
      dimension_numbers=dn, feature_group_count=batch_group_count,
      batch_group_count=feature_group_count, **params)
  return _cast_like(out, rhs.aval)


def _cast_like(x, aval):
  if core.get_aval(x).dtype == aval.dtype:
    return x
  return casts.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type,
                                        sharding=None)


ad.defbilinear(conv_general_dilated_p, _conv_lhs_transpose, _conv_rhs_transpose)


def _canonical_dn(nd):
  spec = tuple(range(nd))
  return ConvDimensionNumbers(spec, spec, spec)


def _to_canonical(x, bdim, spec):
  """`x` as (batch?, spec order...) with a mapped axis moved to the front."""
  if bdim is None:
    return shape_prims.transpose_p.bind(x, permutation=tuple(spec))
  x = batching.moveaxis(x, bdim, 0)
  return shape_prims.transpose_p.bind(x, permutation=(0, *(1 + d for d in spec)))


def _reshape(x, shape):
  return shape_prims.reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _conv_batcher(vals, dims, *, dimension_numbers, feature_group_count, batch_group_count,
                  **params):
  # Everything runs in canonical layout; the mapped axis folds into batch, out-feature or
  # group dims, and comes back out at the front of the result.
  (lhs, rhs), (lhs_dim, rhs_dim) = vals, dims
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  nd = len(lhs_spec)
  v = batching.mapped_size(vals, dims)
  x, w = _to_canonical(lhs, lhs_dim, lhs_spec), _to_canonical(rhs, rhs_dim, rhs_spec)
  b, g = batch_group_count, feature_group_count
  bind = lambda x, w, g, b: conv_general_dilated_p.bind(
      x, w, dimension_numbers=_canonical_dn(nd), feature_group_count=g, batch_group_count=b,
      **params)
  if rhs_dim is None:
    _, n, c, *sp = core.get_aval(x).shape
    x = _reshape(x, (v, b, n // b, c, *sp))
    x = shape_prims.transpose_p.bind(x, permutation=(1, 0, *range(2, 4 + len(sp))))
    out = bind(_reshape(x, (b * v * (n // b), c, *sp)), w, g, b)
    nb, o, *osp = core.get_aval(out).shape
    out = _reshape(out, (v, nb // v, o, *osp))
  elif lhs_dim is None:
    _, o, i, *ksp = core.get_aval(w).shape
    bg = b * g
    w = _reshape(w, (v, bg, o // bg, i, *ksp))
    w = shape_prims.transpose_p.bind(w, permutation=(1, 0, *range(2, 4 + len(ksp))))
    out = bind(x, _reshape(w, (bg * v * (o // bg), i, *ksp)), g, b)
    nb, _, *osp = core.get_aval(out).shape
    out = _reshape(out, (nb, bg, v, o // bg, *osp))
    out = shape_prims.transpose_p.bind(out, permutation=(2, 0, 1, *range(3, 4 + len(osp))))
    out = _reshape(out, (v, nb, o, *osp))
  else:
    # Both mapped: the mapped axis becomes an outer group (of features, or of batches).
    _, n, c, *sp = core.get_aval(x).shape
    _, o, i, *ksp = core.get_aval(w).shape
    if b == 1:
      x = shape_prims.transpose_p.bind(x, permutation=(1, 0, *range(2, nd + 1)))
      x = _reshape(x, (n, v * c, *sp))
    else:
      x = _reshape(x, (v * n, c, *sp))
    out = bind(x, _reshape(w, (v * o, i, *ksp)), g * v if b == 1 else 1,
               1 if b == 1 else b * v)
    nb, _, *osp = core.get_aval(out).shape
    out = _reshape(out, (nb, v, o, *osp))
    out = shape_prims.transpose_p.bind(out, permutation=(1, 0, *range(2, nd + 1)))
  perm = (0, *(1 + int(d) for d in np.argsort(out_spec)))
  return shape_prims.transpose_p.bind(out, permutation=perm), 0


batching.primitive_batchers[conv_general_dilated_p] = _conv_batcher


# --- the conv lax functions --------------------------------------------------------------------

def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
  """ConvDimensionNumbers from None (NCHW/OIHW/NCHW), spec strings, or ConvDimensionNumbers."""
  nd = len(lhs_shape)
  if len(rhs_shape) != nd:
    raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                    f"{len(lhs_shape)} and {len(rhs_shape)}.")
  if dimension_numbers is None:
    return _canonical_dn(nd)
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return ConvDimensionNumbers(*(_ints(s) for s in dimension_numbers))
  if not isinstance(dimension_numbers, (list, tuple)) or len(dimension_numbers) != 3:
    raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                    f"{len(dimension_numbers)}.")
  if not all(isinstance(s, str) for s in dimension_numbers):
    raise TypeError("convolution dimension_numbers elements must be strings, got "
                    f"{tuple(map(type, dimension_numbers))}.")
  lhs, rhs, out = dimension_numbers
  for s in (lhs, rhs, out):
    if len(s) != nd:
      raise TypeError(f"convolution dimension_numbers[i] must have len equal to the ndim of "
                      f"lhs and rhs, got {len(s)} for lhs and rhs shapes {lhs_shape} and "
                      f"{rhs_shape}.")
  spatial = [ch for ch in rhs if ch not in "OI"]
  if sorted(spatial) != sorted(ch for ch in lhs if ch not in "NC") or \
      sorted(spatial) != sorted(ch for ch in out if ch not in "NC"):
    raise TypeError("convolution dimension_numbers must use the same spatial dimension names "
                    f"in lhs, rhs and out, got {dimension_numbers}.")
  return ConvDimensionNumbers(
      (lhs.index("N"), lhs.index("C"), *(lhs.index(ch) for ch in spatial)),
      (rhs.index("O"), rhs.index("I"), *(rhs.index(ch) for ch in spatial)),
      (out.index("N"), out.index("C"), *(out.index(ch) for ch in spatial)))


def _preferred(preferred_element_type):
  if preferred_element_type is None:
    return None
  return dtypes.canonicalize_dtype(np.dtype(preferred_element_type))


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
  """General n-d convolution with strides, padding, dilations, groups and layouts."""
  lhs, rhs = asarg(lhs), asarg(rhs)
  lhs_shape, rhs_shape = np.shape(lhs), np.shape(rhs)
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  nsp = len(lhs_shape) - 2
  lhs_dilation = (1,) * nsp if lhs_dilation is None else _ints(lhs_dilation)
  rhs_dilation = (1,) * nsp if rhs_dilation is None else _ints(rhs_dilation)
  window_strides = _ints(window_strides)
  if isinstance(padding, str):
    if any(d != 1 for d in lhs_dilation):
      raise ValueError("String padding is not implemented for transposed convolution using "
                       "this op. Please either exactly specify the required padding or use "
                       "conv_transpose.")
    window = [_dilate(rhs_shape[d], rd) for d, rd in zip(dn.rhs_spec[2:], rhs_dilation)]
    padding = padtype_to_pads([lhs_shape[d] for d in dn.lhs_spec[2:]], window, window_strides,
                              padding)
  return conv_general_dilated_p.bind(
      lhs, rhs, window_strides=window_strides, padding=_pairs(padding),
      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dn,
      feature_group_count=operator.index(feature_group_count),
      batch_group_count=operator.index(batch_group_count),
      precision=canonicalize_precision(precision),
      preferred_element_type=_preferred(preferred_element_type), out_sharding=out_sharding)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """Convolution in NCHW/OIHW layout without dilation."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  """Convolution in NCHW/OIHW layout with dilations."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
  """Padding of the lhs-dilated convolution that is the gradient of a strided conv: 'SAME'
  gives `s` times the input length, 'VALID' the full correlation (lo = k - 1)."""
  if padding == "SAME":
    pad_len = k + s - 2
    lo = k - 1 - max(0, k - s) // 2
  elif padding == "VALID":
    pad_len = k + s - 2 + max(k - s, 0)
    lo = k - 1
  else:
    raise ValueError("Padding mode must be `SAME` or `VALID`.")
  return lo, pad_len - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
  """The 'deconvolution': a convolution with the lhs dilated by `strides`."""
  lhs, rhs = asarg(lhs), asarg(rhs)
  lhs_shape, rhs_shape = np.shape(lhs), np.shape(rhs)
  nd = len(lhs_shape)
  if dimension_numbers is None:
    if not 2 <= nd <= 5:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    sp = "HWD"[:nd - 2]
    dimension_numbers = ("N" + sp + "C", sp + "IO", "N" + sp + "C")
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  kernel = [rhs_shape[d] for d in dn.rhs_spec[2:]]
  rhs_dilation = (1,) * (nd - 2) if rhs_dilation is None else _ints(rhs_dilation)
  effective = [_dilate(k, r) for k, r in zip(kernel, rhs_dilation)]
  if isinstance(padding, str):
    pads = [_conv_transpose_padding(k, s, padding) for k, s in zip(effective, strides)]
  elif use_consistent_padding:
    # `padding` is the forward conv's: the transpose pads k - 1 - p a side (PyTorch's meaning),
    # so that conv_transpose is the gradient of conv with the same padding and strides.
    pads = [tuple(k - 1 - int(p) for p in pair) for k, pair in zip(effective, padding)]
  else:
    pads = padding
  if transpose_kernel:
    rhs = shape_prims.rev(rhs, dn.rhs_spec[2:])
    dn = ConvDimensionNumbers(dn.lhs_spec, (dn.rhs_spec[1], dn.rhs_spec[0], *dn.rhs_spec[2:]),
                              dn.out_spec)
  return conv_general_dilated(lhs, rhs, (1,) * len(strides), pads, lhs_dilation=strides,
                              rhs_dilation=rhs_dilation, dimension_numbers=dn,
                              precision=precision, preferred_element_type=preferred_element_type)


# --- reduce_window_{sum,max,min} ---------------------------------------------------------------

def _reduce_window_shape(shape, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation):
  nd = len(shape)
  for name, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                  ("padding", padding), ("base_dilation", base_dilation),
                  ("window_dilation", window_dilation)):
    if len(v) != nd:
      raise TypeError(f"reduce_window got the wrong number of {name} for operand: got operand "
                      f"shape {tuple(shape)} with {name} {tuple(v)}.")
  for name, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                  ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
    if any(d <= 0 for d in v):
      raise TypeError(f"reduce_window {name} must have every element be positive, got "
                      f"{tuple(v)}.")
  padded = [_dilate(d, bd) + lo + hi for d, bd, (lo, hi) in zip(shape, base_dilation, padding)]
  if any(p < 0 for p in padded):
    raise ValueError(f"reduce_window padding {tuple(padding)} crops more than the operand "
                     f"shape {tuple(shape)}.")
  return tuple(_window_out(p, _dilate(w, wd), s)
               for p, w, wd, s in zip(padded, window_dimensions, window_dilation,
                                      window_strides))


def _identity(kind, dtype):
  """The reduction's identity in `dtype` (the padding value): the XLA lowering's init value."""
  return windowed_lowering.identity(kind, dtype)[()]


def _reduce_window_rule(kind, ufunc):
  def abstract_eval(x, **params):
    if kind == "sum":
      families.check_dtype_kinds(f"reduce_window_{kind}", x.dtype, "fciu")
    return x.update(shape=_reduce_window_shape(x.shape, **params))

  def impl(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    x = np.asarray(x)
    out_shape = _reduce_window_shape(x.shape, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)
    fill = _identity(kind, x.dtype)
    if 0 in out_shape or 0 in x.shape:
      return np.full(out_shape, fill, x.dtype)
    axes = tuple(range(x.ndim))
    xp = _padded_view(x, fill, padding, base_dilation, axes)
    view = _windows(xp, window_dimensions, window_strides, window_dilation, axes)
    view = view[tuple(slice(0, s) for s in out_shape)]
    window_axes = tuple(range(x.ndim, 2 * x.ndim))
    return ufunc.reduce(view, axis=window_axes, dtype=x.dtype) if kind == "sum" else \
        ufunc.reduce(view, axis=window_axes)
  return abstract_eval, impl


def _reduce_window_prim(kind, ufunc):
  abstract_eval, impl = _reduce_window_rule(kind, ufunc)
  p = families.primitive(f"reduce_window_{kind}", impl, abstract_eval, weak=families.first_weak)
  batching.primitive_batchers[p] = _reduce_window_batcher(p)
  return p


def _reduce_window_batcher(prim):
  def rule(vals, dims, *, window_dimensions, window_strides, padding, base_dilation,
           window_dilation):
    (x,), (bdim,) = vals, dims
    insert = lambda params, v: tuple(params[:bdim]) + (v,) + tuple(params[bdim:])
    return prim.bind(x, window_dimensions=insert(window_dimensions, 1),
                     window_strides=insert(window_strides, 1), padding=insert(padding, (0, 0)),
                     base_dilation=insert(base_dilation, 1),
                     window_dilation=insert(window_dilation, 1)), bdim
  return rule


reduce_window_sum_p = _reduce_window_prim("sum", np.add)
reduce_window_max_p = _reduce_window_prim("max", np.maximum)
reduce_window_min_p = _reduce_window_prim("min", np.minimum)
for _p, _kind in ((reduce_window_sum_p, "sum"), (reduce_window_max_p, "max"),
                  (reduce_window_min_p, "min")):
  xla.register(_p, windowed_lowering.reduce_window_monoid_rule(_kind))


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  # out[o] = sum_w xp[o s + w wd]: so ct_xp[j] = sum_w ctd[j - w wd] with ctd = ct dilated by s,
  # a window sum of ctd padded by the dilated window; x is xp at lo + i bd (strides bd).
  shape = x.aval.shape
  out_shape = core.get_aval(ct).shape
  config = []
  for d, o, w, s, (lo, hi), bd, wd in zip(shape, out_shape, window_dimensions, window_strides,
                                          padding, base_dilation, window_dilation):
    padded = _dilate(d, bd) + lo + hi
    reach = (w - 1) * wd
    config.append((reach - lo, padded - _dilate(o, s) - hi, s - 1))
  zero = np.zeros((), core.get_aval(ct).dtype)[()]
  spread = shape_prims.pad_p.bind(ct, zero, padding_config=tuple(config))
  nd = len(shape)
  return [reduce_window_sum_p.bind(spread, window_dimensions=tuple(window_dimensions),
                                   window_strides=tuple(base_dilation),
                                   padding=((0, 0),) * nd, base_dilation=(1,) * nd,
                                   window_dilation=tuple(window_dilation))]


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _window_gather_indices(shape, window_dimensions, window_strides, padded_shape,
                           window_dilation):
  """Constant indices (out..., W, nd) of every window element into the padded operand."""
  grids = []
  for p, w, s, wd in zip(padded_shape, window_dimensions, window_strides, window_dilation):
    o = _window_out(p, _dilate(w, wd), s)
    grids.append(np.arange(o)[:, None] * s + np.arange(w)[None, :] * wd)
  nd = len(grids)
  outs = [g.shape[0] for g in grids]
  parts = []
  for ax, g in enumerate(grids):
    shp = [1] * (2 * nd)
    shp[ax], shp[nd + ax] = g.shape
    parts.append(np.broadcast_to(g.reshape(shp), (*outs, *window_dimensions)))
  idx = np.stack(parts, -1).reshape(*outs, math.prod(window_dimensions), nd)
  return idx.astype(np.int32)


def _reduce_window_chooser_jvp(kind):
  def jvp(primals, tangents, *, window_dimensions, window_strides, padding, base_dilation,
          window_dilation):
    (x,), (t,) = primals, tangents
    prim = reduce_window_max_p if kind == "max" else reduce_window_min_p
    out = prim.bind(x, window_dimensions=window_dimensions, window_strides=window_strides,
                    padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
    if type(t) is ad.Zero:
      return out, ad.Zero(core.get_aval(out))
    # The tangent at each window's first arg-max: gathers of the padded operand and tangent.
    aval = core.get_aval(x)
    config = tuple((lo, hi, bd - 1) for (lo, hi), bd in zip(padding, base_dilation))
    xp = shape_prims.pad_p.bind(x, _identity(kind, aval.dtype), padding_config=config)
    tp = shape_prims.pad_p.bind(t, np.zeros((), aval.dtype)[()], padding_config=config)
    padded = core.get_aval(xp).shape
    idx = _window_gather_indices(aval.shape, window_dimensions, window_strides, padded,
                                 window_dilation)
    nd = aval.ndim
    dn = slicing.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(nd)),
                                        start_index_map=tuple(range(nd)))
    take = lambda v: slicing.gather(v, idx, dn, (1,) * nd)
    patches = take(xp)
    last = idx.ndim - 2
    arg_prim = reductions.argmax_p if kind == "max" else reductions.argmin_p
    best = arg_prim.bind(patches, axes=(last,), index_dtype=np.dtype(np.int32))
    positions = np.broadcast_to(np.arange(idx.shape[-2], dtype=np.int32), idx.shape[:-1]).copy()
    best = shape_prims.broadcast_in_dim_p.bind(best, shape=idx.shape[:-1],
                                               broadcast_dimensions=tuple(range(last)),
                                               sharding=None)
    mask = casts.convert_element_type_p.bind(ew.eq_p.bind(best, positions),
                                          new_dtype=aval.dtype, weak_type=False, sharding=None)
    chosen = ew.mul_p.bind(take(tp), mask)
    return out, reductions.reduce_sum_p.bind(chosen, axes=(last,), out_sharding=None)
  return jvp


ad.jvp_rules[reduce_window_max_p] = _reduce_window_chooser_jvp("max")
ad.jvp_rules[reduce_window_min_p] = _reduce_window_chooser_jvp("min")


# --- the reduce_window lax function ------------------------------------------------------------

def _monoid_kind(computation, init_value, dtype):
  from jaxlite._src.lax import elementwise_functions as lax_fns
  kinds = {lax_fns.add: "sum", lax_fns.max: "max", lax_fns.min: "min"}
  kind = kinds.get(computation)
  if kind is None:
    return None
  init = init_value.to_concrete_value() if isinstance(init_value, core.Tracer) else init_value
  if init is None:  # an abstract init value: no monoid
    return None
  init = np.asarray(init)
  return kind if init.shape == () and init == _identity(kind, dtype) else None


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Folds `computation` over sliding windows of `operand` (a pytree), from `init_value`.

  add, max and min with their identity as init bind reduce_window_{sum,max,min}; any other
  computation binds reduce_window with the traced computation, as JAX does.
  """
  from jaxlite._src.base import tree_util
  leaves = tree_util.tree_leaves(operand)
  if not leaves:
    raise ValueError("reduce_window needs at least one operand")
  shape = np.shape(leaves[0])
  nd = len(shape)
  window_dimensions = _ints(window_dimensions)
  window_strides = (1,) * nd if window_strides is None else _ints(window_strides)
  base_dilation = (1,) * nd if base_dilation is None else _ints(base_dilation)
  window_dilation = (1,) * nd if window_dilation is None else _ints(window_dilation)
  if len(window_dimensions) != nd:
    raise TypeError("reduce_window got the wrong number of window_dimensions for operand: got "
                    f"operand shape {tuple(shape)} with window_dimensions "
                    f"{window_dimensions}.")
  if isinstance(padding, str):
    window = [_dilate(w, wd) for w, wd in zip(window_dimensions, window_dilation)]
    padding = padtype_to_pads(shape, window, window_strides, padding)
  params = dict(window_dimensions=window_dimensions, window_strides=window_strides,  # noqa: C408
                padding=_pairs(padding), base_dilation=base_dilation,
                window_dilation=window_dilation)
  kind = None
  if len(leaves) == 1 and not isinstance(operand, (tuple, list, dict)):
    operand = asarg(operand)
    # As JAX: the init is checked against the identity of its own dtype (so -inf starts an int
    # max, as equinox's MaxPool does).
    kind = _monoid_kind(computation, init_value, dtypes.dtype_and_weak(init_value)[0])
  if kind is None:
    return _generic_reduce_window(operand, init_value, computation, **params)
  prim = {"sum": reduce_window_sum_p, "max": reduce_window_max_p, "min": reduce_window_min_p}
  return prim[kind].bind(operand, **params)


def _window_function(kind):
  def reduce(operand, window_dimensions, window_strides, padding, base_dilation=None,
             window_dilation=None):
    operand = asarg(operand)
    nd = len(np.shape(operand))
    prim = {"sum": reduce_window_sum_p, "max": reduce_window_max_p,
            "min": reduce_window_min_p}[kind]
    return prim.bind(operand, window_dimensions=_ints(window_dimensions),
                     window_strides=_ints(window_strides), padding=_pairs(padding),
                     base_dilation=(1,) * nd if base_dilation is None else _ints(base_dilation),
                     window_dilation=(1,) * nd if window_dilation is None else
                     _ints(window_dilation))
  reduce.__name__ = f"_reduce_window_{kind}"
  return reduce


_reduce_window_sum = _window_function("sum")
_reduce_window_max = _window_function("max")
_reduce_window_min = _window_function("min")


# --- reduce_window: any computation ------------------------------------------------------------

reduce_window_p = core.Primitive("reduce_window")
reduce_window_p.multiple_results = True
_compiled_computations: dict = {}
_COMPUTATIONS_LIMIT = 256


def _reduce_window_abstract(*avals, jaxpr, consts, **params):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(x.shape != operands[0].shape for x in operands):
    raise TypeError("reduce_window operands must have the same shape, got "
                    f"{[x.shape for x in operands]}")
  shape = _reduce_window_shape(operands[0].shape, **params)
  return [core.ShapedArray(shape, x.dtype, x.weak_type and i.weak_type)
          for x, i in zip(operands, inits)]


def _computation_fn(jaxpr, consts):
  """The backend's executable of the computation; the param holds the open jaxpr, so its
  ClosedJaxpr (which caches the executable) is kept per jaxpr."""
  key = id(jaxpr)
  hit = _compiled_computations.get(key)
  if hit is None or hit[0] is not jaxpr:
    # Bounded (each entry holds its jaxpr: a dict by id grew by one per traced computation for
    # good, issue 17); `jax.clear_caches` empties it (jit_cache.DERIVED_CACHES).
    from jaxlite._src.transforms.jit_cache import bounded_put
    hit = (jaxpr, core.ClosedJaxpr(jaxpr, consts))
    bounded_put(_compiled_computations, key, hit, _COMPUTATIONS_LIMIT)
  return backend.compile_jaxpr(hit[1])


def _reduce_window_impl(*args, jaxpr, consts, window_dimensions, window_strides, padding,
                        base_dilation, window_dilation):
  # As XLA on CPU does, each window folds its real elements (not padding or dilation holes)
  # into the init value; the fold runs over window offsets, vectorized over all windows.
  fn = _computation_fn(jaxpr, consts)
  n = len(args) // 2
  operands = [np.asarray(a) for a in args[:n]]
  inits = [np.asarray(i, x.dtype) for i, x in zip(args[n:], operands)]
  shape = operands[0].shape
  out_shape = _reduce_window_shape(shape, window_dimensions, window_strides, padding,
                                   base_dilation, window_dilation)
  accs = [np.full(out_shape, i, x.dtype) for i, x in zip(inits, operands)]
  if 0 in out_shape or 0 in shape:
    return accs
  axes = tuple(range(len(shape)))

  def windows(x, fill):
    view = _windows(_padded_view(x, fill, padding, base_dilation, axes), window_dimensions,
                    window_strides, window_dilation, axes)
    return view[tuple(slice(0, s) for s in out_shape)]
  views = [windows(x, i) for x, i in zip(operands, inits)]
  real = windows(np.ones(shape, bool), np.False_)
  for offset in np.ndindex(*window_dimensions):
    index = (Ellipsis, *offset)
    folded = fn(*accs, *(v[index] for v in views))
    accs = [np.where(real[index], np.asarray(f, x.dtype), a)
            for f, a, x in zip(folded, accs, operands)]
  return accs


reduce_window_p.def_impl(_reduce_window_impl)
reduce_window_p.def_abstract_eval(_reduce_window_abstract)
xla.register(reduce_window_p, windowed_lowering.reduce_window_rule)


def _generic_reduce_window_batcher(vals, dims, *, window_dimensions, window_strides, padding,
                                   base_dilation, window_dilation, **params):
  n = len(vals) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("reduce_window with batched init values")
  size = batching.mapped_size(vals, dims)
  operands = batching.all_at_front(vals[:n], dims[:n], size)
  outs = reduce_window_p.bind(
      *operands, *vals[n:], window_dimensions=(1, *window_dimensions),
      window_strides=(1, *window_strides), padding=((0, 0), *padding),
      base_dilation=(1, *base_dilation), window_dilation=(1, *window_dilation), **params)
  return outs, [0] * n


batching.primitive_batchers[reduce_window_p] = _generic_reduce_window_batcher


def _generic_reduce_window(operands, init_values, computation, **params):
  from jaxlite._src.base import tree_util
  flat_ops, tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{tree} vs. {init_tree}")
  flat_ops = [asarg(x) for x in flat_ops]
  flat_inits = [asarg(x) for x in flat_inits]
  closed = reductions._trace_computation(computation, tree, flat_inits)
  outs = reduce_window_p.bind(*flat_ops, *flat_inits, jaxpr=closed.jaxpr,
                              consts=tuple(closed.consts), **params)
  return tree_util.tree_unflatten(tree, outs)


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(conv_general_dilated_p, pk.PRODUCT)
