"""`jaxlite.random` (`jax.random`): typed PRNG keys, split/fold_in/bits and the samplers.

Thin re-exports of `jaxlite._src.random`; see there for the algorithms and their JAX bit layout.
"""
from jaxlite._src.prng import PRNGKeyArray, threefry_2x32  # noqa: F401
from jaxlite._src.random import (  # noqa: F401
    PRNGKey,
    bernoulli,
    bits,
    categorical,
    cauchy,
    choice,
    clone,
    default_prng_impl,
    exponential,
    fold_in,
    gumbel,
    key,
    key_data,
    key_dtype,
    key_impl,
    laplace,
    logistic,
    multivariate_normal,
    normal,
    pareto,
    permutation,
    poisson,
    rademacher,
    randint,
    split,
    truncated_normal,
    uniform,
    weibull_min,
    wrap_key_data,
)
from jaxlite._src.random_gamma import (  # noqa: F401
    ball,
    beta,
    chisquare,
    dirichlet,
    gamma,
    generalized_normal,
    loggamma,
    orthogonal,
    random_gamma_p,
    t,
)
from jaxlite._src.random_more import (  # noqa: F401
    binomial,
    double_sided_maxwell,
    f,
    geometric,
    lognormal,
    maxwell,
    multinomial,
    rayleigh,
    triangular,
    wald,
)

__all__ = [n for n in dir() if not n.startswith("_")]
