"""Sharding rules of the primitives that are not made by a family helper (those register
themselves: lax/families.py, lax/reductions.py), each next to the others of its kind.

Loaded by rules.py on the first value sharded in its type; the behaviour follows JAX 0.10.2's
rules (lax.py, slicing.py, ...) as observed by running them."""
from __future__ import annotations

from jaxlite._src.transforms import ad_checkpoint, call_primitives, callbacks, custom_batching
from jaxlite._src.transforms import custom_derivatives
from jaxlite._src.rng import prng
from jaxlite._src.base.core import ShardingTypeError
from jaxlite._src.interpreters import ad
from jaxlite._src.lax import barrier, casts, creation, dot, elementwise, fft, linalg, linalg_solve
from jaxlite._src.lax import reductions, shape, slicing_primitives as sl, sort, windowed
from jaxlite._src.lax.control_flow import conditionals, loops
from jaxlite._src.sharding import rules as R
from jaxlite._src.sharding.rules import axes_size, entry_names, type_str

_first = R.first_spec

# --- elementwise ops not made by unop/binop ------------------------------------------------------
# (random_gamma, scipy.special's regularized_incomplete_beta and checkify's check register
# their own rules, next to their primitives.)
for p in (elementwise.complex_p, elementwise.pow_p, elementwise.clamp_p, prng.random_fold_in_p,
          prng.threefry2x32_p, ad.add_any_p):
  R.elementwise(p)
for p in (casts.convert_element_type_p, elementwise.integer_pow_p, elementwise.round_p,
          casts.reduce_precision_p, ad.stop_gradient_p, ad_checkpoint.name_p,
          prng.random_seed_p, shape.rev_p):
  R.same_as_first(p)


def _multi_first(specs, avals, outs, mesh, **params):
  return list(specs)


R.register(barrier.optimization_barrier_p, _multi_first)


def _threefry(specs, avals, outs, mesh, **params):
  return [R.broadcasting("threefry2x32")(specs, avals, outs, mesh)] * 2


R.register(prng.threefry2x32_p, _threefry)


def _bitcast(specs, avals, outs, mesh, **params):
  # Narrowing adds a trailing dimension, widening removes it: that dimension is never sharded.
  s, nd = specs[0], len(outs[0].shape)
  if nd > len(s):
    return s + (None,)
  if nd < len(s):
    if s[-1] is not None:
      raise ShardingTypeError(f"bitcast_convert_type: the last dimension of the operand is "
                              f"removed and must be unsharded, got {type_str(avals[0], s)}")
    return s[:-1]
  return s


R.register(casts.bitcast_convert_type_p, _bitcast)


def _select(specs, avals, outs, mesh, **params):
  which, cases = specs[0], specs[1:]
  # Unsharded cases stand for JAX's values without a mesh (constants): they do not vote.
  sharded = [s for s in cases if any(e is not None for e in s)]
  first = sharded[0] if sharded else cases[0]
  if any(s != first for s in sharded[1:]):
    raise ShardingTypeError("select cases must have the same shardings, got [{}].".format(
      ", ".join(R.sharding_str(mesh, s) for s in cases)))
  if avals[0].shape and any(e is not None for e in which) and which != first:
    raise ShardingTypeError(
      "select `which` must be scalar or have the same sharding as cases, got `which` sharding "
      f"{R.sharding_str(mesh, which)} but case sharding {R.sharding_str(mesh, cases[0])}.")
  return first


R.register(elementwise.select_n_p, _select)

# --- shape ops ---------------------------------------------------------------------------------


def _broadcast_in_dim(specs, avals, outs, mesh, *, shape, broadcast_dimensions, sharding=None):
  out = [None] * len(shape)
  for j, d in enumerate(broadcast_dimensions):
    if avals[0].shape[j] == shape[d]:
      out[d] = specs[0][j]
  return tuple(out)


R.register(shape.broadcast_in_dim_p, _broadcast_in_dim)


