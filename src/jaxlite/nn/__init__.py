"""`jaxlite.nn` (`jax.nn`): activation functions, softmax and friends, one_hot, initializers."""
from jaxlite._src.nn.functions import (  # noqa: F401
    celu, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish, hard_tanh,
    identity, leaky_relu, log1mexp, log_sigmoid, log_softmax, logmeanexp, logsumexp, mish,
    normalize, one_hot, relu, relu6, selu, sigmoid, silu, soft_sign, softmax, softplus,
    sparse_plus, sparse_sigmoid, squareplus, standardize, swish, tanh)
from jaxlite._src.nn.attention import dot_product_attention  # noqa: F401
from jaxlite._src.nn.scaled import (  # noqa: F401
    get_scaled_dot_general_config, scaled_dot_general, scaled_matmul)
from jaxlite.nn import initializers  # noqa: F401

__all__ = [n for n in dir() if not n.startswith("_")]
