"""`jax.shard_map`: a function of per-device blocks mapped over a mesh, and the `shard_map`
primitive with its rules (impl over the SPMD runtime, abstract eval, JVP, linearize, transpose,
batching). Varying-manual-axes typing (check_vma) lives in shard_map_vma.py.
"""
from __future__ import annotations

import contextlib
import functools
import math
import weakref

import numpy as np

from jaxlite._src.base import core, tree_util
from jaxlite._src.rng import prng
from jaxlite._src.parallel import shard_map_eager, shard_map_stacked
from jaxlite._src.base import primitive_kinds as pk
from jaxlite._src.base import pretty_print as pp
from jaxlite._src.compiler import backend
from jaxlite._src.compiler.xla import lowering as hlo
from jaxlite._src.compiler.xla import spmd as xla_spmd
from jaxlite._src.base.config import config
from jaxlite._src.interpreters import ad, batching, linearize
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.lax import parallel, parallel_comm
from jaxlite._src.sharding.mesh import (AbstractMesh, AxisType, Mesh, get_abstract_mesh,
                                        get_mesh, use_abstract_mesh)
from jaxlite._src.sharding.partition_spec import PartitionSpec
from jaxlite._src.parallel.shard_map_vma import annotate, spec_axes, trace_typed
from jaxlite._src.spmd import programs, runtime


class _Infer:
  def __repr__(self):
    return "jax.sharding.Infer"


Infer = _Infer()


# --- specs -------------------------------------------------------------------------------------

def spec_names(entry) -> tuple:
  if entry is None:
    return ()
  return tuple(entry) if isinstance(entry, tuple) else (entry,)


def block_shape(shape, spec, mesh) -> tuple:
  sizes = mesh.shape
  out = list(shape)
  for d, entry in enumerate(spec):
    out[d] //= math.prod(sizes[n] for n in spec_names(entry))
  return tuple(out)


def global_shape(shape, spec, mesh) -> tuple:
  sizes = mesh.shape
  out = list(shape)
  for d, entry in enumerate(spec):
    out[d] *= math.prod(sizes[n] for n in spec_names(entry))
  return tuple(out)


def _device_index(spec, mesh, shape, coords) -> tuple:
  """The slice of a global array of `shape` that the device at `coords` holds under `spec`."""
  idx = []
  for d in range(len(shape)):
    names = spec_names(spec[d]) if d < len(spec) else ()
    if not names:
      idx.append(slice(None))
      continue
    k = 0
    for n in names:
      k = k * mesh.shape[n] + coords[n]
    width = shape[d] // math.prod(mesh.shape[n] for n in names)
    idx.append(slice(k * width, (k + 1) * width))
  return tuple(idx)


def _is_spec_leaf(x) -> bool:
  return x is None or isinstance(x, PartitionSpec)


def _broadcast_specs(specs, tree, what):
  """One spec per leaf of `tree` from a pytree prefix of specs (a bare P covers everything);
  JAX's pytree structure error naming `shard_map {what}_specs` where it is no prefix."""
  full = tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
  if isinstance(specs, PartitionSpec) or specs is None:
    specs = PartitionSpec() if specs is None else specs
    return [specs] * tree.num_leaves
  try:
    leaves = tree_util._broadcast_leaves(specs, full, _is_spec_leaf)
  except ValueError:
    errors = tree_util.prefix_errors(specs, full, is_leaf=_is_spec_leaf)
    if not errors:
      raise
    raise errors[0](f"shard_map {what}_specs") from None
  return [PartitionSpec() if x is None else x for x in leaves]


def _check_spec_types(specs, what):
  """JAX's TypeError for a spec pytree with leaves that are not PartitionSpecs."""
  paths = tree_util.tree_flatten_with_path(
      specs, is_leaf=lambda x: isinstance(x, PartitionSpec))[0]
  msgs = [f"  {what}_specs{tree_util.keystr(k)} is {x} of type {type(x).__name__}, "
          for k, x in paths if not isinstance(x, PartitionSpec)]
  if msgs:
    raise TypeError(f"shard_map {what}_specs argument must be a pytree of "
                    "`jax.sharding.PartitionSpec` instances, but:\n\n" + "\n\n".join(msgs) +
                    f"\n\nCheck the {what}_specs values passed to shard_map.")


