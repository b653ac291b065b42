"""Collectives across processes on contiguous NumPy buffers, through mpi4py's buffer API
(uppercase methods: no pickling): one MPI call per process and collective.

The SPMD runtime's exchange step calls these when a mesh axis spans processes: the devices of
one process combine their blocks in shared memory first, then each process makes one call here
with its combined block (`exchange_across_processes`). Every function takes `processes`, the
sorted process indices of the group (None: all), whose communicator is created once and cached;
the world communicator is the one `distributed.initialize` created.

Mismatched programs. Before moving data a collective allgathers a small record of each
process's (shape, dtype) -- one tiny extra MPI call -- and raises the same ValueError in every
process when they differ, instead of deadlocking or corrupting memory. The reducers of compiled
programs (`allreducer`) check only the first call of each (shape, dtype): what is not caught is
processes running two different programs whose collectives had each been checked before, which
then block in MPI until the job's fault handling ends them. Set JAXLITE_MPI_CHECK_SHAPES=0 to
skip every check (measured: see BENCHMARKS.md).
"""
from __future__ import annotations

import math
import os
import sys
import threading
import zlib

import numpy as np

from jaxlite._src.distributed.state import global_state, shutdown_hooks

CHECK_SHAPES = os.environ.get("JAXLITE_MPI_CHECK_SHAPES", "1") != "0"

_OPS = ("sum", "max", "min")
_group_comms: dict = {}
_resolved: dict = {}  # processes tuple -> its communicator (the world, or _group_comms')
# Dtypes MPI reduces natively (mpi4py maps their buffer formats to MPI datatypes); others
# (bool, float16, bfloat16, float8, int4) reduce in a wider type and are cast back.
_NATIVE = frozenset(np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64, np.complex64, np.complex128))


def _world():
  comm = global_state.comm
  if comm is None:
    raise RuntimeError("jaxlite MPI collectives need jax.distributed.initialize() first")
  return comm


def communicator(processes=None):
  """The communicator of `processes` (sorted process indices; None: every process), made once
  with MPI_Comm_create_group (collective over those processes only) and cached."""
  world = _world()
  if processes is None or global_state.MPI is None:
    return world
  key = processes if type(processes) is tuple else tuple(int(p) for p in processes)
  comm = _resolved.get(key)  # every group asked for before, the world's included
  if comm is not None:
    return comm
  key = tuple(int(p) for p in key)
  if len(key) == world.Get_size() and key == tuple(range(len(key))):
    _resolved[key] = world
    return world
  comm = _group_comms.get(key)
  if comm is None:
    if global_state.process_id not in key:
      raise ValueError(f"jaxlite MPI collectives: process {global_state.process_id} is not in "
                       f"the group {list(key)} it asked for")
    group = world.Get_group().Incl(list(key))
    comm = _group_comms[key] = world.Create_group(group, tag=hash(key) & 0x7FFF)
    group.Free()
  _resolved[key] = comm
  return comm


def _free_group_comms():
  for comm in _group_comms.values():
    comm.Free()
  _group_comms.clear()
  _resolved.clear()


_signatures: dict = {}  # (shape, dtype) -> its record (read-only) and the record's bytes
_agreed: dict = {}  # (record bytes, group size) -> what the Allgather gives when all agree


def _signature(x):
  """A fixed-size int64 record of x's shape and dtype (what every process must agree on),
  and its bytes."""
  key = (x.shape, x.dtype)
  hit = _signatures.get(key)
  if hit is None:
    if len(_signatures) > 1024:
      _signatures.clear()
    rec = _make_signature(x)
    rec.flags.writeable = False
    hit = _signatures[key] = (rec, rec.tobytes())
  return hit


def _make_signature(x):
  rec = np.full(10, -1, np.int64)
  rec[0], rec[1] = x.ndim, zlib.crc32(x.dtype.str.encode())  # str hash() differs by process
  shape = x.shape if x.ndim <= 8 else x.shape[:7] + (hash(x.shape[7:]) & 0x7FFFFFFF,)
  rec[2:2 + len(shape)] = shape
  return rec


