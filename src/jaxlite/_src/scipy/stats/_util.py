"""Shared argument handling for the distributions: promote to one inexact dtype, broadcast."""
from __future__ import annotations

from jaxlite._src.base import core
from jaxlite._src.numpy.util import check_arraylike, promote_args_inexact


def jnp():
  from jaxlite._src.numpy import namespace as jnp_module
  return jnp_module


def promote(name: str, *args):
  """The arguments as arrays of one inexact dtype, broadcast together."""
  check_arraylike(name, *args)
  np_ = jnp()
  out = promote_args_inexact(name, *args)
  out = [a if isinstance(a, (core.Tracer, core.array_type)) else np_.asarray(a) for a in out]
  try:
    return np_.broadcast_arrays(*out) if len(out) > 1 else out
  except ValueError:  # JAX's arguments meet in a lax op first: its TypeError
    raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                    f"{', '.join(str(tuple(a.shape)) for a in out)}.") from None


def standardize(name: str, x, loc, scale):
  """(z, scale, x) with z = (x - loc) / scale, all of one dtype."""
  x, loc, scale = promote(name, x, loc, scale)
  return (x - loc) / scale, scale, x
