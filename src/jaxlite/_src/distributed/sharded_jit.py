"""jit calls whose mesh spans processes: the partitioner's per-device program (or the jitted
program's shard_map equations) run on this process's devices only, fed their local shards.

sharding/partition.py's `call_sharded` hands over here when the mesh has other processes'
devices. A process holds only its devices' shards of a cross-process Array, so nothing global
is ever built: each local device gets its own block (a view of the shard, no copy), the
per-device program runs through the SPMD runtime (`run_spmd` starts workers for the local
devices; collectives over axes spanning processes go through `group_exchange` and MPI), and the
outputs are Arrays assembled from the local devices' blocks (`global_arrays._assemble`).
Eager primitives on such Arrays come here too (`eager`, from core.EvalTrace): each runs as the
jit of the one primitive, as JAX runs eager ops.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src import core
from jaxlite._src import devices


def spans_processes(mesh) -> bool:
  """Whether `mesh` has devices of other processes."""
  if devices.process_count() == 1:
    return False
  me = devices.process_index()
  return any(d.process_index != me for d in mesh.devices.flat)


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
  fully replicated or fully addressable value is sliced; a cross-process Array must already
  be laid out by `sharding` (moving shards between processes is a collective the program
  states explicitly)."""
  from jaxlite._src import array as array_mod
  if type(x) is core.array_type and array_mod.is_non_addressable(x):
    if _same_layout(x._device, sharding, len(x._aval.shape)):
      return {d: b for d, _, _, b in x._local_shards}
    if not x.is_fully_replicated:
      raise ValueError(
          f"jit over a mesh spanning processes: an argument laid out as {x.sharding} is "
          f"needed as {sharding}; moving shards between processes is not done implicitly "
          "here: reshard it with a shard_map collective, or pass it laid out as the program "
          "expects (in_shardings)")
  value = array_mod.host_value(x) if type(x) is core.array_type else np.asarray(x)
  me = devices.process_index()
  idx = sharding.devices_indices_map(value.shape)
  return {d: value[idx[d]] for d in sharding._device_assignment if d.process_index == me}


def run_program(program, values, out_avals):
  """Runs partition.Program `program` on this process's devices: `values` are the flat jit
  arguments (lifted constants first), results are Arrays laid out by `program.out_specs`."""
  from jaxlite._src.compiler import backend
  from jaxlite._src.distributed import global_arrays
  from jaxlite._src.interpreters import partial_eval as pe
  from jaxlite._src.sharding import partition
  from jaxlite._src.spmd import runtime
  mesh = program.mesh
  exe = program._spmd_executable
  if exe is None:  # the same per-device program partition.execute_spmd compiles
    avals = [core.ShapedArray(program.local_shape(v.aval.shape, s), v.aval.dtype,
                              v.aval.weak_type)
             for v, s in zip(program.closed.jaxpr.invars, program.in_specs)]
    with runtime.bind_axes(dict(program.mesh_shape)):
      closed = pe.trace_to_jaxpr(lambda *blocks: list(program(*blocks)), avals)
    exe = program._spmd_executable = backend.compile_jaxpr(closed)
  in_blocks = [_device_blocks(x, partition._out_sharding(mesh, s))
               for x, s in zip(values, program.in_specs)]
  flat_devices = list(mesh.devices.flat)
  per_device = [[b.get(d) for b in in_blocks] for d in flat_devices]
  outs = runtime.run_spmd(mesh, lambda *blocks: list(exe(*blocks)), per_device)
  results = []
  for i, (spec, aval) in enumerate(zip(program.out_specs, out_avals)):
    sharding = partition._out_sharding(mesh, spec)
    local = {d: np.asarray(o[i]) for d, o in zip(flat_devices, outs) if o is not None}
    results.append(global_arrays._assemble(aval.shape, sharding, local, aval.weak_type))
  return results


class _Out:
  """How one output of a cross-process shard_map becomes an Array: its sharding, and whether
  it is replicated (then this process's first block is the whole value, no copy)."""
  __slots__ = ("shape", "sharding", "replicated", "weak_type")

  def __init__(self, aval, sharding):
    self.shape, self.sharding, self.weak_type = aval.shape, sharding, aval.weak_type
    self.replicated = sharding.is_fully_replicated

  def make(self, blocks):
    from jaxlite._src import array as array_mod
    from jaxlite._src.distributed import global_arrays
    if self.replicated:
      a = array_mod._from_numpy(next(iter(blocks.values())), self.weak_type)
      a._device = self.sharding
      return a
    return global_arrays._assemble(self.shape, self.sharding, blocks, self.weak_type)


