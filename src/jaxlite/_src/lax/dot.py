"""Contraction: the dot_general primitive and the lax functions dot, dot_general, batch_matmul.

Every dot_general runs as one BLAS matmul: operands are transposed to (batch, free, contract)
and (batch, contract, free) and reshaped to 3-D, so NumPy never falls back to a slow einsum.
"""
from __future__ import annotations

import enum
import functools
import math

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base.config import config
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import dtypes
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.compiler import passes
from jaxlite._src.interpreters import ad
from jaxlite._src.interpreters import batching
from jaxlite._src.lax import casts
from jaxlite._src.lax import shape as shape_prims
from jaxlite._src.lax.families import kind_of
from jaxlite._src.lax.families import fresh_output_primitives, numpy_eqn_templates
from jaxlite._src.lax.elementwise_functions import asarg
from jaxlite._src.compiler.xla import lowering as hlo


class Precision(enum.Enum):
  """lax.Precision: a hint for the accuracy of a matrix product (NumPy is always exact f32)."""
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    names = {"default": cls.DEFAULT, "bfloat16": cls.DEFAULT, "fastest": cls.DEFAULT,
             "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
             "highest": cls.HIGHEST, "float32": cls.HIGHEST}
    if isinstance(value, str) and value.lower() in names:
      return names[value.lower()]
    return None

  def __repr__(self):
    return f"Precision.{self.name}"

  def __str__(self):
    return self.name


def canonicalize_precision(precision):
  """None, or a pair of Precision values, from what users pass (a name, one value, a pair)."""
  if precision is None:
    return None
  if isinstance(precision, (str, Precision, int)):
    p = Precision(precision)
    return (p, p)
  if isinstance(precision, (tuple, list)) and len(precision) == 2:
    return tuple(Precision(p) if p is not None else Precision.DEFAULT for p in precision)
  raise ValueError(f"Precision argument must be one of {list(Precision)}, a pair of them or "
                   f"None; got {precision}")


# --- dot_general -------------------------------------------------------------------------------

dot_general_p = core.Primitive("dot_general")
pp.param_rules[dot_general_p] = pp.ParamRule(drop={"out_sharding": pp.always}, drop_none=True,
                                             show={"dimension_numbers": pp.dims_as_lists})


def _check_dims(side, dims, ndim, batch, contract):
  if any(not 0 <= d < ndim for d in dims):
    raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative and less "
                    f"than the number of axes of the {side} value, got {side}_batch of "
                    f"{batch} and {side}_contracting of {contract} for {side} of rank {ndim}")
  if len(set(contract)) != len(contract):
    raise TypeError(f"dot_general requires {side} contracting dimensions to be distinct, got "
                    f"{side}_contracting {contract}.")
  if len(set(batch)) != len(batch):
    raise TypeError(f"dot_general requires {side} batch dimensions to be distinct, got "
                    f"{side}_batch {batch}.")
  if set(batch) & set(contract):
    raise TypeError(f"dot_general requires {side} batch dimensions to be disjoint from "
                    f"contracting dimensions, got {side}_batch {batch} and {side}_contracting "
                    f"{contract}.")


def _dot_general_shape(lhs_shape, rhs_shape, dimension_numbers) -> tuple:
  (lc, rc), (lb, rb) = dimension_numbers
  if len(lb) != len(rb):
    raise TypeError("dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, "
                    f"got lhs_batch {lb} and rhs_batch {rb}.")
  _check_dims("lhs", lb + lc, len(lhs_shape), lb, lc)
  _check_dims("rhs", rb + rc, len(rhs_shape), rb, rc)
  lbs, rbs = tuple(lhs_shape[d] for d in lb), tuple(rhs_shape[d] for d in rb)
  if lbs != rbs:
    raise TypeError("dot_general requires lhs batch dimensions and rhs batch dimensions to have "
                    f"the same shape, got {lbs} and {rbs}.")
  lcs, rcs = tuple(lhs_shape[d] for d in lc), tuple(rhs_shape[d] for d in rc)
  if lcs != rcs:
    raise TypeError("dot_general requires contracting dimensions to have the same shape, got "
                    f"{lcs} and {rcs}.")
  lfree = tuple(s for i, s in enumerate(lhs_shape) if i not in lb and i not in lc)
  rfree = tuple(s for i, s in enumerate(rhs_shape) if i not in rb and i not in rc)
  return lbs + lfree + rfree


def _dot_general_dtype(lhs_dtype, rhs_dtype, preferred_element_type):
  if preferred_element_type is not None:
    return preferred_element_type
  if lhs_dtype == rhs_dtype:
    return lhs_dtype
  return dtypes.promote_signature(((lhs_dtype, False), (rhs_dtype, False)))[0]


