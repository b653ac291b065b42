"""`jaxlite.install_as_jax()`, `python -m jaxlite` and the PYTHONPATH shim: `import jax` gives
jaxlite, submodules resolve to jaxlite's, and the real jax already imported is refused.
Each case runs in a fresh interpreter, since installing changes the process's imports."""
import os
import subprocess
import sys
import textwrap

import pytest

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

PROBE = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp, jaxlite
    import jax.extend.core, jax.interpreters.ad, jax._src.traceback_util as tu
    from jax import lax
    assert jax.numpy is jaxlite.numpy and jax.extend.core is jaxlite.extend.core
    assert jax.jit is jaxlite.jit and lax is jaxlite.lax
    assert tu.api_boundary(len)([1, 2]) == 2
    print(jax.__version__, jax.__version_info__, float(jax.grad(jnp.sin)(0.0)), sys.argv[1:])
""")


def _run(args, env_extra=None, stdin=None):
  env = {**os.environ, "PYTHONPATH": SRC, **(env_extra or {})}
  return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                        timeout=120, input=stdin)


def _script(tmp_path, body):
  path = tmp_path / "prog.py"
  path.write_text(body)
  return str(path)


def test_install_as_jax_in_code_and_idempotent():
  code = "import jaxlite; jaxlite.install_as_jax(); jaxlite.install_as_jax()\n" + PROBE
  r = _run(["-c", code])
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "0.10.2 (0, 10, 2) 1.0 []"


def test_python_m_jaxlite_runs_script_with_args(tmp_path):
  r = _run(["-m", "jaxlite", _script(tmp_path, PROBE), "a", "--b"])
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "0.10.2 (0, 10, 2) 1.0 ['a', '--b']"


def test_python_m_jaxlite_runs_module(tmp_path):
  (tmp_path / "probe_mod.py").write_text(PROBE)
  r = _run(["-m", "jaxlite", "-m", "probe_mod", "x"], {"PYTHONPATH": f"{SRC}:{tmp_path}"})
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip().endswith("['x']")


def test_shim_on_pythonpath_is_the_environment_switch(tmp_path):
  shim = _run(["-m", "jaxlite", "--shim-path"]).stdout.strip()
  assert os.path.isfile(os.path.join(shim, "jax", "__init__.py"))
  r = _run([_script(tmp_path, PROBE), "y"], {"PYTHONPATH": f"{shim}:{SRC}"})
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "0.10.2 (0, 10, 2) 1.0 ['y']"


def test_missing_submodule_is_an_import_error():
  code = ("import jaxlite; jaxlite.install_as_jax()\n"
          "try:\n  import jax.no_such_module\nexcept ImportError as e:\n  print(type(e).__name__)")
  r = _run(["-c", code])
  assert r.stdout.strip() == "ModuleNotFoundError", r.stderr


def test_refuses_when_real_jax_is_imported():
  pytest.importorskip("jax")  # the real one must exist to be imported first
  r = _run(["-c", "import jax\nimport jaxlite\njaxlite.install_as_jax()"])
  assert r.returncode != 0
  assert "RuntimeError: jaxlite.install_as_jax(): the real `jax` is already imported" in r.stderr


def test_usage_without_arguments():
  r = _run(["-m", "jaxlite"])
  assert r.returncode == 2 and "usage: python -m jaxlite script.py" in r.stderr
