"""`jax.nn`'s activation and normalization functions, composed from jnp and lax; those JAX
stages as named jit eqns (silu, softplus, log_softmax, elu, …) are internal_jit-wrapped alike.
"""
from __future__ import annotations

import math
import functools
import operator

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.transforms.custom_derivatives import custom_jvp
from jaxlite._src.interpreters.ad import stop_gradient_p
from jaxlite._src.transforms.jit_function import internal_jit
from jaxlite._src.lax import convenience
from jaxlite._src.lax import creation
from jaxlite._src.lax import elementwise_functions as lax
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax.families import accepted_kinds_text, dtype_kind_error
from jaxlite._src.lax import slicing
from jaxlite._src.lax import special
from jaxlite._src.numpy import reductions
from jaxlite._src.numpy.util import check_arraylike, promote_args_inexact


def _jnp():
  from jaxlite._src.numpy import namespace as jnp
  return jnp


def _stop_gradient(x):
  return stop_gradient_p.bind(x)


def _inexact(name, x, bool_op=None, bool_position=None):
  """`x` as an array, integers and bools promoted to a float like jnp's ufuncs (JAX's
  to_inexact: float32 for bools and integers up to 32 bits even under x64).

  JAX's softmax and log1mexp apply a lax op (`bool_op`) to the input before promoting it, so a
  bool input raises that op's dtype error there, not a float result."""
  check_arraylike(name, x)
  jnp = _jnp()
  x = jnp.asarray(x)
  if bool_op is not None and x.dtype == np.bool_:
    raise dtype_kind_error(bool_op, x.dtype, accepted_kinds_text("iufc"), bool_position)
  if not jnp.issubdtype(x.dtype, jnp.inexact):
    x = x.astype(dtypes.to_inexact_dtype(x.dtype))
  return x


def _unpromoted(name, x, axis=None, where=None):
  """`x` as an array in its own dtype: JAX's softmax and log_softmax take the max and subtract
  it in an integer input's dtype (unsigned differences wrap) and promote at `exp`; `-inf`, the
  max's initial value, is cast to that dtype. A bool input raises `sub`'s dtype error, after
  the max has checked `axis` (JAX's order: its max comes first). With `where` the input is
  `jnp.where(where, x, -inf)`, a float, before anything is subtracted: a bool is accepted."""
  check_arraylike(name, x)
  x = _jnp().asarray(x)
  if x.dtype == np.bool_ and where is None:
    if axis is not None:
      _jnp().max(x, axis, initial=-np.inf, keepdims=True)  # a bad axis: the max's ValueError
    raise dtype_kind_error("sub", x.dtype, accepted_kinds_text("iufc"), 0)
  return x


def _nn_jit(fun=None, *, static_argnames=(), name=None):
  """internal_jit whose first argument becomes a jaxlite array first: eagerly, internal_jit
  runs the Python as is, and NumPy inputs would otherwise compute in NumPy's own dtypes."""
  if fun is None:
    return functools.partial(_nn_jit, static_argnames=static_argnames, name=name)

  @functools.wraps(fun)
  def on_array(x, *args, **kwargs):
    check_arraylike(name or fun.__name__.lstrip("_"), x)  # JAX's TypeError for a non-array
    return fun(_jnp().asarray(x), *args, **kwargs)
  return internal_jit(on_array, static_argnames=static_argnames, name=name or fun.__name__)


# --- rectifiers -------------------------------------------------------------------------------

@_nn_jit(name="relu")
def _relu(x):
  return _jnp().maximum(x, 0)


@_nn_jit(name="relu6")
def _relu6(x):
  jnp = _jnp()
  return jnp.minimum(jnp.maximum(x, 0), 6.)


def _with_zero_kink_jvp(name, fn, slope):
  """fn as a custom_jvp whose derivative is `slope(x)` (0 at the kinks, as JAX chooses). The
  tangent is `select(slope, t, full_like(t, 0))` as JAX's rule writes it: the jaxpr (and
  `cost_analysis`, which flax's `tabulate` prints) are JAX's, with no `jnp.where` call."""
  def call(x):
    return fn(x)
  call.__name__ = call.__qualname__ = name
  wrapped = custom_jvp(call)

  def jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return wrapped(x), lax.select(slope(x), t, convenience.full_like(t, 0))
  wrapped.defjvp(jvp)
  return wrapped


