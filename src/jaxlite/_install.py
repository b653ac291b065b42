"""Running JAX programs and JAX libraries on jaxlite: `import jax` resolves to jaxlite.

Three ways, all doing the same thing (`install_as_jax`):
  1. In code, before anything imports jax:
         import jaxlite; jaxlite.install_as_jax()
         # from here on, `import jax` (yours or optax's) returns jaxlite
  2. From the command line: `python -m jaxlite script.py [args]` (or `python -m jaxlite -m pkg`)
     installs it, then runs the script as `__main__` with `sys.argv` = [script, args...].
  3. An environment switch without `.pth` files: put jaxlite's shim directory first on
     PYTHONPATH, e.g. `PYTHONPATH=$(python -m jaxlite --shim-path) python script.py`. That
     directory holds a `jax` package whose `__init__` removes itself and calls
     `install_as_jax()`, so the first `import jax` of the process gets jaxlite.

How: `sys.modules["jax"]` becomes a module that forwards attribute access to `jaxlite`, and a
finder first on `sys.meta_path` resolves every `jax.X` submodule to the module object
`jaxlite.X` (so `jax.numpy is jaxlite.numpy`, `jax._src.traceback_util` is jaxlite's). Only
`__version__` differs: `jax.__version__` is "0.10.2" (`jaxlite.version`), the JAX release whose
behaviour jaxlite follows, so libraries' version checks (`jax.__version_info__ > (0, 4, 25)`)
take their 0.10.2 paths; `jaxlite.__version__` stays jaxlite's own package version.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

_PREFIX = "jax"


class _AliasLoader(importlib.abc.Loader):
  """Loads `jax.X` by importing `jaxlite.X` and handing back that very module object."""

  def __init__(self, target: str):
    self.target = target

  def create_module(self, spec):
    return importlib.import_module(self.target)

  def exec_module(self, module):
    pass  # already executed under its jaxlite name


def _target_name(fullname: str) -> str:
  """jaxlite's module for `jax.X`: `jaxlite.X`, with a `jax._src` module that moved into one of
  `_src`'s folders looked up under its former name (`jaxlite._src.FORMER_NAMES`)."""
  rest = fullname[len(_PREFIX):]
  if rest.startswith("._src."):
    from jaxlite import _src
    return "jaxlite._src." + _src.current_name(rest[len("._src."):])
  return "jaxlite" + rest


class _JaxAliasFinder(importlib.abc.MetaPathFinder):
  """Resolves `jax.*` to `jaxlite.*` (first on sys.meta_path once installed)."""

  def find_spec(self, fullname, path=None, target=None):
    if not fullname.startswith(_PREFIX + "."):
      return None
    target_name = _target_name(fullname)
    try:
      spec = importlib.util.find_spec(target_name)
    except (ImportError, ValueError):
      return None
    if spec is None:
      return None
    is_pkg = spec.submodule_search_locations is not None
    return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target_name), is_package=is_pkg)


def _make_jax_module():
  """The module standing for `jax`: jaxlite's namespace, with JAX's version."""
  import jaxlite
  from jaxlite import version
  mod = types.ModuleType("jax", jaxlite.__doc__)
  mod.__path__ = []  # a package, so that `import jax.numpy` is looked up (by our finder)
  mod.__file__ = jaxlite.__file__
  mod.__version__ = version.__version__
  mod.__version_info__ = version.__version_info__
  mod.__jaxlite__ = jaxlite
  mod.__spec__ = importlib.machinery.ModuleSpec("jax", None, is_package=True)

  def __getattr__(name):
    return getattr(jaxlite, name)

  def __dir__():
    return sorted(set(dir(jaxlite)) | {"__version__", "__version_info__"})
  mod.__getattr__ = __getattr__
  mod.__dir__ = __dir__
  return mod


def is_installed() -> bool:
  mod = sys.modules.get("jax")
  return mod is not None and getattr(mod, "__jaxlite__", None) is not None


def install_as_jax() -> None:
  """Makes `import jax` (and every `jax.*` submodule) resolve to jaxlite. Idempotent.

  Raises RuntimeError if the real `jax` is already imported: the two cannot share one process
  (arrays, tracers and pytrees of one are foreign to the other).
  """
  if is_installed():
    return
  real = sys.modules.get("jax")
  if real is not None:
    where = getattr(real, "__file__", None) or "an unknown location"
    raise RuntimeError(
        "jaxlite.install_as_jax(): the real `jax` is already imported (from "
        f"{where}); jaxlite cannot stand in for it now. Call install_as_jax() before anything "
        "imports jax, or run the program with `python -m jaxlite script.py`.")
  if not any(isinstance(f, _JaxAliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _JaxAliasFinder())
  sys.modules["jax"] = _make_jax_module()


def shim_path() -> str:
  """The directory to put first on PYTHONPATH so that `import jax` installs jaxlite."""
  return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_jax_shim")
