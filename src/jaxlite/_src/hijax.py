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
from typing import Any

from jaxlite._src import core
from jaxlite._src.core_adapters import AbstractValue
from jaxlite._src.effects import Effect


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
    return self.to_lojax(*args, **params)

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
