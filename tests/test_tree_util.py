"""Tests for jaxlite's pytrees: tables of known JAX 0.10.2 answers, property tests, and
differential tests against real JAX where it is installed."""
import collections
import copy
import dataclasses
import functools
import pickle
import re
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxlite.tree as jt
import jaxlite.tree_util as tu


class Params(NamedTuple):
  a: int
  b: float


Point = collections.namedtuple("Point", "x y")


class Custom:
  """A node registered with plain flatten/unflatten (FlattenedIndexKey paths)."""

  def __init__(self, a, b, aux="aux"):
    self.a, self.b, self.aux = a, b, aux

  def __eq__(self, other):
    return type(other) is Custom and (self.a, self.b, self.aux) == (other.a, other.b, other.aux)

  def __repr__(self):
    return f"Custom({self.a!r}, {self.b!r}, {self.aux!r})"


def _custom_flatten(c):
  return (c.a, c.b), c.aux


def _custom_unflatten(aux, xs):
  return Custom(*xs, aux=aux)


tu.register_pytree_node(Custom, _custom_flatten, _custom_unflatten)


@tu.register_pytree_with_keys_class
class CK:
  """A node registered with keys."""

  def __init__(self, v):
    self.v = v

  def __eq__(self, other):
    return type(other) is CK and self.v == other.v

  def tree_flatten_with_keys(self):
    return ((tu.GetAttrKey("v"), self.v),), None

  @classmethod
  def tree_unflatten(cls, aux, xs):
    return cls(*xs)


@tu.register_static
class S:
  def __repr__(self):
    return "S()"

  def __eq__(self, other):
    return type(other) is S

  def __hash__(self):
    return 0


@tu.register_dataclass
@dataclasses.dataclass
class D:
  x: int
  s: str = dataclasses.field(metadata={"static": True})


@functools.partial(tu.register_dataclass, data_fields=["q", "r"], meta_fields=["m"])
@dataclasses.dataclass
class D2:
  q: int
  r: int
  m: str


def _lambda(x):
  return x


# --- structure: repr, leaves, counts -----------------------------------------------------------

OD = collections.OrderedDict([("b", 1), ("a", 2)])
DD = collections.defaultdict(int, {"b": 1, "a": 2})

# (tree, PyTreeDef repr, leaves, num_nodes): JAX 0.10.2's answers.
STRUCTURES = [
    ({"a": 1, "b": [2, (3, None)], "c": {"z": 4, "y": None}},
     "PyTreeDef({'a': *, 'b': [*, (*, None)], 'c': {'y': None, 'z': *}})", [1, 2, 3, 4], 10),
    ([1, 2, (3, 4)], "PyTreeDef([*, *, (*, *)])", [1, 2, 3, 4], 6),
    ({"n": 5, "W": 1, "b": 2}, "PyTreeDef({'W': *, 'b': *, 'n': *})", [1, 2, 5], 4),
    ({2: "b", 1: "a"}, "PyTreeDef({1: *, 2: *})", ["a", "b"], 3),
    (7, "PyTreeDef(*)", [7], 1),
    (None, "PyTreeDef(None)", [], 1),
    ([None, (), [], {}], "PyTreeDef([None, (), [], {}])", [], 5),
    ((1,), "PyTreeDef((*,))", [1], 2),
    (((1,), 2), "PyTreeDef(((*,), *))", [1, 2], 4),
    (Params(1, 5.0), "PyTreeDef(CustomNode(namedtuple[Params], [*, *]))", [1, 5.0], 3),
    (OD, "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))", [1, 2], 3),
    (DD, "PyTreeDef(CustomNode(defaultdict[(<class 'int'>, ('a', 'b'))], [*, *]))", [2, 1], 3),
    (D(1, "s"), "PyTreeDef(CustomNode(D[('s',)], [*]))", [1], 2),
    (D2(1, 2, "q"), "PyTreeDef(CustomNode(D2[('q',)], [*, *]))", [1, 2], 3),
    (Custom(1, [2, 3]), "PyTreeDef(CustomNode(Custom[aux], [*, [*, *]]))", [1, 2, 3], 5),
    (CK(4), "PyTreeDef(CustomNode(CK[None], [*]))", [4], 2),
    ([S(), 1], "PyTreeDef([CustomNode(S[S()], []), *])", [1], 3),
    ("a string", "PyTreeDef(*)", ["a string"], 1),
    (np.arange(3), "PyTreeDef(*)", None, 1),
]


@pytest.mark.parametrize("tree,expected_repr,expected_leaves,num_nodes", STRUCTURES)
def test_structure_table(tree, expected_repr, expected_leaves, num_nodes):
  leaves, treedef = tu.tree_flatten(tree)
  assert repr(treedef) == str(treedef) == expected_repr
  if expected_leaves is not None:
    assert leaves == expected_leaves
  assert treedef.num_leaves == len(leaves)
  assert treedef.num_nodes == num_nodes
  assert _strict_eq(treedef.unflatten(leaves), _sorted_dicts(tree))
  assert jt.structure(tree) == treedef and hash(jt.structure(tree)) == hash(treedef)


def test_seed_snippets_print_like_jax():
  params = [1, 2, (np.arange(3), np.ones(2))]
  assert str(jt.structure(params)) == "PyTreeDef([*, *, (*, *)])"
  assert [type(x) for x in jt.leaves(params)] == [int, int, np.ndarray, np.ndarray]
  params = {"n": 5, "W": np.ones((2, 2)), "b": np.zeros(2)}
  assert str(jt.structure(params)) == "PyTreeDef({'W': *, 'b': *, 'n': *})"
  assert jt.leaves(params)[2] == 5
  assert str(jt.structure(Params(1, 5.0))) == "PyTreeDef(CustomNode(namedtuple[Params], [*, *]))"
  assert jt.leaves(Params(1, 5.0)) == [1, 5.0]
  assert jt.reduce(lambda a, b: a + b, [1, 2, {"x": 3}]) == 6


