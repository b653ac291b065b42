"""Which tier compiles jitted code (flags `jax_jaxlite_tier`, `jax_jaxlite_native`); lazy tier 1.

`import jaxlite` loads no tier-1 or native code: tier 1 starts as `PendingTier1`, which compiles
programs with no value of tiled size exactly as tier 1 would (tier 0's code), and loads and
installs the real tier-1 backend (or the native one) on the first compile that can use it.
"""
from __future__ import annotations

import math
import sys

from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import blas
from jaxlite._src.compiler import numpy_codegen as tier0
from jaxlite._src.compiler import passes
from jaxlite._src.compiler import tier_sizes
from jaxlite._src.base.config import config

# The sizes that pick a tier (below the tiers, which read them too: tier_sizes.py).
SMALL_ELEMENTS, THREEFRY_MIN = tier_sizes.SMALL_ELEMENTS, tier_sizes.THREEFRY_MIN
_NEVER_FUSED, has_big_values = tier_sizes._NEVER_FUSED, tier_sizes.has_big_values

_TIER1_MODULE = "jaxlite._src.compiler.tier1_backend"
TIER1_NAMES = ("numpy-tiled", "numpy-native")


def _needs_tier1(jaxpr) -> bool:
  if has_big_values(jaxpr):
    return True
  return any(e.primitive in kinds.row_sources and math.prod(e.outvars[0].aval.shape)
             >= THREEFRY_MIN for e in jaxpr.eqns)


def load_tier1() -> backend_lib.Backend:
  """The backend tier 1 is now: the native one where that tier is on and numba is installed,
  else tier 1's. Loads their modules (never numba itself)."""
  from jaxlite._src.compiler import native
  from jaxlite._src.compiler import tier1_backend as t1
  if native.enabled():
    from jaxlite._src.compiler.native import backend
    return backend.NATIVE
  return t1.TIER1


class PendingTier1(tier0.NumpyBackend):
  """Tier 1 before its code is loaded. Programs without a value of tiled size compile to tier 0's
  code, which is what tier 1 makes of them; the first program with one (or once tier 1's modules
  are loaded anyway) loads tier 1, installs it in this placeholder's place and compiles there."""
  name = "numpy-tier1-pending"
  platform = "cpu"

  def __init__(self):
    super().__init__()
    self.resolved = None  # the backend that took this placeholder's place

  def resolve(self) -> backend_lib.Backend:
    real = self.resolved = load_tier1()
    if backend_lib._state.current is self:
      backend_lib.install_backend(real)
    return real

  def compile(self, closed, donated: tuple = ()):
    if _TIER1_MODULE in sys.modules:  # already loaded (by a test, say): nothing left to save
      return self.resolve().compile_donating(closed, donated)
    jaxpr, consts = passes.optimize(closed)
    if _needs_tier1(jaxpr):
      return self.resolve().compile_optimized(jaxpr, consts, donated)
    name = tier0.JAXPR_FN  # one name for all (see numpy_codegen.JAXPR_FN)
    src, glob = tier0.jaxpr_to_source(jaxpr, consts, name, self.tables, donated)
    fn = tier0._exec_source(src, glob, name)
    fn.__jaxlite_kernels__ = []
    return blas.adapt(fn, jaxpr)  # as tier 1 does

  def compile_donating(self, closed, donated):
    return self.compile(closed, donated)

  def compiles_to_tier0(self, jaxpr) -> bool:
    # `compile`'s tier-0 branch, where blas.adapt leaves the function as it is
    return _TIER1_MODULE not in sys.modules and not _needs_tier1(jaxpr) \
        and not blas.threaded_products(jaxpr)


PENDING = PendingTier1()


def _tier1() -> backend_lib.Backend:
  return load_tier1() if _TIER1_MODULE in sys.modules else PENDING


def select_tier(tier: int) -> None:
  """`jax_jaxlite_tier` (env JAXLITE_TIER): 1, the default, installs tier 1 (its code loads on
  the first compile that needs it), 0 the NumPy backend. Any other installed backend is left
  alone."""
  current = backend_lib._state.current
  if tier == 1 and current is tier0.NUMPY:
    backend_lib.install_backend(_tier1())
  elif tier == 0 and (current is PENDING or current.name in TIER1_NAMES):
    backend_lib.install_backend(tier0.NUMPY)


def _on_native_flag(value) -> None:
  native = sys.modules.get("jaxlite._src.compiler.native")
  if native is not None:  # kernels already wrapped for the native tier read this switch
    native._state.on = bool(value)
  if backend_lib._state.current.name in TIER1_NAMES:
    backend_lib.install_backend(load_tier1())
  # A pending tier 1 reads the flag when it loads.


def _load_keys_hash(k0, k1, x0, x1, xor):
  """prng_threefry's hook for batched keys until the native tier is loaded: a hash big enough
  for it (eager code over 10^5 keys, which never compiles a program) loads the native backend,
  which puts its compiled hash in this hook's place; without the tier, NumPy's hash stays."""
  from jaxlite._src.rng import prng_threefry as threefry
  from jaxlite._src.compiler import native
  if k0.size * max(x0.shape[-1], x1.shape[-1]) < THREEFRY_MIN:
    return None
  if native.enabled():
    import importlib
    importlib.import_module("jaxlite._src.compiler.native.backend")
  if threefry.keys_hash_kernel is _load_keys_hash:
    threefry.keys_hash_kernel = None
  return None if threefry.keys_hash_kernel is None else \
      threefry.keys_hash_kernel(k0, k1, x0, x1, xor)


def _install_keys_hash() -> None:
  from jaxlite._src.rng import prng_threefry as threefry
  if threefry.keys_hash_kernel is None:
    threefry.keys_hash_kernel = _load_keys_hash


_install_keys_hash()

# `get_backend(name)` imports these on first ask.
backend_lib.register_lazy_backend("numpy-tiled", _TIER1_MODULE)
backend_lib.register_lazy_backend("numpy-native", "jaxlite._src.compiler.native.backend")
config._add_listener("jax_jaxlite_tier", select_tier)
# The background XLA tier wraps jit programs of these backends (it imports no jaxlib until a
# program is hot).
from jaxlite._src.compiler import xla_tier  # noqa: E402
xla_tier.EFFECTFUL = passes.effectful_primitives
xla_tier.HOST_BACKENDS = (tier0.NumpyBackend,)
backend_lib.program_hooks.append(xla_tier.wrap)
config._add_listener("jax_jaxlite_native", _on_native_flag)
if config.jax_jaxlite_tier:
  select_tier(config.jax_jaxlite_tier)
