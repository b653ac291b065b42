"""`while_p` and `scan_p`: loops over closed jaxprs, and the lax functions that trace Python
bodies into them (while_loop, fori_loop, scan, map, associative_scan).

Loop bodies run as tier-0 generated code, never a jaxpr interpreter: a while loop calls its
compiled cond and body; a scan is one loop function from the backend (`backend.compile_scan`:
on NumPy, generated code with the body inlined and loop-invariant eqns hoisted out).
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from jaxlite._src.compat import traceback_util
from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.rng import prng
from jaxlite._src.compiler import backend, passes
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.base.config import config
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.interpreters import ad, batching, linearize
from jaxlite._src.transforms.call_primitives import as_traceable_arg
from jaxlite._src.lax import elementwise_functions as lax
from jaxlite._src.lax import prefix_scan
from jaxlite._src.lax.control_flow import common
from jaxlite._src.lax.control_flow import lowering as cf_lowering
from jaxlite._src.lax.control_flow.common import merge_lists, split_list

# --- while ---------------------------------------------------------------------------------------

while_p = core.Primitive("while")
while_p.multiple_results = True


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  n_carry = len(avals) - cond_nconsts - body_nconsts
  if len(cond_jaxpr.in_avals) != cond_nconsts + n_carry:
    raise TypeError(f"while_loop cond_jaxpr takes {len(cond_jaxpr.in_avals)} inputs but "
                    f"{cond_nconsts + n_carry} were given")
  if len(body_jaxpr.in_avals) != body_nconsts + n_carry:
    raise TypeError(f"while_loop body_jaxpr takes {len(body_jaxpr.in_avals)} inputs but "
                    f"{body_nconsts + n_carry} were given")
  return body_jaxpr.out_avals


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # A backend may run the whole loop itself (the native tier's compiled loops); else Python.
  loop = backend.compile_while(cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts)
  if loop is not None:
    return loop(*args)
  return while_python(*args, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                      cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)


# Python's loop over the backend's compiled cond and body (the native tier falls back to it).
while_python = backend.while_python


while_p.def_abstract_eval(_while_abstract_eval)
while_p.def_impl(_while_impl)
xla.register(while_p, cf_lowering.while_rule)


def _while_batch_rule(axis_data, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                      body_nconsts):
  """Carries batched until a fixed point; a batched predicate batches every carry (the
  examples then stop at different iterations, see `_batched_while`)."""
  params = {"cond_jaxpr": cond_jaxpr, "body_jaxpr": body_jaxpr, "cond_nconsts": cond_nconsts,
            "body_nconsts": body_nconsts}
  if all(d is None for d in dims):
    return while_p.bind(*args, **params), [None] * len(body_jaxpr.out_avals)
  batched = [d is not None for d in dims]
  cconst_b, bconst_b, carry_b = split_list(batched, [cond_nconsts, body_nconsts])
  while True:
    _, pred_b = common.batch_body(cond_jaxpr, axis_data, cconst_b + carry_b, [False])
    _, out_b = common.batch_body(body_jaxpr, axis_data, bconst_b + carry_b, carry_b)
    new_b = [True] * len(carry_b) if pred_b[0] else [a or b for a, b in zip(carry_b, out_b)]
    if new_b == carry_b:
      break
    carry_b = new_b
  new_cond, _ = common.batch_body(cond_jaxpr, axis_data, cconst_b + carry_b, [False])
  new_body, _ = common.batch_body(body_jaxpr, axis_data, bconst_b + carry_b, carry_b)
  args = common.moved_to_front(args, dims, cconst_b + bconst_b + carry_b, axis_data.size)
  outs = while_p.bind(*args, cond_jaxpr=new_cond, body_jaxpr=new_body,
                      cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
  return outs, [0 if b else None for b in carry_b]


batching.axis_primitive_batchers[while_p] = _while_batch_rule


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """The body's JVP carries tangents beside the primal carry; the cond ignores them."""
  nz = [not common.is_zero(t) for t in tangents]
  cconsts, bconsts, init = split_list(primals, [cond_nconsts, body_nconsts])
  _, bconst_nz, carry_nz = split_list(nz, [cond_nconsts, body_nconsts])
  _, bconst_t, init_t = split_list(tangents, [cond_nconsts, body_nconsts])
  carry_nz = _carry_fixed_point(body_jaxpr, bconst_nz, carry_nz, len(init), 0)
  n_bc, n_carry = len(bconsts), len(init)
  body = common.memo(body_jaxpr, ("while_jvp", tuple(bconst_nz), tuple(carry_nz)),
                     lambda: _jvp_loop_body(body_jaxpr, n_bc, bconst_nz, carry_nz, []))
  cond = common.memo(cond_jaxpr, ("while_jvp_cond", sum(carry_nz)),
                     lambda: _ignore_extra_invars(cond_jaxpr, [
                         ad.tangent_aval(a) for a, nz in zip(body_jaxpr.out_avals, carry_nz)
                         if nz]))
  bt = [t for t in bconst_t if not common.is_zero(t)]
  it = _instantiated(init_t, carry_nz, init)
  outs = while_p.bind(*cconsts, *bconsts, *bt, *init, *it, cond_jaxpr=cond, body_jaxpr=body,
                      cond_nconsts=cond_nconsts, body_nconsts=n_bc + len(bt))
  return outs[:n_carry], _spread(outs[n_carry:], carry_nz, body_jaxpr.out_avals)


