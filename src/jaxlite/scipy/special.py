"""`jaxlite.scipy.special` (`jax.scipy.special`): special functions."""
from jaxlite._src.scipy.special import (
    bernoulli, beta, betainc, betaln, boxcox, boxcox1p, comb, digamma, entr, erf, erfc, erfcx,
    erfinv, exp1, expi, expit, factorial, gamma, gammainc, gammaincc, gammaln, gammasgn, i0, i0e,
    i1, i1e, kl_div, log_ndtr, log_softmax, loggamma, logit, logsumexp, multigammaln, ndtr,
    ndtri, poch, polygamma, rel_entr, softmax, xlog1py, xlogy, zeta)
from jaxlite._src.scipy.special_more import dawsn, expn  # noqa: F401
from jaxlite._src.scipy.special_more2 import (  # noqa: F401
    bessel_jn, fresnel, hyp1f1, hyp2f1, owens_t, sici, sph_harm_y, spence, wofz)

__all__ = [n for n in dir() if not n.startswith("_")]
