"""The `jax.tree` / `jax.tree_util` functions over the pytree core (`_src/base/pytree.py`): tree_map
and friends, key paths, structure-mismatch explanations, registration, Partial.
"""
from __future__ import annotations

import collections
import collections.abc
import dataclasses
import difflib
import functools
import operator
import textwrap
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from jaxlite._src.base.pytree import (
    DictKey, KeyLeafPair, KeyPath, Leaf, PyTreeDef, T, _CustomKind, _DataclassKind, _UNSEEN,
    _aux_equal, _flatten, _flatten_keyed, _kind_of, _register, _registered, keystr)
# Other modules reach these as `tree_util.<name>`.
from jaxlite._src.base.pytree import (  # noqa: F401
    FlattenedIndexKey, GetAttrKey, KeyEntry, SequenceKey)

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


class _RegistryEntry(collections.namedtuple("_RegistryEntry", ["to_iter", "from_iter"])):
  """One node type's (flatten, unflatten) pair, as JAX's `tree_util._registry` holds it."""


class _RegistryView(collections.abc.Mapping):
  """`jax._src.tree_util._registry`: node type -> _RegistryEntry for every registered node type
  (the built-in containers and `register_pytree_node` ones), read live from the pytree core.
  Libraries (flax.nnx) test membership in it to tell pytree nodes from leaves."""

  def __getitem__(self, typ):
    kind = _registered[typ]
    return _RegistryEntry(kind.children, kind.build)

  def __contains__(self, typ):
    return typ in _registered

  def __iter__(self):
    return iter(list(_registered))

  def __len__(self):
    return len(_registered)


_registry = _RegistryView()


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
