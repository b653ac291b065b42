"""The autodiff API: jvp, linearize, vjp, grad, value_and_grad, stop_gradient (the Jacobians,
which split their rows with lax ops, stand above lax in `jacobians`).

Forward mode runs `ad.JVPTrace`; reverse mode linearizes (`interpreters.linearize`) and then
transposes the linear jaxpr with `ad.backward_pass`, as JAX does.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxlite._src.compat import traceback_util
from jaxlite._src.base import core, dtypes, tree_util
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import linearize as lin
from jaxlite._src.interpreters.ad import Zero

# What this module needs from lax (pvary, to seed a varying output's cotangent in a check_vma
# shard_map body): registered by lax.parallel_comm at its import (issue 29: no import up).
_above = {}


def register_above(**names):
  _above.update(names)


# --- arguments and outputs ---------------------------------------------------------------------


def _as_array(x, what: str = "Argument"):
  """A flat argument or output as something primitives accept: tracers and Arrays pass."""
  if isinstance(x, core.Array):  # concrete arrays, key arrays and tracers
    return x
  if type(x) in (int, float, complex, bool) or isinstance(x, (np.ndarray, np.generic)) \
      or type(x) in dtypes.typed_scalar_types:
    out = core.asarray(x)
    if type(out) is core.array_type and not out.ndim and out is not x:
      core.as_scalar_literal(out)  # a literal wherever it goes, as JAX keeps the scalar
    return out
  if what == "Argument":
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type.")
  raise TypeError(f"{what} {x!r} of type {type(x)} is not a valid JAX type")


def _checked(x, what: str = "Argument"):
  """A flat argument or output of `jvp` as it is (JAX keeps Python and NumPy values), once it
  is known to be a valid JAX type."""
  _as_array(x, what) if not isinstance(x, core.Array) else None
  return x


def _flat_fun(fun, in_tree, has_aux, store: dict, as_array=None):
  """`fun` over flat arguments returning (flat outputs, aux); the output tree goes to `store`.
  Outputs pass through `as_array` (by default: made Arrays)."""
  as_array = _as_array if as_array is None else as_array

  def flat_fun(*flat):
    args = tree_util.tree_unflatten(in_tree, flat)
    out = fun(*args)
    aux = None
    if has_aux:
      if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError("expected function with aux output to return a two-element tuple, but "
                        f"got type {type(out)} with value {out!r}")
      out, aux = out
    leaves, store["out_tree"] = tree_util.tree_flatten(out)
    return [as_array(o, "Output") for o in leaves], aux
  return flat_fun


def _fun_name(fun) -> str:
  while isinstance(fun, functools.partial):
    fun = fun.func
  return getattr(fun, "__name__", type(fun).__name__)


# --- forward mode ------------------------------------------------------------------------------


@traceback_util.api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
  """(fun(*primals), the Jacobian of fun at primals applied to tangents)."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  flat_p, tree_p = tree_util.tree_flatten(tuple(primals))
  flat_t, tree_t = tree_util.tree_flatten(tuple(tangents))
  if tree_p != tree_t:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree structure; "
                    f"primals have tree structure {tree_p} whereas tangents have tree structure "
                    f"{tree_t}.")
  # Python and NumPy values stay as they are, as in JAX: a custom_jvp rule sees `2.0` as a
  # float (equinox's filter_custom_jvp partitions on that), and so do the outputs
  flat_p = [_checked(p) for p in flat_p]
  flat_t = [_check_tangent(p, _checked(t)) for p, t in zip(flat_p, flat_t)]
  store, seen = {}, {}
  flat_fun = _flat_fun(fun, tree_p, has_aux, store, _checked)

  def run(*args):
    seen["trace"] = core.current_trace()
    outs, seen["aux"] = flat_fun(*args)
    return outs

  out_p, out_t = ad.jvp_flat(run, flat_p, flat_t)
  out_tree = store["out_tree"]
  result = (tree_util.tree_unflatten(out_tree, out_p), tree_util.tree_unflatten(out_tree, out_t))
  if not has_aux:
    return result
  trace = seen["trace"]
  aux = tree_util.tree_map(
      lambda x: x.primal if type(x) is ad.JVPTracer and x._trace is trace else x, seen["aux"])
  return result + (aux,)


