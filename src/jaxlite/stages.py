"""`jax.stages`: the types of jit's ahead-of-time stages (`jit(f).trace/lower/compile`).

`Traced`, `Lowered`, `Compiled` are the classes jit returns; `Wrapped` is what `jit(f)` is.
"""
import abc
from typing import Any

from jaxlite._src.jit_function import Compiled, Lowered, PjitFunction, Traced  # noqa: F401

CompilerOptions = dict[str, Any]


class Wrapped(abc.ABC):
  """A function jit has wrapped: callable, with `trace`/`lower` (jit's PjitFunction)."""


Wrapped.register(PjitFunction)


class ArgInfo:
  """An argument's abstract value and whether it is donated."""
  __slots__ = ("_aval", "donated")

  def __init__(self, _aval, donated: bool):
    self._aval, self.donated = _aval, donated

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)

  def __eq__(self, other):
    return (isinstance(other, ArgInfo) and self._aval == other._aval
            and self.donated == other.donated)

  def __hash__(self):
    return hash((self._aval, self.donated))

  def __repr__(self):
    return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