def _squeeze(specs, avals, outs, mesh, *, dimensions):
  dims = {d % max(len(specs[0]), 1) for d in dimensions}
  return tuple(e for i, e in enumerate(specs[0]) if i not in dims)


R.register(shape.squeeze_p, _squeeze)
R.register(shape.transpose_p, lambda specs, avals, outs, mesh, *, permutation:
           tuple(specs[0][i] for i in permutation))


def _reshape_error(aval, spec, new_sizes):
  raise ShardingTypeError(
    "This reshape is not supported. Please specify the sharding of the output via the "
    "`out_sharding` argument of jax.lax.reshape. Got operand type: "
    f"{type_str(aval, spec)}, new sizes: {tuple(new_sizes)}")


def _split_partitions(mesh, names, sizes, aval, spec, new_sizes):
  # Hands the operand dimension's axes (major first) to the output dimensions that split it.
  it = iter(names)
  out = []
  for o in sizes:
    parts = []
    while o > 1:
      n = next(it, None)
      if n is None:
        break
      o, rem = divmod(o, mesh.shape[n])
      if rem:
        _reshape_error(aval, spec, new_sizes)
      parts.append(n)
    out.append(R.entry(parts))
  if next(it, None) is not None:
    _reshape_error(aval, spec, new_sizes)
  return out


def _reshape(specs, avals, outs, mesh, *, new_sizes, dimensions=None, sharding=None):
  spec, aval = specs[0], avals[0]
  old = tuple(aval.shape)
  new = tuple(new_sizes)
  if all(e is None for e in spec):
    return (None,) * len(new)
  if [d for d in old if d != 1] == [d for d in new if d != 1]:
    it = iter(e for d, e in zip(old, spec) if d != 1)
    return tuple(None if d == 1 else next(it) for d in new)
  # One operand dimension split into several, or several merged into one; the rest unchanged.
  i = 0
  while i < min(len(old), len(new)) and old[i] == new[i]:
    i += 1
  j = 0
  while j < min(len(old), len(new)) - i and old[-1 - j] == new[-1 - j]:
    j += 1
  mid_old, mid_new = old[i:len(old) - j], new[i:len(new) - j]
  head, tail = spec[:i], spec[len(old) - j:]
  if dimensions is not None:
    _reshape_error(aval, spec, new_sizes)
  if len(mid_old) == 1 and len(mid_new) >= 1:
    e = spec[i]
    if e is None:
      return head + (None,) * len(mid_new) + tail
    mid = _split_partitions(mesh, entry_names(e), mid_new, aval, spec, new_sizes)
    return head + tuple(mid) + tail
  if len(mid_new) == 1 and len(mid_old) >= 1:
    es = spec[i:len(old) - j]
    if all(e is None for e in es):
      return head + (None,) + tail
    names = []
    for e in es:
      names.extend(entry_names(e))
    # Only trailing dimensions may be unsharded: their axes merge major-to-minor.
    k = len(es)
    while k and es[k - 1] is None:
      k -= 1
    if any(e is None for e in es[:k]):
      _reshape_error(aval, spec, new_sizes)
    mid = _split_partitions(mesh, names, mid_new, aval, spec, new_sizes)
    return head + tuple(mid) + tail
  _reshape_error(aval, spec, new_sizes)


R.register(shape.reshape_p, _reshape)


def _varying(name):
  """Ops whose output dims may differ in size from the operand's (slice, pad, dynamic_slice):
  the layout is the operand's, and a sharded dimension whose size changes must stay divisible."""
  def rule(specs, avals, outs, mesh, **params):
    spec, aval = specs[0], avals[0]
    for d_in, d_out, e in zip(aval.shape, outs[0].shape, spec):
      if d_in != d_out and e is not None and d_out % axes_size(mesh, e):
        raise ShardingTypeError(
          f"{name} on sharded dims where out dim ({d_out}) is not divisible by mesh axes "
          f"({axes_size(mesh, e)}) with spec ({e}) is not implemented. Got input "
          f"type={_short(aval, spec)} and output shape={tuple(outs[0].shape)}")
    return spec
  return rule


