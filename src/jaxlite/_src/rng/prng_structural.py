"""Structural primitives on key arrays in the XLA backend: the primitive applied to the keys'
ui32 data, vmapped over the data's trailing (k0, k1) axis, so every shape op, gather, scatter,
select or concatenate of keys lowers through its own rule and batching rule. `random.py`
installs it as `lowering.extended_fallback`. Calls and control flow (a jaxpr in their params)
keep their own rules: the keys pass through them and their bodies' equations come back here.
"""
from __future__ import annotations

from jaxlite._src.base import core
from jaxlite._src.compiler.xla import lowering as xla
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.lax import reductions
from jaxlite._src.lax.elementwise import eq_p, ne_p
from jaxlite._src.lax.gather_dnums import GatherScatterMode
from jaxlite._src.lax.slicing_primitives import gather_p
from jaxlite._src.transforms.vmap_api import vmap

_traced: dict = {}
# comparisons of keys: a comparison of each word, combined over the words
_WORDS_COMBINED = {eq_p: reductions.reduce_and_p, ne_p: reductions.reduce_or_p}
_TRACED_LIMIT = 512


def _has_jaxpr(params) -> bool:
  for v in params.values():
    for x in (v if isinstance(v, (tuple, list)) else (v,)):
      if isinstance(x, (core.Jaxpr, core.ClosedJaxpr)):
        return True
  return False


def _on_data(prim, params, in_ext):
  """fn(*data) applying `prim` to key data (keys' operands with a trailing axis of 2)."""
  if prim is gather_p and params.get("mode") == GatherScatterMode.FILL_OR_DROP:
    params = dict(params, mode=GatherScatterMode.CLIP)  # keys have no fill: they clamp
  axes = tuple(-1 if e else None for e in in_ext)

  def apply(*xs):
    out = prim.bind(*xs, **params)
    return list(out) if prim.multiple_results else [out]

  def fn(*data):
    outs = vmap(apply, in_axes=axes, out_axes=-1)(*data)
    reduce = _WORDS_COMBINED.get(prim)
    if reduce is not None:  # keys are equal when both words are
      outs = [reduce.bind(o, axes=(o.ndim - 1,)) for o in outs]
    return outs
  return fn


def _trace(prim, params, avals_in, in_ext):
  try:
    key = (prim, tuple(sorted(params.items())), tuple(avals_in))
    hit = _traced.get(key)
  except TypeError:  # an unhashable param: trace every time
    key, hit = None, None
  if hit is None:
    data_avals = [xla.physical_aval(a) for a in avals_in]
    hit = pe.trace_to_jaxpr(_on_data(prim, params, in_ext), data_avals)
    if key is not None:
      if len(_traced) >= _TRACED_LIMIT:
        _traced.clear()
      _traced[key] = hit
  return hit


def lower_on_data(ctx, *args, **params):
  prim = ctx.primitive
  if _has_jaxpr(params):
    return xla.rules[prim](ctx, *args, **params)
  in_ext = [xla.is_extended(a) for a in ctx.avals_in]
  closed = _trace(prim, params, ctx.avals_in, in_ext)
  outs = ctx.lower_jaxpr(closed, None, [xla.physical(a) if e else a for a, e in zip(args, in_ext)])
  outs = [xla.with_aval(o, a) if xla.is_extended(a) else o for o, a in zip(outs, ctx.avals_out)]
  return outs if prim.multiple_results else outs[0]


def install() -> None:
  xla.extended_fallback[0] = lower_on_data

