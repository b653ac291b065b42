"""jit's checks of its static and donated arguments: `resolve_argnums` completes and checks
`static_argnums`/`static_argnames`/`donate_argnums`/`donate_argnames` against the function's
signature with JAX's errors, at wrap time as JAX does."""
from __future__ import annotations

import inspect
import operator


def resolve_argnums(fun, static_argnums=(), static_argnames=(), donate_argnums=(),
                    donate_argnames=()):
  """(static_argnums, static_argnames, donate_argnums, donate_argnames) of `jit(fun, ...)`,
  completed and checked against `fun`'s signature as JAX's jit does at wrap time: a number
  given alone infers its name and a name its number (positional-or-keyword parameters only);
  JAX's TypeError for a number or name of the wrong type, its ValueErrors for numbers past the
  positional parameters (none with `*args`), unknown names (none with `**kwargs`),
  positional-only names, and donated static names. A function without a signature (a builtin)
  is taken as given."""
  static = _infer_argnums(fun, static_argnums, static_argnames)
  donate = _infer_argnums(fun, donate_argnums, donate_argnames)
  try:
    sig = inspect.signature(fun)
  except (TypeError, ValueError):
    if donate_argnames and not as_tuple(donate_argnums):
      raise ValueError(f"Getting the signature of function {fun} failed. Pass donate_argnums "
                       "instead of donate_argnames.") from None
    sig = None
  if sig is not None:
    for (nums, names), kind in ((static, "static"), (donate, "donate")):
      _check_argnums(sig, nums, f"{kind}_argnums")
      _check_argnames(sig, names, f"{kind}_argnames")
  if both := set(static[1]) & set(donate[1]):
    raise ValueError("static_argnames and donate_argnames cannot intersect. Argument names "
                     f"{both} appear in both static_argnames and donate_argnames")
  return (tuple(sorted(set(static[0]))), static[1]) + donate


def _index_tuple(x):
  """JAX's `_ensure_index_tuple`: an int or a sequence of ints (its TypeErrors otherwise)."""
  if x is None:
    return ()
  try:
    return (operator.index(x),)
  except TypeError:
    return tuple(map(operator.index, x))


def _str_tuple(x):
  """JAX's `_ensure_str_tuple`: a str or a sequence of strs."""
  if x is None:
    return ()
  if isinstance(x, str):
    return (x,)
  out = tuple(x)
  for s in out:
    if not isinstance(s, str):
      raise TypeError(f"argument is not a string: {s!r}")
  return out


def _infer_argnums(fun, nums, names):
  """(argnums, argnames) with the missing one inferred through the signature, as JAX's
  `infer_argnums_and_argnames`: both given are taken as given."""
  given_nums, given_names = as_tuple(nums) != (), as_tuple(names) != ()
  nums, names = _index_tuple(nums), _str_tuple(names)
  if given_nums == given_names:  # both given, or neither
    return nums, names
  try:
    params = list(inspect.signature(fun).parameters.items())
  except (TypeError, ValueError):
    return nums, names
  pos_kw = inspect.Parameter.POSITIONAL_OR_KEYWORD
  if given_nums:
    names = tuple(k for i, (k, p) in enumerate(params) if p.kind == pos_kw and i in nums)
  else:
    nums = tuple(i for i, (k, p) in enumerate(params) if p.kind == pos_kw and k in names)
  return nums, names


def _check_argnums(sig, nums, what):
  kinds = [p.kind for p in sig.parameters.values()]
  if inspect.Parameter.VAR_POSITIONAL in kinds:
    return  # any number of positional arguments
  n_pos = sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
              for k in kinds)
  if nums and (-min(nums) > n_pos or max(nums) >= n_pos):
    raise ValueError(f"Jitted function has {what}={nums}, but only accepts {n_pos} positional "
                     "arguments.")


def _check_argnames(sig, names, what):
  P = inspect.Parameter
  params = sig.parameters.items()
  positional_only = {k for k, p in params if p.kind in (P.POSITIONAL_ONLY, P.VAR_POSITIONAL)}
  if bad := positional_only & set(names):
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are "
                     "positional-only")
  if any(p.kind == P.VAR_KEYWORD for _, p in params):
    return
  valid = {k for k, p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
  if bad := set(names) - valid:
    raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function does not "
                     "take these args.")


def as_tuple(x):
  """An argnums/argnames option as a tuple (None: none; one int or str: itself)."""
  if x is None:
    return ()
  if isinstance(x, (int, str)):
    return (x,)
  return tuple(x)