R.register(shape.pad_p, _varying("padding"))
R.register(sl.slice_p, _varying("slicing"))
R.register(sl.dynamic_slice_p, _varying("dynamic_slice"))
R.register(shape.tile_p, _varying("tile"))


def _dynamic_update_slice(specs, avals, outs, mesh, **params):
  if specs[0] != specs[1]:
    raise ShardingTypeError(
      "dynamic_update_slice operand sharding must be equal to update sharding, got operand "
      f"sharding {type_str(avals[0], specs[0])}({_axis_types_str(mesh)}) and update sharding "
      f"{type_str(avals[1], specs[1])}({_axis_types_str(mesh)}).")
  return specs[0]


def _axis_types_str(mesh):
  groups = {}
  for n, t in zip(mesh.axis_names, mesh.axis_types):
    groups.setdefault(t.name, []).append(n)
  return "{" + ", ".join(f"{t}: {tuple(ns)}" for t, ns in groups.items()) + "}"


R.register(sl.dynamic_update_slice_p, _dynamic_update_slice)


def _split(specs, avals, outs, mesh, *, sizes, axis):
  return [_varying("split")(specs, avals, [o], mesh) for o in outs]


R.register(shape.split_p, _split)


def _concatenate(specs, avals, outs, mesh, *, dimension):
  sharded = [s for s in specs if any(e is not None for e in s)]
  if any(s != sharded[0] for s in sharded[1:]):
    raise ShardingTypeError("All operands should have the same sharding. Got shardings "
                            + ", ".join(R.sharding_str(mesh, s) for s in specs))
  return sharded[0] if sharded else specs[0]


R.register(shape.concatenate_p, _concatenate)


def _stack(specs, avals, outs, mesh, *, axis):
  s = _concatenate(specs, avals, outs, mesh, dimension=axis)
  return s[:axis] + (None,) + s[axis:]


R.register(shape.stack_p, _stack)
R.register(shape.unstack_p, lambda specs, avals, outs, mesh, *, axis:
           [specs[0][:axis] + specs[0][axis + 1:]] * len(outs))

# --- gather and scatter ------------------------------------------------------------------------


def _gather(specs, avals, outs, mesh, *, dimension_numbers, slice_sizes, **params):
  dn = dimension_numbers
  op_spec, idx_spec = specs[0], list(specs[1])
  operand, indices = avals[0], avals[1]
  if all(e is None for e in op_spec) and all(e is None for e in idx_spec):
    return (None,) * len(outs[0].shape)
  full_or_replicated = all(slice_sizes[i] == operand.shape[i] or op_spec[i] is None
                           for i in dn.start_index_map)
  pairs = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
  unambiguous = all(idx_spec[j] == op_spec[i] or op_spec[i] is None or idx_spec[j] is None
                    for i, j in pairs)
  idx_replicated = all(e is None for j, e in enumerate(idx_spec)
                       if j not in dn.start_indices_batching_dims)
  if not (full_or_replicated and unambiguous and idx_replicated):
    raise ShardingTypeError(
      "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
      "indexing as out sharding could not be resolved unambiguously (or would require "
      f"collectives on inputs). Got operand=ShapedArray({type_str(operand, op_spec)}), "
      f"indices=ShapedArray({type_str(indices, tuple(idx_spec))})")
  for i, j in pairs:
    idx_spec[j] = idx_spec[j] or op_spec[i]
  offsets = iter(i for i in range(len(slice_sizes))
                 if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims)
  idx_it = iter(idx_spec)
  return tuple(op_spec[next(offsets)] if d in dn.offset_dims else next(idx_it)
               for d in range(len(outs[0].shape)))


R.register(sl.gather_p, _gather)


