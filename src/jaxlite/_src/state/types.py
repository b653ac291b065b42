"""`jax._src.state.types`: `AbstractRef`, the type of a mutable array reference, and `Ref`, the
eager reference object (`jax.ref.Ref`) holding the buffer its primitives read and write.

flax.nnx asks `isinstance(jax.typeof(x), AbstractRef)`; that is True for refs only.
"""
from __future__ import annotations

import numpy as np


class AbstractRef:
  """The type of a reference to an array of aval `inner_aval` (shape and dtype are its)."""
  __slots__ = ("inner_aval", "memory_space", "kind")
  # jit keys its trace cache on avals; a ref has no sharding of its own (see leaf_signature).
  sharding = None

  def __init__(self, inner_aval, memory_space=None, kind=None):
    self.inner_aval = inner_aval
    self.memory_space = memory_space
    self.kind = kind

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  weak_type = property(lambda self: self.inner_aval.weak_type)
  ndim = property(lambda self: len(self.inner_aval.shape))
  size = property(lambda self: self.inner_aval.size)

  def str_short(self, short_dtypes: bool = False) -> str:
    return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

  def __repr__(self):
    return f"Ref{{{self.inner_aval.str_short(short_dtypes=False)}}}"

  __str__ = __repr__

  def __eq__(self, other):
    return (type(other) is type(self) and self.inner_aval == other.inner_aval
            and self.memory_space == other.memory_space and self.kind == other.kind)

  def __hash__(self):
    return hash((type(self), self.inner_aval, self.memory_space, self.kind))


# Ref's reads and writes (ref_get/ref_set/ref_addupdate), registered by state.primitives at its
# import: the types stay below the primitives that use them (issue 29).
_ops = {}


def register_ops(**ops):
  _ops.update(ops)


class _RefMeta(type):
  # As in JAX, a tracer whose type is an AbstractRef (a ref staged by jit) is a `Ref` too.
  def __instancecheck__(cls, inst):
    if type.__instancecheck__(cls, inst):
      return True
    from jaxlite._src.base import core
    return isinstance(inst, core.Tracer) and isinstance(inst.aval, AbstractRef)


class Ref(metaclass=_RefMeta):
  """A mutable array reference (`jax.ref.Ref`); make one with `jax.new_ref`.

  `_buf` is a NumPy array when the ref lives at the top level (eager code mutates it in place),
  or a tracer when the ref was made under vmap/grad/jvp, where every write rebinds `_buf` to a
  new traced value (the state is discharged into pure operations as it happens).
  """
  __slots__ = ("_aval", "_buf", "_written", "__weakref__")

  def __init__(self, aval: AbstractRef, buf):
    self._aval = aval
    self._buf = buf
    self._written = False  # the value shown is a written one (strong), as JAX's Ref shows it

  aval = property(lambda self: self._aval)
  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  ndim = property(lambda self: self._aval.ndim)
  size = property(lambda self: self._aval.size)

  def __getitem__(self, idx):
    return _ops["ref_get"](self, idx)

  def __setitem__(self, idx, value):
    _ops["ref_set"](self, idx, value)
    self._written = True

  def addupdate(self, x, idx=()):
    _ops["ref_addupdate"](self, idx, x)
    self._written = True

  def unsafe_buffer_pointer(self) -> int:
    """The address of the ref's buffer (the same across in-place writes)."""
    if not isinstance(self._buf, np.ndarray):
      raise TypeError(f"unsafe_buffer_pointer of a traced Ref {self._aval} is not available")
    return self._buf.__array_interface__["data"][0]

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __repr__(self):
    if isinstance(self._buf, np.ndarray):
      from jaxlite._src.base import core
      # JAX shows the weak type of the value held: a new ref's, until something is written
      aval = self._aval.inner_aval
      if self._written and aval.weak_type:
        aval = aval.update(weak_type=False)
      return "Ref" + repr(core.make_array(self._buf.copy(), aval))[5:]
    return f"Ref({self._buf!r})"
