"""Adapters giving jaxlite's core the extra names of `jax.core` and `jax.extend.core`.

Thin by design: each is a small function or class over `_src/base/core.py`; the core does not bend.
"""
from __future__ import annotations

import abc
import contextlib

import numpy as np

from jaxlite._src.base import core


class AbstractValue(abc.ABC):
  """`jax.core.AbstractValue`: the base of abstract values (ShapedArray is registered)."""


AbstractValue.register(core.ShapedArray)
AbstractValue.register(core.AbstractToken)


class _ConstantFoldingTrace(core.Trace):
  """Runs primitives whose inputs are all concrete right away; forwards the rest to `parent`.

  `ensure_compile_time_eval` puts one on top of the current trace, so that under `jit` work on
  constants happens at trace time while work on tracers is still staged (JAX's behaviour).
  """
  __slots__ = ()

  def process_primitive(self, primitive, args, params):
    if any(isinstance(a, core.Tracer) for a in args):
      with core.set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    with core.set_current_trace(core.eval_trace):
      return primitive.bind(*args, **params)


@contextlib.contextmanager
def ensure_compile_time_eval():
  """Evaluates operations on concrete values eagerly, even while tracing for `jit`."""
  parent = core.current_trace()
  if parent is core.eval_trace:
    yield
    return
  trace = _ConstantFoldingTrace(parent)
  try:
    with core.set_current_trace(trace):
      yield
  finally:
    trace.invalidate()


@contextlib.contextmanager
def eval_context():
  """Makes the eval trace current: primitives run eagerly (tracers raise)."""
  with core.set_current_trace(core.eval_trace):
    yield


def find_top_trace(_xs=None):
  """The current trace (stackless: the innermost transformation), as JAX 0.10 returns."""
  return core.current_trace()


class OpaqueTraceState:
  """A token that compares equal only for the same current trace (weakly held)."""
  __slots__ = ("_ref",)

  def __init__(self, trace):
    import weakref
    self._ref = weakref.ref(trace)

  def __eq__(self, other):
    return isinstance(other, OpaqueTraceState) and self._ref() is other._ref()

  def __hash__(self):
    return id(self._ref())


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
  del convention
  return OpaqueTraceState(core.current_trace())


def mapped_aval(size: int, axis, aval):
  """`aval` with its mapped axis `axis` removed (None: unchanged)."""
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval} has size {aval.shape[axis]}, "
                     f"expected {size}")
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis, aval, explicit_mesh_axis=None):
  """`aval` with a new axis of `size` inserted at `axis` (None: unchanged)."""
  if axis is None:
    return aval
  return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def max_dim(d1: int, d2: int) -> int:
  return max(core.canonicalize_shape((d1, d2)))


def min_dim(d1: int, d2: int) -> int:
  return min(core.canonicalize_shape((d1, d2)))


def raise_to_shaped(aval, weak_type=None):
  """Pre-0.4.36 JAX's coercion; every jaxlite aval is already shaped."""
  return aval if weak_type is None else aval.update(weak_type=weak_type)


def subjaxprs(jaxpr):
  """The jaxprs found in the params of `jaxpr`'s eqns (one level deep)."""
  for eqn in jaxpr.eqns:
    yield from core.jaxprs_in_params(eqn.params)


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=frozenset(), source_info=None,
                  ctx=None):
  return core.JaxprEqn(invars, outvars, primitive, params, effects, source_info)


def gensym(suffix: str = ""):
  """A function making fresh Vars of a given aval (names are given by the printer)."""
  del suffix
  return core.Var


class DropVar(core.Var):
  """An output variable of an eqn whose value is never read (printed `_`)."""
  __slots__ = ()

  def __repr__(self):
    return "_"


def primal_dtype_to_tangent_dtype(dtype):
  from jaxlite._src.interpreters import ad
  return ad.tangent_dtype(dtype)


def unsafe_am_i_under_a_jit() -> bool:
  return _under(lambda t: type(t).__name__ == "DynamicJaxprTrace")


def unsafe_am_i_under_a_vmap() -> bool:
  return _under(lambda t: type(t).__name__ == "BatchTrace")


def unsafe_get_axis_names() -> list:
  names, t = [], core.current_trace()
  while t is not None:
    ad = getattr(t, "axis_data", None)
    if ad is not None and ad.name is not None:
      names.append(ad.name)
    t = t.parent
  return names


def nonempty_axis_env() -> bool:
  return bool(unsafe_get_axis_names())


def _under(pred) -> bool:
  t = core.current_trace()
  while t is not None:
    if pred(t):
      return True
    t = t.parent
  return False


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
  """`jax.core.eval_jaxpr`: binds each eqn on the current trace; Python scalars are accepted."""
  from jaxlite._src.transforms.call_primitives import as_traceable_arg
  return core.eval_jaxpr(jaxpr, [as_traceable_arg(c) for c in consts],
                         *[as_traceable_arg(a) for a in args])


def jaxpr_as_fun(closed, *args):
  """`jax.extend.core.jaxpr_as_fun`: a closed jaxpr as a function of its inputs."""
  def fun(*xs):
    return eval_jaxpr(closed.jaxpr, closed.consts, *xs)
  return fun(*args) if args else fun


class _LibraryPrimitiveType(type):
  """Every primitive is a `jax.extend.core.Primitive`, jaxlite's own too (libraries check
  `isinstance(eqn.primitive, jax.extend.core.Primitive)`); only the class itself is special."""

  def __instancecheck__(cls, obj):
    return isinstance(obj, core.Primitive) if cls is Primitive else type.__instancecheck__(cls,
                                                                                          obj)

  def __subclasscheck__(cls, sub):
    return issubclass(sub, core.Primitive) if cls is Primitive else type.__subclasscheck__(cls,
                                                                                          sub)


class Primitive(core.Primitive, metaclass=_LibraryPrimitiveType):
  """`jax.extend.core.Primitive`: a library's primitive. Its impl sees jax Arrays, as JAX's
  impls do (equinox's `maybe_set` impl indexes with `xs.at[i]`); jaxlite's own primitives'
  impls compute on NumPy buffers, so the impl registered here is wrapped: NumPy arguments
  become Arrays on the way in, Array results NumPy buffers on the way out. Everything else
  (bind, the rule tables, jit and the compilers) treats it as any primitive, except that, as in
  JAX, eager bind calls the impl itself on bind's arguments, its JVP and batching rules get
  tuples, and compiled code runs its registered lowering (jax.interpreters.mlir)."""
  library = True
  user_impl = None

  def def_impl(self, impl):
    def array_impl(*vals, **params):
      out = impl(*[_library_arg(v) for v in vals], **params)
      if self.multiple_results:  # read per call: some libraries set it after def_impl
        return [_buffer(o) for o in out]
      return _buffer(out)
    array_impl.__wrapped__ = impl
    self.impl = array_impl
    self.user_impl = impl
    return impl


def _library_arg(v):
  if isinstance(v, (np.ndarray, np.generic)) and v.dtype.fields is None:
    return core.array_from_numpy(np.asarray(v), False)
  return v  # Arrays already, Python scalars, key buffers (structured), tokens


def _buffer(o):
  return o._host_value() if type(o) is core.array_type else o
