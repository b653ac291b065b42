"""`checkpoint` (`remat`): trade compute for memory in reverse mode.

A checkpointed function stages as one `remat2` eqn. When it is linearized, its primal outputs
are computed inline and the linear side is another `remat2` that recomputes, from the inputs,
every residual the policy does not allow saving; its transpose recomputes them again.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import weakref
from collections.abc import Callable
from typing import NamedTuple

from jaxlite._src.base import core, tree_util
from jaxlite._src.transforms.call_primitives import with_zeros
from jaxlite._src.compiler import backend, passes
from jaxlite._src.base.config import config
from jaxlite._src.base.core import ClosedJaxpr, Var
from jaxlite._src.interpreters import ad, batching
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.interpreters.ad import Zero
from jaxlite._src.compiler.xla import lowering as hlo

# --- policies: (primitive, *input avals, **params) -> whether its output may be saved -----------


def nothing_saveable(prim, *avals, **params) -> bool:
  return False


def everything_saveable(prim, *avals, **params) -> bool:
  return True


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
  """Saves dot_general outputs (and convolutions'), or with `only_if_no_batch_dims` only dots
  without batch dims; an object, as JAX's, so that a jaxpr's `policy=` param prints it."""
  only_if_no_batch_dims: bool

  def __call__(self, prim, *avals, **params) -> bool:
    if self.only_if_no_batch_dims:
      if prim.name != "dot_general":
        return False
      (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
      return not lhs_batch and not rhs_batch
    return prim.name in ("dot_general", "conv_general_dilated")


dots_saveable = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
  saveable_names: frozenset

  def __call__(self, prim, *avals, **params) -> bool:
    return prim.name == "name" and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
  names: frozenset

  def __call__(self, prim, *avals, **params) -> bool:
    return prim.name == "name" and params["name"] not in self.names


def save_any_names_but_these(*names):
  return SaveAnyNamesButThese(frozenset(names))


def save_only_these_names(*names):
  return SaveOnlyTheseNames(frozenset(names))


def save_anything_except_these_names(*names_not_to_save):
  """JAX 0.10.2's: saves every value, whatever the names (its body is `return True`)."""
  return lambda *_, **__: True


def save_from_both_policies(policy_1, policy_2):
  def policy(prim, *args, **params):
    out1, out2 = policy_1(prim, *args, **params), policy_2(prim, *args, **params)
    if not (isinstance(out1, bool) and isinstance(out2, bool)):
      raise ValueError("The return value of the policies should be a boolean. Got: "
                       f"{out1} and {out2}. Please write a custom policy function directly, "
                       "rather than using this helper function.")
    return out1 or out2
  return policy


checkpoint_policies = types.SimpleNamespace(
    nothing_saveable=nothing_saveable, everything_saveable=everything_saveable,
    dots_saveable=dots_saveable, checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies)


# `name`: an identity that tags a value for the name-based policies.
name_p = core.Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)
hlo.register_identity(name_p)
ad.deflinear(name_p, lambda ct, x, *, name: [ct])
batching.primitive_batchers[name_p] = lambda vals, dims, *, name: (
    name_p.bind(vals[0], name=name), dims[0])


def checkpoint_name(x, name: str):
  return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)


# --- the remat2 primitive ----------------------------------------------------------------------

remat_p = core.Primitive("remat2")
remat_p.multiple_results = True
remat_p.def_impl(lambda *args, jaxpr, **params: backend.compile_jaxpr(jaxpr)(*args))
remat_p.def_abstract_eval(lambda *avals, jaxpr, **params: jaxpr.out_avals)
passes.inlinable_call_primitives.add(remat_p)
hlo.register_call(remat_p, "jaxpr")


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
  nonzeros = [type(t) is not Zero for t in tangents]
  jvp_closed, nz_out = ad.jvp_jaxpr(jaxpr, nonzeros)
  outs = remat_p.bind(*primals, *[t for t in tangents if type(t) is not Zero], jaxpr=jvp_closed,
                      prevent_cse=prevent_cse, differentiated=differentiated, policy=policy)
  n = len(jaxpr.out_avals)
  return outs[:n], with_zeros(outs[n:], nz_out, jaxpr.out_avals)