def _concrete_mesh(mesh, flat_args):
  """The Mesh a shard_map given an AbstractMesh runs on: the context mesh (`set_mesh`) of the
  same axes, else the mesh of an argument's NamedSharding of the same axes; JAX's ValueError
  when there is none."""
  for m in reversed(_body_meshes):  # a nested shard_map over the enclosing body's mesh
    if (m.axis_sizes, m.axis_names) == (mesh.axis_sizes, mesh.axis_names):
      return m
  key = (mesh.axis_sizes, mesh.axis_names, mesh.axis_types)
  ctx = get_mesh()
  candidates = [ctx] + [getattr(getattr(a, "_device", None), "mesh", None) for a in flat_args]
  for m in candidates:
    if isinstance(m, Mesh) and not m.empty and (m.axis_sizes, m.axis_names, m.axis_types) == key:
      return m
  raise ValueError("Please pass `jax.Array`s with a `NamedSharding` as input to `shard_map` "
                   "when passing `AbstractMesh` to the mesh argument.")


# --- the primitive -----------------------------------------------------------------------------

shard_map_p = core.Primitive("shard_map")
shard_map_p.multiple_results = True
shard_map_stacked.RUN_APART.add(shard_map_p)  # a nested SPMD run: bodies holding one run apart


class _AxisSet(frozenset):
  """The manual axes, printed in mesh order (a frozenset's own order depends on hashing)."""

  def __new__(cls, axes, order):
    s = super().__new__(cls, axes)
    s.order = tuple(a for a in order if a in axes)
    return s

  def __repr__(self):
    return "frozenset({" + ", ".join(repr(a) for a in self.order) + "})"


class _ContextMesh(Mesh):
  """The mesh of `jax.set_mesh` as a shard_map given no `mesh=` takes it: JAX stages the
  context's AbstractMesh, so a jaxpr prints that (running needs the devices: still a Mesh)."""


_context_meshes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _context_mesh(m):
  hit = _context_meshes.get(m)
  if hit is None:
    hit = _context_meshes[m] = _ContextMesh(m.devices, m.axis_names, m.axis_types)
  return hit


def _mesh_text(m):
  return str(m.abstract_mesh if isinstance(m, _ContextMesh) else m)


pp.param_rules[shard_map_p] = pp.ParamRule(show={"mesh": _mesh_text})


def _abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, check_vma, newly_manual_axes):
  return [core.ShapedArray(global_shape(a.shape, s, mesh), a.dtype, a.weak_type,
                           _typed_sharding(mesh, s))
          for a, s in zip(jaxpr.out_avals, out_specs)]


def _typed_sharding(mesh, spec):
  """The output's sharding when it splits a dimension over an Explicit axis (it is then part
  of the type, as in JAX), else None."""
  from jaxlite._src.base.devices import sharding_in_type
  from jaxlite._src.sharding.named_sharding import NamedSharding
  sharding = NamedSharding(mesh, spec)
  return sharding if sharding_in_type(sharding) else None


# Per-device elements (inputs and outputs) below which a body that meets no peer runs its
# devices one after another on the caller's thread (see runtime.run_spmd's `inline`).
_INLINE_MAX_ELEMENTS = 1 << 15


def _runs_inline(jaxpr) -> bool:
  """Whether `jaxpr`'s devices may run inline: small, no collective (decided once per body)."""
  hit = _inline_memo.get(jaxpr)
  if hit is None:
    work = sum(math.prod(a.shape) for a in jaxpr.in_avals + jaxpr.out_avals
               if hasattr(a, "shape"))
    hit = _inline_memo[jaxpr] = work <= _INLINE_MAX_ELEMENTS and \
        not runtime.meets_peers(jaxpr.jaxpr)
  return hit


_inline_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


_indices_memo: dict = {}


def _indices(spec, mesh, shape) -> list:
  """Each device's index into a global array of `shape` laid out by `spec` (mesh order;
  cached: the dispatch path of every eager shard_map call reads it)."""
  key = (spec, mesh, shape)
  hit = _indices_memo.get(key)
  if hit is None:
    if len(_indices_memo) >= 1024:
      _indices_memo.clear()
    hit = _indices_memo[key] = [_device_index(spec, mesh, shape, c)
                                for c in runtime.mesh_coords(mesh)]
  return hit


_writers_memo: dict = {}


def _writers(out_specs, mesh, out_avals, check_vma) -> list:
  """Per output, the devices whose block `_assemble` reads (cached): the first device holding
  each distinct block; for a fully replicated output typed so by check_vma (every replica is
  the same) one device, chosen to balance the elements each computes (a data-parallel step's
  parameter updates are then shared out), else device 0 (as JAX reads it)."""
  key = (out_specs, mesh, tuple(a.shape for a in out_avals), check_vma)
  hit = _writers_memo.get(key)
  if hit is None:
    if len(_writers_memo) >= 1024:
      _writers_memo.clear()
    hit = _writers_memo[key] = _find_writers(out_specs, mesh, out_avals, check_vma)
  return hit


