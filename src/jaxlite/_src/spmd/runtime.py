"""The SPMD runtime: runs one program per device of a mesh concurrently, and the shared-memory
rendezvous through which collectives exchange per-device blocks.

Workers. Every device gets its own persistent worker thread (collectives block until the whole
axis group arrives, so all device programs must be in flight at once), but only as many run
Python/NumPy at a time as there are cores: a worker holds a slot of `_compute` while it computes
and gives it back while it waits in a collective. NumPy releases the GIL inside its kernels, so
the active workers overlap.

Sharing the cores. The device programs of a run split tier 1's pool and numba's threads
(`_share_cores`, `machine.sharing`: max(1, cores // busy devices) each, so that together they
never ask for more threads than cores). BLAS threads follow `DEVICE_BLAS` (below): OpenBLAS
runs concurrent multi-threaded products one after another, so each device keeps every core
for its products by default (the count is set through the loaded library,
`compiler/blas.py`, else `threadpoolctl` where installed, for the run and set back after it).
Tier 1 still times a program with big products on its count and on one thread
(blas.AdaptiveThreads) and keeps the faster.

Where the devices' programs need not run apart (no host callback, no collective under a cond or
a while_loop: most shard_map bodies and the partitioner's programs), they do not come here:
`stacked_builders` runs the body once, vmapped over the mesh axes, on every device's block
stacked (parallel/shard_map_stacked.py): one program keeps every core busy in its products and
no device thread waits on another's Python. The workers below run the rest.

Exchange. `exchange(group, block, combine)` is the one step collectives use to meet their peers:
each member deposits its block (no copy) in a slot keyed by (the member's collective sequence
number, the group), the last to arrive runs `combine(blocks)` once, and everyone gets its
result. A cross-process transport (MPI) replaces this function. Nothing hangs: a member raises
when its run was aborted because another device's program raised, when no peer is left to
arrive (every program still running waits in an incomplete collective: a collective that some
devices skip), or when its peers do not arrive within `timeout` seconds.
"""
from __future__ import annotations

import os
import threading
from _queue import SimpleQueue  # the C queue (`queue` itself costs import time)

import numpy as np

from jaxlite._src.base import machine

DEFAULT_TIMEOUT = float(os.environ.get("JAXLITE_COLLECTIVE_TIMEOUT", "120"))


class CollectiveError(RuntimeError):
  """A collective could not complete: a peer failed or did not arrive in time."""


# --- per-device context ------------------------------------------------------------------------

class DeviceContext:
  """What a device program knows about itself: its mesh, flat index and coordinates."""
  __slots__ = ("mesh", "index", "coords", "run", "seq", "mesh_spans_processes")

  def __init__(self, mesh, index: int, run, coords=None):
    self.mesh, self.index, self.run = mesh, index, run
    self.mesh_spans_processes = False
    self.coords = mesh_coords(mesh)[index] if coords is None else coords
    self.seq = 0  # collectives issued so far (every device issues them in the same order)


_coords_cache: dict = {}


def mesh_coords(mesh) -> list:
  """{axis: coordinate} of each device of `mesh`, in `mesh.devices.flat` order (cached)."""
  key = (mesh.axis_names, mesh.devices.shape)
  hit = _coords_cache.get(key)
  if hit is None:
    hit = _coords_cache[key] = [
        dict(zip(mesh.axis_names, (int(c) for c in np.unravel_index(i, mesh.devices.shape))))
        for i in range(mesh.devices.size)]
  return hit


_local = threading.local()


def current_context() -> DeviceContext | None:
  return getattr(_local, "ctx", None)


def current_device():
  """The device whose program runs on this thread (None outside run_spmd)."""
  ctx = current_context()
  return None if ctx is None else ctx.mesh.devices.flat[ctx.index]


def axis_coords() -> dict:
  """{axis name: this device's coordinate} (empty outside run_spmd)."""
  ctx = current_context()
  return {} if ctx is None else dict(ctx.coords)