def _while_transpose_error(*args, **params):
  raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                   "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using "
                   "fori_loop with static start/stop.")


def _while_linearize(primals, tangents, **params):
  """The primal loop runs on the parent (its outputs are known values, as JAX's partial eval
  makes them); the joint JVP loop is staged for the tangents alone. So code after the loop
  that divides by its primal outputs stays linear, and reverse mode reaches the while's
  transpose error instead of failing on that code first."""
  primal_out = while_p.bind(*primals, **params)
  _, tangent_out = _while_jvp(primals, tangents, **params)
  return primal_out, tangent_out


ad.jvp_rules[while_p] = _while_jvp
ad.linearize_rules[while_p] = _while_linearize
ad.primitive_transposes[while_p] = _while_transpose_error


def _carry_fixed_point(body, const_nz, carry_nz, n_carry, n_xs_nz, xs_nz=()) -> list:
  """Which carries have nonzero tangents: those that start so or become so in an iteration."""
  carry_nz = list(carry_nz)
  while True:
    _, out_nz = ad.jvp_jaxpr(body, tuple(const_nz) + tuple(carry_nz) + tuple(xs_nz))
    new = [a or b for a, b in zip(carry_nz, out_nz[:n_carry])]
    if new == carry_nz:
      return carry_nz
    carry_nz = new


def _jvp_loop_body(body, n_consts, const_nz, carry_nz, xs_nz, ys_nz=None):
  """The body's JVP with binders in loop order: consts, const tangents, carry, carry tangents,
  xs, xs tangents -> carry, carry tangents, ys, ys tangents."""
  n_carry = len(carry_nz)
  nonzeros = list(const_nz) + list(carry_nz) + list(xs_nz)
  if ys_nz is None:
    ys_nz = list(ad.jvp_jaxpr(body, tuple(nonzeros))[1][n_carry:])
  jvp = common.jvp_body(body, nonzeros, list(carry_nz) + list(ys_nz))
  n_in = len(body.in_avals)
  primals, tangents = jvp.jaxpr.invars[:n_in], jvp.jaxpr.invars[n_in:]
  p_consts, p_carry, p_xs = split_list(primals, [n_consts, n_carry])
  t_consts, t_carry, t_xs = split_list(tangents, [sum(const_nz), sum(carry_nz)])
  n_out = len(body.out_avals)
  p_out, t_out = jvp.jaxpr.outvars[:n_out], jvp.jaxpr.outvars[n_out:]
  nct = sum(carry_nz)
  outvars = p_out[:n_carry] + t_out[:nct] + p_out[n_carry:] + t_out[nct:]
  invars = p_consts + t_consts + p_carry + t_carry + p_xs + t_xs
  return core.ClosedJaxpr(jvp.jaxpr.replace(invars=invars, outvars=outvars), jvp.consts)


def _ignore_extra_invars(closed, extra_avals):
  extra = [core.Var(a) for a in extra_avals]
  return core.ClosedJaxpr(closed.jaxpr.replace(invars=closed.jaxpr.invars + extra), closed.consts)


def _instantiated(tangents, nonzeros, primals) -> list:
  return [ad.instantiate_zeros_staged(t) if common.is_zero(t) else t
          for t, nz, p in zip(tangents, nonzeros, primals) if nz]


def _spread(present, nonzeros, avals) -> list:
  it = iter(present)
  return [next(it) if nz else ad.Zero(ad.tangent_aval(a)) for nz, a in zip(nonzeros, avals)]


