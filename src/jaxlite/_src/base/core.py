"""The core: abstract values, primitives, stackless traces and tracers, and the jaxpr IR.

One current trace lives in a thread-local slot with the eval trace at the bottom. Each trace
knows its parent; a tracer belongs to the trace it was made by, anything else is a constant.
"""
from __future__ import annotations

import itertools
import math
import threading
from typing import Any, Callable, Sequence

import numpy as np

from jaxlite._src.base import dtypes
from jaxlite._src.base import errors
from jaxlite._src.base import fp_quiet

# --- abstract values ---------------------------------------------------------------------------


class ShapedArray:
  """The abstract value of an array: shape, dtype and whether its dtype is weak."""
  __slots__ = ("shape", "dtype", "weak_type", "sharding", "vma")
  array_abstraction_level = 1

  def __init__(self, shape, dtype, weak_type: bool = False, sharding=None, vma=frozenset()):
    self.shape = tuple(shape)
    self.dtype = dtype
    self.weak_type = bool(weak_type)
    self.sharding = sharding
    self.vma = vma

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(math.prod(self.shape)))

  def update(self, shape=None, dtype=None, weak_type=None, sharding=None, vma=None):
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type,
                       self.sharding if sharding is None else sharding,
                       self.vma if vma is None else vma)

  @property
  def manual_axis_type(self):
    """JAX's view of `vma` inside shard_map: a ManualAxisType varying over those axes."""
    from jaxlite._src.sharding.manual_axis_type import ManualAxisType
    return ManualAxisType(varying=self.vma)

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def to_tangent_aval(self) -> "ShapedArray":
    """The type of this type's tangents (float0 for integers, booleans and keys); the rule is
    autodiff's (interpreters/ad.py registers it in `tangent_aval_rule`)."""
    return tangent_aval_rule(self)

  def at_least_vspace(self) -> "ShapedArray":  # JAX's older name, still called by equinox
    return tangent_aval_rule(self)

  # JAX's aval lowering interface, trivial for a lo type (hijax's mutable hi types, e.g. nnx
  # Variables, lower their leaves through it: see hijax.CaptureFrame).
  def lo_ty(self):
    return [self]

  def lower_val(self, val):
    return [val]

  def raise_val(self, val):
    return val

  # The sharding takes part in equality and hash (so in jit's trace key). A plain array's aval
  # carries None: like JAX's abstract single-device sharding it names no device, so a function
  # is traced once for every device; placement is resolved per call (devices.common_device).
  def __eq__(self, other):
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type
            and self.sharding == other.sharding)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type, self.sharding))

  def _shape_str(self, sep=","):
    spec = getattr(self.sharding, "_dim_axes", None)
    if spec is None:
      return sep.join(str(d) for d in self.shape)
    return sep.join(f"{d}@{a}" if a else str(d) for d, a in zip(self.shape, spec))

  def str_short(self, short_dtypes: bool = False) -> str:
    name = dtypes.short_dtype_name(self.dtype) if short_dtypes else dtypes.dtype_name(self.dtype)
    vma = f"{{V:{','.join(sorted(self.vma))}}}" if self.vma else ""
    if len(self.vma) > 1:
      vma = "{V:(" + ",".join(sorted(self.vma)) + ")}"
    return f"{name}[{self._shape_str()}]{vma}"

  def __str__(self):
    return ("~" if self.weak_type else "") + self.str_short(short_dtypes=False)

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"


class ShardingTypeError(Exception):
  """An operation whose operands' shardings (in their types, explicit mode) do not determine a
  valid output sharding (JAX's jax._src.core.ShardingTypeError)."""


# While a shard_map body with check_vma is traced: the typing (shard_map_vma.TraceTyping) that
# casts a primitive's less-varying operands up with pvary at bind, as JAX's binds do, and gives
# the traced results their varying manual axes (so jax.typeof and autodiff inside see them).
vma_typing = None


def with_out_shardings(primitive, avals, params, out_avals):
  """Abstract evaluation's `out_avals` with the shardings the primitive's sharding rule gives
  them: the rule runs only when an operand's type carries a sharding or the params name an
  out_sharding (so unsharded programs never pay for it)."""
  for a in avals:
    if getattr(a, "sharding", None) is not None:
      break
  else:
    if params.get("out_sharding") is None and params.get("sharding") is None:
      return out_avals
  return apply_sharding_rules(primitive, avals, params, out_avals)


