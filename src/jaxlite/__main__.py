"""`python -m jaxlite script.py [args]`: runs a JAX program with `import jax` bound to jaxlite,
as `python script.py` would run it: `-c CODE` and `-m MODULE` as Python's, a missing script is
one line on stderr and exit status 2, and tracebacks hold no frame of this launcher or runpy.

Also `python -m jaxlite --shim-path` (prints the directory to put on PYTHONPATH for the same
effect without this launcher).
"""
import importlib.util
import os
import runpy
import sys
import types

USAGE = ("usage: python -m jaxlite script.py [args...]\n"
         "       python -m jaxlite -c code [args...]\n"
         "       python -m jaxlite -m module [args...]\n"
         "       python -m jaxlite --shim-path")

# Frames of these files are the launcher's, never the user's: left out of tracebacks.
_LAUNCHER_FILES = (os.path.abspath(__file__), runpy.__file__, "<frozen runpy>")


def main(argv=None) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  from jaxlite._install import install_as_jax, shim_path
  if not argv or argv[0] in ("-h", "--help"):
    print(USAGE, file=sys.stderr if not argv else sys.stdout)
    return 2 if not argv else 0
  if argv[0] == "--shim-path":
    print(shim_path())
    return 0
  if argv[0] in ("-c", "-m") and len(argv) < 2:
    print(f"Argument expected for the {argv[0]} option\n{USAGE}", file=sys.stderr)
    return 2
  install_as_jax()
  if argv[0] == "-c":
    return _run_code(argv[1], argv[2:])
  if argv[0] == "-m":
    return _run_module(argv[1], argv[2:])
  return _run_script(argv[0], argv[1:])


def _run_code(code: str, args: list) -> int:
  sys.argv = ["-c", *args]
  main_module = types.ModuleType("__main__")
  sys.modules["__main__"] = main_module
  sys.path.insert(0, "")
  return _guarded(lambda: exec(compile(code, "<string>", "exec"), main_module.__dict__))


def _run_module(name: str, args: list) -> int:
  try:
    found = importlib.util.find_spec(name) is not None
  except (ImportError, ValueError):
    found = False
  if not found:
    print(f"{sys.executable}: No module named {name}", file=sys.stderr)
    return 1
  sys.argv = [name, *args]
  sys.path.insert(0, os.getcwd())
  return _guarded(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True))


def _run_script(path: str, args: list) -> int:
  if not os.path.exists(path):
    print(f"{sys.executable}: can't open file {os.path.abspath(path)!r}: [Errno 2] No such "
          "file or directory", file=sys.stderr)
    return 2
  sys.argv = [path, *args]
  sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
  return _guarded(lambda: runpy.run_path(path, run_name="__main__"))


def _guarded(run) -> int:
  """Runs the user's program; an uncaught exception is printed as Python prints it (through
  sys.excepthook, which filters jaxlite's frames) without the launcher's frames; status 1."""
  try:
    run()
  except SystemExit:
    raise
  except BaseException as e:  # noqa: BLE001 - reported as the interpreter reports it
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in _LAUNCHER_FILES:
      tb = tb.tb_next
    sys.excepthook(type(e), e.with_traceback(tb), tb)  # Python's hook prints e's own traceback
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