def test_node_data_and_children():
  td = jt.structure({"a": 1, "b": [2, (3, None)]})
  assert td.node_data() == (dict, ["a", "b"])
  assert [repr(c) for c in td.children()] == ["PyTreeDef(*)", "PyTreeDef([*, (*, None)])"]
  assert tu.treedef_children(td) == td.children()
  assert jt.structure([1]).node_data() == (list, None)
  assert jt.structure(None).node_data() == (type(None), None)
  assert jt.structure(3).node_data() is None and jt.structure(3).children() == []
  assert jt.structure(OD).node_data() == (collections.OrderedDict, ("b", "a"))
  assert jt.structure(Point(1, 2)).node_data() == (Point, None)
  assert jt.structure(D(1, "s")).node_data() == (D, ("s",))
  assert jt.structure([S()]).children()[0].node_data() == (S, S())


def test_is_leaf_stops_descent():
  assert jt.leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
  assert jt.leaves([None, (), [], {}]) == []
  td = jt.structure([(1, 2), [3]], is_leaf=lambda x: isinstance(x, tuple))
  assert repr(td) == "PyTreeDef([*, [*]])"
  assert jt.leaves({"a": {"b": 1}}, is_leaf=lambda x: x == {"b": 1}) == [{"b": 1}]


def test_unregistered_subclasses_are_leaves_but_namedtuples_are_nodes():
  class L(list):
    pass

  class T(tuple):
    pass

  for x in (L([1, 2]), T((1, 2)), {1, 2}, b"xy", 1.5, np.float32(2)):
    assert repr(jt.structure(x)) == "PyTreeDef(*)"
    assert jt.leaves(x) == [x]
  assert repr(jt.structure(Point(1, [2]))) == "PyTreeDef(CustomNode(namedtuple[Point], [*, [*]]))"
  assert tu.is_tree_node(Point) and tu.is_tree_node(type(None)) and not tu.is_tree_node(int)


def test_unsortable_dict_keys_raise_like_jax():
  msg = "Comparator raised exception while sorting pytree dictionary keys."
  for f in (jt.flatten, jt.leaves, jt.structure, jt.flatten_with_path):
    with pytest.raises(ValueError, match=re.escape(msg)) as info:
      f({1: "a", "x": "b"})
    assert isinstance(info.value.__cause__, TypeError)
  with pytest.raises(TypeError, match="'<' not supported"):  # defaultdict's sort is not wrapped
    jt.flatten(collections.defaultdict(int, {1: "a", "x": "b"}))


# --- unflatten, flatten_up_to and their errors -------------------------------------------------

UNFLATTEN_ERRORS = [
    ([1, 2], [1], "Too few leaves for PyTreeDef; expected 2, got 1"),
    ([1, 2], [1, 2, 3], "Too many leaves for PyTreeDef; expected 2."),
    (1, [], "Too few leaves for PyTreeDef; expected 1, got 0"),
    (None, [5], "Too many leaves for PyTreeDef; expected 0."),
]


@pytest.mark.parametrize("tree,leaves,message", UNFLATTEN_ERRORS)
def test_unflatten_leaf_count_errors(tree, leaves, message):
  with pytest.raises(ValueError) as info:
    jt.unflatten(jt.structure(tree), leaves)
  assert str(info.value) == message


def test_unflatten_accepts_any_iterable():
  td = jt.structure({"a": [1, 2], "b": (3,)})
  assert td.unflatten(x for x in "xyz") == {"a": ["x", "y"], "b": ("z",)}
  assert td.unflatten("xyz") == {"a": ["x", "y"], "b": ("z",)}
  assert td.unflatten(range(3)) == {"a": [0, 1], "b": (2,)}
  with pytest.raises(TypeError, match="expects an iterable of leaves"):
    td.unflatten(5)


NONE_HINT = (
    "\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a tree-prefix "
    "of non-None values. To obtain the previous behavior, you can usually write:\n"
    "  jax.tree.map(lambda x, y: None if x is None else f(x, y), a, b, "
    "is_leaf=lambda x: x is None)")
NT2 = collections.namedtuple("NT2", "x y")

# (prefix, full, ValueError text): JAX 0.10.2's flatten_up_to messages.
UP_TO_ERRORS = [
    ([1, 2], [1, 2, 3], "List arity mismatch: 3 != 2; list: [1, 2, 3]."),
    ([1, 2], (1, 2), "Expected list, got (1, 2)."),
    ((1, 2), (1, 2, 3), "Tuple arity mismatch: 3 != 2; tuple: (1, 2, 3)."),
    ((1, 2), Point(1, 2), "Expected tuple, got Point(x=1, y=2)."),
    (Point(1, 2), NT2(1, 2),
     ("Named tuple type mismatch: expected type: <class 'test_tree_util.Point'>, tuple: "
     "NT2(x=1, y=2).")),
    (Point(1, 2), (1, 2), "Expected named tuple, got (1, 2)."),
    ({"a": 1}, {"b": 1}, "Dict key mismatch; expected keys: ['a']; present keys: ['b']."),
    ({"a": 1, "b": 2}, {"b": 3}, "Dict key mismatch; expected keys: ['a', 'b']; present keys: ['b']."),
    ({"a": 1}, [1], "Expected dict, got [1]."),
    ({"a": 1}, collections.OrderedDict(a=1), "Expected dict, got OrderedDict([('a', 1)])."),
    (None, 3, "Expected None, got 3." + NONE_HINT),
    ([None], [()], "Expected None, got ()." + NONE_HINT),
    (Custom(1, 2), Custom(1, 2, "B"),
     "Mismatch custom node data: 'aux' != 'B'; value: Custom(1, 2, 'B')."),
    (Custom(1, 2), [1, 2],
     "Custom node type mismatch: expected type: <class 'test_tree_util.Custom'>, value: [1, 2]."),
    (OD, collections.OrderedDict(a=1, b=2),
     "Mismatch custom node data: ('b', 'a') != ('a', 'b'); value: OrderedDict([('a', 1), ('b', 2)])."),
    (D2(1, 2, "s"), D2(1, 2, "t"),
     "Mismatch custom dataclass node data: ('s',) != ('t',); value: D2(q=1, r=2, m='t')."),
    (D2(1, 2, "s"), [1, 2],
     ("Custom dataclass node type mismatch: expected type: <class 'test_tree_util.D2'>, value: "
     "[1, 2].")),
]