class AbstractToken:
  def str_short(self, short_dtypes=False):
    return "Tok"


# `jax.typeof` rules of hi types (jax.experimental.hijax.register_hitype): class -> typeof_fn.
hitype_avals: dict = {}


def get_aval(x) -> ShapedArray:
  """The abstract value of a tracer, array or scalar."""
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval
  t = type(x)
  if t in dtypes.typed_scalar_types:
    return ShapedArray((), x.dtype, True)
  if t in (int, float, complex, bool):
    return ShapedArray((), dtypes.python_scalar_dtype(x), t is not bool)
  if isinstance(x, (np.ndarray, np.generic)):
    return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), False)
  if hasattr(x, "__jax_array__"):
    return get_aval(x.__jax_array__())
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def valid_jaxtype(x) -> bool:
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


# --- primitives --------------------------------------------------------------------------------


# Eager weak-type rules (`Primitive.eager_weak_type`): whether a result is weakly typed, from
# the arguments alone.
def all_weak(args, params) -> bool:
  for a in args:
    if not getattr(a, "weak_type", False):
      return False
  return True


def first_weak(args, params) -> bool:
  return getattr(args[0], "weak_type", False)


def never_weak(args, params) -> bool:
  return False


class Primitive:
  """A named operation; interpreters keep their rules for it in tables keyed by it."""
  multiple_results = False
  # A library's primitive (`jax.extend.core.Primitive`, core_adapters): its rules follow JAX's
  # calling conventions (tuples, the impl called as it is) and compiled code needs a lowering.
  library = False

  def __init__(self, name: str):
    self.name = name
    self.impl = None
    self.abstract_eval = None
    # Eager fast path: a cheap weak-type rule lets the eval trace skip abstract evaluation.
    self.eager_weak_type = None

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    if vma_typing is not None:  # tracing a check_vma shard_map body: JAX's implicit pvary
      args = vma_typing.cast(self, args, params)
    return _state.trace.process_primitive(self, args, params)

  def bind_with_trace(self, trace, args, avals, params, /):
    """JAX's: this primitive on `args` interpreted by `trace` (not the current one); library
    traces forward their primitives to their parent so (haiku's DotTrace)."""
    del avals  # JAX's: whether the primitive is a high-level one; jaxlite's are all low
    return trace.process_primitive(self, args, params)

  def def_impl(self, impl):
    self.impl = impl
    return impl

  def get_bind_params(self, params) -> dict:
    """The params `bind` takes for an eqn of this primitive with `params` (JAX's hook for call
    primitives; jaxlite's eqns hold bind's own params, equinox rebinds eqns through it)."""
    return dict(params)

  def def_abstract_eval(self, rule):
    self.abstract_eval = rule
    return rule


# --- traces ------------------------------------------------------------------------------------


class Trace:
  """An interpreter of primitives. `parent` is the trace its rules bind on."""
  __slots__ = ("parent", "alive", "__weakref__")

  def __init__(self, parent=None):  # JAX's Trace() takes none: library traces (haiku's
    self.parent = parent              # DotTrace) keep their parent themselves
    self.alive = True

  def process_primitive(self, primitive, args, params):
    raise NotImplementedError(f"{type(self).__name__} must define process_primitive")

  def invalidate(self):
    self.alive = False

  @property
  def main(self):
    """What identifies this transformation to its tracers (JAX's `trace.main`, its tag):
    equinox's filter_jvp keeps the outputs whose `x._trace.main is main`. One jaxlite trace
    object per transformation, so the trace itself."""
    return self

  def __repr__(self):
    return f"{type(self).__name__}"


class _TraceState(threading.local):
  def __init__(self):
    self.trace = eval_trace


class set_current_trace:
  """Context manager making `trace` the current one (a class: cheaper than a generator)."""
  __slots__ = ("trace", "prev")

  def __init__(self, trace):
    self.trace = trace

  def __enter__(self):
    self.prev = _state.trace
    _state.trace = self.trace
    return self.trace

  def __exit__(self, *exc):
    _state.trace = self.prev


def current_trace() -> Trace:
  return _state.trace


