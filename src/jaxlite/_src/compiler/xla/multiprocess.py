"""XLA's CPU client across processes: the xla backend under `jaxlite.distributed` (MPI).

Each process of an MPI launch gets a CPU client that knows every process's devices (ids
`process_index * 2048 + local index`, as jaxlite's NumPy devices and JAX's CPU client number
them), so that a program sharded over a mesh spanning processes is compiled by XLA's SPMD
partitioner for the global device assignment and run by every process on its own devices, the
collectives crossing processes inside XLA (spmd.py's `SpmdExecutable.run_blocks`).

Chosen: jaxlib's distributed runtime (the coordination service JAX's `jax.distributed.initialize`
starts: one service in process 0, a client in every process) for the global topology, and gloo's
TCP collectives (`make_gloo_tcp_collectives`, JAX's default `jax_cpu_collectives_implementation`)
for the data. Why not jaxlib's MPI collectives (`make_mpi_collectives`): they `dlopen` an MPI
library by name and call `MPI_Init` themselves, which must then be the very library mpi4py
loaded (the MPICH wheel's, or the site's MPI on a cluster) and agree with mpi4py's
initialization and thread level; gloo needs nothing but TCP between the processes, so it works
whichever MPI launched them, and MPI keeps carrying only what jaxlite's own code sends. Why not
jaxlite's MPI exchange between per-process executables: the collectives would leave the
compiled program (one executable per collective segment, each boundary a host round trip),
which is what running on XLA is meant to avoid. The service's address is rank 0's free TCP port,
sent to the others over MPI, so a launch needs no coordinator address (as before).

Only `jaxlite.distributed.initialize` calls `join` (with the xla backend the default on the CPU
and more than one process); `shutdown` calls `leave` before the communicator is freed.
"""
from __future__ import annotations

import socket

_state = {"client": None, "service": None, "cpu": None, "process_id": 0, "comm": None,
          "devices": None}


def active() -> bool:
  """Whether this process's CPU client spans several processes."""
  return _state["client"] is not None


def join(comm, process_id: int, num_processes: int, local_count: int,
         timeout_s: int = 300) -> None:
  """Starts the coordination service (process 0), connects this process's client to it and
  makes the CPU client over every process's devices (a collective step: every process of
  `comm` calls it). The CPU client is made here, not on first use, because making it is itself
  a collective exchange of the topology: a process that never touched XLA would hang the others.
  """
  from jaxlite._src.compiler.xla import client as client_lib
  _jax = client_lib.jax_ext()
  address = None
  one_host = len(set(comm.allgather(socket.gethostname()))) == 1
  if process_id == 0:
    host = "127.0.0.1" if one_host else socket.gethostname()
    with socket.socket() as s:  # a free port, released just before the service binds it
      s.bind(("", 0))
      port = s.getsockname()[1]
    address = f"{host}:{port}"
    _state["service"] = _jax.get_distributed_runtime_service(
        f"[::]:{port}" if host != "127.0.0.1" else address, num_processes)
  address = comm.bcast(address, root=0)
  dist = _jax.get_distributed_runtime_client(address, process_id, init_timeout=timeout_s)
  dist.connect()
  _state.update(client=dist, process_id=process_id, comm=comm)
  collectives = _jax.make_gloo_tcp_collectives(distributed_client=dist)
  client_lib.set_cpu_client_options(distributed_client=dist, node_id=process_id,
                                    num_nodes=num_processes, collectives=collectives,
                                    num_devices=local_count)
  client_lib.get_client("cpu")


def leave() -> None:
  """Disconnects this process's client, then (once every process has) stops the service."""
  dist, comm = _state["client"], _state["comm"]
  if dist is None:
    return
  dist.shutdown()  # the coordination service's own barrier: every client leaves together
  comm.Barrier()
  if _state["service"] is not None:
    _state["service"].shutdown()
  _state.update(client=None, service=None, comm=None)


def global_devices(backend) -> list:
  """Every process's devices of `backend`'s client (XlaDevices; this process's are the
  backend's own objects), process 0's first."""
  found = _state["devices"]
  if found is None or found[0] is not backend:
    local = {d.id: d for d in backend.devices()}
    make = type(next(iter(local.values())))  # backend.py's XlaDevice
    found = _state["devices"] = (backend, [local.get(p.id) or make(p, backend)
                                           for p in backend.client.devices()])
  return found[1]
