"""jaxlib's PJRT clients, made on first ask: the CPU client and the accelerators' plugins.

Only this module and `backend.py` import jaxlib, and only when an XLA device or the xla backend
is asked for. Accelerator plugins are found as JAX finds them:
- TPU: the `libtpu` package (its `get_library_path()`), or the `TPU_LIBRARY_PATH` variable;
- GPU and any other PJRT plugin: `jax_plugins.xla_*` packages (the CUDA and ROCm PJRT plugin
  wheels install their shared library there) and `PJRT_NAMES_AND_LIBRARY_PATHS`
  ("name:path,name:path"). Their `initialize()` functions import `jax`, which jaxlite never
  does, so the library path is read from the package folder instead.
Each plugin is loaded with `xla_client.load_pjrt_plugin_dynamically`, initialized, and its
client made through the PJRT C API (`make_c_api_client`).
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading

from jaxlite._src.base import config
from jaxlite._src.base import devices as devices_lib

_lock = threading.RLock()
_clients: dict = {}        # platform -> client
_failed: dict = {}         # platform -> the error its client raised
_plugin_paths: dict | None = None  # platform -> shared library, found once
# make_cpu_client's options for a CPU client spanning processes (multiprocess.py sets them).
_cpu_options: dict = {}


def set_cpu_client_options(**options) -> None:
  """The CPU client's distributed runtime and collectives (before it is made)."""
  with _lock:
    if "cpu" in _clients:
      raise RuntimeError("the XLA CPU client already exists: jaxlite.distributed.initialize "
                         "must run before anything uses the xla backend")
    _cpu_options.clear()
    _cpu_options.update(options)

# The order JAX prefers platforms in when several are present (the default backend).
PLATFORM_PRIORITY = ("tpu", "cuda", "rocm", "gpu", "cpu")
# JAX's names for a platform in `JAX_PLATFORMS` / `jax.devices(name)`.
ALIASES = {"gpu": ("cuda", "rocm"), "cuda": ("cuda",), "rocm": ("rocm",), "tpu": ("tpu",),
           "cpu": ("cpu",)}


def available() -> bool:
  """Whether jaxlib can be imported (without importing it)."""
  return importlib.util.find_spec("jaxlib") is not None


def xla_client():
  from jaxlib import xla_client as xc
  return xc


def jax_ext():
  from jaxlib import _jax
  return _jax


_no_jax_depth = [0]  # readbacks in flight inside no_jax_import (one per thread at most)


@contextlib.contextmanager
def no_jax_import():
  """Within: `import jax` fails fast (ImportError), unless jax is already imported.

  jaxlib's device-to-host path (`ArrayImpl._single_device_array_to_np_array_did_copy` and
  `_copy_single_device_array_to_host_async`) wraps the array's one shard in a new jaxlib array,
  and building that tries `import jax.core` (for JAX's ShapedArray) and
  `import jax._src.sharding_impls` (for JAX's SingleDeviceSharding), falling back to jaxlib's
  own when the import fails. jaxlite never imports jax, so the import is made to fail: `None`
  in `sys.modules` is Python's "not importable" mark. Side effect to know of: jaxlib caches the
  missing ShapedArray for the process, so a real `jax` imported later in the same process sees
  `aval` None on those internal one-shard arrays (never on its own arrays)."""
  with _lock:
    owned = _no_jax_depth[0] > 0 or "jax" not in sys.modules  # (threads nest: counted)
    if owned:
      _no_jax_depth[0] += 1
      sys.modules["jax"] = None
  try:
    yield
  finally:
    if owned:
      with _lock:
        _no_jax_depth[0] -= 1
        if _no_jax_depth[0] == 0 and sys.modules.get("jax", 0) is None:
          del sys.modules["jax"]


_mlir_registry: list = []


def parse_module(text: str):
  """StableHLO module `text` parsed by jaxlib's MLIR bindings, in a context with the dialects it
  uses (func, stablehlo, chlo): for printing it in their syntax and for compiling with host
  callbacks (jaxlib takes those only with a parsed module)."""
  from jaxlib.mlir import ir
  from jaxlib.mlir._mlir_libs import _jax_mlir_ext
  from jaxlib.mlir.dialects import chlo, stablehlo
  if not _mlir_registry:
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)  # func and the upstream dialects
    _mlir_registry.append(registry)
  with ir.Context() as ctx:
    ctx.append_dialect_registry(_mlir_registry[0])
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    from jaxlib.mlir.dialects import sdy  # Shardy: sharded programs' annotations (spmd.py)
    sdy.register_dialect(ctx)
    return ir.Module.parse(str(text))


def xla_computation(text: str):
  """XLA's computation (jaxlib's `XlaComputation`: `.as_hlo_text()`, `.as_hlo_module()`) of
  StableHLO module `text`, as JAX's `Lowered.compiler_ir("hlo")` makes it."""
  return jax_ext().mlir.mlir_module_to_xla_computation(str(text), use_tuple_args=False,
                                                        return_tuple=False)