class _Bound:
  """Sets the thread's device context for the duration of a `with` (and hides the axes a
  shard_map being traced on this thread binds: a device program sees its mesh's only, as on a
  worker thread, also when it runs on the caller's thread)."""
  __slots__ = ("ctx", "prev", "prev_axes")

  def __init__(self, ctx):
    self.ctx = ctx

  def __enter__(self):
    self.prev = current_context()
    self.prev_axes = getattr(_local, "axes", None)
    _local.ctx = self.ctx
    if self.prev_axes:
      _local.axes = []

  def __exit__(self, *exc):
    _local.ctx = self.prev
    if self.prev_axes:
      _local.axes = self.prev_axes


# --- groups and the exchange -------------------------------------------------------------------

class Group:
  """The members of an axis group as one device sees it: `size` members, this one at `rank`
  (row-major over `axes` in the order given), `key` naming the group within the run."""
  __slots__ = ("axes", "size", "rank", "key", "layout", "local_size")

  def __init__(self, axes, size, rank, key, layout=None):
    self.axes, self.size, self.rank, self.key = axes, size, rank, key
    # layout: each rank's process when the group spans processes (jaxlite.distributed), else
    # None; local_size: how many members run in this process (they meet in shared memory).
    self.layout = layout
    self.local_size = size if layout is None else \
        sum(p == layout[rank] for p in layout)

  def peer_rank_coords(self, ctx, rank: int) -> dict:
    sizes = [ctx.mesh.shape[a] for a in self.axes]
    return dict(zip(self.axes, (int(c) for c in np.unravel_index(rank, sizes))))


_groups: dict = {}  # (id(mesh), device, axes, spans processes, index groups) -> (mesh, Group)


def group_of(axes, index_groups=None) -> Group:
  """This device's group over mesh `axes` (the other axes' coordinates fixed), or with
  `index_groups` (JAX's axis_index_groups: a tuple of tuples of ranks along `axes`) the part of
  it in the same index group as this device; cached per mesh, device, axes and index groups
  (a Group is never changed once made)."""
  ctx = current_context()
  if ctx is None:
    raise NameError(f"unbound axis name: {axes[0]}")
  if type(axes) is not tuple:
    axes = tuple(axes)
  key = (id(ctx.mesh), ctx.index, axes, ctx.mesh_spans_processes, index_groups)
  hit = _groups.get(key)  # by identity: hashing a mesh costs more than the lookup
  if hit is not None and hit[0] is ctx.mesh:
    return hit[1]
  group = _make_group(ctx, axes)
  if index_groups is not None:
    group = _index_group(group, index_groups)
  if len(_groups) > 4096:
    _groups.clear()
  _groups[key] = (ctx.mesh, group)
  return group


def _make_group(ctx, axes) -> Group:
  shape = ctx.mesh.shape
  rank = 0
  for a in axes:
    rank = rank * shape[a] + ctx.coords[a]
  size = 1
  for a in axes:
    size *= shape[a]
  rest = tuple((n, c) for n, c in ctx.coords.items() if n not in axes)
  layout = None
  if ctx.mesh_spans_processes:
    from jaxlite._src.distributed import group_exchange
    layout = group_exchange.rank_processes(ctx.mesh, axes, ctx.coords)
    if not group_exchange.spans_processes(layout):
      layout = None
  return Group(axes, size, rank, (axes, rest), layout)


def _index_group(group, index_groups) -> Group:
  """The members of `group` listed with this device's rank in `index_groups`, ranked in the
  order listed (as XLA ranks a replica group's members: JAX's axis_index_groups)."""
  if group.layout is not None:
    raise NotImplementedError(
        f"axis_index_groups={index_groups} over axes {group.axes}, whose devices span "
        "processes: the SPMD runtime splits an axis into index groups within one process only")
  members = next((g for g in index_groups if group.rank in g), None)
  if members is None:
    raise ValueError(f"axis_index_groups={index_groups} must list every index of axes "
                     f"{group.axes} (of size {group.size}) exactly once; {group.rank} is "
                     "missing")
  return Group(group.axes, len(members), members.index(group.rank), group.key + (members,))


class _Slot:
  __slots__ = ("blocks", "arrived", "finished", "left", "result", "done")

  def __init__(self, n):
    self.blocks, self.arrived, self.finished, self.left = [None] * n, 0, 0, n
    self.result, self.done = None, False


