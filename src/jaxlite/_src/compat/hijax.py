"""`jax.experimental.hijax` on jaxlite: user-defined "high" types and primitives over lo arrays.

A hi value (registered with `register_hitype`) is a Python object whose contents are lo values
(arrays or tracers). A `HiPrimitive` acting on it is run eagerly on concrete values (`impl`) and,
while any transformation is tracing, expanded at bind time into lo operations (`to_lojax`), so
jit/grad/vmap see only the array ops it performs. JAX instead stages hi primitives and lowers them
later; because the expansion happens before any lo transformation sees the values, the result is
the same for the libraries that use hijax (flax.nnx's hijax Variables), and the `jvp`/`transpose`
rules of a HiPrimitive are not consulted: the lo ops carry the derivatives. Hi values are never
tracers here, so `cur_qdd(x)` is the value's own current quasi-dynamic data.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

from jaxlite._src.base import core
from jaxlite._src.compat.core_adapters import AbstractValue
from jaxlite._src.base.effects import Effect


class QuasiDynamicData:
  """Base of the quasi-dynamic data (QDD) of a mutable hi type: the part of its type that
  changes as the value is mutated (e.g. the avals and treedef of a Variable's leaves)."""


class MutableQuasiDynamicData:
  """A QDD cell that an abstract evaluation rule updates as a mutation is traced."""

  def __init__(self, val):
    self.init_val = val
    self.cur_val = val

  def update(self, val):
    self.cur_val = val

  def __repr__(self):
    return f"MutableQuasiDynamicData(init_val={self.init_val}, cur_val={self.cur_val})"


@dataclasses.dataclass(frozen=True)
class AvalQDD:
  """An abstract value of a mutable hi type together with its current (immutable) QDD."""
  aval: Any
  qdd: Any
  is_high = True
  has_qdd = True

  def lo_ty(self):
    return self.aval.lo_ty_qdd(self.qdd)

  def read_loval(self, val):
    return self.aval.read_loval(self.qdd, val)

  def new_from_loval(self, *lo_vals):
    return self.aval.new_from_loval(self.qdd, *lo_vals)


@dataclasses.dataclass(frozen=True)
class AvalMutableQDD:
  """The argument an abstract evaluation rule receives for a mutable hi input: its aval and the
  QDD cell to `update` when the primitive changes the value's type state."""
  aval: Any
  mutable_qdd: MutableQuasiDynamicData


class aval_property:
  """A property declared on a hi type's aval; `fget` receives the hi value it is read from."""
  __slots__ = ("fget",)

  def __init__(self, fget):
    self.fget = fget


class aval_method:
  """A method declared on a hi type's aval; `fun` receives the hi value it is called on."""
  __slots__ = ("fun",)

  def __init__(self, fun):
    self.fun = fun

  def bound_to(self, value):
    return self.fun.__get__(value, type(value))


def cur_qdd(x):
  """The current quasi-dynamic data of the mutable hi value `x` (`x.cur_qdd()`)."""
  method = getattr(x, "cur_qdd", None)
  if method is None:
    raise TypeError(f"cur_qdd: expected a value of a mutable hi type (one with `cur_qdd`), "
                    f"got {type(x).__name__}")
  return method()


class EffectTypeSet:
  """A set of effect types (`control_flow_allowed_effects.add_type(MyEffect)`)."""

  def __init__(self):
    self._types: set[type] = set()

  def add_type(self, effect_type: type[Effect]):
    if not (isinstance(effect_type, type) and issubclass(effect_type, Effect)):
      raise TypeError(f"add_type: expected a subclass of Effect, got {effect_type!r}")
    self._types.add(effect_type)

  def contains(self, eff) -> bool:
    return any(isinstance(eff, t) for t in self._types)

  def filter_in(self, effs):
    return [e for e in effs if self.contains(e)]

  def filter_not_in(self, effs):
    return [e for e in effs if not self.contains(e)]


# Effects that control flow (cond/while/scan bodies) may carry; recorded for the libraries that
# register theirs. jaxlite's control flow does not reject effects by type, so nothing reads it.
control_flow_allowed_effects = EffectTypeSet()


# --- mutable hi values closed over by jit --------------------------------------------------------
# A jit trace expands hi primitives at bind time, so a concrete mutable hi value the traced
# function closes over (not an argument) would be left holding the trace's tracers. JAX
# functionalizes such a value: its lo values at entry are inputs, at exit extra outputs written
# back after the call. jaxlite gets the same effect with one frame per jit trace: the lo values
# at the first hi bind that touches the value are its inputs (concrete arrays, so the trace's
# constants, and the entry is not cached), at the end of the trace the value is put back to them
# and its new lo values become extra outputs, which `Writeback.unflatten` stores into it.
_capture_frames: list = []


class _Born:
  """A frame's entry for a hi value made inside its trace (kept alive so its id stays its)."""
  __slots__ = ("x",)

  def __init__(self, x):
    self.x = x


def _capture_closed_over(args):
  for x in args:
    if isinstance(x, core.Tracer):
      continue
    rule = core.hitype_avals.get(type(x))
    if rule is None:
      continue
    for frame in _capture_frames:
      if id(x) not in frame:
        frame[id(x)] = _Born(x)  # reading the state binds hi primitives on x: no recursion
        aval = rule(x)
        if not getattr(aval, "has_qdd", False):
          continue
        try:
          state = cur_qdd(x)
          lo = list(aval.read_loval(state, x))
        except NotImplementedError:  # a type without the lowering interface: left as is
          continue
        frame[id(x)] = (x, aval, state, lo)


def _captured(frame):
  return [e for e in frame.values() if type(e) is tuple]


class CaptureFrame:
  """Records the mutable hi values a jit trace touches (`with` around the traced call)."""

  def __enter__(self):
    self.frame = {}
    _capture_frames.append(self.frame)
    return self

  def __exit__(self, *exc):
    _capture_frames.remove(self.frame)
    if exc[0] is not None:  # a failed trace: put every value back as it was
      for x, aval, state, lo0 in _captured(self.frame):
        aval.update_from_loval(state, x, *lo0)
    return False

  def mutated(self):
    """[(value, state at exit, new lo values)] of the values the trace changed; each value is
    put back to its lo values at entry (the call's outputs bring the new ones)."""
    out = []
    for x, aval, state0, lo0 in _captured(self.frame):
      state = cur_qdd(x)
      lo = list(aval.read_loval(state, x))
      if len(lo) == len(lo0) and all(a is b for a, b in zip(lo, lo0)):
        continue
      aval.update_from_loval(state0, x, *lo0)
      out.append((x, aval, state, lo))
    return out


class Writeback:
  """An output treedef that also stores a jit call's trailing extra outputs into the closed-over
  mutable hi values its trace changed (see CaptureFrame)."""

  def __init__(self, tree, mutated):
    self.tree = tree
    self.targets = [(x, aval, state, len(lo)) for x, aval, state, lo in mutated]
    self.num_leaves = tree.num_leaves + sum(n for *_, n in self.targets)

  def unflatten(self, leaves):
    leaves = list(leaves)
    i = self.tree.num_leaves
    for x, aval, state, n in self.targets:
      aval.update_from_loval(state, x, *leaves[i:i + n])
      i += n
    return self.tree.unflatten(leaves[:self.tree.num_leaves])


def _must_override(obj, name):
  return NotImplementedError(f"{type(obj).__name__}.{name} must be overridden")


class HiPrimitive(core.Primitive):
  """A primitive over hi values: `impl` runs it eagerly, `to_lojax` expands it into lo ops while
  tracing; `abstract_eval`, `jvp` and `transpose` complete the JAX interface (see the module
  docstring for why jaxlite's transformations do not call the last two)."""

  def __init__(self, name):
    # Not core.Primitive.__init__: its `impl`/`abstract_eval` instance slots would hide the
    # subclass's methods of those names.
    self.name = name
    self.eager_weak_type = None

  def is_high(self, *avals, **params) -> bool:
    return True

  def is_effectful(self, params) -> bool:
    return False

  def bind(self, *args, **params):
    # Eagerly (no transformation is tracing) the concrete rule runs; otherwise the expansion into
    # lo ops, whose binds go to the current trace as any other jaxlite primitive's do.
    if core.current_trace() is core.eval_trace and type(self).impl is not HiPrimitive.impl:
      return self.impl(*args, **params)
    if not _capture_frames:
      return self.to_lojax(*args, **params)
    _capture_closed_over(args)
    out = self.to_lojax(*args, **params)
    for x in (out if isinstance(out, (list, tuple)) else [out]):
      if type(x) in core.hitype_avals:  # made inside the trace: not closed over
        for frame in _capture_frames:
          frame.setdefault(id(x), _Born(x))
    return out

  def impl(self, *args, **params):
    """The eager rule; a subclass without one runs `to_lojax` eagerly too."""
    return self.to_lojax(*args, **params)

  def abstract_eval(self, *arg_avals, **params):
    raise _must_override(self, "abstract_eval")

  def to_lojax(self, *args, **params):
    raise _must_override(self, "to_lojax")

  def jvp(self, primals, tangents, **params):
    raise _must_override(self, "jvp")

  def transpose(self, *args, **params):
    raise _must_override(self, "transpose")


class HiType(AbstractValue):
  """The aval of an immutable hi type: how it lowers to lo types and values and back."""
  is_high = True
  has_qdd = False

  def lo_ty(self):
    raise _must_override(self, "lo_ty")

  def lower_val(self, hi_val):
    raise _must_override(self, "lower_val")

  def raise_val(self, *lo_vals):
    raise _must_override(self, "raise_val")

  def to_tangent_aval(self):
    raise _must_override(self, "to_tangent_aval")

  def to_ct_aval(self):
    return self.to_tangent_aval()


class MutableHiType(AbstractValue):
  """The aval of a mutable hi type, whose lo types depend on its current QDD."""
  is_high = True
  has_qdd = True
  is_writer = False
  type_state = aval_method(cur_qdd)

  def lo_ty_qdd(self, state):
    raise _must_override(self, "lo_ty_qdd")

  def lo_ty(self):
    raise TypeError(f"{type(self).__name__}: a mutable hi type's lo types depend on its QDD; "
                    "use lo_ty_qdd(state)")

  def new_from_loval(self, state, *vals):
    raise _must_override(self, "new_from_loval")

  def read_loval(self, state, val):
    raise _must_override(self, "read_loval")

  def update_from_loval(self, state, val, *lo_vals):
    raise _must_override(self, "update_from_loval")

  def to_tangent_aval(self):
    raise _must_override(self, "to_tangent_aval")

  def to_ct_aval(self):
    return self.to_tangent_aval()


def register_hitype(val_cls: type, typeof_fn) -> None:
  """Makes `jax.typeof(v)` of an instance `v` of `val_cls` return `typeof_fn(v)`."""
  if not isinstance(val_cls, type) or not callable(typeof_fn):
    raise TypeError(f"register_hitype: expected a class and a function, got {val_cls!r} and "
                    f"{typeof_fn!r}")
  core.hitype_avals[val_cls] = typeof_fn


def hijax_method(f):
  return aval_method(f)


# --- mutable hi values passed to jit / eval_shape as arguments -----------------------------------
# JAX lowers a hi argument to its lo values (the jit's real inputs), rebuilds a hi value from them
# inside the trace, and returns the lo values it ends with as extra outputs, written back into the
# caller's object after the call. `lower_hi_args` swaps each hi leaf for a `HiArg` pytree node
# whose children are those lo values, so the jit keys its cache on their types and the static
# part (the hi type and its QDD), and the trace sees ordinary arrays.

class HiArg:
  """A hi argument as the jit sees it: `lo` (its lo values, the pytree children) and the static
  `key` (its position among the call's hi arguments), `aval` and `qdd`. One object passed twice
  is two values inside, each written back in turn (the last wins), as in JAX."""
  __slots__ = ("key", "aval", "qdd", "lo")

  def __init__(self, key, aval, qdd, lo):
    self.key, self.aval, self.qdd, self.lo = key, aval, qdd, list(lo)


class HiFinals:
  """The trace's extra output: the lo values each hi argument ends with (children) and, static,
  its key and final QDD (a dict's Variable may gain entries: the QDD changes)."""
  __slots__ = ("keys", "lo")

  def __init__(self, keys, lo):
    self.keys, self.lo = tuple(keys), list(lo)


def _register_nodes():
  from jaxlite._src.base import tree_util
  tree_util.register_pytree_node(
      HiArg, lambda h: (h.lo, (h.key, h.aval, h.qdd)), lambda aux, lo: HiArg(*aux, lo))
  tree_util.register_pytree_node(
      HiFinals, lambda f: (f.lo, f.keys), lambda keys, lo: HiFinals(keys, lo))


_register_nodes()


def is_hi(x) -> bool:
  return type(x) in core.hitype_avals


def lower_hi_args(tree):
  """(`tree` with each mutable hi leaf a HiArg, the hi objects by key)."""
  from jaxlite._src.base import tree_util
  originals = []

  def lower(x):
    if not is_hi(x):
      return x
    aval = core.hitype_avals[type(x)](x)
    originals.append(x)
    qdd = cur_qdd(x)
    return HiArg(len(originals) - 1, aval, qdd, aval.read_loval(qdd, x))
  return tree_util.tree_map(lower, tree), originals


def raise_hi_args(tree):
  """Inside the trace: `tree` with each HiArg a hi value built from its (traced) lo values; and
  {key: (hi value, aval, lo values it started with)}."""
  from jaxlite._src.base import tree_util
  made = {}

  def rebuild(x):
    if type(x) is not HiArg:
      return x
    if x.key not in made:
      hi = x.aval.new_from_loval(x.qdd, *x.lo)
      for frame in _capture_frames:  # an argument, not a value the trace closes over
        frame.setdefault(id(hi), _Born(hi))
      made[x.key] = (hi, x.aval, x.lo)
    return made[x.key][0]
  return tree_util.tree_map(rebuild, tree, is_leaf=lambda x: type(x) is HiArg), made


def hi_finals(made) -> HiFinals:
  """The lo values each mutable hi argument ends with (all of them, changed or not, as JAX
  writes every one back; an immutable one, `has_qdd` False, is left out)."""
  keys, lo = [], []
  for key, (hi, aval, lo0) in sorted(made.items()):
    if not getattr(aval, "has_qdd", False):
      continue
    qdd = cur_qdd(hi)
    now = list(aval.read_loval(qdd, hi))
    keys.append((key, aval, qdd, len(now)))
    lo += now
  return HiFinals(keys, lo)


def _replace_dynamic(args, kwargs, dynamic_parts, transform):
  """`transform` applied to the dynamic arguments (positions and names dynamic_parts gives)
  together: (args, kwargs, what transform returned beside them)."""
  pos, names = dynamic_parts(args, kwargs)
  (new_pos, new_kw), extra = transform(([args[i] for i in pos], {k: kwargs[k] for k in names}))
  full = list(args)
  for i, v in zip(pos, new_pos):
    full[i] = v
  return full, {**kwargs, **new_kw}, extra


def lower_call_args(args, kwargs, dynamic_parts):
  """(args, kwargs) of a jit call with each dynamic hi leaf a HiArg, and the hi objects."""
  return _replace_dynamic(args, kwargs, dynamic_parts, lower_hi_args)


def raising_hi_args(fun, dynamic_parts):
  """`fun` over lowered hi arguments: rebuilds them, calls `fun`, and returns (its output, the
  HiFinals of the hi arguments)."""
  @functools.wraps(fun)  # the signature static_argnames are resolved against
  def with_hi(*args, **kwargs):
    args, kwargs, made = _replace_dynamic(args, kwargs, dynamic_parts, raise_hi_args)
    return fun(*args, **kwargs), hi_finals(made)
  return with_hi


def write_back(finals: HiFinals, originals) -> None:
  """Stores the call's final lo values into the caller's hi objects."""
  i = 0
  for key, aval, qdd, n in finals.keys:
    aval.update_from_loval(qdd, originals[key], *finals.lo[i:i + n])
    i += n


# --- mutable hi values a loop body closes over ---------------------------------------------------
# A scan body that writes a hi value it closes over (nnx: `v[...] += 1` inside `lax.scan`) must
# see its own previous write on the next step: JAX threads such values through the loop's carry.
# jaxlite traces the body once under a CaptureFrame; when that trace wrote a closed-over value
# (put back at once), the scan runs again with the value's lo values as extra carries
# (`thread_through_scan`), and writes the last step's into it.

class ClosedOverMutation(Exception):
  """A loop body's trace wrote the closed-over hi values in `mutated` (already put back)."""

  def __init__(self, mutated):
    super().__init__("a loop body wrote closed-over hi values")
    self.mutated = mutated


def trace_probing_writes(trace):
  """`trace()`, raising ClosedOverMutation when it wrote closed-over hi values."""
  with CaptureFrame() as cap:
    out = trace()
    mutated = cap.mutated()
  if mutated:
    raise ClosedOverMutation(mutated)
  return out


def thread_through_scan(scan, f, init, mutated):
  """`scan(g, (init, lo values))` where g sets each written hi value from its carry before
  calling `f` and returns its new lo values; the last step's are stored into the values."""
  targets = [(x, aval, cur_qdd(x)) for x, aval, *_ in mutated]
  lo0 = [list(aval.read_loval(state, x)) for x, aval, state in targets]

  def g(carry, x):
    c, his = carry
    for (hx, aval, state), lo in zip(targets, his):
      aval.update_from_loval(state, hx, *lo)
    c, y = f(c, x)
    return (c, [list(aval.read_loval(cur_qdd(hx), hx)) for hx, aval, _ in targets]), y

  (c, his), ys = scan(g, (init, lo0))
  for (hx, aval, state), lo in zip(targets, his):
    aval.update_from_loval(state, hx, *lo)
  return c, ys