relu = _with_zero_kink_jvp("relu", _relu, lambda x: x > 0)
relu6 = _with_zero_kink_jvp("relu6", _relu6, lambda x: (x > 0) & (x < 6))


@_nn_jit
def leaky_relu(x, negative_slope=1e-2):
  jnp = _jnp()
  return jnp.where(x >= 0, x, negative_slope * x)


@_nn_jit
def elu(x, alpha=1.0):
  jnp = _jnp()
  # JAX's evaluation order: the outer comparison first, then the safe input of expm1.
  return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


@_nn_jit
def celu(x, alpha=1.0):
  jnp = _jnp()
  return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


@_nn_jit
def selu(x):
  alpha = 1.6732632423543772848170429916717
  scale = 1.0507009873554804934193349852946
  return scale * elu(x, alpha)


@_nn_jit
def hard_tanh(x):
  jnp = _jnp()
  return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@_nn_jit
def hard_sigmoid(x):
  return relu6(x + 3.) / 6.


@_nn_jit
def hard_silu(x):
  return x * hard_sigmoid(x)


hard_swish = hard_silu


# --- smooth activations -----------------------------------------------------------------------

def sigmoid(x):
  """The logistic function 1 / (1 + exp(-x))."""
  # No promotion: JAX's sigmoid is lax.logistic itself, which rejects integers and bools.
  check_arraylike("sigmoid", x)
  return ew.logistic_p.bind(_jnp().asarray(x))


@_nn_jit
def silu(x):
  return x * sigmoid(x)


swish = silu


@_nn_jit
def softplus(x):
  return _jnp().logaddexp(x, 0)


@_nn_jit
def log_sigmoid(x):
  return -softplus(-x)


@_nn_jit
def soft_sign(x):
  return x / (_jnp().abs(x) + 1)


@_nn_jit
def mish(x):
  return x * _jnp().tanh(softplus(x))


@_nn_jit
def squareplus(x, b=4):
  jnp = _jnp()
  return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@_nn_jit
def sparse_plus(x):
  jnp = _jnp()
  return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@_nn_jit
def sparse_sigmoid(x):
  return 0.5 * _jnp().clip(x + 1.0, 0.0, 2.0)


