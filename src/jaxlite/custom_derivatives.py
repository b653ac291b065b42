"""Public `jax.custom_derivatives`: functions with user-defined JVP or VJP rules."""
from jaxlite._src.transforms.custom_derivatives import (  # noqa: F401
    CustomVJPPrimal,
    SymbolicZero,
    custom_jvp,
    custom_jvp_call_p,
    custom_vjp,
    custom_vjp_call_p,
    zero_from_primal,
)
from jaxlite._src.transforms.api_extras import closure_convert, custom_gradient  # noqa: F401


def custom_vjp_primal_tree_values(tree):
  """`tree` with each `CustomVJPPrimal` record (what a `symbolic_zeros=True` fwd rule receives)
  replaced by the primal value it carries."""
  from jaxlite._src.base import tree_util

  def value(leaf):
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_util.tree_map(value, tree, is_leaf=lambda x: type(x) is CustomVJPPrimal)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp",
           "custom_vjp", "custom_vjp_primal_tree_values", "zero_from_primal"]
from jaxlite._src.transforms.linear_call import linear_call  # noqa: F401,E402