def _check_same(comm, x, fn):
  if not CHECK_SHAPES:
    return
  rec, raw = _signature(x)
  n = comm.Get_size()
  allrec = np.empty((n, rec.size), np.int64)
  comm.Allgather(rec, allrec)
  agreed = _agreed.get((raw, n))
  if agreed is None:
    if len(_agreed) > 1024:
      _agreed.clear()
    agreed = _agreed[(raw, n)] = raw * n
  if allrec.tobytes() != agreed:  # a bytes compare: cheaper than an array one
    # Every process saw the same records, so every process raises here: nobody deadlocks.
    shapes = ", ".join(f"process {i}: {'same' if (r == rec).all() else 'different'}"
                       for i, r in enumerate(allrec))
    raise ValueError(
        f"jaxlite MPI {fn}: the processes entered the collective with different shapes or "
        f"dtypes (this process, rank {comm.Get_rank()}: {x.dtype}{list(x.shape)}; {shapes} "
        "compared to this one); every process must run the same program")


def _contig(x):
  x = np.asarray(x)
  return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _bytes(x):
  """A uint8 view of a contiguous buffer (data movement needs no MPI datatype for its dtype)."""
  return x.reshape(-1).view(np.uint8) if x.size else np.empty(0, np.uint8)


def _wide(dtype):
  """The dtype a non-native dtype reduces in."""
  if dtype == np.bool_:
    return np.dtype(np.int64)
  return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)


def _mpi_op(op):
  if op not in _OPS:
    raise ValueError(f"jaxlite MPI collectives: op must be one of {_OPS}, got {op!r}")
  return getattr(global_state.MPI, op.upper())  # MPI.SUM, MPI.MAX, MPI.MIN


# Result buffers of large collectives are recycled: a fresh buffer of tens of MiB is mmapped
# by malloc and costs a page fault per 4 KiB page on its first write, a large share of the
# collective itself. A pooled buffer is handed out again only when nothing else refers to it
# (its reference count: the pool's list, the loop variable and getrefcount's argument), i.e.
# when the Array or view that held the previous result is gone.
_POOL_MIN = 1 << 20     # bytes; smaller buffers come from malloc's free lists anyway
_POOL_PER_KEY = 2
_POOL_KEYS = 16
_pool: dict = {}
_pool_lock = threading.Lock()


def result_buffer(shape, dtype):
  """An uninitialized C-contiguous buffer for a collective's result (pooled when large)."""
  dtype = np.dtype(dtype)
  shape = tuple(shape)
  if dtype.itemsize * math.prod(shape) < _POOL_MIN:
    return np.empty(shape, dtype)
  key = (shape, dtype)
  with _pool_lock:
    bufs = _pool.get(key)
    if bufs is None:
      if len(_pool) >= _POOL_KEYS:
        _pool.pop(next(iter(_pool)))
      bufs = _pool[key] = []
    for b in bufs:
      if sys.getrefcount(b) == 3:
        b.flags.writeable = True  # a reader may have frozen it (psum results are read-only)
        return b
    b = np.empty(shape, dtype)
    if len(bufs) < _POOL_PER_KEY:
      bufs.append(b)
    return b


