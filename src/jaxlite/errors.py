"""`jaxlite.errors`: the error classes JAX raises for tracer misuse."""
from jaxlite._src.base.errors import (  # noqa: F401
    ConcretizationTypeError, NonConcreteBooleanIndexError, TracerArrayConversionError,
    TracerBoolConversionError, TracerIntegerConversionError, UnexpectedTracerError,
    KeyReuseError, JAXTypeError, JAXIndexError, JaxRuntimeError, InconclusiveDimensionOperation)
from jaxlite._src.base.core import JaxprTypeError  # noqa: F401 - raised by core.check_jaxpr

__all__ = ["ConcretizationTypeError", "NonConcreteBooleanIndexError",
           "TracerArrayConversionError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "UnexpectedTracerError", "KeyReuseError",
           "JaxRuntimeError", "InconclusiveDimensionOperation", "JaxprTypeError"]
