"""Run under `mpiexec -n N`: the MPI collectives on NumPy buffers against NumPy's result of the
same program on one process; each rank prints `OK <rank>` at the end."""
import os

import numpy as np

import jaxlite as jax
from jaxlite._src.distributed import mpi_collectives as mc

jax.distributed.initialize()
rank, size = jax.process_index(), jax.process_count()


def data(p, dtype, shape=(2 * 4, 3)):
  """What process p contributes (every process can compute every other's)."""
  v = (np.arange(np.prod(shape)).reshape(shape) * (p + 1)) % 7 - 3
  return v.astype(dtype)


for dtype in (np.float32, np.float64, np.int32, np.int64, np.float16, np.complex64, np.uint8):
  allv = np.stack([data(p, dtype) for p in range(size)])
  for op, ref in (("sum", allv.sum(0, dtype=dtype)), ("max", allv.max(0)), ("min", allv.min(0))):
    if dtype == np.complex64 and op != "sum":
      continue
    got = mc.allreduce(data(rank, dtype), op)
    assert got.dtype == dtype, (dtype, got.dtype)
    np.testing.assert_array_equal(got, ref, err_msg=f"allreduce {op} {dtype}")
  np.testing.assert_array_equal(mc.allgather(data(rank, dtype)), allv)
  if (2 * 4) % size == 0:
    k = 8 // size
    np.testing.assert_array_equal(mc.reduce_scatter(data(rank, dtype)),
                                  allv.sum(0, dtype=dtype)[rank * k:(rank + 1) * k])
    # all_to_all: block j of process i goes to process j, landing as its block i.
    got = mc.alltoall(data(rank, dtype))
    want = np.concatenate([data(p, dtype)[rank * k:(rank + 1) * k] for p in range(size)])
    np.testing.assert_array_equal(got, want)

buf = np.empty((8, 3), np.float32)
assert mc.allreduce(data(rank, np.float32), "sum", out=buf) is buf
np.testing.assert_array_equal(buf, sum(data(p, np.float32) for p in range(size)))
try:
  mc.allreduce(data(rank, np.float32), out=np.empty((8, 3), np.float64))
except ValueError as e:
  assert "out must be a contiguous float32[8, 3] buffer" in str(e), e
else:
  raise AssertionError("a wrong out buffer did not raise")

b = np.array([rank % 2 == 0, rank == 0])
np.testing.assert_array_equal(mc.allreduce(b, "max"), [True, True])
np.testing.assert_array_equal(mc.allreduce(b, "min"), [size == 1, size == 1])

# ppermute: a ring, and a partial permutation (receivers of nothing get zeros, as in JAX)
ring = [(p, (p + 1) % size) for p in range(size)]
np.testing.assert_array_equal(mc.ppermute(data(rank, np.float32), ring),
                              data((rank - 1) % size, np.float32))
partial = [(0, size - 1)]
got = mc.ppermute(data(rank, np.float32), partial)
want = data(0, np.float32) if rank == size - 1 else np.zeros_like(got)
np.testing.assert_array_equal(got, want)
got = mc.sendrecv(np.full(3, rank), dest=(rank + 1) % size, source=(rank - 1) % size)
np.testing.assert_array_equal(got, np.full(3, (rank - 1) % size))
np.testing.assert_array_equal(mc.broadcast(np.full(2, rank + 1.0), root=size - 1), [size] * 2)

# A sub-group communicator (the even processes), made once and reused.
evens = tuple(range(0, size, 2))
if rank in evens:
  got = mc.allreduce(np.array([rank]), "sum", processes=evens)
  assert got[0] == sum(evens)
  assert mc.communicator(evens) is mc.communicator(evens)
mc.barrier()

# The exchange step the SPMD runtime delegates to: one call per process.
blk = np.full((2, 2), float(rank))
np.testing.assert_array_equal(mc.exchange_across_processes("psum", blk),
                              np.full((2, 2), float(sum(range(size)))))
np.testing.assert_array_equal(mc.exchange_across_processes("all_gather", blk),
                              np.repeat(np.arange(size, dtype=float), 2)[:, None] * [1, 1])

# Large results come from a pool: a buffer is handed out again only once nothing refers to it,
# and in-place reduction writes into the caller's buffer.
big = np.full(1 << 19, rank + 1, np.float32)  # 2 MiB
first = mc.allreduce(big)
second = mc.allreduce(big * 2)
view = second[10:20]
del second
third = mc.allreduce(big * 3)
assert np.shares_memory(third, view) is False and third is not first
tot = size * (size + 1) / 2
assert (first == tot).all() and (view == 2 * tot).all() and (third == 3 * tot).all()
del view, third
fourth = mc.allreduce(big * 4)  # reuses a freed pool buffer
assert (fourth == 4 * tot).all() and (first == tot).all()
mine = np.full(8, rank + 1.0)
assert mc.allreduce(mine, "max", inplace=True) is mine and (mine == size).all()

# Mismatched programs raise in every process instead of deadlocking.
if size > 1:
  try:
    mc.allreduce(np.zeros(3 + rank, np.float32))
  except ValueError as e:
    assert "different shapes or dtypes" in str(e), e
  else:
    raise AssertionError("mismatched allreduce did not raise")
  try:
    mc.allgather(np.zeros(3, np.float32 if rank else np.float64))
  except ValueError as e:
    assert "different shapes or dtypes" in str(e), e
  else:
    raise AssertionError("mismatched allgather did not raise")
  # the communicator still works afterwards
  assert mc.allreduce(np.ones(1), "sum")[0] == size
os.write(1, f"OK {rank}\n".encode())  # one write: ranks share the pipe
