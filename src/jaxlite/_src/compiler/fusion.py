"""Tier 1's fusion pass: groups a jaxpr's eqns into kernels that can run tile by tile.

A kernel is a run of consecutive eqns over one leading extent `n` (elementwise ops with their
broadcasts, converts and selects, reductions over trailing axes, random_bits as a source): every
value it makes has `n` rows, so it can run on rows [lo:hi) alone. Matmuls and the rest stay
single eqns.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.compiler import passes
from jaxlite._src.base.config import config
from jaxlite._src.base.core import Literal, Var

# What the pass fuses, looked up by the primitive object in tables its modules fill
# (primitive_kinds): live sets, so a primitive registered after this module loads is seen.
# ELEMENTWISE: computed element by element (each operand has the output's shape, is rank 0, or
# has its rank with size-1 axes that NumPy broadcasts; their params never name a shape), and
# registered fusible: a primitive is fused only once a test checks its kernel against tier 0
# (tests/test_tier1.py's table; `fma` is the compiler-internal contraction of a marked mul+add,
# passes.fuse_marked_fma, checked there too).
ELEMENTWISE = kinds.fusible
# Reductions whose kernel takes only `axes`: per row they compute the same thing on a tile.
REDUCTIONS = kinds.monoid
# Shape ops that keep the leading axis; their output is a view (no working-set cost).
VIEWS = kinds.views

TILE, WHOLE, LIT = "tile", "whole", "lit"


class Kernel:
  """A fused group: eqns[k] reads its operands in modes roles[k] (TILE: rows lo:hi of a value
  with `n` rows; WHOLE: the whole value, broadcast against each tile; LIT: a literal)."""
  __slots__ = ("eqns", "roles", "n", "first", "inputs", "outputs", "row_bytes", "elements")

  def __init__(self, n: int, first: int):
    self.eqns, self.roles, self.n, self.first = [], [], n, first
    self.inputs: list = []   # [(var, mode)] read from outside the kernel, in first-use order
    self.outputs: list = []  # vars made here and read after it
    self.row_bytes = 0       # estimated working-set bytes per leading index
    self.elements = 0        # largest value's element count (sizes the untiled fallback)

  def describe(self) -> str:
    names = " ".join(e.primitive.name for e in self.eqns)
    return f"{len(self.eqns)} eqns over {self.n} rows: {names}"


def _row(aval) -> int:
  return math.prod(aval.shape[1:])


def _broadcasts(shape, out_shape) -> bool:
  """NumPy broadcasting of an operand of the output's rank (size-1 axes stretch)."""
  return shape is not None and len(shape) == len(out_shape) and \
      all(s in (1, o) for s, o in zip(shape, out_shape))


def _roles(eqn, n: int, internal: set, fuse_bits: bool = True) -> list | None:
  """Each operand's mode if `eqn` can run tile by tile over `n` leading rows, else None
  (`fuse_bits`: random_bits may source a kernel)."""
  if eqn.effects or len(eqn.outvars) != 1:
    return None
  out = eqn.outvars[0].aval
  if not hasattr(out, "shape") or not out.shape or out.shape[0] != n:
    return None
  prim = eqn.primitive
  if prim in kinds.row_sources:
    return _bits_roles(eqn, n, internal) if fuse_bits else None
  # PRNG key arrays and other extended dtypes have no NumPy buffer of their own type.
  if not all(isinstance(getattr(v.aval, "dtype", None), np.dtype)
             for v in (*eqn.invars, *eqn.outvars)):
    return None
  params = eqn.params
  if prim in ELEMENTWISE:
    roles = []
    for v in eqn.invars:
      shape = getattr(v.aval, "shape", None)
      if type(v) is Literal:
        roles.append(LIT)
      elif shape == out.shape or (_broadcasts(shape, out.shape) and shape[0] == n):
        roles.append(TILE)  # rows lo:hi of it meet rows lo:hi of the others
      elif (shape == () or _broadcasts(shape, out.shape)) and v not in internal:
        roles.append(WHOLE)  # rank 0, or one row broadcast against every row
      else:
        return None
    return roles
  if len(eqn.invars) != 1:
    return None
  (v,) = eqn.invars
  broadcast = prim is kinds.roles.broadcast_in_dim
  if broadcast and type(v) is Literal:
    return [LIT]
  if type(v) is Literal or not getattr(v.aval, "shape", None) and not broadcast:
    return None
  shape = v.aval.shape
  if prim in REDUCTIONS:
    ok = set(params) <= {"axes", "out_sharding"} and 0 not in params["axes"]
    return [TILE] if ok and shape[0] == n else None
  if prim is kinds.roles.squeeze:
    return [TILE] if 0 not in params["dimensions"] and shape[0] == n else None
  if prim is kinds.roles.reshape:
    return [TILE] if params.get("dimensions") is None and shape[0] == n else None
  if broadcast:
    dims = params["broadcast_dimensions"]
    if dims and dims[0] == 0 and shape[0] == n:
      return [TILE]
    if v in internal:  # a kernel value can only be read tile by tile
      return None
    return [WHOLE]
  return None


