"""`jaxlite.random` (`jax.random`): typed PRNG keys, split/fold_in/bits and the samplers.

Thin re-exports of `jaxlite._src.rng.random`; see there for the algorithms and their JAX bit layout.
"""
from jaxlite._src.rng.prng import PRNGKeyArray, threefry_2x32  # noqa: F401
from jaxlite._src.rng.random import (  # noqa: F401
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
from jaxlite._src.rng.random_gamma import (  # noqa: F401
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
from jaxlite._src.rng.random_more import (  # noqa: F401
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


def _add_out_sharding():
  # JAX 0.10.2's samplers take `out_sharding=`: the sample is resharded to it.
  from jaxlite._src.sharding.reshard import takes_out_sharding
  g = globals()
  for name in ("ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
               "dirichlet", "exponential", "f", "gamma", "generalized_normal", "geometric",
               "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
               "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson",
               "rademacher", "randint", "rayleigh", "t", "triangular", "truncated_normal",
               "uniform", "wald"):
    if name in g:
      g[name] = takes_out_sharding(g[name])


_add_out_sharding()
__all__ = [n for n in dir() if not n.startswith("_")]