# Which trace a concrete Array belongs to. JAX makes a value created while a jit (make_jaxpr...)
# traces a tracer of that trace, and a jaxpr inlines a 0-d one as a literal; a 0-d jax Array made
# before the trace began (eagerly, or under an outer trace) is a constvar instead (`{ lambda
# a:f32[]; b:f32[]. ...`), and one of an outer trace becomes an inner jit's leading argument.
# jaxlite makes concrete Arrays in both cases, so an Array made while a staging trace is on the
# stack records it (`ArrayImpl._made_under`, a weak reference: a cached const must not keep the
# trace's eqns alive); the staging trace's `to_atom` reads it. Eager Arrays record nothing.


def staging_trace(trace):
  """The innermost trace from `trace` down its parents that stages operations on concrete
  arrays (a jit or make_jaxpr trace: the one whose tracer JAX would make of a value created
  now), else None (eager, or transformations over eager evaluation only)."""
  while trace is not None:
    if getattr(trace, "stages_constants", False):
      return trace
    trace = getattr(trace, "parent", None)
  return None


def made_under(x):
  """The staging trace concrete Array `x` was made under while that trace lives, else None
  (EVERY_TRACE for one standing for a Python or NumPy scalar)."""
  ref = getattr(x, "_made_under", None)
  return None if ref is None else ref()


class _EveryTrace:
  """`made_under` of a 0-d Array standing for a Python or NumPy scalar that a transformation
  converted (ad_api's arguments and outputs): JAX keeps those values, literals in every trace."""
  __slots__ = ()
  alive = False


EVERY_TRACE = _EveryTrace()


def _every_trace():
  return EVERY_TRACE


def as_scalar_literal(a):
  """Marks 0-d Array `a`, converted from a Python or NumPy scalar, a literal in every trace."""
  a._made_under = _every_trace
  return a


_PYTHON_SCALARS = frozenset((bool, int, float, complex))
_NOT_AN_INDEX = "Only integer scalar arrays can be converted to a scalar index."  # JAX's words


class EvalTrace(Trace):
  """The bottom trace: primitives run their NumPy impl right away."""
  __slots__ = ()

  def __init__(self):
    super().__init__(None)

  # The one eager dispatch path. Backend-level code: reads each Array's buffer field directly
  # (no accessor call on the hottest path); committed arrays (`_device` set) send the result to
  # their device. An operand whose buffer belongs to another backend (its type is a key of
  # `eager_routes`), or another default backend (`default_eager_route`), hands the whole
  # application to that backend's route; otherwise the primitive's NumPy impl runs here.
  def process_primitive(self, primitive, args, params):
    vals = []
    extended = False
    committed = False
    for a in args:
      t = type(a)
      if t is array_type:
        vals.append(a._value)
        if a._device is not None:
          committed = True
      elif t in dtypes.typed_scalar_types:
        vals.append(a.dtype.type(a))
      elif isinstance(a, Tracer):
        raise errors.unexpected_tracer_error(a)
      elif t is key_array_type:  # typed PRNG keys: results come back through their avals
        vals.append(a._value)
        extended = True
        if a._device is not None:
          committed = True
      elif t in _PYTHON_SCALARS and not primitive.library:
        # Python numbers bound as they are (equinox evaluates jaxprs eqn by eqn on Python
        # arguments): as in JAX, arrays of their default dtypes, weak but for bools
        return self.process_primitive(primitive, [
            array_from_numpy(np.asarray(x, dtypes.python_scalar_dtype(x)), type(x) is not bool)
            if type(x) in _PYTHON_SCALARS else x for x in args], params)
      else:
        vals.append(a)
    if primitive.library and (primitive.eager_weak_type is None or extended):
      # As in JAX, evaluating a library's primitive eagerly is calling its impl on bind's
      # arguments (no abstract evaluation, on whichever backend holds them), its result handed
      # back as it is. Python numbers arrive as JAX's typed scalars (bools stay bools).
      if primitive.impl is None:
        raise NotImplementedError(f"Evaluation rule for '{primitive.name}' not implemented")
      args = [a if type(a) is bool else dtypes.weak_scalar(a) for a in args]
      impl = primitive.user_impl
      return (primitive.impl if impl is None else impl)(*args, **params)
    if committed and any(type(v) is non_addressable for v in vals):  # shards in other processes
      return eager_across_processes(primitive, args, params)  # (on any backend)
    if eager_routes:  # another backend's buffers exist: the first operand holding one routes
      for v in vals:
        route = eager_routes.get(type(v))
        if route is not None:
          return route(primitive, args, params)
    if default_eager_route is not None:
      out = default_eager_route(primitive, args, params)
      if out is not NotImplemented:  # NotImplemented: the operands live on NumPy's CPU device
        return out
    weak_rule = primitive.eager_weak_type
    if weak_rule is None or extended:
      if primitive.impl is None:
        raise NotImplementedError(f"Evaluation rule for '{primitive.name}' not implemented")
      if primitive.abstract_eval is None:
        return primitive.impl(*args, **params)
      avals = [get_aval(a) for a in args]
      out_avals = primitive.abstract_eval(*avals, **params)
      # Only committed arguments carry shardings in their types; else only an out_sharding does.
      if committed or params and (params.get("out_sharding") is not None
                                  or params.get("sharding") is not None):
        out_avals = with_out_shardings(primitive, avals, params, out_avals)
    else:
      out_avals = None  # the results' types: their NumPy values' and `weak_rule`'s weak types
    token = fp_quiet.quiet()  # NumPy's floating-point warnings: XLA shows none
    try:
      out = primitive.impl(*vals, **params)
    finally:
      fp_quiet.loud(token)
    if out_avals is not None:
      if primitive.multiple_results:
        out = [make_array(o, av) for o, av in zip(out, out_avals)]
      else:
        out = make_array(out, out_avals)
    else:
      weak = weak_rule(args, params)
      if primitive.multiple_results:
        out = [host_array_from_numpy(o, w) for o, w in zip(out, weak)]
      else:
        out = host_array_from_numpy(out, weak)
    if committed:
      # Results on a mesh take the placement their sharding rule gives (array.place_outputs).
      return place_outputs(out, primitive_device(primitive, args), primitive, args, params)
    if context_meshes:  # under set_mesh: where the result's type names no mesh, P()
      return place_off_mesh(out, primitive, params, len(args))
    return out


