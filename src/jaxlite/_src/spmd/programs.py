"""What each device of a shard_map runs: the body with its runs of psums fused into one
rendezvous, and, for devices whose blocks of some outputs are never read, the body without the
work only those outputs need.

shard_map assembles a replicated output from device 0's block (and an output replicated over
some axes from the first device of each distinct block), so the other replicas need not
compute it: in a data-parallel step every device but one skips the parameter update after the
gradient psum. Collectives stay on every device (their peers wait for them), and their results
stay outputs of the pruned program so that no later pass drops them.
"""
from __future__ import annotations

import weakref

from jaxlite._src.base import core
from jaxlite._src.compiler import passes
from jaxlite._src.lax import parallel, parallel_comm
from jaxlite._src.spmd import runtime


def fuse_psums(closed):
  """`closed` (a device program's ClosedJaxpr) with each run of two or more consecutive psums
  over the same named axes (psum, or the psum_invariant check_vma inserts) replaced by one
  `psum_fused`: a data-parallel step's gradient psums then meet their peers once. Returns
  `closed` itself when there is nothing to fuse."""
  def axes_of(eqn):
    p = eqn.params
    if eqn.primitive is parallel_comm.psum_invariant_p:
      axes = p["axes"]
    elif eqn.primitive is parallel.psum_p and p["axis_index_groups"] is None:
      axes = p["axes"]
    else:
      return None
    named, positional = parallel._split_axes(axes)
    return None if positional or not named else named

  eqns, out, changed = _sink_psums(closed.jaxpr.eqns, axes_of), [], False
  i = 0
  while i < len(eqns):
    axes = axes_of(eqns[i])
    j = i + 1
    while axes is not None and j < len(eqns) and axes_of(eqns[j]) == axes:
      j += 1
    if j - i >= 2:
      run = eqns[i:j]
      out.append(core.JaxprEqn([e.invars[0] for e in run], [e.outvars[0] for e in run],
                               parallel.psum_fused_p, {"axes": axes}))
      changed = True
    else:
      out.extend(eqns[i:j])
    i = j
  if not changed:
    return closed
  jaxpr = closed.jaxpr
  return core.ClosedJaxpr(core.Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, out,
                                     jaxpr.effects, jaxpr.debug_info), closed.consts)



def _sink_psums(eqns, axes_of):
  """`eqns` reordered so that fusable psums computed at different points meet their peers
  together: each psum is deferred, with every equation reading a deferred result, until an
  equation that meets peers or has an effect (collective order and effects stay as they were)
  or the end; there the deferred psums that read no deferred result go first, then the other
  deferred equations in their order. The same rewrite runs in every device and process. A
  backward pass interleaves each layer's gradient psum with the next layer's backprop, which
  never reads it: reordered, the psums form one run (one packed MPI Allreduce across processes
  instead of one per gradient)."""
  out, pending, held = [], [], set()

  def flush():
    ready = [e for e in pending if axes_of(e) is not None and not reads[id(e)]]
    ids = {id(e) for e in ready}
    out.extend(ready)
    out.extend(e for e in pending if id(e) not in ids)

  reads: dict = {}  # id(deferred eqn) -> whether it reads an earlier deferred result
  for eqn in eqns:
    reads_held = pending and any(isinstance(v, core.Var) and v in held for v in eqn.invars)
    if axes_of(eqn) is not None or reads_held and not (
        _meets_peers(eqn) or passes.is_effectful(eqn)):
      reads[id(eqn)] = bool(reads_held)
      pending.append(eqn)
      held.update(v for v in eqn.outvars if isinstance(v, core.Var))
      continue
    if pending and (reads_held or _meets_peers(eqn) or passes.is_effectful(eqn)):
      flush()
      pending, held = [], set()
    out.append(eqn)
  flush()
  return out


def _meets_peers(eqn) -> bool:
  return runtime.meets_peers(core.Jaxpr([], [], [], [eqn]))


def prune(closed, needed):
  """`closed` computing only the outputs where `needed` is True (plus every collective and
  effect, whose results are appended as extra outputs); the ClosedJaxpr and the number of
  needed outputs it returns first."""
  jaxpr = closed.jaxpr
  outs = [v for v, n in zip(jaxpr.outvars, needed) if n]
  live = {v for v in outs if isinstance(v, core.Var)}
  kept, extra = [], []
  for eqn in reversed(jaxpr.eqns):
    peers = _meets_peers(eqn)
    if peers or passes.is_effectful(eqn) or any(v in live for v in eqn.outvars):
      kept.append(eqn)
      live.update(v for v in eqn.invars if isinstance(v, core.Var))
      if peers:
        extra += [v for v in eqn.outvars if isinstance(v, core.Var)]
  kept.reverse()
  pruned = core.Jaxpr(jaxpr.constvars, jaxpr.invars, outs + extra, kept, jaxpr.effects,
                      jaxpr.debug_info)
  return core.ClosedJaxpr(pruned, closed.consts)


class DeviceProgram:
  """One device's program: `run(*blocks)` returns every output of the body, None for those
  this device does not produce."""
  __slots__ = ("closed", "needed", "_made")

  def __init__(self, closed, needed):
    self.closed, self.needed, self._made = closed, needed, (None, None)

  def executable(self):
    from jaxlite._src.compiler import backend
    exe = backend.compile_jaxpr(self.closed)  # (cached on the jaxpr per backend)
    made, run = self._made
    if made is exe:
      return run
    needed = self.needed
    if needed is None:
      def run(*xs):
        return list(exe(*xs))
    else:
      def run(*xs):
        it = iter(exe(*xs))
        return [next(it) if n else None for n in needed]
    self._made = (exe, run)
    return run


_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def device_programs(jaxpr, mesh, writers):
  """Per device of `mesh` (flat order), its DeviceProgram for body `jaxpr` (a ClosedJaxpr),
  where writers[i] is the set of devices whose block of output i is read (cached per body,
  mesh and writers)."""
  per_body = _programs.get(jaxpr)
  if per_body is None:
    per_body = _programs[jaxpr] = {}
  key = (mesh, tuple(map(frozenset, writers)))
  hit = per_body.get(key)
  if hit is None:
    full = fuse_psums(jaxpr)
    made = {}
    hit = []
    needs = [tuple(d in w for w in writers) for d in range(mesh.devices.size)]
    # When some device runs a pruned program, every device does (a writer of all outputs too):
    # the compiler would drop a collective whose result nothing reads from a whole program,
    # while the pruned ones keep it, and its peers would wait for it forever.
    whole = all(all(n) for n in needs)
    for needed in needs:
      prog = made.get(needed)
      if prog is None:
        prog = made[needed] = DeviceProgram(full, None) if whole else \
            DeviceProgram(prune(full, needed), needed)
      hit.append(prog)
    if len(per_body) >= 16:
      per_body.clear()
    per_body[key] = hit
  return hit
