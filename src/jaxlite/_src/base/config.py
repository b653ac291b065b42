"""Configuration flags with JAX's names (`jax.config.update("jax_enable_x64", True)`).

Flags are plain attributes on one `Config` object so hot paths read them at attribute speed;
`trace_context()` is the part of the configuration that keys jit caches.
`config.update` sets a flag for every thread; `with jax.enable_x64(True):` and the other flag
contexts set it for the calling thread only, as JAX's do (see `_push_local`).
"""
from __future__ import annotations

import contextlib
import os
import threading


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
    # tracebacks leaving a jaxlite API boundary (_src/compat/traceback_util.py)
    "jax_traceback_filtering": os.environ.get("JAX_TRACEBACK_FILTERING", "auto"),
    # 1 (the default): fused kernels run over cache-sized tiles on a thread pool, small ones
    # inline with no pool (tier 1, compiler/tier1_backend.py); 0: jit compiles to one NumPy
    # call per op (tier 0). JAXLITE_TIER=0 in the environment selects tier 0.
    "jax_jaxlite_tier": int(os.environ.get("JAXLITE_TIER", "1")),
    # The native tier (extra jaxlite[native], compiler/native/): tier 1's hot kernels compiled by
    # numba in the background. On where numba is installed; JAXLITE_NATIVE=0 switches it off.
    "jax_jaxlite_native": _env_bool("JAXLITE_NATIVE", True),
    # The background XLA tier (compiler/xla_tier.py, where jaxlib is installed): a hot jit
    # program of tier 0/1 is compiled by XLA in the background and swapped in when measured
    # faster. JAXLITE_XLA_TIER=0 switches it off.
    "jax_jaxlite_xla_tier": _env_bool("JAXLITE_XLA_TIER", True),
    # The CPU backend (issue 30): "numpy" (tiers 0/1, the default) or "xla" (jaxlib's CPU
    # client, extra jaxlite[xla]); JAXLITE_BACKEND in the environment. An accelerator's PJRT
    # plugin, when present, is the default backend whatever this says (as in JAX).
    "jax_jaxlite_backend": os.environ.get("JAXLITE_BACKEND", "numpy"),
    # The XLA backend's persistent compilation cache (JAX's flags and variables).
    "jax_compilation_cache_dir": os.environ.get("JAX_COMPILATION_CACHE_DIR"),
    "jax_enable_compilation_cache": _env_bool("JAX_ENABLE_COMPILATION_CACHE", True),
    "jax_persistent_cache_min_compile_time_secs": float(
        os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "1.0")),
    "jax_persistent_cache_min_entry_size_bytes": int(
        os.environ.get("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")),
}

# Enum flags: the values JAX 0.10.2 accepts (`None` where listed), checked by `config.update`
# and by the flag contexts alike.
_TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_ENUMS = {
    "jax_traceback_filtering": ("off", "tracebackhide", "remove_frames", "quiet_remove_frames",
                                "auto"),
    "jax_array_garbage_collection_guard": (None, "allow", "log", "fatal"),
    "jax_numpy_dtype_promotion": ("standard", "strict"),
    "jax_numpy_rank_promotion": ("allow", "warn", "raise"),
    "jax_legacy_prng_key": ("allow", "warn", "error"),
    "jax_traceback_filtering": ("off", "tracebackhide", "remove_frames", "quiet_remove_frames",
                                "auto"),
    "jax_default_prng_impl": ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32",
                              "philox4x32"),
    "jax_default_matmul_precision": (
        None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
        "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
        "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
        "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
        "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"),
    **{f"jax_transfer_guard_{k}": _TRANSFER_GUARD_LEVELS
       for k in ("host_to_device", "device_to_host", "device_to_device")},
}


def _check_enum(name: str, value) -> None:
  allowed = _ENUMS[name]
  if value not in allowed:
    none = "None or " if None in allowed else ""
    raise ValueError(f"{name}: new enum value must be {none}in "
                     f"{[a for a in allowed if a is not None]}, got {value!r} of type "
                     f"{type(value)}.")


# Flags acted on by hooks on jit and eager dispatch (`instrumentation.py`).
_HOOKED_FLAGS = ("jax_debug_nans", "jax_debug_infs", "jax_log_compiles", "jax_no_tracing",
                 "jax_no_execution")

