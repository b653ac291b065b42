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
    "jax_default_device": None,
    "jax_check_tracer_leaks": False,
    "jax_transfer_guard_host_to_device": "allow",
    "jax_transfer_guard_device_to_host": "allow",
    "jax_transfer_guard_device_to_device": "allow",
    "jax_legacy_prng_key": "allow",
    "jax_debug_key_reuse": False,
    "jax_softmax_custom_jvp": False,
    "jax_no_tracing": False,
    "jax_no_execution": False,
    # surface (issue 14): JAX's remaining top-level flags.
    "jax_allow_f16_reductions": True,
    "jax_array_garbage_collection_guard": None,
    "jax2tf_associative_scan_reductions": False,
    "jax_thread_guard": False,
    # 0: jit compiles to one NumPy call per op (tier 0); 1: fused kernels run over cache-sized
    # tiles on a thread pool (tier 1, compiler/tier1_backend.py).
    "jax_jaxlite_tier": int(os.environ.get("JAXLITE_TIER", "0")),
}

# Flags acted on by hooks on jit and eager dispatch (`instrumentation.py`).
_HOOKED_FLAGS = ("jax_debug_nans", "jax_debug_infs", "jax_log_compiles", "jax_no_tracing",
                 "jax_no_execution")

# Flags whose value changes what a traced function computes: part of every jit cache key.
_TRACE_CONTEXT_FLAGS = (
    "jax_enable_x64", "jax_numpy_dtype_promotion", "jax_default_matmul_precision",
    "jax_threefry_partitionable", "jax_numpy_rank_promotion", "jax_allow_f16_reductions",
    "jax_jaxlite_tier",  # a jit cache entry keeps its executable: a new tier must recompile
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
    if name == "jax_jaxlite_tier" and value not in (0, 1):
      raise ValueError(f"jax_jaxlite_tier must be 0 or 1, got {value!r}")
    setattr(self, name, value)
    self._trace_context = None
    for fn in self._listeners.get(name, ()):
      fn(value)
    if name in _HOOKED_FLAGS:  # install or remove the dispatch hooks these flags need
      from jaxlite._src import instrumentation
      instrumentation.refresh()

  def read(self, name: str):
    return getattr(self, name)

  def _add_listener(self, name: str, fn) -> None:
    self._listeners.setdefault(name, []).append(fn)

  def trace_context(self) -> tuple:
    ctx = self._trace_context
    if ctx is None:
      ctx = tuple(getattr(self, k) for k in _TRACE_CONTEXT_FLAGS)
      if _user_contexts:
        ctx += tuple(u.value for u in _user_contexts)
      self._trace_context = ctx
    return ctx

  def parse_flags_with_absl(self):  # JAX compat no-op
    pass

  def __repr__(self) -> str:
    return f"Config({self.values})"


config = Config()


# --- JAX's config states: `with jax.enable_x64(True):`, `jax.enable_x64.value` ------------------

_TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


class State:
  """One flag as JAX exposes it: `.value`, and a call making a context that sets it."""

  def __init__(self, name: str, validate=None, default_arg=None):
    self.name = name
    self._validate = validate
    self._default_arg = default_arg
    self.__name__ = name[4:] if name.startswith("jax_") else name

  @property
  def value(self):
    return getattr(config, self.name)

  def __call__(self, new_val=_DEFAULTS):  # the sentinel: "no argument given"
    if new_val is _DEFAULTS:
      if self._default_arg is None:
        raise TypeError(f"{self.__name__}() missing 1 required positional argument: 'new_val'")
      new_val = self._default_arg
    if self._validate is not None:
      self._validate(new_val)
    return _set_flag(self.name, new_val)

  def __bool__(self):
    return bool(self.value)

  def __repr__(self):
    return f"State({self.name}={self.value!r})"


@contextlib.contextmanager
def _set_flag(name: str, value):
  old = getattr(config, name)
  config.update(name, value)
  try:
    yield
  finally:
    config.update(name, old)


def _one_of(name, allowed):
  def check(v):
    if v not in allowed:
      raise ValueError(f"{name} must be one of {list(allowed)}, got {v!r}")
  return check


_check_guard = _one_of("transfer_guard", _TRANSFER_GUARD_LEVELS)

# Boolean flags: a bare call (`with jax.log_compiles():`, as optax does) turns the flag on.
enable_x64 = State("jax_enable_x64", default_arg=True)
debug_nans = State("jax_debug_nans", default_arg=True)
debug_infs = State("jax_debug_infs", default_arg=True)
default_device = State("jax_default_device")
default_matmul_precision = State("jax_default_matmul_precision")
numpy_rank_promotion = State("jax_numpy_rank_promotion",
                             _one_of("jax_numpy_rank_promotion", ("allow", "warn", "raise")))
numpy_dtype_promotion = State("jax_numpy_dtype_promotion",
                              _one_of("jax_numpy_dtype_promotion", ("standard", "strict")))
checking_leaks_state = State("jax_check_tracer_leaks", default_arg=True)
log_compiles = State("jax_log_compiles", default_arg=True)
explain_cache_misses = State("jax_explain_cache_misses", default_arg=True)
threefry_partitionable = State("jax_threefry_partitionable", default_arg=True)
enable_checks = State("jax_enable_checks", default_arg=True)
default_prng_impl = State("jax_default_prng_impl")
legacy_prng_key = State("jax_legacy_prng_key",
                        _one_of("jax_legacy_prng_key", ("allow", "warn", "error")))
enable_custom_prng = State("jax_enable_custom_prng")
debug_key_reuse = State("jax_debug_key_reuse")
softmax_custom_jvp = State("jax_softmax_custom_jvp")
transfer_guard_host_to_device = State("jax_transfer_guard_host_to_device", _check_guard)
transfer_guard_device_to_host = State("jax_transfer_guard_device_to_host", _check_guard)
transfer_guard_device_to_device = State("jax_transfer_guard_device_to_device", _check_guard)
disable_jit_ctx = State("jax_disable_jit", default_arg=True)
check_tracer_leaks = checking_leaks_state
no_tracing = State("jax_no_tracing")
no_execution = State("jax_no_execution")
# If False, reduce_sum over a non-trivial axis of float16/bfloat16 raises (lax/reductions.py).
allow_f16_reductions = State("jax_allow_f16_reductions", default_arg=True)
# What to do when a jax.Array is freed by the garbage collector rather than by reference
# counting: XLA device buffers only; jaxlite's NumPy buffers need no guard, the level is kept.
array_garbage_collection_guard = State(
    "jax_array_garbage_collection_guard",
    lambda v: v is None or _one_of("jax_array_garbage_collection_guard",
                                   ("allow", "log", "fatal"))(v))
# Which lowering jax2tf uses for cumulative reductions; jaxlite has no jax2tf, so it is a flag.
jax2tf_associative_scan_reductions = State("jax2tf_associative_scan_reductions",
                                           default_arg=True)
# Guards multi-process operations against use from other threads; jaxlite runs one process.
thread_guard = State("jax_thread_guard", default_arg=True)


def checking_leaks():
  """`with jax.checking_leaks():` turns on `jax_check_tracer_leaks` inside the block."""
  return checking_leaks_state(True)


@contextlib.contextmanager
def transfer_guard(new_val: str):
  """Sets all three transfer guards (host<->device, device<->device) inside the block."""
  _check_guard(new_val)
  with transfer_guard_host_to_device(new_val), transfer_guard_device_to_host(new_val), \
      transfer_guard_device_to_device(new_val):
    yield


# --- user contexts: values that key jit caches (`jax.make_user_context`) -----------------------

_user_contexts: list = []


class UserConfig:
  """A user value that is part of every jit cache key: changing it retraces."""

  def __init__(self, default_value=None):
    self._current = default_value
    _user_contexts.append(self)

  @property
  def value(self):
    return self._current

  @contextlib.contextmanager
  def __call__(self, new_val):
    old = self._current
    self._current = new_val
    config._trace_context = None
    try:
      yield
    finally:
      self._current = old
      config._trace_context = None


def make_user_context(default_value=None) -> UserConfig:
  """A context (`with ctx(value):`) whose value keys jit's caches, so a change retraces."""
  return UserConfig(default_value)
