"""Jaxpr text: a small Wadler/Lindig document layer and the jaxpr layout built on it.

Printouts match JAX 0.10.2 character for character: names, literals, params, hoisting.
"""
from __future__ import annotations

import collections
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxlite._src.base import core, dtypes

__all__ = [
  "ACCURACY_RULE",
  "UNSPECIFIED",
  "Doc",
  "ParamRule",
  "brk",
  "concat",
  "group",
  "join",
  "name_sharing",
  "nest",
  "param_pairs",
  "param_rules",
  "param_str",
  "pp_eqn_standalone",
  "pp_jaxpr",
  "render",
  "text",
  "var_name",
]

# --- documents ---------------------------------------------------------------------------------
# Each node knows its flat width when built (children exist first), so layout is linear.


class Doc:
  __slots__ = ("width",)

  def __add__(self, other: Doc) -> Doc:
    return concat(self, other)


class _Text(Doc):
  __slots__ = ("s",)

  def __init__(self, s: str):
    self.s, self.width = s, len(s)


class _Concat(Doc):
  __slots__ = ("children",)

  def __init__(self, children: tuple):
    self.children, self.width = children, sum(c.width for c in children)


class _Nest(Doc):
  __slots__ = ("child", "n")

  def __init__(self, n: int, child: Doc):
    self.n, self.child, self.width = n, child, child.width


class _Break(Doc):
  __slots__ = ("s",)

  def __init__(self, s: str):
    self.s, self.width = s, len(s)


class _Group(Doc):
  __slots__ = ("child",)

  def __init__(self, child: Doc):
    self.child, self.width = child, child.width


def text(s: str) -> Doc:
  return _Text(s)


def concat(*docs: Doc) -> Doc:
  return _Concat(docs)


def nest(n: int, doc: Doc) -> Doc:
  """Lines broken inside `doc` start `n` columns further in than the enclosing indentation."""
  return _Nest(n, doc)


def brk(s: str = " ") -> Doc:
  """`s` when its group is flat, else a newline and the current indentation."""
  return _Break(s)


def group(doc: Doc) -> Doc:
  return _Group(doc)


def join(sep: Doc, docs: Sequence[Doc]) -> Doc:
  out = []
  for i, d in enumerate(docs):
    if i:
      out.append(sep)
    out.append(d)
  return _Concat(tuple(out))


def render(doc: Doc, width: int = 80) -> str:
  """Lays out `doc`: a group is flat iff its own flat width fits in what is left of the line.

  Text after a group does not count (Lindig's strict layout), so lines may pass `width`.
  """
  out, col = [], 0
  stack = [(0, False, doc)]
  while stack:
    indent, flat, d = stack.pop()
    kind = type(d)
    if kind is _Text:
      out.append(d.s)
      col = _column_after(col, d.s)
    elif kind is _Concat:
      stack.extend((indent, flat, c) for c in reversed(d.children))
    elif kind is _Nest:
      stack.append((indent + d.n, flat, d.child))
    elif kind is _Break:
      if flat:
        out.append(d.s)
        col += d.width
      else:
        out.append("\n" + " " * indent)
        col = indent
    else:
      stack.append((indent, flat or d.width <= width - col, d.child))
  return "".join(out)


def _column_after(col: int, s: str) -> int:
  nl = s.rfind("\n")
  return col + len(s) if nl < 0 else len(s) - nl - 1


# --- variable names ----------------------------------------------------------------------------


def var_name(i: int) -> str:
  """The i-th name: a..z, then ba..zz, baa.. (base 26 with `a` as the zero digit)."""
  s = ""
  while True:
    i, r = divmod(i, 26)
    s = chr(ord("a") + r) + s
    if i == 0:
      return s


class _Names:
  """One naming context per printout: names are handed out lazily, in print order."""

  def __init__(self, reserved=()):
    self.of: dict = {}
    self.reserved = frozenset(reserved)  # hoisted jaxpr names must stay unambiguous
    self.count = 0

  def fresh(self) -> str:
    while True:
      name = var_name(self.count)
      self.count += 1
      if name not in self.reserved:
        return name

  def __call__(self, v) -> str:
    name = self.of.get(v)
    if name is None:
      name = self.of[v] = self.fresh()
    return name

  def __contains__(self, v) -> bool:
    return v in self.of


@dataclass
class _Context:
  names: _Names
  hoisted: dict = field(default_factory=dict)  # Jaxpr -> its `let` name


# --- atoms and binder lists ----------------------------------------------------------------------


