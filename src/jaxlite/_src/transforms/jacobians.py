"""The Jacobians (jacfwd, jacrev, hessian): vmapped JVPs and VJPs over a standard basis, their
rows split over the inputs' or outputs' leaves with lax ops, so this module stands above lax.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from jaxlite._src.compat import traceback_util
from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.lax import casts, elementwise
from jaxlite._src.lax import elementwise_functions as lax_fns
from jaxlite._src.lax import shape as lax_shape
from jaxlite._src.lax.creation import iota_p
from jaxlite._src.transforms.ad_api import (
    _argnums_partial, _as_array, _check_argnums, _check_input_dtype_revderiv,
    _check_output_dtype_revderiv, jvp, vjp)
from jaxlite._src.transforms.vmap_api import vmap

# --- Jacobians ---------------------------------------------------------------------------------


def _vmap(fun, **kw):
  return vmap(fun, **kw)


def _std_basis(pytree):
  """An identity matrix split over `pytree`'s leaves: leaf i gets shape (n,) + leaf.shape.
  Staged, it is built from iotas as jnp.eye stages it (JAX's jaxpr); eagerly, by NumPy."""
  leaves = tree_util.tree_leaves(pytree)
  n = sum(int(np.prod(np.shape(x), dtype=np.int64)) for x in leaves)
  dt = dtypes.result_type(*leaves) if leaves else np.float32
  if core.staging_trace(core.current_trace()) is None:
    return _unravel(pytree, 1, np.eye(n, dtype=dt))
  int_t = dtypes.default_int_dtype()
  rows = iota_p.bind(dtype=int_t, shape=(n, n), dimension=0, sharding=None)
  cols = iota_p.bind(dtype=int_t, shape=(n, n), dimension=1, sharding=None)
  mask = elementwise.eq_p.bind(elementwise.add_p.bind(rows, dtypes.TypedInt(0, int_t)), cols)
  eye = casts.convert_element_type_p.bind(mask, new_dtype=np.dtype(dt), weak_type=False)
  return _unravel(pytree, 1, eye, staged_cast=True)


def _unravel(pytree, axis, arr, example=None, staged_cast=False):
  """Splits `arr`'s axis over `pytree`'s leaves, each piece reshaped to hold a leaf's shape
  and cast to the dtype and weak type of `example` (of the leaf when None), as JAX does (one
  `split`, then a reshape where the shape changes and a cast; `staged_cast`: see
  _possible_downcast)."""
  leaves, treedef = tree_util.tree_flatten(pytree)
  arr_shape = tuple(np.shape(arr))
  axis %= len(arr_shape)
  sizes = [int(np.prod(np.shape(leaf), dtype=np.int64)) for leaf in leaves]
  if isinstance(arr, np.ndarray):
    pieces = np.split(arr, np.cumsum(sizes[:-1]), axis=axis)
  else:
    pieces = lax_shape.split_p.bind(arr, sizes=tuple(np.int64(n) for n in sizes), axis=axis)
  parts = []
  for leaf, piece in zip(leaves, pieces):
    shape = arr_shape[:axis] + tuple(np.shape(leaf)) + arr_shape[axis + 1:]
    piece = piece.reshape(shape) if isinstance(piece, np.ndarray) else \
        lax_shape.reshape(piece, shape)
    parts.append(_possible_downcast(piece, leaf if example is None else example, staged_cast))
  return tree_util.tree_unflatten(treedef, parts)


def _possible_downcast(x, example, staged_cast=False):
  """`x` cast to `example`'s dtype and weak type. With `staged_cast` a tracer's cast is staged
  even when it changes nothing: JAX's basis pieces carry a sharding spec that never equals the
  piece's own (`P([None], ...)`), so its jaxpr keeps those casts and forwards the others."""
  ex = core.get_aval(_as_array(example))
  if np.dtype(x.dtype).kind == "c" and ex.dtype.kind != "c":
    x = lax_fns.real(x) if not isinstance(x, np.ndarray) else x.real
  if staged_cast and isinstance(x, core.Tracer):
    return casts.convert_element_type_p.bind(x, new_dtype=ex.dtype, weak_type=bool(ex.weak_type))
  return lax_fns._convert_element_type(x, ex.dtype, ex.weak_type)


def _check_input_dtype_jacfwd(holomorphic, x):
  dt = core.get_aval(_as_array(x)).dtype
  if holomorphic:
    if not dtypes.issubdtype(dt, np.complexfloating):
      raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, but "
                      f"got {dtypes.dtype_name(dt)}.")
  elif not dtypes.issubdtype(dt, np.floating):
    raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                    f"np.floating), but got {dtypes.dtype_name(dt)}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex inputs or integer inputs, use "
                    "jax.jvp directly.")