def _find_writers(out_specs, mesh, out_avals, check_vma) -> list:
  out = []
  for spec, aval in zip(out_specs, out_avals):
    if not any(spec_names(e) for e in spec):
      out.append({0})
      continue
    seen, devs = set(), set()
    for d, idx in enumerate(_indices(spec, mesh, global_shape(aval.shape, spec, mesh))):
      key = tuple((s.start, s.stop) for s in idx)
      if key not in seen:
        seen.add(key)
        devs.add(d)
    out.append(devs)
  if check_vma:
    load = [0] * mesh.devices.size
    for i in sorted((i for i, w in enumerate(out) if w == {0} and not any(
        spec_names(e) for e in out_specs[i])), key=lambda i: -math.prod(out_avals[i].shape)):
      d = load.index(min(load))
      out[i] = {d}
      load[d] += math.prod(out_avals[i].shape)
  return out


def _run_program(run, *blocks):
  return run(*blocks)


def _impl(*args, jaxpr, mesh, in_specs, out_specs, check_vma, newly_manual_axes):
  args = [a if isinstance(a, _LocalBlocks) else np.asarray(a) for a in args]
  local = any(isinstance(a, _LocalBlocks) for a in args)
  if not local and xla_spmd.installed_xla() is not None:  # one XLA program over the mesh
    return xla_spmd.run_primitive(shard_map_p, args, dict(
        jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma,
        newly_manual_axes=newly_manual_axes))
  if not local and mesh.devices.size > 1 and runtime.current_context() is None:
    # One program over every device's block, stacked (shard_map_stacked.py), where it applies.
    stacked = shard_map_stacked.stacked_program(jaxpr, mesh, in_specs, out_specs)
    if stacked is not None and _fully_addressable(mesh):
      return stacked.run(args)
  # Over a mesh spanning processes every local block is read: all devices run it whole.
  writers = [set(range(mesh.devices.size))] * len(out_specs) if local or \
      not _fully_addressable(mesh) else _writers(out_specs, mesh, jaxpr.out_avals, check_vma)
  progs = programs.device_programs(jaxpr, mesh, writers)
  runs = {}
  for p in progs:
    if id(p) not in runs:
      runs[id(p)] = p.executable()
  coords = runtime.mesh_coords(mesh)
  index = [None if isinstance(a, _LocalBlocks) else _indices(s, mesh, a.shape)
           for a, s in zip(args, in_specs)]
  per_device = [[runs[id(progs[i])]] + [a.block(i) if ix is None else a[ix[i]]
                                        for a, ix in zip(args, index)]
                for i in range(len(coords))]
  inline = not local and _runs_inline(jaxpr)
  outs = runtime.run_spmd(mesh, _run_program, per_device, inline=inline)
  if any(o is None for o in outs):  # a mesh over several processes: this process's blocks
    return [_LocalBlocks(mesh, {mesh.devices.flat[d]: o[i] for d, o in enumerate(outs)
                                if o is not None}) for i in range(len(jaxpr.out_avals))]
  return [_assemble([o[i] for o in outs], s, mesh, coords, aval, w)
          for i, (s, aval, w) in enumerate(zip(out_specs, jaxpr.out_avals, writers))]


class _LocalBlocks:
  """A shard_map operand or result over a mesh spanning processes: {device: block} for this
  process's devices (the other processes hold the rest)."""
  def __init__(self, mesh, blocks):
    self.mesh, self.blocks = mesh, blocks

  def block(self, i):
    return self.blocks.get(self.mesh.devices.flat[i])


# The multi-process path (MPI only): distributed/sharded_jit.py registers `local_blocks` at its
# import, which `jax.distributed` loads (issue 29: this module never imports it).
_multiprocess = {}


def register_multiprocess(**fns):
  _multiprocess.update(fns)


def _local_blocks(a, mesh, spec):
  """This process's per-device blocks of Array `a` as the in_spec lays them out."""
  from jaxlite._src.base import array
  from jaxlite._src.sharding.named_sharding import NamedSharding
  want = NamedSharding(mesh, spec)
  if a.sharding != want and not a.is_fully_replicated:  # its shards move between processes
    return _LocalBlocks(mesh, _multiprocess["local_blocks"](a, want))
  if a.is_fully_replicated:
    v = array.host_value(a)
    idx = want.devices_indices_map(v.shape)
    return _LocalBlocks(mesh, {d: v[idx[d]] for d in want.addressable_devices})
  return _LocalBlocks(mesh, {d: b for d, _, _, b in array.shard_views(a)})


