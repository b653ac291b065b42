"""`jax.extend.core.primitives`: the primitive objects of jaxlite, by JAX's `<name>_p` names.

Collected from the modules that define them (lax families, control flow, linalg, PRNG, jit,
custom derivatives), so a library can register extra rules on the very objects jit uses.
"""
import importlib as _importlib

from jaxlite._src.core import Primitive as _Primitive

_MODULES = (
    "jaxlite._src.lax.elementwise", "jaxlite._src.lax.special", "jaxlite._src.lax.shape",
    "jaxlite._src.lax.slicing", "jaxlite._src.lax.reductions", "jaxlite._src.lax.dot",
    "jaxlite._src.lax.creation", "jaxlite._src.lax.sort", "jaxlite._src.lax.windowed",
    "jaxlite._src.lax.parallel", "jaxlite._src.lax.fft", "jaxlite._src.lax.linalg",
    "jaxlite._src.lax.control_flow.loops", "jaxlite._src.lax.control_flow.conditionals",
    "jaxlite._src.interpreters.ad", "jaxlite._src.call_primitives",
    "jaxlite._src.custom_derivatives", "jaxlite._src.ad_checkpoint", "jaxlite._src.prng",
    "jaxlite._src.random", "jaxlite._src.random_gamma",
    "jaxlite._src.callbacks",
)

# JAX's names for primitives jaxlite calls differently.
_ALIASES = {"add_jaxvals_p": "add_any_p"}


def _collect() -> dict:
  found = {}
  for mod_name in _MODULES:
    try:
      mod = _importlib.import_module(mod_name)
    except ImportError:  # a module another change renamed: its primitives are simply absent
      continue
    for k, v in vars(mod).items():
      if k.endswith("_p") and len(k) > 2 and isinstance(v, _Primitive):
        found.setdefault(k, v)
  for jax_name, ours in _ALIASES.items():
    if ours in found:
      found[jax_name] = found[ours]
  return found


globals().update(_collect())
del _collect
