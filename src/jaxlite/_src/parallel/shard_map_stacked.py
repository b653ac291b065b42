"""A shard_map body run once over every device's block, stacked: one program for the mesh.

The per-device runtime (spmd/runtime.py) runs a body once per device, each on its own thread.
On one host those programs share the cores badly: OpenBLAS runs concurrent multi-threaded
products one after another (its level-3 driver is serialized), splitting its threads between
devices only slows each queued product, and the device threads hand the GIL to each other at
every NumPy call between kernels. A data-parallel MLP step (benchmarks/bench_devices.py, batch
2048) got slower with every device added on the 13-core host (0.90 / 0.70 / 0.47 of one
device's throughput at 2 / 4 / 8 devices; BENCHMARKS.md, issue 32).

When the devices' programs are the same body on different blocks (a shard_map body always is),
the body can instead run once, vmapped over the mesh axes: each operand is its global array
viewed with a leading dim per mesh axis it is split over (a reshape, no copy, for the usual
layouts), a collective over a mesh axis becomes its vmap rule (psum a sum over that leading dim,
axis_index an iota, all_gather a reshape...), and the outputs are read back the same way. That
is what XLA's SPMD program does in effect on one host, and its values are the per-device
programs' (vmap over a named axis is defined to agree with them), up to the summation order of
the products a psum folds into (`fold_device_sums`). The products of a data-parallel step
become one product over the whole batch on every BLAS thread, the weight gradients' psums
products over all devices' rows: the step costs about what one device's program costs (the
CPU time per step stays flat from 1 to 8 devices; BENCHMARKS.md, issue 32 third session).

Bodies that take the per-device path instead (`stacked_program` returns None):
- a collective with axis_index_groups (vmap's rules refuse groups, as JAX's; the runtime splits
  the axis into them);
- a host callback or an effect (the callback would see every device's blocks at once, or run
  once for all devices; effects keep their per-device order);
- a collective inside a cond or a while_loop (which branch a device takes, or how many times
  it loops, may differ between devices: a cond on axis_index around a psum must raise, as the
  runtime makes it, rather than run both branches); collectives inside scans and nested calls
  (jit, custom_jvp, remat) are fine: every device runs them alike;
- a nested shard_map;
- an operand or result of an extended dtype (PRNG keys: their storage has trailing dims);
- a body whose vmap fails (a primitive without a batching rule, or a rule that does not cover
  the case: an all_gather, all_to_all or psum_scatter over two mesh axes at once mixes the
  vmapped axis with another): the runtime runs it as before.
JAXLITE_SPMD_STACKED=0 turns the path off; tests force it on to compare it with the runtime.
"""
from __future__ import annotations

import math
import os
import weakref

import numpy as np

from jaxlite._src.base import core, dtypes
from jaxlite._src.compiler import backend, passes
from jaxlite._src.interpreters import batching
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.lax import control_flow, dot, parallel, shape
from jaxlite._src.sharding import rules as sharding_rules
from jaxlite._src.spmd import runtime

ENABLED = os.environ.get("JAXLITE_SPMD_STACKED", "1").strip().lower() not in ("0", "false",
                                                                              "off", "no")


def _names(spec, d) -> tuple:
  """The mesh axes splitting dim `d` of a block under `spec` (none past the spec's end)."""
  return sharding_rules.entry_names(spec[d] if d < len(spec) else None)


class _InPlan:
  """How one operand's global array is viewed as its stacked blocks: reshaped so that each
  split dim becomes (one dim per mesh axis in the spec's order, the block's dim), then the mesh
  axes' dims moved to the front in the mesh's axis order."""
  __slots__ = ("shape", "perm", "axes")

  def __init__(self, block, spec, mesh_axes, sizes):
    shape, pos = [], {}
    for d, n in enumerate(block):
      for name in _names(spec, d):
        pos[name] = len(shape)
        shape.append(sizes[name])
      shape.append(n)
    self.axes = tuple(a for a in mesh_axes if a in pos)
    lead = [pos[a] for a in self.axes]
    perm = lead + [i for i in range(len(shape)) if i not in lead]
    self.shape = tuple(shape)
    self.perm = None if perm == list(range(len(shape))) else tuple(perm)

  def view(self, a):
    v = np.asarray(a).reshape(self.shape)
    return v if self.perm is None else v.transpose(self.perm)


class _OutPlan:
  """How one stacked result (a leading dim per mesh axis it is batched over, in mesh order) is
  read back as the global array of its out_spec: batched axes the spec does not split are read
  at index 0 (the replicas are the same; the runtime reads its first writer's block), axes it
  splits but the result does not vary over are broadcast, then each split dim's axes go in
  front of the block's dim and the dims merge."""
  __slots__ = ("index", "expand", "bshape", "perm", "shape", "trivial")

  def __init__(self, batched, block, spec, mesh_axes, sizes):
    split = [a for a in mesh_axes if any(a in _names(spec, d) for d in range(len(block)))]
    self.index = tuple(slice(None) if a in split else 0 for a in batched)
    self.expand = tuple(i for i, a in enumerate(split) if a not in batched)
    self.bshape = tuple(sizes[a] for a in split) + tuple(block)
    perm, at = [], {a: i for i, a in enumerate(split)}
    for d in range(len(block)):
      perm += [at[a] for a in _names(spec, d)]
      perm.append(len(split) + d)
    self.perm = None if perm == list(range(len(perm))) else tuple(perm)
    self.shape = tuple(n * math.prod(sizes[a] for a in _names(spec, d))
                       for d, n in enumerate(block))
    self.trivial = not batched and not split

  def read(self, o):
    if self.trivial:
      return o
    o = np.asarray(o)
    if self.index and any(i == 0 for i in self.index):
      o = o[self.index]
    if self.expand:
      o = np.broadcast_to(np.expand_dims(o, self.expand), self.bshape)
    if self.perm is not None:
      o = o.transpose(self.perm)
    return o.reshape(self.shape)


class StackedProgram:
  """The body vmapped over the mesh axes, compiled: `run(global operands) -> global results`."""
  __slots__ = ("closed", "in_plans", "out_plans")

  def __init__(self, closed, in_plans, out_plans):
    self.closed, self.in_plans, self.out_plans = closed, in_plans, out_plans

  def run(self, args):
    exe = backend.compile_jaxpr(self.closed)  # (cached on the jaxpr per backend)
    views = [p.view(a) for p, a in zip(self.in_plans, args)]
    outs = [p.read(o) for p, o in zip(self.out_plans, exe(*views))]
    # A result that is an operand's view (a body returning its block) is copied, as the
    # runtime's assembled results are: the caller's array must not change under it.
    return [np.array(o) if any(np.may_share_memory(o, v) for v in views) else o
            for o in outs]


_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def stacked_program(jaxpr, mesh, in_specs, out_specs):
  """The StackedProgram of shard_map body `jaxpr` (a ClosedJaxpr over blocks) on `mesh`, or
  None where the body takes the per-device runtime (the module's docstring says when);
  cached per body, mesh and specs."""
  if not ENABLED:
    return None
  per_body = _programs.get(jaxpr)
  if per_body is None:
    per_body = _programs[jaxpr] = {}
  key = (mesh, in_specs, out_specs)
  if key in per_body:
    return per_body[key]
  prog = _build(jaxpr, mesh, in_specs, out_specs) \
      if runtime.all_local(mesh) and _stackable(jaxpr) else None
  if len(per_body) >= 16:
    per_body.clear()
  per_body[key] = prog
  return prog


def _stackable(closed) -> bool:
  avals = list(closed.in_avals) + list(closed.out_avals)
  if any(dtypes.issubdtype(getattr(a, "dtype", None), dtypes.extended) for a in avals
         if hasattr(a, "dtype")):
    return False
  return not _runs_apart(closed.jaxpr, set())


# Primitives whose sub-jaxprs may run differently on each device (cond's branch, while's trip
# count): a collective inside one keeps the body on the runtime.
DEVICE_VARYING_CONTROL = {control_flow.cond_p, control_flow.while_p}

# Primitives that keep a body on the runtime wherever they sit (shard_map.py adds shard_map_p:
# a nested SPMD run).
RUN_APART: set = set()


def _runs_apart(jaxpr, seen) -> bool:
  """Whether `jaxpr` holds an effect, a host callback, a nested shard_map, or a collective
  under device-varying control flow (sub-jaxprs included)."""
  if id(jaxpr) in seen:
    return False
  seen.add(id(jaxpr))
  for eqn in jaxpr.eqns:
    prim = eqn.primitive
    if prim in runtime.per_device_primitives or prim in RUN_APART or passes.is_effectful(eqn):
      return True
    if eqn.params.get("axis_index_groups") is not None:
      return True  # (vmap's rules refuse groups: the runtime's index groups join them)
    for sub in core.jaxprs_in_params(eqn.params):
      if prim in DEVICE_VARYING_CONTROL and runtime.meets_peers(sub):
        return True
      if _runs_apart(sub, seen):
        return True
  return False


