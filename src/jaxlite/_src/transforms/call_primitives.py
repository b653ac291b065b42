"""Call-like primitives at the bottom of the layers: `jit_p` (a staged call of a ClosedJaxpr)
with its autodiff and batching rules, and the argument/result checks every staged call shares;
lax/ and numpy/ import them without the jit API.

Under the eval trace a `jit` eqn runs the installed backend's executable of its jaxpr.
"""
from __future__ import annotations

import functools

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import dtypes
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.compiler import backend, passes
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.interpreters import linearize
from jaxlite._src.compiler.xla import lowering as hlo

# --- the jit primitive -------------------------------------------------------------------------

class _JitPrimitive(core.Primitive):
  """`jit`: run eagerly with in/out shardings given (the staged jit of grad, vmap... of a jit
  with `in_shardings`/`out_shardings`), its arguments move to their in_shardings and its
  results land on their out_shardings, as JAX's executable of the eqn places them."""

  def bind(self, *args, **params):
    if core._state.trace is core.eval_trace and not (
        pp.all_unspecified(params.get("in_shardings", ()))
        and pp.all_unspecified(params.get("out_shardings", ()))):
      return _bind_placed(self, args, params)
    return core._state.trace.process_primitive(self, args, params)


# The partitioner's checks and placements of an eager jit eqn given in/out shardings, registered
# by sharding/partition.py at its import: every such eqn was staged by jit_function, which
# loads the partitioner for a jit given shardings (issue 29: this module never imports it).
_placed = {}


def register_placed(**fns):
  _placed.update(fns)


def _bind_placed(prim, args, params):
  from jaxlite._src.base.array import from_host, host_value
  in_sh, out_sh = params["in_shardings"], params["out_shardings"]
  ins = []
  for a, s, v in zip(args, in_sh, params["jaxpr"].in_avals):
    if s is not None and s is not pp.UNSPECIFIED:
      _placed["check_committed_arg"](a, s, v)
      a = core.device_put(a, s)  # api's, registered there
    ins.append(a)
  outs = core.eval_trace.process_primitive(prim, ins, params)
  places = _placed["given_placements"](params["jaxpr"], args, ins, in_sh, out_sh)
  return [o if p is None or type(o) is not core.array_type else
          from_host(host_value(o), o.weak_type, p) for o, p in zip(outs, places)]


jit_p = _JitPrimitive("jit")
jit_p.multiple_results = True
passes.inlinable_call_primitives.add(jit_p)
hlo.register_call(jit_p, "jaxpr")
# Printed as JAX does: the name first, defaults of the sharding/layout params hidden, and the
# callee's binders named after the caller's arguments.
pp.param_rules[jit_p] = pp.ParamRule(first=("name",), drop={
    "inline": pp.always, "donated_invars": pp.none_true,
    "in_shardings": pp.all_unspecified, "out_shardings": pp.all_unspecified,
    "in_layouts": pp.all_none, "out_layouts": pp.all_none, "keep_unused": pp.is_false,
    "ctx_mesh": pp.empty_mesh, "compiler_options_kvs": pp.is_empty})
pp.name_sharing[jit_p] = "jaxpr"


def _jit_abstract_eval(*avals, jaxpr, **params):
  return jaxpr.out_avals


def _jit_impl(*args, jaxpr, **params):
  return backend.compile_jaxpr(jaxpr)(*args)


jit_p.def_abstract_eval(_jit_abstract_eval)
jit_p.def_impl(_jit_impl)


def _jit_eager_weak(args, params):
  return [a.weak_type for a in params["jaxpr"].out_avals]


jit_p.eager_weak_type = _jit_eager_weak


# Autodiff: forward mode is one jit of the JVP'd body; linearizing splits it into a primal jit
# (outputs + residuals) and a linear jit of the same name, which transposes to a jit again.
# Shardings follow the values as in JAX: tangents take their primals' in/out shardings,
# residuals are left unspecified, and a transpose's cotangents take the shardings of the
# values they are cotangents of.
def _jit_jvp(primals, tangents, *, jaxpr, name, **params):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  jvp_closed, nz_out = ad.jvp_jaxpr(jaxpr, nonzeros)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  donated = list(params["donated_invars"]) + [d for d, nz in
                                              zip(params["donated_invars"], nonzeros) if nz]
  ins, outs_sh = _shardings_of(params, "in_shardings"), _shardings_of(params, "out_shardings")
  in_sh = ins + [s for s, nz in zip(ins, nonzeros) if nz]
  out_sh = outs_sh + [s for s, nz in zip(outs_sh, nz_out) if nz]
  outs = jit_p.bind(*primals, *nz_tangents, **_derived_params(jvp_closed, name, params, donated,
                                                              in_sh, out_sh))
  n = len(jaxpr.out_avals)
  return outs[:n], with_zeros(outs[n:], nz_out, jaxpr.out_avals)


