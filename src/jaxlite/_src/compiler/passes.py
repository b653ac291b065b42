"""Jaxpr-to-jaxpr passes run before code generation: inlining of nested calls, CSE, transpose
folding into products, DCE.

Passes build new jaxprs and never mutate their input: traced jaxprs are cached and printed.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.base.config import config
from jaxlite._src.base.core import Jaxpr, Literal, Var

# Primitives whose eqns are pure calls of a sub-jaxpr that execution may inline, and the param
# holding that ClosedJaxpr where it is not "jaxpr" (custom_jvp/vjp calls: once compiled, only
# the primal function runs).
inlinable_call_primitives: set = set()
inline_jaxpr_param: dict = {}
# Primitives with side effects that DCE must keep.
effectful_primitives: set = set()
# producer primitive -> rule(eqn, permutation) giving an eqn that computes the producer's result
# already transposed by `permutation`, or None: `transpose(dot(a, b))` becomes `dot(b, a)`, so
# code never runs elementwise ops over transposed (strided) matrices.
transpose_folding_rules: dict = {}


# A library primitive's (jax.extend.core.Primitive) equation in compiled code is replaced by
# what its registered lowering rule builds: `library_lowering[0](eqn, platform)` (filled by
# jax.interpreters.mlir) gives that ClosedJaxpr, None to leave the eqn to the primitive's impl,
# or raises JAX's NotImplementedError when the primitive has no rule.
library_lowering: list = [None]


def lowered_library_eqn(eqn):
  if library_lowering[0] is None:
    raise NotImplementedError(f"MLIR translation rule for primitive '{eqn.primitive.name}' not "
                              "found for platform cpu")
  return library_lowering[0](eqn, "cpu")


def inline_calls(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
  """Replaces nested `jit` (and other call) eqns by their bodies, and library primitives' eqns
  by their lowerings, recursively."""
  if not any(e.primitive in inlinable_call_primitives or e.primitive.library
             for e in jaxpr.eqns):
    return jaxpr, consts
  new_eqns, new_constvars, new_consts = [], list(jaxpr.constvars), list(consts)
  rename = {}

  def read(v):
    return v if type(v) is Literal else rename.get(v, v)

  for eqn in jaxpr.eqns:
    if eqn.primitive in inlinable_call_primitives:
      closed = eqn.params[inline_jaxpr_param.get(eqn.primitive, "jaxpr")]
    elif eqn.primitive.library:
      closed = lowered_library_eqn(eqn)
    else:
      closed = None
    if closed is None:
      new_eqns.append(eqn.replace(invars=[read(v) for v in eqn.invars]))
      continue
    inner, inner_consts = inline_calls(closed.jaxpr, closed.consts)
    sub = {}
    for v, c in zip(inner.constvars, inner_consts):
      nv = Var(v.aval)
      new_constvars.append(nv)
      new_consts.append(c)
      sub[v] = nv
    for v, a in zip(inner.invars, eqn.invars):
      sub[v] = read(a)
    for ie in inner.eqns:
      outs = [Var(o.aval) for o in ie.outvars]
      for o, n in zip(ie.outvars, outs):
        sub[o] = n
      new_eqns.append(ie.replace(invars=[v if type(v) is Literal else sub[v] for v in ie.invars],
                                 outvars=outs))
    for o, io in zip(eqn.outvars, inner.outvars):
      rename[o] = io if type(io) is Literal else sub[io]
  outvars = [read(v) for v in jaxpr.outvars]
  return Jaxpr(new_constvars, jaxpr.invars, outvars, new_eqns), new_consts


def is_effectful(eqn) -> bool:
  """Whether `eqn` has side effects itself or in a jaxpr it calls (a jit holding a print)."""
  if eqn.primitive in effectful_primitives or eqn.effects:
    return True
  return bool(effectful_primitives) and any(
      is_effectful(e) for sub in core.jaxprs_in_params(eqn.params) for e in sub.eqns)


def split_invariant(eqns, known) -> tuple[list, list]:
  """(eqns computable from the vars `known` and literals alone, the others), in order: a loop
  body's invariant part, which scan loops hoist."""
  known, invariant, rest = set(known), [], []
  for eqn in eqns:
    pure = not eqn.effects and eqn.primitive not in effectful_primitives
    if pure and all(type(v) is Literal or v in known for v in eqn.invars):
      invariant.append(eqn)
      known.update(eqn.outvars)
    else:
      rest.append(eqn)
  return invariant, rest


