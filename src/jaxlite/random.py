"""`jaxlite.random` (`jax.random`): typed PRNG keys, split/fold_in/bits and the samplers.

Thin re-exports of `jaxlite._src.random`; see there for the algorithms and their JAX bit layout.
"""
from jaxlite._src.prng import PRNGKeyArray, threefry_2x32  # noqa: F401
from jaxlite._src.random import (  # noqa: F401
    PRNGKey,
    ball,
    bernoulli,
    beta,
    bits,
    categorical,
    cauchy,
    chisquare,
    choice,
    clone,
    default_prng_impl,
    dirichlet,
    exponential,
    fold_in,
    gamma,
    generalized_normal,
    gumbel,
    key,
    key_data,
    key_dtype,
    key_impl,
    laplace,
    loggamma,
    logistic,
    multivariate_normal,
    normal,
    orthogonal,
    pareto,
    permutation,
    poisson,
    rademacher,
    randint,
    random_gamma_p,
    split,
    t,
    truncated_normal,
    uniform,
    weibull_min,
    wrap_key_data,
)

__all__ = [n for n in dir() if not n.startswith("_")]
