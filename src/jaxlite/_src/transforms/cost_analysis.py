"""`Lowered/Compiled.cost_analysis()`: XLA's cost model (flops, transcendentals, bytes accessed)
counted over a jaxpr's equations, as XLA's HloCostAnalysis counts the HLO they lower to.

The figures are per equation, before fusion: JAX's `Lowered.cost_analysis()` is the comparable
one (its `Compiled` figures count fused HLO, so their 'bytes accessed' is lower). Primitives
that XLA expands into several HLO ops (lgamma, logistic, ...) count as one op here.
"""
from __future__ import annotations

import math

from jaxlite._src.base import core
from jaxlite._src.compiler import passes

# XLA counts these as one transcendental per element (and no flop).
_TRANSCENDENTAL = frozenset("""exp log log1p expm1 tanh logistic sin cos tan asin acos atan
    atan2 sinh cosh asinh acosh atanh sqrt rsqrt cbrt pow erf erfc erf_inv lgamma digamma
    igamma igammac igamma_grad_a random_gamma_grad bessel_i0e bessel_i1e polygamma zeta
    regularized_incomplete_beta""".split())
# One transcendental and one flop per element (exp2 is exp of a product).
_TRANSCENDENTAL_AND_FLOP = frozenset(["exp2"])
# Data movement: no arithmetic at all.
_NO_FLOPS = frozenset("""reshape transpose broadcast_in_dim squeeze expand_dims slice
    dynamic_slice dynamic_update_slice concatenate pad rev gather copy copy_p iota
    device_put sharding_constraint reshard bitcast_convert_type stop_gradient
    random_wrap random_unwrap random_seed random_bits random_split random_fold_in
    optimization_barrier tie_in pvary""".split())
_REDUCTIONS = frozenset("""reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or
    reduce_xor argmax argmin reduce_precision_sum""".split())
_CUMULATIVE = frozenset("cumsum cumprod cummax cummin cumlogsumexp".split())
# Flops per output element where it is not one.
_PER_ELEMENT_EXTRA = {"integer_pow": lambda params: max(abs(int(params["y"])) - 1, 1),
                      "select_n": lambda params: 1, "clamp": lambda params: 2}


def _size(aval) -> int:
  return int(math.prod(getattr(aval, "shape", ()) or ()))


def _nbytes(aval) -> int:
  dtype = getattr(aval, "dtype", None)
  itemsize = getattr(dtype, "itemsize", 0) if dtype is not None else 0
  return _size(aval) * int(itemsize)


def _lowers_to_nothing(eqn) -> bool:
  """A convert_element_type that changes only the weak type (`jnp.where(c, x, 0.)` converts
  its weak 0.0 to a strong float32): JAX lowers it to no HLO op, so XLA counts nothing."""
  return (eqn.primitive.name == "convert_element_type"
          and getattr(eqn.invars[0].aval, "dtype", None) == eqn.outvars[0].aval.dtype)


def _eqn_flops(eqn) -> tuple[float, float]:
  """(flops, transcendentals) of one equation without sub-jaxprs."""
  name = eqn.primitive.name
  outs = [v.aval for v in eqn.outvars]
  ins = [v.aval for v in eqn.invars]
  if _lowers_to_nothing(eqn):
    return 0.0, 0.0
  n_out = sum(_size(a) for a in outs)
  if name in _TRANSCENDENTAL:
    return 0.0, float(n_out)
  if name in _TRANSCENDENTAL_AND_FLOP:
    return float(n_out), float(n_out)
  if name in _NO_FLOPS:
    return 0.0, 0.0
  if name in _REDUCTIONS:
    return float(max(_size(ins[0]) - n_out, 0)), 0.0
  if name in _CUMULATIVE:  # a reduce_window of the whole axis: (k - 1) per output element
    axis = eqn.params.get("axis", 0)
    k = ins[0].shape[axis] if ins[0].shape else 1
    return float(n_out * max(k - 1, 0)), 0.0
  if name == "sort":
    k = ins[0].shape[eqn.params.get("dimension", -1)] if ins[0].shape else 1
    return float(_size(ins[0]) * math.ceil(math.log2(k)) if k > 1 else 0), 0.0
  if name == "dot_general":
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    contracted = math.prod(ins[0].shape[d] for d in lhs_contract)
    return float(2 * n_out * contracted), 0.0
  if name == "conv_general_dilated":
    lhs, rhs = ins
    spec = eqn.params["dimension_numbers"]
    rhs_spec = spec.rhs_spec if spec is not None else tuple(range(rhs.ndim))
    window = math.prod(rhs.shape[d] for d in rhs_spec[2:])
    in_features = rhs.shape[rhs_spec[1]]
    return float(2 * n_out * window * in_features), 0.0
  extra = _PER_ELEMENT_EXTRA.get(name)
  return float(n_out * (extra(eqn.params) if extra else 1)), 0.0


def _count(jaxpr, totals) -> None:
  for eqn in jaxpr.eqns:
    subs = list(core.jaxprs_in_params(eqn.params))
    if subs and eqn.primitive.name == "cond":  # as XLA: the costliest branch, key by key
      branches = []
      for sub in subs:
        branch = dict.fromkeys(totals, 0.0)
        _count(sub, branch)
        branches.append(branch)
      for k in totals:
        totals[k] += max(b[k] for b in branches)
      continue
    if subs:  # calls and loops: their bodies' ops, a loop body once (as XLA's while)
      for sub in subs:
        _count(sub, totals)
      continue
    flops, transcendentals = _eqn_flops(eqn)
    totals["flops"] += flops
    totals["transcendentals"] += transcendentals
    totals["bytes accessed"] += float(_eqn_bytes(eqn))


def _eqn_bytes(eqn) -> int:
  """Bytes read and written by the HLO of one equation."""
  name = eqn.primitive.name
  if _lowers_to_nothing(eqn):
    return 0
  moved = sum(_nbytes(v.aval) for v in eqn.invars) + sum(_nbytes(v.aval) for v in eqn.outvars)
  if name in _REDUCTIONS or name in _CUMULATIVE:  # XLA's reduce reads its init value too
    moved += int(getattr(eqn.invars[0].aval.dtype, "itemsize", 0))
  elif name == "integer_pow":  # a chain of multiplies, each reading two operands
    moved *= _PER_ELEMENT_EXTRA[name](eqn.params) * 3 // 2
  return moved


def cost_analysis(closed_jaxpr) -> dict[str, float]:
  """{'flops', 'transcendentals', 'bytes accessed'} of a closed jaxpr, zero counts left out
  except 'bytes accessed', as JAX's CPU backend reports them."""
  totals = {"flops": 0.0, "transcendentals": 0.0, "bytes accessed": 0.0}
  # JAX lowers the program without the eqns none of its outputs needs (a vjp's unused primal
  # output), so XLA never counts them
  _count(passes.dce(closed_jaxpr.jaxpr), totals)
  return {k: v for k, v in totals.items() if v or k == "bytes accessed"}

