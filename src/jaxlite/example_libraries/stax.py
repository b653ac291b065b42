"""`jax.example_libraries.stax`: layers as (init_fun, apply_fun) pairs and their combinators.

`init_fun(rng, input_shape) -> (output_shape, params)` draws parameters with the same key splits
as JAX, so the same key gives the same parameters; shapes may carry -1 for an unknown batch.
"""
import functools
import math

import numpy as np

from jaxlite import lax, random
import jaxlite.numpy as jnp
from jaxlite.nn import (  # noqa: F401 - re-exported as JAX's stax does
    elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus, standardize)
from jaxlite.nn.initializers import glorot_normal, normal, ones, zeros  # noqa: F401

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# --- shape arithmetic on possibly-unknown (-1) batch sizes, as jax.lax's *_shape_tuple do -------

def _conv_perms(dimension_numbers):
  lhs, rhs, out = dimension_numbers
  spatial = [c for c in rhs if c not in "OI"]
  return ((lhs.index("N"), lhs.index("C"), *(lhs.index(c) for c in spatial)),
          (rhs.index("O"), rhs.index("I"), *(rhs.index(c) for c in spatial)),
          (out.index("N"), out.index("C"), *(out.index(c) for c in spatial)))


def _stride_dim(d, window, stride):
  return max(0, (d - window) // stride + 1) if d >= window else 0


def _conv_general_shape(lhs_shape, rhs_shape, strides, padding, dimension_numbers):
  lhs_perm, rhs_perm, out_perm = _conv_perms(dimension_numbers)
  lhs = [lhs_shape[i] for i in lhs_perm]
  rhs = [rhs_shape[i] for i in rhs_perm]
  pads = lax.padtype_to_pads(lhs[2:], rhs[2:], strides, padding) \
      if isinstance(padding, str) else padding
  space = [_stride_dim(d + lo + hi, k, s)
           for d, k, s, (lo, hi) in zip(lhs[2:], rhs[2:], strides, pads)]
  out = (lhs[0], rhs[0], *space)
  return tuple(out[i] for i in np.argsort(out_perm))


def _conv_transpose_pads(k, s, padding):
  """(lo, hi) padding of the dilated-input conv that transposes a conv with `padding`."""
  if padding == "SAME":
    total = k + s - 2
    lo = k - 1 if s > k - 1 else int(np.ceil(total / 2))
  elif padding == "VALID":
    total = k + s - 2 + max(k - s, 0)
    lo = k - 1
  else:
    raise ValueError(f"Invalid padding mode: {padding}")
  return lo, total - lo


def _conv_transpose_shape(lhs_shape, rhs_shape, strides, padding, dimension_numbers):
  lhs_perm, rhs_perm, out_perm = _conv_perms(dimension_numbers)
  lhs = [lhs_shape[i] for i in lhs_perm]
  rhs = [rhs_shape[i] for i in rhs_perm]
  if isinstance(padding, str):
    padding = [_conv_transpose_pads(k, s, padding) for k, s in zip(rhs[2:], strides)]
  space = [(i - 1) * s - k + 2 + sum(p) for i, k, s, p in zip(lhs[2:], rhs[2:], strides, padding)]
  out = (lhs[0], rhs[0], *space)
  return tuple(out[i] for i in np.argsort(out_perm))


def _reduce_window_shape(shape, window, strides, pads):
  return tuple(_stride_dim(d + lo + hi, w, s)
               for d, w, s, (lo, hi) in zip(shape, window, strides, pads))


# --- parameterised layers ----------------------------------------------------------------------

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
  """A fully-connected layer: inputs @ W + b."""
  def init_fun(rng, input_shape):
    k1, k2 = random.split(rng)
    params = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
    return tuple(input_shape[:-1]) + (out_dim,), params

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return jnp.dot(inputs, W) + b
  return init_fun, apply_fun


def _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape):
  sizes = iter(filter_shape)
  return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(sizes)
          for c in rhs_spec]


def _general_conv_layer(conv, shape_rule):
  """A layer constructor over `conv(inputs, W, strides, padding, dimension_numbers)`."""
  def layer(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
            W_init=None, b_init=normal(1e-6)):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    strides = strides or (1,) * len(filter_shape)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
      kernel_shape = _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape)
      output_shape = shape_rule(input_shape, kernel_shape, strides, padding, dimension_numbers)
      bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
      k1, k2 = random.split(rng)
      return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
      W, b = params
      return conv(inputs, W, strides, padding, dimension_numbers) + b
    return init_fun, apply_fun
  return layer


def _conv(inputs, W, strides, padding, dimension_numbers):
  one = (1,) * len(strides)
  return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                  dimension_numbers=dimension_numbers)


def _conv_transpose(inputs, W, strides, padding, dimension_numbers):
  return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)