def _scatter(specs, avals, outs, mesh, *, dimension_numbers, **params):
  # The inverse of gather's rule: operand dims updated in sub-windows must be unsharded, and
  # so must the indices outside their batching dims; the result is laid out as the operand.
  dn = dimension_numbers
  op_spec, idx_spec, upd_spec = specs
  operand, indices, updates = avals
  windows = iter(dn.update_window_dims)
  window = []
  for i in range(len(operand.shape)):
    if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
      window.append(1)
    else:
      window.append(updates.shape[next(windows)])
  ok = all(op_spec[i] is None or window[i] == operand.shape[i]
           for i in dn.scatter_dims_to_operand_dims)
  ok = ok and all(e is None for j, e in enumerate(idx_spec)
                  if j not in dn.scatter_indices_batching_dims)
  ok = ok and all(e is None or e == op_spec[i] for e, i in zip(
      (upd_spec[d] for d in dn.update_window_dims),
      (i for i in range(len(operand.shape))
       if i not in dn.inserted_window_dims and i not in dn.operand_batching_dims)))
  if not ok:
    raise ShardingTypeError(
      "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for the "
      "scatter update as out sharding could not be resolved unambiguously (or would require "
      f"collectives on inputs). Got operand=ShapedArray({type_str(operand, op_spec)}), "
      f"indices=ShapedArray({type_str(indices, idx_spec)}), "
      f"updates=ShapedArray({type_str(updates, upd_spec)})")
  return op_spec


for p in (sl.scatter_p, sl.scatter_add_p, sl.scatter_mul_p, sl.scatter_min_p, sl.scatter_max_p,
          sl.scatter_sub_p):
  R.register(p, _scatter)

# --- creation: iota is replicated unless given a sharding (rules.apply handles `sharding`) ---
R.replicated(creation.iota_p)

# Results typed over the context mesh when no operand has a mesh (JAX's rules ask for it:
# get_cur_mesh_sharding, _resolve_mesh); the binary elementwise ops register with their family.
R.names_context_mesh(creation.iota_p, shape.broadcast_in_dim_p, shape.concatenate_p,
                     shape.stack_p, elementwise.select_n_p, sl.gather_p, sl.scatter_p,
                     sl.scatter_add_p, sl.scatter_mul_p, sl.scatter_min_p, sl.scatter_max_p,
                     sl.scatter_sub_p, prng.random_split_p, prng.random_bits_p)


def _cond_mesh_flow(params, on_mesh):
  # each result joins the branches' (the index operand takes no part)
  outs = [R.jaxpr_outputs_name_mesh(b, on_mesh[1:]) for b in params["branches"]]
  return [any(o) for o in zip(*outs)]


def _carry_fixpoint(body, before, carry, after, n_carry):
  """A loop body's results' meshes, its carries' joined with their initial ones until stable."""
  while True:
    outs = R.jaxpr_outputs_name_mesh(body, before + carry + after)
    joined = [a or b for a, b in zip(carry, outs[:n_carry])]
    if joined == carry:
      return carry + outs[n_carry:]
    carry = joined


def _while_mesh_flow(params, on_mesh):
  n = params["cond_nconsts"] + params["body_nconsts"]
  return _carry_fixpoint(params["body_jaxpr"], list(on_mesh[params["cond_nconsts"]:n]),
                         list(on_mesh[n:]), [], len(on_mesh) - n)


def _scan_mesh_flow(params, on_mesh):
  nc, n_carry = params["num_consts"], params["num_carry"]
  return _carry_fixpoint(params["jaxpr"], list(on_mesh[:nc]), list(on_mesh[nc:nc + n_carry]),
                         list(on_mesh[nc + n_carry:]), n_carry)


R.register_mesh_flow(call_primitives.jit_p,
                     lambda params, on_mesh: R.jaxpr_outputs_name_mesh(params["jaxpr"], on_mesh))
R.register_mesh_flow(conditionals.cond_p, _cond_mesh_flow)
R.register_mesh_flow(loops.while_p, _while_mesh_flow)
R.register_mesh_flow(loops.scan_p, _scan_mesh_flow)

# --- dot_general -------------------------------------------------------------------------------


