"""`jaxlite.errors`: the error classes JAX raises for tracer misuse."""
from jaxlite._src.errors import (  # noqa: F401
    ConcretizationTypeError, NonConcreteBooleanIndexError, TracerArrayConversionError,
    TracerBoolConversionError, TracerIntegerConversionError, UnexpectedTracerError,
    KeyReuseError, JAXTypeError, JAXIndexError)

__all__ = ["ConcretizationTypeError", "NonConcreteBooleanIndexError",
           "TracerArrayConversionError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "UnexpectedTracerError", "KeyReuseError"]
