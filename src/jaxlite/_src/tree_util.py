"""Pytrees: the registry of container types, flattening to (leaves, PyTreeDef) and back.

Every utility of `jax.tree` / `jax.tree_util` lives here; the public modules only re-export.
"""
from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import operator
import textwrap
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
Leaf = Any
KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyLeafPair = tuple[KeyEntry, Any]
KeyPath = tuple[KeyEntry, ...]

# A treedef is stored as a nested "spec": `None` for a leaf, `(kind, aux, child_specs)` for a
# node. Plain tuples make equality and hashing run in C, and pickle with no extra code.

# --- key path entries --------------------------------------------------------------------------


class _KeyEntry:
  """Base of the four key types: immutable, hashable, equal by value, matchable by field."""
  __slots__ = ("_v",)

  def __init__(self, v):
    object.__setattr__(self, "_v", v)

  def __setattr__(self, name, value):
    raise AttributeError(f"property of {type(self).__name__!r} object has no setter")

  def __eq__(self, other):
    return type(other) is type(self) and self._v == other._v

  def __hash__(self):
    return hash(self._v)

  def __repr__(self):
    return f"{type(self).__name__}({self.__match_args__[0]}={self._v!r})"

  def __reduce__(self):
    return type(self), (self._v,)


def _checked(cls_name: str, field: str, v, want: type):
  if not isinstance(v, want):
    raise TypeError(f"{cls_name}({field}=...) expects a {want.__name__}, got {type(v)}: {v!r}.")
  return v


class DictKey(_KeyEntry):
  """A dict-like child, printed `['a']`."""
  __slots__ = ()
  __match_args__ = ("key",)
  key = property(lambda self: self._v)

  def __str__(self):
    return f"[{self._v!r}]"


class SequenceKey(_KeyEntry):
  """A list or tuple child, printed `[0]`."""
  __slots__ = ()
  __match_args__ = ("idx",)
  idx = property(lambda self: self._v)

  def __init__(self, idx: int):
    super().__init__(_checked("SequenceKey", "idx", idx, int))

  def __hash__(self):
    return self._v + 1  # jaxlib's value: sets of keys then iterate as in JAX's error messages

  def __str__(self):
    return f"[{self._v!r}]"


class GetAttrKey(_KeyEntry):
  """An attribute child (namedtuple field, dataclass field), printed `.x`."""
  __slots__ = ()
  __match_args__ = ("name",)
  name = property(lambda self: self._v)

  def __init__(self, name: str):
    super().__init__(_checked("GetAttrKey", "name", name, str))

  def __str__(self):
    return f".{self._v}"


class FlattenedIndexKey(_KeyEntry):
  """The i-th child of a node registered without keys, printed `[<flat index i>]`."""
  __slots__ = ()
  __match_args__ = ("key",)
  key = property(lambda self: self._v)

  def __init__(self, key: int):
    super().__init__(_checked("FlattenedIndexKey", "key", key, int))

  def __hash__(self):
    return self._v + 42  # jaxlib's value, as for SequenceKey

  def __str__(self):
    return f"[<flat index {self._v}>]"


def _simple_entrystr(key) -> str:
  return str(key._v) if isinstance(key, _KeyEntry) else str(key)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
  """A key path as text: `['a'][0].x`, or `a/0/x` with `simple=True, separator='/'`."""
  return separator.join(map(_simple_entrystr if simple else str, keys))


# --- node kinds --------------------------------------------------------------------------------
# One kind object per node type. `children` and `build` are the hot paths; the rest serve
# reprs, node_data(), key paths, flatten_up_to's checks and flatten_one_level.


class _Kind:
  """How values of one node type split into (children, aux) and are rebuilt from them."""
  __slots__ = ("__weakref__", "type")

  def __init__(self, typ: type):
    self.type = typ

  def __reduce__(self):
    return _kind_for_pickle, (self.type,)

  def __repr__(self):
    return f"<pytree node kind for {self.type.__name__}>"

  def node_data(self, aux):
    return (self.type, aux)

  def keyed(self, x):
    children, aux = self.children(x)
    return [FlattenedIndexKey(i) for i in range(len(children))], children, aux

  def one_level(self, x):
    return self.children(x)