# Eager routing hooks, filled by higher layers (a backend that owns device buffers):
# `eager_routes` maps the type of a non-NumPy Array buffer (`ArrayImpl._value`) to
# `route(primitive, args, params) -> Array | list[Array]`; `default_eager_route` (same
# signature) runs every eager application while another backend is the default one, None while
# NumPy is; it returns NotImplemented for operands it leaves to NumPy (committed to, or created
# under `default_device` of, NumPy's CPU device). Mutate `eager_routes` in place: fast paths
# hold the dict itself. Every eager fast path that skips `EvalTrace.process_primitive` checks `numpy_eager()` / these two first.
eager_routes: dict = {}
default_eager_route: Callable | None = None


def numpy_buffer(v) -> bool:
  """Whether an Array buffer is a NumPy value that eager NumPy fast paths may compute on."""
  return type(v) is np.ndarray or isinstance(v, np.generic)


eval_trace = EvalTrace()
_state = _TraceState()
# The trace under which eager fast paths that skip `EvalTrace.process_primitive` may run (jnp's
# `x + 1` on Arrays): eval_trace, or None while instrumentation wraps process_primitive.
eager_fast_trace = eval_trace

# What core needs from the layers above it, filled by them at their import through `register`
# (core never imports up: issue 29). The printer (pretty_print), the sharding rules applied to
# abstract evaluation's results (sharding.rules), a tracer's row indexing (lax.slicing) and an
# Array's (lax.shape's unstack).
pp_jaxpr: Callable = None  # (jaxpr, width=80) -> str
pp_eqn: Callable = None  # (eqn, width=80) -> str
apply_sharding_rules: Callable = None  # (primitive, avals, params, out_avals) -> out_avals
index_in_dim: Callable = None  # (operand, index, axis, keepdims) -> Array or tracer
unstack: Callable = None  # (operand) -> its rows (lax.unstack along axis 0)
device_put: Callable = None  # (x, device) -> Array (api.device_put)
asarray: Callable = None  # (x, dtype=None) -> Array (jnp.asarray: numpy.creation)

