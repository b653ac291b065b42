"""`jax._src.interpreters.pxla`, as far as JAX libraries import it: flax's fp8 rules register a
result handler that looks `global_result_handlers[ShapedArray]` up. Result handlers belong to
XLA lowering, which jaxlite does not have, so the table is empty and never consulted; it exists
so that the import (flax's test for eager extended-dtype arrays, with `jax._src.earray`)
succeeds."""
global_result_handlers: dict = {}