class _TupleKind(_Kind):
  __slots__ = ()

  def children(self, x):
    return x, None

  def build(self, aux, xs):
    return tuple(xs)

  def keyed(self, x):
    return list(map(SequenceKey, range(len(x)))), x, None

  def fmt(self, aux, parts):
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"

  def up_to(self, x, aux, n):
    if type(x) is not tuple:
      raise ValueError(f"Expected tuple, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"Tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
    return x


class _ListKind(_TupleKind):
  __slots__ = ()

  def build(self, aux, xs):
    return xs if type(xs) is list else list(xs)

  def fmt(self, aux, parts):
    return f"[{', '.join(parts)}]"

  def up_to(self, x, aux, n):
    if type(x) is not list:
      raise ValueError(f"Expected list, got {x!r}.")
    if len(x) != n:
      raise ValueError(f"List arity mismatch: {len(x)} != {n}; list: {x!r}.")
    return x


def _sorted_keys(d) -> tuple:
  try:
    return tuple(sorted(d))
  except Exception as e:
    raise ValueError("Comparator raised exception while sorting pytree dictionary keys.") from e


class _DictKind(_Kind):
  """Children in sorted key order; aux is the tuple of sorted keys."""
  __slots__ = ()

  def children(self, x):
    keys = _sorted_keys(x)
    return [x[k] for k in keys], keys

  def build(self, aux, xs):
    return dict(zip(aux, xs))

  def keyed(self, x):
    children, keys = self.children(x)
    return list(map(DictKey, keys)), children, keys

  def one_level(self, x):
    children, keys = self.children(x)
    return tuple(children), keys

  def node_data(self, aux):
    return (dict, list(aux))

  def fmt(self, aux, parts):
    return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(aux, parts)) + "}"

  def up_to(self, x, aux, n):
    if type(x) is not dict:
      raise ValueError(f"Expected dict, got {x!r}.")
    keys = _sorted_keys(x)
    if keys != aux:
      raise ValueError(f"Dict key mismatch; expected keys: {list(aux)}; "
                       f"present keys: {list(keys)}.")
    return [x[k] for k in keys]


_NONE_PREFIX_HINT = (
    "\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a tree-prefix "
    "of non-None values. To obtain the previous behavior, you can usually write:\n"
    "  jax.tree.map(lambda x, y: None if x is None else f(x, y), a, b, "
    "is_leaf=lambda x: x is None)")


class _NoneKind(_Kind):
  """None is a node with no children, so it never appears among the leaves."""
  __slots__ = ()

  def children(self, x):
    return (), None

  def build(self, aux, xs):
    return None

  def keyed(self, x):
    return [], (), None

  def fmt(self, aux, parts):
    return "None"

  def up_to(self, x, aux, n):
    if x is not None:
      raise ValueError(f"Expected None, got {x!r}.{_NONE_PREFIX_HINT}")
    return ()