def _dot_general(specs, avals, outs, mesh, *, dimension_numbers, **params):
  (lc, rc), (lb, rb) = dimension_numbers
  ls, rs = specs
  lbs, rbs = tuple(ls[i] for i in lb), tuple(rs[i] for i in rb)
  lcs, rcs = tuple(ls[i] for i in lc), tuple(rs[i] for i in rc)

  def check_match(a, b, msg):
    for x, y in zip(a, b):
      if x is not None and y is not None and x != y:
        raise ShardingTypeError(msg)
  check_match(lbs, rbs, "dot_general requires lhs batch dimensions and rhs batch dimensions to "
              f"have the consistent sharding, got {lbs} and {rbs}.")
  check_match(lcs, rcs, "dot_general requires contracting dimensions to have consistent "
              f"sharding, got {lcs} and {rcs}.")
  for x, y in zip(lcs, rcs):
    if x is not None and y is not None:
      raise ShardingTypeError(
        "Contracting dimensions are sharded and it is ambiguous how the output should be "
        "sharded. Please specify the output sharding via the `out_sharding` parameter. Got "
        f"lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
  lfree = tuple(e for i, e in enumerate(ls) if i not in lc and i not in lb)
  rfree = tuple(e for i, e in enumerate(rs) if i not in rc and i not in rb)
  out = lbs + lfree + rfree
  used = [n for e in out for n in entry_names(e)]
  if len(used) != len(set(used)):
    raise ShardingTypeError(
      f"dot_general operation with inputs: {_short(avals[0], ls)}, {_short(avals[1], rs)} "
      f"produces an illegally sharded result: {_short(outs[0], out)}")
  return out


def _short(aval, spec):
  from jaxlite._src.base import dtypes
  return type_str(aval, spec).replace(dtypes.dtype_name(aval.dtype),
                                      dtypes.short_dtype_name(aval.dtype), 1)


R.register(dot.dot_general_p, _dot_general)

# --- sorting -----------------------------------------------------------------------------------


def _sort(specs, avals, outs, mesh, *, dimension, **params):
  for s in specs:
    if s[dimension] is not None:
      raise ShardingTypeError(
        "Arguments to sort must be unsharded over the sorting dimension. Got arg sharding="
        f"{R.sharding_str(mesh, s)} and sorting dimension={dimension}")
  # Unsharded operands (argsort's iota) are laid out as the sharded ones, as JAX makes them.
  merged = R.broadcasting("sort")(specs, avals, outs, mesh)
  return [s if any(e is not None for e in s) else merged for s in specs]


R.register(sort.sort_p, _sort)


def _top_k(specs, avals, outs, mesh, *, k, axis):
  if specs[0][axis] is not None:
    raise ShardingTypeError(
      f"top_k: the operand must be unsharded over the axis it selects from, got "
      f"{type_str(avals[0], specs[0])} and axis={axis}")
  return [specs[0], specs[0]]


R.register(sort.top_k_p, _top_k)


def _reduce(specs, avals, outs, mesh, *, dimensions, **params):
  n = len(specs) // 2
  dims = set(dimensions)
  return [tuple(e for i, e in enumerate(s) if i not in dims) for s in specs[:n]]


R.register(reductions.reduce_p, _reduce)

# --- windowed ops, FFT, linear algebra ----------------------------------------------------------


def _reduce_window(specs, avals, outs, mesh, *, window_dimensions, **params):
  for s, a in zip(specs[:len(outs)], avals):
    for e, w, d in zip(s, window_dimensions, a.shape):
      if e is not None and w != 1:
        raise ShardingTypeError(
          f"reduce_window: a dimension reduced over a window of size {w} must be unsharded, "
          f"got operand type={type_str(a, s)} and window_dimensions={tuple(window_dimensions)}")
  return list(specs[:len(outs)])


R.register(windowed.reduce_window_p, _reduce_window)
for p in (windowed.reduce_window_sum_p, windowed.reduce_window_max_p,
          windowed.reduce_window_min_p):
  R.register(p, lambda specs, avals, outs, mesh, **params:
             _reduce_window(specs, avals, outs, mesh, **params)[0])


def _conv(specs, avals, outs, mesh, *, dimension_numbers, **params):
  lhs_dn, rhs_dn, out_dn = dimension_numbers
  ls, rs = specs
  for s, a, dn, what in ((ls, avals[0], lhs_dn, "lhs"), (rs, avals[1], rhs_dn, "rhs")):
    if any(s[d] is not None for d in dn[1:] if what == "lhs" or d != dn[0]):
      raise ShardingTypeError(
        f"conv_general_dilated: only the batch dimension of lhs and the output feature dimension "
        f"of rhs may be sharded, got {what} type={type_str(a, s)}")
  out = [None] * len(outs[0].shape)
  out[out_dn[0]] = ls[lhs_dn[0]]
  out[out_dn[1]] = rs[rhs_dn[0]]
  return tuple(out)


R.register(windowed.conv_general_dilated_p, _conv)


def _fft(specs, avals, outs, mesh, *, fft_type, fft_lengths):
  k = len(fft_lengths)
  s = specs[0]
  if any(e is not None for e in s[len(s) - k:]):
    raise ShardingTypeError(f"fft: the transformed dimensions must be unsharded, got "
                            f"operand type={type_str(avals[0], s)}")
  return s


R.register(fft.fft_p, _fft)


def _linalg(core_dims, multiple):
  """Batched linear algebra: leading (batch) dims keep their axes; each operand's matrix dims
  (the last `core_dims`) must be unsharded, and results' matrix dims are unsharded."""
  def rule(specs, avals, outs, mesh, **params):
    nb = len(specs[0]) - core_dims
    for s, a in zip(specs, avals):
      if any(e is not None for e in s[len(s) - core_dims:]):
        raise ShardingTypeError(
          f"The matrix dimensions (the last {core_dims}) of a linear algebra operand must be "
          f"unsharded. Got input type={type_str(a, s)}")
    batch = specs[0][:nb]
    res = [batch[:len(o.shape)] + (None,) * (len(o.shape) - nb) for o in outs]
    return res if multiple else res[0]
  return rule


for p, nd in ((linalg.cholesky_p, 2), (linalg.eigh_p, 2), (linalg.eig_p, 2), (linalg.lu_p, 2),
              (linalg.lu_pivots_to_permutation_p, 1), (linalg.qr_p, 2), (linalg.svd_p, 2),
              (linalg_solve.triangular_solve_p, 2), (linalg_solve.schur_p, 2),
              (linalg_solve.cholesky_update_p, 2), (linalg_solve.symmetric_product_p, 2),
              (linalg_solve.householder_product_p, 2), (linalg_solve.tridiagonal_solve_p, 1)):
  R.register(p, _linalg(nd, p.multiple_results))

# --- PRNG ---------------------------------------------------------------------------------------


def _append_nones(specs, avals, outs, mesh, **params):
  s = specs[0]
  return s + (None,) * (len(outs[0].shape) - len(s))


for p in (prng.random_bits_p, prng.random_split_p, prng.random_unwrap_p):
  R.register(p, _append_nones)


def _wrap(specs, avals, outs, mesh, *, impl):
  if specs[0][-1] is not None:
    raise ShardingTypeError(f"random_wrap: the key data's last dimension must be unsharded, "
                            f"got {type_str(avals[0], specs[0])}")
  return specs[0][:-1]


R.register(prng.random_wrap_p, _wrap)

# --- higher-order primitives: their jaxprs carry the shardings ------------------------------------
for p in (call_primitives.jit_p, conditionals.cond_p, loops.while_p, loops.scan_p,
          custom_derivatives.custom_jvp_call_p, custom_derivatives.custom_vjp_call_p,
          custom_derivatives.custom_lin_p, custom_batching.custom_vmap_call_p,
          ad_checkpoint.remat_p):
  R.keep(p)

# --- callbacks and checks: results are what the callback declares (replicated) -----------------
for p in (callbacks.pure_callback_p, callbacks.io_callback_p, callbacks.debug_callback_p,
          callbacks.debug_print_p):
  R.replicated(p)

del p, nd