@traceback_util.api_boundary
def while_loop(cond_fun, body_fun, init_val):
  """`while cond_fun(val): val = body_fun(val)`, staged as one `while` eqn."""
  if not (callable(body_fun) and callable(cond_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  if config.jax_disable_jit:
    try:
      return _python_while(cond_fun, body_fun, init_val)
    except core_errors().ConcretizationTypeError:
      pass  # a transformation made the predicate abstract: stage the loop after all
  init_flat, in_tree = tree_util.tree_flatten(init_val)
  init_flat = [as_traceable_arg(x) for x in init_flat]
  avals = tuple(core.get_aval(x) for x in init_flat)
  new_dtypes, plan = common.cached_trace(
      (cond_fun, body_fun), (in_tree, avals, "while"),
      lambda: _trace_while(cond_fun, body_fun, in_tree, avals))
  init_flat = _promoted(init_flat, new_dtypes)
  cond_jaxpr, cond_consts, body_jaxpr, body_consts, move_to_const, out_tree = plan
  carry, moved = _partition(move_to_const, init_flat)
  outs = while_p.bind(*cond_consts, *moved, *body_consts, *carry,
                      cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                      cond_nconsts=len(cond_consts), body_nconsts=len(moved) + len(body_consts))
  return tree_util.tree_unflatten(out_tree, merge_lists(move_to_const, outs, moved))


def core_errors():
  from jaxlite._src.base import errors
  return errors


def _python_while(cond_fun, body_fun, init_val):
  val = tree_util.tree_map(common.as_array, init_val)
  while cond_fun(val):
    val = tree_util.tree_map(common.as_array, body_fun(val))
  return val


def _trace_while(cond_fun, body_fun, in_tree, avals):
  """Both bodies traced (twice when a weak init must take the body's dtype), checked, and
  carries the body passes through unchanged (and the cond ignores) turned into body consts."""
  cond_body, body = _trace_while_bodies(cond_fun, body_fun, in_tree, avals)
  if len(body.out_avals) != len(avals):
    common.check_carry_type("while_loop body", body_fun, in_tree, list(avals), body.out_tree,
                            body.out_avals)
  new_dtypes = _weak_promotions(avals, body.out_avals)
  if any(d is not None for d in new_dtypes):
    avals = tuple(a if d is None else ShapedArray(a.shape, d) for a, d in zip(avals, new_dtypes))
    cond_body, body = _trace_while_bodies(cond_fun, body_fun, in_tree, avals)
  common.check_carry_type("while_loop body", body_fun, in_tree, list(avals), body.out_tree,
                          body.out_avals)
  n_cc, n_bc = len(cond_body.consts), len(body.consts)
  body_fwd = common.forwarding(body.jaxpr.jaxpr)
  cond_uses = _used_invars(cond_body.jaxpr.jaxpr)[n_cc:]
  move_to_const = [f == n_bc + i and not used
                   for i, (f, used) in enumerate(zip(body_fwd, cond_uses))]
  cond_jaxpr, body_jaxpr = cond_body.jaxpr, body.jaxpr
  if any(move_to_const):
    cond_jaxpr = _drop_invars(cond_jaxpr, [False] * n_cc + move_to_const)
    body_jaxpr = common.prune_outputs(body_jaxpr, [not m for m in move_to_const])
    body_jaxpr = common.move_invars_to_front(body_jaxpr, [False] * n_bc + move_to_const)
  plan = (cond_jaxpr, cond_body.consts, body_jaxpr, body.consts, move_to_const, body.out_tree)
  return new_dtypes, plan


def _trace_while_bodies(cond_fun, body_fun, in_tree, avals):
  tree = tree_util.treedef_tuple([in_tree])
  cond_body = common.trace_body(cond_fun, tree, avals, "while_cond")
  body = common.trace_body(body_fun, tree, avals, "while_body")
  if not tree_util.treedef_is_leaf(cond_body.out_tree) or len(cond_body.out_avals) != 1:
    raise TypeError("cond_fun must return a boolean scalar, but got pytree "
                    f"{cond_body.out_tree}.")
  pred = cond_body.out_avals[0]
  if pred.shape != () or pred.dtype != np.bool_:
    raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                    f"{cond_body.out_avals}.")
  return cond_body, body


def _used_invars(jaxpr) -> list:
  used = {v for e in jaxpr.eqns for v in e.invars if type(v) is core.Var}
  used.update(v for v in jaxpr.outvars if type(v) is core.Var)
  return [v in used for v in jaxpr.invars]


def _drop_invars(closed, drop) -> core.ClosedJaxpr:
  invars = [v for v, d in zip(closed.jaxpr.invars, drop) if not d]
  return core.ClosedJaxpr(closed.jaxpr.replace(invars=invars), closed.consts)


def _partition(which, xs):
  return [x for x, w in zip(xs, which) if not w], [x for x, w in zip(xs, which) if w]


def _weak_promotions(in_avals, out_avals) -> list:
  """Per carry, the dtype a weak-typed init must take to match the body's output, or None."""
  out = []
  for a, b in zip(in_avals, out_avals):
    if a.weak_type and not common.typematch(a, b):
      out.append(dtypes.promote_signature(((a.dtype, True), (b.dtype, b.weak_type)))[0])
    else:
      out.append(None)
  return out


def _promoted(values, new_dtypes) -> list:
  if not any(d is not None for d in new_dtypes):
    return values
  return [v if d is None else common.as_array(lax.convert_element_type(v, d))
          for v, d in zip(values, new_dtypes)]


# --- fori_loop -----------------------------------------------------------------------------------


@traceback_util.api_boundary
def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
  """`for i in range(lower, upper): val = body_fun(i, val)`: a scan when the bounds are
  concrete (so reverse mode works), a while loop otherwise."""
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  dtype = _fori_index_dtype(lower, upper)
  if _is_concrete(lower) and _is_concrete(upper):
    lower_, upper_ = int(lower), int(upper)
    length = max(upper_ - lower_, 0)
    if config.jax_disable_jit and length == 0:
      return init_val
    (_, result), _ = scan(_fori_scan_body(body_fun), (lower_, init_val), None, length=length,
                          unroll=False if unroll is None else unroll)
    return result
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically "
                     "known.")
  if dtypes.dtype_and_weak(lower)[0] != dtype:
    lower = lax.convert_element_type(lower, dtype)
  if dtypes.dtype_and_weak(upper)[0] != dtype:
    upper = lax.convert_element_type(upper, dtype)
  _, _, result = while_loop(_fori_cond, _fori_while_body(body_fun), (lower, upper, init_val))
  return result


def _fori_index_dtype(lower, upper):
  (ld, lw), (ud, uw) = dtypes.dtype_and_weak(lower), dtypes.dtype_and_weak(upper)
  if ld == ud:
    return ld
  # A weak (Python) bound takes the other bound's signed integer type.
  if ld.kind == "i" and ud.kind == "i" and lw != uw:
    return ud if lw else ld
  raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                  f"{ld.name} and {ud.name}")


def _is_concrete(x) -> bool:
  if isinstance(x, core.Tracer):
    return x.to_concrete_value() is not None
  return True


def _fori_cond(carry):
  i, upper, _ = carry
  return lax.lt(i, upper)


