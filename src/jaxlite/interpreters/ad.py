"""`jax.interpreters.ad`: register JVP and transpose rules of new primitives.

The tables are jaxlite's own (`_src/interpreters/ad.py`), so grad, jvp, vjp and linearize use
what a library puts in them. Rule signatures are JAX's:
  primitive_jvps[p](primals, tangents, **params) -> (primal_out, tangent_out)
  primitive_transposes[p](ct, *args, **params) -> a cotangent (or None) per argument
"""
from __future__ import annotations

from jaxlite._src.transforms import ad_util as _ad_util
from jaxlite._src.interpreters import ad as _ad
from jaxlite._src.interpreters.ad import (  # noqa: F401
    JVPTrace, JVPTracer, UndefinedPrimal, Zero, add_tangents, defbilinear, defjvp, defjvp2,
    instantiate_zeros, is_undefined_primal, primitive_jvps, primitive_transposes, zeros_like_aval)

add_jaxvals, add_jaxvals_p = _ad_util.add_jaxvals, _ad_util.add_jaxvals_p


def deflinear(primitive, transpose_rule) -> None:
  """`primitive` is linear; `transpose_rule(ct, **params)` gives the input cotangents."""
  _ad.deflinear(primitive, lambda ct, *args, **params: transpose_rule(ct, **params))


def deflinear2(primitive, transpose_rule) -> None:
  """Like deflinear, with `transpose_rule(ct, *args, **params)` seeing the (undefined) args."""
  _ad.deflinear(primitive, transpose_rule)


def get_primitive_transpose(p):
  try:
    return primitive_transposes[p]
  except KeyError as err:
    raise NotImplementedError(
        f"Transpose rule (for reverse-mode differentiation) for '{p}' not implemented") from err


__all__ = ["JVPTrace", "JVPTracer", "UndefinedPrimal", "Zero", "add_jaxvals", "add_jaxvals_p",
           "add_tangents", "defbilinear", "defjvp", "defjvp2", "deflinear", "deflinear2",
           "get_primitive_transpose", "instantiate_zeros", "is_undefined_primal",
           "primitive_jvps", "primitive_transposes", "zeros_like_aval"]