def _dot_general_abstract(lhs, rhs, *, dimension_numbers, precision=None,
                          preferred_element_type=None, out_sharding=None):
  shape = _dot_general_shape(lhs.shape, rhs.shape, dimension_numbers)
  dtype = _dot_general_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
  return ShapedArray(shape, dtype, weak)


def _compute_dtype(out_dtype):
  # Half-precision products accumulate in float32 (as XLA does on CPU); NumPy has no BLAS
  # for them anyway.
  if out_dtype == np.float16 or kind_of(out_dtype) == "f" and out_dtype.itemsize < 4:
    return np.dtype(np.float32)
  return out_dtype


@functools.cache
def _dtype_plan(lhs_dtype, rhs_dtype, preferred_element_type) -> tuple:
  """(compute dtype, output dtype) of a product: resolved once per dtype combination."""
  out_dtype = _dot_general_dtype(lhs_dtype, rhs_dtype, preferred_element_type)
  return _compute_dtype(out_dtype), out_dtype


def _is_plain_matmul(dimension_numbers, lhs_ndim, rhs_ndim) -> bool:
  """Whether np.matmul computes this dot_general as is: (batch..., m, k) @ (batch..., k, n)
  with batch dims leading in order, or matrix/vector products without batch dims."""
  (lc, rc), (lb, rb) = dimension_numbers
  nb = len(lb)
  if lb != tuple(range(nb)) or rb != lb or lc != (lhs_ndim - 1,):
    return False
  if nb:
    return lhs_ndim == rhs_ndim == nb + 2 and rc == (nb,)
  return 1 <= lhs_ndim <= 2 and 1 <= rhs_ndim <= 2 and rc == (0,)


def _matrix_transposes(dimension_numbers, lhs_ndim, rhs_ndim):
  """(transpose lhs?, transpose rhs?) when a product of matrices over one dim is a matmul of
  transposed views (as in reverse-mode products like `ct @ w.T`), else None."""
  (lc, rc), (lb, _) = dimension_numbers
  if lb or lhs_ndim != 2 or rhs_ndim != 2 or len(lc) != 1:
    return None
  return lc == (0,), rc == (1,)


def _is_flat_matmul(dimension_numbers, lhs_ndim, rhs_ndim) -> bool:
  """(..., k) @ (k[, n]) without batch dims: one matmul over lhs flattened to 2-D."""
  (lc, rc), (lb, _) = dimension_numbers
  return not lb and lhs_ndim > 2 and lc == (lhs_ndim - 1,) and rc == (0,) and 1 <= rhs_ndim <= 2


@functools.lru_cache(maxsize=4096)
def _layout_plan(dimension_numbers, lhs_shape, rhs_shape) -> tuple:
  """How one dot_general runs on NumPy, validated once per (dims, shapes) (JAX's errors on the
  eager path too): ("matmul",), ("flat", lhs 2-D shape, out shape) or ("3d", ...)."""
  out_shape = _dot_general_shape(lhs_shape, rhs_shape, dimension_numbers)
  nl, nr = len(lhs_shape), len(rhs_shape)
  if _is_plain_matmul(dimension_numbers, nl, nr):
    return ("matmul",)
  transposes = _matrix_transposes(dimension_numbers, nl, nr)
  if transposes is not None:
    return ("matmul_t",) + transposes
  if _is_flat_matmul(dimension_numbers, nl, nr):
    return ("flat", (math.prod(lhs_shape[:-1]), lhs_shape[-1]), out_shape)
  (lc, rc), (lb, rb) = dimension_numbers
  lfree = tuple(i for i in range(nl) if i not in lb and i not in lc)
  rfree = tuple(i for i in range(nr) if i not in rb and i not in rc)
  lperm, lshape3 = _as_3d_plan(lhs_shape, lb, lfree, lc, True)
  rperm, rshape3 = _as_3d_plan(rhs_shape, rb, rfree, rc, False)
  return ("3d", lperm, lshape3, rperm, rshape3, out_shape, bool(lc))


def _as_3d_plan(shape, batch, free, contract, contract_last) -> tuple:
  """(permutation or None, 3-D shape) taking x to (batch, free, contract) [or (batch,
  contract, free)]."""
  perm = batch + (free + contract if contract_last else contract + free)
  nb, nf, nc = (math.prod(shape[d] for d in dims) for dims in (batch, free, contract))
  return (None if perm == tuple(range(len(shape))) else perm,
          (nb, nf, nc) if contract_last else (nb, nc, nf))


