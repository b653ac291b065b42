"""`jax.extend.core`: primitives, jaxprs and trace access for libraries that define primitives.

`Primitive` is jaxlite's own (a subclass whose impl sees jax Arrays, as a library's impl
expects): `def_impl`, `def_abstract_eval`, `bind`, `multiple_results`; rules registered in
`jax.interpreters.ad/batching` tables are the ones jit/grad/vmap use.
"""
from jaxlite._src.base import core as _core
from jaxlite._src.base.core import (  # noqa: F401
    AbstractToken, ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTypeError, Literal, Var,
    check_jaxpr, concrete_or_error, jaxprs_in_params, set_current_trace,
    take_current_trace, valid_jaxtype)
from jaxlite._src.compat.core_adapters import (  # noqa: F401
    Primitive, DropVar, jaxpr_as_fun, find_top_trace, get_opaque_trace_state, gensym, mapped_aval,
    new_jaxpr_eqn,
    primal_dtype_to_tangent_dtype, subjaxprs, unmapped_aval)
from jaxlite._src.compat.core_adapters import (  # noqa
    nonempty_axis_env as nonempty_axis_env_DO_NOT_USE,
)
from jaxlite._src.compat.core_adapters import (  # noqa: F401
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE,
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE,
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE)
from jaxlite._src.base.effects import Effect, Effects, no_effects  # noqa: F401
from jaxlite._src.base.linear_util import DebugInfo  # noqa: F401


class InconclusiveDimensionOperation(Exception):
  """Raised by shape polymorphism when a comparison of dimensions cannot be decided."""


def call_impl(f, *args, **params):
  del params
  return f(*args)


class TraceTag:
  """JAX's tag naming a set of tracers for a transformation's cache key. jaxlite's traces
  are told apart by identity, so tags only take part in keys: as in JAX, every tag equals every
  other and they share one hash."""

  def __hash__(self):
    return hash(TraceTag)

  def __eq__(self, other):
    return isinstance(other, TraceTag)


def _array_types():
  import numpy as np
  return {np.ndarray, _core.array_type, *(np.dtype(t).type for t in
          "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 "
          "complex64 complex128".split())}


def __getattr__(name):
  if name == "array_types":
    return _array_types()
  if name in ("CallPrimitive", "ClosedCallPrimitive"):
    from jaxlite._src.transforms import closed_call
    return getattr(closed_call, name)
  if name == "Token":
    from jaxlite._src.lax.tokens import Token
    return Token
  if name == "primitives":
    import importlib
    return importlib.import_module("jaxlite.extend.core.primitives")
  raise AttributeError(f"module 'jaxlite.extend.core' has no attribute {name!r}")