def _bits_roles(eqn, n: int, internal: set) -> list | None:
  """random_bits makes rows on its own (a kernel source): in partitionable mode an element's
  bits depend only on its key and its row-major index, so a tile computes its rows' counters
  (`prng.bits_rows`). One key is read whole; keys with `n` rows are read by rows. The mode is
  fixed when the jaxpr compiles, as JAX fixes it when lowering."""
  (keys,) = eqn.invars
  if type(keys) is Literal or keys in internal or not config.jax_threefry_partitionable:
    return None
  if keys.aval.shape == ():
    return [WHOLE]
  return [TILE] if keys.aval.shape[0] == n else None


def plan(jaxpr, fuse_bits: bool = True, split_sizes: bool = False) -> tuple[list, list, dict]:
  """(items, eqns, last_use): the jaxpr's eqns grouped into items, each an eqn or a Kernel, in
  execution order; the eqns in that order; the index of each var's last reader in it (len(eqns)
  for the jaxpr's outputs).

  A pure eqn that cannot join the open kernel but reads none of its values (a bias reshaped
  for the next op, a scalar) moves above the kernel, so the kernel can go on past it.
  `split_sizes`: a kernel of independent parts with values of different sizes (an optimizer
  step updating a weight and its bias) becomes a kernel per size (`_split_by_size`)."""
  items = _group(_spread_literal_broadcasts(jaxpr.eqns), fuse_bits, 0)
  if split_sizes:
    items = [part for it in items
             for part in (_split_by_size(it) if isinstance(it, Kernel) else (it,))]
  eqns = []
  for item in items:
    if isinstance(item, Kernel):
      item.first = len(eqns)
      eqns.extend(item.eqns)
    else:
      eqns.append(item)
  last_use = passes.last_uses(eqns, jaxpr.outvars)
  for item in items:
    if isinstance(item, Kernel):
      _finish(item, last_use)
  return items, eqns, last_use


def _split_by_size(k: Kernel) -> list:
  """`k` as kernels of one element count each: its eqns' connected parts (by the values they
  make and read) grouped by their largest value's size, in the order of their first eqns. A
  native loop runs over one element count; tier 1's tiles do not mind (it keeps them whole)."""
  part = {}  # var made in k -> its part (an eqn index), merged union-find style
  parent = list(range(len(k.eqns)))

  def find(i):
    while parent[i] != i:
      parent[i] = parent[parent[i]]
      i = parent[i]
    return i
  for i, eqn in enumerate(k.eqns):
    for v in eqn.invars:
      if type(v) is not Literal and v in part:
        parent[find(part[v])] = find(i)
    for v in eqn.outvars:
      part[v] = i
  size = {}
  for i, eqn in enumerate(k.eqns):
    root = find(i)
    size[root] = max(size.get(root, 0), math.prod(eqn.outvars[0].aval.shape))
  by_size = {}
  for i in range(len(k.eqns)):
    by_size.setdefault(size[find(i)], []).append(i)
  if len(by_size) == 1:
    return [k]
  out = []
  for members in by_size.values():
    sub = Kernel(k.n, 0)
    sub.eqns = [k.eqns[i] for i in members]
    sub.roles = [k.roles[i] for i in members]
    out.append(sub)
  return out


