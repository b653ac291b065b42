"""Tracebacks as JAX filters them (issue 33): an exception leaving a jit/grad/vmap/lax boundary,
or reaching the top of a script, loses jaxlite's frames under `jax_traceback_filtering`'s
modes; `python -m jaxlite` runs scripts, `-c` and `-m` as `python` does."""
import os
import subprocess
import sys
import textwrap
import traceback

import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite._src.compat import traceback_util

from conftest import configured, oracle

SRC = os.path.dirname(os.path.dirname(os.path.abspath(jaxlite.__file__)))


@pytest.fixture
def mode(request):
  with configured(jax_traceback_filtering=request.param):
    yield request.param


def _branchy(x):
  if x > 0:  # a traced bool: the error the user must see at this line
    return x
  return -x


def _mismatched(w, jnp_):
  return jnp_.dot(w, jnp_.ones(4))


def _frames(e):
  return [(f.filename, f.name) for f in traceback.extract_tb(e.__traceback__)]


def _raise(fn):
  with pytest.raises(Exception) as info:
    fn()
  return info.value


CALLS = {
  "jit": lambda m, jnp_: m.jit(_branchy)(1.0),
  "grad": lambda m, jnp_: m.grad(lambda w: _mismatched(w, jnp_))(jnp_.ones(3)),
  "vmap": lambda m, jnp_: m.vmap(lambda w: _mismatched(w, jnp_))(jnp_.ones((2, 3))),
  "jit-of-grad": lambda m, jnp_: m.jit(m.grad(lambda w: _mismatched(w, jnp_)))(jnp_.ones(3)),
  "cond": lambda m, jnp_: m.lax.cond(True, lambda w: _mismatched(w, jnp_), lambda w: 0.0,
                                     jnp_.ones(3)),
  "make_jaxpr": lambda m, jnp_: m.make_jaxpr(_branchy)(1.0),
}


@pytest.mark.parametrize("mode", ["quiet_remove_frames", "auto"], indirect=True)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_filtered_traceback_holds_the_users_frames_as_jax_does(mode, call):
  jax = oracle()
  ours = _raise(lambda: CALLS[call](jaxlite, jnp))
  theirs = _raise(lambda: CALLS[call](jax, jax.numpy))
  assert not any(f.startswith(SRC) for f, _ in _frames(ours)), _frames(ours)
  here = [n for f, n in _frames(ours) if f == __file__]
  assert here == [n for f, n in _frames(theirs) if f == __file__]
  assert here[-1] in ("_branchy", "_mismatched")  # it ends at the user's line
  assert any("JAX_TRACEBACK_FILTERING=off" in n for n in ours.__notes__)
  assert type(ours).__name__ == type(theirs).__name__


@pytest.mark.parametrize("mode", ["off"], indirect=True)
def test_off_keeps_every_frame(mode):
  e = _raise(lambda: CALLS["jit"](jaxlite, jnp))
  assert any(f.startswith(SRC) for f, _ in _frames(e))
  assert not getattr(e, "__notes__", None)


@pytest.mark.parametrize("mode", ["remove_frames"], indirect=True)
def test_remove_frames_keeps_the_whole_traceback_as_the_cause(mode):
  e = _raise(lambda: CALLS["grad"](jaxlite, jnp))
  assert not any(f.startswith(SRC) for f, _ in _frames(e))
  cause = e.__cause__
  assert type(cause).__name__ == "UnfilteredStackTrace"
  assert any(f.startswith(SRC) for f, _ in _frames(cause))
  assert "The stack trace below excludes JAX-internal frames." in str(cause)


@pytest.mark.parametrize("mode", ["tracebackhide"], indirect=True)
def test_tracebackhide_marks_internal_frames_and_keeps_them(mode):
  e = _raise(lambda: CALLS["jit"](jaxlite, jnp))
  tb, hidden = e.__traceback__, []
  while tb is not None:
    if tb.tb_frame.f_code.co_filename.startswith(SRC):
      hidden.append(tb.tb_frame.f_locals.get("__tracebackhide__", False))
    tb = tb.tb_next
  assert hidden and all(hidden)