@pytest.mark.parametrize("prefix,full,message", UP_TO_ERRORS)
def test_flatten_up_to_errors(prefix, full, message):
  with pytest.raises(ValueError) as info:
    jt.structure(prefix).flatten_up_to(full)
  assert str(info.value) == message


@pytest.mark.parametrize("prefix,full,message", [
    (Point((), []), Point([], None), "Expected list, got None."),
    ([(), [(), 1]], [[], [[], 1]], "Expected tuple, got []."),
    ({"a": (1,), "b": [1]}, {"a": [1], "b": (1,)}, "Expected list, got (1,)."),
])
def test_flatten_up_to_reports_the_rightmost_mismatch_like_jaxlib(prefix, full, message):
  with pytest.raises(ValueError) as info:
    jt.structure(prefix).flatten_up_to(full)
  assert str(info.value) == message


def test_flatten_up_to_returns_subtrees_at_prefix_leaves():
  td = jt.structure({"a": 1, "b": [2, (3, None)]})
  assert td.flatten_up_to({"a": [1, 2], "b": [3, ({"q": 4}, None)]}) == [[1, 2], 3, {"q": 4}]
  assert jt.structure(Custom(1, 2)).flatten_up_to(Custom([1], (2,))) == [[1], (2,)]


# --- PyTreeDef identity: equality, hashing, pickling -------------------------------------------


def test_treedef_equality_and_hash():
  assert jt.structure([1, 2]) != jt.structure((1, 2))  # list is not tuple
  assert jt.structure([1, 2]) == jt.structure(["x", np.ones(3)])  # leaves never count
  assert jt.structure({"a": 1}) != jt.structure({"b": 1})
  assert jt.structure(Custom(1, 2, "A")) != jt.structure(Custom(1, 2, "B"))
  assert jt.structure(Point(1, 2)) != jt.structure(NT2(1, 2))
  cache = {jt.structure({"a": [1, 2]}): "hit"}
  assert cache[jt.structure({"a": ["p", "q"]})] == "hit"
  assert (jt.structure(1) == 1) is False


def test_treedef_with_unhashable_aux_still_hashes_and_compares():
  tree = Custom(1, 2, aux=["unhashable"])
  td = jt.structure(tree)
  assert hash(td) == hash(jt.structure(Custom(3, 4, aux=["unhashable"])))
  assert td == jt.structure(Custom(3, 4, aux=["unhashable"]))
  assert td != jt.structure(Custom(3, 4, aux=["other"]))


def test_treedef_equality_with_array_aux_raises_jax_error():
  a = jt.structure(Custom(1, 2, aux=np.arange(3)))
  b = jt.structure(Custom(1, 2, aux=np.arange(3)))
  with pytest.raises(ValueError, match="Exception raised while checking equality of metadata"):
    _ = a == b


@pytest.mark.parametrize("tree", [t for t, *_ in STRUCTURES[:17]])
def test_treedef_pickles_and_copies(tree):
  td = jt.structure(tree)
  for clone in (pickle.loads(pickle.dumps(td)), copy.deepcopy(td), copy.copy(td)):
    assert clone == td and hash(clone) == hash(td) and repr(clone) == repr(td)
    assert clone.num_leaves == td.num_leaves and clone.num_nodes == td.num_nodes


def test_treedef_is_immutable_and_not_constructible():
  td = jt.structure([1])
  with pytest.raises(AttributeError):
    td.num_leaves = 3
  with pytest.raises(TypeError, match="no public constructor"):
    tu.PyTreeDef()


@pytest.mark.parametrize("wrap,times", [(lambda t: [t], 800), (lambda t: {"k": (t,)}, 400)],
                         ids=["list", "dict-of-tuple"])
def test_deep_trees_work_as_deep_as_jaxlib(wrap, times):
  tree = 7
  for _ in range(times):  # 800 nested nodes; jaxlib manages about 990 before failing
    tree = wrap(tree)
  leaves, td = jt.flatten(tree)
  assert leaves == [7] and td.unflatten([8]) != tree and td.unflatten([7]) == tree
  assert td == jt.structure(tree) and td != jt.structure(wrap(tree))
  assert pickle.loads(pickle.dumps(td)) == td and copy.deepcopy(td) == td
  assert repr(td).count("*") == 1 and td.num_nodes == 801
  assert td.flatten_up_to(tree) == [7] and jt.leaves_with_path(tree)[0][1] == 7
  assert jt.map(lambda x, y: x + y, tree, tree) == td.unflatten([14])


# --- treedef helpers ---------------------------------------------------------------------------


