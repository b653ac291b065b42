"""`jax.distributed.initialize/shutdown/is_initialized` over MPI: joins the processes of an
`mpiexec`/`srun` launch, fixes the global device list and makes the one communicator reused.

Transport. Processes meet through MPI (mpi4py), never a home-made socket protocol, so the
coordinator address JAX needs is informational here: inside an MPI launch every argument may be
omitted (rank and size come from MPI), and explicit ones must agree with MPI's. mpi4py is
imported only here, when `initialize` runs, so `import jaxlite` never loads it.

Faults (abort semantics). After `initialize`, an exception that escapes a process's program
(`sys.excepthook`, `threading.excepthook`) prints its traceback and a line naming the failed
process, then calls `MPI_Abort` on the world communicator: the launcher (mpiexec/srun) ends every
other process, including those blocked in a collective, so the job ends in bounded time with a
non-zero status instead of hanging. A process that ends without raising (returns, or
`sys.exit`) while others still wait in a collective is caught at exit: `shutdown` (also run at
interpreter exit) is a barrier that waits at most `shutdown_timeout_seconds`, then aborts the job
naming the process. A process that hangs forever without exiting is not detected.
"""
from __future__ import annotations

import atexit
import os
import socket
import sys
import threading

from jaxlite._src.base import devices

# Environment variables that the common launchers set in every process they start.
_MPI_LAUNCH_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                    "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD")
_DETECTION_METHODS = (None, "mpi4py", "deactivate")


class _State:
  comm = None            # this library's duplicate of MPI.COMM_WORLD (None: not initialized)
  spmd_comm = None       # another duplicate, for the SPMD runtime's tagged exchanges
  MPI = None             # the mpi4py.MPI module, once imported
  process_id = 0
  num_processes = 1
  coordinator_address = None
  partition_index = None
  local_device_ids = None
  hooks = None           # the previous (sys.excepthook, threading.excepthook)
  shutdown_timeout = 300.0


global_state = _State()
# Run by `shutdown` before the world communicator is freed; filled by the modules above that
# hold communicators of their own (mpi_collectives), so this module never imports them.
shutdown_hooks: list = []
# Run by `initialize` once the processes are joined (more than one), with (communicator,
# process id, process count, local device count, timeout in s): filled by
# compiler/xla/platforms.py, which with the xla backend the default makes XLA's CPU client
# over every process's devices (compiler/xla/multiprocess.py).
joined_hooks: list = []


def in_mpi_launch() -> bool:
  """Whether this process was started by an MPI launcher (without importing mpi4py)."""
  return any(v in os.environ for v in _MPI_LAUNCH_VARS)


def _import_mpi():
  try:
    from mpi4py import MPI
  except ImportError as e:
    raise RuntimeError(
        "jaxlite.distributed.initialize: jaxlite joins processes through MPI, which needs "
        "mpi4py: `pip install 'jaxlite[mpi]'` (mpi4py and the MPICH wheel, which provides "
        f"mpiexec) ({e})") from e
  return MPI


