"""`jaxlite.scipy.stats` (`jax.scipy.stats`): probability distributions, one module each."""
from jaxlite.scipy.stats import (  # noqa: F401
    bernoulli, beta, cauchy, chi2, dirichlet, expon, gamma, laplace, logistic,
    multivariate_normal, norm, poisson, t, uniform)
