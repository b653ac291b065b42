"""A new elementwise primitive defined in this one file and nowhere else (issue 29): softsign,
x / (1 + |x|). The family helper `families.unop` records what the library needs to know of it
(its kind "elementwise" and that tier 1 may fuse it, its vmap and sharding rules, its StableHLO
rule for the xla backend); its JVP is registered here. tests/test_one_file_primitive.py uses it
under every tier, grad, vmap, sharded jit and fusion; no library module names it."""
import numpy as np

from jaxlite._src.interpreters import ad
from jaxlite._src.lax import elementwise as ew
from jaxlite._src.lax import families


def _softsign(x):
  return x / (1 + np.abs(x))


def _softsign_hlo(ctx, x):
  one = ctx.constant(np.ones((), x.dtype), shape=x.shape)
  return ctx.op("divide", [x, ctx.op("add", [one, ctx.op("abs", [x], x.aval)], x.aval)], x.aval)


softsign_p = families.unop("softsign", _softsign, "f", hlo=_softsign_hlo)


def _softsign_jvp(t, x):
  d = ew.add_p.bind(ew.abs_p.bind(x), np.ones((), x.dtype)[()])
  return ew.div_p.bind(t, ew.mul_p.bind(d, d))


ad.defjvp(softsign_p, _softsign_jvp)


def softsign(x):
  return softsign_p.bind(x)
