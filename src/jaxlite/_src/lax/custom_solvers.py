"""`lax.custom_linear_solve` and `lax.custom_root`: solves whose derivatives come from implicit
differentiation (another solve) instead of differentiating through the solver's iterations.

The matvec's closure is traced out into explicit consts so derivatives reach the parameters it
closes over. custom_linear_solve is a `custom_vjp` (b̄ = A⁻ᵀx̄ by `transpose_solve`), so it has
reverse mode but, unlike JAX's `linear_solve` primitive, no forward mode yet.
"""
from __future__ import annotations

import functools

from jaxlite._src.base import core, tree_util
from jaxlite._src.transforms.custom_derivatives import custom_vjp
from jaxlite._src.lax.control_flow import common


class _Spec:
  """The traced matvec and solves (hashed by identity: a nondiff argument). `solve` and
  `transpose_solve` are traced up front, as JAX does: values they close over (cg's `x0`,
  made from `b` inside an enclosing jit) become arguments of the rule instead of tracers of
  that jit leaking into the rule's later traces (reverse mode of a jitted cg)."""

  def __init__(self, matvec_jaxpr, b_tree, symmetric, has_aux):
    self.matvec_jaxpr, self.b_tree = matvec_jaxpr, b_tree
    self.symmetric, self.has_aux = symmetric, has_aux
    self.solve_body = self.transpose_body = None

  def matvec(self, consts, x):
    flat = tree_util.tree_leaves(x)
    out = core.eval_jaxpr(self.matvec_jaxpr.jaxpr, self.matvec_jaxpr.consts, *consts, *flat)
    return tree_util.tree_unflatten(self.b_tree, out)

  def vecmat(self, consts, b_like):
    if self.symmetric:
      return functools.partial(self.matvec, consts)
    from jaxlite._src.transforms.ad_api import vjp
    zeros = tree_util.tree_map(lambda v: v * 0, b_like)
    _, pullback = vjp(functools.partial(self.matvec, consts), zeros)
    return lambda y: pullback(y)[0]

  def trace(self, solve, operator, consts, b, traced_for):
    """`solve(operator(consts), b)` traced with the matvec's consts and b as arguments."""
    avals = [core.get_aval(v) for v in (*consts, *tree_util.tree_leaves(b))]
    return common.trace_body(lambda c, b: solve(operator(c, b), b),
                             tree_util.tree_structure((list(consts), b)), avals, traced_for)

  def solved(self, body, solve_consts, consts, b):
    out = core.eval_jaxpr(body.jaxpr.jaxpr, body.jaxpr.consts, *solve_consts, *consts,
                          *tree_util.tree_leaves(b))
    out = tree_util.tree_unflatten(body.out_tree, out)
    return out if self.has_aux else (out, None)


@functools.partial(custom_vjp, nondiff_argnums=(0,))
def _linear_solve(spec, consts, solve_consts, b):
  return spec.solved(spec.solve_body, solve_consts[0], consts, b)


def _linear_solve_fwd(spec, consts, solve_consts, b):
  x, aux = _linear_solve(spec, consts, solve_consts, b)
  return (x, aux), (consts, solve_consts, x)


def _linear_solve_bwd(spec, res, cts):
  """b̄ = A⁻ᵀ x̄ by `transpose_solve`; the matvec's consts get -(∂(A x)/∂θ)ᵀ b̄."""
  from jaxlite._src.transforms.ad_api import vjp
  consts, solve_consts, x = res
  ct_x = cts[0]
  if spec.transpose_body is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                    "of custom_linear_solve.")
  ct_b = spec.solved(spec.transpose_body, solve_consts[1], consts, ct_x)[0]
  _, pullback = vjp(lambda c: spec.matvec(c, x), consts)
  (ct_consts,) = pullback(tree_util.tree_map(lambda v: -v, ct_b))
  return ct_consts, tree_util.tree_map(lambda v: v * 0, solve_consts), ct_b


