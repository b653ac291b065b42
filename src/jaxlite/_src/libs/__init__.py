"""Small libraries over numpy and lax behind public modules of their own (jax.image, jax.ops,
jax.flatten_util, jax.experimental.ode, jax.experimental.sparse).

See `_src/README.md` for the layout."""