class _NamedTupleKind(_Kind):
  """Any tuple subclass with `_fields`; detected once per type, keyed by field name."""
  __slots__ = ()

  def children(self, x):
    return x, None

  def build(self, aux, xs):
    return self.type(*xs)

  def keyed(self, x):
    return list(map(GetAttrKey, x._fields)), x, None

  def one_level(self, x):
    return list(x), self.type

  def node_data(self, aux):
    return (self.type, None)

  def fmt(self, aux, parts):
    return f"CustomNode(namedtuple[{self.type.__name__}], [{', '.join(parts)}])"

  def up_to(self, x, aux, n):
    if not (isinstance(x, tuple) and hasattr(x, "_fields")):
      raise ValueError(f"Expected named tuple, got {x!r}.")
    if type(x) is not self.type:
      raise ValueError(f"Named tuple type mismatch: expected type: {self.type!r}, tuple: {x!r}.")
    if len(x) != n:
      raise ValueError(f"Named tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
    return x


class _CustomKind(_Kind):
  """A type registered with user flatten/unflatten functions."""
  __slots__ = ("flatten", "flatten_with_keys", "unflatten")
  _what = "custom node"

  def __init__(self, typ, flatten, unflatten, flatten_with_keys=None):
    super().__init__(typ)
    self.flatten, self.unflatten, self.flatten_with_keys = flatten, unflatten, flatten_with_keys

  def children(self, x):
    out = self.flatten(x)
    if type(out) is not tuple or len(out) != 2:
      raise ValueError("The to_iterable function for a custom PyTree node should return a "
                       f"(children, aux_data) tuple, got {out!r}")
    children, aux = out
    if type(children) is not tuple:
      try:
        children = tuple(children)
      except TypeError:
        raise ValueError("The to_iterable function for a custom PyTree node should return a "
                         "(children, aux_data) tuple where 'children' is iterable, got "
                         f"{out!r}") from None
    return children, aux

  def build(self, aux, xs):
    return self.unflatten(aux, tuple(xs))

  def keyed(self, x):
    if self.flatten_with_keys is None:
      return super().keyed(x)
    pairs, aux = self.flatten_with_keys(x)
    pairs = tuple(pairs)
    return [k for k, _ in pairs], [c for _, c in pairs], aux

  def one_level(self, x):
    return self.flatten(x)

  def fmt(self, aux, parts):
    return f"CustomNode({self.type.__name__}[{aux}], [{', '.join(parts)}])"

  def up_to(self, x, aux, n):
    if type(x) is not self.type:
      raise ValueError(self._type_mismatch(x))
    children, x_aux = self.children(x)
    if not _aux_equal(x_aux, aux):
      raise ValueError(f"Mismatch {self._what} data: {aux!r} != {x_aux!r}; value: {x!r}.")
    if len(children) != n:
      raise ValueError(f"Custom type arity mismatch: {len(children)} != {n}; value: {x!r}.")
    return children

  def _type_mismatch(self, x) -> str:
    return f"Custom node type mismatch: expected type: {self.type!r}, value: {x!r}."


class _DataclassKind(_CustomKind):
  """A dataclass registered with data fields (children) and meta fields (aux, a tuple)."""
  __slots__ = ("data_fields", "meta_fields")
  _what = "custom dataclass node"

  def __init__(self, typ, data_fields: tuple, meta_fields: tuple):
    super().__init__(typ, self._flatten, self._unflatten)
    self.data_fields, self.meta_fields = data_fields, meta_fields

  def _flatten(self, x):
    return (tuple(getattr(x, f) for f in self.data_fields),
            tuple(getattr(x, f) for f in self.meta_fields))

  def _unflatten(self, meta, data):
    return self.type(**dict(zip(self.meta_fields, meta)), **dict(zip(self.data_fields, data)))

  def children(self, x):
    return self._flatten(x)

  def keyed(self, x):
    return list(map(GetAttrKey, self.data_fields)), *self._flatten(x)

  def one_level(self, x):
    data, meta = self._flatten(x)
    return list(data), meta

  def _type_mismatch(self, x) -> str:
    return f"Custom dataclass node type mismatch: expected type: {self.type!r}, value: {x!r}."


def _aux_equal(a, b) -> bool:
  try:
    return a is b or bool(a == b)
  except Exception as e:
    raise ValueError(
        "Exception raised while checking equality of metadata fields of pytree. Make sure that "
        "metadata fields are hashable and have simple equality semantics. (Note: arrays cannot "
        "be passed as metadata fields!)") from e


# --- the registry ------------------------------------------------------------------------------
# `_registered` holds explicit registrations. `_kind_cache` maps every type ever seen to its
# kind, or to None for a leaf type, so the hot path is one dict lookup with no isinstance.

_registered: dict[type, _Kind] = {}
_kind_cache: dict[type, _Kind | None] = {}
_leaf_types: set[type] = set()  # the None entries of _kind_cache, for whole-node checks in C
_UNSEEN = object()


def _classify(typ: type) -> _Kind | None:
  """The kind of an unregistered type: a namedtuple node, else a leaf; cached for next time."""
  kind = _registered.get(typ)
  if kind is None and issubclass(typ, tuple) and hasattr(typ, "_fields"):
    kind = _NamedTupleKind(typ)
  _kind_cache[typ] = kind
  if kind is None:
    _leaf_types.add(typ)
  return kind


def _kind_of(typ: type) -> _Kind | None:
  kind = _kind_cache.get(typ, _UNSEEN)
  return _classify(typ) if kind is _UNSEEN else kind


def _kind_for_pickle(typ: type) -> _Kind:
  kind = _kind_of(typ)
  if kind is None:
    raise ValueError(f"Cannot unpickle a PyTreeDef: {typ} is not a registered pytree node type.")
  return kind


def _register(kind: _Kind) -> None:
  if kind.type in _registered:
    raise ValueError(f"Duplicate custom PyTreeDef type registration for {kind.type}.")
  _registered[kind.type] = kind
  _kind_cache[kind.type] = kind
  _leaf_types.discard(kind.type)


for _kind in (_TupleKind(tuple), _ListKind(list), _DictKind(dict), _NoneKind(type(None))):
  _register(_kind)
del _kind


# --- flattening --------------------------------------------------------------------------------


def _flatten_node(kind: _Kind, x, leaves: list) -> tuple:
  """The spec of node `x`; appends its leaves. Leaf children are handled inline (no call)."""
  children, aux = kind.children(x)
  if _leaf_types.issuperset(map(type, children)):  # common case, one C-level scan
    leaves.extend(children)
    return (kind, aux, (None,) * len(children))
  specs = []
  for c in children:
    k = _kind_cache.get(type(c), _UNSEEN)
    if k is _UNSEEN:
      k = _classify(type(c))
    if k is None:
      leaves.append(c)
      specs.append(None)
    else:
      specs.append(_flatten_node(k, c, leaves))
  return (kind, aux, tuple(specs))


def _flatten_is_leaf(x, leaves: list, is_leaf: Callable[[Any], bool]):
  if is_leaf(x):
    leaves.append(x)
    return None
  kind = _kind_of(type(x))
  if kind is None:
    leaves.append(x)
    return None
  children, aux = kind.children(x)
  specs = []
  for c in children:  # a loop, not a comprehension: one Python frame per tree level
    specs.append(_flatten_is_leaf(c, leaves, is_leaf))
  return (kind, aux, tuple(specs))


def _flatten_keyed(x, path: tuple, out: list, is_leaf):
  """Like flattening, but `out` gets (key path, leaf) pairs; `is_leaf` takes (path, x)."""
  kind = None if is_leaf is not None and is_leaf(path, x) else _kind_of(type(x))
  if kind is None:
    out.append((path, x))
    return None
  keys, children, aux = kind.keyed(x)
  specs = []
  for k, c in zip(keys, children):
    specs.append(_flatten_keyed(c, (*path, k), out, is_leaf))
  return (kind, aux, tuple(specs))


def _flatten(tree, is_leaf=None) -> tuple[list, PyTreeDef]:
  leaves = []
  if is_leaf is not None:
    spec = _flatten_is_leaf(tree, leaves, is_leaf)
  else:
    kind = _kind_cache.get(type(tree), _UNSEEN)
    if kind is _UNSEEN:
      kind = _classify(type(tree))
    if kind is None:
      return [tree], _LEAF_TREEDEF
    spec = _flatten_node(kind, tree, leaves)
  return leaves, PyTreeDef._make(spec, len(leaves))


# --- unflattening ------------------------------------------------------------------------------


def _build(spec: tuple, leaves: Sequence, pos: int) -> tuple[Any, int]:
  """The node rebuilt from `leaves[pos:]`, and the position after its last leaf."""
  kind, aux, subs = spec
  if not any(subs):  # all children are leaves (a node's spec is a non-empty tuple): one slice
    end = pos + len(subs)
    return kind.build(aux, leaves[pos:end]), end
  xs = []
  for s in subs:
    if s is None:
      xs.append(leaves[pos])
      pos += 1
    else:
      x, pos = _build(s, leaves, pos)
      xs.append(x)
  return kind.build(aux, xs), pos


def _up_to_reversed(spec: tuple, x, out: list) -> None:
  """Appends the subtrees of `x` at `spec`'s leaves, last first. jaxlib visits children right
  to left, so when several places mismatch, this reports the same one JAX does."""
  kind, aux, subs = spec
  children = kind.up_to(x, aux, len(subs))
  if not any(subs):
    out.extend(reversed(children))
    return
  for s, c in zip(reversed(subs), reversed(children)):
    if s is None:
      out.append(c)
    else:
      _up_to_reversed(s, c, out)


# --- PyTreeDef ---------------------------------------------------------------------------------


def _count_nodes(spec) -> int:
  return 1 if spec is None else 1 + sum(map(_count_nodes, spec[2]))


def _count_leaves(spec) -> int:
  return 1 if spec is None else sum(map(_count_leaves, spec[2]))


def _fmt(spec) -> str:
  if spec is None:
    return "*"
  kind, aux, subs = spec
  return kind.fmt(aux, list(map(_fmt, subs)))


def _shape_hash(spec) -> int:
  """A hash of node types and arities only, for treedefs whose aux data is unhashable."""
  if spec is None:
    return 0
  kind, _, subs = spec
  return hash((kind, tuple(map(_shape_hash, subs))))


def _walk(spec, f_node, f_leaf, take):
  if spec is None:
    x = take()
    return x if f_leaf is None else f_leaf(x)
  kind, aux, subs = spec
  results = []
  for s in subs:
    results.append(_walk(s, f_node, f_leaf, take))
  return f_node(tuple(results), kind.node_data(aux)[1])


def _compose(spec, inner):
  if spec is None:
    return inner
  kind, aux, subs = spec
  return (kind, aux, tuple(map(_compose, subs, [inner] * len(subs))))


def _from_iterable(spec, x):
  if spec is None:
    return x
  kind, aux, subs = spec
  xs = list(x)
  if len(xs) != len(subs):
    raise ValueError("Arity mismatch between trees")
  return kind.build(aux, list(map(_from_iterable, subs, xs)))


class PyTreeDef:
  """The structure of a pytree: node types, their aux data and arities; never its leaves."""
  __slots__ = ("_hash", "_num_leaves", "_num_nodes", "_spec")

  def __init__(self, *args, **kwargs):
    raise TypeError("PyTreeDef has no public constructor; use jax.tree.structure(tree) or "
                    "jax.tree.flatten(tree) to get one.")

  @classmethod
  def _make(cls, spec, num_leaves: int | None = None) -> PyTreeDef:
    self = object.__new__(cls)
    self._spec = spec
    self._num_leaves = _count_leaves(spec) if num_leaves is None else num_leaves
    self._num_nodes = None
    self._hash = None
    return self

  num_leaves = property(lambda self: self._num_leaves)

  @property
  def num_nodes(self) -> int:
    if self._num_nodes is None:
      self._num_nodes = _count_nodes(self._spec)
    return self._num_nodes

  def unflatten(self, leaves: Iterable[Any], /) -> Any:
    """Rebuild a tree of this structure from its leaves (any iterable, in leaf order)."""
    if type(leaves) is not list and type(leaves) is not tuple:
      leaves = _as_list(leaves)
    n = self._num_leaves
    if len(leaves) != n:
      _raise_leaf_count(n, len(leaves))
    spec = self._spec
    if spec is None:
      return leaves[0]
    return _build(spec, leaves, 0)[0]

  def flatten_up_to(self, xs: Any, /) -> list:
    """The subtrees of `xs` sitting where this structure has leaves (this must be a prefix)."""
    if self._spec is None:
      return [xs]
    out = []
    _up_to_reversed(self._spec, xs, out)
    out.reverse()
    return out

  def children(self) -> list[PyTreeDef]:
    return [] if self._spec is None else [PyTreeDef._make(s) for s in self._spec[2]]

  def node_data(self) -> tuple[type, Any] | None:
    if self._spec is None:
      return None
    kind, aux, _ = self._spec
    return kind.node_data(aux)

  def walk(self, f_node: Callable[[Any, Any], Any], f_leaf: Callable[[Any], Any] | None,
           leaves: Iterable[Any], /) -> Any:
    """Fold the structure: `f_node(children_results, node_data)` at nodes, `f_leaf` at leaves."""
    return _walk(self._spec, f_node, f_leaf, iter(leaves).__next__)

  def compose(self, inner: PyTreeDef, /) -> PyTreeDef:
    """The structure with `inner` put in place of every leaf."""
    return PyTreeDef._make(_compose(self._spec, inner._spec),
                           self._num_leaves * inner._num_leaves)

  def from_iterable_tree(self, tree: Any, /) -> Any:
    """Rebuild this structure from nested iterables giving each node's children in order."""
    return _from_iterable(self._spec, tree)

  @staticmethod
  def from_node_data_and_children(registry: Any, node_data: tuple[type, Any] | None,
                                  children: Iterable[PyTreeDef]) -> PyTreeDef:
    """Inverse of `node_data()` and `children()`; `registry` is accepted for JAX's signature."""
    subs = tuple(c._spec for c in children)
    if node_data is None:
      return _LEAF_TREEDEF
    typ, data = node_data
    kind = _kind_of(typ)
    if kind is None:
      raise ValueError(f"Could not find type: {typ}.")
    aux = tuple(data) if kind.type is dict else data
    if kind.type is dict and len(aux) != len(subs):
      raise ValueError("Number of keys and entries does not match.")
    return PyTreeDef._make((kind, aux, subs))

  def __eq__(self, other):
    if self is other:
      return True
    if type(other) is not PyTreeDef:
      return NotImplemented
    if self._num_leaves != other._num_leaves:
      return False
    try:
      return self._spec == other._spec
    except Exception:  # noqa: BLE001 -- an aux `==` raised, or C recursion ran out (deep tree)
      return _aux_equal_tree(self._spec, other._spec)

  def __hash__(self):
    h = self._hash
    if h is None:
      try:
        h = hash(self._spec)
      except TypeError:  # unhashable aux data: fall back to types and arities
        h = _shape_hash(self._spec)
      self._hash = h
    return h

  def __repr__(self):
    return f"PyTreeDef({_fmt(self._spec)})"

  def __reduce__(self):
    return _from_postorder, (_postorder(self._spec, []),)


def _aux_equal_tree(a, b) -> bool:
  """Structural equality node by node: raises JAX's error for a failing aux `==`, and needs
  half the recursion depth of comparing the nested spec tuples in C."""
  if a is None or b is None:
    return a is b
  (ka, xa, sa), (kb, xb, sb) = a, b
  if ka is not kb or len(sa) != len(sb) or not _aux_equal(xa, xb):
    return False
  for s, t in zip(sa, sb):
    if not _aux_equal_tree(s, t):
      return False
  return True


def _postorder(spec, out: list) -> list:
  """The nodes as a flat list, children before parents: `None` per leaf, else
  `(kind, aux, arity)`. Pickles and copies this, since deeply nested tuples would exhaust
  their recursion limits long before flattening does."""
  if spec is not None:
    kind, aux, subs = spec
    for s in subs:
      _postorder(s, out)
    spec = (kind, aux, len(subs))
  out.append(spec)
  return out


def _from_postorder(nodes: list) -> PyTreeDef:
  stack = []
  for node in nodes:
    if node is not None:
      kind, aux, arity = node
      subs = tuple(stack[len(stack) - arity:])
      del stack[len(stack) - arity:]
      node = (kind, aux, subs)
    stack.append(node)
  (spec,) = stack
  return PyTreeDef._make(spec)


def _as_list(leaves) -> list:
  try:
    return list(leaves)
  except TypeError:
    raise TypeError("PyTreeDef.unflatten(leaves) expects an iterable of leaves, got "
                    f"{type(leaves)}.") from None


def _raise_leaf_count(expected: int, got: int):
  if got < expected:
    raise ValueError(f"Too few leaves for PyTreeDef; expected {expected}, got {got}")
  raise ValueError(f"Too many leaves for PyTreeDef; expected {expected}.")


PyTreeDef.__module__ = "jaxlite.tree_util"
_LEAF_TREEDEF = PyTreeDef._make(None, 1)  # shared by every leaf tree
_LEAF_TREEDEF._num_nodes = 1


# --- tree_* functions --------------------------------------------------------------------------


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Leaf], PyTreeDef]:
  """The leaves of `tree` (depth first, dict keys sorted) and its structure."""
  return _flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> Any:
  """The tree of structure `treedef` holding `leaves`."""
  return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Leaf]:
  return _flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
  return _flatten(tree, is_leaf)[1]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  """The structure of a tuple whose children have the given structures."""
  specs = tuple(t._spec for t in treedefs)
  return PyTreeDef._make((_registered[tuple], None, specs))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  """True for a single node: a leaf, or a childless node such as None or ()."""
  return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
  return treedef._spec is None


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """Whether every element is itself a leaf (not a node)."""
  if is_leaf is None:
    return all(_kind_of(type(x)) is None for x in iterable)
  items = list(iterable)
  leaves = tree_leaves(items, is_leaf)
  return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def is_tree_node(typ: type) -> bool:
  """Whether `typ` is a node type: built in, registered, or a namedtuple."""
  return _kind_of(typ) is not None


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
  """One node's (children, aux data); ValueError for a leaf."""
  kind = _kind_of(type(tree))
  if kind is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return kind.one_level(tree)


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[KeyLeafPair], Hashable]:
  kind = _kind_of(type(tree))
  if kind is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  keys, children, aux = kind.keyed(tree)
  return tuple(zip(keys, children)), aux