_plans: dict = {}  # id(ClosedJaxpr) -> (the jaxpr, its per-eqn shardings)


def _plan(closed):
  """Per equation of `closed`: None (run eagerly) or, for a shard_map over a mesh spanning
  processes, (its inputs' NamedShardings, its outputs' `_Out`s). Cached per jaxpr."""
  hit = _plans.get(id(closed))
  if hit is not None and hit[0] is closed:
    return hit[1]
  from jaxlite._src import shard_map as sm
  from jaxlite._src.sharding.named_sharding import NamedSharding
  plan = []
  for eqn in closed.jaxpr.eqns:
    p = eqn.params
    if eqn.primitive is sm.shard_map_p and spans_processes(p["mesh"]):
      m = p["mesh"]
      plan.append(([NamedSharding(m, s) for s in p["in_specs"]],
                   [_Out(v.aval, NamedSharding(m, s))
                    for v, s in zip(eqn.outvars, p["out_specs"])]))
    else:
      plan.append(None)
  if len(_plans) > 256:
    _plans.clear()
  _plans[id(closed)] = (closed, plan)
  return plan


def run_with_shard_maps(closed, values, mesh):
  """A jitted program holding shard_map equations, over a mesh spanning processes: evaluated
  equation by equation, each shard_map run on this process's devices from its operands' local
  shards, the others eagerly (on Arrays: see the eager rules for cross-process Arrays)."""
  from jaxlite._src import shard_map as sm
  env = {}

  def read(a):
    return a.val if isinstance(a, core.Literal) else env[a]
  for v, c in zip(closed.jaxpr.constvars, closed.consts):
    env[v] = c
  for v, x in zip(closed.jaxpr.invars, values):
    env[v] = x
  for eqn, step in zip(closed.jaxpr.eqns, _plan(closed)):
    ins = [read(a) for a in eqn.invars]
    if step is not None:
      p = eqn.params
      m = p["mesh"]
      blocks = [sm._LocalBlocks(m, _device_blocks(x, s)) for x, s in zip(ins, step[0])]
      outs = [o.make(b.blocks) for o, b in zip(step[1], sm._impl(*blocks, **p))]
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
  from jaxlite._src.jit import jit
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
# whose arguments are all Arrays (no in/out shardings, no keywords) is remembered by its
# arguments' placements (by identity: hashing a mesh costs more than the whole lookup), shapes,
# dtypes and the trace context, so that repeating it skips the tracing-cache lookup, the
# placement checks and the partitioning (`repeat_call`).
_calls: dict = {}  # (id(fn), signature) -> (fn, placements, entry, mesh, program)


def _call_key(fn, args):
  from jaxlite._src.config import config
  sig = [id(fn), config.trace_context()]
  for a in args:
    if type(a) is not core.array_type:
      return None, None
    sig.append((id(a._device), a.shape, a.dtype, a.weak_type))
  return tuple(sig), [a._device for a in args]


def call(fn, args, kwargs, entry, flat, mesh, program):
  """Runs jit function `fn`'s traced `entry` over `mesh` (spanning processes): the partitioned
  `program`, or, with None, the jaxpr's shard_maps; remembers the plan for `repeat_call`."""
  if not kwargs and fn._simple and fn._in_shardings is None and fn._out_shardings is None \
      and not entry.lifted:
    key, placements = _call_key(fn, args)
    if key is not None:
      if len(_calls) > 256:
        _calls.clear()
      _calls[key] = (fn, placements, entry, mesh, program)
  return _run(entry, list(entry.lifted) + list(flat), mesh, program)


def _run(entry, values, mesh, program):
  if program is None:
    return entry.out_tree.unflatten(run_with_shard_maps(entry.closed, values, mesh))
  return entry.out_tree.unflatten(run_program(program, values, entry.out_avals))


def repeat_call(fn, args, kwargs):
  """The result of a call `call` has seen the like of (same function, argument placements,
  shapes and dtypes, trace context), or None."""
  if kwargs or not _calls:
    return None
  key, placements = _call_key(fn, args)
  hit = _calls.get(key) if key is not None else None
  if hit is None or hit[0] is not fn or any(p is not q for p, q in zip(hit[1], placements)):
    return None
  return _run(hit[2], list(args), hit[3], hit[4])