def _jit_linearize(primals, tangents, *, jaxpr, name, **params):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  lin = linearize.linearize_jaxpr(jaxpr, nonzeros)
  ins, outs_sh = _shardings_of(params, "in_shardings"), _shardings_of(params, "out_shardings")
  n_res = len(lin.primal.out_avals) - sum(f is None for f in lin.out_fwd)
  primal_out_sh = [s for s, f in zip(outs_sh, lin.out_fwd) if f is None] + \
      [pp.UNSPECIFIED] * n_res
  call_outs = jit_p.bind(*primals, **_derived_params(lin.primal, name, params,
                                                     params["donated_invars"], ins,
                                                     primal_out_sh))
  primal_outs, residuals = lin.assemble(primals, call_outs)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  tangent_outs = []
  if any(lin.nz_out):
    tangent_in_sh = [pp.UNSPECIFIED] * len(residuals) + \
        [s for s, nz in zip(ins, nonzeros) if nz]
    tangent_out_sh = [s for s, nz in zip(outs_sh, lin.nz_out) if nz]
    tangent_outs = jit_p.bind(*residuals, *nz_tangents,
                              **_derived_params(lin.tangent, name, params, None,
                                                tangent_in_sh, tangent_out_sh))
  return primal_outs, with_zeros(tangent_outs, lin.nz_out, jaxpr.out_avals)


def _jit_transpose(cts, *args, jaxpr, name, **params):
  undefined = [ad.is_undefined_primal(a) for a in args]
  nz_cts = [type(c) is not ad.Zero for c in cts]
  trans, nonzero = ad.transpose_jaxpr(jaxpr, undefined, nz_cts)
  ins = [a for a in args if not ad.is_undefined_primal(a)]
  ins += [c for c in cts if type(c) is not ad.Zero]
  in_shs, out_shs = _shardings_of(params, "in_shardings"), _shardings_of(params, "out_shardings")
  trans_in = [s for s, u in zip(in_shs, undefined) if not u] + \
      [s for s, nz in zip(out_shs, nz_cts) if nz]
  trans_out = [s for s, nz in zip([s for s, u in zip(in_shs, undefined) if u], nonzero) if nz]
  outs = jit_p.bind(*ins, **_derived_params(trans, name, params, None, trans_in, trans_out)) \
      if any(nonzero) else []
  return ad.spread_transposed(args, nonzero, outs)


def _derived_params(closed, name, params, donated=None, in_shardings=None, out_shardings=None):
  return jit_params(closed, name, len(closed.in_avals), len(closed.out_avals), donated,
                    params.get("keep_unused", False), params.get("inline", False),
                    in_shardings, out_shardings)


def _shardings_of(params, key) -> list:
  """The eqn's in/out shardings as a list, UNSPECIFIED where none was given."""
  return [pp.UNSPECIFIED if s is None else s for s in params.get(key, ())]


def shardings_param(shardings, n) -> tuple:
  """An in/out shardings param of `n` entries: all None when nothing is specified (dropped from
  printouts), else UNSPECIFIED (printed `UnspecifiedValue` as JAX does) where unspecified."""
  if shardings is None or all(s is None or s is pp.UNSPECIFIED for s in shardings):
    return (None,) * n
  shardings = tuple(pp.UNSPECIFIED if s is None else s for s in shardings)
  if len(shardings) != n:
    raise ValueError(f"jit: {len(shardings)} shardings given for {n} values")
  return shardings


def with_zeros(nonzero_vals, nonzero, avals):
  """Values for the `nonzero` positions, symbolic zeros of `avals`' tangent types elsewhere."""
  it = iter(nonzero_vals)
  return [next(it) if nz else ad.Zero(ad.tangent_aval(a)) for nz, a in zip(nonzero, avals)]