def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision=None,
                      preferred_element_type=None, out_sharding=None):
  lhs, rhs = np.asarray(lhs), np.asarray(rhs)
  plan = _layout_plan(dimension_numbers, lhs.shape, rhs.shape)
  compute, out_dtype = _dtype_plan(lhs.dtype, rhs.dtype, preferred_element_type)
  if lhs.dtype != compute:
    lhs = lhs.astype(compute)
  if rhs.dtype != compute:
    rhs = rhs.astype(compute)
  kind = plan[0]
  if kind == "matmul":
    out = np.matmul(lhs, rhs)
  elif kind == "matmul_t":
    out = np.matmul(lhs.T if plan[1] else lhs, rhs.T if plan[2] else rhs)
  elif kind == "flat":
    out = np.matmul(lhs.reshape(plan[1]), rhs).reshape(plan[2])
  else:
    out = _dot_general_3d(lhs, rhs, plan)
  return out if out.dtype == out_dtype else out.astype(out_dtype)


def _dot_general_3d(lhs, rhs, plan):
  _, lperm, lshape3, rperm, rshape3, out_shape, contracts = plan
  a = (lhs if lperm is None else np.transpose(lhs, lperm)).reshape(lshape3)
  b = (rhs if rperm is None else np.transpose(rhs, rperm)).reshape(rshape3)
  with np.errstate(over="ignore", invalid="ignore"):
    # Nothing contracted (vmapped outer products): broadcasting beats a matmul over size-1 dims.
    return (np.matmul(a, b) if contracts else a * b).reshape(out_shape)


def _dot_general_template(eqn):
  """Tier-0 lowering of the products np.matmul computes as is, between equal dtypes that need
  no float32 accumulation; anything else runs through the impl."""
  lhs, rhs = (v.aval for v in eqn.invars)
  preferred = eqn.params.get("preferred_element_type")
  if lhs.dtype != rhs.dtype or (preferred is not None and preferred != lhs.dtype) \
      or _compute_dtype(lhs.dtype) != lhs.dtype:
    return None
  dims = eqn.params["dimension_numbers"]
  if _is_plain_matmul(dims, lhs.ndim, rhs.ndim):
    return "np.matmul({0}, {1})"
  transposes = _matrix_transposes(dims, lhs.ndim, rhs.ndim)
  if transposes is not None:
    return f"np.matmul({{0}}{'.T' * transposes[0]}, {{1}}{'.T' * transposes[1]})"
  if _is_flat_matmul(dims, lhs.ndim, rhs.ndim):
    _, lhs_2d, out_shape = _layout_plan(dims, lhs.shape, rhs.shape)
    return f"np.matmul({{0}}.reshape({lhs_2d}), {{1}}).reshape({out_shape})"
  return None


dot_general_p.def_impl(_dot_general_impl)
dot_general_p.def_abstract_eval(_dot_general_abstract)
numpy_eqn_templates[dot_general_p] = _dot_general_template
fresh_output_primitives.add(dot_general_p)


