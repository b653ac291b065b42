"""`jax.experimental.random`: the stateful generator `stateful_rng` / `StatefulPRNG`."""
from jaxlite._src.stateful_rng import StatefulPRNG, stateful_rng  # noqa: F401