def test_treedef_tuple_children_is_leaf_compose():
  x, y = jt.structure([1, 2, 3]), jt.structure({"a": 4, "b": 5})
  assert tu.treedef_tuple([x, y]) == jt.structure(([1, 2, 3], {"a": 4, "b": 5}))
  assert repr(tu.treedef_tuple([])) == "PyTreeDef(())"
  assert tu.treedef_tuple([x, y]).num_leaves == 5
  assert tu.treedef_is_leaf(jt.structure(1)) and tu.treedef_is_leaf(jt.structure(None))
  assert not tu.treedef_is_leaf(jt.structure([1]))
  composed = jt.structure({"a": [1, 2], "b": None}).compose(jt.structure((1, 2)))
  assert repr(composed) == "PyTreeDef({'a': [(*, *), (*, *)], 'b': None})"
  assert composed.num_leaves == 4


def test_walk_from_iterable_tree_and_from_node_data():
  td = jt.structure({"a": [1, 2], "b": None})
  walked = td.walk(lambda xs, data: ("N", xs, data), lambda x: x * 10, [1, 2])
  assert walked == ("N", (("N", (10, 20), None), ("N", (), None)), ["a", "b"])
  assert td.from_iterable_tree([[5, 6], ()]) == {"a": [5, 6], "b": None}
  with pytest.raises(ValueError, match="Arity mismatch between trees"):
    td.from_iterable_tree([[5, 6], (), 3])
  rebuilt = tu.PyTreeDef.from_node_data_and_children(None, td.node_data(), td.children())
  assert rebuilt == td
  assert repr(tu.PyTreeDef.from_node_data_and_children(None, None, [])) == "PyTreeDef(*)"
  with pytest.raises(ValueError, match="Could not find type: <class 'set'>."):
    tu.PyTreeDef.from_node_data_and_children(None, (set, None), [])


def test_all_leaves_and_flatten_one_level():
  assert tu.all_leaves([1, 2]) and not tu.all_leaves([1, None]) and not tu.all_leaves([[1]])
  assert tu.all_leaves([None], is_leaf=lambda x: x is None)
  assert tu.flatten_one_level({"b": [1], "a": 2}) == ((2, [1]), ("a", "b"))
  assert tu.flatten_one_level([1, 2]) == ([1, 2], None)
  assert tu.flatten_one_level(None) == ((), None)
  assert tu.flatten_one_level(OD) == ([1, 2], ("b", "a"))
  assert tu.flatten_one_level(Point(1, 2)) == ([1, 2], Point)
  assert tu.flatten_one_level_with_keys({"b": 1}) == (((tu.DictKey("b"), 1),), ("b",))
  with pytest.raises(ValueError, match="can't tree-flatten type: <class 'int'>"):
    tu.flatten_one_level(1)


# --- map, reduce, all, transpose, broadcast ----------------------------------------------------


def test_map_with_prefix_and_none():
  assert jt.map(lambda a, b: (a, b), [1, 2], [(3, 4), 5]) == [(1, (3, 4)), (2, 5)]
  assert jt.map(lambda x: x * 2, [1, None]) == [2, None]
  assert jt.map(lambda x, y: x + y, {"a": 1, "b": None}, {"a": 2, "b": None}) == {"a": 3, "b": None}
  assert jt.map(lambda x, y: (x, y), [1, None], [2, 3], is_leaf=lambda x: x is None) == [
      (1, 2), (None, 3)]
  calls = []
  jt.map(calls.append, {"b": 2, "a": 1, "c": [3, 4]})
  assert calls == [1, 2, 3, 4]  # f runs in leaf order


MAP_ERRORS = [
    ([1, 2], [1, 2, 3],
     ("pytree structure error: different lengths of list at key path\n    tree_map tree\n"
     "At that key path, the prefix pytree tree_map tree has a subtree of type list of length 2, "
     "but the full pytree has a subtree of the same type but of length 3.")),
    ([1, None], [1, 2],
     ("pytree structure error: different types at key path\n    tree_map tree[1]\n"
     "At that key path, the prefix pytree tree_map tree has a subtree of type\n"
     "    <class 'NoneType'>\nbut at the same key path the full pytree has a subtree of "
     "different type\n    <class 'int'>.")),
    ({"x": 1, "y": 2}, {"x": 1, "z": 2},
     ("pytree structure error: different pytree metadata at key path\n    tree_map tree\n"
     "At that key path, the prefix pytree tree_map tree has a subtree of type\n"
     "    <class 'dict'>\nwith metadata\n    ('x', 'y')\nbut at the same key path the full "
     "pytree has a subtree of the same type but with metadata\n    ('x', 'z')\n"
     "so the diff in the metadata at these pytree nodes is\n"
     "    - ('x', 'y')\n    ?        ^\n\n    + ('x', 'z')\n    ?        ^\n")),
    ({"a": 1}, {"a": 1, "b": 2},
     ("pytree structure error: different numbers of pytree children at key path\n"
     "    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a subtree of "
     "type\n    <class 'dict'>\nwith 1 child keys\n    a\nbut at the same key path the full "
     "pytree has a subtree of the same type but with 2 child keys\n    a b\n"
     "so the symmetric difference on key sets is\n    b")),
    ({"a": [1, (2, 3)]}, {"a": [1, (2, 3, 4)]},
     ("pytree structure error: different lengths of tuple at key path\n    tree_map tree['a'][1]\n"
     "At that key path, the prefix pytree tree_map tree has a subtree of type tuple of length 2, "
     "but the full pytree has a subtree of the same type but of length 3.")),
    ((1, 2), Point(1, 2),
     ("pytree structure error: different types at key path\n    tree_map tree\n"
     "At that key path, the prefix pytree tree_map tree has a subtree of type\n"
     "    <class 'tuple'>\nbut at the same key path the full pytree has a subtree of different "
     "type\n    <class 'test_tree_util.Point'>.")),
]


