"""jit's arguments: the cache key of each leaf (`leaf_signature`), the value an executable
receives for it (`numpy_value`), static arguments made hashable, argument names for errors.

What the eager fast path, the trace cache and the partitioner agree on about a call's leaves lives
here, apart from the wrapper that uses it (jit_function.py).
"""
from __future__ import annotations

import inspect
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import dtypes
from jaxlite._src.base import tree_util
from jaxlite._src.base.dtypes import check_python_int
from jaxlite._src.state.types import AbstractRef, Ref  # mutable refs are jit arguments too
from jaxlite._src.transforms.call_primitives import _PY_SCALARS, fun_src_info

def has_hi_leaf(args, kwargs) -> bool:
  """Whether a leaf of the arguments is a registered hi value (compat/hijax.py)."""
  hi = core.hitype_avals
  return any(type(x) in hi for x in tree_util.tree_leaves((args, kwargs)))


# Dtypes a NumPy argument keeps whatever jax_enable_x64 says: the eager fast path passes such
# arrays (and scalars) to the executable as they are, as `numpy_value` does.
_FAST_NUMPY_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.float16,
    np.float32, np.complex64))
_FAST_NUMPY_SCALARS = frozenset(d.type for d in _FAST_NUMPY_DTYPES)


def fast_leaf(a, values: list, arrays: list):
  """The signature of one argument leaf on the eager fast path (its value appended to `values`,
  an Array also to `arrays`), or False where the leaf needs the general path."""
  t = type(a)
  if t is core.array_type:
    v = a._value
    arrays.append(a)
    values.append(v)
    return (v.shape, v.dtype, a.weak_type)
  if (t is np.ndarray or t in _FAST_NUMPY_SCALARS) and a.dtype in _FAST_NUMPY_DTYPES:
    values.append(a)  # as `numpy_value` passes it
    return (a.shape, a.dtype, False)
  return False


def leaf_signature(x):
  """The part of a leaf that keys the trace cache: shape, dtype and weak type, and the aval's
  sharding when it has one. Placement is not part of it: a plain array's aval names no device
  (as in JAX, a function is traced once for every device); `_committed_device` places results.
  Dispatch code: reads an Array's buffer field directly (see array.py)."""
  t = type(x)
  if t is core.array_type:
    v = x._value
    d = x._device  # None for most Arrays: the type-name test runs only for placed ones
    if d is not None and type(d).__name__ == "NamedSharding":
      # On Explicit mesh axes the sharding is part of the type: it keys the trace (P('x') and
      # P(None, 'x') arguments trace to different programs with different output types).
      sharding = core.get_aval(x).sharding
      if sharding is not None:
        return (v.shape, v.dtype, x.weak_type, sharding)
    return (v.shape, v.dtype, x.weak_type)
  if t in _PY_SCALARS:
    # Same key as a weak 0-d array of the default dtype: both trace to the same aval.
    return ((), dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x)), t is not bool)
  aval = core.get_aval(x)
  if type(aval) is AbstractRef:
    return aval  # a jax.ref.Ref: its AbstractRef keys the cache (never an array's key)
  vma = getattr(aval, "vma", None)
  if vma:  # a tracer of a shard_map body: the mesh axes it varies over are in its type (the
    # trace inserts pvary casts by them), as JAX keys its traces on the full aval
    return (aval.shape, aval.dtype, aval.weak_type, aval.sharding, vma)
  if aval.sharding is not None:
    return (aval.shape, aval.dtype, aval.weak_type, aval.sharding)
  return (aval.shape, aval.dtype, aval.weak_type)


def numpy_value(x):
  """The NumPy value an executable receives for a flat argument."""
  t = type(x)
  if t is core.array_type:
    return x._value
  if t in _PY_SCALARS:
    dt = dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x))
    if t is int:
      check_python_int(x, dt)
    return np.asarray(x, dt)
  if isinstance(x, np.ndarray) or isinstance(x, np.generic):
    canon = dtypes.canonicalize_dtype(x.dtype)
    return x if canon == x.dtype else np.asarray(x, canon)
  if isinstance(x, core.Tracer):
    from jaxlite._src.base import errors
    raise errors.unexpected_tracer_error(x)
  if isinstance(x, core.Array):  # other concrete arrays (typed PRNG keys) hold `_value` too
    return x._value
  if type(x) is Ref:  # a jax.ref.Ref: the compiled code's kernels mutate it in place
    return x
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def check_leaves(flat, fun, in_tree, path_prefix=None):
  for i, x in enumerate(flat):
    if not core.valid_jaxtype(x):
      paths = tree_util.tree_flatten_with_path(tree_util.tree_unflatten(in_tree, flat))[0]
      path = _arg_path_str(paths[i][0], fun)
      raise TypeError(
          f"Error interpreting argument to {fun} as an abstract array. The problematic value "
          f"is of type {type(x)} and was passed to the function at path {path}.\n"
          "This typically means that a jit-wrapped function was called with a non-array "
          "argument, and this argument was not marked as static using the static_argnums or "
          "static_argnames parameters of jax.jit.")