def _assemble(blocks, spec, mesh, coords, aval, writers=(0,)):
  """The global buffer of one output from every device's block (one buffer, from its writer,
  when replicated)."""
  if not any(spec_names(e) for e in spec):
    return np.asarray(blocks[min(writers)])
  shape = global_shape(aval.shape, spec, mesh)
  out = np.empty(shape, prng.storage_dtype(aval.dtype))
  seen = set()
  for b, idx in zip(blocks, _indices(spec, mesh, shape)):
    key = tuple((s.start, s.stop) for s in idx)
    if key not in seen:
      seen.add(key)
      out[idx] = b
  return out


shard_map_p.def_abstract_eval(_abstract_eval)
shard_map_p.def_impl(_impl)


def _lowering(ctx, *args, jaxpr, mesh, in_specs, out_specs, check_vma, newly_manual_axes):
  return xla_spmd.manual_region(ctx, list(args), jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                                out_specs=out_specs, manual=frozenset(newly_manual_axes))


hlo.register(shard_map_p, _lowering)  # sdy.manual_computation (compiler/xla/spmd.py)
xla_spmd.SPMD_PRIMITIVES.add(shard_map_p)
xla_spmd.MANUAL_PRIMITIVES.add(shard_map_p)


def _manual_env(mesh, manual) -> dict:
  return {n: mesh.shape[n] for n in mesh.axis_names if n in manual}


# The concrete meshes of the shard_map bodies being traced, innermost last: inside a body, as in
# JAX, the context's abstract mesh is the body's mesh with its manual axes typed Manual, and a
# nested shard_map given that abstract mesh (or none) runs over the enclosing concrete mesh.
_body_meshes: list = []


@contextlib.contextmanager
def _body_mesh(mesh, manual):
  ctx = get_abstract_mesh()
  base = ctx if not ctx.empty and (ctx.axis_sizes, ctx.axis_names) == (
      mesh.axis_sizes, mesh.axis_names) else mesh.abstract_mesh
  _body_meshes.append(mesh)
  try:
    with use_abstract_mesh(base.update_axis_types({a: AxisType.Manual for a in manual})):
      yield
  finally:
    _body_meshes.pop()


def _trace_body(fun, avals, mesh, manual, check_vma=None):
  """The body's jaxpr. The user's body (`check_vma` given) is typed as it is traced
  (shard_map_vma.TraceTyping) under check_vma=True, and untyped under check_vma=False even
  inside a typed body (JAX's psum then keeps axis_index_groups); bodies derived by autodiff
  (check_vma None) are traced as the enclosing typing has it and typed after (`annotate`)."""
  with runtime.bind_axes(_manual_env(mesh, manual)), _body_mesh(mesh, manual):
    if check_vma is None:
      return pe.trace_to_jaxpr(fun, list(avals))
    with trace_typed(mesh, manual, check_vma):
      return pe.trace_to_jaxpr(fun, list(avals))


def _block_avals(in_avals, in_specs, mesh, check_vma, manual):
  return [core.ShapedArray(block_shape(a.shape, s, mesh), a.dtype, a.weak_type,
                           vma=spec_axes(s, manual) if check_vma else frozenset())
          for a, s in zip(in_avals, in_specs)]


def bind_shard_map(args, body, *, mesh, in_specs, out_specs, check_vma, manual):
  """Binds shard_map on `args` with `body` (a ClosedJaxpr over blocks), typing it first."""
  if check_vma:
    body = annotate(body, [spec_axes(s, manual) for s in in_specs], mesh, manual)
  return shard_map_p.bind(*args, jaxpr=body, mesh=mesh, in_specs=tuple(in_specs),
                          out_specs=tuple(out_specs), check_vma=check_vma,
                          newly_manual_axes=_AxisSet(manual, mesh.axis_names))


def _eval_fn(closed):
  return lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs)


# --- autodiff ----------------------------------------------------------------------------------

def _jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_vma, newly_manual_axes):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  manual = frozenset(newly_manual_axes)
  with runtime.bind_axes(_manual_env(mesh, manual)):
    jvp_body, nz_out = ad.jvp_jaxpr(jaxpr, nonzeros)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  t_specs = [s for s, nz in zip(in_specs, nonzeros) if nz]
  to_specs = [s for s, nz in zip(out_specs, nz_out) if nz]
  outs = bind_shard_map([*primals, *nz_tangents], jvp_body, mesh=mesh,
                        in_specs=[*in_specs, *t_specs], out_specs=[*out_specs, *to_specs],
                        check_vma=check_vma, manual=manual)
  n = len(out_specs)
  avals = _abstract_eval(jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                         check_vma=check_vma, newly_manual_axes=manual)
  it = iter(outs[n:])
  return outs[:n], [next(it) if nz else ad.Zero(ad.tangent_aval(a))
                    for nz, a in zip(nz_out, avals)]