def _remat_linearize(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
  nonzeros = [type(t) is not Zero for t in tangents]
  split = remat_partial_eval(jaxpr, tuple(nonzeros), policy)
  outs = core.eval_jaxpr(split.known.jaxpr, split.known.consts, *primals)
  n = len(jaxpr.out_avals)
  primal_outs, saved = outs[:n], outs[n:]
  residuals = [primals[i] for i in split.input_residuals] + list(saved)
  t_outs = []
  if any(split.nz_out):
    t_outs = remat_p.bind(*residuals, *[t for t in tangents if type(t) is not Zero],
                          jaxpr=split.unknown, prevent_cse=prevent_cse, differentiated=True,
                          policy=policy)
  return primal_outs, with_zeros(t_outs, split.nz_out, jaxpr.out_avals)


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
  return ad.transpose_call(jaxpr, cts, args, lambda trans, ins: remat_p.bind(
      *ins, jaxpr=trans, prevent_cse=prevent_cse, differentiated=True, policy=policy))


def _remat_batcher(axis_data, vals, dims, *, jaxpr, **params):
  batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  return remat_p.bind(*vals, jaxpr=batched, **params), out_dims


ad.jvp_rules[remat_p] = _remat_jvp
ad.linearize_rules[remat_p] = _remat_linearize
ad.primitive_transposes[remat_p] = _remat_transpose
batching.axis_primitive_batchers[remat_p] = _remat_batcher


class RematSplit:
  """A checkpointed jaxpr split for reverse mode.

  `known`: primals -> (primal outputs, saved residuals). `unknown`: (the primal inputs listed
  in `input_residuals`, saved residuals, nonzero tangents) -> nonzero output tangents; it
  recomputes whatever else it needs from those inputs.
  """
  __slots__ = ("input_residuals", "known", "nz_out", "unknown")

  def __init__(self, known, unknown, input_residuals, nz_out):
    self.known, self.unknown = known, unknown
    self.input_residuals, self.nz_out = input_residuals, nz_out


@functools.lru_cache(maxsize=512)
def _remat_split_cached(jaxpr, nonzeros, policy):
  return _remat_partial_eval(jaxpr, nonzeros, policy)


def remat_partial_eval(jaxpr: ClosedJaxpr, nonzeros, policy) -> RematSplit:
  try:
    hash(policy)
  except TypeError:  # an unhashable policy (a TypeError of user code is not caught here)
    return _remat_partial_eval(jaxpr, tuple(nonzeros), policy)
  return _remat_split_cached(jaxpr, tuple(nonzeros), policy)


def _remat_partial_eval(closed, nonzeros, policy) -> RematSplit:
  jvp_closed, nz_out = ad.jvp_jaxpr(closed, nonzeros)
  jvp = jvp_closed.jaxpr
  n_in, n_out = len(closed.in_avals), len(closed.out_avals)
  primal_in, tangent_in = jvp.invars[:n_in], jvp.invars[n_in:]
  tangent_out = jvp.outvars[n_out:]
  unknown = set(tangent_in)
  known_eqns, eqns = _forward_known(jvp.eqns, unknown)
  if any(_mixes_primal_and_tangent(eqn, unknown) for eqn in eqns):
    return _remat_split_by_linearize(closed, nonzeros)
  # Walk back from the output tangents: a known value they need is saved when the policy
  # allows it, else the eqn producing it is recomputed on the linear side.
  needed = {v for v in tangent_out if type(v) is Var}
  saved, lin_eqns = [], []
  for eqn in reversed(eqns):
    is_known = not any(v in unknown for v in eqn.outvars)
    # As in JAX, a known effect (a debug print) is recomputed too: it runs again on the way back.
    effect = is_known and (eqn.effects or eqn.primitive in passes.effectful_primitives)
    if not effect and not any(v in needed for v in eqn.outvars):
      continue
    if is_known and policy is not None and \
        policy(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params):
      saved.extend(v for v in eqn.outvars if v in needed and v not in saved)
      continue
    lin_eqns.append(eqn)
    needed.update(v for v in eqn.invars if type(v) is Var)
  lin_eqns.reverse()
  saved.reverse()
  input_res = [i for i, v in enumerate(primal_in) if v in needed]
  lin = core.Jaxpr(jvp.constvars, [primal_in[i] for i in input_res] + saved + list(tangent_in),
                   tangent_out, lin_eqns)
  known = core.Jaxpr(jvp.constvars, primal_in, list(jvp.outvars[:n_out]) + saved, known_eqns)
  return RematSplit(_dce(ClosedJaxpr(known, jvp_closed.consts)),
                    _dce(ClosedJaxpr(lin, jvp_closed.consts)), input_res, nz_out)


def _mixes_primal_and_tangent(eqn, unknown) -> bool:
  """Whether `eqn` is a JVP'd higher-order primitive (a scan, loop, cond or call over primals and
  tangents together, giving both): its primal outputs are not linear, so the split by
  dependence on tangents above cannot put them on the known side."""
  if eqn.primitive is remat_p:
    return False  # split by _split_remat_eqn
  reads = [type(v) is Var and v in unknown for v in eqn.invars]
  if not any(reads) or all(reads):
    return False
  return any(isinstance(p, (ClosedJaxpr, core.Jaxpr)) or
             (isinstance(p, (tuple, list)) and p and isinstance(p[0], (ClosedJaxpr, core.Jaxpr)))
             for p in eqn.params.values())


def _remat_split_by_linearize(closed, nonzeros) -> RematSplit:
  """The split of a body holding a JVP'd higher-order primitive, from the body's linearization
  (each primitive's own rule splits it into primal and linear parts): the known side is the
  body itself and saves nothing; the linear side takes every primal input, recomputes the
  linearization's residuals from them and applies its linear part (the nothing-saveable
  policy, whatever the policy asked)."""
  from jaxlite._src.interpreters.linearize import linearize_jaxpr
  lin = linearize_jaxpr(closed, nonzeros)
  n_in = len(closed.in_avals)
  tangent_avals = [ad.tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros) if nz]

  def recompute_then_apply(*args):
    primals, tangents = args[:n_in], args[n_in:]
    call_outs = core.eval_jaxpr(lin.primal.jaxpr, lin.primal.consts, *primals)
    _, residuals = lin.assemble(list(primals), list(call_outs))
    return core.eval_jaxpr(lin.tangent.jaxpr, lin.tangent.consts, *residuals, *tangents)

  unknown = pe.trace_to_jaxpr(recompute_then_apply, list(closed.in_avals) + tangent_avals)
  return RematSplit(closed, _dce(unknown), list(range(n_in)), lin.nz_out)


