"""`jax.core`: the names JAX 0.10.2 exports from its core (tracers, avals, jaxpr evaluation).

Thin re-exports of jaxlite's own core (`_src/base/core.py`) and its adapters; nothing here re-implements.
"""
from typing import Any, Union

from jaxlite._src.base.core import ShapedArray, Trace, Tracer, Var, Literal  # noqa: F401
from jaxlite._src.compat.core_adapters import (  # noqa: F401
    AbstractValue, ensure_compile_time_eval, eval_context, eval_jaxpr, max_dim, min_dim)

Atom = Union[Var, Literal]
Value = Any
ParamDict = dict

del Var, Literal, Any, Union

__all__ = ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
           "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim", "min_dim"]
