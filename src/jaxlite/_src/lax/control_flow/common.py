"""What cond, switch, while_loop and scan share: tracing Python bodies into closed jaxprs, jaxpr
surgery (consts as operands, pruning forwarded outputs) and JAX's type-mismatch errors.

Bodies are traced once per (functions, input types): the same jaxpr objects come back, so a
printout shows them hoisted as `let jaxpr = { ... } in` like JAX.
"""
from __future__ import annotations

import inspect
import weakref

import numpy as np

from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.base.config import config
from jaxlite._src.base.core import ClosedJaxpr, Var
from jaxlite._src.interpreters import batching
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.transforms.call_primitives import _check_output, fun_src_info
from jaxlite._src.base.list_util import (  # noqa: F401 - control flow's helpers
    merge_lists,
    split_list,
)

# --- tracing bodies ------------------------------------------------------------------------------


class TracedBody:
  """A body traced on flat avals: a const-free jaxpr whose leading invars take `consts`."""
  __slots__ = ("consts", "jaxpr", "out_tree")

  def __init__(self, jaxpr: ClosedJaxpr, consts: list, out_tree):
    self.jaxpr = jaxpr
    self.consts = consts
    self.out_tree = out_tree

  out_avals = property(lambda self: self.jaxpr.out_avals)


def trace_body(fun, in_tree, in_avals, traced_for: str) -> TracedBody:
  """Traces `fun` on pytree args of `in_avals`; its consts become leading invars."""
  box = []

  def flat_fun(*flat):
    out = fun(*tree_util.tree_unflatten(in_tree, flat))
    out_flat, out_tree = tree_util.tree_flatten(out)
    box.append(out_tree)
    return [_check_output(o, fun) for o in out_flat]

  names = _flat_arg_names(fun, in_tree, len(in_avals))
  dbg = pe.TracingDebugInfo(traced_for, fun_src_info(fun), names)
  closed = pe.trace_to_jaxpr(flat_fun, list(in_avals), dbg, names)
  jaxpr, consts = separate_consts(closed)
  return TracedBody(jaxpr, consts, box[0])


def _flat_arg_names(fun, in_tree, n: int) -> list:
  """Each flat argument named by the parameter it belongs to (for tracer error messages)."""
  try:
    params = list(inspect.signature(fun).parameters)
  except (TypeError, ValueError):
    return [None] * n
  names = []
  for i, child in enumerate(in_tree.children()):
    names += [params[i] if i < len(params) else None] * child.num_leaves
  return names if len(names) == n else [None] * n


