"""`jax.experimental.random`: the stateful generator `stateful_rng` / `StatefulPRNG`."""
from jaxlite._src.rng.stateful_rng import StatefulPRNG, stateful_rng  # noqa: F401
