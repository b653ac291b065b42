"""Buffer donation for jit (`donate_argnums` / `donate_argnames`): which donated inputs a call
can use, JAX's warning for the others, and the eager call that deletes them and reuses buffers.

As JAX 0.10.2 on CPU: a donated input is *usable* when an output of the same shape and dtype is
left for it (first pass, in output order), else one with the same number of elements (second
pass); usable inputs are deleted after the call, the others draw one UserWarning per compiled
signature and stay alive. Inputs jit prunes (unused, without `keep_unused`) are neither.
Buffers are reused where that is safe: a usable input aliased to an output of its shape and
dtype, whose NumPy buffer nothing else references, is handed to an executable that may write
its last use's result into it (tier 0's `out=`), so an optimizer step writes the new parameters
into the old ones' memory. Tracers are never donated (vmap/grad of a donating jit keep their
inputs; JAX deletes the concrete value under them).
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

from jaxlite._src.base import array
from jaxlite._src.base import core
from jaxlite._src.compiler import backend
from jaxlite._src.compiler import passes
from jaxlite._src.base.errors import JaxRuntimeError

_FAQ = "See an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation."


class Plan:
  """What donating the flat inputs `donated` of one traced signature means (cached on the jit
  cache entry, built once: JAX warns once per compile)."""
  __slots__ = ("consumed", "aliases", "kept", "executables", "warm")

  def __init__(self, consumed, aliases, kept):
    self.consumed = consumed      # flat input indices deleted by the call
    self.aliases = aliases        # flat input index -> output index of the same shape/dtype
    self.kept = kept              # flat input indices the executable keeps (JAX's numbering)
    self.executables = {}         # (backend, reused input indices) -> executable
    self.warm = False             # a call has run: JAX's errors then come from its fast path


def make_plan(closed, donated, keep_unused: bool) -> Plan:
  """JAX's matching of donated inputs to outputs (`_set_up_aliases`), with its warning."""
  jaxpr = closed.jaxpr
  invars = jaxpr.invars
  if keep_unused:
    kept = list(range(len(invars)))
  else:
    live = passes.dce(jaxpr)
    used = {v for e in live.eqns for v in e.invars if type(v) is core.Var}
    used.update(v for v in live.outvars if type(v) is core.Var)
    kept = [i for i, v in enumerate(invars) if v in used]
  candidates = [i for i in kept if donated[i]]
  by_type = collections.defaultdict(collections.deque)
  for i in candidates:
    a = invars[i].aval
    by_type[(a.shape, a.dtype)].append(i)
  aliases, aliased_outs = {}, set()
  for o, a in enumerate(closed.out_avals):
    q = by_type.get((a.shape, a.dtype))
    if q:
      aliases[q.popleft()] = o
      aliased_outs.add(o)
  by_size = collections.defaultdict(collections.deque)
  for o, a in enumerate(closed.out_avals):
    if o not in aliased_outs:
      by_size[_size(a)].append(o)
  consumed, unusable = [], []
  for i in candidates:
    if i in aliases:
      consumed.append(i)
      continue
    q = by_size.get(_size(invars[i].aval))
    if q:
      q.popleft()
      consumed.append(i)
    else:
      unusable.append(i)
  if unusable:
    names = ", ".join(str(invars[i].aval) for i in unusable)
    warnings.warn(f"Some donated buffers were not usable: {names}.\n{_FAQ}", stacklevel=4)
  return Plan(tuple(consumed), aliases, kept)


def _size(aval) -> int:
  return int(np.prod(aval.shape, dtype=np.int64))


def plan_for(entry, donated, keep_unused) -> Plan:
  key = (tuple(donated), keep_unused)
  plans = entry.donation
  if plans is None:
    plans = entry.donation = {}
  plan = plans.get(key)
  if plan is None:
    plan = plans[key] = make_plan(entry.closed, donated, keep_unused)
  return plan


def check_no_reuse_in_call(plan: Plan, flat) -> None:
  """JAX's error for a consumed buffer that is also passed elsewhere in the same call."""
  consumed = set(plan.consumed)
  if not consumed:
    return
  first = {}
  for pos, i in enumerate(plan.kept):
    x = flat[i]
    if not isinstance(x, core.Array) or isinstance(x, core.Tracer):
      continue
    f = first.get(id(x))
    if f is None:
      first[id(x)] = (pos, i)
      continue
    f_pos, f_i = f
    if i in consumed:
      msg = ("Attempt to donate a buffer which is also used by the same call to Execute() "
             f"(flattened argument {pos}, replica 0, partition 0, first use: {f_pos}). Toy "
             "example for this bug: `f(a, donate(a))`.")
    elif f_i in consumed:
      msg = ("Attempt to use a buffer that was previously donated in the same call to "
             f"Execute() (flattened argument {pos}, replica 0, partition 0, first use: "
             f"{f_pos}). Toy example for this bug: `f(donate(a), a)`.")
    else:
      continue
    # JAX's first call of a signature raises from Python, later ones from its C++ fast path.
    raise (ValueError if plan.warm else JaxRuntimeError)(f"INVALID_ARGUMENT: {msg}")


def reusable_inputs(plan: Plan, flat) -> tuple:
  """The consumed inputs whose buffers the executable may overwrite."""
  return tuple(i for i in plan.consumed
               if i in plan.aliases and array.sole_owner(flat[i]))


def executable(entry, plan: Plan, reuse: tuple, on=None):
  """The executable of the entry's jaxpr that may write into the inputs `reuse` (on backend
  `on`, else the installed one)."""
  if not reuse:
    return entry.executable or entry.compiled() if on is None else entry.compiled(on)
  # (the installed one as it is: a pending tier 1 compiles small programs without loading)
  b = backend.installed() if on is None else on
  key = (b, reuse)
  exe = plan.executables.get(key)
  if exe is None:
    exe = plan.executables[key] = backend.wrap_program(
        entry.closed, b.compile_donating(entry.closed, reuse), b)
  return exe


def delete_consumed(plan: Plan, flat) -> None:
  for i in plan.consumed:
    x = flat[i]
    if isinstance(x, core.Array) and not isinstance(x, core.Tracer) and hasattr(x, "delete"):
      x.delete()


def aval_key(flat) -> tuple | None:
  """Shapes, dtypes and weak types of an all-Array argument list (readable once deleted too)."""
  key = []
  for x in flat:
    if type(x) is not core.array_type:
      return None
    key.append((x.shape, x.dtype, x.weak_type))
  return tuple(key)


def deleted_arg_error(flat, warm: bool, err):
  """The error for a deleted Array passed to a jit call: JAX's C++ fast path (a signature
  already compiled, `warm`) raises ValueError naming the argument; its Python path (first call)
  the RuntimeError `err` that the deleted buffer raised."""
  if not warm:
    return err
  for pos, x in enumerate(flat):
    if type(x) is core.array_type and x.is_deleted():
      return ValueError(f"INVALID_ARGUMENT: Invalid buffer passed to Execute() as argument {pos} "
                        "to replica 0: INVALID_ARGUMENT: Buffer has been deleted or donated.")
  return err