def _wait(run, slot, group, pred):
  """Waits (holding run.cond, without a compute slot) until `pred()`; raises if the run was
  aborted, if it can never complete (every device still running waits in a collective that
  is not complete: `_Run.stuck`), or if the peers do not come in time."""
  me = current_context().index
  run.waiting[me] = pred
  run.cond.notify_all()  # peers re-check whether the run is stuck now that this one waits
  run.release_compute()
  try:
    ok = run.cond.wait_for(lambda: pred() or run.error is not None or run.stuck(), run.timeout)
  finally:
    del run.waiting[me]
    run.cond.release()
    run.acquire_compute()
    run.cond.acquire()
  if pred():
    return
  if run.error is not None:
    raise CollectiveError("collective aborted: another device's program raised "
                          f"{type(run.error).__name__}: {run.error}")
  if ok:  # stuck: no device left to arrive
    err = CollectiveError(
        f"collective over axes {group.axes} cannot complete: {slot.arrived} of {group.size} "
        "devices arrived and the others finished their programs or wait in other "
        "collectives (is it under control flow that not every device takes, e.g. a cond on "
        "axis_index?)")
    run.fail(err)
    raise err
  if not ok:
    err = CollectiveError(
        f"collective over axes {group.axes} timed out after {run.timeout} s: only "
        f"{slot.arrived} of {group.size} devices arrived")
    run.fail(err)
    raise err


def _arrive(group, block, combine, kind=None):
  """Deposits `block`; returns the slot once every member has, with `combine(blocks)` computed
  by the last to arrive. In a group spanning processes the last local member combines with
  the other processes' (`_across_processes`)."""
  ctx = current_context()
  run = ctx.run
  if run.inline and group.local_size > 1:
    # The caller promised a program without collectives (`run_spmd(inline=True)` runs the
    # devices one after another on its thread): waiting here would wait for ever.
    err = CollectiveError(f"collective over axes {group.axes} in a device program run inline "
                          "(run_spmd(inline=True) is only for programs without collectives)")
    run.fail(err)
    raise err
  key = (ctx.seq, group.key)
  ctx.seq += 1
  slot = run.slots.get(key)
  if slot is None:
    slot = run.slots[key] = _Slot(group.size)
  slot.blocks[group.rank] = block
  slot.arrived += 1
  if slot.arrived == group.local_size:
    try:
      if group.layout is not None:
        slot.result = _across_processes(run, group, slot.blocks, combine, kind)
      else:
        slot.result = slot.blocks if combine is None else combine(slot.blocks)
    except BaseException as e:  # noqa: BLE001 -- a failed combine fails the whole group
      run.fail(e)
      raise
    slot.done = True
    run.cond.notify_all()
  else:
    _wait(run, slot, group, lambda: slot.done)
  return run, key, slot


def _across_processes(run, group, blocks, combine, kind):
  """The combination of a group whose members live in several processes, computed by its
  last local member with run.cond and its compute slot released while MPI moves data."""
  local = {r: np.asarray(b) for r, b in enumerate(blocks) if b is not None}
  run.cond.release()
  run.release_compute()
  try:
    full, reduced = _exchange_across(group, local, kind)
  finally:
    run.acquire_compute()
    run.cond.acquire()
  if reduced:
    return full
  return full if combine is None else combine(full)


_REDUCTIONS = frozenset(("psum", "pmax", "pmin"))


def _exchange_across(group, local, kind):
  """The MPI part of a cross-process group's exchange, from this process's {rank: block}:
  (the reduction, True) or (every member's block in rank order, False). The only
  group of its collective (it spans every mesh axis) uses MPI collectives: reductions reduce
  locally, then one Allreduce; others one Allgather. Groups that are one of several (other
  axes' coordinates fixed) exchange point to point, tagged by those coordinates, so that
  concurrent groups cannot cross."""
  from jaxlite._src.distributed import group_exchange
  rest = group.key[1]
  if not rest:
    if kind in _REDUCTIONS:
      return next(iter(group_exchange.exchange(kind, local, group.layout).values())), True
    return list(next(iter(group_exchange.exchange("all_gather", local,
                                                  group.layout).values()))), False
  mesh = current_context().mesh
  names = [n for n in mesh.axis_names if n not in group.axes]
  tag = 1 + int(np.ravel_multi_index([dict(rest)[n] for n in names],
                                     [mesh.shape[n] for n in names]))
  return group_exchange.gather_p2p(local, group.layout, tag), False


