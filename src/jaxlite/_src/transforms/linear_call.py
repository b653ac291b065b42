"""`jax.custom_derivatives.linear_call`: call `fun(residuals, linear_args)`, and transpose it with
the user's `fun_transpose(residuals, cotangents)` instead of transposing `fun`'s body."""
from __future__ import annotations

from jaxlite._src.base import core, tree_util
from jaxlite._src.compiler import backend
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import partial_eval as pe


def _trace(fun, in_tree, avals):
  """(ClosedJaxpr of flat `fun` with outer tracers lifted to leading invars, those tracers,
  the output tree)."""
  store = {}

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, list(xs)))
    leaves, store["tree"] = tree_util.tree_flatten(out)
    return leaves
  closed, lifted = pe.convert_constvars_to_invars(pe.trace_to_jaxpr(flat, avals))
  return closed, lifted, store["tree"]


def _memoize(thunk):
  cache = []

  def memoized():
    if not cache:
      cache.append(thunk())
    return cache[0]
  return memoized


def linear_call(fun, fun_transpose, residual_args, linear_args):
  """`fun(residual_args, linear_args)`, linear in `linear_args`, whose transpose (used by grad,
  vjp and linear_transpose) is `fun_transpose(residual_args, cotangents)`."""
  from jaxlite._src.base.operands import asarg
  for name, f in (("fun", fun), ("fun_transpose", fun_transpose)):
    if not callable(f):
      raise TypeError(f"linear_call: {name} must be callable, got {f!r}")
  operands_res, res_tree = tree_util.tree_flatten(residual_args)
  operands_lin, lin_tree = tree_util.tree_flatten(linear_args)
  operands_res, operands_lin = [asarg(x) for x in operands_res], [asarg(x) for x in operands_lin]
  res_avals = [core.get_aval(x) for x in operands_res]
  lin_avals = [core.get_aval(x) for x in operands_lin]
  pair_tree = tree_util.tree_structure((residual_args, linear_args))
  callee, f_consts, out_tree = _trace(fun, pair_tree, [*res_avals, *lin_avals])
  n_consts = len(f_consts)
  out_avals = callee.out_avals[:]
  dummy_outs = tree_util.tree_unflatten(out_tree, [0] * len(out_avals))
  t_tree = tree_util.tree_structure((residual_args, dummy_outs))

  def transpose_thunk():
    t_closed, t_consts, t_out_tree = _trace(fun_transpose, t_tree, [*res_avals, *out_avals])
    if t_out_tree != lin_tree:
      raise TypeError("transpose output pytree structure must match that of linear inputs, "
                      f"got output structure {t_out_tree} and input structure {lin_tree}.")
    return t_closed, t_consts
  # The callee's lifted consts are its leading invars: the call's first `n_consts` operands.
  out = linear_call_p.bind(*f_consts, *operands_res, *operands_lin, callee=callee,
                           transpose_thunk=_memoize(transpose_thunk),
                           num_callee_consts=n_consts, num_res=len(operands_res))
  return tree_util.tree_unflatten(out_tree, out)


def _linear_call_impl(*args, callee, transpose_thunk, num_callee_consts, num_res):
  return backend.compile_jaxpr(callee)(*args)


def _linear_call_jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts, num_res):
  # Linear in its linear operands: the tangent is the same call on their tangents (residuals
  # and consts must not carry tangents, as in JAX).
  k = num_callee_consts + num_res
  if any(type(t) is not ad.Zero for t in tangents[:k]):
    raise TypeError("linear_call: residual arguments must not depend on the differentiated "
                    "inputs (their tangents must be zero)")
  params = dict(callee=callee, transpose_thunk=transpose_thunk,
                num_callee_consts=num_callee_consts, num_res=num_res)
  primals_out = linear_call_p.bind(*primals, **params)
  if all(type(t) is ad.Zero for t in tangents[k:]):
    return primals_out, [ad.Zero(ad.tangent_aval(a)) for a in callee.out_avals]
  lin_tangents = [ad.instantiate_zeros(t) for t in tangents[k:]]
  return primals_out, linear_call_p.bind(*primals[:k], *lin_tangents, **params)


def _linear_call_transpose_rule(cts, *args, callee, transpose_thunk, num_callee_consts,
                                num_res):
  transpose, t_consts = transpose_thunk()
  f_consts = args[:num_callee_consts]
  operands_res = args[num_callee_consts:num_callee_consts + num_res]
  if any(ad.is_undefined_primal(x) for x in operands_res):
    raise TypeError("linear_call: cannot transpose with respect to residual arguments")

  def new_transpose_thunk():
    return callee, f_consts
  ct_avals = transpose.in_avals[len(t_consts) + num_res:]
  cts = [ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct for ct, a in zip(cts, ct_avals)]
  cts_out = linear_call_p.bind(*t_consts, *operands_res, *cts, callee=transpose,
                               transpose_thunk=new_transpose_thunk,
                               num_callee_consts=len(t_consts), num_res=len(operands_res))
  return [None] * (num_callee_consts + num_res) + list(cts_out)


# No batching rule, as in JAX 0.10.2: vmap of a linear_call raises NotImplementedError.
linear_call_p = core.Primitive("linear_call")
linear_call_p.multiple_results = True
linear_call_p.def_impl(_linear_call_impl)
linear_call_p.def_abstract_eval(lambda *avals, callee, **params: list(callee.out_avals))
ad.jvp_rules[linear_call_p] = _linear_call_jvp
ad.primitive_transposes[linear_call_p] = _linear_call_transpose_rule
# StableHLO: the callee inlined (the transpose matters only to autodiff, before lowering).
xla.register(linear_call_p, lambda ctx, *args, callee, **_: ctx.lower_jaxpr(callee, None, args))


def fwd_and_bwd(fun, argnums, has_aux: bool = False, jitted: bool = True):
  """`jax.fwd_and_bwd`: `fwd(*args)` is `jax.vjp` of `fun` in the `argnums` arguments (giving
  outputs and the vjp function as residuals, plus aux), and `bwd(residuals, ct)` applies it
  (one cotangent for an int `argnums`); both jitted by default, so `bwd` compiles once."""
  import operator
  from jaxlite._src.transforms.ad_api import vjp
  from jaxlite._src.transforms.jit import jit
  if not callable(fun):
    raise TypeError(f"fwd_and_bwd requires a callable argument, got {fun!r}")
  single = isinstance(argnums, int)
  nums = (operator.index(argnums),) if single else tuple(operator.index(a) for a in argnums)

  def fwd(*args):
    dyn = [args[i] for i in nums]

    def partial_fun(*d):
      full = list(args)
      for i, v in zip(nums, d):
        full[i] = v
      return fun(*full)
    return vjp(partial_fun, *dyn, has_aux=has_aux)

  def bwd(f_vjp, outgrad):
    g = f_vjp(outgrad)
    return g[0] if single else g
  if jitted:
    fwd, bwd = jit(fwd), jit(bwd)
  return fwd, bwd
