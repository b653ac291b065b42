"""`jax._src.util`: the small helpers JAX's own code (and its tutorials) use, over builtins."""
from __future__ import annotations

import functools
import math

# `args` cut into pieces of the given lengths and the rest; two lists interleaved as booleans
# say: jaxlite's control flow has them already.
from jaxlite._src.base.list_util import merge_lists, split_list  # noqa: F401


def _as_equal_lists(fn, args):
  """`args` as lists; JAX's ValueError naming `fn` when their lengths differ."""
  args = [list(a) for a in args]
  lengths = tuple(map(len, args))
  for i, n in enumerate(lengths[1:], 1):
    if n != lengths[0]:
      if fn == "safe_map":  # JAX counts safe_map's arguments after the function, from 1
        raise ValueError(f"safe_map() argument {i + 1} is "
                         f"{'shorter' if n < lengths[0] else 'longer'} than argument 1")
      raise ValueError(f"{fn}() argument {i} has length {n} but argument 0 has length "
                       f"{lengths[0]}. All lengths: {lengths}")
  return args


def safe_map(f, *args):
  """`map` that requires its arguments to have equal lengths (JAX's ValueError otherwise)."""
  return list(map(f, *_as_equal_lists("safe_map", args)))


def safe_zip(*args):
  """`zip` that requires its arguments to have equal lengths (JAX's ValueError otherwise)."""
  return list(zip(*_as_equal_lists("safe_zip", args)))


unsafe_map, unsafe_zip = map, zip


def unzip2(xys):
  xs, ys = [], []
  for x, y in xys:
    xs.append(x)
    ys.append(y)
  return tuple(xs), tuple(ys)


def unzip3(xyzs):
  xs, ys, zs = [], [], []
  for x, y, z in xyzs:
    xs.append(x)
    ys.append(y)
    zs.append(z)
  return tuple(xs), tuple(ys), tuple(zs)


def partition_list(bs, lst):
  """`lst` split by the booleans `bs`: (where False, where True)."""
  out = [], []
  for b, x in safe_zip(bs, lst):
    out[b].append(x)
  return out


def prod(xs):
  return math.prod(xs)


def tuple_insert(t, idx, val):
  return t[:idx] + (val,) + t[idx:]


def tuple_delete(t, idx):
  return t[:idx] + t[idx + 1:]


def curry(f):
  return functools.partial(functools.partial, f)
