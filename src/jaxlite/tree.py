"""Public `jax.tree`: the short names for the pytree utilities (`jax.tree.map`, ...).

Thin aliases of jaxlite._src.base.tree_util; JAX's names shadow builtins inside this module only.
"""
from jaxlite._src.base import tree_util as _tu

all = _tu.tree_all
broadcast = _tu.tree_broadcast
flatten = _tu.tree_flatten
flatten_with_path = _tu.tree_flatten_with_path
leaves = _tu.tree_leaves
leaves_with_path = _tu.tree_leaves_with_path
map = _tu.tree_map
map_with_path = _tu.tree_map_with_path
reduce = _tu.tree_reduce
reduce_associative = _tu.tree_reduce_associative
static = _tu.static
structure = _tu.tree_structure
transpose = _tu.tree_transpose
unflatten = _tu.tree_unflatten

__all__ = [
    "all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
    "map_with_path", "reduce", "reduce_associative", "static", "structure", "transpose",
    "unflatten",
]