# Set by jaxlite._src.base.array: the concrete Array class and its constructors.
array_type: type = type(None)
# Set by jaxlite._src.rng.prng: the concrete class of typed PRNG key arrays.
key_array_type: type = type(None)
array_from_numpy: Callable = None  # (np value, weak_type) -> Array
# The same for NumPy's own eager results, which stay in host memory: `array_from_numpy` is
# rebound while an accelerator is the default to place created arrays on it
# (compiler/xla/platforms.py); this one never is. It and `make_array` make results computed
# eagerly, which record no staging trace (staging_trace above); `array_from_numpy` may be
# called while a trace stages.
host_array_from_numpy: Callable = None
make_array: Callable = None  # (np value, ShapedArray) -> Array
# Set by jaxlite._src.base.array: the common device of a primitive's committed arguments (raising
# JAX's incompatible-devices ValueError), and committing fresh results to a device.
primitive_device: Callable = None  # (primitive, args) -> device
# (Array or list of Arrays, device[, primitive, args, params]) -> the same, committed
place_outputs: Callable = None
# (Array or list of Arrays, primitive, params, number of operands) -> the same: under
# `jax.set_mesh`, results of operands on no mesh whose types name none are replicated, P()
place_off_mesh: Callable = None
# The count of meshes `jax.set_mesh` has set (devices.context_meshes, mirrored here by
# sharding.mesh so that the eager dispatch tests it without importing the devices module).
context_meshes = 0
# Set by jaxlite._src.base.array: the type of the `_value` of an Array with shards in other
# processes; by distributed.sharded_jit (which `jax.distributed` loads: such Arrays exist only in
# joined processes): the eager path for primitives on such Arrays (run over the global mesh).
non_addressable: type = type("_Unset", (), {})
eager_across_processes: Callable = None  # (primitive, args, params) -> outputs
# Set by jaxlite._src.lax.parallel: a block of a value laid out by one spec brought to another
# (all_gathers, then dynamic slices; the partitioner's reshards).
reshard_block: Callable = None  # (block, src, dst, global_shape, mesh_shape) -> block

_REGISTRABLE = frozenset({
    "pp_jaxpr", "pp_eqn", "apply_sharding_rules", "index_in_dim", "unstack", "device_put",
    "asarray",
    "array_type", "key_array_type", "array_from_numpy", "host_array_from_numpy", "make_array",
    "primitive_device", "place_outputs", "place_off_mesh", "non_addressable",
    "eager_across_processes",
    "reshard_block"})


def register(**hooks):
  """Fills the hooks above from the layer that implements them (called once at its import)."""
  unknown = set(hooks) - _REGISTRABLE
  if unknown:
    raise TypeError(f"core.register: unknown hook(s) {sorted(unknown)}; "
                    f"expected one of {sorted(_REGISTRABLE)}")
  globals().update(hooks)


def find_cur_trace():
  return _state.trace


class take_current_trace:
  """Makes the current trace's parent current while a rule runs; yields the current trace."""
  __slots__ = ("prev",)

  def __enter__(self):
    self.prev = _state.trace
    _state.trace = self.prev.parent
    return self.prev

  def __exit__(self, *exc):
    _state.trace = self.prev


# --- tracers -----------------------------------------------------------------------------------


class Array:
  """`jax.Array`: the common base of concrete arrays and tracers (operators live here)."""
  __slots__ = ()