def _forward_known(eqns, unknown):
  """(the eqns of `eqns` that read nothing in `unknown`, `eqns` with each checkpoint reading
  both split in two), adding to `unknown` the outputs that depend on it. A checkpoint nested
  inside (its JVP: primals and tangents in, both out) has known primal outputs, computed by a
  remat of the part of its body that gives them; the eqn left gives only the rest (recomputing
  what it needs)."""
  known, out = [], []
  for eqn in eqns:
    unknown_in = [type(v) is Var and v in unknown for v in eqn.invars]
    if not any(unknown_in):
      known.append(eqn)
    elif eqn.primitive is remat_p and not all(unknown_in):
      part, eqn, unknown_out = _split_remat_eqn(eqn, unknown_in)
      if part is not None:
        known.append(part)
        out.append(part)
      unknown.update(v for v, u in zip(eqn.outvars, unknown_out) if u)
    else:
      unknown.update(eqn.outvars)
    out.append(eqn)
  return known, out


def _known_part_of_remat(eqn, unknown_in):
  """(an eqn computing the outputs of remat `eqn` that do not depend on its unknown inputs,
  from its known ones, or None; per output, whether it is unknown)."""
  inner = eqn.params["jaxpr"]
  jaxpr = inner.jaxpr
  dep = {v for v, u in zip(jaxpr.invars, unknown_in) if u}
  body_eqns, _ = _forward_known(jaxpr.eqns, dep)
  unknown_out = [type(v) is Var and v in dep for v in jaxpr.outvars]
  keep = [i for i, u in enumerate(unknown_out) if not u]
  if not keep:
    return None, unknown_out
  known_in = [i for i, u in enumerate(unknown_in) if not u]
  body = core.Jaxpr(jaxpr.constvars, [jaxpr.invars[i] for i in known_in],
                    [jaxpr.outvars[i] for i in keep], body_eqns)
  closed = _dce(ClosedJaxpr(body, inner.consts))
  return core.JaxprEqn([eqn.invars[i] for i in known_in], [eqn.outvars[i] for i in keep],
                       remat_p, dict(eqn.params, jaxpr=closed)), unknown_out


