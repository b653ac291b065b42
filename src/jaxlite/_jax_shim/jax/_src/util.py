"""`jax._src.util`: the small helpers JAX's own code (and its tutorials) use, over builtins."""
from __future__ import annotations

import functools
import math


def safe_map(f, *args):
  """`map` that requires its arguments to have equal lengths (JAX's ValueError otherwise)."""
  args = list(map(list, args))
  n = len(args[0])
  for arg in args[1:]:
    if len(arg) != n:
      raise ValueError(f"length mismatch: {list(map(len, args))}")
  return list(map(f, *args))


def safe_zip(*args):
  """`zip` that requires its arguments to have equal lengths (JAX's ValueError otherwise)."""
  args = list(map(list, args))
  n = len(args[0])
  for arg in args[1:]:
    if len(arg) != n:
      raise ValueError(f"length mismatch: {list(map(len, args))}")
  return list(zip(*args))


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


def split_list(args, ns):
  """`args` cut into pieces of lengths `ns`, and the rest."""
  args = list(args)
  out = []
  for n in ns:
    out.append(args[:n])
    args = args[n:]
  return out + [args]


def partition_list(bs, lst):
  """`lst` split by the booleans `bs`: (where False, where True)."""
  out = [], []
  for b, x in safe_zip(bs, lst):
    out[b].append(x)
  return out


def merge_lists(bs, l0, l1):
  i0, i1 = iter(l0), iter(l1)
  return [next(i1) if b else next(i0) for b in bs]


def prod(xs):
  return math.prod(xs)


def tuple_insert(t, idx, val):
  return t[:idx] + (val,) + t[idx:]


def tuple_delete(t, idx):
  return t[:idx] + t[idx + 1:]


def curry(f):
  return functools.partial(functools.partial, f)