# Rules that prune a primitive's own outputs and sub-jaxpr (a scan's unused ys), registered by
# the primitive's module: rule(eqn, used_outputs) -> the eqn without the unused outputs (and the
# inputs its body no longer reads). Only `dce(..., prune_subjaxprs=True)` applies them: JAX
# prunes so the linear jaxprs of autodiff, while the primal jaxprs it prints keep every output.
dce_rules: dict = {}


def dce(jaxpr: Jaxpr, prune_subjaxprs: bool = False) -> Jaxpr:
  """Drops eqns none of whose outputs is needed (keeping effectful ones)."""
  live = {v for v in jaxpr.outvars if type(v) is Var}
  kept, changed = [], False
  for eqn in reversed(jaxpr.eqns):
    used = [v in live for v in eqn.outvars]
    effectful = is_effectful(eqn)
    if not (any(used) or effectful):
      changed = True
      continue
    rule = dce_rules.get(eqn.primitive) if prune_subjaxprs and not effectful else None
    if rule is not None:
      new = rule(eqn, used)
      changed = changed or new is not eqn
      eqn = new
    kept.append(eqn)
    live.update(v for v in eqn.invars if type(v) is Var)
  if not changed:
    return jaxpr
  kept.reverse()
  return jaxpr.replace(eqns=kept)


def used_inputs(jaxpr: Jaxpr) -> list:
  """Which of `jaxpr`'s invars its eqns or outputs read."""
  read = {v for e in jaxpr.eqns for v in e.invars if type(v) is Var}
  read.update(v for v in jaxpr.outvars if type(v) is Var)
  return [v in read for v in jaxpr.invars]


def _atom_key(v):
  if type(v) is Literal:
    return ("lit", type(v.val), repr(v.val), v.aval.dtype, v.aval.weak_type)
  return v


def _params_key(params):
  try:
    key = tuple(sorted(params.items()))
    hash(key)
    return key
  except TypeError:
    return None


# Primitives that only matter to transformations (autodiff): the identity when run
_RUN_AS_IDENTITY = kinds.identities  # registered with each primitive (primitive_kinds)


def drop_identities(jaxpr: Jaxpr) -> Jaxpr:
  """Removes eqns that compute their operand unchanged (stop_gradient), so that they neither cost
  a line nor split a fused kernel (logsumexp's stopped shift)."""
  if not any(e.primitive in _RUN_AS_IDENTITY for e in jaxpr.eqns):
    return jaxpr
  rename, eqns = {}, []

  def read(v):
    return v if type(v) is Literal else rename.get(v, v)

  for eqn in jaxpr.eqns:
    if eqn.primitive in _RUN_AS_IDENTITY and len(eqn.invars) == len(eqn.outvars) == 1 \
        and eqn.invars[0].aval == eqn.outvars[0].aval:
      rename[eqn.outvars[0]] = read(eqn.invars[0])
      continue
    invars = [read(v) for v in eqn.invars]
    eqns.append(eqn.replace(invars=invars) if invars != eqn.invars else eqn)
  return jaxpr.replace(eqns=eqns, outvars=[read(v) for v in jaxpr.outvars])


def cse(jaxpr: Jaxpr) -> Jaxpr:
  """Common subexpression elimination: an eqn equal to an earlier one reuses its outputs."""
  seen, rename, eqns = {}, {}, []

  def read(v):
    return v if type(v) is Literal else rename.get(v, v)

  for eqn in jaxpr.eqns:
    invars = [read(v) for v in eqn.invars]
    pkey = None if is_effectful(eqn) else _params_key(eqn.params)
    key = None if pkey is None else (eqn.primitive, tuple(_atom_key(v) for v in invars), pkey)
    prev = seen.get(key) if key is not None else None
    if prev is not None and all(a.aval == b.aval for a, b in zip(prev.outvars, eqn.outvars)):
      rename.update(zip(eqn.outvars, prev.outvars))
      continue
    new = eqn.replace(invars=invars) if invars != eqn.invars else eqn
    if key is not None:
      seen[key] = new
    eqns.append(new)
  if not rename:
    return jaxpr
  return jaxpr.replace(eqns=eqns, outvars=[read(v) for v in jaxpr.outvars])


def fold_transposes(jaxpr: Jaxpr) -> Jaxpr:
  """Folds a transpose into the eqn producing its operand when that eqn has a rule for it
  (`transpose_folding_rules`) and the transpose is the operand's only use."""
  uses = {}
  for v in [v for e in jaxpr.eqns for v in e.invars] + list(jaxpr.outvars):
    if type(v) is Var:
      uses[v] = uses.get(v, 0) + 1
  producers = {e.outvars[0]: e for e in jaxpr.eqns
               if e.primitive in transpose_folding_rules and len(e.outvars) == 1}
  folded = {}  # id of a replaced producer -> its replacement (None: dropped)
  for e in jaxpr.eqns:
    src = e.invars[0] if e.primitive is kinds.roles.transpose else None
    prod = producers.get(src)
    if prod is None or uses[src] != 1 or id(prod) in folded:
      continue
    new = transpose_folding_rules[prod.primitive](prod, tuple(e.params["permutation"]))
    if new is not None:
      folded[id(prod)] = None
      folded[id(e)] = new.replace(outvars=list(e.outvars))
  if not folded:
    return jaxpr
  eqns = [folded.get(id(e), e) for e in jaxpr.eqns]
  return jaxpr.replace(eqns=[e for e in eqns if e is not None])


