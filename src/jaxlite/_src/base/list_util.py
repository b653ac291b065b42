"""List helpers every layer uses (splitting operand lists by counts, merging them back).

The bottom of the import graph: this module imports nothing of jaxlite's.
"""
from __future__ import annotations


def split_list(xs, sizes) -> list:
  """`xs` cut into consecutive lists of `sizes`, then the rest."""
  out, start = [], 0
  for n in sizes:
    out.append(list(xs[start:start + n]))
    start += n
  out.append(list(xs[start:]))
  return out


def merge_lists(which, falses, trues) -> list:
  """Interleaves `falses` and `trues` in the order `which` says."""
  f, t = iter(falses), iter(trues)
  return [next(t) if w else next(f) for w in which]
