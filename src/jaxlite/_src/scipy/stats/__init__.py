"""`jax.scipy.stats` distributions, one module each, composed from jnp and scipy.special."""