def gelu(x, approximate: bool = True):
  """The Gaussian error linear unit: tanh approximation, or exact through erfc."""
  # promoted as jnp's ufuncs promote: a weak int stays weak (JAX stages weak_type=True)
  (x,) = promote_args_inexact("gelu", x)
  if approximate:
    sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
    cdf = 0.5 * (1.0 + _jnp().tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
    return x * cdf
  sqrt_half = np.sqrt(0.5).astype(x.dtype)
  # jnp.array copies (a `copy` eqn when traced), as JAX's exact gelu ends.
  return _jnp().array(0.5 * x * special.erfc_p.bind(-x * sqrt_half), dtype=x.dtype)


@_nn_jit
def glu(x, axis: int = -1):
  size = x.shape[axis]
  if size % 2:
    raise AssertionError("axis size must be divisible by 2")
  axis = operator.index(axis) % x.ndim
  x1 = slicing.slice_in_dim(x, 0, size // 2, axis=axis)
  x2 = slicing.slice_in_dim(x, size // 2, size, axis=axis)
  return x1 * sigmoid(x2)


def tanh(x, /):
  return _jnp().tanh(x)


@_nn_jit
def identity(x):
  return x  # already an array (see _nn_jit)


@internal_jit(name="log1mexp")
def _log1mexp(x):
  jnp = _jnp()
  # An integer `x` stays integer until exp/expm1 promote it (`-x` wraps as JAX's does);
  # log 2 is a staged `log` of the weak constant, as in JAX.
  c = jnp.log(2.0)
  return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def _log1mexp_call(x):
  return _log1mexp(x)


_log1mexp_call.__name__ = _log1mexp_call.__qualname__ = "log1mexp"
_log1mexp_rule = custom_jvp(_log1mexp_call)
_log1mexp_rule.defjvps(lambda g, ans, x: g / _jnp().expm1(x))


def log1mexp(x):
  """log(1 - exp(-x)) for x > 0, switching between its two stable forms at log 2: a custom_jvp
  (derivative g / expm1(x)) around a jit named log1mexp, as JAX stages it."""
  check_arraylike("log1mexp", x)
  return _log1mexp_rule(_jnp().asarray(x))


# --- normalizations over an axis --------------------------------------------------------------

def softmax(x, axis=-1, where=None):
  """exp(x) / sum(exp(x)) along `axis`, shifted by the (gradient-stopped) max."""
  jnp = _jnp()
  x = _unpromoted("softmax", x, axis, where)
  x_max = jnp.max(x, axis, where=where, initial=-jnp.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -jnp.inf)
  unnormalized = jnp.exp(x_safe - _stop_gradient(x_max))
  result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
  if where is not None:
    result = jnp.where(where, result, 0)
  return result


@_nn_jit(static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
  jnp = _jnp()
  x = _unpromoted("log_softmax", x, axis, where)
  x_max = jnp.max(x, axis, where=where, initial=-jnp.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -jnp.inf)
  shifted = x_safe - _stop_gradient(x_max)
  shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
  result = shifted - shifted_logsumexp
  if where is not None:
    return jnp.where(where, result, -jnp.inf)
  return result


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
  return reductions.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign,
                              where=where)


@_nn_jit(static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
  jnp = _jnp()
  x = _inexact("logmeanexp", x)
  lse = reductions.logsumexp(x, axis=axis, keepdims=keepdims, where=where)
  count = jnp.sum(jnp.ones_like(x) if where is None else jnp.asarray(where, x.dtype),
                  axis=axis, keepdims=keepdims)
  return lse - jnp.log(count)


@_nn_jit(static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
  """(x - mean) / sqrt(variance + epsilon) along `axis`. An integer `x` keeps its dtype, as in
  JAX: mean promotes it and `square` squares it in the integer type."""
  jnp = _jnp()
  if mean is None:
    mean = jnp.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "stable":  # two passes: the mean square of the centred values
      variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True, where=where)
    elif algorithm == "fast":
      variance = jnp.clip(jnp.mean(jnp.square(x), axis, keepdims=True, where=where)
                          - jnp.square(mean), 0)
    else:
      raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  return jnp.subtract(x, jnp.asarray(mean)) * special_rsqrt(jnp.asarray(variance) + epsilon)


def special_rsqrt(x):
  return ew.rsqrt_p.bind(x)


def normalize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
  """The old name of standardize."""
  return standardize(x, axis, mean, variance, epsilon, where)


# --- one_hot ----------------------------------------------------------------------------------

@internal_jit(static_argnames=("num_classes", "dtype", "axis"), name="_one_hot")
def _one_hot(x, num_classes, *, dtype, axis):
  jnp = _jnp()
  axis = operator.index(axis) % (x.ndim + 1)
  lhs = jnp.expand_dims(x, (axis,))
  rhs_shape = [1] * x.ndim
  rhs_shape.insert(axis, num_classes)
  rhs = creation.iota_p.bind(dtype=x.dtype, shape=tuple(rhs_shape), dimension=axis,
                             sharding=None)
  return (lhs == rhs).astype(dtype)


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
  """x encoded as one-hot vectors of length num_classes along `axis` (out of range: zeros)."""
  check_arraylike("one_hot", x)
  num_classes = core.concrete_or_error(
      operator.index, num_classes,
      "The error arose in jax.nn.one_hot argument `num_classes`.")
  dtype = dtypes.default_float_dtype() if dtype is None else \
      dtypes.check_user_dtype(dtype, "one_hot")
  x = _jnp().asarray(x)
  nd = x.ndim + 1  # the output's rank: `axis` names the new one-hot axis
  if not -nd <= operator.index(axis) < nd:
    raise ValueError(f"one_hot: axis {axis} is out of bounds for array of dimension {nd}")
  return _one_hot(x, num_classes, dtype=np.dtype(dtype), axis=axis)

