"""Pytree core: key path entries, the node kinds and the registry of container types, flattening
to (leaves, PyTreeDef) and back, and PyTreeDef itself; `jaxlite._src.base.tree_util` builds on it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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

  def __init__(self, key):  # any hashable key; `DictKey(key=...)` as JAX's
    super().__init__(key)

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
