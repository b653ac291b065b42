"""StableHLO lowering rules of the linalg primitives, as JAX lowers them on the CPU: XLA's own
triangular_solve, and jaxlib's LAPACK kernels as typed-FFI custom calls (`lapack_spotrf_ffi`,
`lapack_sgetrf_ffi`, `lapack_sgeqrf_ffi` + `lapack_sorgqr_ffi`, `lapack_ssyevd_ffi`,
`lapack_sgesdd_ffi`; the CPU client registers them, `compiler/xla/client.py`). A matrix whose
factorization fails comes out as NaNs, as in JAX and the NumPy impls. `linalg.py` and
`linalg_solve.py` register the rules next to their primitives.

The LAPACK targets exist only in jaxlib's CPU client. On the TPU (`xla.platform_rules["tpu"]`,
the section at the end) the primitives lower as JAX lowers them there: XLA's own cholesky and
triangular_solve ops and the custom calls XLA's TPU compiler implements or expands itself
(`LuDecomposition`, `Qr`, `ProductOfElementaryHouseholderReflectors`, `Eigh`); svd (QDWH
polar decomposition and eigh) and tridiagonal_solve (the Thomas recurrence) are programs over
lax and jnp, lowered inline by their TPU rules in `linalg_more.py`; eig and schur have no TPU
lowering, as in JAX.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.compiler.xla.lowering import shaped_aval as _aval

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _target(base: str, dtype) -> str:
  name = np.dtype(dtype).name
  if name not in _PREFIX:
    raise xla.LoweringError(f"LAPACK has no {base} for dtype {name} (float32, float64, "
                            "complex64, complex128)")
  return f"lapack_{_PREFIX[name]}{base}_ffi"


def _layout(rank: int) -> str:
  """Column-major matrices (LAPACK's) with the batch dims outermost: minor-to-major
  (r-2, r-1, r-3, ..., 0)."""
  order = [rank - 2, rank - 1, *range(rank - 3, -1, -1)]
  return f"dense<{xla.i64_list(order)}> : tensor<{rank}xindex>"


def _vector_layout(rank: int) -> str:
  """Row-major (vectors of pivots, taus, eigenvalues; info scalars)."""
  order = list(range(rank - 1, -1, -1))
  return f"dense<{xla.i64_list(order)}> : tensor<{rank}xindex>" if rank else \
      "dense<> : tensor<0xindex>"


def lapack_call(ctx, base, operands, results, config: dict, matrices_out, alias=0,
                matrices_in=(0,)):
  """One LAPACK custom call. `results`: avals; `matrices_out[i]`: whether result i is a matrix
  (column-major) or a vector/scalar; operands numbered in `matrices_in` are matrices, the others
  vectors; result 0 aliases operand `alias` (LAPACK works in place), or `alias` lists
  (result, operand) pairs, or None."""
  in_layouts = ", ".join(_layout(len(v.shape)) if i in matrices_in else
                         _vector_layout(len(v.shape)) for i, v in enumerate(operands))
  out_layouts = ", ".join(_layout(len(a.shape)) if mat else _vector_layout(len(a.shape))
                          for a, mat in zip(results, matrices_out))
  backend = ", ".join(f"{k} = {v} : ui8" for k, v in config.items())
  nbatch = len(operands[matrices_in[0]].shape) - 2
  attrs = {
      "call_target_name": xla.string_attr(_target(base, operands[0].dtype)),
      "api_version": "1 : i32",
      "backend_config": '""',
      "has_side_effect": "false",
      "operand_layouts": f"[{in_layouts}]",
      "result_layouts": f"[{out_layouts}]",
      "mhlo.backend_config": f"{{{backend}}}",
      "mhlo.frontend_attributes": f'{{num_batch_dims = "{nbatch}"}}',
  }
  if alias is not None:  # a single result is no tuple: its index path is empty
    pairs = [(0, alias)] if isinstance(alias, int) else list(alias)
    attrs["output_operand_aliases"] = "[" + ", ".join(
        "#stablehlo.output_operand_alias<output_tuple_indices = "
        f"{f'[{o}]' if len(results) > 1 else '[]'}, operand_index = {i}, "
        "operand_tuple_indices = []>" for o, i in pairs) + "]"
  return ctx.op("stablehlo.custom_call", list(operands), list(results), attrs)


def _nan_unless(ctx, ok, x):
  """x where the batch's `ok` (a bool per matrix, the batch shape) holds, else NaN."""
  ok = ctx.broadcast_to(ok, x.shape, dims=range(len(ok.shape)))
  nan = ctx.constant(np.full((), np.nan, x.dtype), shape=x.shape)
  return ctx.select(ok, x, nan)


def _info_ok(ctx, info, direction="EQ"):
  return ctx.compare(info, ctx.constant(np.zeros((), info.dtype), shape=info.shape), direction)


def _slice(ctx, x, limits, starts=None):
  starts = starts or [0] * len(limits)
  if list(limits) == list(x.shape) and not any(starts):
    return x
  shape = [hi - lo for lo, hi in zip(starts, limits)]
  return ctx.op("stablehlo.slice", [x], _aval(shape, x.dtype),
                {"start_indices": xla.i64_array(starts), "limit_indices": xla.i64_array(limits),
                 "strides": xla.i64_array([1] * len(limits))})


def _triangle(ctx, x, upper: bool):
  """The upper (diagonal included) or strictly lower triangle of the last two dims, zero else."""
  rank = len(x.shape)
  rows = ctx.op("stablehlo.iota", [], _aval(x.shape, np.int32),
                {"iota_dimension": f"{rank - 2} : i64"})
  cols = ctx.op("stablehlo.iota", [], _aval(x.shape, np.int32),
                {"iota_dimension": f"{rank - 1} : i64"})
  keep = ctx.compare(cols, rows, "GE" if upper else "LT")
  return ctx.select(keep, x, ctx.zeros(x.shape, x.dtype))


# --- cholesky, triangular_solve -------------------------------------------------------------------

def cholesky_rule(ctx, x):
  """The lower factor, zero above the diagonal (potrf leaves the input's upper triangle, and the
  JVP multiplies by the whole factor)."""
  if 0 in x.shape:
    return x
  batch = x.shape[:-2]
  out, info = lapack_call(ctx, "potrf", [x], [x.aval, _aval(batch, np.int32)], {"uplo": 76},
                          [True, False])
  return _nan_unless(ctx, _info_ok(ctx, info), _lower_triangle(ctx, out))


def triangular_solve_rule(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                          unit_diagonal):
  if conjugate_a and not transpose_a and np.dtype(a.dtype).kind == "c":
    a = ctx.op("chlo.conj", [a], a.aval)
  how = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
  return ctx.op("stablehlo.triangular_solve", [a, b], ctx.aval_out,
                {"left_side": _b(left_side), "lower": _b(lower),
                 "unit_diagonal": _b(unit_diagonal),
                 "transpose_a": f"#stablehlo<transpose {how}>"})


def _b(flag) -> str:
  return "true" if flag else "false"


# --- lu -------------------------------------------------------------------------------------------

def lu_rule(ctx, x):
  batch, (m, n) = x.shape[:-2], x.shape[-2:]
  k = min(m, n)
  if 0 in x.shape:  # nothing to factor: LAPACK is not called
    perm = ctx.op("stablehlo.iota", [], _aval((*batch, m), np.int32),
                  {"iota_dimension": f"{len(batch)} : i64"})
    return [x, ctx.zeros((*batch, k), ctx.avals_out[1].dtype),
            ctx.convert(perm, ctx.avals_out[2].dtype)]
  lu, pivots, info = lapack_call(
      ctx, "getrf", [x], [x.aval, _aval((*batch, k), np.int32), _aval(batch, np.int32)], {},
      [True, False, False])
  pivots = ctx.op("stablehlo.subtract", [pivots, ctx.constant(np.ones((), np.int32),
                                                              shape=pivots.shape)],
                  pivots.aval)  # LAPACK counts rows from 1
  lu = _nan_unless(ctx, _info_ok(ctx, info, "GE"), lu)
  perm = pivots_to_permutation(ctx, pivots, m, ctx.avals_out[2].dtype)
  return [lu, ctx.convert(pivots, ctx.avals_out[1].dtype), perm]


def pivots_to_permutation(ctx, pivots, size: int, dtype):
  """The row permutation that LAPACK's successive swaps (row i with row pivots[i]) make: a
  while loop over the pivots, each swap a one-hot select over the batch."""
  pivots = ctx.convert(pivots, np.int32)
  batch, k = pivots.shape[:-1], pivots.shape[-1]
  perm_aval = _aval((*batch, size), np.int32)
  perm0 = ctx.op("stablehlo.iota", [], perm_aval, {"iota_dimension": f"{len(batch)} : i64"})
  if k == 0 or 0 in batch:  # no swaps (and no row to slice a pivot from)
    return ctx.convert(perm0, dtype)
  i0 = ctx.constant(np.asarray(0, np.int32))
  state = [i0, pivots, perm0]
  avals = [v.aval for v in state]

  def cond(c, i, piv, perm):
    return [c.compare(i, c.constant(np.asarray(k, np.int32)), "LT")]

  def body(c, i, piv, perm):
    zero = c.constant(np.asarray(0, np.int32))
    j = _column(c, piv, i, zero)                                   # batch
    cols = c.op("stablehlo.iota", [], perm_aval, {"iota_dimension": f"{len(batch)} : i64"})
    at_i = c.compare(cols, c.broadcast_to(i, perm_aval.shape, dims=[]), "EQ")
    at_j = c.compare(cols, c.broadcast_to(j, perm_aval.shape, dims=range(len(batch))), "EQ")
    p_i = _column(c, perm, i, zero)
    p_j = _pick(c, perm, at_j)
    spread = lambda v: c.broadcast_to(v, perm_aval.shape, dims=range(len(batch)))  # noqa: E731
    new = c.select(at_j, spread(p_i), perm)
    new = c.select(at_i, spread(p_j), new)
    step = c.op("stablehlo.add", [i, c.constant(np.asarray(1, np.int32))], i.aval)
    return [step, piv, new]

  outs = ctx.op("stablehlo.while", state, avals,
                regions=[ctx.region(avals, cond), ctx.region(avals, body)])
  return ctx.convert(outs[2], dtype)


def _column(ctx, x, i, zero):
  """x[..., i] for a scalar index i (a batch-shaped value)."""
  batch = x.shape[:-1]
  one = ctx.op("stablehlo.dynamic_slice", [x] + [zero] * len(batch) + [i],
               _aval((*batch, 1), x.dtype), {"slice_sizes": xla.i64_array((*batch, 1))})
  return ctx.reshape(one, batch)


def _pick(ctx, x, onehot):
  """sum(where(onehot, x, 0), -1): the element a one-hot mask picks in each row."""
  zero = ctx.zeros(x.shape, x.dtype)
  masked = ctx.select(onehot, x, zero)
  return ctx.op("stablehlo.reduce", [masked, ctx.constant(np.zeros((), x.dtype))],
                _aval(x.shape[:-1], x.dtype), {"dimensions": xla.i64_array([len(x.shape) - 1])},
                regions=[ctx.scalar_region(x.dtype, "stablehlo.add")])


def lu_pivots_to_permutation_rule(ctx, pivots, *, permutation_size):
  return pivots_to_permutation(ctx, pivots, permutation_size, ctx.aval_out.dtype)


# --- qr, householder_product ----------------------------------------------------------------------

def _orgqr(ctx, a, taus):
  base = "ungqr" if np.dtype(a.dtype).kind == "c" else "orgqr"
  return lapack_call(ctx, base, [a, taus], [a.aval], {}, [True])[0]


def householder_product_rule(ctx, a, taus):
  return _orgqr(ctx, a, taus)


def _geqrf(ctx, x):
  k = min(x.shape[-2:])
  return lapack_call(ctx, "geqrf", [x], [x.aval, _aval((*x.shape[:-2], k), x.dtype)], {},
                     [True, False])


def qr_rule(ctx, x, *, pivoting, full_matrices, use_magma, geqrf=_geqrf, orgqr=_orgqr):
  """geqrf then orgqr (Q from the Householder reflectors), as JAX's qr lowering; `geqrf` and
  `orgqr` are the platform's (LAPACK's here, XLA's custom calls on the TPU)."""
  if pivoting:
    raise xla.LoweringError("qr with pivoting=True has no XLA lowering here (LAPACK geqp3 is "
                            "not wired); use pivoting=False")
  batch, (m, n) = x.shape[:-2], x.shape[-2:]
  k = min(m, n)
  a, taus = geqrf(ctx, x)
  q_cols = m if full_matrices else k
  r = _triangle(ctx, _slice(ctx, a, (*batch, q_cols if m > n else m, n)), upper=True)
  if q_cols <= n:
    q_in = _slice(ctx, a, (*batch, m, q_cols))
  else:  # a square Q wider than A: zero columns after A's
    pad = ctx.zeros((*batch, m, q_cols - n), x.dtype)
    q_in = ctx.op("stablehlo.concatenate", [a, pad], _aval((*batch, m, q_cols), x.dtype),
                  {"dimension": f"{len(batch) + 1} : i64"})
  return [orgqr(ctx, q_in, taus), r]


# --- eigh, svd ------------------------------------------------------------------------------------

def eigh_rule(ctx, x, *, lower=True, sort_eigenvalues=True, subset_by_index=None,
              algorithm=None):
  batch, n = x.shape[:-2], x.shape[-1]
  real = np.finfo(x.dtype).dtype
  base = "heevd" if np.dtype(x.dtype).kind == "c" else "syevd"
  v, w, info = lapack_call(ctx, base, [x], [x.aval, _aval((*batch, n), real),
                                           _aval(batch, np.int32)],
                           {"mode": 86, "uplo": 76 if lower else 85}, [True, False, False])
  ok = _info_ok(ctx, info)
  v, w = _nan_unless(ctx, ok, v), _nan_unless(ctx, ok, w)
  if subset_by_index is not None:
    lo, hi = subset_by_index
    v = _slice(ctx, v, (*batch, n, hi), [0] * len(batch) + [0, lo])
    w = _slice(ctx, w, (*batch, hi), [0] * len(batch) + [lo])
  return [v, w]


def svd_rule(ctx, x, *, full_matrices=True, compute_uv=True, subset_by_index=None,
             algorithm=None):
  batch, (m, n) = x.shape[:-2], x.shape[-2:]
  k = min(m, n)
  real = np.finfo(x.dtype).dtype
  if not compute_uv:
    mode, u_shape, vt_shape = 78, (m, m), (n, n)  # 'N': u, vt untouched
  elif full_matrices:
    mode, u_shape, vt_shape = 65, (m, m), (n, n)  # 'A'
  else:
    mode, u_shape, vt_shape = 83, (m, k), (k, n)  # 'S'
  _, s, u, vt, info = lapack_call(
      ctx, "gesdd", [x], [x.aval, _aval((*batch, k), real), _aval((*batch, *u_shape), x.dtype),
                          _aval((*batch, *vt_shape), x.dtype), _aval(batch, np.int32)],
      {"mode": mode}, [True, False, True, True, False])
  ok = _info_ok(ctx, info)
  s = _nan_unless(ctx, ok, s)
  lead = [0] * len(batch)
  if subset_by_index is not None:
    lo, hi = subset_by_index
    s = _slice(ctx, s, (*batch, hi), lead + [lo])
  if not compute_uv:
    return [s]
  u, vt = _nan_unless(ctx, ok, u), _nan_unless(ctx, ok, vt)
  if subset_by_index is not None:
    u = _slice(ctx, u, (*batch, m, hi), lead + [0, lo])
    vt = _slice(ctx, vt, (*batch, hi, n), lead + [lo, 0])
  return [s, u, vt]


# --- eig, tridiagonal_solve -----------------------------------------------------------------------

def eig_rule(ctx, x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
             enable_eigvec_derivs=False, implementation=None):
  batch, n = x.shape[:-2], x.shape[-1]
  cdt = ctx.avals_out[0].dtype
  vecs = [_aval(x.shape, cdt)] * 2
  info_aval = _aval(batch, np.int32)
  flags = {"compute_left": 86 if compute_left_eigenvectors else 78,
           "compute_right": 86 if compute_right_eigenvectors else 78}
  if np.dtype(x.dtype).kind == "c":
    w, vl, vr, info = lapack_call(ctx, "geev", [x], [_aval((*batch, n), cdt), *vecs, info_aval],
                                  flags, [False, True, True, False], alias=None)
  else:
    real = _aval((*batch, n), x.dtype)
    wr, wi, vl, vr, info = lapack_call(ctx, "geev", [x], [real, real, *vecs, info_aval], flags,
                                       [False, False, True, True, False], alias=None)
    w = ctx.op("stablehlo.complex", [wr, wi], _aval(wr.shape, cdt))
  ok = _info_ok(ctx, info)
  out = [_nan_unless(ctx, ok, w)]
  if compute_left_eigenvectors:
    out.append(_nan_unless(ctx, ok, vl))
  if compute_right_eigenvectors:
    out.append(_nan_unless(ctx, ok, vr))
  return out


def tridiagonal_solve_rule(ctx, dl, d, du, b, *, perturb_singular=False):
  batch = b.shape[:-2]
  outs = lapack_call(ctx, "gtsv", [dl, d, du, b],
                     [dl.aval, d.aval, du.aval, b.aval, _aval(batch, np.int32)], {},
                     [False, False, False, True, False], alias=[(i, i) for i in range(4)],
                     matrices_in=(3,))
  return _nan_unless(ctx, _info_ok(ctx, outs[4]), outs[3])


# --- symmetric_product, cholesky_update -----------------------------------------------------------

def _gram(ctx, a, b, conj_b: bool, out_aval, contract: str):
  """a bᴴ (`contract` "last": over a's and b's last dims) or aᴴ b ("first": over the
  second-to-last), batched over the leading dims."""
  rank = len(a.shape)
  batch = list(range(rank - 2))
  k = rank - 1 if contract == "last" else rank - 2
  if conj_b and np.dtype(b.dtype).kind == "c":
    b = ctx.op("chlo.conj", [b], b.aval)
  dims = (f"#stablehlo.dot<lhs_batching_dimensions = {xla.i64_list(batch)}, "
          f"rhs_batching_dimensions = {xla.i64_list(batch)}, "
          f"lhs_contracting_dimensions = [{k}], rhs_contracting_dimensions = [{k}]>")
  if not batch:
    dims = f"#stablehlo.dot<lhs_contracting_dimensions = [{k}], rhs_contracting_dimensions = [{k}]>"
  return ctx.op("stablehlo.dot_general", [a, b], out_aval,
                {"dot_dimension_numbers": dims,
                 "precision_config": "[#stablehlo<precision HIGHEST>, #stablehlo<precision "
                                     "HIGHEST>]"})


def symmetric_product_rule(ctx, a, c, *, alpha, beta):
  out = ctx.aval_out
  prod = _gram(ctx, a, a, True, out, "last")
  scale = lambda v, s: ctx.op("stablehlo.multiply", [v, ctx.constant(  # noqa: E731
      np.asarray(s, out.dtype), shape=out.shape)], out)
  return ctx.op("stablehlo.add", [scale(prod, alpha), scale(c, beta)], out)


def cholesky_update_rule(ctx, r, w, *, cholesky=cholesky_rule):
  """The upper factor of Rᴴ R + w wᴴ: refactorized (`cholesky`, the platform's, of the updated
  Gram matrix)."""
  out = ctx.aval_out
  rank = len(r.shape)
  gram = _gram(ctx, r, r, False, out, "first")
  if np.dtype(r.dtype).kind == "c":  # Rᴴ R: conjugate the left factor
    gram = _gram(ctx, ctx.op("chlo.conj", [r], r.aval), r, False, out, "first")
  col = ctx.reshape(w, (*w.shape, 1))
  outer = _gram(ctx, col, col, True, out, "last")
  lower = cholesky(ctx.with_avals([out], [out]), ctx.op("stablehlo.add", [gram, outer], out))
  lower = _lower_triangle(ctx, lower)  # potrf leaves the Gram matrix above the diagonal
  perm = [*range(rank - 2), rank - 1, rank - 2]
  upper = ctx.op("stablehlo.transpose", [lower], out, {"permutation": xla.i64_array(perm)})
  return ctx.op("chlo.conj", [upper], out) if np.dtype(r.dtype).kind == "c" else upper


def _lower_triangle(ctx, x):
  """x on and below the diagonal of the last two dims, zero above."""
  rank = len(x.shape)
  rows = ctx.op("stablehlo.iota", [], _aval(x.shape, np.int32),
                {"iota_dimension": f"{rank - 2} : i64"})
  cols = ctx.op("stablehlo.iota", [], _aval(x.shape, np.int32),
                {"iota_dimension": f"{rank - 1} : i64"})
  return ctx.select(ctx.compare(cols, rows, "LE"), x, ctx.zeros(x.shape, x.dtype))


# --- schur ----------------------------------------------------------------------------------------

def schur_rule(ctx, x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
  if sort_eig_vals or select_callable is not None:
    raise xla.LoweringError("schur with eigenvalue sorting has no XLA lowering (nor a NumPy "
                            "impl) in jaxlite")
  batch, n = x.shape[:-2], x.shape[-1]
  scalar = _aval(batch, np.int32)
  flags = {"mode": 86 if compute_schur_vectors else 78, "sort": 78}
  if np.dtype(x.dtype).kind == "c":
    outs = lapack_call(ctx, "gees", [x], [x.aval, x.aval, _aval((*batch, n), x.dtype), scalar,
                                          scalar], flags, [True, True, False, False, False])
  else:
    w = _aval((*batch, n), x.dtype)
    outs = lapack_call(ctx, "gees", [x], [x.aval, x.aval, w, w, scalar, scalar], flags,
                       [True, True, False, False, False, False])
  ok = _info_ok(ctx, outs[-1])
  t = _nan_unless(ctx, ok, outs[0])
  return [t, _nan_unless(ctx, ok, outs[1])] if compute_schur_vectors else [t]


# --- the TPU: XLA's ops and the custom calls its compiler has (JAX's TPU lowerings) -----------

def xla_custom_call(ctx, target: str, operands, results, api_version: int = 1,
                    backend_config: str = ""):
  """A custom call XLA itself implements (no registered kernel; `results`: an aval, or a list
  of them): XLA's TPU compiler runs
  `LuDecomposition` natively and expands `Qr`, `ProductOfElementaryHouseholderReflectors` and
  `Eigh` into HLO (its QrExpander and EighExpander; the CPU compiler expands the last three
  too)."""
  return ctx.op("stablehlo.custom_call", list(operands), results,
                {"call_target_name": xla.string_attr(target),
                 "api_version": f"{api_version} : i32",
                 "backend_config": xla.string_attr(backend_config),
                 "has_side_effect": "false"})


def cholesky_xla_rule(ctx, x):
  """XLA's cholesky op (lower factor; what lies above the diagonal is undefined: zeroed, as
  `lax.linalg.cholesky` does)."""
  if 0 in x.shape:
    return x
  out = ctx.op("stablehlo.cholesky", [x], x.aval, {"lower": "true"})
  return _lower_triangle(ctx, out)


def cholesky_update_xla_rule(ctx, r, w):
  return cholesky_update_rule(ctx, r, w, cholesky=cholesky_xla_rule)


def lu_xla_rule(ctx, x):
  """XLA's `LuDecomposition` custom call: (lu, pivots, permutation), int32 pivots counted
  from 0, as JAX's TPU lowering."""
  if 0 in x.shape:
    return lu_rule(ctx, x)  # (no call: the empty results, as on the CPU)
  return xla_custom_call(ctx, "LuDecomposition", [x], ctx.avals_out, api_version=2)


def _geqrf_xla(ctx, x):
  k = min(x.shape[-2:])
  return xla_custom_call(ctx, "Qr", [x], [x.aval, _aval((*x.shape[:-2], k), x.dtype)])


def _orgqr_xla(ctx, a, taus):
  return xla_custom_call(ctx, "ProductOfElementaryHouseholderReflectors", [a, taus], a.aval)


def householder_product_xla_rule(ctx, a, taus):
  return _orgqr_xla(ctx, a, taus)


def qr_xla_rule(ctx, x, **params):
  return qr_rule(ctx, x, geqrf=_geqrf_xla, orgqr=_orgqr_xla, **params)


def eigh_xla_rule(ctx, x, *, lower=True, sort_eigenvalues=True, subset_by_index=None,
                  algorithm=None):
  """XLA's `Eigh` custom call (Jacobi, at most 100 sweeps to 1e-6): JAX's TPU lowering with
  `algorithm=EighImplementation.JACOBI`. (JAX's TPU default is its QDWH-based eigh, a jnp
  program; both give the eigenvalues to float tolerance, eigenvectors up to sign.)"""
  batch, n = x.shape[:-2], x.shape[-1]
  real = np.finfo(x.dtype).dtype
  if n == 0:
    return [x, ctx.zeros((*batch, 0), real)]
  v, w = xla_custom_call(ctx, "Eigh", [x], [x.aval, _aval((*batch, n), real)],
                         backend_config=f"{int(bool(lower))},{int(bool(sort_eigenvalues))},"
                                        "100,1e-6")
  if subset_by_index is not None:
    lo, hi = subset_by_index
    v = _slice(ctx, v, (*batch, n, hi), [0] * len(batch) + [0, lo])
    w = _slice(ctx, w, (*batch, hi), [0] * len(batch) + [lo])
  return [v, w]