def _fold_transpose(eqn, permutation):
  """(a . b)^T as b . a for a product of matrices (reverse mode makes many)."""
  lhs, rhs = eqn.invars
  (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
  if permutation != (1, 0) or lb or len(lc) != 1 or lhs.aval.ndim != 2 or rhs.aval.ndim != 2:
    return None
  precision = eqn.params.get("precision")
  params = dict(eqn.params, dimension_numbers=((rc, lc), ((), ())),
                precision=precision[::-1] if precision else precision)
  return eqn.replace(invars=[rhs, lhs], params=params)


passes.transpose_folding_rules[dot_general_p] = _fold_transpose


def _outer_product_as_mul(eqn):
  """A product contracting nothing whose batch dims lead in order (vmap(grad) of a linear
  model makes `err[:, None] * x`) as broadcast_in_dim + mul: each element is one product either
  way (the impl multiplies too), and as elementwise ops tier 1 fuses it with its neighbours and
  runs it over tiles on both cores."""
  from jaxlite._src.lax.elementwise import mul_p
  from jaxlite._src.lax.shape import broadcast_in_dim_p
  lhs, rhs = eqn.invars
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  out = eqn.outvars[0]
  dtype = out.aval.dtype
  if lc or rc or tuple(lb) != tuple(range(len(lb))) or tuple(rb) != tuple(range(len(rb))) \
      or not all(isinstance(v, core.Var) for v in (lhs, rhs)) \
      or lhs.aval.dtype != dtype or rhs.aval.dtype != dtype or dtype.kind not in "fiuc" \
      or _compute_dtype(dtype) != dtype:
    return None
  nb, lfree = len(lb), lhs.aval.ndim - len(lb)
  # per side, not per var: dot_general(x, x) spreads x along two different dims
  sides = ((lhs, tuple(range(lhs.aval.ndim))),
           (rhs, tuple(range(nb)) + tuple(range(nb + lfree, out.aval.ndim))))
  eqns, operands = [], []
  for v, dims in sides:
    if v.aval.shape == out.aval.shape:
      operands.append(v)
      continue
    spread = core.Var(out.aval.update(weak_type=v.aval.weak_type))
    eqns.append(eqn.replace(primitive=broadcast_in_dim_p, invars=[v], outvars=[spread],
                            params=dict(shape=out.aval.shape, broadcast_dimensions=dims,
                                        sharding=out.aval.sharding)))
    operands.append(spread)
  eqns.append(eqn.replace(primitive=mul_p, invars=operands, params={}))
  return eqns


passes.elementwise_rewrite_rules[dot_general_p] = _outer_product_as_mul
dot_general_p.eager_weak_type = lambda args, params: (
    params["preferred_element_type"] is None and all(getattr(a, "weak_type", False)
                                                     for a in args))


def _dot_general_batcher(vals, dims, *, dimension_numbers, **params):
  # The vmapped axis becomes a dot_general batch dim when both sides carry it, else a free dim
  # of its side: one contraction over the whole batch either way.
  (lhs, rhs), (lbd, rbd) = vals, dims
  (lc, rc), (lb, rb) = dimension_numbers
  lc, lb, rc, rb = (_around(ds, bd) for ds, bd in ((lc, lbd), (lb, lbd), (rc, rbd), (rb, rbd)))
  if lbd is not None and rbd is not None:
    dn, out_dim = ((lc, rc), ((lbd,) + lb, (rbd,) + rb)), 0
  elif lbd is not None:
    dn, out_dim = ((lc, rc), (lb, rb)), len(lb) + _free_before(lbd, lc, lb)
  else:
    lhs_free = len(batching.shape_of(lhs)) - len(lc) - len(lb)
    dn, out_dim = ((lc, rc), (lb, rb)), len(lb) + lhs_free + _free_before(rbd, rc, rb)
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), out_dim


def _around(dims, bdim) -> tuple:
  """Per-example dims renumbered for an operand whose batch axis sits at `bdim`."""
  return tuple(dims) if bdim is None else tuple(d + (d >= bdim) for d in dims)


def _free_before(bdim, contract, batch) -> int:
  return sum(1 for d in range(bdim) if d not in contract and d not in batch)


batching.primitive_batchers[dot_general_p] = _dot_general_batcher


def _dot_transpose_lhs(ct, x, y, *, dimension_numbers, swap_ans=False, **params):
  """The cotangent of dot_general's lhs: `ct` contracted with `y` over y's free dims, then
  transposed into x's layout (x's contracting dims come out in the order of y's)."""
  (xc, yc), (xb, yb) = dimension_numbers
  x_aval, y_aval = ad.aval_of(x), ad.aval_of(y)
  x_free = [i for i in range(x_aval.ndim) if i not in xc and i not in xb]
  y_free = [i for i in range(y_aval.ndim) if i not in yc and i not in yb]
  nb = len(xb)
  first = nb if swap_ans else nb + len(x_free)
  dims = ((tuple(range(first, first + len(y_free))), tuple(y_free)),
          (tuple(range(nb)), tuple(yb)))
  x_contract_by_y = [xc[k] for k in np.argsort(yc)]
  unsorted = list(xb) + x_free + x_contract_by_y
  # As JAX: the product comes out laid out as x (its sharding in x's type, dims in the product's
  # order), so a contraction over a sharded dim (a batch-sharded x @ w's weight cotangent) sums
  # over the devices instead of being ambiguous.
  params["out_sharding"] = _permuted_sharding(x_aval, unsorted, (ct, y))
  out = dot_general_p.bind(ct, y, dimension_numbers=dims, **params)
  perm = tuple(int(i) for i in np.argsort(unsorted))
  if perm != tuple(range(len(perm))):
    out = shape_prims.transpose_p.bind(out, permutation=perm)
  if core.get_aval(out).dtype != x_aval.dtype:
    out = casts.convert_element_type_p.bind(out, new_dtype=x_aval.dtype, weak_type=x_aval.weak_type)
  return out


def _permuted_sharding(aval, order, others):
  """`aval`'s sharding in its type with its dims taken in `order`; an unsharded `aval` is
  replicated over the mesh of the sharded operands among `others` (None when none is)."""
  s = getattr(aval, "sharding", None)
  if s is None:
    s = next((o for o in (getattr(ad.aval_of(x), "sharding", None) for x in others)
              if o is not None), None)
    if s is None:
      return None
    s = s.with_spec(type(s.spec)())
  parts = list(s.spec) + [None] * (aval.ndim - len(s.spec))
  return s.with_spec(type(s.spec)(*(parts[o] for o in order)))