def _literal_str(lit) -> str:
  return f"{_literal_value_str(lit.val)}:{lit.aval.str_short(short_dtypes=True)}"


def _literal_value_str(val) -> str:
  # Weak Python scalars (and dtypes.Typed*) keep their Python value; NumPy ones show `.item()`.
  if isinstance(val, (bool, int, float, complex)) and not isinstance(val, np.generic):
    for base in (bool, int, float, complex):  # a Typed* scalar's repr names its type
      if isinstance(val, base):
        return base.__repr__(val)
  if np.ndim(val) == 0:
    return str(np.asarray(val).item())
  return "[...]"


def _atom(v, ctx: _Context) -> str:
  return _literal_str(v) if type(v) is core.Literal else ctx.names(v)


def _binder(v, ctx: _Context) -> Doc:
  return text(f"{ctx.names(v)}:{v.aval.str_short(short_dtypes=True)}")


def _spaced_list(docs: Sequence[Doc]) -> Doc:
  # Each separator is its own group, so a list wraps only once a line has reached the width.
  return nest(2, group(join(group(brk()), docs)))


def _binders(vs, ctx: _Context) -> Doc:
  return _spaced_list([_binder(v, ctx) for v in vs])


def _args(vs, ctx: _Context) -> Doc:
  return _spaced_list([text(_atom(v, ctx)) for v in vs])


def _outs(vs, ctx: _Context) -> Doc:
  items = [text(_atom(v, ctx)) for v in vs]
  body = nest(2, group(join(concat(text(","), group(brk())), items)))
  return concat(text("("), body, text(",)" if len(items) == 1 else ")"))


# --- jaxprs and eqns -----------------------------------------------------------------------------


def _jaxpr_doc(jaxpr, ctx: _Context) -> Doc:
  """`{ lambda C; I. let EQNS in (OUTS) }`; the closing brace counts toward the group's fit."""
  consts = _binders(jaxpr.constvars, ctx)
  invars = _binders(jaxpr.invars, ctx)
  eqns = [_eqn_doc(e, ctx) for e in jaxpr.eqns]
  outs = _outs(jaxpr.outvars, ctx)
  body = concat(text("{ lambda "), consts, text("; "), invars, text(". let"),
                nest(2, concat(brk(), join(brk("; "), eqns))), brk(), text("in "), outs)
  return group(concat(nest(2, body), text(" }")))


# Primitive -> (eqn, binder, atom) -> str, for eqns JAX prints in their own syntax (the ref ops
# of state/primitives.py: `c:f32[3] <- a[...]`); binder/atom give `name:type` and `name`.
eqn_printers: dict = {}


def _eqn_doc(eqn, ctx: _Context) -> Doc:
  """`OUTS = prim[PARAMS] ARGS`, naming outputs, then params' jaxprs, then arguments."""
  printer = eqn_printers.get(eqn.primitive)
  if printer is not None:
    return text(printer(eqn, lambda v: f"{ctx.names(v)}:{v.aval.str_short(short_dtypes=True)}",
                        lambda v: _atom(v, ctx)))
  _share_callee_names(eqn, ctx)
  lhs = (_binders(eqn.outvars, ctx), text(" = ")) if eqn.outvars else ()
  params = _params_doc(eqn, ctx)
  return concat(*lhs, text(eqn.primitive.name), params, text(" "), _args(eqn.invars, ctx))


def _let_doc(name: str, jaxpr, ctx: _Context) -> Doc:
  return concat(text(f"let {name} = "), _jaxpr_doc(jaxpr, ctx), text(" in"))


def _as_jaxpr(v):
  if isinstance(v, core.ClosedJaxpr):
    return v.jaxpr
  return v if isinstance(v, core.Jaxpr) else None


def _jaxpr_ref(jaxpr, ctx: _Context) -> Doc:
  name = ctx.hoisted.get(jaxpr)
  return text(name) if name is not None else _jaxpr_doc(jaxpr, ctx)


# --- jit name sharing ----------------------------------------------------------------------------

# Primitive -> the param holding a callee whose binders reuse the caller's names, so that a
# nested jit reads like inlined code. Sub-jaxprs of other primitives get fresh names. Rows are
# registered next to the primitive's definition (jit's in call_primitives.py).
name_sharing: dict[core.Primitive, str] = {}


def _share_callee_names(eqn, ctx: _Context) -> None:
  key = name_sharing.get(eqn.primitive)
  callee = _as_jaxpr(eqn.params.get(key)) if key else None
  if callee is None or callee in ctx.hoisted:
    return
  _share_invar_names(eqn.invars, callee.invars, ctx.names)
  _share_outvar_names(eqn.outvars, callee.outvars, ctx.names)


