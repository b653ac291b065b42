"""`jax.stages`: the types of jit's ahead-of-time stages (`jit(f).trace/lower/compile`).

`Traced`, `Lowered`, `Compiled` are the classes jit returns; `Wrapped` is what `jit(f)` is.
"""
import abc
from typing import Any

from jaxlite._src.transforms.jit_function import PjitFunction
from jaxlite._src.transforms.jit_stages import Compiled, Lowered, Traced  # noqa: F401
from jaxlite._src.transforms.stage_info import ArgInfo  # noqa: F401

CompilerOptions = dict[str, Any]


class Wrapped(abc.ABC):
  """A function jit has wrapped: callable, with `trace`/`lower` (jit's PjitFunction)."""


Wrapped.register(PjitFunction)


__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