def _leave(run, key, slot):
  slot.left -= 1
  if slot.left == 0:
    del run.slots[key]


def exchange(group: Group, block, combine=None, kind=None):
  """Deposits `block` for `group` and waits for every member's: returns `combine(blocks)`
  (computed once, by the last member to arrive) or, without `combine`, the list of blocks in
  rank order (valid only until the members move on: copy what you keep). The replaceable
  transport step of every collective."""
  ctx = current_context()
  run = ctx.run
  if group.local_size == 1 and group.layout is not None:
    # This process's only member: nothing to meet in shared memory (no slot, no lock); the
    # sequence number still advances, as the slot keys of later collectives count on it.
    ctx.seq += 1
    return _lone_across_processes(run, group, block, combine, kind)
  with run.cond:
    run, key, slot = _arrive(group, block, combine, kind)
    _leave(run, key, slot)
    return slot.result


def _lone_across_processes(run, group, block, combine, kind):
  """`_across_processes` for a group with one member in this process, which holds no lock:
  its compute slot is released while MPI moves data; a failure fails the run."""
  run.release_compute()
  try:
    full, reduced = _exchange_across(group, {group.rank: np.asarray(block)}, kind)
  except BaseException as e:  # noqa: BLE001 -- a failed exchange fails the whole group
    run.fail(e)
    raise
  finally:
    run.acquire_compute()
  if reduced:
    return full
  try:
    return full if combine is None else combine(full)
  except BaseException as e:  # noqa: BLE001
    run.fail(e)
    raise


def exchange_parallel(group: Group, block, prepare, work):
  """Like `exchange`, with the combining work shared: the last to arrive runs
  `prepare(blocks) -> shared` (e.g. allocates the result), then every member runs
  `work(blocks, shared, rank, size)` on its part, and all return `shared` once all are done."""
  run = current_context().run
  with run.cond:
    run, key, slot = _arrive(group, block, prepare)
  try:
    work(slot.blocks, slot.result, group.rank, group.size)
  except BaseException as e:  # noqa: BLE001
    run.fail(e)
    raise
  with run.cond:
    slot.finished += 1
    if slot.finished == group.size:
      run.cond.notify_all()
    else:
      _wait(run, slot, group, lambda: slot.finished == group.size)
    _leave(run, key, slot)
    return slot.result


# Primitives whose device programs must each run on their own device's block, one program per
# device (host callbacks: the callback sees one device's block per call). The modules defining
# them register them; shard_map's stacked path (one program over all devices' blocks) leaves
# bodies holding one to the workers.
per_device_primitives: set = set()

# Builders of one program over every device's block, stacked, in place of a run of per-device
# programs: fn(per-device ClosedJaxpr, mesh, in_specs, out_specs) -> an object whose
# `run(global values)` returns the global results, or None where the body must run per device.
# parallel/shard_map_stacked.py registers its own (the partitioner's executor asks it too).
stacked_builders: list = []


# --- runs and workers --------------------------------------------------------------------------

_CORES = machine.usable_cores()
_compute = threading.BoundedSemaphore(_CORES)

# BLAS threads of each device program while `n` run at once (env JAXLITE_DEVICE_BLAS): "all"
# (the default) every core each; "share" cores // n; "one" one thread each.
# OpenBLAS runs concurrent multi-threaded products one at a time (they queue), whatever their
# thread counts: on the 13-core host (2026-12-06, NumPy 2.x's OpenBLAS, a 256x784x512 float32
# product in k Python threads at once) 2 x 6 threads gave 324 GFLOP/s together where one
# product of 6 alone gave 393, 4 x 3 threads 144, one of all 13 threads 632 (960 at 2048 rows),
# and one thread each scaled with k (91 GFLOP/s a thread, 1092 for 12). So splitting the
# threads only makes each queued product slower: "all" runs the products one at a time at full
# width while the programs' other work overlaps. Data-parallel MLP step (bench_devices.py,
# batch 2048), one device 16.7 ms: 2 devices 18.8 ms with "all", 42.6 "share", 41.2 "one"; at
# 4 and 8 devices the three were within noise (25-28 ms).
DEVICE_BLAS = os.environ.get("JAXLITE_DEVICE_BLAS", "all").strip().lower()