def _known_outputs(jaxpr, unknown_in):
  """(the eqns of `jaxpr` reading none of its `unknown_in` inputs, nested eqns that read both
  split by their own forward splits; per output, whether it depends on an unknown input)."""
  dep = {v for v, u in zip(jaxpr.invars, unknown_in) if u}
  known = []
  for eqn in jaxpr.eqns:
    reads = [type(v) is core.Var and v in dep for v in eqn.invars]
    if not any(reads):
      known.append(eqn)
      continue
    split = ad.forward_splits.get(eqn.primitive)
    if split is not None and not all(reads):
      part, eqn, unknown_out = split(eqn, reads)
      if part is not None:
        known.append(part)
      dep.update(v for v, u in zip(eqn.outvars, unknown_out) if u)
    else:
      dep.update(eqn.outvars)
  return known, [type(v) is core.Var and v in dep for v in jaxpr.outvars]


def _split_jit_eqn(eqn, linear_in):
  """(a jit of the part of `eqn`'s body giving the outputs that read no linear input, or None;
  `eqn` with those outputs dropped; per output, whether it is linear). A jit JVP'd inside a
  custom_jvp rule (ott's `norm`: `jax.jvp(jnp.linalg.norm, ...)`, itself a jit) is staged
  whole into the linear jaxpr, primals and tangents in, both out; its primal outputs are
  ordinary values that later eqns multiply tangents by (JAX's partial evaluation splits the
  jit the same way)."""
  params = eqn.params
  closed = params["jaxpr"]
  if eqn.effects or closed.jaxpr.effects:
    return None, eqn, [True] * len(eqn.outvars)
  body_eqns, linear_out = _known_outputs(closed.jaxpr, linear_in)
  keep = [i for i, lin in enumerate(linear_out) if not lin]
  if not keep:
    return None, eqn, linear_out
  known_in = [i for i, lin in enumerate(linear_in) if not lin]
  part = core.JaxprEqn([eqn.invars[i] for i in known_in], [eqn.outvars[i] for i in keep], jit_p,
                       _jit_of_outputs(params, closed, known_in, body_eqns, keep),
                       eqn.effects, eqn._source_info)
  rest = core.JaxprEqn(eqn.invars, [core.Var(v.aval) if i in keep else v
                                    for i, v in enumerate(eqn.outvars)],
                       eqn.primitive, params, eqn.effects, eqn._source_info)
  return part, rest, linear_out


def _jit_of_outputs(params, closed, keep_in, body_eqns, keep_out):
  """The params of a jit of `closed`'s body restricted to inputs `keep_in`, eqns `body_eqns`
  and outputs `keep_out` (dead eqns and consts dropped)."""
  jaxpr = closed.jaxpr
  body = core.Jaxpr(jaxpr.constvars, [jaxpr.invars[i] for i in keep_in],
                    [jaxpr.outvars[i] for i in keep_out], body_eqns)
  part = linearize.dce_closed(core.ClosedJaxpr(body, closed.consts))
  ins, outs = _shardings_of(params, "in_shardings"), _shardings_of(params, "out_shardings")
  donated = params.get("donated_invars") or (False,) * len(jaxpr.invars)
  return _derived_params(part, params["name"], params, [donated[i] for i in keep_in],
                         [ins[i] for i in keep_in] if ins else None,
                         [outs[i] for i in keep_out] if outs else None)


def _jit_mixed(parent, tangent_trace, args, linear_in, params):
  """A jit bound with primals and tangents while linearizing: its outputs that read no tangent
  come from a jit of their part of the body on the parent trace, the others from a jit of the
  rest staged into the linear jaxpr (JAX's partial evaluation of a jit)."""
  closed = params["jaxpr"]
  if not closed.jaxpr.effects:
    known_eqns, linear_out = _known_outputs(closed.jaxpr, linear_in)
    keep = [i for i, lin in enumerate(linear_out) if not lin]
    if keep:
      known_in = [i for i, lin in enumerate(linear_in) if not lin]
      with core.set_current_trace(parent):
        known = jit_p.bind(*[args[i] for i in known_in],
                           **_jit_of_outputs(params, closed, known_in, known_eqns, keep))
      staged = []
      linear = [i for i, lin in enumerate(linear_out) if lin]
      if linear:
        with core.set_current_trace(tangent_trace):
          staged = tangent_trace.process_primitive(
              jit_p, args, _jit_of_outputs(params, closed, range(len(args)),
                                           closed.jaxpr.eqns, linear))
      known, staged = iter(known), iter(staged)
      return [next(staged) if lin else next(known) for lin in linear_out]
  with core.set_current_trace(tangent_trace):
    return tangent_trace.process_primitive(jit_p, args, params)