# Wrappers are memoized per body function so repeated loops reuse their traced jaxprs; they
# hold the body weakly so the memo does not keep it alive.
_wrappers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _memo_wrapper(kind, fun, make):
  """`make(fun_ref)` once per (kind, fun); `fun_ref()` gives `fun` back."""
  try:
    per_fun = _wrappers.setdefault(fun, {})
  except TypeError:
    return make(lambda: fun)
  wrapper = per_fun.get(kind)
  if wrapper is None:
    wrapper = per_fun[kind] = make(weakref.ref(fun))
  return wrapper


def _fori_while_body(body_fun):
  def make(fun_ref):
    def while_body(loop_carry):  # JAX's name, which its carry type errors print
      i, upper, x = loop_carry
      return lax.add(i, np.array(1, dtypes.dtype_and_weak(i)[0])), upper, fun_ref()(i, x)
    return while_body
  return _memo_wrapper("fori_while", body_fun, make)


def _fori_scan_body(body_fun):
  def make(fun_ref):
    def scan_body(loop_carry, _):  # JAX's name, which its carry type errors print
      i, x = loop_carry
      return (i + 1, fun_ref()(i, x)), None
    return scan_body
  return _memo_wrapper("fori_scan", body_fun, make)


# --- scan ----------------------------------------------------------------------------------------

scan_p = core.Primitive("scan")
scan_p.multiple_results = True


def _scan_abstract_eval(*avals, reverse, length, jaxpr, num_consts, num_carry, unroll):
  if len(avals) != len(jaxpr.in_avals):
    raise ValueError("scan number of arguments doesn't match the number of jaxpr arguments: "
                     f"{len(avals)} vs {len(jaxpr.in_avals)}")
  carry_avals, y_avals = split_list(jaxpr.out_avals, [num_carry])
  return carry_avals + [a.update(shape=(length, *a.shape)) for a in y_avals]


