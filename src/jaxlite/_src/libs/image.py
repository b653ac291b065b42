"""`jax.image`: resampling by separable kernels, one weight matrix per resized axis.

Each resized axis gets an (input, output) weight matrix from the method's kernel (widened when
downsampling with antialias); one einsum contracts them all, as JAX does.
"""
from __future__ import annotations

import enum
import math
from functools import partial

import numpy as np

from jaxlite._src.base import core, dtypes


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


# --- kernels: weight as a function of distance (in input samples) ------------------------------

def _lanczos(radius, x):
  jnp = _jnp()
  y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
  out = jnp.where(x > 1e-3, jnp.divide(y, jnp.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
  return jnp.where(x > radius, 0., out)


def _keys_cubic(x):
  """Keys' cubic with a = -0.5."""
  jnp = _jnp()
  out = ((1.5 * x - 2.5) * x) * x + 1.
  out = jnp.where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
  return jnp.where(x >= 2., 0., out)


def _opencv_cubic(x):
  """The a = -0.75 cubic OpenCV and PyTorch use."""
  jnp = _jnp()
  a = -0.75
  out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
  out = jnp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
  return jnp.where(x >= 2.0, 0.0, out)


def _triangle(x):
  jnp = _jnp()
  return jnp.maximum(0, 1 - jnp.abs(x))


_AREA = object()   # area weights are overlaps of pixel footprints, not a function of distance


class ResizeMethod(enum.Enum):
  """Image resize methods (strings such as 'bilinear' map onto these)."""
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str):
    for method, names in _METHOD_NAMES.items():
      if s in names:
        return method
    raise ValueError(f'Unknown resize method "{s}"')


_METHOD_NAMES = {
    ResizeMethod.NEAREST: ("nearest",),
    ResizeMethod.LINEAR: ("linear", "bilinear", "trilinear", "triangle"),
    ResizeMethod.LANCZOS3: ("lanczos3",),
    ResizeMethod.LANCZOS5: ("lanczos5",),
    ResizeMethod.CUBIC: ("cubic", "bicubic", "tricubic"),
    ResizeMethod.CUBIC_PYTORCH: ("cubic-pytorch", "bicubic-pytorch"),
    ResizeMethod.AREA: ("area",),
}

# method -> (kernel radius in input samples, kernel)
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, partial(_lanczos, 3.)),
    ResizeMethod.LANCZOS5: (5, partial(_lanczos, 5.)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


# --- weights -----------------------------------------------------------------------------------

def _normalize_columns(weights):
  """Columns scaled to sum to one; columns with (almost) no weight become zero."""
  jnp = _jnp()
  total = jnp.sum(weights, axis=0, keepdims=True)
  return jnp.where(jnp.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                   jnp.divide(weights, jnp.where(total != 0, total, 1)), 0)


def compute_weight_mat(input_size, output_size, scale, translation, kernel, antialias: bool,
                       edge_padding: bool, radius):
  """(input_size, output_size) weights mapping input samples to output samples."""
  jnp = _jnp()
  dtype = dtypes.result_type(scale, translation)
  inv_scale = 1. / scale
  kernel_scale = jnp.maximum(inv_scale, 1.) if antialias else 1.
  sample_f = (jnp.arange(output_size, dtype=dtype) + 0.5) * inv_scale \
      - translation * inv_scale - 0.5
  k = 0
  if edge_padding:   # taps past the edge are clamped onto the edge sample (PyTorch's cubic)
    k = radius
    if antialias:
      s = core.concrete_or_error(None, scale,
                                 "Antialiasing with edge padding requires a static scale.")
      k = math.ceil(radius * max(1.0 / float(s), 1.0))
  taps = jnp.arange(-k, input_size + k, dtype=dtype)
  if kernel is _AREA:
    left_out = jnp.arange(output_size, dtype=dtype) * inv_scale - translation * inv_scale
    right_out = left_out + inv_scale
    left_in = jnp.arange(input_size, dtype=dtype)
    weights = jnp.maximum(0.0, jnp.minimum(right_out[None, :], (left_in + 1.0)[:, None])
                          - jnp.maximum(left_out[None, :], left_in[:, None]))
  else:
    weights = kernel(jnp.abs(sample_f[None, :] - taps[:, None]) / kernel_scale)
  if edge_padding:
    rows = jnp.clip(taps.astype(np.int32), 0, input_size - 1)
    cols = jnp.broadcast_to(jnp.arange(output_size)[None, :], (taps.shape[0], output_size))
    folded = jnp.zeros((input_size, output_size), dtype=dtype).at[rows[:, None], cols].add(
        weights)
    return _normalize_columns(folded)
  weights = _normalize_columns(weights)
  inside = jnp.logical_and(sample_f >= -0.5, sample_f <= input_size - 0.5)
  return jnp.where(inside[None, :], weights, 0)


def _scale_and_translate(x, output_shape, spatial_dims, scale, translation, kernel,
                         antialias, precision, edge_padding=False, radius=None):
  if not spatial_dims:
    return x
  jnp = _jnp()
  ndim = len(output_shape)
  operands, out_indices = [], list(range(ndim))
  for i, d in enumerate(spatial_dims):
    d = d % x.ndim
    w = compute_weight_mat(x.shape[d], output_shape[d], scale[i], translation[i], kernel,
                           antialias, edge_padding, radius).astype(x.dtype)
    operands += [w, [d, ndim + i]]
    out_indices[d] = ndim + i
  letters = [chr(ord("a") + i) for i in range(ndim + len(spatial_dims))]
  spec = ",".join("".join(letters[i] for i in idx)
                  for idx in [range(ndim), *operands[1::2]])
  spec += "->" + "".join(letters[i] for i in out_indices)
  return jnp.einsum(spec, x, *operands[0::2], precision=precision)


def _promote_inexact(*xs):
  jnp = _jnp()
  out = []
  for x in xs:
    x = jnp.asarray(x)
    out.append(x if dtypes.issubdtype(x.dtype, np.inexact)
               else x.astype(dtypes.to_inexact_dtype(x.dtype)))
  return out


def _check_rank(shape, image):
  if len(shape) != image.ndim:
    raise ValueError("shape must have length equal to the number of dimensions of x; "
                     f" {shape} vs {image.shape}")


def _method(method):
  return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _kernel_setup(method, antialias):
  """(radius, kernel, edge_padding) for a method; antialiased pytorch-cubic is plain cubic."""
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  return radius, kernel, method == ResizeMethod.CUBIC_PYTORCH and not antialias


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias: bool = True, precision=None):
  """Resamples `image` so output pixel centre y maps to input (y + 0.5 - t) / s - 0.5."""
  from jaxlite._src.lax import namespace as lax
  precision = lax.Precision.HIGHEST if precision is None else precision
  shape = core.canonicalize_shape(shape)
  _check_rank(shape, image)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  radius, kernel, edge_padding = _kernel_setup(method, antialias)
  (image,) = _promote_inexact(image)
  scale, translation = _promote_inexact(scale, translation)
  n = len(spatial_dims)  # JAX only asserts this (a bare AssertionError)
  if scale.shape != (n,) or translation.shape != (n,):
    raise ValueError(f"scale_and_translate: scale and translation must have shape ({n},), one "
                     f"entry per spatial dimension {tuple(spatial_dims)}, got {scale.shape} and "
                     f"{translation.shape}")
  return _scale_and_translate(image, shape, spatial_dims, scale, translation, kernel, antialias,
                              precision, edge_padding, radius)


