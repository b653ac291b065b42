"""The NumPy backend (tier 0): a jaxpr becomes the source of one Python function of NumPy calls.

Each eqn is one line: a template (`np.add(a, b)`) from the backend's `TABLES` where the
primitive has one, else a call of its kernel (the primitive's eager impl) with params bound
once at build time. Compiles run once per jaxpr, through `backend.compile_jaxpr`.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from jaxlite._src import core
from jaxlite._src import dtypes
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import passes
from jaxlite._src.config import config
from jaxlite._src.core import Literal

# The NumPy backend's lowering tables; the root every other backend's tables derive from.
# Primitive modules register into them (see lax/families.py's helpers).
TABLES = backend_lib.LoweringTables()

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


def _source_context(jaxpr, consts):
  """Names for vars, the generated code's globals (constants bound), and `atom`, which names a
  var or binds a literal as a global of its dtype."""
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
  return namer, glob, atom, counter


def jaxpr_to_source(jaxpr: core.Jaxpr, consts: list, fn_name: str = "_jaxpr_fn",
                    tables: backend_lib.LoweringTables = TABLES):
  """(source, globals) of a Python function computing `jaxpr`'s outputs from its inputs."""
  namer, glob, atom, counter = _source_context(jaxpr, consts)

  args = [namer(v) for v in jaxpr.invars]
  lines = [f"def {fn_name}({', '.join(args)}):"]
  last_use = passes.last_uses(jaxpr.eqns, jaxpr.outvars)
  lines += _eqn_lines(jaxpr.eqns, 0, last_use, namer, atom, glob, counter, "  ", tables)
  rets = [atom(v) for v in jaxpr.outvars]
  lines.append(f"  return {_tuple_source(rets)}")
  return "\n".join(_quiet(lines, jaxpr.eqns, tables)), glob


def _eqn_lines(eqns, first, last_use, namer, atom, glob, counter, indent, tables) -> list:
  """One source line per eqn (eqn k has index first + k in `last_use`), with `out=` reuse of
  dying buffers that an earlier eqn of `eqns` made fresh."""
  lines = []
  owned = set()  # vars holding a fresh ufunc result that no one else references
  for i, eqn in enumerate(eqns, first):
    ins = [atom(v) for v in eqn.invars]
    outs = [namer(v) for v in eqn.outvars]
    line = _eqn_line(eqn, ins, outs, glob, counter, tables)
    if eqn.primitive in tables.ufuncs and eqn.outvars[0].aval.ndim:
      donor = _dying_owned_input(eqn, i, owned, last_use)
      if donor is not None and line.endswith(")"):
        line = f"{line[:-1]}, out={namer(donor)})"
      owned.add(eqn.outvars[0])
    elif eqn.primitive in tables.fresh_outputs:
      owned.add(eqn.outvars[0])
    else:
      # Other ops may return views of (or the very object of) their inputs: never reuse those.
      owned.difference_update(eqn.invars)
    lines.append(indent + line)
  return lines


def _tuple_source(names) -> str:
  return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def _quiet(lines, eqns, tables) -> list:
  """The function's body under np.errstate(all='ignore') when an eqn may warn."""
  if not any(e.primitive in tables.quiet for e in eqns):
    return lines
  return [lines[0], "  with np.errstate(all='ignore'):"] + ["  " + ln for ln in lines[1:]]


def _dying_owned_input(eqn, i, owned, last_use):
  """An input buffer the ufunc may overwrite: fresh, same type as the output, dead after it."""
  out = eqn.outvars[0].aval
  for v in eqn.invars:
    if type(v) is not Literal and v in owned and last_use.get(v) == i \
        and v.aval.shape == out.shape and v.aval.dtype == out.dtype:
      owned.discard(v)
      return v
  return None


def _eqn_line(eqn, ins, outs, glob, counter, tables) -> str:
  prim = eqn.primitive
  eqn_rule = tables.eqn_templates.get(prim)
  template = eqn_rule(eqn) if eqn_rule is not None else None
  if template is None:
    template_rule = tables.templates.get(prim)
    template = template_rule(**eqn.params) if template_rule is not None else None
  if template is not None:
    expr = template.format(*ins)
  else:
    fname = f"_{prim.name.replace('-', '_')}{next(counter)}"
    kernel = tables.kernel(prim)
    glob[fname] = functools.partial(kernel, **eqn.params) if eqn.params else kernel
    expr = f"{fname}({', '.join(ins)})"
  if prim.multiple_results:
    if not outs:
      return expr
    return f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {expr}"
  return f"{outs[0]} = {expr}"


# --- scan loops ----------------------------------------------------------------------------------

def _split_invariant(jaxpr, invariant_vars) -> tuple[list, list]:
  """(eqns computable from `invariant_vars` and literals alone, the others), in order."""
  known, hoisted, loop = set(invariant_vars), [], []
  for eqn in jaxpr.eqns:
    pure = not eqn.effects and eqn.primitive not in passes.effectful_primitives
    if pure and all(type(v) is Literal or v in known for v in eqn.invars):
      hoisted.append(eqn)
      known.update(eqn.outvars)
    else:
      loop.append(eqn)
  return hoisted, loop