def _stacked_spec(vma, mesh):
  axes = tuple(a for a in mesh.axis_names if a in vma)
  return PartitionSpec(axes if len(axes) > 1 else axes[0] if axes else None)


def _linearize(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_vma,
               newly_manual_axes):
  manual = frozenset(newly_manual_axes)
  env = _manual_env(mesh, manual)
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  with runtime.bind_axes(env):
    lin = linearize.linearize_jaxpr(jaxpr, nonzeros)
  kept = [s for s, f in zip(out_specs, lin.out_fwd) if f is None]
  n_kept = len(kept)
  primal = lin.primal
  in_vmas = [spec_axes(s, manual) for s in in_specs]
  typed = annotate(primal, in_vmas, mesh, manual)
  # Residuals a device computes are stacked along a new leading axis split over the axes they
  # vary over (JAX does the same), so that they travel between the two shard_maps as arrays.
  extra_vmas = [v.aval.vma if check_vma else manual for v in typed.jaxpr.outvars[n_kept:]]
  extra_specs = [_stacked_spec(v, mesh) for v in extra_vmas]

  def primal_fun(*xs):
    outs = _eval_fn(primal)(*xs)
    return outs[:n_kept] + [parallel_comm._insert_axis(r, 0) for r in outs[n_kept:]]
  block_avals = _block_avals([core.get_aval(p) for p in primals], in_specs, mesh, check_vma,
                             manual)
  primal_body = _trace_body(primal_fun, block_avals, mesh, manual)
  call_outs = bind_shard_map(primals, primal_body, mesh=mesh, in_specs=in_specs,
                             out_specs=kept + extra_specs, check_vma=check_vma, manual=manual)
  primal_outs, residuals = lin.assemble(primals, call_outs)
  res_specs, stacked = [], []
  for kind, i in lin.res_src:
    if kind == "in":
      res_specs.append(in_specs[i])
      stacked.append(False)
    elif i < n_kept:
      res_specs.append(kept[i])
      stacked.append(False)
    else:
      res_specs.append(extra_specs[i - n_kept])
      stacked.append(True)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  t_specs = [s for s, nz in zip(in_specs, nonzeros) if nz]
  to_specs = [s for s, nz in zip(out_specs, lin.nz_out) if nz]
  avals = _abstract_eval(jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                         check_vma=check_vma, newly_manual_axes=manual)
  tangent_outs = []
  if any(lin.nz_out):
    tangent = lin.tangent
    n_res = len(residuals)

    def tangent_fun(*xs):
      res = [shape_squeeze(r) if st else r for r, st in zip(xs[:n_res], stacked)]
      return _eval_fn(tangent)(*res, *xs[n_res:])
    t_block = _block_avals([core.get_aval(r) for r in residuals] +
                           [core.get_aval(t) for t in nz_tangents], res_specs + t_specs, mesh,
                           check_vma, manual)
    tangent_body = _trace_body(tangent_fun, t_block, mesh, manual)
    tangent_outs = bind_shard_map([*residuals, *nz_tangents], tangent_body, mesh=mesh,
                                  in_specs=res_specs + t_specs, out_specs=to_specs,
                                  check_vma=check_vma, manual=manual)
  it = iter(tangent_outs)
  return primal_outs, [next(it) if nz else ad.Zero(ad.tangent_aval(a))
                       for nz, a in zip(lin.nz_out, avals)]


def shape_squeeze(x):
  from jaxlite._src.lax import shape as shape_prims
  return shape_prims.squeeze_p.bind(x, dimensions=(0,))


