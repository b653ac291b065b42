"""`jaxlite.scipy.stats` (`jax.scipy.stats`): probability distributions, one module each."""
from jaxlite.scipy.stats import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,
    gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
    pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy)
from jaxlite._src.scipy.stats.descriptive import ModeResult, mode, rankdata, sem  # noqa: F401
from jaxlite._src.scipy.stats.kde import gaussian_kde  # noqa: F401