def _spread_literal_broadcasts(eqns) -> list:
  """The eqns, where a broadcast literal (a `zeros_like`) read by several eqns is made again
  just before each later reader, so that each kernel reading it has its own: a kernel then
  reads a literal, where it read a whole array another kernel had made (relu's gradient
  masks of two layers share one zeros array; the native tier filled and read 256 KiB for it)."""
  readers = {}
  for e in eqns:
    for v in e.invars:
      if type(v) is not Literal:
        readers[v] = readers.get(v, 0) + 1
  made = {e.outvars[0]: e for e in eqns
          if e.primitive is kinds.roles.broadcast_in_dim and type(e.invars[0]) is Literal
          and readers.get(e.outvars[0], 0) > 1}
  if not made:
    return eqns
  out, seen = [], set()
  for e in eqns:
    ins = list(e.invars)
    for i, v in enumerate(ins):
      if type(v) is not Literal and v in made:
        if v in seen:
          copy = Var(v.aval)
          out.append(made[v].replace(outvars=[copy]))
          ins[i] = copy
        else:
          seen.add(v)
    out.append(e.replace(invars=ins) if ins != e.invars else e)
  return out


# Eqns moved above a kernel are grouped again at most this deep (each level sees every moved
# eqn once: the bound keeps planning linear in the program's length).
_MAX_REGROUP_DEPTH = 4


def _group(eqns, fuse_bits: bool, depth: int) -> list:
  """The eqns as items (eqns and Kernels) in execution order; eqns moved above an open kernel
  are grouped the same way among themselves (the update of every parameter but the last one
  of an optimizer step moves above the last one's kernel, and each can be a kernel too)."""
  items, cur, internal, hoisted = [], None, set(), []

  def close():
    if cur is not None:
      regroup = len(hoisted) > 1 and depth < _MAX_REGROUP_DEPTH
      items.extend(_group(hoisted, fuse_bits, depth + 1) if regroup else hoisted)
      items.append(cur)
    hoisted.clear()

  for eqn in eqns:
    roles = _roles(eqn, cur.n, internal, fuse_bits) if cur is not None else None
    if roles is None and cur is not None and _independent(eqn, internal):
      hoisted.append(eqn)
      continue
    if roles is None:
      close()
      cur, internal = None, set()
      out = eqn.outvars[0].aval if len(eqn.outvars) == 1 else None
      # A kernel needs rows to split: values of 0 or 1 rows stay single eqns.
      roles = _roles(eqn, out.shape[0], internal, fuse_bits) \
          if getattr(out, "shape", None) and out.shape[0] > 1 else None
      if roles is None:
        items.append(eqn)
        continue
      cur = Kernel(out.shape[0], 0)
    cur.eqns.append(eqn)
    cur.roles.append(roles)
    internal.update(eqn.outvars)
  close()
  return items


def _independent(eqn, internal: set) -> bool:
  """May run before the open kernel: reads none of its values and has no effects."""
  if eqn.effects or eqn.primitive in passes.effectful_primitives:
    return False
  return not any(type(v) is not Literal and v in internal for v in eqn.invars) and \
      not _has_subjaxpr(eqn)


def _has_subjaxpr(eqn) -> bool:
  # Control flow and calls run user code: keep them in program order.
  return any(hasattr(p, "jaxpr") or hasattr(p, "eqns") for p in eqn.params.values()) or \
      any(isinstance(p, tuple) and p and hasattr(p[0], "jaxpr") for p in eqn.params.values())


def _finish(k: Kernel, last_use: dict) -> None:
  made, seen = set(), set()
  end = k.first + len(k.eqns)
  row_bytes, elements = 0, 0
  for eqn, roles in zip(k.eqns, k.roles):
    for v, mode in zip(eqn.invars, roles):
      if mode != LIT and v not in made and (v, mode) not in seen:
        seen.add((v, mode))
        k.inputs.append((v, mode))
        if mode == TILE:
          row_bytes += _row(v.aval) * v.aval.dtype.itemsize
          elements = max(elements, math.prod(v.aval.shape))
    out = eqn.outvars[0]
    made.add(out)
    elements = max(elements, math.prod(out.aval.shape))
    if eqn.primitive not in VIEWS:
      row_bytes += _row(out.aval) * out.aval.dtype.itemsize
    if last_use.get(out, -1) >= end:
      k.outputs.append(out)
  k.row_bytes, k.elements = max(row_bytes, 1), elements
