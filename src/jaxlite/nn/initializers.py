"""`jaxlite.nn.initializers` (`jax.nn.initializers`): `init(key, shape, dtype)` functions."""
from jaxlite._src.nn.initializers import (  # noqa: F401
    Initializer, constant, delta_orthogonal, glorot_normal, glorot_uniform, he_normal,
    he_uniform, kaiming_normal, kaiming_uniform, lecun_normal, lecun_uniform, normal, ones,
    orthogonal, truncated_normal, uniform, variance_scaling, xavier_normal, xavier_uniform,
    zeros)

__all__ = [n for n in dir() if not n.startswith("_")]