# Flags whose value changes what a traced function computes: part of every jit cache key.
_TRACE_CONTEXT_FLAGS = (
    "jax_enable_x64", "jax_numpy_dtype_promotion", "jax_default_matmul_precision",
    "jax_threefry_partitionable", "jax_numpy_rank_promotion", "jax_allow_f16_reductions",
    "jax_jaxlite_tier",  # a jit cache entry keeps its executable: a new tier must recompile
    "jax_jaxlite_backend",  # so must a new backend
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
    """Sets the global value (every thread's, except where a thread's flag context overrides)."""
    if name not in _DEFAULTS:
      raise AttributeError(f"Unrecognized config option: {name}")
    if name in _update_checks:  # filled by the modules above (devices: the device count)
      _update_checks[name]()
    if name in _ENUMS:
      _check_enum(name, value)
    if name == "jax_jaxlite_tier" and value not in (0, 1):
      raise ValueError(f"jax_jaxlite_tier must be 0 or 1, got {value!r}")
    if name == "jax_jaxlite_backend" and value not in ("numpy", "xla"):
      raise ValueError(f"jax_jaxlite_backend must be 'numpy' or 'xla', got {value!r}")
    self.__dict__[name] = value  # the global value, also under an installed `_LocalFlag`
    self._trace_context = None
    for fn in self._listeners.get(name, ()):
      fn(value)
    if name in _HOOKED_FLAGS:  # install or remove the dispatch hooks these flags need
      _refresh_hooks()

  def read(self, name: str):
    return getattr(self, name)

  def _add_listener(self, name: str, fn) -> None:
    self._listeners.setdefault(name, []).append(fn)

  def trace_context(self) -> tuple:
    ctx = self._trace_context
    if ctx is None:
      ctx = self._compute_trace_context()
      self._trace_context = ctx
    return ctx

  def _compute_trace_context(self) -> tuple:
    ctx = tuple(getattr(self, k) for k in _TRACE_CONTEXT_FLAGS)
    if _user_contexts:
      ctx += tuple(u.value for u in _user_contexts)
    return ctx

  def _on_anywhere(self, name: str) -> bool:
    """Whether a flag is on globally or in some thread's context (dispatch hooks need it)."""
    with _lock:
      return bool(self.__dict__[name]) or any(_local_values.get(name, ()))

  @property
  def x64_enabled(self) -> bool:
    """`jax.config.x64_enabled` (jaxopt reads it): the current value of jax_enable_x64."""
    return bool(self.jax_enable_x64)

  def parse_flags_with_absl(self):  # JAX compat no-op
    pass

  def __repr__(self) -> str:
    return f"Config({self.values})"


config = Config()


# --- thread-local flag values ------------------------------------------------------------------
# While no thread is inside a flag context, flags stay plain instance attributes (the fast path).
# The first thread to enter a context for a flag installs a `_LocalFlag` data descriptor on
# `Config` for it, which prefers the calling thread's value; the last one to leave removes it.
# `trace_context` likewise stops using the process-wide cache while any context is active.

_tls = threading.local()
_lock = threading.Lock()
_local_values: dict = {}  # flag name -> the values active in some thread's context, all threads


class _LocalFlag:
  """`config.<name>` while some thread holds a context for it: that thread's value, else global."""

  def __init__(self, name: str):
    self.name = name

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    local = getattr(_tls, "flags", None)
    if local and self.name in local:
      return local[self.name][-1]
    return obj.__dict__[self.name]

  def __set__(self, obj, value):
    obj.__dict__[self.name] = value


def _local_trace_context() -> tuple:
  return config._compute_trace_context()  # per thread, uncached while contexts are active


def _push_local(name: str, value) -> None:
  with _lock:
    values = _local_values.setdefault(name, [])
    values.append(value)
    if len(values) == 1:
      setattr(Config, name, _LocalFlag(name))
    config.__dict__["trace_context"] = _local_trace_context
  local = getattr(_tls, "flags", None)
  if local is None:
    local = _tls.flags = {}
  local.setdefault(name, []).append(value)


def _pop_local(name: str) -> None:
  local = _tls.flags
  stack = local[name]
  value = stack.pop()
  if not stack:
    del local[name]
  with _lock:
    values = _local_values[name]
    values.remove(value)
    if not values:
      del _local_values[name]
      delattr(Config, name)
    if not _local_values and not _active_user_contexts[0]:
      config.__dict__.pop("trace_context", None)


# --- JAX's config states: `with jax.enable_x64(True):`, `jax.enable_x64.value` ------------------

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
    if self.name in _ENUMS:
      _check_enum(self.name, new_val)
    return _set_flag(self.name, new_val)

  def __bool__(self):
    return bool(self.value)

  def __repr__(self):
    return f"State({self.name}={self.value!r})"


@contextlib.contextmanager
def _set_flag(name: str, value):
  """This thread's value of `name` is `value` inside the block (JAX's contexts are per thread)."""
  _push_local(name, value)
  hooked = name in _HOOKED_FLAGS
  if hooked:
    _refresh_hooks()
  try:
    yield
  finally:
    _pop_local(name)
    if hooked:
      _refresh_hooks()


_hooks_lock = threading.Lock()
# Filled at their import by the modules that stand on this one (issue 29: config imports none):
# name -> a check run before the flag changes (devices: the CPU device count, fixed once the
# devices exist); the refresh of the dispatch hooks (instrumentation).
_update_checks: dict = {}
_refresh: list = []


def _refresh_hooks() -> None:
  with _hooks_lock:  # refresh() unwraps then rewraps methods: one thread at a time
    for refresh in _refresh:
      refresh()


def _check_guard(v) -> None:
  if v not in _TRANSFER_GUARD_LEVELS:
    raise ValueError(f"transfer_guard: new enum value must be in {list(_TRANSFER_GUARD_LEVELS)}, "
                     f"got {v!r} of type {type(v)}.")

# Boolean flags: a bare call (`with jax.log_compiles():`, as optax does) turns the flag on.
enable_x64 = State("jax_enable_x64", default_arg=True)
debug_nans = State("jax_debug_nans", default_arg=True)
debug_infs = State("jax_debug_infs", default_arg=True)
default_device = State("jax_default_device")
default_matmul_precision = State("jax_default_matmul_precision")
numpy_rank_promotion = State("jax_numpy_rank_promotion")
numpy_dtype_promotion = State("jax_numpy_dtype_promotion")
checking_leaks_state = State("jax_check_tracer_leaks", default_arg=True)
log_compiles = State("jax_log_compiles", default_arg=True)
explain_cache_misses = State("jax_explain_cache_misses", default_arg=True)
threefry_partitionable = State("jax_threefry_partitionable", default_arg=True)
enable_checks = State("jax_enable_checks", default_arg=True)
default_prng_impl = State("jax_default_prng_impl")
legacy_prng_key = State("jax_legacy_prng_key")
enable_custom_prng = State("jax_enable_custom_prng", default_arg=True)
debug_key_reuse = State("jax_debug_key_reuse", default_arg=True)
softmax_custom_jvp = State("jax_softmax_custom_jvp", default_arg=True)
transfer_guard_host_to_device = State("jax_transfer_guard_host_to_device")
transfer_guard_device_to_host = State("jax_transfer_guard_device_to_host")
transfer_guard_device_to_device = State("jax_transfer_guard_device_to_device")
disable_jit_ctx = State("jax_disable_jit", default_arg=True)
check_tracer_leaks = checking_leaks_state
no_tracing = State("jax_no_tracing", default_arg=True)
no_execution = State("jax_no_execution", default_arg=True)
# If False, reduce_sum over a non-trivial axis of float16/bfloat16 raises (lax/reductions.py).
allow_f16_reductions = State("jax_allow_f16_reductions", default_arg=True)
# What to do when a jax.Array is freed by the garbage collector rather than by reference
# counting: XLA device buffers only; jaxlite's NumPy buffers need no guard, the level is kept.
array_garbage_collection_guard = State("jax_array_garbage_collection_guard")
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
_active_user_contexts = [0]  # user contexts entered and not yet left, all threads


class UserConfig:
  """A user value that is part of every jit cache key: changing it retraces.
  `with ctx(v):` sets it for the calling thread; `set_global` for all, as in JAX."""

  def __init__(self, default_value=None):
    self._global = default_value
    self._local = threading.local()
    _user_contexts.append(self)

  @property
  def value(self):
    stack = getattr(self._local, "stack", None)
    return stack[-1] if stack else self._global

  def get_global(self):
    return self._global

  def set_global(self, new_value) -> None:
    self._global = new_value
    config._trace_context = None

  @contextlib.contextmanager
  def __call__(self, new_val):
    stack = getattr(self._local, "stack", None)
    if stack is None:
      stack = self._local.stack = []
    with _lock:
      _active_user_contexts[0] += 1
      config.__dict__["trace_context"] = _local_trace_context
    stack.append(new_val)
    try:
      yield
    finally:
      stack.pop()
      with _lock:
        _active_user_contexts[0] -= 1
        if not _local_values and not _active_user_contexts[0]:
          config.__dict__.pop("trace_context", None)


def make_user_context(default_value=None) -> UserConfig:
  """A context (`with ctx(value):`) whose value keys jit's caches, so a change retraces."""
  return UserConfig(default_value)