def initialize(coordinator_address: str | None = None,
               num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids=None,
               cluster_detection_method: str | None = None,
               initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None,
               slice_index: int | None = None,
               partition_index: int | None = None):
  """Joins this process to the others of its MPI launch (JAX's signature; inside `mpiexec`
  every argument may be omitted). Call it before anything creates devices or arrays."""
  if devices._backend_initialized:
    raise RuntimeError(
        "jax.distributed.initialize() must be called before any JAX calls that might "
        "initialise the XLA backend. This includes any computation, but also calls to "
        "jax.devices, jax.device_put, and others.")
  if global_state.comm is not None:
    raise RuntimeError("distributed.initialize should only be called once.")
  if cluster_detection_method not in _DETECTION_METHODS:
    raise ValueError(
        f"jaxlite.distributed.initialize: cluster_detection_method must be one of "
        f"{_DETECTION_METHODS} (jaxlite detects MPI launches), got {cluster_detection_method!r}")
  coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
  if isinstance(local_device_ids, int):
    local_device_ids = [local_device_ids]
  if local_device_ids is None and (env_ids := os.environ.get("JAX_LOCAL_DEVICE_IDS")):
    local_device_ids = [int(i) for i in env_ids.split(",")]
  if partition_index is None:
    partition_index = slice_index

  use_mpi = cluster_detection_method == "mpi4py" or (
      cluster_detection_method != "deactivate" and in_mpi_launch())
  MPI = rank = size = None
  if use_mpi:
    MPI = _import_mpi()
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if coordinator_address is None:
      coordinator_address = world.bcast(socket.gethostname() if rank == 0 else None, root=0)
    num_processes = size if num_processes is None else num_processes
    process_id = rank if process_id is None else process_id

  if coordinator_address is None:
    raise ValueError("coordinator_address should be defined.")
  if num_processes is None:
    raise ValueError("Number of processes must be defined.")
  if process_id is None:
    raise ValueError("The process id of the current process must be defined.")
  if not isinstance(process_id, int):
    raise TypeError("process_id must be a nonnegative int. "
                    f"Got process_id={process_id} of type {type(process_id)}.")
  if not isinstance(num_processes, int):
    raise TypeError("num_processes must be a positive int. "
                    f"Got num_processes={num_processes} of type {type(num_processes)}.")
  if not 0 <= process_id < num_processes:
    raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                     f"num_processes. Got process_id={process_id}, num_processes={num_processes}.")
  if use_mpi and (num_processes, process_id) != (size, rank):
    raise ValueError(
        f"jaxlite.distributed.initialize: num_processes={num_processes}, "
        f"process_id={process_id} disagree with the MPI launch, where this process is rank "
        f"{rank} of {size}; omit them or pass MPI's values")
  if not use_mpi and num_processes > 1:
    raise RuntimeError(
        f"jaxlite.distributed.initialize: num_processes={num_processes} needs an MPI launch "
        "(jaxlite joins processes through MPI): start the program with `mpiexec -n "
        f"{num_processes} python ...` or srun, with `pip install 'jaxlite[mpi]'`")

  n_local = devices._requested_count()
  if local_device_ids is not None:
    local_device_ids = [int(i) for i in local_device_ids]
    bad = [i for i in local_device_ids if not 0 <= i < n_local]
    if bad or len(set(local_device_ids)) != len(local_device_ids) or not local_device_ids:
      raise ValueError(
          f"jaxlite.distributed.initialize: local_device_ids must be distinct indices of this "
          f"process's {n_local} CPU devices (jax_num_cpu_devices), got {local_device_ids}")
    n_local = len(local_device_ids)

  comm = None
  if MPI is not None:
    comm = MPI.COMM_WORLD.Dup()  # the one communicator every later collective reuses
    spmd_comm = comm.Dup()  # the SPMD runtime's point-to-point exchanges (own tag space)
    counts = comm.allgather(n_local)
    partitions = comm.allgather(partition_index)
    if len({p is None for p in partitions}) > 1:
      comm.Free()
      raise ValueError("jaxlite.distributed.initialize: partition_index must be given by every "
                       f"process or by none; got {partitions} (by process)")
  else:
    counts = [n_local]
  global_state.MPI, global_state.comm = MPI, comm if comm is not None else _LocalComm()
  global_state.spmd_comm = spmd_comm if comm is not None else None
  global_state.process_id, global_state.num_processes = process_id, num_processes
  global_state.coordinator_address = coordinator_address
  global_state.partition_index = partition_index
  global_state.local_device_ids = local_device_ids
  devices._topology = (process_id, list(counts))
  global_state.shutdown_timeout = float(shutdown_timeout_seconds)
  if MPI is not None:
    _install_abort_hooks()
    atexit.register(shutdown)  # runs before mpi4py's MPI_Finalize (registered earlier)
    if num_processes > 1:
      for join in joined_hooks:  # the xla backend's CPU client across the processes
        join(comm, process_id, num_processes, n_local, int(shutdown_timeout_seconds))
      # Making that client is a step every process takes here, together; it is not a JAX call
      # that initialises the backend (JAX makes its client lazily, after initialize), so a
      # second initialize says "only once", as JAX's does.
      devices._backend_initialized = False


class _LocalComm:
  """Stands for the communicator of a one-process run started without an MPI launcher."""
  def Get_rank(self):
    return 0

  def Get_size(self):
    return 1


def is_initialized() -> bool:
  """Whether `initialize` has joined this process to the others."""
  return global_state.comm is not None


def shutdown():
  """Leaves the distributed system (waits for every process, frees the communicator). Does
  nothing when it is not running."""
  comm = global_state.comm
  if comm is None:
    return
  if global_state.MPI is not None:
    _timed_barrier(comm, global_state.shutdown_timeout)
    for free in shutdown_hooks:  # mpi_collectives' group communicators, when it was loaded
      free()
    global_state.spmd_comm.Free()
    comm.Free()
    _remove_abort_hooks()
  global_state.comm = None
  global_state.MPI = None


def _timed_barrier(comm, timeout):
  """Waits for every process (MPI_Ibarrier, polled), or aborts the job after `timeout` s."""
  import time
  req = comm.Ibarrier()
  deadline = time.monotonic() + timeout
  pause = 1e-4
  while not req.Test():
    if time.monotonic() > deadline:
      s = global_state
      abort(f"jaxlite.distributed: process {s.process_id} of {s.num_processes} reached "
            f"shutdown (or the end of its program), but the others did not within "
            f"{timeout:g} s (shutdown_timeout_seconds): some process ended early or is stuck; "
            "aborting the MPI job (MPI_Abort)")
    time.sleep(pause)
    pause = min(pause * 2, 0.05)


def abort(message: str, code: int = 1):
  """Ends every process of the job (MPI_Abort) after printing `message` on stderr."""
  sys.stderr.write(message.rstrip("\n") + "\n")
  sys.stderr.flush()
  comm = global_state.comm
  if global_state.MPI is not None and comm is not None:
    comm.Abort(code)


def _failure_line(exc_type, exc):
  s = global_state
  return (f"jaxlite.distributed: process {s.process_id} of {s.num_processes} failed with "
          f"{exc_type.__name__}: {exc}; aborting the MPI job (MPI_Abort) so that the other "
          "processes do not wait for it forever")


def _install_abort_hooks():
  prev_sys, prev_thread = sys.excepthook, threading.excepthook
  global_state.hooks = (prev_sys, prev_thread)

  def sys_hook(exc_type, exc, tb):
    prev_sys(exc_type, exc, tb)
    if not issubclass(exc_type, KeyboardInterrupt):
      abort(_failure_line(exc_type, exc))

  def thread_hook(args):
    prev_thread(args)
    if args.exc_type is not SystemExit:
      abort(_failure_line(args.exc_type, args.exc_value))

  sys.excepthook, threading.excepthook = sys_hook, thread_hook


def _remove_abort_hooks():
  if global_state.hooks is not None:
    sys.excepthook, threading.excepthook = global_state.hooks
    global_state.hooks = None