def _scan_impl(*args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  consts, carry, xs = split_list(args, [num_consts, num_carry])
  ys = [np.empty((length, *a.shape), prng.storage_dtype(a.dtype))
        for a in jaxpr.out_avals[num_carry:]]
  if length:
    loop = backend.compile_scan(jaxpr, num_consts, num_carry, reverse)
    carry = loop(*consts, *carry, *xs, *ys, length)
  return [*carry, *ys]


scan_p.def_abstract_eval(_scan_abstract_eval)
scan_p.def_impl(_scan_impl)
xla.register(scan_p, cf_lowering.scan_rule)


def _scan_batch_rule(axis_data, args, dims, *, reverse, length, jaxpr, num_consts, num_carry,
                     unroll):
  """Consts and carries batched at axis 0, xs at axis 1 (axis 0 is the scanned one); carries
  batched until a fixed point; ys come out batched at axis 1."""
  params = {"reverse": reverse, "length": length, "num_consts": num_consts,
            "num_carry": num_carry, "unroll": unroll}
  num_ys = len(jaxpr.out_avals) - num_carry
  if all(d is None for d in dims):
    return scan_p.bind(*args, jaxpr=jaxpr, **params), [None] * len(jaxpr.out_avals)
  batched = [d is not None for d in dims]
  const_b, carry_b, xs_b = split_list(batched, [num_consts, num_carry])
  while True:
    _, out_b = common.batch_body(jaxpr, axis_data, const_b + carry_b + xs_b,
                                 carry_b + [False] * num_ys)
    new_b = [a or b for a, b in zip(carry_b, out_b[:num_carry])]
    if new_b == carry_b:
      break
    carry_b = new_b
  new_jaxpr, out_b = common.batch_body(jaxpr, axis_data, const_b + carry_b + xs_b,
                                       carry_b + [False] * num_ys)
  consts, carry, xs = split_list(args, [num_consts, num_carry])
  const_d, carry_d, xs_d = split_list(dims, [num_consts, num_carry])
  size = axis_data.size
  consts = common.moved_to_front(consts, const_d, const_b, size)
  carry = common.moved_to_front(carry, carry_d, carry_b, size)
  xs = [x if d is None else batching.moveaxis(x, d, 1) for x, d in zip(xs, xs_d)]
  outs = scan_p.bind(*consts, *carry, *xs, jaxpr=new_jaxpr, **params)
  out_dims = [0 if b else None for b in carry_b] + [1 if b else None for b in out_b[num_carry:]]
  return outs, out_dims


batching.axis_primitive_batchers[scan_p] = _scan_batch_rule


def _scan_jvp(primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry, unroll):
  """A scan of the body's JVP: tangents of consts are consts, of carries carries, of xs xs."""
  nz = [not common.is_zero(t) for t in tangents]
  const_nz, init_nz, xs_nz = split_list(nz, [num_consts, num_carry])
  carry_nz = _carry_fixed_point(jaxpr, const_nz, init_nz, num_carry, 0, xs_nz)
  body = common.memo(jaxpr, ("scan_jvp", tuple(const_nz), tuple(carry_nz), tuple(xs_nz)),
                     lambda: _jvp_loop_body(jaxpr, num_consts, const_nz, carry_nz, xs_nz))
  ys_nz = list(ad.jvp_jaxpr(jaxpr, tuple(const_nz + carry_nz + xs_nz))[1][num_carry:])
  consts, init, xs = split_list(primals, [num_consts, num_carry])
  const_t, init_t, xs_t = split_list(tangents, [num_consts, num_carry])
  ct = [t for t in const_t if not common.is_zero(t)]
  it = _instantiated(init_t, carry_nz, init)
  xt = [t for t in xs_t if not common.is_zero(t)]
  outs = scan_p.bind(*consts, *ct, *init, *it, *xs, *xt, reverse=reverse, length=length,
                     jaxpr=body, num_consts=num_consts + len(ct), num_carry=num_carry + len(it),
                     unroll=unroll)
  carry, carry_t, ys, ys_t = split_list(outs, [num_carry, len(it), len(ys_nz)])
  out_avals = _scan_abstract_eval(*[core.get_aval(p) for p in primals], reverse=reverse,
                                  length=length, jaxpr=jaxpr, num_consts=num_consts,
                                  num_carry=num_carry, unroll=unroll)
  return carry + ys, _spread(carry_t + ys_t, carry_nz + ys_nz, out_avals)


def _scan_linearize(primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry,
                    unroll):
  """Reverse mode: a primal scan that also emits the residuals of each iteration (stacked),
  then a linear scan of the tangents reading them as xs."""
  params = {"reverse": reverse, "length": length, "unroll": unroll}
  nz = tuple(not common.is_zero(t) for t in tangents)
  const_nz, init_nz, xs_nz = split_list(nz, [num_consts, num_carry])
  carry_nz = tuple(_carry_fixed_point(jaxpr, const_nz, init_nz, num_carry, 0, xs_nz))
  plan = common.memo(jaxpr, ("scan_linearize", tuple(const_nz), carry_nz, tuple(xs_nz)),
                     lambda: _ScanLinearization(jaxpr, num_consts, num_carry, const_nz,
                                                carry_nz, xs_nz))
  init = primals[num_consts:num_consts + num_carry]
  outs = scan_p.bind(*primals, jaxpr=plan.primal, num_consts=num_consts, num_carry=num_carry,
                     **params)
  n_out = len(jaxpr.out_avals)
  primal_out, stacked = outs[:n_out], outs[n_out:]
  invariant = [primals[i] for i in plan.invariant_src]
  stacked_it = iter(stacked)
  extensive = [primals[i] if i is not None else next(stacked_it) for i in plan.extensive_src]
  const_t, init_t, xs_t = split_list(tangents, [num_consts, num_carry])
  ct = [t for t in const_t if not common.is_zero(t)]
  it = _instantiated(init_t, carry_nz, init)
  xt = [t for t in xs_t if not common.is_zero(t)]
  if not any(plan.out_nz):
    return primal_out, _spread([], plan.out_nz, _out_avals(jaxpr, num_carry, length))
  t_out = scan_p.bind(*invariant, *ct, *it, *xt, *extensive, jaxpr=plan.tangent,
                      num_consts=len(invariant) + len(ct), num_carry=len(it), **params)
  return primal_out, _spread(t_out, plan.out_nz, _out_avals(jaxpr, num_carry, length))


def _scan_transpose(cts, *args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  """A linear scan run backwards: carry = (const cotangent sums, carry cotangents), xs =
  (y cotangents, defined xs), ys = cotangents of the linear xs (JAX's order)."""
  consts, init, xs = split_list(args, [num_consts, num_carry])
  const_lin = tuple(ad.is_undefined_primal(c) for c in consts)
  xs_lin = tuple(ad.is_undefined_primal(x) for x in xs)
  # Carries are linear in a tangent scan; one given as a value is a materialized zero tangent,
  # transposed like the others, its cotangent dropped.
  init_lin = [ad.is_undefined_primal(c) for c in init]
  cts = [ad.instantiate_zeros(c) for c in cts]
  ct_carry, ct_ys = split_list(cts, [num_carry])
  body = common.memo(jaxpr, ("scan_transpose", const_lin, xs_lin),
                     lambda: _transposed_scan_body(jaxpr, num_consts, num_carry, const_lin,
                                                   xs_lin))
  def_consts = [c for c, lin in zip(consts, const_lin) if not lin]
  def_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
  acc = [ad.zeros_like_aval(c.aval) for c, lin in zip(consts, const_lin) if lin]
  outs = scan_p.bind(*def_consts, *acc, *ct_carry, *ct_ys, *def_xs, reverse=not reverse,
                     length=length, jaxpr=body, num_consts=len(def_consts),
                     num_carry=len(acc) + num_carry, unroll=unroll)
  ct_consts, ct_init, ct_xs = split_list(outs, [len(acc), num_carry])
  ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
  return ([next(ct_consts) if lin else None for lin in const_lin]
          + [c if lin else None for c, lin in zip(ct_init, init_lin)]
          + [next(ct_xs) if lin else None for lin in xs_lin])


def _transposed_scan_body(jaxpr, num_consts, num_carry, const_lin, xs_lin):
  consts_avals, _, xs_avals = split_list(jaxpr.in_avals, [num_consts, num_carry])
  def_consts = [a for a, lin in zip(consts_avals, const_lin) if not lin]
  acc = [ad.tangent_aval(a) for a, lin in zip(consts_avals, const_lin) if lin]
  ct_carry = [ad.tangent_aval(a) for a in jaxpr.out_avals[:num_carry]]
  def_xs = [a for a, lin in zip(xs_avals, xs_lin) if not lin]
  ct_ys = [ad.tangent_aval(a) for a in jaxpr.out_avals[num_carry:]]
  counts = [len(def_consts), len(acc), len(ct_carry), len(ct_ys)]

  def fun(*args):
    d_consts, accs, c_carry, c_ys, d_xs = split_list(args, counts)
    dc, dx = iter(d_consts), iter(d_xs)
    # the carries typed as the body's carry outputs: a weak tangent init (a 0.0 literal) does
    # not make the cotangents weak (JAX's transposed scans carry strong cotangents)
    full = ([ad.UndefinedPrimal(a) if lin else next(dc) for a, lin in zip(consts_avals,
                                                                            const_lin)]
            + [ad.UndefinedPrimal(a) for a in ct_carry]
            + [ad.UndefinedPrimal(a) if lin else next(dx) for a, lin in zip(xs_avals, xs_lin)])
    # each const's cotangent starts from its running sum, added to as it comes (JAX's order)
    acc_it = iter(accs)
    start = [next(acc_it) if lin else None for lin in const_lin]
    res = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full, list(c_carry) + list(c_ys), start)
    res = [ad.instantiate_zeros(r) if r is not None else None for r in res]
    r_consts, r_carry, r_xs = split_list(res, [num_consts, num_carry])
    return [r for r in r_consts if r is not None] + r_carry + [r for r in r_xs if r is not None]
  return common.retrace(fun, def_consts + acc + ct_carry + ct_ys + def_xs)


def _scan_dce(eqn, used_outputs):
  """A scan without its unused ys and the carries no used output needs (found by fixpoint: a
  carry is needed when an output that is needed reads it), its body pruned to match; inputs
  the pruned body does not read go too. JAX's rule, applied to autodiff's linear jaxprs."""
  p = eqn.params
  nc, ncarry = p["num_consts"], p["num_carry"]
  body = p["jaxpr"]
  used_carry, used_ys = list(used_outputs[:ncarry]), list(used_outputs[ncarry:])
  while True:
    keep = used_carry + used_ys
    outs = [v for v, k in zip(body.jaxpr.outvars, keep) if k]
    pruned = passes.dce(body.jaxpr.replace(outvars=outs), prune_subjaxprs=True)
    reads = passes.used_inputs(pruned)
    grown = [u or r for u, r in zip(used_carry, reads[nc:nc + ncarry])]
    if grown == used_carry:
      break
    used_carry = grown
  if all(used_outputs) and all(reads) and len(pruned.eqns) == len(body.jaxpr.eqns):
    return eqn
  keep_in = reads[:nc] + used_carry + reads[nc + ncarry:]
  invars = [v for v, k in zip(pruned.invars, keep_in) if k]
  new_body = core.ClosedJaxpr(pruned.replace(invars=invars), body.consts)
  params = dict(p, jaxpr=new_body, num_consts=sum(reads[:nc]), num_carry=sum(used_carry))
  return eqn.replace(invars=[v for v, k in zip(eqn.invars, keep_in) if k],
                     outvars=[v for v, k in zip(eqn.outvars, used_carry + used_ys) if k],
                     params=params)


passes.dce_rules[scan_p] = _scan_dce


ad.jvp_rules[scan_p] = _scan_jvp
ad.linearize_rules[scan_p] = _scan_linearize
ad.primitive_transposes[scan_p] = _scan_transpose


def _out_avals(jaxpr, num_carry, length):
  carry, ys = split_list(jaxpr.out_avals, [num_carry])
  return carry + [a.update(shape=(length, *a.shape)) for a in ys]


class _ScanLinearization:
  """The scan body split for reverse mode.

  `primal`: (consts, carry, x) -> (carry, y, residuals computed this iteration).
  `tangent`: (invariant residuals, const tangents, carry tangents, x tangents, per-iteration
  residuals) -> (carry tangents, nonzero y tangents), JAX's order. Residuals that are consts
  are passed once; per-iteration ones keep the body's residual order, an x residual being
  the xs themselves.
  """

  def __init__(self, jaxpr, num_consts, num_carry, const_nz, carry_nz, xs_nz):
    nonzeros = tuple(const_nz) + tuple(carry_nz) + tuple(xs_nz)
    lin = linearize.linearize_jaxpr(jaxpr, nonzeros)
    self.out_nz = tuple(carry_nz) + tuple(lin.nz_out[num_carry:])
    kinds = [_residual_kind(kind, i, num_consts, num_carry) for kind, i in lin.res_src]
    self.invariant_src = [i for (_, i), k in zip(lin.res_src, kinds) if k == "const"]
    # per-iteration residuals in order: an x's index (the xs themselves), None for stacked
    self.extensive_src = [i if k == "x" else None for (_, i), k in zip(lin.res_src, kinds)
                          if k != "const"]
    self.primal = _scan_primal_body(jaxpr, lin, [r for r, k in enumerate(kinds)
                                                 if k == "stacked"])
    tangent_counts = [sum(const_nz), sum(carry_nz), sum(xs_nz)]
    self.tangent = _scan_tangent_body(jaxpr, lin, kinds, nonzeros, tangent_counts,
                                      self.out_nz)


def _scan_primal_body(jaxpr, lin, stacked_pos):
  def fun(*ins):
    outs = core.eval_jaxpr(lin.primal.jaxpr, lin.primal.consts, *ins)
    primal_out, res = lin.assemble(list(ins), outs)
    return primal_out + [res[r] for r in stacked_pos]
  # dead eqns pruned, into conds' branches too, as JAX prunes a scan's known body
  return linearize.dce_closed(common.retrace(fun, jaxpr.in_avals), prune_subjaxprs=True)


def _scan_tangent_body(jaxpr, lin, kinds, nonzeros, tangent_counts, out_nz):
  res_avals = [v.aval for v in lin.tangent.jaxpr.invars[:len(kinds)]]
  invariant = [a for a, k in zip(res_avals, kinds) if k == "const"]
  # the per-iteration residuals in the body's residual order, a forwarded x in its place
  extensive = [a for a, k in zip(res_avals, kinds) if k != "const"]
  t_avals = [ad.tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzeros) if nz]
  const_t, carry_t, xs_t = split_list(t_avals, tangent_counts[:2])
  in_avals = invariant + const_t + carry_t + xs_t + extensive
  counts = [len(invariant), len(const_t), len(carry_t), len(xs_t)]

  def fun(*args):
    inv, c_t, k_t, x_t, ext = split_list(args, counts)
    pools = {"const": iter(inv), "stacked": iter(ext), "x": None}
    pools["x"] = pools["stacked"]
    res = [next(pools[k]) for k in kinds]
    outs = core.eval_jaxpr(lin.tangent.jaxpr, lin.tangent.consts, *res, *c_t, *k_t, *x_t)
    return common.instantiate_outputs(outs, lin.nz_out, out_nz, jaxpr.out_avals)
  return common.retrace(fun, in_avals)