class Tracer(Array):
  """An abstract stand-in for an array during a transformation."""
  __slots__ = ("_trace", "__weakref__")
  __array_priority__ = 1000
  __hash__ = None  # unhashable like JAX (TypeError: unhashable type: '<class name>')

  def __init__(self, trace, aval=None):
    """JAX's `Tracer(trace, aval)`, for library tracers that call it (haiku's DotTracer);
    jaxlite's own tracers set their fields themselves."""
    self._trace = trace
    if aval is not None:
      self.__dict__["aval"] = aval  # a subclass without __slots__ has a dict: read first

  @property
  def aval(self) -> ShapedArray:
    # abstract: each trace's tracer class defines its type (JAX's Tracer leaves it to them);
    # a library tracer built by Tracer(trace, aval) holds its aval in its instance dict
    given = getattr(self, "__dict__", {}).get("aval")
    if given is not None:
      return given
    raise NotImplementedError(f"{type(self).__name__} must define aval")

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  def to_concrete_value(self):
    """The concrete NumPy value behind this tracer, or None when it is abstract."""
    return None

  def _concrete(self, fun_name: str, error_cls):
    val = self.to_concrete_value()
    if val is None:
      raise error_cls(self, fun_name)
    return val

  def __bool__(self):
    if self.aval.size != 1:
      raise ValueError("The truth value of an array with more than one element is ambiguous. "
                       "Use a.any() or a.all()")
    return bool(self._concrete("bool", errors.TracerBoolConversionError))

  def __int__(self):
    return int(self._concrete("int", errors.ConcretizationTypeError))

  def __float__(self):
    return float(self._concrete("float", errors.ConcretizationTypeError))

  def __complex__(self):
    return complex(self._concrete("complex", errors.ConcretizationTypeError))

  def __index__(self):
    # JAX checks the aval before concreteness: a float, bool or non-scalar tracer is a
    # TypeError (`'a' * x` under jit), only an integer scalar one a TracerIntegerConversionError
    if self.aval.shape != () or getattr(self.aval.dtype, "kind", "") not in ("i", "u"):
      raise TypeError(_NOT_AN_INDEX)
    val = self.to_concrete_value()
    if val is None:
      raise errors.TracerIntegerConversionError(self)
    return int(val)

  def __array__(self, dtype=None, copy=None):
    raise errors.TracerArrayConversionError(self)

  def __len__(self):
    if not self.aval.shape:
      raise TypeError("len() of unsized object")
    return self.aval.shape[0]

  def __iter__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d array")
    # As JAX's ShapedArray._iter: lax.index_in_dim per row (slice with unit strides + squeeze).
    return (index_in_dim(self, i, 0, keepdims=False) for i in range(self.aval.shape[0]))

  def item(self, *args):
    val = self._concrete("item", errors.ConcretizationTypeError)
    return np.asarray(val).item(*args)

  def tolist(self):
    return np.asarray(self._concrete("tolist", errors.ConcretizationTypeError)).tolist()

  def __reduce__(self):
    raise errors.ConcretizationTypeError(self, "pickle")

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  def block_until_ready(self):
    return self


# --- the jaxpr IR ------------------------------------------------------------------------------

_var_counter = itertools.count()


class Var:
  """A variable of a jaxpr; printed names are assigned by the printer, not stored."""
  __slots__ = ("aval", "count")

  def __init__(self, aval):
    self.aval = aval
    self.count = next(_var_counter)

  def __repr__(self):
    return f"Var(id={self.count}):{self.aval.str_short(short_dtypes=False)}"


class Literal:
  """A scalar constant written inline in a jaxpr (`2.0:f32[]`)."""
  __slots__ = ("val", "aval")

  def __init__(self, val, aval):
    self.val = val
    self.aval = aval

  def __repr__(self):
    return f"Literal({self.val})"


def weak_literal_value(lit: Literal):
  """A weakly typed literal's value as evaluating a jaxpr binds it: weak, as JAX's Python-scalar
  literals are (its NumPy scalar would bind strongly typed)."""
  val = lit.val
  if type(val) in _PYTHON_SCALARS or type(val) is array_type:
    return val
  # a literal wherever it is staged again (a linearized branch's `mul t 2.0:f32[]`)
  return as_scalar_literal(array_from_numpy(np.asarray(val, lit.aval.dtype), True))


class JaxprEqn:
  __slots__ = ("invars", "outvars", "primitive", "params", "effects", "_source_info")

  def __init__(self, invars, outvars, primitive, params, effects=frozenset(), source_info=None):
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.primitive = primitive
    self.params = params
    self.effects = effects
    self._source_info = source_info

  @property
  def source_info(self):
    """Where the eqn was staged: a SourceInfo, as in JAX (haiku's jaxpr_info reads its
    `name_stack`); eqns staged with no frame recorded and outside any named scope share an
    empty one (None is stored: most eqns carry nothing)."""
    si = self._source_info
    if si is None:
      from jaxlite._src.base import source_info_util  # same layer; loaded by then
      return source_info_util.EMPTY_SOURCE_INFO
    return si

  @source_info.setter
  def source_info(self, value):
    self._source_info = value

  def replace(self, **kw):
    new = JaxprEqn(self.invars, self.outvars, self.primitive, self.params, self.effects,
                   self._source_info)
    for k, v in kw.items():
      setattr(new, k, v)
    return new

  def __repr__(self):
    return pp_eqn(self)