GeneralConv = _general_conv_layer(_conv, _conv_general_shape)
GeneralConv.__name__ = "GeneralConv"
GeneralConv.__doc__ = "A convolution layer with any dimension numbers."
Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
GeneralConvTranspose = _general_conv_layer(_conv_transpose, _conv_transpose_shape)
GeneralConvTranspose.__name__ = "GeneralConvTranspose"
GeneralConvTranspose.__doc__ = "A transposed-convolution layer with any dimension numbers."
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
  """Batch normalisation over `axis` with learned shift (beta) and scale (gamma)."""
  axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k1, k2 = random.split(rng)
    beta = beta_init(k1, shape) if center else ()
    gamma = gamma_init(k2, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if center and scale:
      return gamma[ed] * z + beta[ed]
    if center:
      return z + beta[ed]
    return gamma[ed] * z if scale else z
  return init_fun, apply_fun


# --- parameter-free layers ---------------------------------------------------------------------

def elementwise(fun, **fun_kwargs):
  """A layer applying `fun(inputs, **fun_kwargs)`."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _insert_unit_axes(window, strides, spec):
  non_spatial = (0, len(window) + 1) if spec is None else (spec.index("N"), spec.index("C"))
  for i in sorted(non_spatial):
    window = window[:i] + (1,) + window[i:]
    strides = strides[:i] + (1,) + strides[i:]
  return window, strides


def _pooling_layer(reducer, init_val, rescaler=None):
  def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
    """A pooling layer; `spec` names the N and C axes (default: first and last)."""
    strides = strides or (1,) * len(window_shape)
    rescale = rescaler(window_shape, strides, padding) if rescaler else None
    window, full_strides = _insert_unit_axes(tuple(window_shape), tuple(strides), spec)

    def init_fun(rng, input_shape):
      pads = lax.padtype_to_pads(input_shape, window, full_strides, padding)
      return _reduce_window_shape(input_shape, window, full_strides, pads), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, window, full_strides, padding)
      return rescale(out, inputs, spec) if rescale else out
    return init_fun, apply_fun
  return PoolingLayer


def _normalize_by_window_size(dims, strides, padding):
  def rescale(outputs, inputs, spec):
    non_spatial = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
    spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
    one = jnp.ones(spatial_shape, dtype=inputs.dtype)
    window_sizes = lax.reduce_window(one, 0., lax.add, dims, strides, padding)
    for i in sorted(non_spatial):
      window_sizes = jnp.expand_dims(window_sizes, i)
    return outputs / window_sizes
  return rescale


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)
AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


def _flatten():
  """Flattens all but the leading (batch) axis."""
  def init_fun(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


def _identity():
  """Returns its input."""
  return elementwise(lambda x: x)


Flatten = _flatten()
Identity = _identity()


def FanOut(num):
  """Copies its input into a list of `num` outputs."""
  def init_fun(rng, input_shape):
    return [input_shape] * num, ()

  def apply_fun(params, inputs, **kwargs):
    return [inputs] * num
  return init_fun, apply_fun


def _fan_in_sum():
  """Sums a list of inputs."""
  def init_fun(rng, input_shape):
    return input_shape[0], ()

  def apply_fun(params, inputs, **kwargs):
    return sum(inputs)
  return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
  """Concatenates a list of inputs along `axis`."""
  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    size = sum(shape[ax] for shape in input_shape)
    return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate, mode="train"):
  """Keeps each input with probability `rate` (scaled by 1/rate) when `mode == 'train'`."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get("rng", None)
    if rng is None:
      raise ValueError(
          "Dropout layer requires apply_fun to be called with a PRNG key argument. That is, "
          "instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, rng)` "
          "where `rng` is a PRNG key (e.g. from `jax.random.key`).")
    if mode != "train":
      return inputs
    keep = random.bernoulli(rng, rate, inputs.shape)
    return jnp.where(keep, inputs / rate, 0)
  return init_fun, apply_fun


# --- combinators -------------------------------------------------------------------------------

def serial(*layers):
  """Composes layers one after another; each gets its own split of the key."""
  nlayers = len(layers)
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, param = init(layer_rng, input_shape)
      params.append(param)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
    for fun, param, r in zip(apply_funs, params, rngs):
      inputs = fun(param, inputs, rng=r, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers):
  """Applies the i-th layer to the i-th input of a sequence (pair with FanOut / FanInSum)."""
  nlayers = len(layers)
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    rngs = random.split(rng, nlayers)
    # a zip, as JAX returns: callers unpack it into (output_shapes, params)
    return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
  return init_fun, apply_fun


def shape_dependent(make_layer):
  """Delays building a layer until the input shape is known: `make_layer(shape)` -> layer."""
  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun
