"""jit calls whose mesh spans processes: the partitioner's per-device program (or the jitted
program's shard_map equations) run on this process's devices only, fed their local shards.

sharding/partition.py's `call_sharded` hands over here when the mesh has other processes'
devices. A process holds only its devices' shards of a cross-process Array, so nothing global
is built: an argument laid out as the program needs gives each local device its own block (a
view, no copy); one laid out otherwise moves point to point between processes (`_moved`); the
per-device program runs through the SPMD runtime (`run_spmd` starts workers for the local
devices; collectives over axes spanning processes go through `group_exchange` and MPI), and the
outputs are Arrays assembled from the local devices' blocks (`global_arrays._assemble`).
Eager primitives on such Arrays come here too (`eager`, from core.EvalTrace): each runs as the
jit of the one primitive, as JAX runs eager ops.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import devices
from jaxlite._src.base.config import config
from jaxlite._src.spmd import runtime


spans_processes = devices.spans_processes


_equivalent: dict = {}  # (id, id, ndim) -> (sharding, wanted sharding, equivalent?)


def _same_layout(have, want, ndim) -> bool:
  if have is want:
    return True
  key = (id(have), id(want), ndim)  # by identity: hashing a mesh costs more than the call
  hit = _equivalent.get(key)
  if hit is None or hit[0] is not have or hit[1] is not want:
    if len(_equivalent) > 256:
      _equivalent.clear()
    hit = _equivalent[key] = (have, want, bool(have.is_equivalent_to(want, ndim)))
  return hit[2]


def _device_blocks(x, sharding):
  """{device: this process's block of `x` laid out by `sharding`} (views where possible). A
  fully replicated or fully addressable value is sliced; a cross-process Array laid out
  otherwise moves between processes first (`_moved`)."""
  from jaxlite._src.base import array as array_mod
  if type(x) is core.array_type and array_mod.is_non_addressable(x):
    if _same_layout(x._device, sharding, len(x._aval.shape)):
      return {d: b for d, _, _, b in x._local_shards}
    return _moved(x, sharding)
  value = array_mod.host_value(x) if type(x) is core.array_type else np.asarray(x)
  replicated, mine = _layout_of(sharding)
  if replicated:  # every device's block is the whole value
    return {d: value for d in mine}
  idx = sharding.devices_indices_map(value.shape)
  return {d: value[idx[d]] for d in mine}


_layouts: dict = {}  # id(sharding) -> (sharding, fully replicated?, this process's devices)


def _layout_of(sharding):
  """(whether `sharding` is fully replicated, its devices in this process in order); cached
  by identity (the plans above keep their shardings)."""
  hit = _layouts.get(id(sharding))
  if hit is None or hit[0] is not sharding:
    me = devices.process_index()
    if len(_layouts) > 1024:
      _layouts.clear()
    hit = _layouts[id(sharding)] = (
        sharding, bool(sharding.is_fully_replicated),
        [d for d in sharding._device_assignment if d.process_index == me])
  return hit[1], hit[2]


_MOVE_TAG = 1 << 20  # above the tags of group_exchange's point-to-point exchanges


def _region(index, shape):
  """((start, stop) per dimension) of a device's index into an array of `shape`."""
  return tuple(s.indices(n)[:2] for s, n in zip(index, shape))


def _moved(x, sharding):
  """{device: block} for this process's devices of cross-process Array `x` laid out by
  `sharding` when it is laid out otherwise (JAX reshards such operands implicitly): each
  region of `x` (its first replica) sends the part each destination block needs, point to
  point, only between the processes concerned. Every process computes the same plan from
  the two shardings, and reaches this at the same point of the same program."""
  from jaxlite._src.distributed import mpi_collectives as mc
  shape = x.shape
  have_map = x._device.devices_indices_map(shape)
  want_map = sharding.devices_indices_map(shape)
  sources, seen = [], set()
  for d in x._device._device_assignment:
    r = _region(have_map[d], shape)
    if r not in seen:
      seen.add(r)
      sources.append((d, r))
  dests = [(e, _region(want_map[e], shape)) for e in sharding._device_assignment]
  me = devices.process_index()
  held = {d: b for d, _, _, b in x._local_shards}
  dtype = next(iter(held.values())).dtype if held else x.dtype
  out = {e: np.empty(tuple(b - a for a, b in r), dtype) for e, r in dests
         if e.process_index == me}
  comm = mc.global_state.spmd_comm
  if len(sources) * len(dests) + _MOVE_TAG > comm.Get_attr(mc.global_state.MPI.TAG_UB):
    raise ValueError(f"jit over a mesh spanning processes: moving an argument from {x.sharding} "
                     f"to {sharding} needs more messages than MPI has tags")
  reqs, received = [], []
  for i, (d, rs) in enumerate(sources):
    for j, (e, rd) in enumerate(dests):
      inter = [(max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in zip(rs, rd)]
      p, q = d.process_index, e.process_index
      if (p != me and q != me) or any(a >= b for a, b in inter):
        continue
      src = tuple(slice(a - s0, b - s0) for (a, b), (s0, _) in zip(inter, rs))
      dst = tuple(slice(a - t0, b - t0) for (a, b), (t0, _) in zip(inter, rd))
      tag = _MOVE_TAG + i * len(dests) + j
      if p == me and q == me:
        out[e][dst] = held[d][src]
      elif p == me:
        buf = np.ascontiguousarray(held[d][src])
        received.append((None, None, buf))  # kept alive until the send completes
        reqs.append(comm.Isend(mc._bytes(buf), dest=q, tag=tag))
      else:
        buf = np.empty(tuple(b - a for a, b in inter), dtype)
        received.append((e, dst, buf))
        reqs.append(comm.Irecv(mc._bytes(buf), source=p, tag=tag))
  if reqs:
    mc.global_state.MPI.Request.Waitall(reqs)
  for e, dst, buf in received:
    if e is not None:
      out[e][dst] = buf
  return out


def local_blocks(x, sharding):
  """{device: block} of Array `x` laid out by `sharding` for this process's devices, moving
  shards between processes when `x` is laid out otherwise (eager shard_map's operands)."""
  return _device_blocks(x, sharding)


def run_program(program, values, out_avals):
  """Runs partition.Program `program` on this process's devices: `values` are the flat jit
  arguments (lifted constants first), results are Arrays laid out by `program.out_specs`.
  What a call needs besides the values (the executable, the shardings, how results are
  built) is worked out once per program (`_program_plan`); a process driving one device of
  the mesh runs its program on the calling thread."""
  plan = program.__dict__.get("_mpi_plan")
  if plan is None:
    plan = program._mpi_plan = _program_plan(program, out_avals)
  exe, ins, outs, index, device = plan
  mesh = program.mesh
  if index is not None and runtime.current_context() is None:
    blocks = [_device_blocks(x, s)[device] for x, s in zip(values, ins)]
    res = runtime.run_one(mesh, index, lambda *xs: list(exe(*xs)), blocks)
    return [o.make({device: np.asarray(r)}) if o.replicated else
            o.make_one(device, np.asarray(r)) for o, r in zip(outs, res)]
  in_blocks = [_device_blocks(x, s) for x, s in zip(values, ins)]
  flat_devices = list(mesh.devices.flat)
  per_device = [[b.get(d) for b in in_blocks] for d in flat_devices]
  res = runtime.run_spmd(mesh, lambda *blocks: list(exe(*blocks)), per_device)
  return [o.make({d: np.asarray(r[i]) for d, r in zip(flat_devices, res) if r is not None})
          for i, o in enumerate(outs)]


def _program_plan(program, out_avals):
  """(executable, input shardings, outputs' `_Out`s, this process's one device's flat index
  and the device, or Nones) of a partitioned program."""
  from jaxlite._src.compiler import backend
  from jaxlite._src.interpreters import partial_eval as pe
  from jaxlite._src.sharding import partition
  mesh = program.mesh
  exe = program._spmd_executable
  if exe is None:  # the same per-device program partition.execute_spmd compiles
    avals = [core.ShapedArray(program.local_shape(v.aval.shape, s), v.aval.dtype,
                              v.aval.weak_type)
             for v, s in zip(program.closed.jaxpr.invars, program.in_specs)]
    with runtime.bind_axes(dict(program.mesh_shape)):
      closed = pe.trace_to_jaxpr(lambda *blocks: list(program(*blocks)), avals)
    # Runs of the partitioner's psums (a data-parallel step's gradients) meet once: one
    # packed Allreduce per dtype across processes (lax/parallel.py's reduce_many).
    from jaxlite._src.spmd import programs
    exe = program._spmd_executable = backend.compile_jaxpr(programs.fuse_psums(closed))
  ins = [partition._out_sharding(mesh, s) for s in program.in_specs]
  outs = [_Out(aval, partition._out_sharding(mesh, s), assemble=True)
          for s, aval in zip(program.out_specs, out_avals)]
  local = runtime._local_indices(mesh)
  index = local[0] if len(local) == 1 else None
  return exe, ins, outs, index, (mesh.devices.flat[index] if index is not None else None)


class _Out:
  """How one output of a cross-process shard_map (or partitioned program: `assemble`, which
  builds every output as `global_arrays._assemble` does) becomes an Array: its sharding, and
  whether it is replicated (then this process's first block is the whole value, no copy)."""
  __slots__ = ("shape", "sharding", "replicated", "weak_type", "_one", "assemble")

  def __init__(self, aval, sharding, assemble=False):
    self.shape, self.sharding, self.weak_type = aval.shape, sharding, aval.weak_type
    self.replicated = sharding.is_fully_replicated
    self.assemble = assemble
    self._one = None  # (device, dtype, its shard's (device, index, replica id), aval)

  def make(self, blocks):
    from jaxlite._src.base import array as array_mod
    from jaxlite._src.distributed import global_arrays
    if self.replicated:
      first = next(iter(blocks.values()))
      if self.assemble:  # what _assemble does for a replicated sharding (no index map)
        return array_mod.from_host(first, self.weak_type, self.sharding)
      a = array_mod._from_numpy(first, self.weak_type)
      a._device = self.sharding
      return a
    return global_arrays._assemble(self.shape, self.sharding, blocks, self.weak_type)

  def make_one(self, device, block):
    """`make({device: block})` for this process's only device of the mesh (what `make`
    would work out is kept, per block dtype)."""
    if self.replicated:
      a = _from_numpy(block, self.weak_type)
      a._device = self.sharding
      return a
    one = self._one
    if one is None or one[0] is not device or one[1] != block.dtype:
      from jaxlite._src.base import array as array_mod
      ref = self.make({device: block})
      if type(ref) is not core.array_type or not array_mod.is_non_addressable(ref) or \
          len(ref._local_shards) != 1:
        return ref
      d, idx, rid, _ = ref._local_shards[0]
      self._one = (device, block.dtype, (d, idx, rid), ref._aval)
      return ref
    d, idx, rid = one[2]
    return _from_local_shards(((d, idx, rid, block),), one[3], self.sharding)


def _from_numpy(value, weak_type):
  global _from_numpy
  from jaxlite._src.base.array import _from_numpy
  return _from_numpy(value, weak_type)


def _from_local_shards(shards, aval, sharding):
  global _from_local_shards
  from jaxlite._src.base.array import from_local_shards as _from_local_shards
  return _from_local_shards(shards, aval, sharding)


class _Step:
  """How one shard_map equation over a mesh spanning processes runs: its inputs' shardings
  (`ins`) and outputs (`outs`). Where this process drives one device of the mesh (`index`),
  the steady state runs that device's program on the calling thread (`runtime.run_one`), fed
  the argument's local shard directly when its placement is the one seen before, and a body
  made only of reductions over every mesh axis runs no program at all: each is one MPI
  Allreduce with the communicator and op resolved here (`direct`)."""
  __slots__ = ("ins", "outs", "params", "mesh", "index", "device", "direct", "seen", "fused")

  def __init__(self, eqn):
    from jaxlite._src.sharding.named_sharding import NamedSharding
    p = self.params = eqn.params
    m = self.mesh = p["mesh"]
    self.ins = [NamedSharding(m, s) for s in p["in_specs"]]
    self.outs = [_Out(v.aval, NamedSharding(m, s)) for v, s in zip(eqn.outvars, p["out_specs"])]
    local = runtime._local_indices(m)
    self.index = local[0] if len(local) == 1 else None
    self.device = m.devices.flat[self.index] if self.index is not None else None
    self.direct = _direct_body(p["jaxpr"], m, self.index) if self.index is not None else None
    self.seen = [None] * len(self.ins)  # per input: a placement known to be laid out as needed
    self.fused = None  # the body with its runs of psums fused, made on first use

  def run(self, ins):
    """The step's outputs (Arrays) from its operands `ins`."""
    if self.index is None:
      return self._run_general(ins)
    if runtime.current_context() is not None:
      return self._run_general(ins)
    blocks = []
    seen = self.seen
    for i, x in enumerate(ins):
      placement = seen[i]
      if placement is not None and type(x) is core.array_type and x._device is placement:
        shards = getattr(x, "_local_shards", None)  # None once deleted
        if shards is not None:
          blocks.append(shards[0][3])
          continue
      blocks.append(self._block(i, x))
    if self.direct is not None:
      res = self.direct(blocks)
    else:
      exe = self._executable()
      res = runtime.run_one(self.mesh, self.index, lambda *xs: list(exe(*xs)), blocks)
    return [o.make_one(self.device, r) for o, r in zip(self.outs, res)]

  def _executable(self):
    """The body compiled with its runs of psums fused (spmd/programs.py: one packed MPI
    Allreduce per dtype for a run of gradient psums, as shard_map's device programs do)."""
    from jaxlite._src.compiler import backend
    from jaxlite._src.spmd import programs
    if self.fused is None:  # kept: compile_jaxpr caches on the jaxpr object
      self.fused = programs.fuse_psums(self.params["jaxpr"])
    return backend.compile_jaxpr(self.fused)

  def _block(self, i, x):
    from jaxlite._src.base import array as array_mod
    block = _device_blocks(x, self.ins[i])[self.device]
    if type(x) is core.array_type and array_mod.is_non_addressable(x) and \
        len(x._local_shards) == 1 and x._local_shards[0][3] is block:
      self.seen[i] = x._device  # laid out as needed: next time its shard is read directly
    return block

  def _run_general(self, ins):
    from jaxlite._src.parallel import shard_map as sm
    m = self.mesh
    blocks = [sm._LocalBlocks(m, _device_blocks(x, s)) for x, s in zip(ins, self.ins)]
    return [o.make(b.blocks) for o, b in zip(self.outs, sm._impl(*blocks, **self.params))]


def _reduction_ops():
  from jaxlite._src.lax import parallel, parallel_comm
  return {parallel.psum_p: "sum", parallel_comm.psum_invariant_p: "sum",
          parallel.pmax_p: "max", parallel.pmin_p: "min"}


def _direct_body(closed, mesh, index):
  """For a shard_map body (ClosedJaxpr) whose every equation is a psum/pmax/pmin over every
  axis of `mesh`, with each process holding one device of it: a function of device `index`'s
  blocks giving its outputs, one MPI Allreduce per equation (what the body's device program
  would do, without running one). None for any other body."""
  from jaxlite._src.distributed import group_exchange
  from jaxlite._src.distributed import mpi_collectives as mc
  jaxpr = closed.jaxpr
  if not jaxpr.eqns:
    return None
  ops = _reduction_ops()
  names = tuple(mesh.axis_names)
  coords = runtime.mesh_coords(mesh)[index]
  steps = []
  for eqn in jaxpr.eqns:
    op = ops.get(eqn.primitive)
    axes = eqn.params.get("axes", ())
    if op is None or eqn.params.get("axis_index_groups") is not None or \
        len(eqn.invars) != 1 or any(isinstance(a, (int, np.integer)) for a in axes) or \
        set(axes) != set(names) or len(axes) != len(names):
      return None
    group_axes = tuple(axes)
    layout = group_exchange.rank_processes(mesh, group_axes, coords)
    procs, by_proc = group_exchange._layout(layout)
    if len(procs) < 2 or any(len(r) != 1 for r in by_proc.values()):
      return None
    steps.append((eqn.invars[0], eqn.outvars[0], mc.allreducer(op, procs)))
  consts = list(zip(jaxpr.constvars, closed.consts))
  invars, outvars = list(jaxpr.invars), list(jaxpr.outvars)
  if len(steps) == 1 and not consts and invars == [steps[0][0]] and outvars == [steps[0][1]]:
    reduce = steps[0][2]
    one = lambda blocks: [reduce(blocks[0])]  # noqa: E731
    one.reduce = reduce  # the one Allreduce: `_Fast` calls it on the block itself
    return one

  packed = _packed_reductions(steps, invars, consts, outvars, mc, procs)
  if packed is not None:
    return packed

  def run(blocks):
    env = dict(consts)
    env.update(zip(invars, blocks))
    for a, out, reduce in steps:
      env[out] = reduce(a.val if isinstance(a, core.Literal) else env[a])
    return [v.val if isinstance(v, core.Literal) else env[v] for v in outvars]
  return run


def _packed_reductions(steps, invars, consts, outvars, mc, procs):
  """For a body of several reductions with one op, each of an argument or constant (a psum
  of a pytree of gradients): a function of the blocks doing one MPI Allreduce per dtype on
  the operands packed into one contiguous buffer, the outputs read-only views into the
  result. None when some reduction reads another's result, the ops differ, or nothing is
  gained (one operand)."""
  produced = {out for _, out, _ in steps}
  known = set(invars) | {v for v, _ in consts}
  if len(steps) < 2 or any(
      not isinstance(a, core.Var) or a in produced or a not in known for a, _, _ in steps):
    return None
  op = steps[0][2].op
  if any(r.op != op for _, _, r in steps):
    return None
  reduce = mc.allreducer(op, procs)
  consts = dict(consts)
  ins = [a for a, _, _ in steps]
  outs = [o for _, o, _ in steps]
  where = {v: i for i, v in enumerate(invars)}

  def run(blocks):
    xs = [np.asarray(blocks[where[a]] if a in where else consts[a]) for a in ins]
    env = dict(zip(outs, runtime.reduce_packed(xs, reduce)))
    env.update(zip(invars, blocks))
    return [v.val if isinstance(v, core.Literal) else env[v] for v in outvars]
  return run


class _Plan:
  """A jaxpr's equations, each None (run eagerly) or the `_Step` of a shard_map over a mesh
  spanning processes; `single` is the step when the jaxpr is that one equation applied to its
  arguments (no environment to keep)."""
  __slots__ = ("steps", "single")

  def __init__(self, closed):
    from jaxlite._src.parallel import shard_map as sm
    jaxpr = closed.jaxpr
    self.steps = [_Step(e) if e.primitive is sm.shard_map_p and spans_processes(e.params["mesh"])
                  else None for e in jaxpr.eqns]
    self.single = None
    if len(self.steps) == 1 and self.steps[0] is not None and not jaxpr.constvars:
      eqn = jaxpr.eqns[0]
      if list(eqn.invars) == list(jaxpr.invars) and list(eqn.outvars) == list(jaxpr.outvars):
        self.single = self.steps[0]


_plans: dict = {}  # id(ClosedJaxpr) -> (the jaxpr, its _Plan)


def _plan(closed):
  """The `_Plan` of `closed`, cached per jaxpr."""
  hit = _plans.get(id(closed))
  if hit is not None and hit[0] is closed:
    return hit[1]
  plan = _Plan(closed)
  if len(_plans) > 256:
    _plans.clear()
  _plans[id(closed)] = (closed, plan)
  return plan


def run_with_shard_maps(closed, values, mesh):
  """A jitted program holding shard_map equations, over a mesh spanning processes: evaluated
  equation by equation, each shard_map run on this process's devices from its operands' local
  shards (`_Step`), the others eagerly (on Arrays: see the eager rules for cross-process
  Arrays)."""
  plan = _plan(closed)
  if plan.single is not None:
    return plan.single.run(values)
  env = {}

  def read(a):
    return a.val if isinstance(a, core.Literal) else env[a]
  for v, c in zip(closed.jaxpr.constvars, closed.consts):
    env[v] = c
  for v, x in zip(closed.jaxpr.invars, values):
    env[v] = x
  for eqn, step in zip(closed.jaxpr.eqns, plan.steps):
    ins = [read(a) for a in eqn.invars]
    if step is not None:
      outs = step.run(ins)
    else:
      out = eqn.primitive.bind(*ins, **eqn.params)
      outs = list(out) if eqn.primitive.multiple_results else [out]
    for v, o in zip(eqn.outvars, outs):
      env[v] = o
  return [read(v) for v in closed.jaxpr.outvars]


_eager_fns: dict = {}  # (primitive, params) -> the jitted primitive, when params hash


def eager(primitive, args, params):
  """An eager primitive on Arrays with shards in other processes: run as the jit of the one
  primitive (as JAX runs eager ops), partitioned over the arguments' global mesh, so an
  elementwise op runs on each local shard and gives the same sharding, a reduction over a
  split dim adds the psum across processes."""
  from jaxlite._src.transforms.jit import jit
  try:
    key = (primitive, tuple(sorted(params.items())))
    fn = _eager_fns.get(key)
  except TypeError:  # unhashable params (jaxprs in lists...): traced each call
    key, fn = None, None
  if fn is None:
    def apply(*xs):
      return primitive.bind(*xs, **params)
    apply.__name__ = primitive.name
    fn = jit(apply)
    if key is not None:
      if len(_eager_fns) > 512:
        _eager_fns.clear()
      _eager_fns[key] = fn
  return fn(*args)


# --- the entry from jit --------------------------------------------------------------------------
# partition.call_sharded hands a call over here once it knows the mesh spans processes; a call
# whose arguments' leaves are all Arrays (no in/out shardings, no keywords, no static
# arguments) is remembered by the arguments' tree and its leaves' placements (by identity:
# hashing a mesh costs more than the whole lookup), shapes, dtypes and the trace context, so
# that repeating it skips the tracing-cache lookup, the placement checks and the partitioning
# (`repeat_call`).
_calls: dict = {}  # (id(fn), signature) -> (fn, placements, entry, mesh, program)


def _call_key(fn, args):
  """(key, leaves' placements, leaves) of a call whose leaves are all Arrays, else Nones."""
  sig = [id(fn), config.trace_context()]
  leaves = args
  for a in args:
    if type(a) is not core.array_type:  # a pytree (or not an Array): by its leaves
      leaves, tree = _flatten(args)
      sig.append(tree)
      break
  for a in leaves:
    if type(a) is not core.array_type:
      return None, None, None
    sig.append((id(a._device), a.shape, a.dtype, a.weak_type))
  return tuple(sig), [a._device for a in leaves], leaves


def _flatten(args):
  from jaxlite._src.base import tree_util
  try:
    return tree_util.tree_flatten(args)
  except Exception:  # noqa: BLE001 -- not a pytree jit takes: the general path says why
    return [None], None


def call(fn, args, kwargs, entry, flat, mesh, program):
  """Runs jit call site `fn`'s traced `entry` over `mesh` (spanning processes): the partitioned
  `program`, or, with None, the jaxpr's shard_maps; remembers the plan for `repeat_call`."""
  if not kwargs and fn.simple and fn.in_shardings is None and fn.out_shardings is None \
      and not entry.lifted:
    key, placements, leaves = _call_key(fn, args)
    if key is not None and len(leaves) == len(flat) and \
        all(a is b for a, b in zip(leaves, flat)):  # the leaves are the flat arguments
      if len(_calls) > 256:
        _calls.clear()
      _calls[key] = (fn, placements, entry, mesh, program)
      if program is None and len(leaves) == len(args) and not _on_xla():  # flat Arrays
        _install_fast(fn, entry, placements, leaves, key[1])
  return _run(entry, list(entry.lifted) + list(flat), mesh, program)


def _run(entry, values, mesh, program):
  outs = _run_on_xla(entry, values, mesh, program)
  if outs is not None:
    return entry.out_tree.unflatten(outs)
  if program is None:
    return entry.out_tree.unflatten(run_with_shard_maps(entry.closed, values, mesh))
  return entry.out_tree.unflatten(run_program(program, values, entry.out_avals))


def repeat_call(fn, args, kwargs):
  """The result of a call `call` has seen the like of (same function, argument tree and
  leaves' placements, shapes and dtypes, trace context), or None."""
  if kwargs or not _calls:
    return None
  key, placements, leaves = _call_key(fn, args)
  hit = _calls.get(key) if key is not None else None
  if hit is None or hit[0] is not fn:
    return None
  for p, q in zip(hit[1], placements):
    if p is not q:
      return None
  entry, program = hit[2], hit[4]
  if program is None and not _on_xla():
    step = _plan(entry.closed).single
    if step is not None:  # the program is one shard_map of the arguments
      return entry.out_tree.unflatten(step.run(leaves))
  return _run(entry, list(leaves), hit[3], program)


# --- on the xla backend: one XLA program over the processes' devices ---------------------------
# With the xla backend each process's CPU client spans every process's devices
# (compiler/xla/multiprocess.py), so the call's global jaxpr (the partitioner's specs on its
# arguments and results, or its shard_maps' own) is compiled once by XLA's SPMD partitioner for
# the whole mesh, and every process runs it on its devices' blocks: the collectives crossing
# processes run inside XLA (gloo over TCP), none through jaxlite's MPI exchange.
_xla_programs: dict = {}  # (id(jaxpr), input specs) -> (jaxpr, executable, in shardings, _Outs)


def _on_xla():
  from jaxlite._src.compiler.xla import multiprocess
  return multiprocess.active()


def _value_spec(x, mesh):
  """The spec of argument `x` when it is an Array laid out over `mesh`, else None."""
  from jaxlite._src.sharding import propagation as prop
  s = getattr(x, "_device", None) if type(x) is core.array_type else None
  if getattr(s, "mesh", None) is not None and s.mesh == mesh:
    return prop.spec_of_sharding(s, len(x.shape))
  return None


def _shard_map_layouts(jaxpr, mesh):
  """(the mesh of `jaxpr`'s first shard_map, else `mesh`; {input var: the spec over it of the
  first shard_map taking that input directly})."""
  from jaxlite._src.parallel import shard_map as sm
  from jaxlite._src.sharding import propagation as prop
  from jaxlite._src.sharding.named_sharding import NamedSharding
  maps = [e for e in jaxpr.eqns if e.primitive is sm.shard_map_p]
  if maps:
    mesh = maps[0].params["mesh"]
  wanted = {}
  for e in maps:
    if e.params["mesh"] != mesh:
      continue
    for v, spec in zip(e.invars, e.params["in_specs"]):
      if isinstance(v, core.Var) and v not in wanted:
        wanted[v] = prop.spec_of_sharding(NamedSharding(mesh, spec), len(v.aval.shape))
  return mesh, wanted


def _run_on_xla(entry, values, mesh, program):
  """The flat results of the call run as one XLA program over `mesh`, or None when the CPU
  client does not span processes (the NumPy backend: jaxlite's runtime and MPI run it)."""
  if not _on_xla():
    return None
  from jaxlite._src.compiler import backend
  from jaxlite._src.compiler.xla import spmd
  from jaxlite._src.compiler.xla.backend import _module_name
  from jaxlite._src.sharding import partition
  from jaxlite._src.sharding import propagation as prop
  closed = entry.closed if program is None else program.closed
  if program is None:  # shard_maps inside: over their mesh, each input as it is laid out, or
    # as the shard_map taking it wants it (moved there by `_device_blocks`)
    mesh, wanted = _shard_map_layouts(closed.jaxpr, mesh)
    in_specs = [_value_spec(x, mesh) or wanted.get(v) or prop.replicated(len(np.shape(x)))
                for v, x in zip(closed.jaxpr.invars, values)]
  else:
    in_specs = list(program.in_specs)
  key = (id(closed), tuple(in_specs))
  hit = _xla_programs.get(key)
  if hit is None or hit[0] is not closed:
    exe = spmd.compile_spmd(backend.installed(), closed, _module_name(closed, "jit_fn"),
                            mesh=mesh, in_specs=in_specs,
                            out_specs=None if program is None else list(program.out_specs))
    _check_same_program(closed, in_specs)
    ins = [partition._out_sharding(mesh, s) for s in in_specs]
    outs = [_Out(aval, partition._out_sharding(mesh, s), assemble=True)
            for s, aval in zip(exe.out_specs, entry.out_avals)]
    if len(_xla_programs) > 256:
      _xla_programs.clear()
    hit = _xla_programs[key] = (closed, exe, ins, outs)
  _, exe, ins, outs = hit
  res = exe.run_blocks([_device_blocks(x, s) for x, s in zip(values, ins)])
  return [o.make(r) for o, r in zip(outs, res)]


def _check_same_program(closed, in_specs):
  """Raises ValueError in every process when the processes are about to run different
  programs (arguments of other shapes or dtypes: XLA's collectives would wait forever). Once
  per program compiled, when every process compiles it: one MPI allgather."""
  from jaxlite._src.distributed.state import global_state
  sig = repr([(tuple(v.aval.shape), str(v.aval.dtype), s)
              for v, s in zip(closed.jaxpr.invars, in_specs)])
  every = global_state.comm.allgather(sig)
  if len(set(every)) > 1:
    raise ValueError(
        "jaxlite: the processes called a program over a mesh spanning them with different "
        f"shapes or dtypes of its arguments (by process: {every}); each process must pass "
        "the same global shapes")


# --- the steady state of one jit function ---------------------------------------------------------
# A jit function whose program is one shard_map of its (flat, Array) arguments over a mesh where
# this process drives one device keeps a `_Fast` in its `_sharded_cache` (so jax.clear_caches
# drops it): PjitFunction.__call__ tries it before anything else. It checks what `_call_key`
# would key on (placements by identity, avals, the trace context) without building a key, then
# runs the step's body on the arguments' local shards. Each Python step saved matters: the
# interpreter's working set is cold after a large Allreduce (BENCHMARKS.md, issue 13).
FAST = "mpi_fast"


class _Fast:
  __slots__ = ("n", "placements", "avals", "ctx", "step", "reduce", "out", "unflatten")

  def __init__(self, entry, placements, leaves, ctx, step):
    self.n = len(leaves)
    self.placements = tuple(placements)
    self.avals = tuple((a.shape, a.dtype, a.weak_type) for a in leaves)
    self.ctx = ctx
    self.step = step
    self.reduce = getattr(step.direct, "reduce", None)
    self.out = step.outs[0] if len(step.outs) == 1 else None
    leaf = entry.out_tree.num_leaves == 1 and entry.out_tree.num_nodes == 1
    self.unflatten = None if leaf and self.out is not None else entry.out_tree.unflatten

  def __call__(self, args):
    """The call's result, or None when the arguments or context are not the remembered ones
    (or under a device program, or before each input's layout has been seen to match)."""
    if len(args) != self.n or config.trace_context() != self.ctx or \
        runtime.current_context() is not None:
      return None
    step = self.step
    seen = step.seen
    blocks = []
    for i, (a, p, av) in enumerate(zip(args, self.placements, self.avals)):
      if type(a) is not core.array_type or a._device is not p or seen[i] is not p:
        return None
      shards = a._local_shards  # None once deleted: the general path raises JAX's error
      aval = a._aval
      if shards is None or aval is None or \
          (aval.shape, aval.dtype, aval.weak_type) != av:
        return None
      blocks.append(shards[0][3])
    if self.reduce is not None:
      out = self.out.make_one(step.device, self.reduce(blocks[0]))
      return out if self.unflatten is None else self.unflatten([out])
    res = step.direct(blocks) if step.direct is not None else None
    if res is None:
      return None
    outs = [o.make_one(step.device, r) for o, r in zip(step.outs, res)]
    return outs[0] if self.unflatten is None else self.unflatten(outs)


def _install_fast(fn, entry, placements, leaves, ctx):
  step = _plan(entry.closed).single
  if step is None or step.index is None or step.direct is None:
    return
  fn.cache[FAST] = _Fast(entry, placements, leaves, ctx, step)


# This module is loaded by `jax.distributed` (only a joined process has a mesh over several):
# the layers below call the multi-process paths through the hooks filled here.
def _register_multiprocess_paths():
  from jaxlite._src.parallel import shard_map as sm
  from jaxlite._src.sharding import partition
  core.register(eager_across_processes=eager)
  partition.register_multiprocess(repeat_call=repeat_call, call=call)
  sm.register_multiprocess(local_blocks=local_blocks)


_register_multiprocess_paths()
