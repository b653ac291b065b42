"""Run WITHOUT mpiexec: initialize's argument errors outside an MPI launch, then a one-process
initialize with explicit arguments; prints OK."""
import numpy as np

import jaxlite as jax


def raises(exc, text, fn, *a, **k):
  try:
    fn(*a, **k)
  except exc as e:
    assert text in str(e), (text, str(e))
    return
  raise AssertionError(f"{fn.__name__}{a}{k} did not raise {exc.__name__}")


raises(ValueError, "coordinator_address should be defined.", jax.distributed.initialize)
raises(ValueError, "Number of processes must be defined.", jax.distributed.initialize,
       "localhost:1234")
raises(ValueError, "The process id of the current process must be defined.",
       jax.distributed.initialize, "localhost:1234", 1)
raises(ValueError, "with process_id < num_processes. Got process_id=2, num_processes=2.",
       jax.distributed.initialize, "localhost:1234", 2, 2)
raises(TypeError, "num_processes must be a positive int.", jax.distributed.initialize,
       "localhost:1234", 2.0, 0)
raises(RuntimeError, "needs an MPI launch", jax.distributed.initialize, "localhost:1234", 2, 0)
raises(ValueError, "cluster_detection_method must be one of", jax.distributed.initialize,
       cluster_detection_method="slurm-ish")
jax.distributed.initialize("localhost:1234", 1, 0)
raises(RuntimeError, "should only be called once", jax.distributed.initialize,
       "localhost:1234", 1, 0)
assert jax.process_count() == 1 and jax.devices() == jax.local_devices()
from jaxlite.experimental import multihost_utils as mu  # noqa: E402

np.testing.assert_array_equal(mu.process_allgather(np.arange(3)), [[0, 1, 2]])
np.testing.assert_array_equal(mu.broadcast_one_to_all(np.arange(3)), [0, 1, 2])
mu.sync_global_devices("one")
jax.distributed.shutdown()
assert not jax.distributed.is_initialized()
print("OK", flush=True)
