"""Ravel a pytree of arrays into one flat vector and get back the function that restores the
tree (dtypes and shapes included): `jax.flatten_util` (re-exported by `jaxlite.flatten_util`),
also under JAX's internal name `jax._src.flatten_util` (blackjax imports it from there)."""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.base import tree_util
from jaxlite._src.lax import namespace as lax

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
  """(1-D concatenation of every leaf, promoted to their common dtype; the inverse function).

  An empty pytree ravels to an empty float32 vector."""
  leaves, treedef = tree_util.tree_flatten(pytree)
  flat, unravel_list = _ravel_list(leaves)
  return flat, functools.partial(_unravel_pytree, treedef, unravel_list)


def _empty_f32():
  from jaxlite._src.numpy import creation
  return creation.zeros((0,), np.float32)


def _unravel_pytree(treedef, unravel_list, flat):
  return tree_util.tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves: list) -> tuple[Any, Callable]:
  if not leaves:
    return _empty_f32(), lambda _: []
  # canonical dtypes, as JAX's dtypes.dtype: a NumPy float64 leaf is float32 without x64, so
  # unravel casts nothing (and warns of nothing) that the ravel did not
  from_dtypes = tuple(dtypes.canonicalize_dtype(dtypes.dtype_and_weak(x)[0]) for x in leaves)
  to_dtype = dtypes.result_type(*from_dtypes)
  sizes = tuple(int(np.size(x)) for x in leaves)
  shapes = tuple(np.shape(x) for x in leaves)
  flat = lax.concatenate([lax.reshape(lax.convert_element_type(x, to_dtype), (np.size(x),))
                          for x in leaves], dimension=0)
  if all(d == to_dtype for d in from_dtypes):  # one dtype: unravel keeps the vector's, as JAX
    return flat, functools.partial(_unravel_single_dtype, sizes, shapes)
  return flat, functools.partial(_unravel_list, sizes, shapes, from_dtypes, to_dtype)


def _unravel_single_dtype(sizes, shapes, flat) -> list:
  return [lax.reshape(c, s) for c, s in zip(lax.split(flat, sizes), shapes)]


def _unravel_list(sizes, shapes, from_dtypes, to_dtype, flat) -> list:
  flat_dtype = dtypes.dtype_and_weak(flat)[0]
  if any(d != to_dtype for d in from_dtypes) and flat_dtype != to_dtype:
    # mixed dtypes would be silently cast back, so the vector's dtype must be the promoted one
    raise TypeError(f"unravel function given array of dtype {flat_dtype}, but expected dtype "
                    f"{to_dtype}")
  chunks = lax.split(flat, sizes)
  return [lax.convert_element_type(lax.reshape(c, s), d)
          for c, s, d in zip(chunks, shapes, from_dtypes)]
