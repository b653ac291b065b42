"""`jaxlite.example_libraries` (`jax.example_libraries`): the small `stax` neural-net and
`optimizers` libraries JAX ships as examples, written over jaxlite's public API."""