@pytest.mark.parametrize("prefix,full,message", MAP_ERRORS)
def test_map_structure_errors(prefix, full, message):
  with pytest.raises(ValueError) as info:
    jt.map(lambda *xs: xs, prefix, full)
  assert str(info.value) == message
  assert info.value.__suppress_context__  # raised `from None`, as in JAX


def test_map_error_names_the_true_namedtuple_field():
  with pytest.raises(ValueError, match=re.escape("    tree_map tree.y\n")):
    jt.map(lambda *xs: xs, Point(0, []), Point([], {}))
  keys = [k for k, _ in tu.flatten_one_level_with_keys(Point(5, 6))[0]]
  assert keys == [tu.GetAttrKey("x"), tu.GetAttrKey("y")]


def test_map_with_path_and_keystr():
  tree = {"a": Params(4, 5), "b": [1, (2,)], "c": Custom(6, 7)}
  paths = [tu.keystr(p) for p, _ in jt.leaves_with_path(tree)]
  assert paths == ["['a'].a", "['a'].b", "['b'][0]", "['b'][1][0]", "['c'][<flat index 0>]",
                   "['c'][<flat index 1>]"]
  simple = [tu.keystr(p, simple=True, separator="/") for p, _ in jt.leaves_with_path(tree)]
  assert simple == ["a/a", "a/b", "b/0", "b/1/0", "c/0", "c/1"]
  assert tu.keystr(()) == ""
  assert jt.map_with_path(lambda p, x, y: (tu.keystr(p), x + y), {"a": [1, 2]}, {"a": [10, 20]}) \
      == {"a": [("['a'][0]", 11), ("['a'][1]", 22)]}
  with pytest.raises(ValueError, match=re.escape("    tree_map_with_path tree['a']\n")):
    jt.map_with_path(lambda p, x, y: 0, {"a": [1, 2]}, {"a": [10]})


def test_flatten_with_path_keys_and_is_leaf():
  pairs, td = jt.flatten_with_path({"a": D(4, "s"), "n": None, "k": CK(3)})
  assert pairs == [((tu.DictKey("a"), tu.GetAttrKey("x")), 4),
                   ((tu.DictKey("k"), tu.GetAttrKey("v")), 3)]
  assert td == jt.structure({"a": D(4, "s"), "n": None, "k": CK(3)})
  by_path = jt.flatten_with_path([1, {"a": 2}], is_leaf=lambda p, x: len(p) == 1,
                                 is_leaf_takes_path=True)[0]
  assert by_path == [((tu.SequenceKey(0),), 1), ((tu.SequenceKey(1),), {"a": 2})]
  plain = jt.leaves_with_path([1, {"a": 2}], is_leaf=lambda x: isinstance(x, dict))
  assert plain == by_path
  partial_paths = jt.leaves_with_path(tu.Partial(_lambda, 1, k=2))
  assert partial_paths == [((tu.FlattenedIndexKey(0), tu.SequenceKey(0)), 1),
                           ((tu.FlattenedIndexKey(1), tu.DictKey("k")), 2)]


def test_reduce_all_reduce_associative():
  assert jt.reduce(lambda a, b: a + b, [1, 2, 3]) == 6
  assert jt.reduce(lambda a, b: a + b, [1, 2, 3], 10) == 16
  assert jt.reduce(lambda a, b: a + [b], [1, 2], []) == [1, 2]
  with pytest.raises(TypeError, match="reduce"):
    jt.reduce(lambda a, b: a + b, [])
  assert jt.all([1, True, [1]]) and not jt.all([1, 0]) and jt.all([])
  assert jt.reduce_associative(lambda a, b: f"({a}{b})", ["a", "b", "c", "d"]) == "((ab)(cd))"
  assert jt.reduce_associative(lambda a, b: a + b, [], identity=0) == 0
  with pytest.raises(TypeError, match="Must specify identity for parallel reduction"):
    jt.reduce_associative(lambda a, b: a + b, [])