def _transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, check_vma, newly_manual_axes):
  manual = frozenset(newly_manual_axes)
  undefined = [ad.is_undefined_primal(a) for a in args]
  ct_nz = [type(c) is not ad.Zero for c in cts]
  with runtime.bind_axes(_manual_env(mesh, manual)):
    trans, nonzero = ad.transpose_jaxpr(jaxpr, undefined, ct_nz)
  defined = [a for a in args if not ad.is_undefined_primal(a)]
  nz_cts = [c for c in cts if type(c) is not ad.Zero]
  d_specs = [s for s, u in zip(in_specs, undefined) if not u]
  c_specs = [s for s, nz in zip(out_specs, ct_nz) if nz]
  lin_specs = [s for s, u in zip(in_specs, undefined) if u]
  o_specs = [s for s, nz in zip(lin_specs, nonzero) if nz]
  if not any(nonzero):
    return ad.spread_transposed(args, nonzero, [])
  n_def = len(defined)
  in_vmas = [spec_axes(s, manual) for s in d_specs + c_specs]
  out_vmas = None
  if check_vma:
    out_vmas = [v.aval.vma for v in annotate(trans, in_vmas, mesh, manual).jaxpr.outvars]

  def fun(*xs):
    ds, cs = list(xs[:n_def]), list(xs[n_def:])
    if not check_vma:  # a replicated output's cotangent is shared among its replicas
      cs = [_scale(c, 1 / _unmentioned_size(s, mesh, manual)) for c, s in zip(cs, c_specs)]
    outs = _eval_fn(trans)(*ds, *cs)
    fixed = []
    for i, (o, s) in enumerate(zip(outs, o_specs)):
      extra = (out_vmas[i] if check_vma else manual) - spec_axes(s, manual)
      extra = tuple(a for a in mesh.axis_names if a in extra)
      if extra:  # replicas of an input add their cotangents up
        o = (parallel_comm.psum_invariant_p.bind(o, axes=extra) if check_vma
             else parallel.psum_p.bind(o, axes=extra, axis_index_groups=None))
      fixed.append(o)
    return fixed
  avals = _block_avals([core.get_aval(d) for d in defined] + [core.get_aval(c) for c in nz_cts],
                       d_specs + c_specs, mesh, check_vma, manual)
  body = _trace_body(fun, avals, mesh, manual)
  outs = bind_shard_map([*defined, *nz_cts], body, mesh=mesh, in_specs=d_specs + c_specs,
                        out_specs=o_specs, check_vma=check_vma, manual=manual)
  return ad.spread_transposed(args, nonzero, outs)


def _unmentioned_size(spec, mesh, manual) -> int:
  mentioned = spec_axes(spec, manual)
  return math.prod(mesh.shape[a] for a in manual if a not in mentioned)


def _scale(x, factor):
  from jaxlite._src.lax import elementwise as ew
  if factor == 1:
    return x
  return ew.mul_p.bind(x, np.array(factor, core.get_aval(x).dtype))


ad.jvp_rules[shard_map_p] = _jvp
ad.linearize_rules[shard_map_p] = _linearize
ad.primitive_transposes[shard_map_p] = _transpose


# --- batching ----------------------------------------------------------------------------------

def _insert_none(spec, dim, ndim):
  entries = list(spec) + [None] * max(0, dim - len(spec))
  entries.insert(dim, None)
  return PartitionSpec(*entries)


def _batcher(axis_data, vals, dims, *, jaxpr, mesh, in_specs, out_specs, check_vma,
             newly_manual_axes):
  manual = frozenset(newly_manual_axes)
  if all(d is None for d in dims):
    return shard_map_p.bind(*vals, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                            out_specs=out_specs, check_vma=check_vma,
                            newly_manual_axes=newly_manual_axes), [None] * len(out_specs)
  with runtime.bind_axes(_manual_env(mesh, manual)):
    body, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  new_in = [s if d is None else _insert_none(s, d, len(a.shape))
            for s, d, a in zip(in_specs, dims, jaxpr.in_avals)]
  new_out = [s if d is None else _insert_none(s, d, len(a.shape))
             for s, d, a in zip(out_specs, out_dims, jaxpr.out_avals)]
  outs = bind_shard_map(vals, body, mesh=mesh, in_specs=new_in, out_specs=new_out,
                        check_vma=check_vma, manual=manual)
  return outs, list(out_dims)


batching.axis_primitive_batchers[shard_map_p] = _batcher


# --- the API -----------------------------------------------------------------------------------