def _check_output_dtype_jacfwd(holomorphic, x):
  dt = core.get_aval(x).dtype
  if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, but got "
                    f"{dtypes.dtype_name(dt)}.")


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
  """The Jacobian of `fun` by forward mode: one JVP per input element, vectorized."""
  argnums = _check_argnums(argnums)

  @functools.wraps(fun)  # `__wrapped__`, as JAX's (equinox looks through it)
  @traceback_util.api_boundary
  def jacfun(*args, **kwargs):
    f_partial, dyn_args = _argnums_partial(fun, argnums, args, kwargs)
    tree_util.tree_map(functools.partial(_check_input_dtype_jacfwd, holomorphic), dyn_args)
    dyn_args = tree_util.tree_map(_as_array, dyn_args)

    def pushfwd(tangents):
      return jvp(f_partial, dyn_args, tangents, has_aux=has_aux)
    out_axes = (None, -1, None) if has_aux else (None, -1)
    outs = _vmap(pushfwd, out_axes=out_axes)(_std_basis(dyn_args))
    y, jac = outs[0], outs[1]
    tree_util.tree_map(functools.partial(_check_output_dtype_jacfwd, holomorphic), y)
    example = dyn_args[0] if isinstance(argnums, int) else dyn_args
    jac_tree = tree_util.tree_map(lambda out_leaf, arr: _unravel(example, -1, arr, out_leaf),
                                  y, jac)
    return (jac_tree, outs[2]) if has_aux else jac_tree

  return jacfun


def _check_output_dtype_jacrev(holomorphic, x):
  _check_output_dtype_revderiv("jacrev", holomorphic, x)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
  """The Jacobian of `fun` by reverse mode: one VJP per output element, vectorized."""
  argnums = _check_argnums(argnums)

  @functools.wraps(fun)  # `__wrapped__`, as JAX's (equinox looks through it)
  @traceback_util.api_boundary
  def jacfun(*args, **kwargs):
    f_partial, dyn_args = _argnums_partial(fun, argnums, args, kwargs)
    tree_util.tree_map(functools.partial(_check_input_dtype_revderiv, "jacrev", holomorphic,
                                         allow_int), dyn_args)
    if has_aux:
      y, pullback, aux = vjp(f_partial, *dyn_args, has_aux=True)
    else:
      y, pullback = vjp(f_partial, *dyn_args)
    tree_util.tree_map(functools.partial(_check_output_dtype_jacrev, holomorphic), y)
    jac = _vmap(pullback)(_std_basis(y))
    jac = jac[0] if isinstance(argnums, int) else jac
    example = dyn_args[0] if isinstance(argnums, int) else dyn_args
    jac_tree = tree_util.tree_map(lambda in_leaf, arr: _unravel(y, 0, arr, in_leaf), example,
                                  jac)
    jac_tree = tree_util.tree_transpose(tree_util.tree_structure(example),
                                        tree_util.tree_structure(y), jac_tree)
    return (jac_tree, aux) if has_aux else jac_tree

  return jacfun


jacobian = jacrev


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
  """The Hessian of scalar `fun`: jacfwd of jacrev."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)
