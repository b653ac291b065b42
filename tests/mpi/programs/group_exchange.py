"""Run under `mpiexec -n N`: the SPMD runtime's cross-process exchange step for axis groups of
several devices per process (laid out contiguously and interleaved), against NumPy's result for
every rank; each rank prints `OK <rank>` at the end."""
import os

import numpy as np

import jaxlite as jax
from jaxlite._src.distributed import group_exchange as gx

jax.distributed.initialize()
me, nproc = jax.process_index(), jax.process_count()


def block(r, dtype=np.float32, shape=(8, 2)):
  return ((np.arange(np.prod(shape)).reshape(shape) * (r + 1) + r) % 11 - 5).astype(dtype)


def check(layout_name, rank_process):
  size = len(rank_process)
  mine = [r for r, p in enumerate(rank_process) if p == me]
  allb = np.stack([block(r) for r in range(size)])
  local = {r: block(r) for r in mine}
  for kind, want in (("psum", lambda r: allb.sum(0)), ("pmax", lambda r: allb.max(0)),
                     ("pmin", lambda r: allb.min(0)), ("all_gather", lambda r: allb)):
    got = gx.exchange(kind, local, rank_process)
    for r in mine:
      np.testing.assert_array_equal(got[r], want(r), err_msg=f"{layout_name} {kind} rank {r}")
  c = 8 // size
  got = gx.exchange("psum_scatter", local, rank_process)
  for r in mine:
    np.testing.assert_array_equal(got[r], allb.sum(0)[r * c:(r + 1) * c], err_msg=layout_name)
  got = gx.exchange("all_to_all", local, rank_process)
  for r in mine:
    want = np.concatenate([allb[s][r * c:(r + 1) * c] for s in range(size)])
    np.testing.assert_array_equal(got[r], want, err_msg=f"{layout_name} all_to_all rank {r}")
  for perm in ([(r, (r + 1) % size) for r in range(size)], [(0, size - 1)]):
    got = gx.exchange("ppermute", local, rank_process, perm=perm)
    src = {d: s for s, d in perm}
    for r in mine:
      want = allb[src[r]] if r in src else np.zeros_like(allb[0])
      np.testing.assert_array_equal(got[r], want, err_msg=f"{layout_name} ppermute {perm}")


for per in (1, 2):
  check(f"contiguous x{per}", [p for p in range(nproc) for _ in range(per)])
  check(f"interleaved x{per}", [p for _ in range(per) for p in range(nproc)])
  # point to point on the SPMD communicator, as groups among several of one collective do
  for layout in ([p for p in range(nproc) for _ in range(per)],
                 [p for _ in range(per) for p in range(nproc)]):
    mine = [r for r, p in enumerate(layout) if p == me]
    for tag in (3, 4):
      got = gx.gather_p2p({r: block(r + tag) for r in mine}, layout, tag)
      for r in range(len(layout)):
        np.testing.assert_array_equal(got[r], block(r + tag), err_msg=f"p2p {layout} {r}")
# The group layout read off a mesh, as the runtime will ask for it.
from jaxlite.sharding import Mesh  # noqa: E402

devs = np.array(jax.devices()).reshape(nproc, -1)
mesh = Mesh(devs, ("p", "l"))
assert gx.rank_processes(mesh, ("p",), {"l": 0}) == list(range(nproc))
assert gx.rank_processes(mesh, ("l",), {"p": me}) == [me] * devs.shape[1]
assert gx.rank_processes(mesh, ("p", "l"), {}) == [p for p in range(nproc)
                                                   for _ in range(devs.shape[1])]
assert gx.spans_processes(gx.rank_processes(mesh, ("p",), {"l": 0})) == (nproc > 1)
assert not gx.spans_processes(gx.rank_processes(mesh, ("l",), {"p": me}))
os.write(1, f"OK {me}\n".encode())  # one write: ranks share the pipe