def scan_to_source(jaxpr, consts, num_consts, num_carry, reverse, fn_name="_scan_fn",
                   tables: backend_lib.LoweringTables = TABLES):
  """(source, globals) of `fn(*consts, *carry, *xs, *ys, length) -> carry`: the whole scan as
  one Python loop, body eqns inlined, loop-invariant eqns hoisted above it, ys written in
  place into the preallocated `ys` buffers."""
  namer, glob, atom, counter = _source_context(jaxpr, consts)

  const_in = jaxpr.invars[:num_consts]
  carry_in = jaxpr.invars[num_consts:num_consts + num_carry]
  x_in = jaxpr.invars[num_consts + num_carry:]
  carry_out, y_out = jaxpr.outvars[:num_carry], jaxpr.outvars[num_carry:]
  hoisted, loop = _split_invariant(jaxpr, list(jaxpr.constvars) + list(const_in))
  xs = [f"_xs{k}" for k in range(len(x_in))]
  ys = [f"_ys{k}" for k in range(len(y_out))]
  args = [namer(v) for v in const_in + carry_in] + xs + ys + ["_length"]
  lines = [f"def {fn_name}({', '.join(args)}):"]
  last_use = passes.last_uses(hoisted + loop, jaxpr.outvars)
  lines += _eqn_lines(hoisted, 0, last_use, namer, atom, glob, counter, "  ", tables)
  steps = "range(_length - 1, -1, -1)" if reverse else "range(_length)"
  lines.append(f"  for _i in {steps}:")
  body = [f"    {namer(v)} = {x}[_i]" for v, x in zip(x_in, xs) if v in last_use]
  body += _eqn_lines(loop, len(hoisted), last_use, namer, atom, glob, counter, "    ",
                     tables)
  body += [f"    {y}[_i] = {atom(v)}" for y, v in zip(ys, y_out)]
  carry = [namer(v) for v in carry_in]
  if carry:
    body.append(f"    {', '.join(carry)}, = {_tuple_source([atom(v) for v in carry_out])}")
  lines += body or ["    pass"]
  lines.append(f"  return {_tuple_source(carry)}")
  return "\n".join(_quiet(lines, jaxpr.eqns, tables)), glob


# --- the backend -----------------------------------------------------------------------------

def _exec_source(src: str, glob: dict, name: str):
  exec(compile(src, f"<jaxlite tier0 {name}>", "exec"), glob)
  fn = glob[name]
  fn.__jaxlite_source__ = src
  return fn


class NumpyBackend(backend_lib.Backend):
  """Host NumPy: buffers are np.ndarrays; a jaxpr compiles to generated Python source.

  A backend that differs only in some kernels or templates subclasses this one with
  `tables = TABLES.derive(...)`: the code generator reads every rule from `self.tables`."""
  name = "numpy"
  platform = "cpu"
  tables = TABLES

  def compile(self, closed: core.ClosedJaxpr):
    jaxpr, consts = passes.optimize(closed)
    name = f"_jaxpr_fn{next(_fn_counter)}"
    src, glob = jaxpr_to_source(jaxpr, consts, name, self.tables)
    return _exec_source(src, glob, name)

  def compile_scan(self, closed, num_consts, num_carry, reverse):
    """The whole scan as one generated loop (body inlined, invariants hoisted)."""
    jaxpr, consts = passes.optimize(closed)
    name = f"_scan_fn{next(_fn_counter)}"
    src, glob = scan_to_source(jaxpr, consts, num_consts, num_carry, reverse, name, self.tables)
    return _exec_source(src, glob, name)

  def to_device(self, host_value, device=None):
    return np.asarray(host_value)

  def to_host(self, buffer):
    return np.asarray(buffer)


NUMPY = backend_lib.register_backend(NumpyBackend(), default=True)


def select_tier(tier: int) -> None:
  """`jax_jaxlite_tier` (env JAXLITE_TIER): 1, the default, installs tier 1 (fused, tiled,
  threaded kernels; loaded only then), 0 this backend. Any other installed backend is left alone."""
  current = backend_lib.get_backend()
  if tier == 1 and current is NUMPY:
    from jaxlite._src.compiler import tier1_backend
    backend_lib.install_backend(tier1_backend.TIER1)
  elif tier == 0 and current.name == "numpy-tiled":
    backend_lib.install_backend(NUMPY)


config._add_listener("jax_jaxlite_tier", select_tier)
if config.jax_jaxlite_tier:
  select_tier(config.jax_jaxlite_tier)


def compile_jaxpr(closed: core.ClosedJaxpr):
  """The NumPy backend's executable of `closed`, whichever backend is installed."""
  return backend_lib.compile_jaxpr(closed, NUMPY)


def compile_scan(closed: core.ClosedJaxpr, num_consts: int, num_carry: int, reverse: bool):
  """The NumPy backend's fused scan loop for a body jaxpr (cached on the jaxpr)."""
  return backend_lib.compile_scan(closed, num_consts, num_carry, reverse, NUMPY)
