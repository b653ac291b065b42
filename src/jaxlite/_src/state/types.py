"""`jax._src.state.types.AbstractRef`: the abstract value of a mutable array reference.

flax.nnx imports it to ask `isinstance(jax.typeof(x), AbstractRef)`. jaxlite has no mutable
references yet (no `jax.new_ref`, so flax takes its no-ref path): no jaxlite value has this type,
and that test is False for every jaxlite array, as it is in JAX for a plain array.
"""
from __future__ import annotations


class AbstractRef:
  """The type of a reference to an array of aval `inner_aval` (shape and dtype are its)."""
  __slots__ = ("inner_aval",)

  def __init__(self, inner_aval):
    self.inner_aval = inner_aval

  @property
  def shape(self):
    return self.inner_aval.shape

  @property
  def dtype(self):
    return self.inner_aval.dtype

  @property
  def ndim(self):
    return len(self.inner_aval.shape)

  def __repr__(self):
    return f"Ref{{{self.inner_aval}}}"

  def __eq__(self, other):
    return type(other) is type(self) and self.inner_aval == other.inner_aval

  def __hash__(self):
    return hash((type(self), self.inner_aval))
