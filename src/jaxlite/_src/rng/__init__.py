"""Randomness: typed PRNG keys and their primitives, `jax.random`'s samplers.

See `_src/README.md` for the layout."""