def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma: bool = True):
  """Maps `f`, a function of per-device blocks, over `mesh`: inputs are split by `in_specs`,
  outputs assembled by `out_specs` (PartitionSpecs naming mesh axes per dimension)."""
  if f is None:
    return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                               axis_names=axis_names, check_vma=check_vma)
  if not callable(f):
    raise TypeError(f"shard_map requires a callable for its first argument, got {f!r}")
  if in_specs is not Infer and in_specs is not None:
    _check_spec_types(in_specs, "in")
  _check_spec_types(out_specs, "out")

  @functools.wraps(f)
  def wrapped(*args):
    m = mesh if mesh is not None else get_mesh()
    if mesh is None and not m.empty:
      m = _context_mesh(m)
    if mesh is not None:
      ctx = get_abstract_mesh()
      if not ctx.empty and mesh.abstract_mesh != ctx:
        raise ValueError(f"The context mesh {ctx} should match the mesh passed to shard_map "
                         f"{mesh}")
    if mesh is None and m.empty and not get_abstract_mesh().empty:
      m = get_abstract_mesh()  # under use_abstract_mesh: as if passed
    if isinstance(m, AbstractMesh) and not m.empty:
      m = _concrete_mesh(m, tree_util.tree_leaves(args))
    if not isinstance(m, Mesh) or m.empty:
      raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter "
                       "into a mesh context")
    names = frozenset(axis_names)
    if not names <= frozenset(m.axis_names):
      raise ValueError(f"jax.shard_map requires axis_names={names} to be a subset of "
                       f"mesh.axis_names={frozenset(m.axis_names)}")
    manual = names or frozenset(m.axis_names)
    return _call(f, m, manual, in_specs, out_specs, check_vma, args)
  return wrapped


# Eager calls' traced bodies, per function (held weakly) and call signature: an eager
# shard_map traces its body once per signature, like jit (`_eager_key` says what keys it).
_EAGER_CACHE_SIZE = 64
_eager_bodies: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _eager_key(f, mesh, manual, flat_in, out_specs, check_vma, in_tree, in_avals):
  """(cache, key) for an eager call's traced body, or (None, None) when it cannot be cached
  (an unhashable spec tree or function)."""
  try:
    cache = _eager_bodies.get(f)
    if cache is None:
      cache = _eager_bodies[f] = {}
    out_leaves, out_def = tree_util.tree_flatten(
        out_specs, is_leaf=lambda x: x is None or isinstance(x, PartitionSpec))
    key = (mesh, manual, tuple(flat_in), tuple(out_leaves), out_def, check_vma, in_tree,
           tuple(in_avals), config.trace_context())
    hash(key)
  except TypeError:
    return None, None
  return cache, key


def _call(f, mesh, manual, in_specs, out_specs, check_vma, args):
  from jaxlite._src.parallel.shard_map_checks import (check_arg_devices, check_in_specs,
                                             check_out_specs, check_vma_out, infer_in_specs)
  from jaxlite._src.transforms.call_primitives import as_traceable_arg
  flat, in_tree = tree_util.tree_flatten(args)
  flat = [as_traceable_arg(x) for x in flat]
  if in_specs is Infer:
    flat_in = infer_in_specs(flat)
  else:
    flat_in = _broadcast_specs(in_specs, in_tree, "in")
  in_avals = [core.get_aval(x) for x in flat]
  eager = core.current_trace() is core.eval_trace and not any(
      isinstance(a, core.Tracer) for a in flat)
  cache = key = None
  if eager:
    cache, key = _eager_key(f, mesh, manual, flat_in, out_specs, check_vma, in_tree, in_avals)
    hit = None if cache is None else cache.get(key)
    if hit is shard_map_eager.BY_OP:
      return shard_map_eager.run(f, mesh, manual, flat_in, out_specs, check_vma, in_tree, flat)
    if hit is not None:
      params, out_tree = hit
      return tree_util.tree_unflatten(out_tree, _eager(flat, params))
  check_in_specs(f, mesh, manual, in_tree, flat_in, in_avals)
  if eager:
    check_arg_devices(f, mesh, flat)
  block = _block_avals(in_avals, flat_in, mesh, check_vma, manual)
  out_tree_box = []

  def body(*blocks):
    if eager:
      shard_map_eager.note_body_trace()
    out = f(*tree_util.tree_unflatten(in_tree, list(blocks)))
    leaves, tree = tree_util.tree_flatten(out)
    out_tree_box.append(tree)
    return [as_traceable_arg(x) for x in leaves]
  if eager:  # a body that prints its values runs op by op, as JAX runs every eager body
    try:
      with shard_map_eager.watching():
        closed = _trace_body(body, block, mesh, manual, check_vma)
    except shard_map_eager.NeedsValues:
      if cache is not None:
        cache[key] = shard_map_eager.BY_OP
      return shard_map_eager.run(f, mesh, manual, flat_in, out_specs, check_vma, in_tree, flat)
  else:
    closed = _trace_body(body, block, mesh, manual, check_vma)
  closed, lifted = pe.convert_constvars_to_invars(closed)
  out_tree = out_tree_box[0]
  flat_out = _broadcast_specs(out_specs, out_tree, "out")
  check_out_specs(f, mesh, manual, flat_out, closed.out_avals)
  in_all = [PartitionSpec()] * len(lifted) + flat_in
  if check_vma:
    closed = annotate(closed, [frozenset()] * len(lifted) +
                      [spec_axes(s, manual) for s in flat_in], mesh, manual)
    # (an eager call's error names JAX's per-primitive helper, as JAX's eager shard_map does)
    check_vma_out(f, mesh, manual, flat_out, [v.aval.vma for v in closed.jaxpr.outvars],
                  fun_name="_rem_singleton" if eager else None)
  params = dict(jaxpr=closed, mesh=mesh, in_specs=tuple(in_all), out_specs=tuple(flat_out),
                check_vma=check_vma, newly_manual_axes=_AxisSet(manual, mesh.axis_names))
  all_args = [*lifted, *flat]
  if eager and not any(isinstance(a, core.Tracer) for a in lifted):
    if cache is not None and not lifted:  # consts lifted from closures are read every call
      while len(cache) >= _EAGER_CACHE_SIZE:
        del cache[next(iter(cache))]
      cache[key] = (params, out_tree)
    outs = _eager(all_args, params)
  else:
    outs = shard_map_p.bind(*all_args, **params)
  return tree_util.tree_unflatten(out_tree, outs)


