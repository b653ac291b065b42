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
FORMER_NAMES = {
    "ad_api": "transforms.ad_api",
    "ad_checkpoint": "transforms.ad_checkpoint",
    "ad_util": "transforms.ad_util",
    "api": "transforms.api",
    "api_extras": "transforms.api_extras",
    "array": "base.array",
    "cache_miss": "transforms.cache_miss",
    "call_primitives": "transforms.call_primitives",
    "callbacks": "transforms.callbacks",
    "checkify": "transforms.checkify",
    "closed_call": "transforms.closed_call",
    "config": "base.config",
    "core": "base.core",
    "core_adapters": "compat.core_adapters",
    "cost_analysis": "transforms.cost_analysis",
    "custom_batching": "transforms.custom_batching",
    "custom_derivatives": "transforms.custom_derivatives",
    "debugging": "transforms.debugging",
    "devices": "base.devices",
    "dispatch": "transforms.dispatch",
    "dlpack": "base.dlpack",
    "donation": "transforms.donation",
    "dtypes": "base.dtypes",
    "earray": "compat.earray",
    "effects": "base.effects",
    "errors": "base.errors",
    "extended_dtypes": "base.extended_dtypes",
    "flatten_util": "libs.flatten_util",
    "fp_quiet": "base.fp_quiet",
    "hijax": "compat.hijax",
    "image": "libs.image",
    "instrumentation": "base.instrumentation",
    "jit": "transforms.jit",
    "jit_argnums": "transforms.jit_argnums",
    "jit_function": "transforms.jit_function",
    "linear_call": "transforms.linear_call",
    "linear_util": "base.linear_util",
    "list_util": "base.list_util",
    "machine": "base.machine",
    "memory_profile": "transforms.memory_profile",
    "memory_space": "base.memory_space",
    "monitoring": "base.monitoring",
    "ode": "libs.ode",
    "ops": "libs.ops",
    "pmap": "parallel.pmap",
    "pretty_print": "base.pretty_print",
    "primitive_kinds": "base.primitive_kinds",
    "prng": "rng.prng",
    "prng_lowering": "rng.prng_lowering",
    "prng_structural": "rng.prng_structural",
    "profiler": "base.profiler",
    "pytree": "base.pytree",
    "random": "rng.random",
    "random_gamma": "rng.random_gamma",
    "random_more": "rng.random_more",
    "shard_map": "parallel.shard_map",
    "shard_map_checks": "parallel.shard_map_checks",
    "shard_map_eager": "parallel.shard_map_eager",
    "shard_map_vma": "parallel.shard_map_vma",
    "source_info_util": "base.source_info_util",
    "sparse": "libs.sparse",
    "stage_info": "transforms.stage_info",
    "stateful_rng": "rng.stateful_rng",
    "traceback_util": "compat.traceback_util",
    "tree_util": "base.tree_util",
    "vmap_api": "transforms.vmap_api",
    "xla_bridge": "compat.xla_bridge",
}
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