def _dot_transpose_rhs(ct, x, y, *, dimension_numbers, **params):
  (xc, yc), (xb, yb) = dimension_numbers
  return _dot_transpose_lhs(ct, y, x, dimension_numbers=((yc, xc), (yb, xb)), swap_ans=True,
                            **params)


ad.defbilinear(dot_general_p, _dot_transpose_lhs, _dot_transpose_rhs)


# --- the lax functions -------------------------------------------------------------------------

def _canonical_dims(dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  return ((tuple(int(d) for d in lc), tuple(int(d) for d in rc)),
          (tuple(int(d) for d in lb), tuple(int(d) for d in rb)))


def _preferred(preferred_element_type):
  if preferred_element_type is None:
    return None
  return dtypes.check_user_dtype(preferred_element_type, "dot")


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                *, out_sharding=None):
  """The general tensor contraction: `dimension_numbers` = ((lhs_contract, rhs_contract),
  (lhs_batch, rhs_batch)); the result holds batch dims, then lhs free, then rhs free dims."""
  return dot_general_p.bind(asarg(lhs), asarg(rhs),
                            dimension_numbers=_canonical_dims(dimension_numbers),
                            precision=canonicalize_precision(precision),
                            preferred_element_type=_preferred(preferred_element_type),
                            out_sharding=out_sharding)


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, out_sharding=None):
  """Vector/matrix products of rank-1 and rank-2 operands."""
  lhs, rhs = asarg(lhs), asarg(rhs)
  ls, rs = core.get_aval(lhs).shape, core.get_aval(rhs).shape
  if 1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]:
    return dot_general(lhs, rhs, (((len(ls) - 1,), (0,)), ((), ())), precision,
                       preferred_element_type, out_sharding=out_sharding)
  raise ValueError("jax.lax.dot: dimension_numbers must be specified when not performing "
                   "simple un-batched matrix-matrix, matrix-vector, or vector-vector products; "
                   f"got lhs_shape={ls} rhs_shape={rs}")


def batch_matmul(lhs, rhs, precision=None):
  """Batched matrix product over all leading dims: (..., m, k) @ (..., k, n)."""
  lhs, rhs = asarg(lhs), asarg(rhs)
  ls, rs = core.get_aval(lhs).shape, core.get_aval(rhs).shape
  if len(ls) != len(rs) or len(ls) < 2:
    raise ValueError("Arguments to batch_matmul must be at least 2D and have the same rank, "
                     f"got {ls} and {rs}.")
  nb = len(ls) - 2
  batch = tuple(range(nb))
  return dot_general(lhs, rhs, (((nb + 1,), (nb,)), (batch, batch)), precision)


# --- StableHLO lowering --------------------------------------------------------------------------

def _hlo_precision(precision):
  """precision_config of a dot: the param's, else `jax_default_matmul_precision`'s, else none
  (a flag naming a dot algorithm, `F32_F32_F32`..., is no Precision: none either)."""
  if precision is None:
    try:
      precision = canonicalize_precision(config.jax_default_matmul_precision)
    except ValueError:
      return None
  else:
    precision = canonicalize_precision(precision)
  if precision is None:
    return None
  return "[" + ", ".join(f"#stablehlo<precision {p.name}>" for p in precision) + "]"


def _hlo_dot_general(ctx, lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  (lc, rc), (lb, rb) = dimension_numbers
  out = ctx.aval_out
  if lhs.dtype != rhs.dtype:  # mixed operands: both in the result's type, as JAX converts
    lhs, rhs = ctx.convert(lhs, out.dtype), ctx.convert(rhs, out.dtype)
  attrs = {"dot_dimension_numbers": (
      f"#stablehlo.dot<lhs_batching_dimensions = {hlo.i64_list(lb)}, "
      f"rhs_batching_dimensions = {hlo.i64_list(rb)}, "
      f"lhs_contracting_dimensions = {hlo.i64_list(lc)}, "
      f"rhs_contracting_dimensions = {hlo.i64_list(rc)}>")}
  prec = _hlo_precision(precision)
  if prec is not None:
    attrs["precision_config"] = prec
  return ctx.op("dot_general", [lhs, rhs], out, attrs)


hlo.register(dot_general_p, _hlo_dot_general)


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(dot_general_p, pk.PRODUCT, hoist=True, role="dot_general",
            propagation_rule="dot_general")
