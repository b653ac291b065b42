"""`jax.extend.core.primitives`: the primitive objects of jaxlite, by JAX's `<name>_p` names.

Collected from the modules that define them (lax families, control flow, linalg, PRNG, jit,
custom derivatives), so a library can register extra rules on the very objects jit uses.
"""
import importlib as _importlib
import pkgutil as _pkgutil

from jaxlite._src import lax as _lax_pkg
from jaxlite._src.base.core import Primitive as _Primitive

# Every module of jaxlite._src.lax (walked, so a new primitive module is found by itself),
# then the primitives defined outside lax.
_MODULES = tuple(info.name for info in _pkgutil.walk_packages(_lax_pkg.__path__,
                                                              "jaxlite._src.lax.")) + (
    "jaxlite._src.interpreters.ad", "jaxlite._src.transforms.call_primitives",
    "jaxlite._src.transforms.custom_derivatives", "jaxlite._src.transforms.ad_checkpoint", "jaxlite._src.rng.prng",
    "jaxlite._src.rng.random", "jaxlite._src.rng.random_gamma", "jaxlite._src.transforms.callbacks",
    "jaxlite._src.transforms.closed_call", "jaxlite._src.state.primitives", "jaxlite._src.scipy.special",
)

# JAX's names for primitives jaxlite calls differently.
_ALIASES = {"add_jaxvals_p": "add_any_p"}


def _collect() -> dict:
  found = {}
  for mod_name in _MODULES:
    mod = _importlib.import_module(mod_name)
    for k, v in vars(mod).items():
      if k.endswith("_p") and len(k) > 2 and isinstance(v, _Primitive):
        found.setdefault(k, v)
  for jax_name, ours in _ALIASES.items():
    if ours in found:
      found[jax_name] = found[ours]
  return found


globals().update(_collect())
del _collect