def _check_tangent(p, t):
  """JAX's checks on a (primal, tangent) pair; float0 tangents become symbolic zeros."""
  p_aval, t_aval = core.get_aval(p), core.get_aval(t)
  want = ad.tangent_dtype(p_aval.dtype)
  if want != t_aval.dtype:
    raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be "
                    "equal, or in case of int/bool primal dtype the tangent dtype must be float0."
                    f"Got primal dtype {dtypes.dtype_name(p_aval.dtype)} and so expected tangent "
                    f"dtype {dtypes.dtype_name(want)}, but got tangent dtype "
                    f"{dtypes.dtype_name(t_aval.dtype)} instead.")
  if p_aval.shape != t_aval.shape:
    raise ValueError("jvp called with different primal and tangent shapes;Got primal shape "
                     f"{p_aval.shape} and tangent shape as {t_aval.shape}")
  return Zero(t_aval) if want == dtypes.float0 else t


@traceback_util.api_boundary
def linearize(fun: Callable, *primals, has_aux: bool = False):
  """(fun(*primals), a function applying fun's Jacobian at primals to tangents[, aux])."""
  flat_p, in_tree = tree_util.tree_flatten(primals)
  flat_p = [_as_array(p) for p in flat_p]
  store = {}
  out_p, out_nz, lin_closed, aux = lin.linearize_flat(
      _flat_fun(fun, in_tree, has_aux, store), flat_p)
  out_tree = store["out_tree"]
  in_avals = [core.get_aval(p) for p in flat_p]
  out_avals = [ad.tangent_aval(core.get_aval(o)) for o in out_p]
  spec = _LinearSpec(lin_closed.jaxpr, in_tree, out_tree, in_avals, out_avals, tuple(out_nz),
                     len(lin_closed.consts))
  f_jvp = tree_util.Partial(functools.partial(_apply_linearized, spec), *lin_closed.consts)
  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, f_jvp, aux) if has_aux else (out, f_jvp)


class _LinearSpec:
  """The static part of a linearized function: its jaxpr, pytrees and types."""
  __slots__ = ("in_avals", "in_tree", "jaxpr", "n_res", "out_avals", "out_nz", "out_tree")

  def __init__(self, jaxpr, in_tree, out_tree, in_avals, out_avals, out_nz, n_res):
    self.jaxpr, self.in_tree, self.out_tree = jaxpr, in_tree, out_tree
    self.in_avals, self.out_avals, self.out_nz = in_avals, out_avals, out_nz
    self.n_res = n_res


def _apply_linearized(spec, *args):
  """The linearized function: residuals (bound by Partial) then the tangents, one per primal."""
  residuals, tangents = args[:spec.n_res], args[spec.n_res:]
  flat_t, tree = tree_util.tree_flatten(tangents)
  if tree != spec.in_tree:
    raise ValueError(f"linearized function called on tangent values inconsistent with the "
                     f"original primal values: got tangent tree {tree} for primal tree "
                     f"{spec.in_tree}.")
  for t, a in zip(flat_t, spec.in_avals):
    t_aval = core.get_aval(t)
    if t_aval.shape != a.shape or (ad.tangent_dtype(a.dtype) != dtypes.float0
                                   and t_aval.dtype != ad.tangent_dtype(a.dtype)):
      raise ValueError("linearized function called on tangent values inconsistent with the "
                       f"original primal values: got tangent aval {t_aval} for primal aval "
                       f"{a}")
  flat_t = [_as_array(t) for t in flat_t]
  outs = iter(core.eval_jaxpr(spec.jaxpr, list(residuals), *flat_t))
  flat_out = [next(outs) if nz else ad.zeros_like_aval(a)
              for nz, a in zip(spec.out_nz, spec.out_avals)]
  return tree_util.tree_unflatten(spec.out_tree, flat_out)


# --- reverse mode ------------------------------------------------------------------------------


