"""StableHLO lowering of the incomplete gamma functions (igamma, igammac) and the derivative
of a gamma sample (random_gamma_grad, through igamma_grad_a), composed from basic ops as the
NumPy impls compute them: P(a, x) by its power series where x < a + 1, Q(a, x) by Legendre's
continued fraction elsewhere, each a while loop over all elements until every element that
uses it has converged (in the operands' precision). `special.py` registers them.
"""
from __future__ import annotations

import numpy as np

from jaxlite._src.compiler.xla.lowering import shaped_aval as _aval

_MAX_ITERATIONS = 2000


class _Ops:
  """Elementwise ops on values of one shape and float dtype."""

  def __init__(self, ctx, shape, dtype):
    self.ctx, self.shape, self.dtype = ctx, tuple(shape), np.dtype(dtype)
    self.av = _aval(shape, dtype)
    self.bool = _aval(shape, np.bool_)

  def __call__(self, name, *xs):
    return self.ctx.op(f"stablehlo.{name}", list(xs), self.av)

  def c(self, v):
    return self.ctx.constant(np.asarray(v, self.dtype), shape=self.shape)

  def cmp(self, a, b, direction):
    return self.ctx.compare(a, b, direction)

  def logic(self, name, a, b):
    return self.ctx.op(f"stablehlo.{name}", [a, b], self.bool)

  def where(self, p, a, b):
    return self.ctx.select(p, a, b)

  def with_ctx(self, ctx):
    return _Ops(ctx, self.shape, self.dtype)


def _loop(ctx, state, keep_going, step):
  """A while loop over `state` (its first entry the int32 iteration count) running `step` while
  the count is below the limit and `keep_going` holds for any element."""
  avals = [v.aval for v in state]

  def cond(c, i, *rest):
    more = c.compare(i, c.constant(np.asarray(_MAX_ITERATIONS, np.int32)), "LT")
    busy = keep_going(c, *rest)
    busy = c.op("stablehlo.reduce", [busy, c.constant(np.asarray(False))], _aval((), np.bool_),
                {"dimensions": f"array<i64: {', '.join(map(str, range(len(busy.shape))))}>"
                 if busy.shape else "array<i64>"},
                regions=[c.scalar_region(np.bool_, "stablehlo.or")])
    return [c.op("stablehlo.and", [more, busy], more.aval)]

  def body(c, i, *rest):
    nxt = c.op("stablehlo.add", [i, c.constant(np.asarray(1, np.int32))], i.aval)
    return [nxt, *step(c, *rest)]

  return ctx.op("stablehlo.while", state, avals,
                regions=[ctx.region(avals, cond), ctx.region(avals, body)])[1:]


def _not_small(o, value, scale):
  """|value| > eps |scale|: the element has not converged."""
  eps = o.c(np.finfo(o.dtype).eps)
  return o.cmp(o("abs", value), o("multiply", eps, o("abs", scale)), "GT")


def _series(o, a, x, use):
  """sum_n x^n / (a (a+1) ... (a+n)): P(a, x) without its prefactor."""
  term = o("divide", o.c(1), a)

  def keep_going(c, n, term, total):
    oc = o.with_ctx(c)
    return oc.logic("and", use, _not_small(oc, term, total))

  def step(c, n, term, total):
    oc = o.with_ctx(c)
    n = oc("add", n, oc.c(1))
    term = oc("multiply", term, oc("divide", x, n))
    return [n, term, oc("add", total, term)]

  i0 = o.ctx.constant(np.asarray(0, np.int32))
  _, _, total = _loop(o.ctx, [i0, a, term, term], keep_going, step)
  return total


def _fraction(o, a, x, use):
  """Legendre's continued fraction for Q(a, x) without its prefactor (modified Lentz)."""
  tiny = o.c(np.finfo(o.dtype).tiny)
  b = o("subtract", o("add", x, o.c(1)), a)
  d = o("divide", o.c(1), b)

  def keep_going(c, n, b, cc, d, h, delta):
    oc = o.with_ctx(c)
    return oc.logic("and", use, _not_small(oc, oc("subtract", delta, oc.c(1)), oc.c(1)))

  def step(c, n, b, cc, d, h, delta):
    oc = o.with_ctx(c)
    n = oc("add", n, oc.c(1))
    an = oc("negate", oc("multiply", n, oc("subtract", n, a)))
    b = oc("add", b, oc.c(2))
    guard = lambda v: oc.where(oc.cmp(oc("abs", v), tiny, "LT"), tiny, v)  # noqa: E731
    d = guard(oc("add", oc("multiply", an, d), b))
    cc = guard(oc("add", b, oc("divide", an, cc)))
    d = oc("divide", oc.c(1), d)
    delta = oc("multiply", d, cc)
    return [n, b, cc, d, oc("multiply", h, delta), delta]

  i0 = o.ctx.constant(np.asarray(0, np.int32))
  big = o("divide", o.c(1), tiny)
  outs = _loop(o.ctx, [i0, o.c(0), b, big, d, d, o.c(0)], keep_going, step)
  return outs[4]


