"""jaxlite.distributed over MPI: programs under `mpiexec -n 2` and `-n 4` (tests/mpi/programs)
checked against the values of the same program on one process, and a failing rank's abort.

They skip, saying why, where the `mpi` extra (mpi4py and an `mpiexec`) is not installed:
`pip install -e '.[mpi]'`. Every launch has a timeout, so a hang fails instead of blocking CI.
"""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = pathlib.Path(__file__).parent / "programs"
MPIEXEC = shutil.which("mpiexec")
HAVE_MPI = MPIEXEC is not None and importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(
    not HAVE_MPI, reason="the `mpi` extra is not installed (needs mpi4py and mpiexec on PATH: "
    "pip install -e '.[mpi]')")
# The variables a launcher sets: a test run inside an MPI job must not pass them on.
_LAUNCH_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD")


def _env():
  env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_VARS}
  env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
  env["OPENBLAS_NUM_THREADS"] = "1"
  # Harmless for MPICH; lets a system Open MPI's mpiexec run as root and place 4 ranks on 2 cores.
  env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
  env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
  env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
  return env


def _launch(n, program, *args, timeout=240):
  cmd = [MPIEXEC, "-n", str(n), sys.executable, str(PROGRAMS / program), *args]
  start = time.monotonic()
  p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(),
                     cwd=ROOT)
  return p, time.monotonic() - start


def _ok_ranks(p):
  return sorted(int(line.split()[1]) for line in p.stdout.splitlines() if line.startswith("OK "))


@needs_mpi
@pytest.mark.parametrize("n,local", [(2, 2), (4, 1), (1, 2)])
def test_devices_global_arrays_multihost_utils(n, local):
  p, _ = _launch(n, "basic.py", str(local))
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_mpi_collectives(n):
  p, _ = _launch(n, "collectives.py")
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_spmd_group_exchange_across_processes(n):
  p, _ = _launch(n, "group_exchange.py")
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_shard_map_collectives_over_axes_spanning_processes(n):
  p, _ = _launch(n, "shard_map_across.py")
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_failing_rank_aborts_the_job_with_its_name(n):
  # Abort semantics: the failing rank's excepthook calls MPI_Abort, the launcher ends the
  # ranks blocked in the Allreduce. Bounded: far below the launch timeout.
  p, took = _launch(n, "fault.py", timeout=120)
  assert p.returncode != 0
  assert f"process {n - 1} of {n} failed with ValueError: boom in rank {n - 1}" in p.stderr, \
      p.stderr
  assert "UNREACHABLE" not in p.stdout
  assert took < 60, took


@needs_mpi
def test_rank_leaving_early_aborts_the_job_at_its_shutdown_timeout():
  # Watchdog: the exit-time shutdown barrier waits shutdown_timeout_seconds (3 s here).
  p, took = _launch(2, "fault_exit.py", timeout=120)
  assert p.returncode != 0
  assert "process 1 of 2 reached shutdown (or the end of its program), but the others did " \
      "not within 3 s" in p.stderr, p.stderr
  assert "UNREACHABLE" not in p.stdout
  assert took < 60, took


@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 4])
def test_data_parallel_example_losses_match_one_process(n):
  ref = subprocess.run([sys.executable, str(ROOT / "examples" / "data_parallel_mpi.py")],
                       capture_output=True, text=True, timeout=240, env=_env(), cwd=ROOT)
  assert ref.returncode == 0, ref.stderr
  cmd = [MPIEXEC, "-n", str(n), sys.executable, str(ROOT / "examples" / "data_parallel_mpi.py")]
  p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=_env(), cwd=ROOT)
  assert p.returncode == 0, p.stdout + p.stderr
  losses = [line for line in p.stdout.splitlines() if line.startswith("step")]
  assert len(losses) >= 5 and losses == [line for line in ref.stdout.splitlines()
                                          if line.startswith("step")], (p.stdout, ref.stdout)


def test_initialize_outside_an_mpi_launch():
  # Needs no MPI: argument errors as JAX's, then a one-process initialize.
  p = subprocess.run([sys.executable, str(PROGRAMS / "single.py")], capture_output=True,
                     text=True, timeout=120, env=_env(), cwd=ROOT)
  assert p.returncode == 0, p.stdout + p.stderr
  assert p.stdout.strip() == "OK"


def test_import_jaxlite_does_not_import_mpi4py():
  code = ("import sys, jaxlite, jaxlite.distributed, jaxlite.experimental.multihost_utils;"
          "import jaxlite.numpy as jnp; jnp.ones(2) + 1; print('mpi4py' in sys.modules)")
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                     env=_env(), cwd=ROOT)
  assert p.returncode == 0, p.stderr
  assert p.stdout.strip() == "False"


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_sharded_jit_over_a_mesh_spanning_processes(n):
  p, _ = _launch(n, "sharded_jit.py")
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_eager_ops_on_arrays_sharded_across_processes(n):
  p, _ = _launch(n, "eager_across.py")
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_repeated_jitted_shard_map_with_one_device_per_process(n):
  p, _ = _launch(n, "jit_one_device.py")
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr


@needs_mpi
@pytest.mark.parametrize("n,local", [(2, 1), (4, 1), (2, 2)])
def test_psums_at_one_point_are_packed_into_one_allreduce_per_dtype(n, local):
  p, _ = _launch(n, "fused_psums.py", str(local))
  assert p.returncode == 0, p.stdout + p.stderr
  assert _ok_ranks(p) == list(range(n)), p.stdout + p.stderr
