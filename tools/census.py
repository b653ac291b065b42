"""Records the public names of JAX's public modules into tests/data/jax_public_names.json.

Run with real JAX installed (`python tools/census.py`); tests/test_census.py compares jaxlite's
modules against the recorded lists (and against live `dir()` when JAX is importable).
"""
from __future__ import annotations

import importlib
import json
import pathlib
import pkgutil
import sys
import types
import warnings

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "jax_public_names.json"

# Packages walked recursively; every public submodule found under them is recorded.
ROOTS = ("jax",)
# Never imported: they need TensorFlow or other packages that are not JAX's dependencies, or
# are command-line tools rather than libraries.
UNIMPORTABLE = ("jax.experimental.jax2tf", "jax.experimental.roofline",
                "jax.experimental.source_mapper", "jax.collect_profile", "jax.tools")
# Recorded, but not walked into: their submodules are implementation files (MLIR dialect
# bindings, kernel collections, per-format sparse internals), not separately documented APIs.
NO_DESCEND = ("jax.extend.mlir", "jax.experimental.pallas", "jax.experimental.sparse",
              "jax.experimental.colocated_python", "jax.experimental.compilation_cache")


def is_public_name(mod: types.ModuleType, name: str) -> bool:
  """Whether `mod.name` counts: not private, not a submodule, not a typing/stdlib re-export,
  not a deprecated alias (those warn on access)."""
  if name.startswith("_"):
    return False
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
      obj = getattr(mod, name)
    except Exception:   # names listed by dir() but removed (deprecation shims raise)
      return False
  if any(issubclass(w.category, DeprecationWarning) for w in caught):
    return False
  if isinstance(obj, types.ModuleType):
    return False
  if type(obj).__module__.split(".")[0] in ("typing", "typing_extensions", "__future__"):
    return False   # Any, Union, TypeVars, generic aliases, `annotations`
  origin = getattr(obj, "__module__", None) if callable(obj) else None
  return not (isinstance(origin, str) and origin.split(".")[0] in sys.stdlib_module_names)


def public_names(mod: types.ModuleType) -> list[str]:
  return sorted(n for n in dir(mod) if is_public_name(mod, n))


def public_modules(root: str) -> list[str]:
  """`root` and every importable public submodule below it."""
  found, todo = [], [root]
  while todo:
    name = todo.pop()
    if name in UNIMPORTABLE or any(p.startswith("_") for p in name.split(".")):
      continue
    try:
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = importlib.import_module(name)
    except Exception:
      continue
    found.append(name)
    if hasattr(mod, "__path__") and name not in NO_DESCEND:
      todo.extend(f"{name}.{info.name}" for info in pkgutil.iter_modules(mod.__path__))
  return sorted(found)


def census() -> dict:
  import jax
  modules = {}
  for root in ROOTS:
    for name in public_modules(root):
      names = public_names(importlib.import_module(name))
      if names:
        modules[name] = names
  return {"jax_version": jax.__version__, "modules": modules}


if __name__ == "__main__":
  data = census()
  OUT.parent.mkdir(parents=True, exist_ok=True)
  OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
  total = sum(len(v) for v in data["modules"].values())
  print(f"recorded {total} names in {len(data['modules'])} modules of JAX "
        f"{data['jax_version']} to {OUT}")
