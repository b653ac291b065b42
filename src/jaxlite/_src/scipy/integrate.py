"""`jax.scipy.integrate.trapezoid`: the trapezoidal rule along one axis."""
from __future__ import annotations

import operator

from jaxlite._src.numpy.util import check_arraylike


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
  """∫ y by trapezoids: sample spacing from x (1-D or y's shape) or the constant dx."""
  from jaxlite._src.numpy import namespace as jnp
  check_arraylike("trapezoid", y)
  y = jnp.asarray(y)
  if not jnp.issubdtype(y.dtype, jnp.inexact):
    y = y.astype(jnp.result_type(y.dtype, 1.0))
  axis = operator.index(axis) % y.ndim
  y = jnp.moveaxis(y, axis, -1) if axis != y.ndim - 1 else y
  mids = (y[..., 1:] + y[..., :-1]) * 0.5
  if x is None:
    return jnp.sum(mids, axis=-1) * dx
  x = jnp.asarray(x)
  if x.ndim == 1:
    d = x[1:] - x[:-1]
  else:
    x = jnp.moveaxis(x, axis, -1) if axis != x.ndim - 1 else x
    d = x[..., 1:] - x[..., :-1]
  return jnp.sum(mids * d, axis=-1)