def test_transpose_and_broadcast():
  outer, inner = jt.structure([0, 0]), jt.structure((0, 0))
  assert jt.transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
  assert jt.transpose(outer, None, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
  with pytest.raises(TypeError) as info:
    jt.transpose(outer, jt.structure((0, 0, 0)), [(1, 2), (3, 4)])
  assert str(info.value) == ("Mismatch\nPyTreeDef([(*, *), (*, *)])\n != \n"
                             "PyTreeDef([(*, *, *), (*, *, *)])")
  assert jt.broadcast([1, 2], [(3, 4), {"a": 5, "b": 6}]) == [(1, 1), {"a": 2, "b": 2}]
  with pytest.raises(ValueError, match=r"prefix pytree broadcast_prefix prefix_tree has a subt"):
    jt.broadcast([1, 2], [(3, 4)])


# --- registration ------------------------------------------------------------------------------


def test_duplicate_registration_is_an_error():
  for typ in (Custom, list, dict, type(None), collections.OrderedDict, tu.Partial):
    with pytest.raises(ValueError, match=re.escape(
        f"Duplicate custom PyTreeDef type registration for {typ}.")):
      tu.register_pytree_node(typ, lambda x: ((), None), lambda a, xs: None)


def test_registering_a_type_already_seen_as_a_leaf():
  class Late:
    def __init__(self, v):
      self.v = v

  assert jt.leaves([Late(1)])[0].v == 1  # cached as a leaf type ...
  tu.register_pytree_node(Late, lambda x: ((x.v,), None), lambda a, xs: Late(*xs))
  assert jt.leaves([Late(1)]) == [1]  # ... and a node from registration on


def test_bad_custom_flatten_results():
  class Bad:
    pass

  class Bad2:
    pass

  tu.register_pytree_node(Bad, lambda b: 5, lambda a, xs: Bad())
  tu.register_pytree_node(Bad2, lambda b: (5, None), lambda a, xs: Bad2())
  with pytest.raises(ValueError, match=r"should return a \(children, aux_data\) tuple, got 5$"):
    jt.flatten(Bad())
  with pytest.raises(ValueError, match="where 'children' is iterable, got \\(5, None\\)"):
    jt.flatten([Bad2()])


def test_register_pytree_node_class_and_unflatten_receives_tuple():
  seen = []

  @tu.register_pytree_node_class
  class Box:
    def __init__(self, items):
      self.items = items

    def tree_flatten(self):
      return (x for x in self.items), len(self.items)

    @classmethod
    def tree_unflatten(cls, aux, children):
      seen.append((aux, type(children)))
      return cls(list(children))

  leaves, td = jt.flatten(Box([1, [2]]))
  assert leaves == [1, 2] and repr(td) == "PyTreeDef(CustomNode(Box[2], [*, [*]]))"
  assert td.unflatten([5, 6]).items == [5, [6]] and seen == [(2, tuple)]


def test_register_dataclass_validation():
  @dataclasses.dataclass
  class E:
    a: int
    b: int

  with pytest.raises(ValueError, match=r"Missing fields: \{'b'\}"):
    tu.register_dataclass(E, data_fields=["a"], meta_fields=[])
  with pytest.raises(ValueError, match=r"only them. Unexpected fields: \{'a'\}.$"):
    tu.register_dataclass(E, data_fields=["a", "b"], meta_fields=["a"], drop_fields=["a"])

  class Plain:
    pass

  with pytest.raises(ValueError, match=r"must not overlap. Overlapping fields: \{'a'\}.$"):
    tu.register_dataclass(Plain, data_fields=["a"], meta_fields=["a"])
  with pytest.raises(TypeError, match="must both be specified"):
    tu.register_dataclass(E, data_fields=["a"])
  with pytest.raises(TypeError, match="required when nodetype is not a dataclass"):
    tu.register_dataclass(int)

  @tu.register_dataclass
  @dataclasses.dataclass
  class F:
    w: int
    name: str = jt.static(default="f")

  assert jt.leaves(F(3)) == [3] and jt.structure(F(3)).node_data() == (F, ("f",))
  assert jt.unflatten(jt.structure(F(3, "g")), [7]) == F(7, "g")


def test_partial_is_a_pytree():
  assert tu.Partial(_lambda, 1)() == 1
  add = tu.Partial(lambda x, y: x + y, 1)
  assert add(2) == 3 and isinstance(add, functools.partial)
  leaves, td = jt.flatten(tu.Partial(_lambda, 1, k=2))
  assert leaves == [1, 2]
  assert re.fullmatch(r"PyTreeDef\(CustomNode\(Partial\[<function _lambda at 0x[0-9a-f]+>\], "
                      r"\[\(\*,\), \{'k': \*\}\]\)\)", repr(td))
  assert jt.map(lambda x: x * 10, add).args == (10,)
  assert jt.structure(tu.Partial(_lambda)) == jt.structure(tu.Partial(_lambda))


def test_partial_of_a_partial_keeps_inner_args_static():
  def f(*a, **k):
    return a, k

  p = tu.Partial(functools.partial(f, 1), 2)
  assert p(3) == ((1, 2, 3), {})
  assert jt.leaves(p) == [2]  # the inner partial's 1 is part of the function, not a leaf
  assert repr(p.func).startswith("_HashableCallableShim(functools.partial(<function")
  assert p.func.func is f and p.func.args == (1,)
  assert jt.leaves(tu.Partial(tu.Partial(f, 1), 2)) == [2]


# --- key entries -------------------------------------------------------------------------------


@pytest.mark.parametrize("key,rep,text", [
    (tu.DictKey("a"), "DictKey(key='a')", "['a']"),
    (tu.DictKey(1), "DictKey(key=1)", "[1]"),
    (tu.SequenceKey(0), "SequenceKey(idx=0)", "[0]"),
    (tu.GetAttrKey("x"), "GetAttrKey(name='x')", ".x"),
    (tu.FlattenedIndexKey(1), "FlattenedIndexKey(key=1)", "[<flat index 1>]"),
])
def test_key_entries(key, rep, text):
  assert repr(key) == rep and str(key) == text
  field = type(key).__match_args__[0]
  twin = type(key)(getattr(key, field))
  assert twin == key and hash(twin) == hash(key) and pickle.loads(pickle.dumps(key)) == key
  with pytest.raises(AttributeError):
    setattr(key, field, 3)


def test_key_entries_are_distinct_types_and_match():
  assert tu.SequenceKey(0) != tu.FlattenedIndexKey(0) and tu.DictKey("a") != "a"
  assert hash(tu.DictKey("a")) == hash("a")
  match tu.GetAttrKey("w"):
    case tu.GetAttrKey(name=n):
      assert n == "w"
  with pytest.raises(TypeError, match="SequenceKey"):
    tu.SequenceKey("a")


# --- properties over generated trees -----------------------------------------------------------

_leaf = st.one_of(st.integers(-5, 5), st.sampled_from(["s", "t"]), st.just(1.5))
_str_keys = st.sampled_from(["a", "b", "c", "d", "e"])


def _nodes(children):
  return st.one_of(
      st.lists(children, max_size=4),
      st.lists(children, max_size=4).map(tuple),
      st.dictionaries(_str_keys, children, max_size=4),
      st.dictionaries(st.integers(0, 9), children, max_size=3),
      st.just(None),
      st.builds(Point, children, children),
      st.builds(Params, children, children),
      st.dictionaries(_str_keys, children, max_size=3).map(
          lambda d: collections.OrderedDict(reversed(list(d.items())))),
      st.dictionaries(_str_keys, children, max_size=3).map(
          lambda d: collections.defaultdict(list, d)),
      st.builds(Custom, children, children, st.sampled_from(["p", "q"])),
      st.builds(D, children, st.sampled_from(["m", "n"])),
  )


trees = st.recursive(_leaf, _nodes, max_leaves=12)
_settings = settings(max_examples=120, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _strict_eq(a, b) -> bool:
  """Equal values with identical container types all the way down."""
  if type(a) is not type(b):
    return False
  if isinstance(a, np.ndarray):
    return a.shape == b.shape and bool((a == b).all())
  if isinstance(a, dict):
    return (list(a) == list(b) and all(_strict_eq(a[k], b[k]) for k in a)
            and getattr(a, "default_factory", None) is getattr(b, "default_factory", None))
  if isinstance(a, (list, tuple)):
    return len(a) == len(b) and all(map(_strict_eq, a, b))
  if isinstance(a, (Custom, D)):
    return _strict_eq(vars(a), vars(b))
  return a == b


def _sorted_dicts(tree):
  """The tree as unflatten must rebuild it: dict and defaultdict keys sorted, all else kept."""
  if type(tree) is dict:
    return {k: _sorted_dicts(tree[k]) for k in sorted(tree)}
  if type(tree) is collections.defaultdict:
    return collections.defaultdict(tree.default_factory,
                                   {k: _sorted_dicts(tree[k]) for k in sorted(tree)})
  if type(tree) is collections.OrderedDict:
    return collections.OrderedDict((k, _sorted_dicts(v)) for k, v in tree.items())
  if type(tree) in (list, tuple):
    return type(tree)(map(_sorted_dicts, tree))
  if type(tree) in (Point, Params):
    return type(tree)(*map(_sorted_dicts, tree))
  if type(tree) is Custom:
    return Custom(_sorted_dicts(tree.a), _sorted_dicts(tree.b), tree.aux)
  if type(tree) is D:
    return D(_sorted_dicts(tree.x), tree.s)
  return tree


@_settings
@given(trees)
def test_property_round_trip(tree):
  leaves, td = jt.flatten(tree)
  rebuilt = td.unflatten(leaves)
  assert _strict_eq(rebuilt, _sorted_dicts(tree))
  assert rebuilt == tree  # dict order aside, the same value
  assert jt.structure(rebuilt) == td and hash(jt.structure(rebuilt)) == hash(td)
  assert td.num_leaves == len(leaves) and td.num_nodes >= td.num_leaves
  assert td.flatten_up_to(tree) == leaves
  assert [x for _, x in jt.leaves_with_path(tree)] == leaves
  assert jt.flatten_with_path(tree)[1] == td
  clone = pickle.loads(pickle.dumps(td))
  assert clone == td and hash(clone) == hash(td) and repr(clone) == repr(td)
  assert _strict_eq(jt.map(lambda x: x, tree), rebuilt)
  assert jt.leaves(td.unflatten(range(len(leaves)))) == list(range(len(leaves)))


@_settings
@given(trees)
def test_property_children_rebuild_structure(tree):
  td = jt.structure(tree)
  if td.node_data() is None:
    assert tu.treedef_is_leaf(td) and td.children() == []
    return
  kids = td.children()
  assert sum(k.num_leaves for k in kids) == td.num_leaves
  assert 1 + sum(k.num_nodes for k in kids) == td.num_nodes
  assert tu.PyTreeDef.from_node_data_and_children(None, td.node_data(), kids) == td


@_settings
@given(trees, trees)
def test_property_map_pairs_prefix_leaves_with_subtrees(a, b):
  td = jt.structure(a)
  full = td.unflatten([b] * td.num_leaves)
  assert td.flatten_up_to(full) == [b] * td.num_leaves
  pairs = jt.map(lambda x, y: ("pair", x, y), a, full)
  assert td.flatten_up_to(pairs) == [("pair", x, b) for x in jt.leaves(a)]


# --- differential tests against real JAX -------------------------------------------------------


@pytest.fixture(scope="module")
def jax_tu():
  jtu = pytest.importorskip("jax.tree_util")
  for typ, fl, unfl in ((Custom, _custom_flatten, _custom_unflatten),):
    jtu.register_pytree_node(typ, fl, unfl)
  jtu.register_dataclass(D)
  jtu.register_dataclass(D2, data_fields=["q", "r"], meta_fields=["m"])
  jtu.register_pytree_with_keys_class(CK)
  jtu.register_static(S)
  return jtu


def _outcome(fn):
  """("ok", repr of the result) or (exception type name, message), for comparing runs."""
  try:
    return "ok", repr(fn())
  except Exception as e:  # noqa: BLE001 -- comparing errors is the point
    return type(e).__name__, _attr_keys_blurred(str(e))


def _attr_keys_blurred(message: str) -> str:
  """The message with `.field` keys in its key-path line blurred. jaxlib's
  flatten_one_level_with_keys names every namedtuple child after the first field, so JAX
  prints `tree.x` for a mismatch at `.y`; jaxlite prints the true path (tested below)."""
  lines = message.split("\n")
  if len(lines) > 1 and lines[0].startswith("pytree structure error"):
    lines[1] = re.sub(r"\.[A-Za-z_]\w*", ".<attr>", lines[1])
  return "\n".join(lines)


def _describe(jtu_mod, tree):
  leaves, td = jtu_mod.tree_flatten(tree)
  paths = [jtu_mod.keystr(p) for p, _ in jtu_mod.tree_leaves_with_path(tree)]
  kids = [repr(c) for c in td.children()]
  return leaves, repr(td), td.num_leaves, td.num_nodes, paths, kids, str(td.node_data())


@pytest.mark.parametrize("tree", [t for t, *_ in STRUCTURES[:-1]])
def test_oracle_structure_table(jax_tu, tree):
  assert _describe(tu, tree) == _describe(jax_tu, tree)


@_settings
@given(trees)
def test_oracle_generated_trees(jax_tu, tree):
  assert _describe(tu, tree) == _describe(jax_tu, tree)
  ours = jt.structure(tree).unflatten(range(jt.structure(tree).num_leaves))
  theirs = jax_tu.tree_structure(tree).unflatten(range(jt.structure(tree).num_leaves))
  assert _strict_eq(ours, theirs)


def _subtrees(tree):
  yield tree
  if tu.is_tree_node(type(tree)):
    for child in tu.flatten_one_level(tree)[0]:
      yield from _subtrees(child)


@st.composite
def near_misses(draw):
  """(tree, the tree with one subtree swapped for another): mismatches deep inside."""
  a = draw(trees)
  spots = list(_subtrees(a))
  chosen = spots[draw(st.integers(0, len(spots) - 1))]
  other = draw(trees)
  b = jt.map(lambda x: other if x is chosen else x, a, is_leaf=lambda x: x is chosen)
  return (a, b) if draw(st.booleans()) else (b, a)


@_settings
@given(st.one_of(st.tuples(trees, trees), near_misses()))
def test_oracle_map_errors_and_up_to(jax_tu, pair_of_trees):
  a, b = pair_of_trees
  pair = lambda *xs: xs
  assert _outcome(lambda: jt.map(pair, a, b)) == _outcome(lambda: jax_tu.tree_map(pair, a, b))
  assert _outcome(lambda: jt.structure(a).flatten_up_to(b)) == _outcome(
      lambda: jax_tu.tree_structure(a).flatten_up_to(b))
  assert _outcome(lambda: jt.broadcast(a, b)) == _outcome(lambda: jax_tu.tree_broadcast(a, b))


@_settings
@given(trees)
def test_oracle_unflatten_counts(jax_tu, tree):
  n = jt.structure(tree).num_leaves
  for count in (n - 1, n + 1):
    if count < 0:
      continue
    ours = functools.partial(jt.structure(tree).unflatten, [0] * count)
    theirs = functools.partial(jax_tu.tree_structure(tree).unflatten, [0] * count)
    assert _outcome(ours) == _outcome(theirs)


def test_oracle_partial_repr(jax_tu):
  ours = repr(jt.structure(tu.Partial(_lambda, 1)))
  theirs = repr(jax_tu.tree_structure(jax_tu.Partial(_lambda, 1)))
  assert ours == theirs == ("PyTreeDef(CustomNode(Partial[" + repr(_lambda) + "], [(*,), {}]))")


def test_oracle_key_entries(jax_tu):
  for ours, theirs in ((tu.DictKey("a"), jax_tu.DictKey("a")),
                       (tu.SequenceKey(3), jax_tu.SequenceKey(3)),
                       (tu.GetAttrKey("x"), jax_tu.GetAttrKey("x")),
                       (tu.FlattenedIndexKey(2), jax_tu.FlattenedIndexKey(2))):
    assert (repr(ours), str(ours), hash(ours)) == (repr(theirs), str(theirs), hash(theirs))


def _is_tuple(x) -> bool:
  return type(x) is tuple


@_settings
@given(st.one_of(st.tuples(trees, trees), near_misses()))
def test_oracle_treedef_equality_and_is_leaf(jax_tu, pair_of_trees):
  a, b = pair_of_trees
  assert (jt.structure(a) == jt.structure(b)) == (jax_tu.tree_structure(a) == jax_tu.tree_structure(b))
  for tree in (a, b):
    ours = jt.flatten_with_path(tree, is_leaf=_is_tuple)
    theirs = jax_tu.tree_flatten_with_path(tree, is_leaf=_is_tuple)
    assert [(tu.keystr(p), x) for p, x in ours[0]] == [(jax_tu.keystr(p), x) for p, x in theirs[0]]
    assert repr(ours[1]) == repr(theirs[1]) == repr(jt.structure(tree, is_leaf=_is_tuple))


def _seed_snippet_output(lib, lnp) -> list[str]:
  """What the key-concepts pytree snippet prints, run with `lib` as jax and `lnp` as jnp."""
  out = []
  for params in ([1, 2, (lnp.arange(3), lnp.ones(2))],
                 {"n": 5, "W": lnp.ones((2, 2)), "b": lnp.zeros(2)}, Params(1, 5.0)):
    out += [str(lib.tree.structure(params)), str(lib.tree.leaves(params))]
  out.append(str(lib.tree.map(lambda x: x * 2, {"a": lnp.arange(2), "b": None})))
  return out


def test_oracle_seed_snippet_prints_what_jax_prints():
  jax = pytest.importorskip("jax")
  import jaxlite
  import jaxlite.numpy as jnp
  if not all(hasattr(jnp, name) for name in ("arange", "ones", "zeros")):
    pytest.skip("jaxlite.numpy has no arange/ones/zeros yet")
  assert _seed_snippet_output(jaxlite, jnp) == _seed_snippet_output(jax, jax.numpy)