def _residual_kind(kind, i, num_consts, num_carry) -> str:
  if kind == "in" and i < num_consts:
    return "const"
  if kind == "in" and i >= num_consts + num_carry:
    return "x"
  return "stacked"


@traceback_util.api_boundary
def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
  """Loops `f(carry, x) -> (carry, y)` over the leading axis of `xs`; returns (carry, ys)."""
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  if not core.hitype_avals:
    return _scan(f, init, xs, length, reverse, unroll)
  from jaxlite._src.compat import hijax  # hi types registered (flax.nnx)
  try:
    return _scan(f, init, xs, length, reverse, unroll, probe_hi=True)
  except hijax.ClosedOverMutation as e:  # the body writes hi values it closes over
    return hijax.thread_through_scan(
        lambda g, carry: _scan(g, carry, xs, length, reverse, unroll), f, init, e.mutated)


def _scan(f, init, xs, length, reverse, unroll, probe_hi=False):
  init_flat, init_tree = tree_util.tree_flatten(init)
  xs_flat, xs_tree = tree_util.tree_flatten(xs)
  length = _infer_scan_length(xs_flat, length)
  if config.jax_disable_jit:
    return _python_scan(f, init, xs_flat, xs_tree, length, reverse)
  init_flat = [as_traceable_arg(x) for x in init_flat]
  xs_flat = [as_traceable_arg(x) for x in xs_flat]
  init_avals = tuple(core.get_aval(x) for x in init_flat)
  x_avals = tuple(core.get_aval(x).update(shape=np.shape(x)[1:]) for x in xs_flat)
  unroll = _check_unroll(unroll, length)
  # (with probe_hi, a body that writes closed-over hi values raises out of cached_trace, so it
  # is traced again every call)
  new_dtypes, plan = common.cached_trace(
      (f,), (init_tree, xs_tree, init_avals, x_avals, "scan"),
      lambda: _trace_scan(f, init_tree, xs_tree, init_avals, x_avals, probe_hi))
  init_flat = _promoted(init_flat, new_dtypes)
  jaxpr, consts, move_to_const, ext_fwd, out_tree, num_ys = plan
  carry, moved = _partition(move_to_const, init_flat)
  args = [*carry, *xs_flat]
  outs = scan_p.bind(*moved, *consts, *args, reverse=bool(reverse), length=length, jaxpr=jaxpr,
                     num_consts=len(moved) + len(consts), num_carry=len(carry), unroll=unroll)
  carry_out, ys = split_list(outs, [len(carry)])
  ys = iter(ys)
  ys = [next(ys) if f_ is None else common.as_array(args[f_]) for f_ in ext_fwd]
  outs = merge_lists(move_to_const + [False] * num_ys, carry_out + ys, moved)
  return tree_util.tree_unflatten(out_tree, outs)