def _map_with_prefix_errors(name: str, treedef: PyTreeDef, tree, rest, is_leaf) -> list:
  """`flatten_up_to` of each of `rest`, turning a mismatch into JAX's teaching error."""
  out = []
  for r in rest:
    try:
      out.append(treedef.flatten_up_to(r))
    except Exception as e:  # noqa: BLE001 -- as JAX: any failure gets the structural diagnosis
      err = next(_prefix_error((), tree, r, is_leaf), None)
      raise (err(name) if err is not None else e) from None
  return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Apply `f` leafwise; `tree` must be a prefix of each of `rest`."""
  leaves, treedef = _flatten(tree, is_leaf)
  if not rest:
    return treedef.unflatten([f(x) for x in leaves])
  others = _map_with_prefix_errors("tree_map tree", treedef, tree, rest, is_leaf)
  return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_reduce(function: Callable[[T, Any], T], tree: Any, initializer: Any = _UNSEEN,
                is_leaf: Callable[[Any], bool] | None = None) -> T:
  """`functools.reduce` over the leaves."""
  leaves = _flatten(tree, is_leaf)[0]
  if initializer is _UNSEEN:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def _halving_reduce(xs: list, op: Callable, identity):
  if not xs:
    if identity is _UNSEEN:
      raise TypeError("Must specify identity for parallel reduction of empty sequence.")
    return identity
  if len(xs) == 1:
    return xs[0]
  mid = len(xs) // 2
  return op(_halving_reduce(xs[:mid], op, identity), _halving_reduce(xs[mid:], op, identity))


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = _UNSEEN,
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
  """Reduce the leaves as a balanced tree of `operation` calls (log depth)."""
  return _halving_reduce(_flatten(tree, is_leaf)[0], operation, identity)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
  return all(_flatten(tree, is_leaf)[0])


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
  """Turn an outer tree of inner trees into an inner tree of outer trees."""
  flat, treedef = _flatten(pytree_to_transpose)
  if inner_treedef is None:
    inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
  if treedef.num_leaves != n_in * n_out:
    raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
  rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
  return inner_treedef.unflatten([outer_treedef.unflatten(col) for col in zip(*rows)])


def _broadcast_leaves(prefix_tree, full_tree, is_leaf) -> list:
  out = []
  extend = lambda x, sub: out.extend([x] * _flatten(sub)[1].num_leaves)
  try:
    tree_map(extend, prefix_tree, full_tree, is_leaf=is_leaf)
  except ValueError:
    err = next(_prefix_error((), prefix_tree, full_tree, is_leaf), None)
    if err is None:
      raise
    raise err("broadcast_prefix prefix_tree") from None
  return out


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """`prefix_tree` with each leaf copied across the matching subtree of `full_tree`."""
  return _flatten(full_tree)[1].unflatten(_broadcast_leaves(prefix_tree, full_tree, is_leaf))


# --- key paths ---------------------------------------------------------------------------------


def _path_is_leaf(is_leaf, takes_path: bool):
  if is_leaf is None or takes_path:
    return is_leaf
  return lambda _, x: is_leaf(x)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
  """Like tree_flatten, with each leaf paired with its key path."""
  out = []
  spec = _flatten_keyed(tree, (), out, _path_is_leaf(is_leaf, is_leaf_takes_path))
  return out, PyTreeDef._make(spec, len(out))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
  """Like tree_map, with `f(path, leaf, *others)`."""
  pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
  plain_is_leaf = None if is_leaf_takes_path else is_leaf
  others = _map_with_prefix_errors("tree_map_with_path tree", treedef, tree, rest, plain_is_leaf)
  return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


# --- structure-mismatch explanations -----------------------------------------------------------


def _child_keys(tree) -> tuple:
  return tuple(k for k, _ in flatten_one_level_with_keys(tree)[0])


def _is_strict_leaf(x, is_leaf) -> bool:
  return (is_leaf is not None and bool(is_leaf(x))) or _kind_of(type(x)) is None


def _prefix_error(path: KeyPath, prefix, full, is_leaf=None):
  """Yield, for the first place `prefix` is not a prefix of `full`, a `name -> ValueError`."""
  # JAX drops is_leaf below the root here; we pass it down so an is_leaf subtree is never
  # blamed (JAX would then report a mismatch that tree_map itself accepted).
  if _is_strict_leaf(prefix, is_leaf):
    return
  where = keystr(path)
  if type(prefix) is not type(full):
    yield lambda name: ValueError(
        f"pytree structure error: different types at key path\n    {name}{where}\n"
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix)}\nbut at the same key path the full pytree has a subtree of "
        f"different type\n    {type(full)}.")
    return
  p_children, p_meta = flatten_one_level(prefix)
  f_children, f_meta = flatten_one_level(full)
  p_children, f_children = tuple(p_children), tuple(f_children)
  p_keys, f_keys = _child_keys(prefix), _child_keys(full)
  if isinstance(prefix, (list, tuple)):
    if len(prefix) != len(full):
      yield _length_error(type(prefix).__name__, where, len(prefix), len(full))
      return
  elif len(p_children) != len(f_children):
    yield _child_count_error(type(prefix), where, p_keys, f_keys)
    return
  if not _aux_equal(p_meta, f_meta):
    yield _metadata_error(type(prefix), where, str(p_meta), str(f_meta))
    return
  for k, a, b in zip(p_keys, p_children, f_children):
    yield from _prefix_error((*path, k), a, b, is_leaf)


def _length_error(ty: str, where: str, n_prefix: int, n_full: int):
  return lambda name: ValueError(
      f"pytree structure error: different lengths of {ty} at key path\n    {name}{where}\n"
      f"At that key path, the prefix pytree {name} has a subtree of type {ty} of length "
      f"{n_prefix}, but the full pytree has a subtree of the same type but of length {n_full}.")


def _child_count_error(ty: type, where: str, p_keys: tuple, f_keys: tuple):
  try:
    diff = set(p_keys).symmetric_difference(set(f_keys))
  except Exception:  # noqa: BLE001 -- unhashable keys: print no difference, as JAX
    diff = None
  names = lambda keys: " ".join(str(k.key) for k in keys)
  tail = "" if diff is None else f"so the symmetric difference on key sets is\n    {names(diff)}"
  return lambda name: ValueError(
      f"pytree structure error: different numbers of pytree children at key path\n"
      f"    {name}{where}\nAt that key path, the prefix pytree {name} has a subtree of type\n"
      f"    {ty}\nwith {len(p_keys)} child keys\n    {names(p_keys)}\n"
      f"but at the same key path the full pytree has a subtree of the same type but with "
      f"{len(f_keys)} child keys\n    {names(f_keys)}\n" + tail)


def _metadata_error(ty: type, where: str, p_meta: str, f_meta: str):
  diff = textwrap.indent("\n".join(difflib.ndiff(p_meta.splitlines(), f_meta.splitlines())),
                         prefix="    ")
  return lambda name: ValueError(
      f"pytree structure error: different pytree metadata at key path\n    {name}{where}\n"
      f"At that key path, the prefix pytree {name} has a subtree of type\n    {ty}\n"
      f"with metadata\n    {p_meta}\nbut at the same key path the full pytree has a subtree "
      f"of the same type but with metadata\n    {f_meta}\n"
      f"so the diff in the metadata at these pytree nodes is\n{diff}")


def prefix_errors(prefix_tree: Any, full_tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> list[Callable[[str], Exception]]:
  """Every prefix mismatch, each as `name -> ValueError` (for callers naming their argument)."""
  return list(_prefix_error((), prefix_tree, full_tree, is_leaf))


def equality_errors(tree1: Any, tree2: Any, is_leaf: Callable[[Any], bool] | None = None):
  """Yield (key path, thing 1, thing 2, explanation) for each place the structures differ."""
  yield from _equality_errors((), tree1, tree2, is_leaf)


def _children_word(n: int) -> str:
  return f"{n} child{'ren' if n > 1 else ''}"


def _equality_errors(path, t1, t2, is_leaf):
  if _is_strict_leaf(t1, is_leaf) and _is_strict_leaf(t2, is_leaf):
    return
  if type(t1) is not type(t2):
    yield path, str(type(t1)), str(type(t2)), "their Python types differ"
    return
  if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
    name = type(t1).__name__
    yield (path, f"{name} of length {len(t1)}", f"{name} of length {len(t2)}",
           "the lengths do not match")
    return
  c1, m1 = flatten_one_level(t1)
  c2, m2 = flatten_one_level(t2)
  c1, c2 = tuple(c1), tuple(c2)
  k1, k2 = _child_keys(t1), _child_keys(t2)
  if len(c1) != len(c2):
    try:
      diff = " ".join(repr(k.key) for k in set(k1).symmetric_difference(set(k2)))
    except Exception:  # noqa: BLE001 -- unhashable keys: print no difference, as JAX
      diff = ""
    yield (path, f"{type(t1)} with {_children_word(len(c1))}",
           f"{type(t2)} with {_children_word(len(c2))}",
           "the numbers of children do not match"
           + (diff and f", with the symmetric difference of key sets: {{{diff}}}"))
    return
  if not _aux_equal(m1, m2):
    yield (path, f"{type(t1)} with pytree metadata {m1}", f"{type(t2)} with pytree metadata {m2}",
           "the pytree node metadata does not match")
    return
  for k, a, b in zip(k1, c1, c2):
    yield from _equality_errors((*path, k), a, b, is_leaf)


# --- registration ------------------------------------------------------------------------------


def register_pytree_node(nodetype: type, flatten_func: Callable[[Any], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], Any],
                         flatten_with_keys_func: Callable | None = None) -> None:
  """Make `nodetype` a node: `flatten_func(x) -> (children, aux)`, `unflatten_func(aux, xs)`."""
  _register(_CustomKind(nodetype, flatten_func, unflatten_func, flatten_with_keys_func))


def register_pytree_node_class(cls: type[T]) -> type[T]:
  """Class decorator: registers `cls.tree_flatten` and classmethod `cls.tree_unflatten`."""
  register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
  return cls


def register_pytree_with_keys(nodetype: type,
                              flatten_with_keys: Callable[[Any], tuple[Iterable[KeyLeafPair], Any]],
                              unflatten_func: Callable[[Any, Iterable], Any],
                              flatten_func: Callable | None = None) -> None:
  """Like register_pytree_node, with `flatten_with_keys(x) -> ([(key, child), ...], aux)`."""
  if not flatten_func:
    def flatten_func(x):
      pairs, aux = flatten_with_keys(x)
      return [c for _, c in pairs], aux
  register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: type[T]) -> type[T]:
  """Class decorator using `tree_flatten_with_keys` (and `tree_flatten` if defined)."""
  flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                            cls.tree_unflatten, flatten)
  return cls


def _dataclass_fields(nodetype) -> tuple[list[str], list[str]]:
  if not dataclasses.is_dataclass(nodetype):
    raise TypeError("register_dataclass: data_fields and meta_fields are required when"
                    f" nodetype is not a dataclass. Got {nodetype=}.")
  fields = dataclasses.fields(nodetype)
  is_static = lambda f: f.metadata.get("static", False)
  return [f.name for f in fields if not is_static(f)], [f.name for f in fields if is_static(f)]


def _check_dataclass_fields(nodetype, data_fields, meta_fields, drop_fields) -> None:
  if dataclasses.is_dataclass(nodetype):
    init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
    given = {*meta_fields, *data_fields}
    if given != init_fields:
      msg = ("data_fields and meta_fields must include all dataclass fields with"
             " ``init=True`` and only them.")
      if missing := init_fields - given:
        msg += f" Missing fields: {missing}. Add them to drop_fields to suppress this error."
      if unexpected := given - init_fields:
        msg += f" Unexpected fields: {unexpected}."
      raise ValueError(msg)
  if overlap := set(data_fields) & set(meta_fields):
    raise ValueError(f"data_fields and meta_fields must not overlap. Overlapping fields: "
                     f"{overlap}.")


def register_dataclass(nodetype: type[T], data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> type[T]:
  """Make a dataclass a node: data fields are children, meta fields (a tuple) are aux data."""
  if data_fields is None or meta_fields is None:
    if (data_fields is None) != (meta_fields is None):
      raise TypeError("register_dataclass: data_fields and meta_fields must both be specified"
                      f" when either is specified. Got {data_fields=} {meta_fields=}.")
    data_fields, meta_fields = _dataclass_fields(nodetype)
  data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
  _check_dataclass_fields(nodetype, data_fields, meta_fields, drop_fields)
  _register(_DataclassKind(nodetype, data_fields, meta_fields))
  return nodetype


def register_static(cls: type[T]) -> type[T]:
  """Make instances of `cls` childless nodes whose aux data is the instance (so jit-static)."""
  register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _: obj)
  return cls


def static(**kwargs) -> Any:
  """`dataclasses.field(...)` marked `static=True` for register_dataclass."""
  metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
  return dataclasses.field(metadata=metadata, **kwargs)


register_pytree_with_keys(
    collections.OrderedDict,
    lambda x: (tuple((DictKey(k), v) for k, v in x.items()), tuple(x)),
    lambda keys, xs: collections.OrderedDict(zip(keys, xs, strict=True)))


def _defaultdict_with_keys(d):
  keys = tuple(sorted(d))  # unlike dict, a TypeError here is not rewrapped (as in JAX)
  return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict, _defaultdict_with_keys,
    lambda aux, xs: collections.defaultdict(aux[0], zip(aux[1], xs, strict=True)))


# --- Partial -----------------------------------------------------------------------------------


class _HashableCallableShim:
  """Wraps a functools.partial given to Partial, so Python does not merge its arguments into
  the Partial's (which would turn the inner partial's bound args into pytree children)."""

  def __init__(self, fun):
    self.fun = fun

  def __call__(self, *args, **kw):
    return self.fun(*args, **kw)

  def __hash__(self):
    return hash(self.fun)

  def __eq__(self, other):
    return self.fun == (other.fun if isinstance(other, _HashableCallableShim) else other)

  def __repr__(self):
    return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
  """functools.partial as a pytree: bound args and kwargs are children, the function is aux."""

  def __new__(cls, func, *args, **kw):
    if not isinstance(func, functools.partial):
      return super().__new__(cls, func, *args, **kw)
    shim = _HashableCallableShim(func)
    out = super().__new__(cls, shim, *args, **kw)
    # Set only after construction: some Pythons' partial.__new__ merges any func with `.func`.
    shim.func, shim.args, shim.keywords = func.func, func.args, func.keywords
    return out


Partial.__module__ = "jaxlite.tree_util"
register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, xs: Partial(func, *xs[0], **xs[1]))