class Jaxpr:
  """A typed, first-order program: constvars and invars in, eqns, outvars out."""
  __slots__ = ("constvars", "invars", "outvars", "eqns", "effects", "debug_info", "__weakref__")

  def __init__(self, constvars, invars, outvars, eqns, effects=frozenset(), debug_info=None):
    self.constvars = list(constvars)
    self.invars = list(invars)
    self.outvars = list(outvars)
    self.eqns = list(eqns)
    self.effects = effects
    self.debug_info = debug_info

  in_avals = property(lambda self: [v.aval for v in self.invars])
  out_avals = property(lambda self: [v.aval for v in self.outvars])

  def replace(self, **kw):
    args = dict(constvars=self.constvars, invars=self.invars, outvars=self.outvars,
                eqns=self.eqns, effects=self.effects, debug_info=self.debug_info)
    args.update(kw)
    return Jaxpr(**args)

  def __str__(self):
    return pp_jaxpr(self)

  __repr__ = __str__

  def pretty_print(self, **kw):
    return pp_jaxpr(self, **kw)


class ClosedJaxpr:
  """A jaxpr with values for its constvars."""
  __slots__ = ("jaxpr", "consts", "_compiled", "__weakref__")

  def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
    self.jaxpr = jaxpr
    self.consts = list(consts)
    self._compiled = None

  in_avals = property(lambda self: self.jaxpr.in_avals)
  out_avals = property(lambda self: self.jaxpr.out_avals)
  eqns = property(lambda self: self.jaxpr.eqns)
  # the jaxpr's binders, as JAX's ClosedJaxpr forwards them (haiku's jaxpr_info walks a
  # custom_jvp_call's closed call_jaxpr through them)
  constvars = property(lambda self: self.jaxpr.constvars)
  invars = property(lambda self: self.jaxpr.invars)
  outvars = property(lambda self: self.jaxpr.outvars)
  literals = property(lambda self: self.consts)  # JAX 0.10's name for the consts

  def __str__(self):
    return pp_jaxpr(self.jaxpr)

  __repr__ = __str__

  def pretty_print(self, **kw):
    return pp_jaxpr(self.jaxpr, **kw)

  def _repr_pretty_(self, p, cycle):
    p.text(str(self))


class _SourceInfoState(threading.local):
  """While `recording_source_info` is on: `current` gives the calling user frame's SourceInfo
  for each eqn staged (`pe.DynamicJaxprTrace`), and `override`, set by `eval_jaxpr` while it
  re-binds an eqn that has one, is used instead (a re-staged eqn keeps its origin)."""
  current = None
  override = None
  scope = None  # SourceInfo((), name stack) inside `jax.named_scope`/`named_call`, else None
  name_stacks = None  # source_info_util's stack of NameStacks (this thread's)


source_info_state = _SourceInfoState()


class recording_source_info:
  """Staged eqns record where user code called their operation (`jax.ad_checkpoint.
  print_saved_residuals` names it); off by default: walking the stack costs every eqn."""

  def __init__(self, current):
    self.current = current

  def __enter__(self):
    st = source_info_state
    self.prev = (st.current, st.override)
    st.current, st.override = self.current, None

  def __exit__(self, *exc):
    source_info_state.current, source_info_state.override = self.prev


def staged_source_info():
  """The source info of an eqn being staged now (None unless recording)."""
  st = source_info_state
  if st.current is None:
    return st.scope
  return st.override or st.current()


def eval_jaxpr(jaxpr: Jaxpr, consts, *args, propagate_source_info=True):
  """Interprets a jaxpr by binding each eqn on the current trace."""
  env = {}

  def read(v):
    if type(v) is not Literal:
      return env[v]
    return weak_literal_value(v) if v.aval.weak_type else v.val

  # JAX's class for a count mismatch is ValueError (its safe_map's); the message says which.
  if len(consts) != len(jaxpr.constvars):
    raise ValueError(f"eval_jaxpr: the jaxpr has {len(jaxpr.constvars)} constvars, got "
                     f"{len(consts)} consts")
  if len(args) != len(jaxpr.invars):
    raise ValueError(f"eval_jaxpr: the jaxpr has {len(jaxpr.invars)} invars, got {len(args)} "
                     "arguments")
  for v, x in zip(jaxpr.constvars, consts):
    env[v] = x
  for v, x in zip(jaxpr.invars, args):
    env[v] = x
  st = source_info_state
  recording = st.current is not None and propagate_source_info
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    if recording and eqn._source_info is not None:
      prev, st.override = st.override, eqn._source_info
      try:
        outs = eqn.primitive.bind(*ins, **eqn.params)
      finally:
        st.override = prev
    else:
      outs = eqn.primitive.bind(*ins, **eqn.params)
    if not eqn.primitive.multiple_results:
      outs = [outs]
    for v, x in zip(eqn.outvars, outs):
      env[v] = x
  return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr):
  def fun(*args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)
  return fun