def _split_remat_eqn(eqn, unknown_in):
  """(the eqn computing remat `eqn`'s outputs that do not read its unknown inputs, or None;
  `eqn` with those outputs dropped; per output, whether it is unknown)."""
  known, unknown_out = _known_part_of_remat(eqn, unknown_in)
  if known is not None:
    eqn = core.JaxprEqn(eqn.invars, [v if u else Var(v.aval)
                                     for v, u in zip(eqn.outvars, unknown_out)],
                        eqn.primitive, eqn.params, eqn.effects, eqn._source_info)
  return known, eqn, unknown_out


ad.forward_splits[remat_p] = _split_remat_eqn


def _dce(closed):
  from jaxlite._src.interpreters.linearize import dce_closed
  return dce_closed(closed)


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | tuple = ()) -> Callable:
  """`fun`, whose intermediate values are recomputed in the backward pass unless `policy`
  allows saving them."""
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else \
      tuple(static_argnums)

  @functools.wraps(fun)
  def fun_remat(*args, **kwargs):
    # Eagerly too, `fun` is traced (once per signature) and its jaxpr run, as in JAX: code
    # that inspects the trace it runs under (haiku's checks against unsafe use of its state
    # inside jax transforms) sees tracers.
    static = {i: args[i] for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]
    flat, in_tree = tree_util.tree_flatten((dyn, kwargs))
    from jaxlite._src.transforms.ad_api import _as_array
    flat = [_as_array(x) for x in flat]
    store = {}

    def flat_fun(*xs):
      d, kw = tree_util.tree_unflatten(in_tree, xs)
      it = iter(d)
      full = [static[i] if i in static else next(it) for i in range(len(args))]
      out = fun(*full, **kw)
      leaves, store["out_tree"] = tree_util.tree_flatten(out)
      return [_as_array(o) for o in leaves]
    avals = [core.get_aval(x) for x in flat]
    cache, key = _trace_key(fun, in_tree, avals, static, len(args))
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
      closed, store["out_tree"] = hit
    else:
      closed = pe.trace_to_jaxpr(flat_fun, avals)
      if cache is not None and not any(isinstance(c, core.Tracer) for c in closed.consts):
        if len(cache) >= 64:
          cache.pop(next(iter(cache)))
        cache[key] = (closed, store["out_tree"])
    consts_in, consts = _consts_as_args(closed)
    outs = remat_p.bind(*consts, *flat, jaxpr=consts_in, prevent_cse=prevent_cse,
                        differentiated=False, policy=policy)
    return tree_util.tree_unflatten(store["out_tree"], outs)

  return fun_remat


remat = checkpoint


# Traced bodies of checkpointed functions, per function (held weakly) and argument types: as
# JAX traces a function for checkpoint once per signature (a global the body reads that changes
# later is not seen: JAX's docs show it), and it saves tracing again on every call.
_traces: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _trace_key(fun, in_tree, avals, static, nargs):
  """(the cache for `fun`, the key of this call), or (None, None) when it cannot be cached."""
  try:
    cache = _traces.get(fun)
    if cache is None:
      cache = _traces[fun] = {}
    key = (in_tree, tuple((a, getattr(a, "vma", None)) for a in avals),
           tuple(sorted(static.items())), nargs, config.trace_context(),
           batching.axis_env_key())
    hash(key)
  except TypeError:
    return None, None
  return cache, key