def device_blas_threads(n: int) -> int:
  """BLAS threads of each of `n` device programs running at once (DEVICE_BLAS)."""
  if n <= 1 or DEVICE_BLAS == "all":
    return _CORES
  if DEVICE_BLAS == "one":
    return 1
  return max(1, _CORES // n)


class _Run:
  """The shared state of one run_spmd call."""

  def __init__(self, n, timeout, inline=False, solo=False):
    self.slots = {}
    self.error = None
    self.results = [None] * n
    self.pending = n
    self.timeout = timeout
    self.inline = inline  # devices run one after another on the caller's thread: no peers
    self.waiting = {}  # device index -> the predicate it waits on (in a collective)
    if not solo:
      self.cond = threading.Condition()
      if not inline:
        self.finished = threading.Event()

  def __getattr__(self, name):
    # A solo run (every device program on the calling thread, one after another) makes its
    # `cond` on first use, if ever: making it is a large share of a small run's cost, and
    # only that one thread can ask for it. Other runs make it up front (their threads race).
    if name == "cond":
      self.cond = threading.Condition()
      return self.cond
    raise AttributeError(name)

  def stuck(self) -> bool:
    """Whether no waiting device can ever go on: every device program still running waits
    (holding self.cond) on a collective that is not complete, so no one is left to arrive."""
    return len(self.waiting) == self.pending and not any(p() for p in self.waiting.values())

  def fail(self, e):
    with self.cond:
      if self.error is None:
        self.error = e
      self.cond.notify_all()

  @staticmethod
  def release_compute():
    _compute.release()

  @staticmethod
  def acquire_compute():
    _compute.acquire()


class _Worker:
  """A daemon thread that runs device programs handed to it, one at a time."""

  def __init__(self, i):
    self.tasks = SimpleQueue()
    self.thread = threading.Thread(target=self._loop, name=f"jaxlite-device-{i}", daemon=True)
    self.thread.start()

  def _loop(self):
    while True:
      run, ctx, fn, args, i = self.tasks.get()
      _run_device(run, ctx, fn, args, i)


def _run_device(run, ctx, fn, args, i):
  """Device i's program under the compute semaphore, on a worker or the calling thread; a
  failure is recorded on `run` (run_spmd re-raises it once the peers stop)."""
  _compute.acquire()
  try:
    with _Bound(ctx):
      run.results[i] = fn(*args)
  except BaseException as e:  # noqa: BLE001 -- handed to the caller of run_spmd
    run.fail(e)
  finally:
    _compute.release()
    with run.cond:
      run.pending -= 1
      if run.pending == 0:
        run.finished.set()
      elif run.waiting:
        run.cond.notify_all()  # waiters re-check whether the run is stuck


_workers: list = []
_workers_lock = threading.Lock()


def _worker(i) -> _Worker:
  if i >= len(_workers):
    with _workers_lock:
      while len(_workers) <= i:
        _workers.append(_Worker(len(_workers)))
  return _workers[i]


_threadpoolctl = []  # [module or None], once looked for


class _share_cores:
  """For the duration of a run of `n_active` device programs at once: each program's share of
  the cores (machine.sharing: tier 1's pool workers and numba's threads, cores // n_active) and
  its BLAS thread count (device_blas_threads)."""
  __slots__ = ("n", "restore", "limits", "sharing")

  def __init__(self, n_active):
    self.n = n_active
    self.restore = 0
    self.limits = self.sharing = None

  def __enter__(self):
    self.sharing = machine.sharing(self.n)
    self.sharing.__enter__()
    threads = device_blas_threads(self.n)
    from jaxlite._src.compiler import blas  # a leaf of the compiler: no cycle
    lib = blas.openblas()
    if lib is not None:
      found = lib[0]()
      if found > threads:
        lib[1](threads)
        self.restore = found
    else:
      self.limits = _blas_limits(threads)
    return self

  def __exit__(self, *exc):
    if self.restore:
      from jaxlite._src.compiler import blas
      blas.openblas()[1](self.restore)
    if self.limits is not None:
      self.limits.restore_original_limits()
    self.sharing.__exit__(*exc)


def _blas_limits(threads):
  if not _threadpoolctl:
    try:
      import threadpoolctl
    except ImportError:
      threadpoolctl = None
    _threadpoolctl.append(threadpoolctl)
  tpc = _threadpoolctl[0]
  if tpc is None:
    return None
  return tpc.threadpool_limits(limits=threads, user_api="blas")


_local_devices: dict = {}


def _process_index() -> int:
  from jaxlite._src.base import devices
  global _process_index
  _process_index = devices.process_index  # bound once the devices module is loaded
  return devices.process_index()


def _local_indices(mesh) -> list:
  """The flat indices of `mesh`'s devices that this process runs (cached per device tuple)."""
  me = _process_index()
  hit = _local_by_mesh.get(id(mesh))  # by identity first: the device tuple costs more
  if hit is not None and hit[0] is mesh and hit[1] == me:
    return hit[2]
  key = (me, tuple(mesh.devices.flat))
  out = _local_devices.get(key)
  if out is None:
    out = _local_devices[key] = [i for i, d in enumerate(key[1]) if d.process_index == me]
  if len(_local_by_mesh) > 256:
    _local_by_mesh.clear()
  _local_by_mesh[id(mesh)] = (mesh, me, out)
  return out


_local_by_mesh: dict = {}  # id(mesh) -> (mesh, process index, its local flat indices)


def all_local(mesh) -> bool:
  """Whether this process runs every device of `mesh`."""
  return len(_local_indices(mesh)) == mesh.devices.size


def reduce_packed(xs, reduce, single=None) -> list:
  """`reduce` (one collective over a contiguous 1-D buffer) applied to the operands `xs` packed
  by dtype: one call per dtype instead of one per operand, the results views into its result
  (shaped as their operands). `single(x)`, where given, reduces a dtype's lone operand as it is
  (nothing to pack). A data-parallel step's gradient psums then cost one MPI Allreduce per
  dtype (each call has a fixed latency of tens of microseconds, a multiple of a small leaf's
  transfer time)."""
  by_dtype: dict = {}
  for i, x in enumerate(xs):
    by_dtype.setdefault(x.dtype, []).append(i)
  outs = [None] * len(xs)
  for dtype, idx in by_dtype.items():
    if single is not None and len(idx) == 1:
      outs[idx[0]] = single(xs[idx[0]])
      continue
    sizes = [xs[i].size for i in idx]
    buf = np.empty(sum(sizes), dtype)
    o = 0
    for i, k in zip(idx, sizes):
      buf[o:o + k] = xs[i].reshape(-1)  # copies a strided view (a transposed gradient) once
      o += k
    total = reduce(buf)
    total.flags.writeable = False  # the results share it
    o = 0
    for i, k in zip(idx, sizes):
      outs[i] = total[o:o + k].reshape(xs[i].shape)
      o += k
  return outs


def run_spmd(mesh, per_device_fn, per_device_args, timeout: float | None = None,
             inline: bool = False) -> list:
  """Runs `per_device_fn(*per_device_args[i])` for each device i of `mesh` (in
  `mesh.devices.flat` order) concurrently; returns their outputs in that order. The first
  exception raised by any device program is re-raised here (its peers' collectives abort).

  The calling thread runs device 0's program itself while the workers run the others (one
  hand-off fewer). `inline=True` runs every device's program on the calling thread, one after
  another: for programs that meet no peer (no collective; `axis_index` is fine), where the
  work is too small to pay for waking the workers. A collective met in such a run raises."""
  n = mesh.devices.size
  local = _local_indices(mesh)
  if len(local) < n:  # a mesh over several processes: run this process's devices only
    return _run_local(mesh, per_device_fn, per_device_args, local,
                      DEFAULT_TIMEOUT if timeout is None else timeout)
  if n == 1:  # one device: run inline, no threads
    run = _Run(n, DEFAULT_TIMEOUT if timeout is None else timeout, solo=True)
    with _Bound(DeviceContext(mesh, 0, run)):
      return [per_device_fn(*per_device_args[0])]
  if current_context() is not None:
    raise NotImplementedError("run_spmd: a device program cannot start another SPMD run")
  coords = mesh_coords(mesh)
  if inline:
    run = _Run(n, None, inline=True, solo=True)
    results = run.results
    for i in range(n):
      with _Bound(DeviceContext(mesh, i, run, coords[i])):
        results[i] = per_device_fn(*per_device_args[i])
    return results
  run = _Run(n, DEFAULT_TIMEOUT if timeout is None else timeout)
  with _share_cores(min(n, _CORES)):
    for i in range(1, n):
      _worker(i).tasks.put((run, DeviceContext(mesh, i, run, coords[i]), per_device_fn,
                            per_device_args[i], i))
    _run_here(run, DeviceContext(mesh, 0, run, coords[0]), per_device_fn, per_device_args[0])
    run.finished.wait()
  if run.error is not None:
    first = run.error
    raise first
  return run.results


def _run_here(run, ctx, fn, args):
  """Device `ctx.index`'s program on the calling thread, as a worker runs it."""
  _run_device(run, ctx, fn, args, ctx.index)


def _run_local(mesh, per_device_fn, per_device_args, local, timeout):
  """run_spmd for a mesh spanning processes: this process's devices' programs (None in the
  other devices' places)."""
  n = mesh.devices.size
  solo = len(local) == 1 and current_context() is None
  run = _Run(n, timeout, solo=solo)
  run.pending = len(local)
  if solo:  # one local device: inline, no hand-off
    run.results[local[0]] = _run_solo(run, mesh, local[0], per_device_fn,
                                      per_device_args[local[0]])
    return run.results
  with _share_cores(min(len(local), _CORES)):
    for k, i in enumerate(local):
      ctx = DeviceContext(mesh, i, run)
      ctx.mesh_spans_processes = True
      _worker(k).tasks.put((run, ctx, per_device_fn, per_device_args[i], i))
    run.finished.wait()
  if run.error is not None:
    raise run.error
  return run.results


def _run_solo(run, mesh, index, fn, args):
  ctx = DeviceContext(mesh, index, run)
  ctx.mesh_spans_processes = True
  _compute.acquire()  # the slot a worker would hold (collectives give it back meanwhile)
  try:
    with _Bound(ctx):
      return fn(*args)
  finally:
    _compute.release()


def run_one(mesh, index, fn, args, timeout: float | None = None):
  """`fn(*args)`, device `index`'s program of a mesh spanning processes of which it is this
  process's only device: on the calling thread (no worker, no rendezvous in shared memory);
  its collectives meet the other processes' devices through MPI. Only outside device
  programs (`current_context()` None)."""
  run = _Run(mesh.devices.size, DEFAULT_TIMEOUT if timeout is None else timeout, solo=True)
  run.pending = 1
  return _run_solo(run, mesh, index, fn, args)


def meets_peers(jaxpr) -> bool:
  """Whether running `jaxpr` (a Jaxpr, sub-jaxprs included) on a device meets other devices:
  a collective (primitives marked `meets_peers`) or a shard_map (a nested SPMD run). Programs
  that do not may run inline (`run_spmd(inline=True)`)."""
  from jaxlite._src.base import core
  todo, seen = [jaxpr], set()
  while todo:
    j = todo.pop()
    if id(j) in seen:
      continue
    seen.add(id(j))
    for eqn in j.eqns:
      prim = eqn.primitive
      if getattr(prim, "meets_peers", False) or prim.name == "shard_map":
        return True
      todo += [getattr(sub, "jaxpr", sub) for sub in core.jaxprs_in_params(eqn.params)]
  return False


# --- named axes in scope -----------------------------------------------------------------------

def spmd_axis_size(name):
  """The size of mesh axis `name` if a shard_map being traced on this thread, or the device
  program running on it, binds it; else None."""
  for env in reversed(getattr(_local, "axes", ())):
    if name in env:
      return env[name]
  ctx = current_context()
  if ctx is not None:
    return ctx.mesh.shape.get(name)
  return None


class bind_axes:
  """Binds mesh axes {name: size} while a shard_map body is traced on this thread."""
  __slots__ = ("env",)

  def __init__(self, env: dict):
    self.env = env

  def __enter__(self):
    if not hasattr(_local, "axes"):
      _local.axes = []
    _local.axes.append(self.env)

  def __exit__(self, *exc):
    _local.axes.pop()