class JaxprTypeError(TypeError):
  pass


def check_jaxpr(jaxpr: Jaxpr) -> None:
  """Type-checks a jaxpr: every var bound once before use, eqn types match abstract eval."""
  env = set()

  def write(v):
    if v in env:
      raise JaxprTypeError(f"Variable {v} defined twice")
    env.add(v)

  def read(v):
    if type(v) is Literal:
      return v.aval
    if v not in env:
      raise JaxprTypeError(f"Variable {v} used before definition")
    return v.aval

  for v in jaxpr.constvars:
    write(v)
  for v in jaxpr.invars:
    write(v)
  for eqn in jaxpr.eqns:
    in_avals = [read(v) for v in eqn.invars]
    rule = eqn.primitive.abstract_eval
    if rule is not None:
      out = rule(*in_avals, **eqn.params)
      out = out if eqn.primitive.multiple_results else [out]
      if len(out) != len(eqn.outvars):
        raise JaxprTypeError(f"{eqn.primitive} gives {len(out)} outputs, the eqn binds "
                             f"{len(eqn.outvars)}")
      for v, a in zip(eqn.outvars, out):
        if not typematch(v.aval, a):
          raise JaxprTypeError(f"{eqn.primitive} output type {v.aval} does not match {a}")
    for sub in jaxprs_in_params(eqn.params):
      check_jaxpr(sub)
    for v in eqn.outvars:
      write(v)
  for v in jaxpr.outvars:
    read(v)


def typematch(a, b) -> bool:
  return a.shape == b.shape and a.dtype == b.dtype


def jaxprs_in_params(params) -> list:
  out = []
  for v in params.values():
    vs = v if isinstance(v, (tuple, list)) else (v,)
    for x in vs:
      if isinstance(x, ClosedJaxpr):
        out.append(x.jaxpr)
      elif isinstance(x, Jaxpr):
        out.append(x)
  return out


# --- shape helpers shared by rule modules --------------------------------------------------------


def canonicalize_shape(shape, context: str = "") -> tuple:
  """A tuple of Python ints, with JAX's TypeError for tracers or non-integers."""
  if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
    shape = (shape,)
  try:
    out = []
    for d in shape:
      if isinstance(d, Tracer):
        raise TypeError
      out.append(int(d) if not isinstance(d, bool) and d == int(d) else d)
      if not isinstance(out[-1], int):
        raise TypeError
    return tuple(out)
  except (TypeError, ValueError):  # ValueError: int("a") for a string entry
    pass
  if isinstance(shape, Tracer) and not shape.aval.shape:
    shape = (shape,)  # a traced scalar stands for a 1-d shape, as an int does
  dims = shape if isinstance(shape, (tuple, list)) else [shape]
  items = ", ".join(str(d) for d in dims)
  trail = "," if isinstance(shape, (tuple, list)) and len(shape) == 1 else ""
  tracers = [d for d in dims if isinstance(d, Tracer)]
  if tracers:  # JAX's hint, then where the traced value came from
    context += ("\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller "
                f"subfunctions.{errors._tracer_context(tracers[0])}")
  raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                  f"got ({items}{trail}).{context}")


def concrete_or_error(force, val, context=""):
  """`val` as a concrete value, raising ConcretizationTypeError for abstract tracers."""
  if isinstance(val, Tracer):
    c = val.to_concrete_value()
    if c is None:
      raise errors.ConcretizationTypeError(val, context)
    return force(c) if force is not None else c
  return force(val) if force is not None else val


def trace_state_clean() -> bool:
  """No transformation is active in this thread (JAX's `core.trace_state_clean`; numpyro asks
  it whether a sampler runs under jit/vmap)."""
  return _state.trace is eval_trace


# `ShapedArray.to_tangent_aval`'s rule, registered by interpreters/ad.py (autodiff owns tangent
# types: extended dtypes name theirs in their `_rules`).
tangent_aval_rule = None
