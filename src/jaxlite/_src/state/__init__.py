"""`jax._src.state`: the types of mutable array references, as far as JAX libraries import them."""