ad.jvp_rules[jit_p] = _jit_jvp
ad.linearize_rules[jit_p] = _jit_linearize
ad.primitive_transposes[jit_p] = _jit_transpose
ad.forward_splits[jit_p] = _split_jit_eqn
linearize.mixed_call_rules[jit_p] = _jit_mixed


def _jit_batcher(axis_data, vals, dims, *, jaxpr, **params):
  # One jit eqn over the batched jaxpr; an eqn with nothing batched in or out stays as it was.
  batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  if all(d is None for d in dims) and all(d is None for d in out_dims):
    return jit_p.bind(*vals, jaxpr=jaxpr, **params), out_dims
  # The batch dimension enters the shardings unsharded (or over vmap's spmd_axis_name).
  spmd = axis_data.spmd_name
  params = dict(params)
  params["in_shardings"] = shardings_param(
      [_batch_sharding(s, d, spmd) for s, d in zip(_shardings_of(params, "in_shardings"), dims)],
      len(dims))
  params["out_shardings"] = shardings_param(
      [_batch_sharding(s, d, spmd) for s, d in zip(_shardings_of(params, "out_shardings"),
                                                   out_dims)], len(out_dims))
  return jit_p.bind(*vals, jaxpr=batched, **params), out_dims


def _batch_sharding(s, dim, spmd_name):
  """`s` (a sharding of an unbatched value) with the batch dimension `dim` inserted."""
  spec = getattr(s, "spec", None)
  if dim is None or spec is None:
    return s
  if spmd_name is None and getattr(s, "is_fully_replicated", False):
    return s  # replicated stays as it is
  if hasattr(s, "mesh"):  # JAX goes through XLA's sharding: size-1 mesh axes vanish
    from jaxlite._src.sharding.named_sharding import without_trivial_axes
    s = without_trivial_axes(s)
    spec = s.spec
  if spmd_name is None and dim >= len(spec):
    return s  # specs keep no trailing Nones
  parts = list(spec) + [None] * max(0, dim - len(spec))
  parts.insert(dim, spmd_name if spmd_name is None or len(spmd_name) != 1 else spmd_name[0])
  return s.with_spec(type(spec)(*parts))


batching.axis_primitive_batchers[jit_p] = _jit_batcher

# Dropped from printouts when at these values (see pretty_print's param rules).
DEFAULT_JIT_PARAMS = dict(inline=False, keep_unused=False, ctx_mesh=None,
                          compiler_options_kvs=())


def jit_params(closed, name, n_in, n_out, donated=None, keep_unused=False, inline=False,
               in_shardings=None, out_shardings=None):
  return dict(
      name=name, jaxpr=closed,
      donated_invars=tuple(donated) if donated is not None else (False,) * n_in,
      in_shardings=shardings_param(in_shardings, n_in),
      out_shardings=shardings_param(out_shardings, n_out),
      in_layouts=(None,) * n_in, out_layouts=(None,) * n_out,
      inline=inline, keep_unused=keep_unused, ctx_mesh=None, compiler_options_kvs=())


# --- arguments and results of staged calls (jit, control flow bodies) ---------------------------

_PY_SCALARS = (int, float, complex, bool)


def as_traceable_arg(x):
  """A flat argument made ready for tracing: Python scalars become weak typed scalars."""
  t = type(x)
  if t in _PY_SCALARS:
    if t is int:
      dtypes.check_python_int(x, dtypes.default_int_dtype())
    return dtypes.weak_scalar(x)
  if isinstance(x, np.ndarray):
    canon = dtypes.canonicalize_dtype(x.dtype)
    return x if canon == x.dtype else x.astype(canon)
  return x


def _check_output(x, fun):
  if isinstance(x, core.Array):  # tracers, ArrayImpl and typed PRNG key arrays
    return x
  if type(x) in _PY_SCALARS or isinstance(x, (np.ndarray, np.generic)) \
      or type(x) in dtypes.typed_scalar_types:
    return as_traceable_arg(x)
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type (returned by "
                  f"{fun_name(fun)})")


def fun_name(fun) -> str:
  name = getattr(fun, "__name__", None)
  if name is None and isinstance(fun, functools.partial):
    return fun_name(fun.func)
  return name or type(fun).__name__


def fun_src_info(fun) -> str:
  try:
    code = fun.__code__
    return f"{fun_name(fun)} at {code.co_filename}:{code.co_firstlineno}"
  except AttributeError:
    return fun_name(fun)


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(jit_p, pk.CALL, jaxpr_param="jaxpr", role="jit")
