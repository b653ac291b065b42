"""Public `jax.custom_derivatives`: functions with user-defined JVP or VJP rules."""
from jaxlite._src.custom_derivatives import (  # noqa: F401
    custom_jvp, custom_vjp, SymbolicZero, CustomVJPPrimal, zero_from_primal, custom_jvp_call_p,
    custom_vjp_call_p)

__all__ = ["custom_jvp", "custom_vjp", "SymbolicZero", "CustomVJPPrimal", "zero_from_primal"]