class VJPFunction:
  """The function `vjp` returns: output cotangents -> input cotangents (a pytree of residuals)."""
  __slots__ = (
    "__weakref__",
    "_in_avals",
    "_in_tree",
    "_jaxpr",
    "_name",
    "_out_avals",
    "_out_nz",
    "_out_tree",
    "_residuals",
  )

  def __init__(self, jaxpr, residuals, in_tree, out_tree, in_avals, out_avals, out_nz, name):
    self._jaxpr, self._residuals = jaxpr, list(residuals)
    self._in_tree, self._out_tree = in_tree, out_tree
    self._in_avals, self._out_avals, self._out_nz = in_avals, out_avals, out_nz
    self._name = name

  def __call__(self, ct, *extra):
    if extra:
      raise TypeError(_VJP_TOO_MANY_ARGS.format(self._name, len(extra) + 1))
    flat_ct, tree = tree_util.tree_flatten(ct, is_leaf=lambda x: type(x) is Zero)
    if tree != self._out_tree:
      raise ValueError(_ct_tree_error(self._name, self._out_tree, tree))
    cts = [self._checked_ct(c, a) for c, a, nz in zip(flat_ct, self._out_avals, self._out_nz)
           if nz]
    undefined = [ad.UndefinedPrimal(v.aval) for v in self._jaxpr.invars]
    res = ad.backward_pass(self._jaxpr, self._residuals, undefined, cts)
    flat = [ad.instantiate_zeros(r) for r in res]
    return tree_util.tree_unflatten(self._in_tree, flat)

  @staticmethod
  def _checked_ct(ct, primal_aval):
    if type(ct) is Zero:
      return ct
    got, want = core.get_aval(_as_array(ct)), ad.tangent_aval(primal_aval)
    if want.dtype != dtypes.float0 and (got.shape != want.shape or got.dtype != want.dtype):
      raise ValueError("unexpected JAX type (e.g. shape/dtype) for argument to VJP function: "
                       f"got {_long(got)}, but expected {_long(want)} because the corresponding "
                       f"output of the differentiated function had JAX type {_long(primal_aval)}")
    # as in JAX, the cotangent goes on as it came: a custom_vjp's bwd sees a Python float as one
    return ct if type(ct) in (float, int, complex) else _as_array(ct)


def _long(aval) -> str:
  return aval.str_short(short_dtypes=False)


def _ct_tree_error(name, want, got) -> str:
  if got.num_leaves == 1 and want.num_leaves != 1 or not tree_util.treedef_children(got):
    diff = (f"  * out was a {_node_type(want)} in the original output, but a pytree leaf here, "
            "so their Python types differ.")
  else:
    diff = f"  * out has tree structure {got} here, but {want} in the original output."
  return ("unexpected tree structure.\n\nThe argument to a VJP function returned by `jax.vjp` "
          "must match the pytree\nstructure of the differentiated function "
          f"{name}.\n\nBut the tree structures differ:\n{diff}")


def _node_type(tree) -> str:
  example = tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
  return str(type(example))


tree_util.register_pytree_node(
    VJPFunction,
    lambda f: (f._residuals, (f._jaxpr, f._in_tree, f._out_tree, f._in_avals, f._out_avals,
                              f._out_nz, f._name)),
    lambda aux, residuals: VJPFunction(aux[0], residuals, *aux[1:]))

_VJP_TOO_MANY_ARGS = """
The function returned by `jax.vjp` applied to {} was called with {} arguments,
but functions returned by `jax.vjp` must be called with a single argument
corresponding to the single value returned by the function being differentiated
(even if that returned value is a tuple or other container).

For example, if we have:

  def f(x):
    return (x, x)
  _, f_vjp = jax.vjp(f, 1.0)

the function `f` returns a single tuple as output, and so we call `f_vjp` with a
single tuple as its argument:

  x_bar, = f_vjp((2.0, 2.0))

If we instead call `f_vjp(2.0, 2.0)`, with the values 'splatted out' as
arguments rather than in a tuple, this error can arise.
"""


