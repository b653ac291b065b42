"""Explanations of jit trace-cache misses (`jax_explain_cache_misses=True`), as JAX logs them.

Each miss names the user's call site and compares the new key with the closest previous key of
the same function: input types, input pytree (static arguments included), or tracing context.
"""
from __future__ import annotations

import logging
import os
import sys
import weakref

from jaxlite._src.base import dtypes, tree_util
from jaxlite._src.base.config import _TRACE_CONTEXT_FLAGS

logger = logging.getLogger("jaxlite._src.transforms.jit")
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Definition site -> the functions explained there (held weakly: a dead function's id may be
# reused by the next one defined at the same site, which must still count as another function).
# At most _SEEN_LIMIT sites, oldest dropped first: a new function defined where another was is
# most likely re-created on each call, which defeats the cache.
_SEEN_LIMIT = 1024
_seen_definitions: dict = {}


def _seen_before_here(site, fun) -> bool:
  """Records `fun` at `site`; whether another function was defined there before it."""
  funs = _seen_definitions.pop(site, None)
  seen_other = funs is not None and fun not in funs
  if funs is None:
    while len(_seen_definitions) >= _SEEN_LIMIT:
      del _seen_definitions[next(iter(_seen_definitions))]
    funs = weakref.WeakSet()
  try:
    funs.add(fun)
  except TypeError:  # not weakly referenceable: nothing to remember it by but the site
    pass
  _seen_definitions[site] = funs  # most recent last
  return seen_other


def clear():
  """Forgets the functions seen so far (`jax.clear_caches`)."""
  _seen_definitions.clear()


def _user_frame():
  f = sys._getframe(1)
  while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG_DIR):
    f = f.f_back
  return f


def _column(frame) -> int:
  """0-based column where the frame's current call starts (JAX prints `file:line:col`, or
  `file:line` when it is 0)."""
  positions = list(frame.f_code.co_positions())
  index = frame.f_lasti // 2  # one position per 2-byte code unit
  col = positions[index][2] if index < len(positions) else None
  return 0 if col is None else col


def _defined_at(fun) -> str:
  code = getattr(fun, "__code__", None)
  return f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"


def _leaf_str(sig, other) -> str:
  """`f32[3]`; `({})` (the sharding) when the shapes differ, `{weak_type=…}` when weakness
  does."""
  shape, dtype, weak = sig[:3]
  out = f"{dtypes.short_dtype_name(dtype)}[{','.join(map(str, shape))}]"
  if shape != other[0]:
    out += "({})"
  return out + (f"{{weak_type={weak}}}" if weak != other[2] else "")


def _type_diffs(names, new_sig, old_sig) -> list[str]:
  out = [f"  * at {name}, now {_leaf_str(a, b)} and before {_leaf_str(b, a)}"
         for name, a, b in zip(names, new_sig, old_sig) if a != b]
  if any(a[2] != b[2] for a, b in zip(new_sig, old_sig)):  # one link, after the last line
    out[-1] += "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
  return out


class _Leaf:
  """Stands for an array leaf when rebuilding a cache key's arguments to compare structures."""


class Static:
  """A static argument as a pytree node whose metadata is its value (equal values match)."""

  def __init__(self, static):
    self.static = static


tree_util.register_pytree_node(Static, lambda s: ((), s.static), lambda aux, _: Static(aux))


def _arguments(in_tree, static):
  """(args, kwargs) of a cache key: array leaves as `_Leaf`, statics back in their places."""
  args, kwargs = in_tree.unflatten([_Leaf()] * in_tree.num_leaves)
  args, kwargs = list(args), dict(kwargs)
  for where, value in sorted(static, key=lambda s: (isinstance(s[0], str), s[0])):
    if isinstance(where, str):
      kwargs[where] = Static(value)
    else:
      args.insert(where, Static(value))
  return tuple(args), kwargs


def _tree_diffs(in_tree, static, o_tree, o_static) -> list[str]:
  leaf = str(_Leaf)
  errors = tree_util.equality_errors(_arguments(in_tree, static), _arguments(o_tree, o_static))
  return [(f"  * at input path {tree_util.keystr(path)}, now {a.replace(leaf, 'pytree leaf')} "
           f"and before {b.replace(leaf, 'pytree leaf')}, so {why}")
          for path, a, b, why in errors]


def _context_diffs(new_ctx, old_ctx) -> list[str]:
  return [f"  * {name} differs: now {a} and before {b}"
          for name, a, b in zip(_TRACE_CONTEXT_FLAGS, new_ctx, old_ctx) if a != b]


def explain(fun, fun_name: str, key, previous_keys, arg_names) -> None:
  """Logs one WARNING saying why `key` missed the cache of `fun`."""
  frame = _user_frame()
  col = frame and _column(frame)
  where = (f"{frame.f_code.co_filename}:{frame.f_lineno}{f':{col}' if col else ''} "
           f"({frame.f_code.co_name})" if frame else "<unknown>")
  lines = [f"TRACING CACHE MISS at {where}:"]
  if not previous_keys:
    lines += ["  never seen function:", f"    {fun_name} id={id(fun)} defined at "
              f"{_defined_at(fun)}"]
    if _seen_before_here(_defined_at(fun), fun):
      lines += ["  but seen another function defined on the same line; maybe the function is",
                "  being re-defined repeatedly, preventing caching?"]
  else:
    lines += [f"  for {fun_name} defined at {_defined_at(fun)}",
              "  all previously seen cache keys differ. For the closest previous key:"]
    lines += _closest_reasons(key, previous_keys, arg_names)
  logger.warning("\n".join(lines))


def _closest_reasons(key, previous_keys, arg_names) -> list[str]:
  """The reasons against the closest previous key: fewest differences (one per reason line; for
  input types one per differing shape, dtype or weak type), the earliest key on ties, as JAX."""
  in_tree, sig, static, _, ctx = key[:5]
  best, best_score = None, 0
  for old in previous_keys:
    o_tree, o_sig, o_static, _, o_ctx = old[:5]
    if o_tree != in_tree or o_static != static:  # statics are pytree nodes, as in JAX
      reasons = ["  different input pytree:"] + _tree_diffs(in_tree, static, o_tree, o_static)
      score = len(reasons) - 1
    elif o_ctx != ctx:
      reasons = ["  Tracing context doesn't match, e.g. due to config or context manager."]
      reasons += _context_diffs(ctx, o_ctx)
      score = len(reasons) - 1
    else:
      names = arg_names if len(arg_names) == len(sig) else [f"args[{i}]" for i in
                                                             range(len(sig))]
      reasons = ["  different input types:"] + _type_diffs(names, sig, o_sig)
      score = sum(x != y for a, b in zip(sig, o_sig) for x, y in zip(a, b))
    if best is None or score < best_score:
      best, best_score = reasons, score
  return best or []