_addressable_memo: dict = {}


def _fully_addressable(mesh) -> bool:
  hit = _addressable_memo.get(mesh)
  if hit is None:
    from jaxlite._src.sharding.named_sharding import NamedSharding
    hit = _addressable_memo[mesh] = NamedSharding(mesh).is_fully_addressable
  return hit


def _eager_on_xla(args, vals, params):
  """An eager shard_map over a mesh spanning processes, on the xla backend: the one-equation
  program compiled by XLA for the whole mesh, run by every process on its devices' blocks."""
  from jaxlite._src.base import devices
  from jaxlite._src.distributed import global_arrays
  from jaxlite._src.sharding import propagation as prop
  from jaxlite._src.sharding.named_sharding import NamedSharding
  mesh = params["mesh"]
  n_lifted = len(args) - len(params["in_specs"])
  avals = [core.get_aval(a) for a in args]
  specs = [prop.replicated(len(a.shape)) if i < n_lifted else
           prop.spec_of_sharding(NamedSharding(mesh, s), len(a.shape))
           for i, (a, s) in enumerate(zip(avals, [None] * n_lifted + list(params["in_specs"])))]
  flat = list(mesh.devices.flat)
  mine = [d for d in flat if d.process_index == devices.process_index()]
  blocks = [v.blocks if isinstance(v, _LocalBlocks) else {d: v for d in mine} for v in vals]
  outs, _ = xla_spmd.run_primitive_blocks(shard_map_p, avals, params, mesh, specs, blocks)
  return [global_arrays._assemble(global_shape(aval.shape, s, mesh), NamedSharding(mesh, s),
                                  o, aval.weak_type)
          for o, aval, s in zip(outs, params["jaxpr"].out_avals, params["out_specs"])]


def _eager(args, params):
  """Runs shard_map now and gives its outputs their NamedShardings (per out_specs)."""
  from jaxlite._src.base import array
  from jaxlite._src.sharding.named_sharding import NamedSharding
  mesh = params["mesh"]
  if not _fully_addressable(mesh):
    from jaxlite._src.distributed import global_arrays
    n_lifted = len(args) - len(params["in_specs"])
    specs = [None] * n_lifted + list(params["in_specs"])
    vals = [_local_blocks(a, mesh, s) if isinstance(a, array.ArrayImpl) and s is not None
            else np.asarray(a) for a, s in zip(args, specs)]
    from jaxlite._src.compiler.xla import multiprocess
    if multiprocess.active():  # XLA's CPU client spans the processes: one XLA program
      return _eager_on_xla(args, vals, params)
    outs = _impl(*vals, **params)
    return [global_arrays._assemble(global_shape(aval.shape, s, mesh), NamedSharding(mesh, s),
                                    o.blocks, aval.weak_type)
            for o, aval, s in zip(outs, params["jaxpr"].out_avals, params["out_specs"])]
  vals = [array.host_value(a) if isinstance(a, array.ArrayImpl) else np.asarray(a)
          for a in args]
  outs = _impl(*vals, **params)
  return [array.from_host(o, aval.weak_type, NamedSharding(mesh, s))
          for o, aval, s in zip(outs, params["jaxpr"].out_avals, params["out_specs"])]


# --- what these primitives are (primitive_kinds: fusion, scan hoisting, sharding propagation)

pk.register(shard_map_p, pk.CALL, role="shard_map")
