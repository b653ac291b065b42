"""`jaxlite.scipy.special` (`jax.scipy.special`): special functions."""
from jaxlite._src.scipy.special import (  # noqa: F401
    beta, betainc, betaln, boxcox, boxcox1p, digamma, entr, erf, erfc, erfinv, expit, factorial,
    gamma, gammainc, gammaincc, gammaln, gammasgn, i0, i0e, i1, i1e, kl_div, log_ndtr,
    log_softmax, loggamma, logit, logsumexp, multigammaln, ndtr, ndtri, poch, polygamma,
    rel_entr, softmax, xlog1py, xlogy, zeta)

__all__ = [n for n in dir() if not n.startswith("_")]
