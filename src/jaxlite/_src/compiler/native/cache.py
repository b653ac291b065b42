"""The native tier's disk cache: one folder per kernel, named by a hash of its source and of the
versions that make its machine code (jaxlite, numba, llvmlite, NumPy, Python, CPU), holding the
generated module, numba's cache files for it, and a MANIFEST of every file's SHA-256.

An entry is loaded only when every file matches its manifest; any other entry (tampered,
half-written, from a crash) is deleted and the kernel compiled again. Imports numba.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import uuid

import llvmlite
import numba
import numpy as np
from llvmlite import binding as llvm

from jaxlite._src.compiler.native import support
from jaxlite._src.compiler.native import threads

# numba chooses its threading layer at its first parallel launch, after this (every compiled
# kernel is loaded through this module): OpenMP first, TBB where libgomp is missing.
threads.configure()

MANIFEST = "MANIFEST.json"


def cache_dir() -> str:
  env = os.environ.get("JAXLITE_NATIVE_CACHE")
  if env:
    return env
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "jaxlite", "native")


def _versions() -> str:
  with open(support.__file__, "rb") as f:  # generated kernels inline its helpers
    helpers = hashlib.sha256(f.read()).hexdigest()
  # jaxlite's package version: the package is loaded before any of its modules (no import here,
  # which would tie this low module to the public top)
  jaxlite_version = sys.modules[__name__.partition(".")[0]].__version__
  return "|".join([jaxlite_version, numba.__version__, llvmlite.__version__, np.__version__,
                   sys.version, platform.machine(), llvm.get_host_cpu_name(),
                   llvm.get_host_cpu_features().flatten(), helpers])


def key(source: str) -> str:
  """The entry name of a kernel's source on this machine and these versions."""
  return hashlib.sha256(f"{_versions()}\n{source}".encode()).hexdigest()[:40]


def _digest(path: str) -> str:
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def _files(entry: str) -> list:
  out = []
  for root, _, names in os.walk(entry):
    for name in names:
      if name != MANIFEST:
        out.append(os.path.relpath(os.path.join(root, name), entry))
  return sorted(out)


def verify(entry: str) -> bool:
  """Every file of `entry` is listed in its manifest with the same SHA-256, and none is
  missing or extra."""
  try:
    with open(os.path.join(entry, MANIFEST)) as f:
      manifest = json.load(f)
  except (OSError, ValueError):
    return False
  if not isinstance(manifest, dict) or sorted(manifest) != _files(entry):
    return False
  return all(_digest(os.path.join(entry, rel)) == h for rel, h in manifest.items())


def _import(entry: str, tag: str):
  path = os.path.join(entry, "kernel.py")
  name = f"_jaxlite_native_{tag}"
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  # Registered under one name at build and load: numba's cached environment imports it by name.
  sys.modules[name] = module
  try:
    spec.loader.exec_module(module)  # the explicit signature compiles or loads here
  except BaseException:
    sys.modules.pop(name, None)
    raise
  return module.kernel


def load(source: str):
  """(compiled function, came from the disk cache) for `source` (a module defining `kernel`)."""
  root = cache_dir()
  tag = key(source)
  entry = os.path.join(root, tag)
  if os.path.isdir(entry):
    if verify(entry):
      fn = _import(entry, tag)
      return fn, bool(sum(fn.stats.cache_hits.values()))
    shutil.rmtree(entry, ignore_errors=True)  # tampered or half-written: compile it again
  os.makedirs(root, exist_ok=True)
  tmp = os.path.join(root, f".{tag}.{uuid.uuid4().hex}")
  os.makedirs(tmp)
  try:
    with open(os.path.join(tmp, "kernel.py"), "w") as f:
      f.write(source)
    fn = _import(tmp, tag)
    manifest = {rel: _digest(os.path.join(tmp, rel)) for rel in _files(tmp)}
    with open(os.path.join(tmp, MANIFEST), "w") as f:
      json.dump(manifest, f, indent=1, sort_keys=True)
    try:
      os.rename(tmp, entry)
    except OSError:  # another process stored it first: keep ours in memory, drop the copy
      pass
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  return fn, False