def _consts_as_args(closed):
  """The jaxpr with every constant moved in front of its arguments (JAX's remat2 form)."""
  jaxpr = closed.jaxpr
  if not jaxpr.constvars:
    return closed, []
  new = jaxpr.replace(constvars=[], invars=list(jaxpr.constvars) + list(jaxpr.invars))
  return ClosedJaxpr(new, []), list(closed.consts)



# --- what a policy may answer, besides True/False ------------------------------------------------

class SaveableType:
  """A policy's answer "save this residual" (truthy, as `True` is)."""

  def __bool__(self):
    return True

  def __repr__(self):
    return "Saveable"


class RecomputeType:
  """A policy's answer "recompute this residual in the backward pass" (falsy, as `False` is)."""

  def __bool__(self):
    return False

  def __repr__(self):
    return "Recompute"


Saveable = SaveableType()
Recompute = RecomputeType()


class Offloadable(NamedTuple):
  """A policy's answer "save this residual in memory space `dst`": jaxlite has one memory (host
  RAM), so an offloaded residual is a saved one (a non-empty tuple is truthy)."""
  src: str
  dst: str


# --- which residuals reverse mode keeps ----------------------------------------------------------

def _arg_names(f, args, kwargs) -> list[str]:
  """JAX's debug names of the flattened arguments: the parameter name plus the pytree path
  (`*rest` arguments read `rest[0]`, `**kw` ones `kw['a']`)."""
  try:
    named = list(inspect.signature(f).bind(*args, **kwargs).arguments.items())
  except (TypeError, ValueError):  # no signature: fall back to positions
    named = [("args", args), ("kwargs", kwargs)]
  return [name + tree_util.keystr(path) for name, value in named
          for path, _ in tree_util.tree_flatten_with_path(value)[0]]


def saved_residuals(f: Callable, *args, **kwargs) -> list[tuple]:
  """[(aval, where it comes from)] for each value `vjp(f, *args, **kwargs)` keeps for the
  backward pass: an argument, a constant, a literal or an eqn's output (named by
  `checkpoint_name` or by its primitive)."""
  from jaxlite._src.transforms.ad_api import vjp
  from jaxlite._src.transforms.api import make_jaxpr
  from jaxlite._src.base import source_info_util
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))

  def f_flat(*xs):
    a, kw = tree_util.tree_unflatten(in_tree, xs)
    return vjp(lambda *a_: f(*a_, **kw), *a)

  with core.recording_source_info(source_info_util.current):  # "... from file:line:col (fn)"
    closed, out_shape = make_jaxpr(f_flat, return_shape=True)(*leaves)
  jaxpr = closed.jaxpr
  n_res = len(tree_util.tree_leaves(out_shape[1]))
  res = jaxpr.outvars[len(jaxpr.outvars) - n_res:]
  names = _arg_names(f, args, kwargs)
  res_vars = {v for v in res if type(v) is not core.Literal}
  results = [(v.aval, "from a literal") for v in res if type(v) is core.Literal]
  results += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res_vars]
  for i, v in enumerate(jaxpr.invars):
    if v in res_vars:
      where = names[i] if i < len(names) and names[i] else None
      results.append((v.aval, f"from the argument {where}" if where else
                      f"from the argument at flattened index {i}"))
  for eqn in jaxpr.eqns:
    si = eqn.source_info
    src = (" from " + source_info_util.summarize(si)) if si.traceback else ""
    for v in eqn.outvars:
      if v not in res_vars:
        continue
      if eqn.primitive is name_p:
        results.append((v.aval, f"named '{eqn.params['name']}'{src}"))
      elif eqn.primitive.name in ("jit", "pjit"):
        results.append((v.aval, f"output of jitted function '{eqn.params.get('name')}'{src}"))
      else:
        results.append((v.aval, f"output of {eqn.primitive.name}{src}"))
  return results


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
  """Prints one line per residual `vjp(f)` saves: its short type and where it comes from."""
  for aval, src in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {src}")