def _share_invar_names(outer, inner, names: _Names) -> None:
  seen = set()  # a var passed twice names only the first callee binder
  for o, i in zip(outer, inner):
    if type(o) is core.Literal or o in seen:
      continue
    seen.add(o)
    if i not in names:
      names.of[i] = names(o)


def _share_outvar_names(outer, inner, names: _Names) -> None:
  # Caller outputs tied to callee outvars are named here, before any binder prints: that is
  # why `jit(lambda a, b: (a, b * 2, a, b * 3))(x, y)` has outputs `e c f d`.
  for o, i in zip(outer, inner):
    if type(i) is not core.Literal and i not in names:
      names.of[i] = names(o)


# --- params --------------------------------------------------------------------------------------


class _Unspecified:
  """The sharding of a jit argument or result that the user left unspecified."""
  __slots__ = ()

  def __repr__(self):
    return "UnspecifiedValue"

  def __reduce__(self):
    return "UNSPECIFIED"


UNSPECIFIED = _Unspecified()


def always(v) -> bool:
  return True


def is_none(v) -> bool:
  return v is None


def is_false(v) -> bool:
  return not v


def is_zero(v) -> bool:
  return v == 0


def is_empty(v) -> bool:
  return v is None or len(v) == 0


def none_true(v) -> bool:
  return v is None or not any(v)


def all_none(v) -> bool:
  return v is None or all(x is None for x in v)


def all_unspecified(v) -> bool:
  vs = v if isinstance(v, (tuple, list)) else (v,)
  return all(x is None or x is UNSPECIFIED for x in vs)


def empty_mesh(m) -> bool:
  return m is None or bool(getattr(m, "empty", False)) or getattr(m, "axis_names", None) == ()


def fun_name(f) -> str:
  if isinstance(f, str):
    return f
  while isinstance(f, functools.partial):
    f = f.func
  return getattr(f, "__name__", str(f))


def dims_as_lists(dn):
  (lc, rc), (lb, rb) = dn
  return ((list(lc), list(rc)), (list(lb), list(rb)))


@dataclass(frozen=True)
class ParamRule:
  """How one primitive shows its params: `first` in that order, then the rest sorted.

  `only` limits the rest to those keys; `drop` hides a param when its predicate holds (with
  `drop_none`, any None does); `show` maps a value to what is printed.
  """
  first: tuple = ()
  only: tuple | None = None
  drop: dict = field(default_factory=dict)
  show: dict = field(default_factory=dict)
  drop_none: bool = False

  def pairs(self, params: dict) -> list[tuple[str, Any]]:
    rest = sorted(k for k in params
                  if k not in self.first and (self.only is None or k in self.only))
    keys = [k for k in (*self.first, *rest) if k in params and not self._hidden(k, params[k])]
    return [(k, self.show.get(k, _identity)(params[k])) for k in keys]

  def _hidden(self, k, v) -> bool:
    return (self.drop_none and v is None) or self.drop.get(k, _never)(v)


def _identity(v):
  return v


def _never(v) -> bool:
  return False


_DEFAULT_RULE = ParamRule()
# The rule of the accuracy family (exp, log, sin, tanh, ...): `accuracy=None` is not printed.
ACCURACY_RULE = ParamRule(drop={"accuracy": is_none})

# Primitive -> its rule. A primitive with special printing registers its row right below its
# definition (jit in call_primitives.py, the lax ones in their modules, custom_jvp/vjp_call in
# custom_derivatives.py); every other primitive prints all its params sorted.
param_rules: dict[core.Primitive, ParamRule] = {}


def param_pairs(eqn) -> list[tuple[str, Any]]:
  """The (key, value) params an eqn prints, in print order, after its primitive's rule."""
  return param_rules.get(eqn.primitive, _DEFAULT_RULE).pairs(eqn.params)


def _params_doc(eqn, ctx: _Context) -> Doc:
  """`[k=v ...]`, broken one per line at eqn indent + 2 when it does not fit; `]` at eqn indent."""
  pairs = param_pairs(eqn)
  if not pairs:
    return text("")
  kvs = [concat(text(f"{k}="), _value_doc(v, ctx)) for k, v in pairs]
  return _bracketed("[", kvs, "]")


def _bracketed(left: str, items: list, right: str) -> Doc:
  return group(concat(nest(2, concat(text(left), brk(""), join(brk(), items))),
                      brk(""), text(right)))


