"""`jax.api_util`: helpers libraries use to flatten functions for the extension interfaces."""
from __future__ import annotations

from jaxlite._src.base import linear_util as lu
from jaxlite._src.base import tree_util


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
  from jaxlite._src.transforms.call_primitives import fun_src_info
  try:
    src = fun_src_info(fun)
  except Exception:  # any callable: a name is a best effort
    src = getattr(fun, "__name__", repr(fun))
  return lu.DebugInfo(traced_for, src, None, None)


def shaped_abstractify(x):
  from jaxlite._src.transforms.api import _abstractify
  return _abstractify(x)


# --- argument plumbing shared by jit-like wrappers ----------------------------------------------

def safe_map(f, *args):
  """`map` over equal-length sequences, as a list (a length mismatch raises ValueError)."""
  from jaxlite._src.libs.ode import safe_map as _safe_map
  return _safe_map(f, *args)


def _index_tuple(x) -> tuple:
  return (x,) if isinstance(x, int) else tuple(x)


def argnums_partial(f: lu.WrappedFun, dyn_argnums, args, require_static_args_hashable=True):
  """(g, dyn_args): `g(*dyn_args)` calls `f` with the arguments not in `dyn_argnums` fixed to
  their values in `args` (which must be hashable unless told otherwise: they key caches)."""
  dyn_argnums = tuple(i % len(args) if -len(args) <= i < 0 else i
                      for i in _index_tuple(dyn_argnums))
  fixed = []
  for i, arg in enumerate(args):
    if i in dyn_argnums:
      continue
    if require_static_args_hashable:
      try:
        hash(arg)
      except TypeError:
        raise ValueError(
            "Non-hashable static arguments are not supported, as this can lead to unexpected "
            f"cache-misses. Static argument (index {i}) of type {type(arg)} for function "
            f"{f.__name__} is non-hashable.") from None
    fixed.append(arg)
  fixed = tuple(fixed)

  def with_fixed(fun, *dyn_args, **kwargs):
    it_dyn, it_fixed = iter(dyn_args), iter(fixed)
    full = [next(it_dyn) if i in dyn_argnums else next(it_fixed)
            for i in range(len(fixed) + len(dyn_args))]
    return fun(*full, **kwargs)
  return lu.transformation2(with_fixed, f), tuple(args[i] for i in dyn_argnums)


def donation_vector(donate_argnums, donate_argnames, in_tree, kws: bool = True) -> tuple:
  """One bool per leaf of `(args, kwargs)` (or of `args` when not `kws`): donated or not."""
  if kws:
    args_tree, kwargs_tree = in_tree.children()
  else:
    args_tree, kwargs_tree = in_tree, None
  out = []
  for i, arg in enumerate(args_tree.children()):
    out.extend([i in donate_argnums] * arg.num_leaves)
  if kwargs_tree is not None:
    keys = kwargs_tree.node_data()[1]
    for key, val in zip(keys, kwargs_tree.children()):
      out.extend([key in donate_argnames] * val.num_leaves)
  return tuple(out)


def rebase_donate_argnums(donate_argnums, static_argnums) -> tuple[int, ...]:
  """`donate_argnums` renumbered for the argument list with the static arguments removed:
  `rebase_donate_argnums((3, 4), (0, 1)) == (1, 2)`."""
  static, donate = sorted(set(static_argnums)), sorted(set(donate_argnums))
  both = set(static) & set(donate)
  if both:
    raise ValueError(f"`static_argnums` {static} and `donate_argnums` {donate} cannot "
                     f"intersect.")
  return tuple(d - sum(s < d for s in static) for d in donate)


def flatten_axes(name, treedef, axis_tree, *, kws=False, tupled_args=False):
  """The per-leaf axes of `treedef` given `axis_tree`, a tree prefix of it whose leaves (None
  counting as a leaf) apply to every leaf of the matching subtree (vmap's `in_axes` rule)."""
  dummy = tree_util.tree_unflatten(treedef, [object()] * treedef.num_leaves)
  try:
    per_leaf = tree_util.tree_map(
        lambda ax, sub: [ax] * len(tree_util.tree_leaves(sub)), axis_tree, dummy,
        is_leaf=lambda x: x is None)
  except ValueError:
    hint = (f" Note that {name} that are non-trivial pytrees should always be wrapped in a "
            f"tuple representing the argument list.") if tupled_args else ""
    raise ValueError(f"{name} specification must be a tree prefix of the corresponding "
                     f"value, got specification {axis_tree} for value tree {treedef}."
                     f"{hint}") from None
  return [ax for axes in tree_util.tree_leaves(per_leaf, is_leaf=lambda x: isinstance(x, list))
          for ax in axes]
