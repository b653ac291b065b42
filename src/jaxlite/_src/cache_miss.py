"""Explanations of jit trace-cache misses (`jax_explain_cache_misses=True`), as JAX logs them.

Each miss names the user's call site and compares the new key with the closest previous key of
the same function: input types, input pytree, or tracing context.
"""
from __future__ import annotations

import logging
import os
import sys

from jaxlite._src import dtypes
from jaxlite._src.config import _TRACE_CONTEXT_FLAGS

logger = logging.getLogger("jaxlite._src.jit")
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_frame():
  f = sys._getframe(1)
  while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG_DIR):
    f = f.f_back
  return f


def _defined_at(fun) -> str:
  code = getattr(fun, "__code__", None)
  return f"{code.co_filename}:{code.co_firstlineno}" if code else "<unknown>"


def _leaf_str(sig) -> str:
  shape, dtype, weak = sig
  return f"{dtypes.short_dtype_name(dtype)}[{','.join(map(str, shape))}]"


def _type_diffs(names, new_sig, old_sig) -> list[str]:
  out = []
  for name, a, b in zip(names, new_sig, old_sig):
    if a == b:
      continue
    if a[:2] == b[:2]:
      out.append(f"  * at {name}, now {_leaf_str(a)}{{weak_type={a[2]}}} and before "
                 f"{_leaf_str(b)}{{weak_type={b[2]}}}"
                 "https://docs.jax.dev/en/latest/type_promotion.html#weak-types")
    elif a[0] == b[0]:
      out.append(f"  * at {name}, now {_leaf_str(a)} and before {_leaf_str(b)}")
    else:
      out.append(f"  * at {name}, now {_leaf_str(a)}({{}}) and before {_leaf_str(b)}({{}})")
  return out


def _context_diffs(new_ctx, old_ctx) -> list[str]:
  return [f"  * {name} differs: now {a} and before {b}"
          for name, a, b in zip(_TRACE_CONTEXT_FLAGS, new_ctx, old_ctx) if a != b]


def explain(fun, fun_name: str, key, previous_keys, arg_names) -> None:
  """Logs one WARNING saying why `key` missed the cache of `fun`."""
  frame = _user_frame()
  where = (f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"
           if frame else "<unknown>")
  lines = [f"TRACING CACHE MISS at {where}:"]
  if not previous_keys:
    lines += ["  never seen function:", f"    {fun_name} id={id(fun)} defined at "
              f"{_defined_at(fun)}"]
  else:
    lines += [f"  for {fun_name} defined at {_defined_at(fun)}",
              "  all previously seen cache keys differ. For the closest previous key:"]
    lines += _closest_reasons(key, previous_keys, arg_names)
  logger.warning("\n".join(lines))


def _closest_reasons(key, previous_keys, arg_names) -> list[str]:
  in_tree, sig, static, options, ctx = key[:5]
  best = None
  for old in previous_keys:
    o_tree, o_sig, o_static, o_options, o_ctx = old[:5]
    if o_tree != in_tree:
      reasons = ["  different input pytree:",
                 f"  * now {in_tree} and before {o_tree}"]
    elif o_ctx != ctx:
      reasons = ["  Tracing context doesn't match, e.g. due to config or context manager."]
      reasons += _context_diffs(ctx, o_ctx)
    elif o_static != static:
      reasons = ["  different value of static args:",
                 f"  * now {static} and before {o_static}"]
    else:
      names = arg_names if len(arg_names) == len(sig) else [f"args[{i}]" for i in
                                                             range(len(sig))]
      reasons = ["  different input types:"] + _type_diffs(names, sig, o_sig)
    if best is None or len(reasons) < len(best):
      best = reasons
  return best or []
