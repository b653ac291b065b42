"""The order in which jnp.einsum contracts three or more operands.

JAX asks opt_einsum for a contraction path and contracts pair by pair along it; the path decides
both the cost (a bad order can build intermediates orders of magnitude larger than any operand)
and the printed jaxpr (which dot_generals and transposes appear). jaxlite has no opt_einsum
dependency, so the searches JAX's default `optimize="auto"` chooses between are written here,
with the same cost model (flop counts of pairwise contractions) and the same tie-breaking, so
that the path -- and hence the jaxpr -- is the one JAX prints:

* `optimal`: depth-first search over every pairwise order, pruned by the best total so far
  (JAX's choice for up to 4 operands, and `optimize=True`);
* `branch`: the same search exploring only the `nbranch` locally cheapest candidates at each step
  (by memory removed), and abandoning paths 4x worse than the best seen at the same depth
  (5-6 operands: all branches, 7-8: two, 9-14: one);
* `greedy`: repeatedly the contraction removing the most memory (15 operands and more).

A path is a list of position pairs into the list of operands still to contract, where each
contraction removes its two operands and appends its result (opt_einsum's linear form).
"""
from __future__ import annotations

import bisect
import collections
import heapq
import itertools
import math

# Paths below are found over label sets (frozensets of one-letter labels) with `sizes` mapping
# each label to its length.


def _size(labels, sizes):
  return math.prod(sizes[c] for c in labels)


def _flops(labels, inner, num_terms, sizes):
  """The cost model: the size of the iteration space times the operations per point."""
  return _size(labels, sizes) * (max(1, num_terms - 1) + (1 if inner else 0))


def _pair_result(inputs, output, remaining, i, j, sizes):
  """The labels and flops of contracting inputs[i] with inputs[j] while `remaining` (SSA ids,
  i and j among them) are still to be contracted: a label survives if the output or another
  remaining operand still needs it."""
  k1, k2 = inputs[i], inputs[j]
  either = k1 | k2
  keep = frozenset.union(output, *(inputs[r] for r in remaining - {i, j}))
  return either & keep, _flops(either, bool((k1 & k2) - keep), 2, sizes)


def ssa_to_linear(ssa_path):
  """SSA ids (every operand and every intermediate numbered once) to positions in the shrinking
  operand list."""
  n = sum(map(len, ssa_path)) - len(ssa_path) + 1
  ids = list(range(n))
  path = []
  for new_id, step in enumerate(ssa_path, start=n):
    positions = sorted(bisect.bisect_left(ids, s) for s in step)
    for p in reversed(positions):
      ids.pop(p)
    ids.append(new_id)
    path.append(tuple(positions))
  return path


def optimal(inputs, output, sizes):
  """The cheapest pairwise order (ties: the first found in ascending pair order)."""
  inputs = tuple(map(frozenset, inputs))
  best = {"flops": math.inf, "path": (tuple(range(len(inputs))),)}
  # Keyed by the two label sets only, as JAX's search does: a pair's result is remembered from
  # the first state it was met in.
  memo = {}

  def search(path, labels, remaining, flops):
    if len(remaining) == 1:
      best["flops"], best["path"] = flops, path
      return
    for i, j in itertools.combinations(remaining, 2):
      if i > j:
        i, j = j, i
      key = (labels[i], labels[j])
      hit = memo.get(key)
      if hit is None:
        hit = memo[key] = _pair_result(labels, output, remaining, i, j, sizes)
      k12, pair_flops = hit
      total = flops + pair_flops
      if total >= best["flops"]:
        continue
      search(path + ((i, j),), labels + (k12,), remaining - {i, j} | {len(labels)}, total)

  search((), inputs, set(range(len(inputs))), 0)
  return ssa_to_linear(best["path"])


def branch(inputs, output, sizes, nbranch=None, cutoff_factor=4):
  """`optimal`'s search over the `nbranch` best candidates per step (all with None), ranked
  by memory removed (result size minus operand sizes); outer products only when nothing
  else is left."""
  inputs = tuple(map(frozenset, inputs))
  size_of = {k: _size(k, sizes) for k in inputs}
  memo = {}
  best = {"flops": math.inf, "size": math.inf, "path": None}
  best_at_depth = collections.defaultdict(lambda: math.inf)

  def assess(labels, remaining, flops, size, i, j):
    k1, k2 = labels[i], labels[j]
    hit = memo.get((k1, k2))
    if hit is None:
      hit = memo[(k1, k2)] = _pair_result(labels, output, remaining, i, j, sizes)
    k12, pair_flops = hit
    size12 = size_of.get(k12)
    if size12 is None:
      size12 = size_of[k12] = _size(k12, sizes)
    total, largest = flops + pair_flops, max(size, size12)
    if (total, largest) >= (best["flops"], best["size"]):
      return None
    depth = len(labels)
    if total < best_at_depth[depth]:
      best_at_depth[depth] = total
    elif total > cutoff_factor * best_at_depth[depth]:
      return None
    removed = size12 - size_of[k1] - size_of[k2]
    return removed, pair_flops, total, largest, (i, j), k12

  def search(path, labels, remaining, flops, size):
    if len(remaining) == 1:
      best["flops"], best["size"], best["path"] = flops, size, path
      return
    candidates = []
    for outer_products in (False, True):
      for i, j in itertools.combinations(remaining, 2):
        if i > j:
          i, j = j, i
        if not outer_products and labels[i].isdisjoint(labels[j]):
          continue
        c = assess(labels, remaining, flops, size, i, j)
        if c:
          heapq.heappush(candidates, c)
      if candidates:
        break
    explored = 0
    while candidates and (nbranch is None or explored < nbranch):
      _, _, total, largest, (i, j), k12 = heapq.heappop(candidates)
      search(path + ((i, j),), labels + (k12,), remaining - {i, j} | {len(labels)}, total,
             largest)
      explored += 1

  search((), inputs, set(range(len(inputs))), 0, 0)
  return ssa_to_linear(best["path"])