def _resize_nearest(x, output_shape):
  jnp = _jnp()
  for d, (m, n) in enumerate(zip(x.shape, output_shape)):
    if m == n:
      continue
    offsets = (jnp.arange(n, dtype=np.float32) + 0.5) * m / n
    index = [slice(None)] * x.ndim
    index[d] = jnp.floor(offsets.astype(np.float32)).astype(np.int32)
    x = x[tuple(index)]
  return x


def _resize_impl(image, shape, method, antialias, precision):
  _check_rank(shape, image)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  (image,) = _promote_inexact(image)
  spatial_dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
  radius, kernel, edge_padding = _kernel_setup(method, antialias)
  scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
  return _scale_and_translate(image, shape, spatial_dims, scale, [0.] * len(spatial_dims),
                              kernel, antialias, precision, edge_padding, radius)


_resize_jit = None


def resize(image, shape, method, antialias: bool = True, precision=None):
  """Resizes `image` to `shape` (every axis whose size changes is resampled)."""
  global _resize_jit
  from jaxlite._src.lax import namespace as lax
  from jaxlite._src.transforms.jit_function import internal_jit
  if _resize_jit is None:
    _resize_jit = internal_jit(_resize_impl, static_argnums=(1, 2, 3, 4))
  precision = lax.Precision.HIGHEST if precision is None else precision
  return _resize_jit(image, core.canonicalize_shape(shape), method, antialias, precision)
