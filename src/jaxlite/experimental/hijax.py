"""`jax.experimental.hijax`: hi types and primitives (see jaxlite._src.compat.hijax for how they run).

The names flax.nnx's hijax Variables use, with the lo-level helpers JAX re-exports here.
"""
from jaxlite._src.base.core import ShapedArray
from jaxlite._src.compat.core_adapters import AbstractValue
from jaxlite._src.compat.hijax import (
    AvalMutableQDD, AvalQDD, HiPrimitive, HiType, MutableHiType, MutableQuasiDynamicData,
    QuasiDynamicData, aval_method, aval_property, control_flow_allowed_effects, cur_qdd,
    hijax_method, register_hitype)
from jaxlite._src.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from jaxlite._src.state.types import AbstractRef