def _build(closed, mesh, in_specs, out_specs):
  mesh_axes = tuple(mesh.axis_names)
  sizes = dict(mesh.shape)
  in_plans = [_InPlan(a.shape, s, mesh_axes, sizes) for a, s in zip(closed.in_avals, in_specs)]
  batched_outs = []

  def level(k, vals):
    """The body vmapped over mesh axes k.. (outer to inner), each operand batched at its
    front over that axis where its spec splits over it; results batched at the front."""
    if k == len(mesh_axes):
      return core.eval_jaxpr(closed.jaxpr, closed.consts, *vals), [()] * len(closed.out_avals)
    axis = mesh_axes[k]
    dims = [0 if axis in p.axes else None for p in in_plans]
    inner = []

    def body(*xs):
      outs, axes = level(k + 1, xs)
      inner[:] = axes
      return outs
    outs, out_dims = batching.batch_flat(body, batching.AxisData(axis, sizes[axis]), vals, dims)
    outs = [o if d is None else batching.moveaxis(o, d, 0) for o, d in zip(outs, out_dims)]
    return outs, [((axis,) if d is not None else ()) + a for d, a in zip(out_dims, inner)]

  def fun(*xs):
    outs, axes = level(0, xs)
    batched_outs[:] = axes
    return outs

  in_avals = [core.ShapedArray(tuple(sizes[x] for x in p.axes) + tuple(a.shape), a.dtype,
                               a.weak_type) for p, a in zip(in_plans, closed.in_avals)]
  try:
    with runtime.bind_axes(sizes):
      batched = pe.trace_to_jaxpr(fun, in_avals)
  except Exception:  # noqa: BLE001 -- no batching rule, etc.: the per-device runtime runs it
    return None
  out_plans = [_OutPlan(b, a.shape, s, mesh_axes, sizes)
               for b, a, s in zip(batched_outs, closed.out_avals, out_specs)]
  return StackedProgram(fold_device_sums(batched), in_plans, out_plans)


def fold_device_sums(closed):
  """`closed` with each sum over the device dim of a product batched over it (the psum of a
  data-parallel step's weight gradient: `psum[axes=(0,)] (transpose? (dot_general batched
  over dim 0))`) made one product that contracts the device dim too: one BLAS call over the
  whole batch instead of one per device, a transposed copy and a strided sum (what one
  device's program computes). Returns `closed` itself when nothing folds."""
  jaxpr = closed.jaxpr
  producer = {v: e for e in jaxpr.eqns for v in e.outvars}
  uses: dict = {}
  for e in jaxpr.eqns:
    for v in e.invars:
      if isinstance(v, core.Var):
        uses[v] = uses.get(v, 0) + 1
  for v in jaxpr.outvars:
    if isinstance(v, core.Var):
      uses[v] = uses.get(v, 0) + 2  # never folded away
  replaced, dead = {}, set()
  for e in jaxpr.eqns:
    if e.primitive is not parallel.psum_p or tuple(e.params["axes"]) != (0,):
      continue
    v, perm = e.invars[0], None
    d = producer.get(v) if isinstance(v, core.Var) else None
    if d is not None and d.primitive is shape.transpose_p and uses[v] == 1 \
        and d.params["permutation"][0] == 0:
      perm, t = d.params["permutation"], d
      v = d.invars[0]
      d = producer.get(v) if isinstance(v, core.Var) else None
    if d is None or d.primitive is not dot.dot_general_p or uses[v] != 1:
      continue
    (lc, rc), (lb, rb) = d.params["dimension_numbers"]
    if tuple(lb) != (0,) or tuple(rb) != (0,):
      continue
    new, (lhs, rhs) = [], d.invars
    if lhs.aval.ndim == 3 and rhs.aval.ndim == 3 and tuple(lc) == (1,) and tuple(rc) == (1,):
      # (devices, rows, free) on both sides: rows of all devices as one contiguous dim.
      lhs, rhs = (_merge_front(x, new) for x in (lhs, rhs))
      dims = (((0,), (0,)), ((), ()))
    else:
      dims = ((tuple(lc) + (0,), tuple(rc) + (0,)), ((), ()))
    total = e.outvars[0] if perm is None else \
        core.Var(core.ShapedArray(v.aval.shape[1:], v.aval.dtype, v.aval.weak_type))
    new.append(core.JaxprEqn([lhs, rhs], [total], dot.dot_general_p,
                             dict(d.params, dimension_numbers=dims)))
    if perm is not None:
      new.append(core.JaxprEqn([total], e.outvars, shape.transpose_p,
                               dict(t.params, permutation=tuple(p - 1 for p in perm[1:]))))
      dead.add(id(t))
    dead.add(id(d))
    replaced[id(e)] = new
  if not replaced:
    return closed
  eqns = []
  for e in jaxpr.eqns:
    if id(e) not in dead:
      eqns.extend(replaced.get(id(e), (e,)))
  return core.ClosedJaxpr(core.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns,
                                     jaxpr.effects, jaxpr.debug_info), closed.consts)


def _merge_front(x, eqns):
  """A var holding `x` (devices, rows, free) reshaped to (devices * rows, free); its reshape
  appended to `eqns`."""
  n, m, k = x.aval.shape
  out = core.Var(core.ShapedArray((n * m, k), x.aval.dtype, x.aval.weak_type))
  eqns.append(core.JaxprEqn([x], [out], shape.reshape_p,
                            {"new_sizes": (n * m, k), "dimensions": None, "sharding": None}))
  return out


runtime.stacked_builders.append(stacked_program)
