"""`python -m jaxlite script.py [args]`: runs a JAX program with `import jax` bound to jaxlite.

Also `python -m jaxlite -m package.module [args]`, and `python -m jaxlite --shim-path` (prints
the directory to put on PYTHONPATH for the same effect without this launcher).
"""
import runpy
import sys

USAGE = ("usage: python -m jaxlite script.py [args...]\n"
         "       python -m jaxlite -m module [args...]\n"
         "       python -m jaxlite --shim-path")


def main(argv=None) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  from jaxlite._install import install_as_jax, shim_path
  if not argv or argv[0] in ("-h", "--help"):
    print(USAGE, file=sys.stderr if not argv else sys.stdout)
    return 2 if not argv else 0
  if argv[0] == "--shim-path":
    print(shim_path())
    return 0
  install_as_jax()
  if argv[0] == "-m":
    if len(argv) < 2:
      print(USAGE, file=sys.stderr)
      return 2
    sys.argv = [argv[1], *argv[2:]]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    return 0
  sys.argv = argv
  sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(argv[0])))
  runpy.run_path(argv[0], run_name="__main__")
  return 0


if __name__ == "__main__":
  sys.exit(main())
