"""Shared fixtures: the optional real-JAX oracle, x64 toggling that always restores, and
jaxpr type checks after the compiler passes for the whole session."""
import contextlib
import os

import pytest

# The background XLA tier (compiler/xla_tier.py) swaps a hot program's executable for XLA's,
# whose floats differ from the NumPy tiers' by ulps: off in the suite (and its child
# processes), so that every test sees the tier it asks for; tests/test_xla_tier.py opts in.
os.environ.setdefault("JAXLITE_XLA_TIER", "0")

import jaxlite  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _enable_checks():
  """Every jaxpr the compiler's passes produce is type-checked (`core.check_jaxpr`) in tests."""
  old = jaxlite.config.jax_enable_checks
  jaxlite.config.update("jax_enable_checks", True)
  yield
  jaxlite.config.update("jax_enable_checks", old)


def oracle():
  """Real JAX if installed (test oracle only), else skip. The oracle computes on its CPU client
  unless JAX_PLATFORMS says otherwise: on an accelerator machine jaxlite holds the chip, which
  one client at a time may open."""
  jax = pytest.importorskip("jax")
  if not os.environ.get("JAX_PLATFORMS") and jax.config.jax_platforms is None:
    jax.config.update("jax_platforms", "cpu")
  return jax


@contextlib.contextmanager
def configured(config=None, **options):
  """Sets `options` on `config` (jaxlite's by default; pass `jax.config` for the oracle's) for
  the block and restores the old values, even when the block raises."""
  config = jaxlite.config if config is None else config
  old = {name: getattr(config, name) for name in options}
  try:
    for name, value in options.items():
      config.update(name, value)
    yield
  finally:
    for name, value in old.items():
      config.update(name, value)


def x64(enabled: bool = True):
  return configured(jax_enable_x64=enabled)


def xla_is_default() -> bool:
  """The suite runs on the xla backend (`JAXLITE_BACKEND=xla`): where XLA's own results
  legitimately differ from the NumPy backend's, tests compare against JAX's instead."""
  from jaxlite._src.compiler import backend
  return backend.installed().name.startswith("xla")


def pytest_configure(config):
  config.addinivalue_line(
      "markers", "numpy_backend(reason): the test checks the NumPy backend's own machinery (its "
      "generated code, tiers, fast paths, bit-for-bit identities between its paths): it runs on "
      "the NumPy backend whichever backend the suite runs on (JAXLITE_BACKEND=xla included)")


@pytest.fixture(autouse=True)
def _numpy_backend_marker(request):
  """Runs a test marked `numpy_backend` on the NumPy backend (see pytest_configure)."""
  marker = request.node.get_closest_marker("numpy_backend")
  if marker is None or not xla_is_default():
    yield
    return
  assert marker.args or marker.kwargs.get("reason"), "numpy_backend(reason) needs its reason"
  with configured(jax_jaxlite_backend="numpy"):
    yield


@pytest.fixture
def on_xla():
  """The xla backend as the default for the test (restores the previous choice)."""
  with configured(jax_jaxlite_backend="xla"):
    yield


@pytest.fixture
def on_numpy():
  with configured(jax_jaxlite_backend="numpy"):
    yield


@pytest.fixture
def soak_selected(request):
  """Skips a soak test (minutes, `@pytest.mark.soak`) unless `-m soak` selected it."""
  if "soak" not in (request.config.getoption("-m") or ""):
    pytest.skip("soak test: run with -m soak")


def run_json_program(program: str, mod: str, **env_vars) -> object:
  """Runs `program` in a fresh interpreter with argv[1] = `mod` ("jaxlite" or "jax") and returns
  the JSON its last stdout line holds: the multi-device tables set the device count per process."""
  import json
  import os
  import subprocess
  import sys
  env = dict(os.environ, OPENBLAS_NUM_THREADS="1", **env_vars)
  r = subprocess.run([sys.executable, "-c", program, mod], capture_output=True, text=True,
                     env=env, timeout=600)
  assert r.returncode == 0, r.stderr[-3000:]
  return json.loads(r.stdout.splitlines()[-1])


_program_runs: dict = {}


def run_json_program_once(program: str, mod: str, **env_vars) -> object:
  """`run_json_program`, run once per (program, module, environment) in a test session: the
  tests of one module read different keys of one run."""
  key = (program, mod, tuple(sorted(env_vars.items())))
  if key not in _program_runs:
    _program_runs[key] = run_json_program(program, mod, **env_vars)
  return _program_runs[key]


def printed_output_tests(program: str, expected: dict, **env_vars):
  """The tests of a module that runs a documentation page's snippets in a fresh process
  (`program` prints the JSON of each case's printed output): jaxlite prints what JAX 0.10.2
  printed (`expected`, recorded), and the record is re-checked against real JAX when installed.
  `env_vars` go to both processes. Bind the three results to module names for pytest:
  `ours, test_prints_what_jax_printed, test_recorded_outputs_are_jax_s = printed_output_tests(...)`."""
  @pytest.fixture(scope="module", name="ours")
  def ours():
    return run_json_program(program, "jaxlite", **env_vars)

  @pytest.mark.parametrize("name", sorted(expected))
  def test_prints_what_jax_printed(ours, name):
    assert ours[name] == expected[name]

  def test_recorded_outputs_are_jax_s():
    oracle()
    assert run_json_program(program, "jax", **env_vars) == expected

  return ours, test_prints_what_jax_printed, test_recorded_outputs_are_jax_s


def src_module_names(skip=(".distributed",)) -> list:
  """Every module of jaxlite._src by its file. pkgutil.walk_packages does not descend into
  namespace packages (lax/, numpy/, compiler/, interpreters/ have no __init__.py), so walking
  with it misses the modules nothing imports eagerly, and the primitives they define."""
  import pathlib
  root = pathlib.Path(jaxlite.__file__).parent / "_src"
  names = []
  for path in sorted(root.rglob("*.py")):
    parts = ("jaxlite", "_src") + path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
      parts = parts[:-1]
    name = ".".join(parts)
    if not any(s in name for s in skip):
      names.append(name)
  return names
