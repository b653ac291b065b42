"""jaxlite's private implementation. Submodules load on first attribute access too, since JAX
libraries read `jax._src.<module>.<name>` without importing that module themselves (chex).

JAX-private modules that JAX's own tutorials import (`jax._src.lax.lax`, `jax._src.util`,
`jax._src.test_util`, `jax._src.lib.mlir`...) are thin aliases over jaxlite's modules kept in
the `jax` shim directory (`_jax_shim/jax/_src`), which is part of this package's path: with
jaxlite installed as `jax`, `jax._src.X` is `jaxlite._src.X`, found here or there."""
import importlib as _importlib
import os as _os

__path__.append(_os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))),
                              "_jax_shim", "jax", "_src"))

# Modules that moved into a folder, under their former names (relative to this package), so that
# `jaxlite._src.<former>` and JAX libraries' `jax._src.<former>` (the `jax` shim, _install.py)
# still resolve: JAX's private module names are what those libraries import.
# BEGIN relayout: FORMER_NAMES (written by tools/relayout.py)
FORMER_NAMES: dict = {}
# END relayout


def current_name(former: str) -> str:
  """The module path, relative to this package, where module `former` (dotted) now lives."""
  head, dot, rest = former.partition(".")
  return FORMER_NAMES[head] + dot + rest if head in FORMER_NAMES else former


class _FormerNameLoader:
  """Hands back the module at its new place: `jaxlite._src.<former>` is that very object."""

  def __init__(self, target: str):
    self.target = target

  def create_module(self, spec):
    return _importlib.import_module(self.target)

  def exec_module(self, module):
    pass  # already executed under its own name


class _FormerNameFinder:
  """Last on sys.meta_path: imports `jaxlite._src.<former>[.x]` (importlib, `import` statements
  of code outside jaxlite) as the module now at its new place."""

  @staticmethod
  def find_spec(fullname, path=None, target=None):
    prefix = __name__ + "."
    rest = fullname[len(prefix):] if fullname.startswith(prefix) else ""
    if rest.partition(".")[0] not in FORMER_NAMES:
      return None
    import importlib.util
    return importlib.util.spec_from_loader(
        fullname, _FormerNameLoader(prefix + current_name(rest)))


if FORMER_NAMES:
  import sys as _sys
  _sys.meta_path.append(_FormerNameFinder())


def __getattr__(name):
  if not name.startswith("__"):
    target = f"{__name__}.{current_name(name)}"
    try:
      return _importlib.import_module(target)
    except ModuleNotFoundError as e:
      if e.name != target:
        raise
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