def _infer_scan_length(xs_flat, length) -> int:
  try:
    lengths = [x.shape[0] for x in xs_flat]
  except AttributeError:
    bad = ", ".join(str(x) for x in xs_flat if not hasattr(x, "shape"))
    raise ValueError(f"scan got value with no leading axis to scan over: {bad}.") from None
  if length is not None:
    try:
      length = int(length)
    except core_errors().ConcretizationTypeError:
      raise core_errors().ConcretizationTypeError(
          length, "The `length` argument to `scan` expects a concrete `int` value. For "
          "scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`.") from None
    if not all(length == n for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading "
                       f"axis sizes {lengths}.")
    return length
  if len(set(lengths)) > 1:
    raise ValueError("scan got values with different leading axis sizes: "
                     f"{', '.join(str(n) for n in lengths)}.")
  if not lengths:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  return lengths[0]


def _check_unroll(unroll, length) -> int:
  unroll = core.concrete_or_error(
      None, unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.")
  if isinstance(unroll, (bool, np.bool_)):
    return max(length, 1) if unroll else 1
  if unroll < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  return int(unroll)


def _trace_scan(f, init_tree, xs_tree, init_avals, x_avals, probe_hi=False):
  """The body traced (twice when a weak init must take the body's dtype) and checked; carries
  passed through unchanged become consts and ys that are just xs are returned directly."""
  body, carry_tree, carry_avals = _trace_scan_body(f, init_tree, xs_tree, init_avals, x_avals,
                                                   probe_hi)
  if len(carry_avals) != len(init_avals):
    common.check_carry_type("scan body", f, init_tree, list(init_avals), carry_tree, carry_avals)
  new_dtypes = _weak_promotions(init_avals, carry_avals)
  if any(d is not None for d in new_dtypes):
    init_avals = tuple(a if d is None else ShapedArray(a.shape, d)
                       for a, d in zip(init_avals, new_dtypes))
    body, carry_tree, carry_avals = _trace_scan_body(f, init_tree, xs_tree, init_avals, x_avals)
  common.check_carry_type("scan body", f, init_tree, list(init_avals), carry_tree, carry_avals)
  jaxpr, consts = body.jaxpr, body.consts
  n_consts, n_carry, n_xs = len(consts), len(init_avals), len(x_avals)
  fwd = common.forwarding(jaxpr.jaxpr)
  carry_fwd, ys_fwd = fwd[:n_carry], fwd[n_carry:]
  move_to_const = [f_ == n_consts + i for i, f_ in enumerate(carry_fwd)]
  num_ys = len(ys_fwd)
  if any(move_to_const):
    jaxpr = common.prune_outputs(jaxpr, [not m for m in move_to_const] + [True] * num_ys)
    jaxpr = common.move_invars_to_front(
        jaxpr, [False] * n_consts + move_to_const + [False] * n_xs)
  # A y that is an x unchanged is returned without passing through the loop; indices count
  # from the first carry operand (the total of consts and carries does not change above).
  ext_fwd = [i - n_consts if i is not None and i >= n_consts + n_carry else None
             for i in ys_fwd]
  ext_fwd = [None if i is None else i - sum(move_to_const) for i in ext_fwd]
  jaxpr = common.prune_outputs(jaxpr, [True] * (n_carry - sum(move_to_const))
                               + [i is None for i in ext_fwd])
  return new_dtypes, (jaxpr, consts, move_to_const, ext_fwd, body.out_tree, num_ys)


def _trace_scan_body(f, init_tree, xs_tree, init_avals, x_avals, probe_hi=False):
  tree = tree_util.treedef_tuple([init_tree, xs_tree])
  trace = functools.partial(common.trace_body, f, tree, (*init_avals, *x_avals), "scan")
  if probe_hi:  # hijax.ClosedOverMutation when the body writes hi values it closes over
    from jaxlite._src.compat import hijax
    body = hijax.trace_probing_writes(trace)
  else:
    body = trace()
  children = [] if tree_util.treedef_is_leaf(body.out_tree) else \
      tree_util.treedef_children(body.out_tree)
  if len(children) != 2:
    shown = tree_util.tree_unflatten(body.out_tree, body.out_avals)
    raise TypeError(f"scan body output must be a pair, got {shown}.")
  carry_tree = children[0]
  return body, carry_tree, list(body.out_avals[:carry_tree.num_leaves])


def _python_scan(f, init, xs_flat, xs_tree, length, reverse):
  """disable_jit: a plain Python loop of `f`, ys stacked at the end."""
  if length == 0:
    raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                     "output type is unknown.")
  ops = _slicing_ops()
  carry, ys = init, []
  for i in (range(length - 1, -1, -1) if reverse else range(length)):
    x = [ops.index_in_dim(xf, i, keepdims=False) for xf in xs_flat]
    carry, y = f(carry, tree_util.tree_unflatten(xs_tree, x))
    ys.append(y)
  if reverse:
    ys.reverse()
  stack = lambda *y: ops.concatenate([ops.expand_dims(v, (0,)) for v in y], 0)
  return carry, tree_util.tree_map(stack, *ys)


