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
from jaxlite._src.lax.families import numpy_templates

_fn_counter = itertools.count()


def _const_value(x):
  """A NumPy value for a jaxpr constant or literal."""
  if type(x) is core.array_type:
    return x._value
  if type(x) in dtypes.typed_scalar_types:
    return x.dtype.type(x)
  if type(x) in (int, float, complex, bool):
    return np.asarray(x, dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x)))[()]
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
  for eqn in jaxpr.eqns:
    ins = [atom(v) for v in eqn.invars]
    outs = [namer(v) for v in eqn.outvars]
    lines.append("  " + _eqn_line(eqn, ins, outs, glob, counter))
  rets = [atom(v) for v in jaxpr.outvars]
  lines.append(f"  return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
  return "\n".join(lines), glob


def _eqn_line(eqn, ins, outs, glob, counter) -> str:
  prim = eqn.primitive
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
