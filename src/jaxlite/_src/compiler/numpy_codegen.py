"""Tier-0 executor: a jaxpr becomes the source of one Python function of NumPy calls.

Each eqn is one line: a template (`np.add(a, b)`) where the primitive has one, else a call of
its impl with params bound once at build time. `compile()` runs once per jaxpr.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from jaxlite._src import core
from jaxlite._src import dtypes
from jaxlite._src.compiler import passes
from jaxlite._src.core import Literal
from jaxlite._src.lax.families import (numpy_eqn_templates, numpy_quiet_primitives,
                                       numpy_templates, ufunc_primitives)

_fn_counter = itertools.count()


def _const_value(x):
  """A NumPy value for a jaxpr constant or literal."""
  if type(x) is core.array_type:
    return x._value
  if type(x) in dtypes.typed_scalar_types:
    return x.dtype.type(x)
  if type(x) in (int, float, complex, bool):
    return np.asarray(x, dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x)))[()]
  if isinstance(x, core.Array) and not isinstance(x, core.Tracer):  # typed PRNG key arrays
    return x._value
  return x


class _Namer:
  def __init__(self):
    self.names = {}
    self.count = 0

  def __call__(self, v) -> str:
    name = self.names.get(v)
    if name is None:
      name = self.names[v] = f"v{self.count}"
      self.count += 1
    return name


def jaxpr_to_source(jaxpr: core.Jaxpr, consts: list, fn_name: str = "_jaxpr_fn"):
  """(source, globals) of a Python function computing `jaxpr`'s outputs from its inputs."""
  namer = _Namer()
  glob = {"np": np}
  for v, c in zip(jaxpr.constvars, consts):
    glob[namer(v)] = _const_value(c)
  counter = itertools.count()

  def atom(v):
    if type(v) is Literal:
      name = f"_lit{next(counter)}"
      glob[name] = np.asarray(v.val, v.aval.dtype)[()]
      return name
    return namer(v)

  args = [namer(v) for v in jaxpr.invars]
  lines = [f"def {fn_name}({', '.join(args)}):"]
  last_use = _last_uses(jaxpr)
  owned = set()  # vars holding a fresh ufunc result that no one else references
  for i, eqn in enumerate(jaxpr.eqns):
    ins = [atom(v) for v in eqn.invars]
    outs = [namer(v) for v in eqn.outvars]
    line = _eqn_line(eqn, ins, outs, glob, counter)
    if eqn.primitive in ufunc_primitives and eqn.outvars[0].aval.ndim:
      donor = _dying_owned_input(eqn, i, owned, last_use)
      if donor is not None and line.endswith(")"):
        line = f"{line[:-1]}, out={namer(donor)})"
      owned.add(eqn.outvars[0])
    else:
      # Other ops may return views of (or the very object of) their inputs: never reuse those.
      owned.difference_update(eqn.invars)
    lines.append("  " + line)
  rets = [atom(v) for v in jaxpr.outvars]
  lines.append(f"  return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
  if any(e.primitive in numpy_quiet_primitives for e in jaxpr.eqns):
    lines = [lines[0], "  with np.errstate(all='ignore'):"] + ["  " + ln for ln in lines[1:]]
  return "\n".join(lines), glob


def _last_uses(jaxpr) -> dict:
  """Index of the last eqn reading each var (outputs of the jaxpr are never dead)."""
  last = {}
  for i, eqn in enumerate(jaxpr.eqns):
    for v in eqn.invars:
      if type(v) is not Literal:
        last[v] = i
  for v in jaxpr.outvars:
    if type(v) is not Literal:
      last[v] = len(jaxpr.eqns)
  return last


def _dying_owned_input(eqn, i, owned, last_use):
  """An input buffer the ufunc may overwrite: fresh, same type as the output, dead after it."""
  out = eqn.outvars[0].aval
  for v in eqn.invars:
    if type(v) is not Literal and v in owned and last_use.get(v) == i \
        and v.aval.shape == out.shape and v.aval.dtype == out.dtype:
      owned.discard(v)
      return v
  return None


def _eqn_line(eqn, ins, outs, glob, counter) -> str:
  prim = eqn.primitive
  eqn_rule = numpy_eqn_templates.get(prim)
  template = eqn_rule(eqn) if eqn_rule is not None else None
  if template is None:
    template_rule = numpy_templates.get(prim)
    template = template_rule(**eqn.params) if template_rule is not None else None
  if template is not None:
    expr = template.format(*ins)
  else:
    fname = f"_{prim.name.replace('-', '_')}{next(counter)}"
    glob[fname] = functools.partial(prim.impl, **eqn.params) if eqn.params else prim.impl
    expr = f"{fname}({', '.join(ins)})"
  if prim.multiple_results:
    if not outs:
      return expr
    return f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {expr}"
  return f"{outs[0]} = {expr}"


def compile_jaxpr(closed: core.ClosedJaxpr):
  """A callable of NumPy values returning the list of NumPy outputs (cached on the jaxpr)."""
  fn = closed._compiled
  if fn is None:
    jaxpr, consts = passes.optimize(closed)
    name = f"_jaxpr_fn{next(_fn_counter)}"
    src, glob = jaxpr_to_source(jaxpr, consts, name)
    code = compile(src, f"<jaxlite tier0 {name}>", "exec")
    exec(code, glob)
    fn = closed._compiled = glob[name]
    fn.__jaxlite_source__ = src
  return fn