def allreduce(x, op="sum", processes=None, out=None, inplace=False):
  """The elementwise `op` ("sum", "max", "min") of every process's `x`, in every process;
  written into `out` when given (a contiguous buffer of x's shape and dtype), else into a
  recycled result buffer, or into `x` itself with `inplace` (MPI_IN_PLACE: for a contiguous
  temporary the caller owns, e.g. the sum of this process's devices' blocks)."""
  x = _contig(x) if not inplace else x
  comm = communicator(processes)
  if inplace and (not x.flags.c_contiguous or not x.flags.writeable):
    raise ValueError("jaxlite MPI allreduce: inplace needs a writeable contiguous buffer")
  if out is not None and (out.shape != x.shape or out.dtype != x.dtype
                          or not out.flags.c_contiguous or x.dtype not in _NATIVE):
    raise ValueError(f"jaxlite MPI allreduce: out must be a contiguous {x.dtype}{list(x.shape)}"
                     f" buffer of a dtype MPI reduces, got {out.dtype}{list(out.shape)}")
  if comm.Get_size() == 1:
    if inplace:
      return x
    if out is None:
      return x.copy()
    out[...] = x
    return out
  _check_same(comm, x, "allreduce")
  mop = _mpi_op(op)
  if x.dtype in _NATIVE:
    if inplace:
      comm.Allreduce(global_state.MPI.IN_PLACE, x, op=mop)
      return x
    out = result_buffer(x.shape, x.dtype) if out is None else out
    comm.Allreduce(x, out, op=mop)
    return out
  w = x.astype(_wide(x.dtype))
  out = np.empty_like(w)
  comm.Allreduce(w, out, op=mop)
  return out.astype(x.dtype) if x.dtype != np.bool_ else out != 0


def allreducer(op="sum", processes=None):
  """`lambda x: allreduce(x, op, processes)` with the communicator and the MPI op resolved
  once: the steady state of a compiled collective (distributed/sharded_jit.py). A contiguous
  buffer of a dtype MPI reduces goes to MPI where it is, the result into a fresh (or, from
  1 MiB, recycled) buffer; anything else takes `allreduce`'s general path."""
  comm = communicator(processes)
  if comm.Get_size() == 1:
    one = lambda x: allreduce(x, op, processes)  # noqa: E731
    one.op = op
    return one
  mop = _mpi_op(op)
  mpi_allreduce = comm.Allreduce
  # A reducer belongs to one collective of one compiled program, so every process that got
  # here with a (shape, dtype) agreed on it the first time: later calls skip the extra
  # rendezvous (a quarter of a 1 MiB Allreduce's time on this machine, BENCHMARKS.md).
  verified: set = set()

  def run(x):
    if type(x) is not np.ndarray or x.dtype not in _NATIVE or not x.flags.c_contiguous:
      return allreduce(x, op, processes)
    if CHECK_SHAPES and (x.shape, x.dtype) not in verified:
      _check_same(comm, x, "allreduce")
      verified.add((x.shape, x.dtype))
    out = result_buffer(x.shape, x.dtype) if x.nbytes >= _POOL_MIN else \
        np.empty(x.shape, x.dtype)
    mpi_allreduce(x, out, op=mop)
    return out
  run.op = op
  return run


def allgather(x, processes=None):
  """Every process's `x` stacked in process order: shape (group size, *x.shape)."""
  x = _contig(x)
  comm = communicator(processes)
  n = comm.Get_size()
  if n == 1:
    return x[None].copy()
  _check_same(comm, x, "allgather")
  out = np.empty((n,) + x.shape, x.dtype)
  comm.Allgather(_bytes(x), _bytes(out))
  return out


def _split_over_processes(x, processes, name):
  """(contiguous x, communicator, n) for a collective that splits axis 0 into n blocks."""
  x = _contig(x)
  comm = communicator(processes)
  n = comm.Get_size()
  if x.ndim == 0 or x.shape[0] % n:
    raise ValueError(f"jaxlite MPI {name}: axis 0 of the buffer (shape {x.shape}) must "
                     f"divide into the {n} processes of the group")
  return x, comm, n


