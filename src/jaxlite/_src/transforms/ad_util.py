"""`jax._src.ad_util`: the autodiff utilities libraries import from JAX's internals (lineax
imports `stop_gradient_p` to give it a transpose rule; equinox and optimistix use `Zero`,
`SymbolicZero`, `add_jaxvals`, `zeros_like_aval`, `instantiate`).

Names only: every object is jaxlite's own (interpreters/ad.py, custom_derivatives.py), so a rule a
library registers on `stop_gradient_p` is the rule jaxlite's autodiff reads.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.transforms.custom_derivatives import SymbolicZero
from jaxlite._src.interpreters.ad import (
    Zero, add_any_p, instantiate_zeros, stop_gradient_p, zeros_like_aval)

add_jaxvals_p = add_any_p


def add_jaxvals(x, y):
  """The sum of two tangents of one type (the primitive reverse mode accumulates with)."""
  xs, ys = np.shape(x), np.shape(y)
  if xs != ys:  # add_any adds equal types only: JAX's lax.add error, not NumPy's broadcasting
    raise TypeError(f"add got incompatible shapes for broadcasting: {xs}, {ys}.")
  return add_jaxvals_p.bind(x, y)

__all__ = ["SymbolicZero", "Zero", "add_jaxvals", "add_jaxvals_p", "instantiate",
           "is_undefined_primal", "replace_internal_symbolic_zeros",
           "replace_rule_output_symbolic_zeros", "stop_gradient_p", "zeros_like_aval"]


def instantiate(z):
  """An array for a (symbolic) zero, anything else as it is (JAX's `ad_util.instantiate`)."""
  if type(z) is SymbolicZero:
    return zeros_like_aval(z.aval)
  return instantiate_zeros(z)


def replace_internal_symbolic_zeros(x):
  """A `Zero` as the `SymbolicZero` a custom rule sees; anything else unchanged."""
  return SymbolicZero(x.aval) if type(x) is Zero else x


def replace_rule_output_symbolic_zeros(x):
  """A `SymbolicZero` a custom rule returned as the internal `Zero`; anything else unchanged."""
  return Zero(x.aval) if type(x) is SymbolicZero else x


def is_undefined_primal(x) -> bool:
  from jaxlite._src.interpreters.ad import UndefinedPrimal
  return type(x) is UndefinedPrimal
