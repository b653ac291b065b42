"""`jax.api_util`: helpers libraries use to flatten functions for the extension interfaces."""
from __future__ import annotations

from jaxlite._src import linear_util as lu
from jaxlite._src import tree_util


def _flatten_fun(f, store, in_tree, *args_flat):
  py_args, py_kwargs = tree_util.tree_unflatten(in_tree, args_flat)
  ans = f(*py_args, **py_kwargs)
  flat, out_tree = tree_util.tree_flatten(ans)
  store.store(out_tree)
  return flat


def flatten_fun(f: lu.WrappedFun, in_tree):
  """`f` taking the leaves of `(args, kwargs)` and returning its output's leaves."""
  return lu.transformation_with_aux2(_flatten_fun)(f, in_tree)


def _flatten_fun_nokwargs(f, store, in_tree, *args_flat):
  py_args = tree_util.tree_unflatten(in_tree, args_flat)
  flat, out_tree = tree_util.tree_flatten(f(*py_args))
  store.store(out_tree)
  return flat


def flatten_fun_nokwargs(f: lu.WrappedFun, in_tree):
  return lu.transformation_with_aux2(_flatten_fun_nokwargs)(f, in_tree)


def debug_info(traced_for: str, fun, args, kwargs, *, static_argnums=(),
               static_argnames=()) -> lu.DebugInfo:
  """Where `fun` comes from, for messages about tracing it."""
  from jaxlite._src.jit_function import fun_src_info
  try:
    src = fun_src_info(fun)
  except Exception:  # any callable: a name is a best effort
    src = getattr(fun, "__name__", repr(fun))
  return lu.DebugInfo(traced_for, src, None, None)


def shaped_abstractify(x):
  from jaxlite._src.api import _abstractify
  return _abstractify(x)
