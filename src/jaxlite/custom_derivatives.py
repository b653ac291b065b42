"""Public `jax.custom_derivatives`: functions with user-defined JVP or VJP rules."""
from jaxlite._src.custom_derivatives import (  # noqa: F401
    CustomVJPPrimal,
    SymbolicZero,
    custom_jvp,
    custom_jvp_call_p,
    custom_vjp,
    custom_vjp_call_p,
    zero_from_primal,
)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp", "zero_from_primal"]