def reduce_scatter(x, op="sum", processes=None):
  """Block i (of n along axis 0) of the elementwise `op` of every process's `x`, in process i
  (MPI_Reduce_scatter_block)."""
  x, comm, n = _split_over_processes(x, processes, "reduce_scatter")
  if n == 1:
    return x.copy()
  _check_same(comm, x, "reduce_scatter")
  mop = _mpi_op(op)
  w = x if x.dtype in _NATIVE else x.astype(_wide(x.dtype))
  out = np.empty((x.shape[0] // n,) + x.shape[1:], w.dtype)
  comm.Reduce_scatter_block(w, out, op=mop)
  if w is not x:
    out = out.astype(x.dtype) if x.dtype != np.bool_ else out != 0
  return out


def alltoall(x, processes=None):
  """Block j (of n along axis 0) of `x` goes to process j; block i of the result came from
  process i."""
  x, comm, n = _split_over_processes(x, processes, "alltoall")
  if n == 1:
    return x.copy()
  _check_same(comm, x, "alltoall")
  out = np.empty_like(x)
  comm.Alltoall(_bytes(x), _bytes(out))
  return out


def ppermute(x, perm, processes=None):
  """Sends `x` along the (source, destination) pairs of `perm` (ranks in the group): the
  result is the block received, or zeros in a process that no pair sends to (JAX's ppermute).
  One Sendrecv when this process both sends and receives."""
  x = _contig(x)
  comm = communicator(processes)
  n, me = comm.Get_size(), comm.Get_rank()
  perm = [(int(s), int(d)) for s, d in perm]
  srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or \
      not all(0 <= r < n for r in srcs + dsts):
    raise ValueError(f"jaxlite MPI ppermute: perm must be pairs of distinct ranks in "
                     f"range({n}), got {perm}")
  _check_same(comm, x, "ppermute")
  dest = next((d for s, d in perm if s == me), None)
  source = next((s for s, d in perm if d == me), None)
  out = np.zeros_like(x)
  if dest == me and source == me:
    out[...] = x
    return out
  MPI = global_state.MPI
  if n == 1 or MPI is None:
    return out
  comm.Sendrecv(_bytes(x), dest=MPI.PROC_NULL if dest is None else dest, sendtag=7,
                recvbuf=_bytes(out), source=MPI.PROC_NULL if source is None else source,
                recvtag=7)
  return out


def sendrecv(x, dest, source, processes=None):
  """Sends `x` to rank `dest` and returns the block of the same shape received from `source`
  (either may be None: send only / receive zeros)."""
  x = _contig(x)
  comm = communicator(processes)
  MPI = global_state.MPI
  out = np.zeros_like(x)
  comm.Sendrecv(_bytes(x), dest=MPI.PROC_NULL if dest is None else dest, sendtag=8,
                recvbuf=_bytes(out), source=MPI.PROC_NULL if source is None else source,
                recvtag=8)
  return out


def broadcast(x, root=0, processes=None):
  """Process `root`'s `x` in every process (every process passes a buffer of its shape)."""
  x = _contig(x)
  comm = communicator(processes)
  if comm.Get_size() == 1:
    return x.copy()
  _check_same(comm, x, "broadcast")
  out = x.copy()
  comm.Bcast(_bytes(out), root=root)
  return out


def barrier(processes=None):
  comm = communicator(processes)
  if comm.Get_size() > 1:
    comm.Barrier()


# The SPMD runtime's exchange step, for an axis group that spans processes. The runtime
# combines the blocks of this process's devices in the group first (shared memory), then calls
# this once per process with the combined block; the result is what every device of the group
# gets (the reduction, or the gather of every process's block along axis 0).
_EXCHANGES = {"psum": lambda b, ps: allreduce(b, "sum", ps),
              "pmax": lambda b, ps: allreduce(b, "max", ps),
              "pmin": lambda b, ps: allreduce(b, "min", ps),
              "all_gather": lambda b, ps: allgather(b, ps).reshape((-1,) + b.shape[1:]),
              "psum_scatter": lambda b, ps: reduce_scatter(b, "sum", ps),
              "all_to_all": lambda b, ps: alltoall(b, ps)}


def exchange_across_processes(kind, block, processes=None):
  """One MPI call combining this process's already-combined `block` with the other processes'
  of the group: `kind` is psum/pmax/pmin, all_gather (blocks concatenated on axis 0 in process
  order), psum_scatter (this process's part of the sum along axis 0) or all_to_all."""
  fn = _EXCHANGES.get(kind)
  if fn is None:
    raise ValueError(f"exchange_across_processes: kind must be one of {sorted(_EXCHANGES)}, "
                     f"got {kind!r}")
  return fn(np.asarray(block), processes)


shutdown_hooks.append(_free_group_comms)