def separate_consts(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
  """(jaxpr taking its consts as leading invars, the const values)."""
  jaxpr = closed.jaxpr
  if not jaxpr.constvars:
    return closed, []
  moved = jaxpr.replace(constvars=[], invars=jaxpr.constvars + jaxpr.invars)
  return ClosedJaxpr(moved, []), list(closed.consts)


# Traced-body cache: first function (weakly) -> {(other functions, trees, avals, ...): result}.
_body_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached_trace(funs: tuple, key: tuple, build):
  """`build()` memoized on the identity of `funs` and `key`, unless it captured tracers.

  Results that close over values of an outer trace are only valid inside that trace.
  """
  full_key = (funs[1:], key, config.trace_context())
  try:
    cache = _body_caches.setdefault(funs[0], {})
  except TypeError:  # unweakrefable callables are traced every time
    return build()
  try:
    hit = cache.get(full_key)
  except TypeError:  # unhashable callables
    return build()
  if hit is not None:
    return hit
  result = build()
  if not any(isinstance(c, core.Tracer) for c in _result_consts(result)):
    cache[full_key] = result
  return result


def _result_consts(result):
  for x in result if isinstance(result, tuple) else (result,):
    if isinstance(x, TracedBody):
      yield from x.consts
    elif isinstance(x, list):
      yield from (c for c in x if isinstance(c, core.Tracer))


# --- jaxpr surgery -------------------------------------------------------------------------------


def forwarding(jaxpr: core.Jaxpr) -> list:
  """For each output, the index of the invar it returns unchanged, else None."""
  index = {v: i for i, v in enumerate(jaxpr.invars)}
  return [index.get(v) if type(v) is Var else None for v in jaxpr.outvars]


def prune_outputs(closed: ClosedJaxpr, keep) -> ClosedJaxpr:
  if all(keep):
    return closed
  outs = [v for v, k in zip(closed.jaxpr.outvars, keep) if k]
  return ClosedJaxpr(closed.jaxpr.replace(outvars=outs), closed.consts)


def move_invars_to_front(closed: ClosedJaxpr, to_move) -> ClosedJaxpr:
  invars = closed.jaxpr.invars
  front = [v for v, m in zip(invars, to_move) if m]
  rest = [v for v, m in zip(invars, to_move) if not m]
  return ClosedJaxpr(closed.jaxpr.replace(invars=front + rest), closed.consts)


def merge_common_consts(bodies: list) -> tuple[list, list]:
  """Branch jaxprs that all take the union of every branch's consts (deduplicated by identity)."""
  merged, position = [], {}
  for body in bodies:
    for c in body.consts:
      if id(c) not in position:
        position[id(c)] = len(merged)
        merged.append(c)
  jaxprs = []
  for body in bodies:
    n = len(body.consts)
    own = dict(zip((id(c) for c in body.consts), body.jaxpr.jaxpr.invars[:n]))
    const_vars = [own.get(id(c)) or Var(core.get_aval(c)) for c in merged]
    inner = body.jaxpr.jaxpr
    jaxprs.append(ClosedJaxpr(inner.replace(invars=const_vars + inner.invars[n:]), []))
  return jaxprs, merged


# --- values --------------------------------------------------------------------------------------


def as_array(x):
  """A forwarded input returned as an output: Python and NumPy values become arrays."""
  if isinstance(x, core.Array):
    return x
  dtype, weak = dtypes.dtype_and_weak(x)
  return core.array_from_numpy(np.asarray(x, dtypes.canonicalize_dtype(dtype)), weak)


def promote_weak_input(val, in_aval, out_aval):
  """A weak-typed init value cast to what the body returns for it; (value, changed)."""
  if in_aval.weak_type and not typematch(in_aval, out_aval):
    from jaxlite._src.lax import elementwise_functions as lax
    new_dtype = dtypes.result_type(val, out_aval.dtype)
    return lax.convert_element_type(val, new_dtype), True
  return val, False


def typematch(a, b) -> bool:
  """Equal shape, dtype and varying manual axes (check_vma); weak types are ignored like JAX."""
  return a.shape == b.shape and a.dtype == b.dtype and _vma(a) == _vma(b)


def _vma(a) -> frozenset:
  return getattr(a, "vma", None) or frozenset()


def _pcast_hint(axes, target) -> str:
  """JAX's advice when only the varying manual axes of two types differ."""
  return (f"\nThis might be fixed by applying `jax.lax.pcast(..., {tuple(sorted(axes))}, "
          f"to='varying')`{target}.\nSee https://docs.jax.dev/en/latest/notebooks/"
          "shard_map.html#scan-vma for more information.\n")


def aval_mismatch_extra(a, b) -> str:
  what = [w for w, differ in (("the dtypes do not match", a.dtype != b.dtype),
                              ("the shapes do not match", a.shape != b.shape),
                              ("the manual axis types do not match", _vma(a) != _vma(b)))
          if differ]
  if not what:
    return ""
  return ", so " + (what[0] if len(what) == 1 else ", ".join(what[:-1]) + ", and " + what[-1])


# --- JAX's errors --------------------------------------------------------------------------------


def _capitalize(s: str) -> str:
  return s[0].upper() + s[1:]


def _src_info(fun) -> str:
  info = fun_src_info(fun)
  return info if " at " in info else str(None)


def _path_suffix(path) -> str:
  return f" at path {tree_util.keystr(path)}" if path else ""


def check_branch_outputs(api_name, name1, name2, f1, f2, tree1, avals1, tree2, avals2):
  """JAX's TypeError when two branches differ in output structure or types."""
  header = f"{name1} is {_src_info(f1)}\n{name2} is {_src_info(f2)}\n\n"
  if tree1 != tree2:
    diffs = [f"{name1} output{_path_suffix(p)} is a {a} but {name2} output{_path_suffix(p)} "
             f"is a {b}, so {why}" for p, a, b, why in _treedef_differences(tree1, tree2)]
    if not diffs:
      return
    text = f"{diffs[0]}.\n" if len(diffs) == 1 else _diff_text(diffs)
    raise TypeError(f"{api_name} branch outputs must have the same pytree structure, but they "
                    f"differ:\n\n{header}{text}\nRevise {name1} and/or {name2} so that they "
                    "have the same pytree structure.")
  paths = [p for p, _ in tree_util.tree_flatten_with_path(tree1.unflatten(avals1))[0]]
  diffs = [f"the output of {name1}{_path_suffix(p)} has type {a.str_short(False)} but the "
           f"corresponding output of {name2} has type {b.str_short(False)}"
           f"{aval_mismatch_extra(a, b)}"
           for p, a, b in zip(paths, avals1, avals2) if not typematch(a, b)]
  if not diffs:
    return
  text = f"{_capitalize(diffs[0])}.\n" if len(diffs) == 1 else \
      "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
  vma_only = [(a, b) for a, b in zip(avals1, avals2) if not typematch(a, b)
              and a.shape == b.shape and a.dtype == b.dtype]
  if len(diffs) == 1 and vma_only:
    a, b = vma_only[0]
    text += _pcast_hint(_vma(b) - _vma(a), f" to the output of {name1}")
  raise TypeError(f"{api_name} branches must have equal output types but they differ.\n\n"
                  f"{header}{text}\nRevise {name1} and/or {name2} so that all output types "
                  "match.")


class _Leaf:
  """Stands for every leaf when only two tree structures are compared."""


def _treedef_differences(tree1, tree2):
  leaf = str(_Leaf)
  t1 = tree1.unflatten([_Leaf()] * tree1.num_leaves)
  t2 = tree2.unflatten([_Leaf()] * tree2.num_leaves)
  for path, a, b, why in tree_util.equality_errors(t1, t2):
    yield path, a.replace(leaf, "pytree leaf"), b.replace(leaf, "pytree leaf"), why


def check_carry_type(name, body_fun, in_tree, in_avals, out_tree, out_avals):
  """JAX's TypeError when a loop body's carry output differs from its carry input."""
  try:
    carry_name = next(iter(inspect.signature(body_fun).parameters))
  except (TypeError, ValueError, StopIteration):
    carry_name = None

  def component(path):
    if carry_name:
      return (f"the input carry component {carry_name}{tree_util.keystr(path)}" if path
              else f"the input carry {carry_name}")
    return f"the input carry at path {tree_util.keystr(path)}" if path else "the input carry"

  if in_tree != out_tree:
    t1, t2 = in_tree.unflatten(in_avals), out_tree.unflatten(out_avals)
    diffs = [f"{component(p)} is a {a} but the corresponding component of the carry output "
             f"is a {b}, so {why}" for p, a, b, why in tree_util.equality_errors(t1, t2)]
    if not diffs:
      return
    raise TypeError(f"{name} function carry input and carry output must have the same pytree "
                    f"structure, but they differ:\n\n{_diff_text(diffs)}\nRevise the function "
                    "so that the carry output has the same pytree structure as the carry input.")
  paths = [p for p, _ in tree_util.tree_flatten_with_path(in_tree.unflatten(in_avals))[0]]
  diffs = [f"{component(p)} has type {a.str_short(False)} but the corresponding output carry "
           f"component has type {b.str_short(False)}{aval_mismatch_extra(a, b)}"
           for p, a, b in zip(paths, in_avals, out_avals) if not typematch(a, b)]
  if not diffs:
    return
  text = _diff_text(diffs)
  vma_only = [(p, a, b) for p, a, b in zip(paths, in_avals, out_avals) if not typematch(a, b)
              and a.shape == b.shape and a.dtype == b.dtype]
  if len(diffs) == 1 and vma_only:
    p, a, b = vma_only[0]
    text += _pcast_hint(_vma(b) - _vma(a), ", to the initial carry value corresponding to "
                        + component(p))
  raise TypeError(f"{name} function carry input and carry output must have equal types, but "
                  f"they differ:\n\n{text}\nRevise the function so that all output "
                  "types match the corresponding input types.")


def _diff_text(diffs: list) -> str:
  # JAX's own joining: one blank line after the first bullet only.
  if len(diffs) == 1:
    return f"{_capitalize(diffs[0])}.\n"
  return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def check_callable(fun, message: str) -> None:
  if not callable(fun):
    raise TypeError(message)



# --- batching bodies -----------------------------------------------------------------------------

# Batching a body is the batching interpreter's (the compiler's scan pipelining needs it too).
_batched_bodies = batching._batched_bodies
batch_body = batching.batch_body


def moved_to_front(vals, dims, batched, size) -> list:
  """Operands with their batch axis first (unbatched ones broadcast where `batched` says)."""
  from jaxlite._src.interpreters import batching
  return [batching.bdim_at_front(v, d, size) if b else v
          for v, d, b in zip(vals, dims, batched)]


# --- autodiff of bodies --------------------------------------------------------------------------

_derived_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def memo(anchor, key, build):
  """`build()` cached on the jaxpr `anchor` (weakly) and a hashable `key`."""
  per_anchor = _derived_bodies.setdefault(anchor, {})
  hit = per_anchor.get(key)
  if hit is None:
    hit = per_anchor[key] = build()
  return hit


def retrace(fun, in_avals) -> ClosedJaxpr:
  """The jaxpr of `fun` (which binds on its arguments) over `in_avals`."""
  return pe.trace_to_jaxpr(fun, list(in_avals))


def jvp_body(closed: ClosedJaxpr, nonzeros, instantiate) -> ClosedJaxpr:
  """(primals, nonzero tangents) -> (primal outs, tangent outs where `instantiate`).

  Output tangents the body leaves zero but `instantiate` asks for are materialized, so all
  branches (or all iterations) agree on which tangents flow.
  """
  from jaxlite._src.interpreters import ad
  nonzeros, instantiate = tuple(nonzeros), tuple(instantiate)

  def build():
    jvp, nz_out = ad.jvp_jaxpr(closed, nonzeros)
    if nz_out == instantiate:
      return jvp
    n_out = len(closed.out_avals)

    def fun(*args):
      outs = core.eval_jaxpr(jvp.jaxpr, jvp.consts, *args)
      return outs[:n_out] + instantiate_outputs(outs[n_out:], nz_out, instantiate,
                                                closed.out_avals)
    return retrace(fun, jvp.in_avals)
  return memo(closed, ("jvp", nonzeros, instantiate), build)


def instantiate_outputs(present, have, want, primal_avals) -> list:
  """Tangents for the outputs `want` asks for: those in `present` (one per `have`), or zeros."""
  from jaxlite._src.interpreters import ad
  it = iter(present)
  out = []
  for h, w, aval in zip(have, want, primal_avals):
    t = next(it) if h else None
    if w:
      out.append(t if t is not None else ad.zeros_like_aval(ad.tangent_aval(aval)))
  return out


def transpose_body(closed: ClosedJaxpr, undefined, ct_nonzero, linear_avals=None) -> ClosedJaxpr:
  """(defined inputs, nonzero output cotangents) -> a cotangent for every linear input;
  `linear_avals`: the linear inputs' types as the caller's UndefinedPrimals give them."""
  from jaxlite._src.interpreters import ad
  undefined, ct_nonzero = tuple(undefined), tuple(ct_nonzero)
  typed = None if linear_avals is None else tuple(
      (a.shape, a.dtype, a.weak_type) for a in linear_avals)

  def build():
    tr, nz_in = ad.transpose_jaxpr(closed, undefined, ct_nonzero, linear_avals)
    if all(nz_in):
      return tr
    lin_avals = list(linear_avals) if linear_avals is not None else \
        [a for a, u in zip(closed.in_avals, undefined) if u]

    def fun(*args):
      outs = core.eval_jaxpr(tr.jaxpr, tr.consts, *args)
      return instantiate_outputs(outs, nz_in, [True] * len(lin_avals), lin_avals)
    return retrace(fun, tr.in_avals)
  return memo(closed, ("transpose", undefined, ct_nonzero, typed), build)


def is_zero(t) -> bool:
  from jaxlite._src.interpreters import ad
  return type(t) is ad.Zero