# `add` eqns that a sampler marked (random's `x * span + shift`, source_info an FmaHint): XLA
# contracts that mul+add into one FMA, so the compiled program rounds once, as eager jaxlite does.
# `fma_primitive` is set by `random` (the only marker); the jaxpr still prints mul and add.
fma_primitive = None


def fuse_marked_fma(jaxpr: Jaxpr) -> Jaxpr:
  """Marked `add(mul(a, b), c)` -> `fma(a, b, c)`; the mul is left for DCE."""
  from jaxlite._src.base.source_info_util import FmaHint
  if fma_primitive is None or not any(type(e.source_info) is FmaHint for e in jaxpr.eqns):
    return jaxpr
  made_by = {o: e for e in jaxpr.eqns for o in e.outvars}
  eqns = []
  for e in jaxpr.eqns:
    m = made_by.get(e.invars[0]) if type(e.source_info) is FmaHint else None
    if m is not None and m.primitive is kinds.roles.mul and e.primitive is kinds.roles.add:
      e = e.replace(primitive=fma_primitive, invars=[*m.invars, e.invars[1]], params={},
                    source_info=None)
    eqns.append(e)
  return jaxpr.replace(eqns=eqns)


# primitive -> rule(eqn) giving the eqns (last one writing eqn's outvars) that compute the same
# values in primitives the fusion pass can tile, or None: a product with nothing contracted
# (vmap of a gradient's outer product) is a broadcast multiply.
elementwise_rewrite_rules: dict = {}


def rewrite_as_elementwise(jaxpr: Jaxpr) -> Jaxpr:
  if not any(e.primitive in elementwise_rewrite_rules for e in jaxpr.eqns):
    return jaxpr
  eqns = []
  for e in jaxpr.eqns:
    rule = elementwise_rewrite_rules.get(e.primitive)
    new = rule(e) if rule is not None else None
    eqns.extend(new if new is not None else (e,))
  return jaxpr.replace(eqns=eqns)


# Elementwise binary primitives that take a rank-0 operand against an array (lax's scalar
# broadcasting); registered by lax's `binop` family.
scalar_operand_primitives: set = set()


def fold_scalar_broadcasts(jaxpr: Jaxpr) -> Jaxpr:
  """`d = broadcast_in_dim(2.0)` (or of a converted literal) read by a binary elementwise op
  against a value of the result's shape becomes the literal itself (random.uniform's bounds:
  `max d m`). Code then sees the constant: a nonzero bound needs no signed-zero fix-up in
  max/min, and no array is made."""
  consts, spread = {}, {}  # var -> the rank-0 Literal it is / it broadcasts
  for e in jaxpr.eqns:
    if len(e.invars) != 1 or len(e.outvars) != 1:
      continue
    x, out = e.invars[0], e.outvars[0]
    lit = x if type(x) is Literal else consts.get(x)
    if lit is None or getattr(lit.aval, "shape", None) or \
        not isinstance(getattr(out.aval, "dtype", None), np.dtype):
      continue
    if e.primitive is kinds.roles.broadcast_in_dim:
      spread[out] = lit
    elif e.primitive is kinds.roles.convert_element_type and not out.aval.shape:
      value = np.asarray(e.primitive.impl(np.asarray(lit.val, lit.aval.dtype), **e.params))
      consts[out] = Literal(value[()], out.aval)
  if not spread:
    return jaxpr
  eqns, changed = [], False
  for e in jaxpr.eqns:
    if e.primitive in scalar_operand_primitives and len(e.invars) == 2:
      shape = e.outvars[0].aval.shape
      ins = list(e.invars)
      for i in (0, 1):  # one side at most: the other keeps the result's shape
        v, other = ins[i], ins[1 - i]
        lit = spread.get(v) if type(v) is Var else None
        if lit is not None and type(other) is Var and other.aval.shape == shape \
            and lit.aval.dtype == v.aval.dtype and lit.aval.weak_type == v.aval.weak_type:
          ins[i] = lit
          break
      if ins != list(e.invars):
        e, changed = e.replace(invars=ins), True
    eqns.append(e)
  return jaxpr.replace(eqns=eqns) if changed else jaxpr


