"""JAX's error classes (`jax.errors`), with messages that say what happened and how to fix it."""
from __future__ import annotations

_DOCS = "https://docs.jax.dev/en/latest/errors.html#jax.errors."


class JAXTypeError(TypeError):
  pass


class JAXIndexError(IndexError):
  pass


def _tracer_context(tracer) -> str:
  ctx = getattr(tracer, "_error_context", None)
  return ctx() if callable(ctx) else ""


def _shape_str(tracer) -> str:
  aval = tracer.aval
  return aval.str_short(short_dtypes=False)


class ConcretizationTypeError(JAXTypeError):
  def __init__(self, tracer, context: str = ""):
    fun = f"\nThe problem arose with the `{context}` function. If trying to convert the data " \
          "type of a value, try using `x.astype(" + context + ")` or `jnp.array(x, " + context + \
          ")` instead." if context in ("int", "float", "complex", "bool") else \
          (f"\n{context}" if context else "")
    super().__init__(
        "Abstract tracer value encountered where concrete value is expected: traced array "
        f"with shape {_shape_str(tracer)}{fun}{_tracer_context(tracer)}\n\n"
        f"See {_DOCS}ConcretizationTypeError")


class NonConcreteBooleanIndexError(JAXIndexError):
  def __init__(self, tracer):
    super().__init__(
        f"Array boolean indices must be concrete; got {_shape_str(tracer)}\n\n"
        f"See {_DOCS}NonConcreteBooleanIndexError")


class TracerArrayConversionError(JAXTypeError):
  def __init__(self, tracer):
    super().__init__(
        "The numpy.ndarray conversion method __array__() was called on traced array with "
        f"shape {_shape_str(tracer)}{_tracer_context(tracer)}\n"
        f"See {_DOCS}TracerArrayConversionError")


class TracerIntegerConversionError(JAXTypeError):
  def __init__(self, tracer):
    super().__init__(
        "The __index__() method was called on traced array with shape "
        f"{_shape_str(tracer)}{_tracer_context(tracer)}\n"
        f"See {_DOCS}TracerIntegerConversionError")


class TracerBoolConversionError(ConcretizationTypeError):
  def __init__(self, tracer, context: str = "bool"):
    TypeError.__init__(
        self,
        f"Attempted boolean conversion of traced array with shape {_shape_str(tracer)}."
        f"{_tracer_context(tracer)}\n"
        "Python control flow (if, while, and, or, not) cannot depend on traced values: use "
        "jax.lax.cond, jax.lax.switch or jax.numpy.where for value-dependent branches, and "
        "jax.lax.while_loop, jax.lax.fori_loop or jax.lax.scan for loops.\n"
        f"See {_DOCS}TracerBoolConversionError")


class UnexpectedTracerError(JAXTypeError):
  pass


class KeyReuseError(JAXTypeError):
  pass


def unexpected_tracer_error(tracer) -> UnexpectedTracerError:
  kind = type(tracer).__name__
  return UnexpectedTracerError(
      "Encountered an unexpected tracer. A function transformed by JAX had a side effect, "
      "allowing for a reference to an intermediate value with type "
      f"{_shape_str(tracer)} wrapped in a {kind} to escape the scope of the transformation.\n"
      "JAX transformations require that functions explicitly return their outputs, and "
      "disallow saving intermediate values to global state.\n"
      "The leaked intermediate value was created on line . \n"
      "------------------------------\n"
      "To catch the leak earlier, try setting the environment variable "
      "JAX_CHECK_TRACER_LEAKS or using the `jax.checking_leaks` context manager.\n"
      f"See {_DOCS}UnexpectedTracerError")


class JaxRuntimeError(RuntimeError):
  """An error raised while a computation runs (JAX's name for XLA's runtime errors, e.g. a
  failed `checkify` check or an error raised inside a host callback)."""


class InconclusiveDimensionOperation(Exception):
  """A comparison or arithmetic on symbolic dimensions whose result depends on their values.

  jaxlite's shapes are always concrete, so its own code never raises this; libraries catch it
  around shape arithmetic, so the class exists for their `except` clauses."""
