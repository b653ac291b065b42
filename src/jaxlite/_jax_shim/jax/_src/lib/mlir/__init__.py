"""`jax._src.lib.mlir`: the MLIR Python bindings, as far as lowering rules use them
(`dialects.hlo`); see jax.interpreters.mlir for how jaxlite runs those rules."""