@traceback_util.api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
  """(fun(*primals), a function pulling output cotangents back to input cotangents[, aux])."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  flat_p, in_tree = tree_util.tree_flatten(primals)
  flat_p = [_as_array(p) for p in flat_p]
  store = {}
  out_p, out_nz, lin_closed, aux = lin.linearize_flat(
      _flat_fun(fun, in_tree, has_aux, store), flat_p)
  out_tree = store["out_tree"]
  f_vjp = VJPFunction(lin_closed.jaxpr, lin_closed.consts, in_tree, out_tree,
                      [core.get_aval(p) for p in flat_p], [core.get_aval(o) for o in out_p],
                      tuple(out_nz), _fun_name(fun))
  out = tree_util.tree_unflatten(out_tree, out_p)
  return (out, f_vjp, aux) if has_aux else (out, f_vjp)


def _argnums_partial(fun, argnums, args, kwargs):
  nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
  top = max(nums) if nums else -1
  if top >= len(args):
    raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                    f"{top + 1} positional arguments to be passed by the caller, but got only "
                    f"{len(args)} positional arguments.")
  dyn = tuple(args[i] for i in nums)

  def f_partial(*dyn_args):
    full = list(args)
    for i, a in zip(nums, dyn_args):
      full[i] = a
    return fun(*full, **kwargs)
  f_partial.__name__ = _fun_name(fun)
  return f_partial, dyn


def _check_argnums(argnums):
  ok = isinstance(argnums, int) or (isinstance(argnums, (tuple, list))
                                    and all(isinstance(i, int) for i in argnums))
  if not ok:
    raise TypeError("argnums must be an int or a tuple of ints, got "
                    f"{type(argnums).__name__}: {argnums!r}")
  return argnums if isinstance(argnums, int) else tuple(argnums)


def _check_input_dtype_revderiv(name, holomorphic, allow_int, x):
  aval = core.get_aval(_as_array(x))
  dt = aval.dtype
  if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but got "
                    f"{dtypes.dtype_name(dt)}.")
  if not isinstance(dt, np.dtype) or dtypes.issubdtype(dt, np.integer) \
      or dtypes.issubdtype(dt, np.bool_):
    if not allow_int:
      raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                      f"sub-dtype of np.inexact), but got {dtypes.dtype_name(dt)}. If you want "
                      "to use Boolean- or integer-valued inputs, use vjp or set allow_int to "
                      "True.")
  elif not dtypes.issubdtype(dt, np.inexact):
    raise TypeError(f"{name} requires numerical-valued inputs (input dtype that is a sub-dtype "
                    f"of np.bool_ or np.number), but got {dtypes.dtype_name(dt)}.")


def _check_output_dtype_revderiv(name, holomorphic, x):
  dt = core.get_aval(x).dtype
  if holomorphic:
    if not dtypes.issubdtype(dt, np.complexfloating):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, but "
                      f"got {dtypes.dtype_name(dt)}.")
  elif dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dtypes.dtype_name(dt)}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex outputs, use jax.vjp directly.")
  elif not dtypes.issubdtype(dt, np.floating):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dtypes.dtype_name(dt)}. For differentiation of "
                    "functions with integer outputs, use jax.vjp directly.")


def _check_scalar(x):
  msg = "Gradient only defined for scalar-output functions. Output {}."
  try:
    aval = core.get_aval(x)
  except TypeError:
    raise TypeError(msg.format(f"was {x}")) from None
  if aval.shape != ():
    raise TypeError(msg.format(f"had shape: {aval.shape}"))


def _one_like(x):
  """The cotangent seed of a scalar output: a 1 of its dtype (a literal when traced)."""
  aval = core.get_aval(x)
  one = core.array_from_numpy(np.ones((), aval.dtype), aval.weak_type)
  if core.vma_typing is not None and aval.vma:  # JAX seeds with the output's varying axes
    one = _above["pvary_p"].bind(one, axes=tuple(n for n in core.vma_typing.order if n in aval.vma))
  return one


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: Sequence = ()) -> Callable:
  """A function returning (fun(*args), the gradient of fun with respect to args[argnums])."""
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  argnums = _check_argnums(argnums)

  @functools.wraps(fun)
  @traceback_util.api_boundary
  def value_and_grad_f(*args, **kwargs):
    f_partial, dyn_args = _argnums_partial(fun, argnums, args, kwargs)
    for leaf in tree_util.tree_leaves(dyn_args):
      _check_input_dtype_revderiv("grad", holomorphic, allow_int, leaf)
    if has_aux:
      ans, vjp_fn, aux = vjp(f_partial, *dyn_args, has_aux=True)
    else:
      ans, vjp_fn = vjp(f_partial, *dyn_args)
    _check_scalar(ans)
    tree_util.tree_map(functools.partial(_check_output_dtype_revderiv, "grad", holomorphic), ans)
    g = vjp_fn(_one_like(ans))
    g = g[0] if isinstance(argnums, int) else g
    return ((ans, aux) if has_aux else ans), g

  return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False,
         reduce_axes: Sequence = ()) -> Callable:
  """A function returning the gradient of scalar-valued `fun` with respect to args[argnums]."""
  value_and_grad_f = value_and_grad(fun, argnums, has_aux=has_aux, holomorphic=holomorphic,
                                    allow_int=allow_int)

  @functools.wraps(fun)
  @traceback_util.api_boundary
  def grad_f(*args, **kwargs):
    (_, aux), g = value_and_grad_f(*args, **kwargs)
    return g, aux

  @functools.wraps(fun)
  @traceback_util.api_boundary
  def grad_f_noaux(*args, **kwargs):
    return value_and_grad_f(*args, **kwargs)[1]

  return grad_f if has_aux else grad_f_noaux


# --- stop_gradient -----------------------------------------------------------------------------


def stop_gradient(x: Any) -> Any:
  """`x` with no derivative: every inexact leaf goes through `stop_gradient`."""
  def stop(leaf):
    leaf = _as_array(leaf)
    dt = core.get_aval(leaf).dtype
    if dtypes.issubdtype(dt, np.inexact):
      return ad.stop_gradient_p.bind(leaf)
    return leaf
  return tree_util.tree_map(stop, x)