def greedy(inputs, output, sizes):
  """Identical operands first (Hadamard products), then repeatedly the contraction that removes
  the most memory among operands sharing a label, then outer products smallest first."""
  inputs = [frozenset(x) for x in inputs]
  # Labels every operand has are kept to the end: contracting them early saves nothing.
  output = frozenset(output) | frozenset.intersection(*inputs)
  ids = itertools.count(len(inputs))
  live = {}  # label set -> its SSA id
  path = []
  for ssa, key in enumerate(inputs):
    if key in live:
      path.append((live[key], ssa))
      live[key] = next(ids)
    else:
      live[key] = ssa
  holders = collections.defaultdict(set)  # contracted label -> live operands holding it
  for key in live:
    for c in key - output:
      holders[c].add(key)
  shared_by = {n: {c for c, keys in holders.items() if len(keys) >= n} - output for n in (2, 3)}
  footprint = {key: _size(key, sizes) for key in live}

  def candidate(k1, k2):
    either, both = k1 | k2, k1 & k2
    k12 = (either & output) | (both & shared_by[3]) | ((either - both) & shared_by[2])
    cost = _size(k12, sizes) - footprint[k1] - footprint[k2]
    id1, id2 = live[k1], live[k2]
    if id1 > id2:
      k1, id1, k2, id2 = k2, id2, k1, id1
    return (cost, id2, id1), k1, k2, k12

  queue = []
  for c, keys in holders.items():
    ordered = sorted(keys, key=live.__getitem__)
    for n, k1 in enumerate(ordered[:-1]):
      heapq.heappush(queue, min(candidate(k1, k2) for k2 in ordered[n + 1:]))
  while queue:
    _, k1, k2, k12 = heapq.heappop(queue)
    if k1 not in live or k2 not in live:
      continue  # one of them was contracted since
    path.append((live.pop(k1), live.pop(k2)))
    for c in k1 - output:
      holders[c].remove(k1)
    for c in k2 - output:
      holders[c].remove(k2)
    if k12 in live:
      path.append((live[k12], next(ids)))
    else:
      for c in k12 - output:
        holders[c].add(k12)
    live[k12] = next(ids)
    for c in k1 | k2 - output:
      count = len(holders[c])
      for n in (2, 3):
        (shared_by[n].add if count >= n else shared_by[n].discard)(c)
    footprint[k12] = _size(k12, sizes)
    partners = {k for c in k12 for k in holders[c]} - {k12}
    if partners:
      heapq.heappush(queue, min(candidate(k12, k2) for k2 in partners))
  rest = [(_size(key & output, sizes), ssa, key) for key, ssa in live.items()]
  heapq.heapify(rest)
  _, id1, k1 = heapq.heappop(rest)
  while rest:
    _, id2, k2 = heapq.heappop(rest)
    path.append((min(id1, id2), max(id1, id2)))
    k12 = (k1 | k2) & output
    _, id1, k1 = heapq.heappushpop(rest, (_size(k12, sizes), next(ids), k12))
  return ssa_to_linear(path)


def _auto(inputs, output, sizes):
  n = len(inputs)
  if n <= 4:
    return optimal(inputs, output, sizes)
  if n <= 14:
    return branch(inputs, output, sizes, nbranch=None if n <= 6 else 2 if n <= 8 else 1)
  return greedy(inputs, output, sizes)


_STRATEGIES = {
    "auto": _auto,
    "optimal": optimal,
    "greedy": greedy,
    "branch-all": branch,
    "branch-2": lambda i, o, s: branch(i, o, s, nbranch=2),
    "branch-1": lambda i, o, s: branch(i, o, s, nbranch=1),
}


def contraction_path(terms, out_term, sizes, optimize):
  """The linear path (see the module docstring) for operands labelled `terms`, per `optimize`:
  True ("optimal"), False (left to right), a strategy name, or an explicit path."""
  n = len(terms)
  if optimize is False:
    return [(0, 1)] * (n - 1)
  if optimize is True:
    optimize = "optimal"
  if isinstance(optimize, str):
    strategy = _STRATEGIES.get(optimize)
    if strategy is None:
      raise ValueError(f"jnp.einsum: optimize must be True, False, an explicit path or one of "
                       f"{sorted(_STRATEGIES)}, got {optimize!r}")
    return strategy([frozenset(t) for t in terms], frozenset(out_term), sizes)
  return _explicit_path(optimize, n)


def _explicit_path(path, n):
  try:
    steps = [tuple(int(p) for p in step) for step in path]
  except TypeError:
    raise TypeError(f"jnp.einsum: optimize must be True, False, a strategy name or a list of "
                    f"tuples of operand positions, got {path!r}") from None
  remaining = n
  for step in steps:
    if len(step) != 2 or len(set(step)) != 2 or not all(0 <= p < remaining for p in step):
      raise ValueError(f"jnp.einsum: each step of an explicit contraction path must be a pair "
                       f"of distinct positions among the {remaining} operands left, got {step}"
                       f" in {path!r}")
    remaining -= 1
  if remaining != 1:
    raise ValueError(f"jnp.einsum: the contraction path {path!r} leaves {remaining} operands "
                     "uncontracted")
  return steps
