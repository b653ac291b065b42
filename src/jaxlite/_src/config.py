"""Configuration flags with JAX's names (`jax.config.update("jax_enable_x64", True)`).

Flags are plain attributes on one `Config` object so hot paths read them at attribute speed;
`trace_context()` is the part of the configuration that keys jit caches.
"""
from __future__ import annotations

import contextlib
import os


def _env_bool(name: str, default: bool) -> bool:
  val = os.environ.get(name)
  if val is None:
    return default
  return val.strip().lower() in ("1", "true", "yes", "on")


_DEFAULTS = {
    "jax_enable_x64": _env_bool("JAX_ENABLE_X64", False),
    "jax_numpy_dtype_promotion": os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard"),
    "jax_default_matmul_precision": None,
    "jax_threefry_partitionable": _env_bool("JAX_THREEFRY_PARTITIONABLE", True),
    "jax_default_prng_impl": "threefry2x32",
    "jax_enable_custom_prng": False,
    "jax_disable_jit": _env_bool("JAX_DISABLE_JIT", False),
    "jax_explicit_x64_dtypes": "warn",
    "jax_num_cpu_devices": int(os.environ.get("JAXLITE_NUM_CPU_DEVICES", "-1")),
    "jax_explain_cache_misses": False,
    "jax_platforms": None,
    "jax_platform_name": None,
    "jax_debug_nans": False,
    "jax_debug_infs": False,
    "jax_numpy_rank_promotion": "allow",
    "jax_enable_checks": False,
    "jax_log_compiles": False,
}

# Flags whose value changes what a traced function computes: part of every jit cache key.
_TRACE_CONTEXT_FLAGS = (
    "jax_enable_x64", "jax_numpy_dtype_promotion", "jax_default_matmul_precision",
    "jax_threefry_partitionable", "jax_numpy_rank_promotion",
)


class Config:
  """Holds every flag as an attribute named like JAX's option."""

  def __init__(self):
    self.__dict__.update(_DEFAULTS)
    self._listeners = {}
    self._trace_context = None

  @property
  def values(self) -> dict:
    return {k: getattr(self, k) for k in _DEFAULTS}

  def update(self, name: str, value) -> None:
    if name not in _DEFAULTS:
      raise AttributeError(f"Unrecognized config option: {name}")
    if name == "jax_num_cpu_devices":
      from jaxlite._src import devices
      devices.check_can_set_device_count()
    if name == "jax_numpy_dtype_promotion" and value not in ("standard", "strict"):
      raise ValueError(f"jax_numpy_dtype_promotion must be 'standard' or 'strict', got {value!r}")
    setattr(self, name, value)
    self._trace_context = None
    for fn in self._listeners.get(name, ()):
      fn(value)

  def read(self, name: str):
    return getattr(self, name)

  def _add_listener(self, name: str, fn) -> None:
    self._listeners.setdefault(name, []).append(fn)

  def trace_context(self) -> tuple:
    ctx = self._trace_context
    if ctx is None:
      ctx = self._trace_context = tuple(getattr(self, k) for k in _TRACE_CONTEXT_FLAGS)
    return ctx

  def parse_flags_with_absl(self):  # JAX compat no-op
    pass

  def __repr__(self) -> str:
    return f"Config({self.values})"


config = Config()


def _flag_context(name: str):
  @contextlib.contextmanager
  def ctx(value):
    old = getattr(config, name)
    config.update(name, value)
    try:
      yield
    finally:
      config.update(name, old)
  ctx.__name__ = name
  return ctx


enable_x64 = _flag_context("jax_enable_x64")
numpy_dtype_promotion = _flag_context("jax_numpy_dtype_promotion")
default_matmul_precision = _flag_context("jax_default_matmul_precision")
threefry_partitionable = _flag_context("jax_threefry_partitionable")
disable_jit_ctx = _flag_context("jax_disable_jit")
explain_cache_misses = _flag_context("jax_explain_cache_misses")
