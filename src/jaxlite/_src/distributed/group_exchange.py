"""The SPMD runtime's exchange step for an axis group whose devices live in several processes:
this process's members combine in shared memory, then one MPI call per process.

The runtime (spmd/runtime.py) knows a group as `size` ranks; `rank_process[r]` is the process
of rank r's device. When every local member has deposited its block, the last to arrive calls
`exchange(kind, local_blocks, rank_process, **params)` with {rank: block} for this process's
ranks, and gets {rank: result} back. Kinds (JAX's collectives, per-device semantics):
  psum / pmax / pmin   every rank gets the reduction of all blocks
  all_gather           every rank gets the blocks stacked on a new axis 0, in rank order
  psum_scatter         rank r gets chunk r (of `size` along axis 0) of the sum of all blocks
  all_to_all           rank r's block's chunk j (axis 0) goes to rank j, stacked by source rank
  ppermute             `perm` (source rank, destination rank) pairs; others receive zeros
Every process of the group must call it at the same point of the program (as with any MPI
collective); ranks are the group's, processes the world's.

How spmd/runtime.py, shard_map.py and lax/parallel.py use it (jit over such meshes goes
through distributed/sharded_jit.py into the same runtime):
- `run_spmd` runs only this process's devices of the mesh (inline when it has one); shard_map
  feeds them the local shards of its global operands and assembles its results from the local
  blocks (`global_arrays._assemble`).
- A group's layout is `rank_processes(mesh, axes, coords)`; when it `spans_processes`, the
  slot waits for the local members only, and the last one combines with the other processes
  (releasing the run's lock and compute slot meanwhile): the one group of a collective over
  every mesh axis calls `exchange` (reductions: one Allreduce; others one Allgather then the
  collective's own combine); groups that are one of several (other axes' coordinates fixed)
  use `gather_p2p`, tagged by those coordinates, so concurrent groups cannot cross.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.distributed import mpi_collectives as mc
from jaxlite._src.distributed.state import global_state

_REDUCE = {"psum": ("sum", np.add), "pmax": ("max", np.maximum), "pmin": ("min", np.minimum)}


_by_layout: dict = {}  # id(rank_process) -> (rank_process, _layout's answer)


def _layout(rank_process):
  """(sorted processes of the group, {process: its ranks ascending}); every process must hold
  the same number of ranks (meshes over whole processes' devices). Cached for the lists that
  `rank_processes` caches (same object each call)."""
  hit = _by_layout.get(id(rank_process))
  if hit is not None and hit[0] is rank_process:
    return hit[1]
  out = _compute_layout(rank_process)
  if len(_by_layout) > 1024:
    _by_layout.clear()
  _by_layout[id(rank_process)] = (rank_process, out)
  return out


def _compute_layout(rank_process):
  by_proc = {}
  for r, p in enumerate(rank_process):
    by_proc.setdefault(int(p), []).append(r)
  procs = tuple(sorted(by_proc))
  counts = {len(v) for v in by_proc.values()}
  if len(counts) != 1:
    raise ValueError("jaxlite group exchange: the group's processes hold different numbers of "
                     f"its devices ({ {p: len(v) for p, v in by_proc.items()} }); a mesh axis "
                     "spanning processes needs the same number of devices in each")
  return procs, by_proc


_layouts: dict = {}  # (id(mesh), axes, other coordinates) -> (mesh, rank_process read-only)


def rank_processes(mesh, axes, coords):
  """`rank_process` of the group over mesh `axes` that contains the device at `coords`
  ({axis: coordinate}; only the other axes' are read): group ranks row-major over `axes`,
  as the SPMD runtime numbers them."""
  key = (id(mesh), tuple(axes), tuple((n, c) for n, c in coords.items() if n not in axes))
  hit = _layouts.get(key)  # keyed by identity: hashing a mesh costs more than the lookup
  if hit is not None and hit[0] is mesh:
    return hit[1]
  import itertools
  names = list(mesh.axis_names)
  out = []
  for pos in itertools.product(*(range(mesh.shape[a]) for a in axes)):
    at = dict(coords)
    at.update(zip(axes, pos))
    out.append(mesh.devices[tuple(at[n] for n in names)].process_index)
  if len(_layouts) > 1024:
    _layouts.clear()
  _layouts[key] = (mesh, out)
  return out


def spans_processes(rank_process) -> bool:
  """Whether a group needs MPI (some member's device is another process's)."""
  me = global_state.process_id
  return any(p != me for p in rank_process)


def exchange(kind, local_blocks, rank_process, perm=None):
  """{rank: result} for this process's ranks of the group (see the module docstring)."""
  me = global_state.process_id
  procs, by_proc = _layout(rank_process)
  mine = by_proc.get(me)
  if mine is None or sorted(local_blocks) != mine:
    raise ValueError(f"jaxlite group exchange: process {me} holds ranks {mine} of the group, "
                     f"got blocks for ranks {sorted(local_blocks)}")
  size = len(rank_process)
  blocks = [np.asarray(local_blocks[r]) for r in mine]
  if kind in _REDUCE:
    op, ufunc = _REDUCE[kind]
    if len(blocks) == 1:  # MPI reads the block where it is: no copy
      total = mc.allreduce(blocks[0], op, procs)
    else:  # the local devices' reduction is a fresh buffer: reduced across processes in place
      part = ufunc(blocks[0], blocks[1], out=mc.result_buffer(blocks[0].shape,
                                                              np.result_type(*blocks)))
      for b in blocks[2:]:
        ufunc(part, b, out=part)
      total = mc.allreduce(part, op, procs, inplace=part.dtype in mc._NATIVE)
    return {r: total for r in mine}
  if kind == "all_gather":
    stacked = mc.allgather(np.stack(blocks), procs)  # (processes, local ranks, ...)
    out = np.empty((size,) + blocks[0].shape, blocks[0].dtype)
    for pi, p in enumerate(procs):
      out[by_proc[p]] = stacked[pi]
    return {r: out for r in mine}
  if kind == "psum_scatter":
    part = blocks[0].copy()
    for b in blocks[1:]:
      np.add(part, b, out=part)
    if part.shape[0] % size:
      raise ValueError(f"psum_scatter: axis 0 of the block (shape {part.shape}) must divide "
                       f"into the group's {size} devices")
    chunks = part.reshape((size, part.shape[0] // size) + part.shape[1:])
    order = [r for p in procs for r in by_proc[p]]  # each process's ranks' chunks together
    mine_sum = mc.reduce_scatter(chunks[order], "sum", procs)
    return {r: mine_sum[k] for k, r in enumerate(mine)}
  if kind == "all_to_all":
    b0 = blocks[0]
    if b0.shape[0] % size:
      raise ValueError(f"all_to_all: axis 0 of the block (shape {b0.shape}) must divide into "
                       f"the group's {size} devices")
    per = (size, b0.shape[0] // size) + b0.shape[1:]
    chunks = np.stack([b.reshape(per) for b in blocks])  # (local src, dst rank, ...)
    # To process q: for each of its ranks d, for each local source s: chunk (s, d).
    send = np.stack([chunks[:, by_proc[q]].swapaxes(0, 1) for q in procs])
    recv = mc.alltoall(send, procs)  # (src process, my local dst, src local, ...)
    out = {}
    for k, r in enumerate(mine):
      res = np.empty(per, b0.dtype)
      for pi, p in enumerate(procs):
        res[by_proc[p]] = recv[pi, k]
      out[r] = res.reshape(b0.shape)
    return out
  if kind == "ppermute":
    return _ppermute(blocks, mine, rank_process, perm)
  raise ValueError(f"jaxlite group exchange: unknown kind {kind!r}")


def _ppermute(blocks, mine, rank_process, perm):
  perm = [(int(s), int(d)) for s, d in (perm or ())]
  by_rank = dict(zip(mine, blocks))
  out = {r: np.zeros_like(b) for r, b in by_rank.items()}
  world = mc.communicator()
  size = len(rank_process)
  reqs = []
  for s, d in perm:
    ps, pd = int(rank_process[s]), int(rank_process[d])
    tag = s * size + d  # one message per pair: the tag names it
    if s in by_rank and d in by_rank:
      out[d][...] = by_rank[s]
    elif s in by_rank:
      reqs.append(world.Isend(mc._bytes(mc._contig(by_rank[s])), dest=pd, tag=tag))
    elif d in by_rank:
      reqs.append(world.Irecv(mc._bytes(out[d]), source=ps, tag=tag))
  if reqs:
    global_state.MPI.Request.Waitall(reqs)
  return out


def gather_p2p(local_blocks, rank_process, tag):
  """Every rank's block, in rank order, from point-to-point messages on the SPMD communicator:
  this process's blocks go to each other process of the group with `tag`, theirs come back.
  Safe while other groups exchange concurrently on other threads (they use other tags; one
  group's exchanges are sequential, and MPI keeps messages of one (source, tag) in order)."""
  me = global_state.process_id
  procs, by_proc = _layout(rank_process)
  mine = by_proc[me]
  stacked = mc._contig(np.stack([np.asarray(local_blocks[r]) for r in mine]))
  comm = global_state.spmd_comm
  recvs, reqs = {}, []
  for q in procs:
    if q != me:
      reqs.append(comm.Isend(mc._bytes(stacked), dest=q, tag=tag))
      recvs[q] = np.empty_like(stacked)
      reqs.append(comm.Irecv(mc._bytes(recvs[q]), source=q, tag=tag))
  global_state.MPI.Request.Waitall(reqs)
  recvs[me] = stacked
  out = [None] * len(rank_process)
  for q in procs:
    for k, r in enumerate(by_proc[q]):
      out[r] = recvs[q][k]
  return out