def test_flag_takes_jaxs_modes_only():
  for m in traceback_util.MODES:
    jaxlite.config.update("jax_traceback_filtering", m)
  jaxlite.config.update("jax_traceback_filtering", "auto")
  with pytest.raises(ValueError, match="jax_traceback_filtering"):
    jaxlite.config.update("jax_traceback_filtering", "sometimes")


def _python(args, cwd, env_extra=None):
  env = dict(os.environ, PYTHONPATH=SRC, **(env_extra or {}))
  env.pop("JAX_TRACEBACK_FILTERING", None)
  env.update(env_extra or {})
  return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                        env=env, timeout=300)


SCRIPT = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp

    def f(x):
      return jnp.dot(x, jnp.ones(4))

    print("ok", f(jnp.ones(4)))
    jnp.dot(jnp.ones(3), jnp.ones(4))
""")


@pytest.mark.parametrize("launcher", [["-m", "jaxlite"], []])
def test_a_scripts_uncaught_error_ends_at_the_users_line(tmp_path, launcher):
  script = tmp_path / "prog.py"
  script.write_text(SCRIPT if launcher else SCRIPT.replace("import jax\n", "import jaxlite as "
                    "jax\n").replace("import jax.numpy", "import jaxlite.numpy"))
  r = _python([*launcher, str(script)], tmp_path)
  assert r.returncode == 1 and r.stdout.startswith("ok 4.0")
  files = [line for line in r.stderr.splitlines() if line.startswith("  File ")]
  assert files == [f'  File "{script}", line 8, in <module>'], r.stderr
  assert "TypeError: dot_general requires contracting dimensions" in r.stderr
  off = _python([*launcher, str(script)], tmp_path, {"JAX_TRACEBACK_FILTERING": "off"})
  assert "jaxlite" in off.stderr and "runpy" not in off.stderr


def test_python_m_jaxlite_missing_script_is_one_line_and_status_2(tmp_path):
  theirs = subprocess.run([sys.executable, "missing.py"], capture_output=True, text=True,
                          cwd=tmp_path)
  ours = _python(["-m", "jaxlite", "missing.py"], tmp_path)
  assert (ours.returncode, ours.stderr, ours.stdout) == (2, theirs.stderr, "")
  assert len(ours.stderr.splitlines()) == 1


def test_python_m_jaxlite_c_and_m(tmp_path):
  r = _python(["-m", "jaxlite", "-c", "import jax, sys; print(jax.numpy.ones(2).sum(), "
               "sys.argv)", "a", "b"], tmp_path)
  assert (r.returncode, r.stdout) == (0, "2.0 ['-c', 'a', 'b']\n"), r.stderr
  r = _python(["-m", "jaxlite", "-c", "1/0"], tmp_path)
  assert r.returncode == 1
  assert r.stderr.splitlines()[1:] == ['  File "<string>", line 1, in <module>',
                                       "ZeroDivisionError: division by zero"], r.stderr
  (tmp_path / "mod_x.py").write_text("import sys, jax\nprint(sys.argv[1:], jax.__version__)\n")
  r = _python(["-m", "jaxlite", "-m", "mod_x", "q"], tmp_path)
  assert (r.returncode, r.stdout) == (0, "['q'] 0.10.2\n"), r.stderr
  theirs = subprocess.run([sys.executable, "-m", "no_such_mod_x"], capture_output=True,
                          text=True, cwd=tmp_path)
  r = _python(["-m", "jaxlite", "-m", "no_such_mod_x"], tmp_path)
  assert (r.returncode, r.stderr) == (1, theirs.stderr)
  r = _python(["-m", "jaxlite", "-c", "import sys; sys.exit(3)"], tmp_path)
  assert r.returncode == 3