def igamma_pair(ctx, a, x):
  """(P, Q) of the regularized incomplete gamma function, elementwise."""
  shape = ctx.aval_out.shape
  a, x = ctx.broadcast_to(a, shape), ctx.broadcast_to(x, shape)
  o = _Ops(ctx, shape, a.dtype)
  inf = o.c(np.inf)
  finite_x = o.logic("and", o.cmp(x, x, "EQ"), o.cmp(x, inf, "LT"))
  ok = o.logic("and", o.logic("and", o.cmp(a, o.c(0), "GT"), o.cmp(x, o.c(0), "GT")), finite_x)
  use_series = o.logic("and", ok, o.cmp(x, o("add", a, o.c(1)), "LT"))
  use_fraction = o.logic("and", ok, ctx.op("stablehlo.not", [use_series], use_series.aval))
  a_s, x_s = o.where(ok, a, o.c(1)), o.where(ok, x, o.c(1))
  lgamma = ctx.op("chlo.lgamma", [a_s], a_s.aval)
  prefix = o("exponential", o("subtract", o("subtract", o("multiply", a_s, o("log", x_s)), x_s),
                              lgamma))
  p_series = o("multiply", _series(o, a_s, x_s, use_series), prefix)
  q_frac = o("multiply", _fraction(o, a_s, x_s, use_fraction), prefix)
  p = o.where(use_series, p_series, o("subtract", o.c(1), q_frac))
  q = o.where(use_series, o("subtract", o.c(1), p_series), q_frac)
  nan = o.c(np.nan)
  p, q = o.where(ok, p, nan), o.where(ok, q, nan)
  a_nonneg = o.cmp(a, o.c(0), "GE")
  zero_x = o.logic("and", o.cmp(x, o.c(0), "EQ"), a_nonneg)
  p, q = o.where(zero_x, o.c(0), p), o.where(zero_x, o.c(1), q)
  done = o.logic("or", o.logic("and", o.cmp(a, o.c(0), "EQ"), o.cmp(x, o.c(0), "GT")),
                 o.logic("and", o.cmp(x, inf, "EQ"), a_nonneg))
  return o.where(done, o.c(1), p), o.where(done, o.c(0), q)


def igamma_rule(ctx, a, x):
  return igamma_pair(ctx, a, x)[0]


def igammac_rule(ctx, a, x):
  return igamma_pair(ctx, a, x)[1]


def igamma_grad_a_rule(ctx, a, x):
  """dP(a, x)/da from P's series term by term: each term times (log x - digamma(a + n + 1))."""
  shape = ctx.aval_out.shape
  a, x = ctx.broadcast_to(a, shape), ctx.broadcast_to(x, shape)
  o = _Ops(ctx, shape, a.dtype)
  finite = lambda v: o.logic(  # noqa: E731
      "and", o.cmp(v, v, "EQ"), o.cmp(o("abs", v), o.c(np.inf), "LT"))
  ok = o.logic("and", o.logic("and", o.cmp(a, o.c(0), "GT"), o.cmp(x, o.c(0), "GT")),
               o.logic("and", finite(a), finite(x)))
  aa, xx = o.where(ok, a, o.c(1)), o.where(ok, x, o.c(1))
  log_x = o("log", xx)
  a1 = o("add", aa, o.c(1))
  log_term = o("subtract", o("subtract", o("multiply", aa, log_x), xx),
               ctx.op("chlo.lgamma", [a1], a1.aval))
  psi = ctx.op("chlo.digamma", [a1], a1.aval)
  total = o("multiply", o("exponential", log_term), o("subtract", log_x, psi))

  def keep_going(c, n, log_term, psi, total, step):
    oc = o.with_ctx(c)
    early = oc.cmp(n, xx, "LE")  # the terms grow until n passes x
    return oc.logic("and", ok, oc.logic("or", early, _not_small(oc, step, total)))

  def step_fn(c, n, log_term, psi, total, step):
    oc = o.with_ctx(c)
    n = oc("add", n, oc.c(1))
    an = oc("add", aa, n)
    log_term = oc("add", log_term, oc("subtract", log_x, oc("log", an)))
    psi = oc("add", psi, oc("divide", oc.c(1), an))
    step = oc("multiply", oc("exponential", log_term), oc("subtract", log_x, psi))
    return [n, log_term, psi, oc("add", total, step), step]

  i0 = ctx.constant(np.asarray(0, np.int32))
  outs = _loop(ctx, [i0, o.c(0), log_term, psi, total, total], keep_going, step_fn)
  out = o.where(ok, outs[3], o.c(0))
  bad = o.logic("or", o.logic("or", o.cmp(a, a, "NE"), o.cmp(x, x, "NE")),
                o.logic("or", o.cmp(a, o.c(0), "LE"), o.cmp(x, o.c(0), "LT")))
  return o.where(bad, o.c(np.nan), out)