def _arg_path_str(keypath, fun):
  # keypath is ((args, kwargs) index, arg index, rest...): name the argument like JAX.
  names = _arg_names(fun)
  top, rest = keypath[0], keypath[1:]
  if getattr(top, "idx", None) == 0 and rest:
    idx = rest[0].idx
    if idx >= len(names):  # a `*arys` parameter's entry: `arys[0]`, as JAX names it
      return placement_arg_name(keypath, fun)
    return names[idx] + tree_util.keystr(rest[1:])
  if rest:
    return tree_util.keystr(rest[:1]).strip("[]'") + tree_util.keystr(rest[1:])
  return tree_util.keystr(keypath)


# Argument names per function, held weakly: a strong cache (an lru_cache keyed by the function)
# would keep every traced function, and through it its trace cache, alive (issue 17).
_arg_names_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _arg_names_uncached(fun):
  try:
    sig = inspect.signature(fun)
  except (TypeError, ValueError):
    return ()
  return tuple(p.name for p in sig.parameters.values()
               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _arg_names(fun):
  try:
    names = _arg_names_memo.get(fun)
  except TypeError:  # not weak-referenceable (or unhashable): computed each time
    return _arg_names_uncached(fun)
  if names is None:
    names = _arg_names_memo[fun] = _arg_names_uncached(fun)
  return names

def placement_arg_name(keypath, fun):
  """An argument leaf named as JAX's placement errors do: `x`, `x['a']`, `args[0]` or, for a
  `*xs` parameter, `xs[0]`."""
  names = _arg_names(fun)
  if getattr(keypath[0], "idx", None) == 0 and len(keypath) > 1:
    i = keypath[1].idx
    if i >= len(names):
      try:
        var = next((p.name for p in inspect.signature(fun).parameters.values()
                    if p.kind is p.VAR_POSITIONAL), None)
      except (TypeError, ValueError):
        var = None
      base = f"{var}[{i - len(names)}]" if var else f"args[{i}]"
      return base + tree_util.keystr(keypath[2:])
  return _arg_path_str(keypath, fun)

def check_ref_args(refs, flat, fun, arg_names) -> None:
  """JAX's errors for a Ref passed as two arguments, or passed and also closed over: either
  would alias one buffer under two names in the compiled code."""
  positions, closed_refs = refs
  seen: dict = {}
  for i in positions:
    x = flat[i]
    first = seen.setdefault(id(x), i)
    if first != i:
      names = arg_names()
      raise ValueError(
          "only one reference to a mutable array may be passed as an argument to a function, "
          f"but when tracing {fun_src_info(fun)} for jit the mutable array reference of type "
          f"{core.get_aval(x)} appeared at both {names[first]} and {names[i]}.")
    if any(x is c for c in closed_refs):
      raise ValueError(
          f"when tracing {fun_src_info(fun)} for jit, a mutable array reference of type "
          f"{core.get_aval(x)} was both closed over and passed as the argument "
          f"{arg_names()[i]}")


def check_no_returned_refs(closed, fun, names, out_tree) -> None:
  """JAX's error for a Ref among the outputs, saying where it came from."""
  jaxpr = closed.jaxpr
  for i, v in enumerate(jaxpr.outvars):
    aval = v.aval
    if type(aval) is not AbstractRef:
      continue
    paths = tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(out_tree(), range(len(jaxpr.outvars))))[0]
    path = tree_util.keystr(paths[i][0]) if i < len(paths) else ""
    loc = f" at output tree path result{path}" if path else ""
    origin = ""  # JAX also names the line that made a ref created inside (not recorded here)
    if v in jaxpr.invars:
      origin = ("\n\nThe returned mutable array was passed in as the argument "
                f"{names[jaxpr.invars.index(v)]}.")
    raise ValueError(f"function {fun_src_info(fun)} traced for jit returned a mutable array "
                     f"reference of type {aval}{loc}, but mutable array references cannot be "
                     f"returned.{origin}")


def flat_arg_names(fun, dyn_args, dyn_kwargs, flat, in_tree):
  # JAX's names: the parameter's name and the leaf's path in it (`t[0]`, `d['a']`); keyword
  # arguments follow in sorted order, as they are flattened
  names = _arg_names(fun)
  out = []

  def add(base, tree):
    out.extend(base + tree_util.keystr(path)
               for path, _ in tree_util.tree_flatten_with_path(tree)[0])
  for i, a in enumerate(dyn_args):
    add(names[i] if i < len(names) else f"args[{i}]", a)
  for k in sorted(dyn_kwargs):
    add(k, dyn_kwargs[k])
  return out if len(out) == len(flat) else [None] * len(flat)


class _Static:
  __slots__ = ("val", "_hash")

  def __init__(self, val):
    self.val = val
    self._hash = hash(val)

  def __hash__(self):
    return self._hash

  def __eq__(self, other):
    return type(other) is _Static and type(self.val) is type(other.val) and self.val == other.val

  def __repr__(self):
    return f"Static(val={self.val!r})"


def hashable_static(val):
  try:
    return _Static(val)
  except TypeError as e:
    raise ValueError(
        "Non-hashable static arguments are not supported. An error occurred while trying to "
        f"hash an object of type {type(val)}, {val!r}. The error was:\nTypeError: {e}\n") from None

def clear_arg_names() -> None:
  """Forgets the argument names kept per function (`jax.clear_caches`)."""
  _arg_names_memo.clear()