_linear_solve.defvjp(_linear_solve_fwd, _linear_solve_bwd)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
  """`solve(matvec, b)` (the x with matvec(x) = b), differentiated implicitly: derivatives are
  solves with `solve` (forward mode) and `transpose_solve` on the transposed matvec (reverse
  mode; `solve` itself when `symmetric`)."""
  b = tree_util.tree_map(common.as_array, b)
  b_flat, b_tree = tree_util.tree_flatten(b)
  avals = [core.get_aval(v) for v in b_flat]
  body = common.trace_body(matvec, tree_util.tree_structure((b,)), avals, "custom_linear_solve")
  if body.out_tree != b_tree or [a.shape for a in body.out_avals] != [a.shape for a in avals]:
    raise TypeError("custom_linear_solve: matvec must return a pytree of the same structure and "
                    f"shapes as b, got {body.out_tree} with {list(body.out_avals)} for b of "
                    f"{b_tree} with {avals}")
  spec = _Spec(body.jaxpr, b_tree, symmetric, has_aux)
  consts = list(body.consts)
  spec.solve_body = spec.trace(solve, lambda c, _: functools.partial(spec.matvec, c), consts,
                               b, "custom_linear_solve solve")
  solve_consts = [list(spec.solve_body.consts), []]
  if symmetric:
    spec.transpose_body = spec.solve_body
    solve_consts[1] = solve_consts[0]
  elif transpose_solve is not None:
    spec.transpose_body = spec.trace(transpose_solve, spec.vecmat, consts, b,
                                     "custom_linear_solve transpose_solve")
    solve_consts[1] = list(spec.transpose_body.consts)
  x, aux = _linear_solve(spec, consts, solve_consts, b)
  return (x, aux) if has_aux else x


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
  """The root `solve(f, initial_guess)` of `f`, differentiated implicitly through the
  parameters `f` closes over: x' = -(∂f/∂x)⁻¹ ∂f/∂θ θ', with `tangent_solve(g, y)` solving
  the linear system g(x) = y (g is ∂f/∂x at the root)."""
  initial_guess = tree_util.tree_map(common.as_array, initial_guess)
  guess_flat, guess_tree = tree_util.tree_flatten(initial_guess)
  avals = [core.get_aval(v) for v in guess_flat]
  body = common.trace_body(f, tree_util.tree_structure((initial_guess,)), avals, "custom_root")
  if body.out_tree != guess_tree:
    raise TypeError("custom_root: f must return a pytree with the structure of initial_guess, "
                    f"got {body.out_tree} for {guess_tree}")
  spec = _RootSpec(body.jaxpr, guess_tree, solve, tangent_solve, has_aux)
  # `solve` is traced too (as JAX does): the values it closes over (the differentiated
  # parameters, often) become arguments of the root's rule, not tracers leaking into it; they
  # get no gradient through the solver (the implicit rule gives it through f's).
  consts = list(body.consts)
  solve_body = common.trace_body(
      lambda g: solve(functools.partial(spec.f, consts), g),
      tree_util.tree_structure((initial_guess,)), avals, "custom_root solve")
  spec.solve_jaxpr, spec.solve_tree = solve_body.jaxpr, solve_body.out_tree
  x, aux = _root(spec, consts, list(solve_body.consts), initial_guess)
  return (x, aux) if has_aux else x


class _RootSpec:
  def __init__(self, f_jaxpr, tree, solve, tangent_solve, has_aux):
    self.f_jaxpr, self.tree = f_jaxpr, tree
    self.solve, self.tangent_solve, self.has_aux = solve, tangent_solve, has_aux
    self.solve_jaxpr = self.solve_tree = None

  def f(self, consts, x):
    out = core.eval_jaxpr(self.f_jaxpr.jaxpr, self.f_jaxpr.consts, *consts,
                          *tree_util.tree_leaves(x))
    return tree_util.tree_unflatten(self.tree, out)

  def solved(self, solve_consts, guess):
    out = core.eval_jaxpr(self.solve_jaxpr.jaxpr, self.solve_jaxpr.consts, *solve_consts,
                          *tree_util.tree_leaves(guess))
    return tree_util.tree_unflatten(self.solve_tree, out)


@functools.partial(custom_vjp, nondiff_argnums=(0,))
def _root(spec, consts, solve_consts, guess):
  out = spec.solved(solve_consts, guess)
  return out if spec.has_aux else (out, None)


def _root_fwd(spec, consts, solve_consts, guess):
  x, aux = _root(spec, consts, solve_consts, guess)
  return (x, aux), (consts, solve_consts, x)


def _root_bwd(spec, res, cts):
  """θ̄ = -(∂f/∂θ)ᵀ λ with (∂f/∂x)ᵀ λ = x̄ solved by `tangent_solve`; the guess gets zeros."""
  from jaxlite._src.transforms.ad_api import vjp
  consts, solve_consts, x = res
  _, f_x_t = vjp(functools.partial(spec.f, consts), x)
  lam = spec.tangent_solve(lambda y: f_x_t(y)[0], cts[0])
  _, pullback = vjp(lambda c: spec.f(c, x), consts)
  (ct_consts,) = pullback(tree_util.tree_map(lambda v: -v, lam))
  return (ct_consts, tree_util.tree_map(lambda v: v * 0, solve_consts),
          tree_util.tree_map(lambda v: v * 0, x))


_root.defvjp(_root_fwd, _root_bwd)