def _value_doc(v, ctx: _Context) -> Doc:
  jaxpr = _as_jaxpr(v)
  if jaxpr is not None:
    return _jaxpr_ref(jaxpr, ctx)
  if type(v) in (tuple, list) and any(_as_jaxpr(x) is not None for x in v):
    return _bracketed("(", [_value_doc(x, ctx) for x in v], ")")
  return text(param_str(v))


_ADDRESS = re.compile(r" at 0x([0-9a-fA-F]+)")


def param_str(v) -> str:
  """A non-jaxpr param value as printed: `str`, dtypes by name, sets sorted, addresses masked."""
  if isinstance(v, np.dtype) or hasattr(v, "_short_name"):
    s = dtypes.dtype_name(v)
  elif isinstance(v, type) and issubclass(v, np.generic):
    s = np.dtype(v).name
  elif type(v) is frozenset:
    s = _frozenset_str(v)
  else:
    s = str(v)
  return _ADDRESS.sub(lambda m: " at 0x" + "X" * len(m.group(1)), s)


def _frozenset_str(v: frozenset) -> str:
  if not v:
    return "frozenset()"
  try:
    items = sorted(v)
  except TypeError:
    items = sorted(v, key=repr)
  return "frozenset({" + ", ".join(repr(x) for x in items) + "})"


# --- hoisting shared sub-jaxprs ------------------------------------------------------------------


def _count_sub_jaxprs(top) -> tuple[dict, dict]:
  """Occurrences of each sub-jaxpr object, breadth-first, and the eqn `name` first seen with it.

  A repeated jaxpr's contents count once per occurrence; expanding two occurrences is enough to
  see every count reach 2, which keeps shared chains from blowing up.
  """
  occurrences, first_name = {}, {}
  queue = collections.deque([top])
  while queue:
    for eqn in queue.popleft().eqns:
      name = None if eqn.primitive in unnamed_calls else eqn.params.get("name")
      for sub in core.jaxprs_in_params(eqn.params):
        n = occurrences[sub] = occurrences.get(sub, 0) + 1
        if name is not None:
          first_name.setdefault(sub, name)
        if n <= 2:
          queue.append(sub)
  return occurrences, first_name


# Primitives whose `name` is shown among their params but never names a hoisted sub-jaxpr: in
# JAX it is not a param (custom_jvp_call/custom_vjp_call print their function's name), so
# their shared call_jaxpr is `let jaxpr = ...`. Filled where those primitives are defined.
unnamed_calls: set = set()


def _hoisted_names(top) -> dict:
  """Jaxprs printed once as `let NAME = … in`: those met twice or with more than 10 eqns."""
  occurrences, first_name = _count_sub_jaxprs(top)
  out: dict = {}
  for sub, n in occurrences.items():
    if n >= 2 or len(sub.eqns) > 10:
      out[sub] = _unique_name(_let_name(first_name.get(sub)), set(out.values()))
  return out


def _let_name(name) -> str:
  stripped = "" if name is None else str(name).strip("<>")
  return stripped or "jaxpr"


def _unique_name(base: str, taken: set) -> str:
  if base not in taken:
    return base
  i = 1
  while f"{base}{i}" in taken:
    i += 1
  return f"{base}{i}"


# --- entry points --------------------------------------------------------------------------------


def _unused_outvars(jaxpr) -> list:
  """Eqn outputs that no eqn reads and the jaxpr does not return (printed `_`)."""
  used = {v for e in jaxpr.eqns for v in e.invars if type(v) is not core.Literal}
  used.update(v for v in jaxpr.outvars if type(v) is not core.Literal)
  return [v for e in jaxpr.eqns for v in e.outvars if v not in used]


def pp_jaxpr(jaxpr, width: int = 80) -> str:
  """The text of a Jaxpr (or ClosedJaxpr), hoisted shared sub-jaxprs first."""
  jaxpr = _as_jaxpr(jaxpr)
  hoisted = _hoisted_names(jaxpr)
  ctx = _Context(_Names(hoisted.values()), hoisted)
  for v in _unused_outvars(jaxpr):
    ctx.names.of[v] = "_"
  docs = [_let_doc(name, sub, ctx) for sub, name in hoisted.items()]
  docs.append(_jaxpr_doc(jaxpr, ctx))
  return "\n".join(render(d, width) for d in docs)


def pp_eqn_standalone(eqn, width: int = 80) -> str:
  """One eqn in a fresh naming context, e.g. `a:f32[3] = add b 1.0:f32[]`."""
  return render(_eqn_doc(eqn, _Context(_Names())), width)



core.register(pp_jaxpr=pp_jaxpr, pp_eqn=pp_eqn_standalone)