# --- map -----------------------------------------------------------------------------------------


@traceback_util.api_boundary
def map(f, xs, *, batch_size=None):
  """`stack([f(x) for x in xs])` as a scan; with `batch_size`, a scan over vmapped batches."""
  if batch_size is None:
    _, ys = scan(_map_body(f), (), xs)
    return ys
  from jaxlite._src.lax.shape import concatenate
  from jaxlite._src.transforms.vmap_api import vmap
  leaves, treedef = tree_util.tree_flatten(xs)
  if not leaves:
    return xs
  n = leaves[0].shape[0]
  num_batches, rem = (0, n) if batch_size == 0 else divmod(n, batch_size)
  vf = vmap(f)
  if num_batches == 0:
    return vf(xs)
  head = treedef.unflatten([x[:num_batches * batch_size].reshape(
      (num_batches, batch_size, *x.shape[1:])) for x in leaves])
  _, ys = scan(lambda _, x: ((), vf(x)), (), head)
  ys = tree_util.tree_map(lambda y: y.reshape((-1, *y.shape[2:])), ys)
  if not rem:
    return ys
  tail = vf(treedef.unflatten([x[num_batches * batch_size:] for x in leaves]))
  return tree_util.tree_map(lambda a, b: concatenate([a, b], 0), ys, tail)


def _map_body(f):
  def make(fun_ref):
    def body(_, x):
      return (), fun_ref()(x)
    return body
  return _memo_wrapper("map", f, make)


# --- associative_scan: lax/prefix_scan.py (cumulative reductions' JVPs use it too) -----------

associative_scan = prefix_scan.associative_scan
_slicing_ops = prefix_scan._slicing_ops