def random_gamma_grad_rule(ctx, a, x):
  """d sample / d alpha = -(dP/da) / (dP/dx) at a Gamma(alpha) sample x."""
  shape = ctx.aval_out.shape
  a, x = ctx.broadcast_to(a, shape), ctx.broadcast_to(x, shape)
  o = _Ops(ctx, shape, a.dtype)
  log_density = o("subtract", o("subtract", o("multiply", o("subtract", a, o.c(1)),
                                              o("log", x)), x),
                  ctx.op("chlo.lgamma", [a], a.aval))
  grad_a = igamma_grad_a_rule(ctx, a, x)
  return o("negate", o("divide", grad_a, o("exponential", log_density)))


def _beta_fraction(o, a, b, x):
  """Lentz's continued fraction of the incomplete beta function (the convergent side)."""
  tiny = o.c(np.finfo(o.dtype).tiny)
  one = o.c(1)
  qab, qap, qam = o("add", a, b), o("add", a, one), o("subtract", a, one)

  def guard(oc, v):
    return oc.where(oc.cmp(oc("abs", v), tiny, "LT"), tiny, v)

  d = o("divide", one, guard(o, o("subtract", one, o("divide", o("multiply", qab, x), qap))))

  def keep_going(c, m, cc, d, h, delta):
    oc = o.with_ctx(c)
    return _not_small(oc, oc("subtract", delta, oc.c(1)), oc.c(1))

  def step(c, m, cc, d, h, delta):
    oc = o.with_ctx(c)
    m = oc("add", m, oc.c(1))
    m2 = oc("multiply", m, oc.c(2))
    half = lambda aa, cc, d: (oc("divide", oc.c(1), guard(oc, oc("add", oc.c(1), oc(  # noqa: E731
        "multiply", aa, d)))), guard(oc, oc("add", oc.c(1), oc("divide", aa, cc))))
    aa = oc("divide", oc("multiply", oc("multiply", m, oc("subtract", b, m)), x),
            oc("multiply", oc("add", qam, m2), oc("add", a, m2)))
    d, cc = half(aa, cc, d)
    h = oc("multiply", h, oc("multiply", d, cc))
    aa = oc("negate", oc("divide", oc("multiply", oc("multiply", oc("add", a, m),
                                                     oc("add", qab, m)), x),
                         oc("multiply", oc("add", a, m2), oc("add", qap, m2))))
    d, cc = half(aa, cc, d)
    delta = oc("multiply", d, cc)
    return [m, cc, d, oc("multiply", h, delta), delta]

  i0 = o.ctx.constant(np.asarray(0, np.int32))
  outs = _loop(o.ctx, [i0, o.c(0), one, d, d, o.c(0)], keep_going, step)
  return outs[3]


def betainc_rule(ctx, a, b, x):
  """I_x(a, b): the fraction where x < (a + 1) / (a + b + 2), I = 1 - I_{1-x}(b, a) beyond."""
  shape = ctx.aval_out.shape
  a, b, x = (ctx.broadcast_to(v, shape) for v in (a, b, x))
  o = _Ops(ctx, shape, x.dtype)
  one = o.c(1)
  lgamma = lambda v: ctx.op("chlo.lgamma", [v], v.aval)  # noqa: E731
  swap = o.cmp(x, o("divide", o("add", a, one), o("add", o("add", a, b), o.c(2))), "GT")
  aa, bb, xx = o.where(swap, b, a), o.where(swap, a, b), o.where(swap, o("subtract", one, x), x)
  inner = o.logic("and", o.cmp(xx, o.c(0), "GT"), o.cmp(xx, one, "LT"))
  ok_ab = o.logic("and", o.cmp(aa, o.c(0), "GT"), o.cmp(bb, o.c(0), "GT"))
  safe_x = o.where(inner, xx, o.c(0.5))
  aa_s, bb_s = o.where(ok_ab, aa, one), o.where(ok_ab, bb, one)
  log_beta = o("subtract", o("add", lgamma(aa_s), lgamma(bb_s)), lgamma(o("add", aa_s, bb_s)))
  log_front = o("subtract", o("subtract", o("add", o("multiply", aa_s, o("log", safe_x)), o(
      "multiply", bb_s, o("log_plus_one", o("negate", safe_x)))), log_beta), o("log", aa_s))
  val = o("multiply", o("exponential", log_front), _beta_fraction(o, aa_s, bb_s, safe_x))
  val = o.where(swap, o("subtract", one, val), val)
  val = o.where(o.cmp(x, o.c(0), "LE"), o.c(0), o.where(o.cmp(x, one, "GE"), one, val))
  bad = o.logic("or", o.logic("or", o.cmp(a, o.c(0), "LE"), o.cmp(b, o.c(0), "LE")),
                o.logic("or", o.logic("or", o.cmp(a, a, "NE"), o.cmp(b, b, "NE")),
                        o.logic("or", o.cmp(x, x, "NE"), o.logic(
                            "or", o.cmp(x, o.c(0), "LT"), o.cmp(x, one, "GT")))))
  return o.where(bad, o.c(np.nan), val)