def jaxlib_version() -> str:
  from jaxlib import version
  return version.__version__


def _find_libtpu() -> str | None:
  path = os.environ.get("TPU_LIBRARY_PATH")
  if path and os.path.exists(path):
    return path
  if importlib.util.find_spec("libtpu") is None:
    return None
  try:
    import libtpu
    return libtpu.get_library_path()
  except Exception:  # a broken libtpu install: no TPU, as JAX falls back to the CPU
    return None


def _find_plugin_packages() -> dict:
  """platform -> shared library of the `jax_plugins.xla_*` packages (cuda12, rocm7, ...)."""
  out = {}
  spec = importlib.util.find_spec("jax_plugins")
  if spec is None or not spec.submodule_search_locations:
    return out
  for root in spec.submodule_search_locations:
    try:
      names = sorted(os.listdir(root))
    except OSError:
      continue
    for name in names:
      folder = os.path.join(root, name)
      if not name.startswith("xla_") or not os.path.isdir(folder):
        continue
      platform = "cuda" if "cuda" in name else "rocm" if "rocm" in name else name[4:]
      libs = [f for f in os.listdir(folder) if f.endswith(".so") and "plugin" in f]
      if libs:
        out.setdefault(platform, os.path.join(folder, sorted(libs)[0]))
  return out


def plugin_paths() -> dict:
  """platform -> PJRT plugin library for every accelerator plugin installed (found once)."""
  global _plugin_paths
  with _lock:
    if _plugin_paths is None:
      found = {}
      tpu = _find_libtpu()
      if tpu:
        found["tpu"] = tpu
      found.update(_find_plugin_packages())
      for item in filter(None, os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "").split(",")):
        name, _, path = item.partition(":")
        if name and path:
          found[name] = path
      _plugin_paths = found
    return _plugin_paths


def requested_platforms() -> list | None:
  """`JAX_PLATFORMS` / `jax_platforms` as a list of platform names, or None (any)."""
  value = getattr(config.config, "jax_platforms", None) or os.environ.get("JAX_PLATFORMS")
  if not value:
    return None
  return [p.strip().lower() for p in str(value).split(",") if p.strip()]


def accelerator_platforms() -> list:
  """The accelerator platforms whose plugin is installed and allowed by `JAX_PLATFORMS`, in
  JAX's priority order (no client is made)."""
  if not available():
    return []
  want = requested_platforms()
  allowed = None if want is None else {q for p in want for q in ALIASES.get(p, (p,))}
  found = plugin_paths()
  order = [p for p in PLATFORM_PRIORITY if p in found] + \
      sorted(p for p in found if p not in PLATFORM_PRIORITY)
  return [p for p in order if allowed is None or p in allowed]


def get_client(platform: str = "cpu"):
  """The PJRT client of `platform` ("cpu", "tpu", "cuda", ...), made on first ask; raises
  RuntimeError (JAX's message) when the platform is unavailable."""
  with _lock:
    c = _clients.get(platform)
    if c is not None:
      return c
    if platform in _failed:
      raise _failed[platform]
    try:
      c = _make_client(platform)
    except Exception as err:
      exc = RuntimeError(f"Unable to initialize backend '{platform}': {err} (you may need to "
                         "uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to "
                         "skip this backend.)")
      _failed[platform] = exc
      raise exc from err
    _clients[platform] = c
    return c


def _make_client(platform: str):
  if not available():
    raise RuntimeError("jaxlib is not installed (pip install 'jaxlite[xla]')")
  xc = xla_client()
  if platform == "cpu":
    _register_lapack(xc)
    # the device count is frozen from here on, as NumPy's CPU devices freeze it (JAX's
    # RuntimeError for a later `jax_num_cpu_devices` update)
    devices_lib._backend_initialized = True
    options = dict(_cpu_options) or {"num_devices": devices_lib._requested_count()}
    return xc.make_cpu_client(**options)
  path = plugin_paths().get(platform)
  if path is None:
    raise RuntimeError(f"no PJRT plugin for platform '{platform}' is installed")
  if not xc.pjrt_plugin_loaded(platform):
    xc.load_pjrt_plugin_dynamically(platform, path)
  if not xc.pjrt_plugin_initialized(platform):
    xc.initialize_pjrt_plugin(platform)
  # GPU plugins take the allocator options jaxlib derives from XLA_PYTHON_CLIENT_* (as JAX's
  # plugin packages pass them); the TPU's client needs none.
  options = dict(xc.generate_pjrt_gpu_plugin_options()) if platform in ("cuda", "rocm") else {}
  return xc.make_c_api_client(platform, options)


def _register_lapack(xc) -> None:
  """jaxlib's LAPACK kernels as XLA custom-call targets (`lapack_sgetrf_ffi`, ...): the CPU
  lowering of lu, qr, eigh, svd and cholesky calls them, as JAX's does."""
  from jaxlib import lapack
  for name, fn, api_version in lapack.registrations()["cpu"]:
    xc.register_custom_call_target(name, fn, "cpu", api_version)
  lapack._lapack.initialize()