def _broadcast_eqn(v, aval, eqns):
  """`v` (a scalar, or already of `aval`'s shape) at `aval`'s shape: a broadcast_in_dim eqn
  appended to `eqns` where it is a scalar."""
  if v.aval.shape == aval.shape:
    return v
  out = Var(core.ShapedArray(aval.shape, v.aval.dtype, weak_type=v.aval.weak_type))
  eqns.append(core.JaxprEqn([v], [out], kinds.roles.broadcast_in_dim,
                            {"shape": aval.shape, "broadcast_dimensions": (), "sharding": None}))
  return out


def select_for_bool_products(jaxpr: Jaxpr) -> Jaxpr:
  """`mul(a, convert_element_type(p))` with `p` a bool array becomes `select_n(p, 0, a)`, as
  XLA's algebraic simplifier computes it: `inf * False` is 0, not NaN, and `-2.0 * False` is
  +0.0 (numpyro's binary_cross_entropy_with_logits relies on it). The convert is left for DCE."""
  mul, convert = kinds.roles.mul, kinds.roles.convert_element_type
  from_bool = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns
               if e.primitive is convert and type(e.invars[0]) is Var
               and e.invars[0].aval.dtype == np.bool_}
  if not from_bool:
    return jaxpr
  eqns, changed = [], False
  for e in jaxpr.eqns:
    pred = other = None
    if e.primitive is mul:
      out = e.outvars[0]
      for i in (0, 1):
        p = from_bool.get(e.invars[i]) if type(e.invars[i]) is Var else None
        if p is not None and p.aval.shape == out.aval.shape:
          pred, other = p, e.invars[1 - i]
          break
    if pred is None or other.aval.shape not in (out.aval.shape, ()):
      eqns.append(e)
      continue
    zero = Literal(out.aval.dtype.type(0), core.ShapedArray((), out.aval.dtype,
                                                             weak_type=out.aval.weak_type))
    if out.aval.shape:
      # select_n takes cases of one shape: a scalar factor (vmap's `mul b nan:f32[]`) is
      # broadcast as the zero is
      zero, other = (_broadcast_eqn(v, out.aval, eqns) for v in (zero, other))
    eqns.append(core.JaxprEqn([pred, zero, other], [out], kinds.roles.select_n, {}))
    changed = True
  return jaxpr.replace(eqns=eqns) if changed else jaxpr


def inline_scalar_consts(jaxpr: Jaxpr, consts: list) -> tuple[Jaxpr, list]:
  """A concrete 0-d Array const (one closed over from before the trace: a constvar, as in
  JAX's jaxpr) is written into the code as a literal, as a NumPy scalar is (XLA embeds such
  constants too). Committed Arrays and consts the jaxpr returns stay consts."""
  returned = {v for v in jaxpr.outvars if type(v) is Var}
  sub, keep_vars, keep_vals = {}, [], []
  for v, c in zip(jaxpr.constvars, consts):
    if type(c) is core.array_type and type(c._value) is np.ndarray and not c._value.ndim \
        and c._device is None and v not in returned and isinstance(v.aval.dtype, np.dtype):
      sub[v] = Literal(c._value[()], v.aval)
    else:
      keep_vars.append(v)
      keep_vals.append(c)
  if not sub:
    return jaxpr, consts
  eqns = [e.replace(invars=[sub.get(a, a) if type(a) is Var else a for a in e.invars])
          if any(type(a) is Var and a in sub for a in e.invars) else e for e in jaxpr.eqns]
  return jaxpr.replace(constvars=keep_vars, eqns=eqns), keep_vals


def optimize(closed: core.ClosedJaxpr) -> tuple[Jaxpr, list]:
  """The pass pipeline run before code generation."""
  jaxpr, consts = inline_scalar_consts(*inline_calls(closed.jaxpr, closed.consts))
  jaxpr = dce(rewrite_as_elementwise(fold_scalar_broadcasts(
      fuse_marked_fma(fold_transposes(cse(select_for_bool_products(drop_identities(jaxpr))))))))
  if config.jax_enable_checks:  # the test suite turns this on: passes must keep jaxprs well typed
    core.check_jaxpr(jaxpr)
  return jaxpr, consts


def last_uses(eqns, outvars) -> dict:
  """Index of the last eqn reading each var (outputs of the jaxpr are never dead)."""
  last = {}
  for i, eqn in enumerate(eqns):
    for v in eqn.invars:
      if type(v) is not Literal:
        last[v] = i
  for v in outvars:
    if type(v) is not Literal:
      last[v] = len(eqns)
  return last
