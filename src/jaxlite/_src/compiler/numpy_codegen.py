"""The NumPy backend (tier 0): a jaxpr becomes the source of one Python function of NumPy calls.

Each eqn is one line: a template (`np.add(a, b)`) from the backend's `TABLES` where the
primitive has one, else a call of its kernel (the primitive's eager impl) with params bound
once at build time. Compiles run once per jaxpr, through `backend.compile_jaxpr`.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.base import dtypes
from jaxlite._src.base import fp_quiet
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import passes
from jaxlite._src.base.config import config
from jaxlite._src.base.core import Literal

# The NumPy backend's lowering tables; the root every other backend's tables derive from.
# Primitive modules register into them (see lax/families.py's helpers).
TABLES = backend_lib.LoweringTables()

# Every executable is compiled under the same function and file names (each has its own globals,
# so they never clash): CPython 3.11 keeps ~100 bytes of every distinct name a `compile` sees for
# the life of the process, so a counter in the name grew the heap with each compile (issue 17).
JAXPR_FN = "_jaxpr_fn"
SCAN_FN = "_scan_fn"
WHILE_FN = "_while_fn"


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
  glob = {"np": np, "_fp_quiet": fp_quiet.quiet, "_fp_loud": fp_quiet.loud}
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
                    tables: backend_lib.LoweringTables = TABLES, donated: tuple = ()):
  """(source, globals) of a Python function computing `jaxpr`'s outputs from its inputs;
  the inputs at indices `donated` are owned (a ufunc at their last use may write into them)."""
  namer, glob, atom, counter = _source_context(jaxpr, consts)

  args = [namer(v) for v in jaxpr.invars]
  lines = [f"def {fn_name}({', '.join(args)}):"]
  last_use = passes.last_uses(jaxpr.eqns, jaxpr.outvars)
  lines += _eqn_lines(jaxpr.eqns, 0, last_use, namer, atom, glob, counter, "  ", tables,
                      {jaxpr.invars[i] for i in donated},
                      # the inputs, and the constants: globals of the code (a `del` of one
                      # would make its name a local, unbound at its first read)
                      free_dead=set(jaxpr.invars) | set(jaxpr.constvars))
  rets = [atom(v) for v in jaxpr.outvars]
  lines.append(f"  return {_tuple_source(rets)}")
  return "\n".join(_quiet(lines, jaxpr.eqns, tables)), glob


def _eqn_lines(eqns, first, last_use, namer, atom, glob, counter, indent, tables,
               owned=None, free_dead=None) -> list:
  """One source line per eqn (eqn k has index first + k in `last_use`), with `out=` reuse of
  dying buffers that an earlier eqn of `eqns` made fresh (or that `owned` names: donated
  inputs). With `free_dead` (the vars never to free: the function's inputs, whose caller
  holds them anyway), big values are `del`eted after their last use, so that a chain's dead
  intermediates do not all stay alive until it returns (straight-line code only: never in a
  loop body, whose later iterations read the hoisted values again)."""
  lines = []
  # vars holding a fresh ufunc result (or a donated input) that no one else references
  owned = set() if owned is None else set(owned)
  # Donated 0-d inputs are 0-d arrays a ufunc may write into (other 0-d results are NumPy
  # scalars, which have no buffer to take a result).
  scalar_donors = {v for v in owned if not v.aval.ndim}
  pinned = {}  # owned var -> index of the last eqn that may read a view of it
  roots = {}   # var made by a view op -> the owned vars it may be a view of
  for i, eqn in enumerate(eqns, first):
    ins = [atom(v) for v in eqn.invars]
    outs = [namer(v) for v in eqn.outvars]
    line = _eqn_line(eqn, ins, outs, glob, counter, tables)
    inplace = tables.inplace.get(eqn.primitive) if owned else None
    if inplace is not None and _dying_operand(eqn, i, owned, pinned, last_use):
      # A scatter / dynamic_update_slice into a buffer that dies here: no copy of it.
      fname = f"_{eqn.primitive.name.replace('-', '_')}_inplace{next(counter)}"
      glob[fname] = functools.partial(inplace, **eqn.params) if eqn.params else inplace
      line = f"{outs[0]} = {fname}({', '.join(ins)})"
      owned.discard(eqn.invars[0])
      owned.add(eqn.outvars[0])
    elif eqn.primitive in tables.ufuncs and (eqn.outvars[0].aval.ndim or scalar_donors and any(
        v in scalar_donors for v in eqn.invars)):
      free = owned if not pinned else {v for v in owned if pinned.get(v, -1) < i}
      donor = _dying_owned_input(eqn, i, free, last_use)
      if donor is not None and line.endswith(")"):
        line = f"{line[:-1]}, out={namer(donor)})"
        owned.discard(donor)
      if eqn.outvars[0].aval.ndim or donor is not None:
        owned.add(eqn.outvars[0])
        if donor is not None and not eqn.outvars[0].aval.ndim:
          scalar_donors.add(eqn.outvars[0])
    elif eqn.primitive in tables.fresh_outputs:
      owned.add(eqn.outvars[0])
    elif eqn.primitive in _VIEW_OPS and all(
        type(v) is Literal or v in owned or v in roots for v in eqn.invars):
      # A reshape/broadcast of an owned buffer may be a view of it: the buffer stays owned but
      # takes no result while the view can still be read (a bias broadcast in the forward pass
      # does not keep the donated bias from taking its update).
      out = eqn.outvars[0]
      roots[out] = set().union(*({v} if v in owned else roots[v] for v in eqn.invars
                                 if type(v) is not Literal))
      for r in roots[out]:
        pinned[r] = max(pinned.get(r, -1), last_use.get(out, i))
    else:
      # Other ops may return views of (or the very object of) their inputs: never reuse those.
      owned.difference_update(eqn.invars)
      for v in eqn.invars:
        owned.difference_update(roots.get(v, ()))
    lines.append(indent + line)
    if free_dead is not None:
      dead = [v for v in dict.fromkeys((*eqn.invars, *eqn.outvars)) if type(v) is not Literal
              and last_use.get(v, i) == i and v not in free_dead and _nbytes(v) >= _FREE_BYTES]
      if dead:
        free_dead.update(dead)
        lines.append(f"{indent}del {', '.join(namer(v) for v in dead)}")
  return lines


# Values smaller than this are not worth a `del` line on every call.
_FREE_BYTES = 1 << 18


def _nbytes(v) -> int:
  aval = v.aval
  dtype = getattr(aval, "dtype", None)
  if not isinstance(dtype, np.dtype) or not hasattr(aval, "shape"):
    return 0
  return int(np.prod(aval.shape, dtype=np.int64)) * dtype.itemsize


# Ops whose result may be a view of their operand and nothing else (see `_eqn_lines`).
_VIEW_OPS = kinds.views  # broadcast_in_dim, reshape, squeeze (primitive_kinds)


def _tuple_source(names) -> str:
  return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def _quiet(lines, eqns, tables) -> list:
  """The function's body with NumPy's floating-point warnings off when an eqn may warn.

  fp_quiet's bracket rather than `with np.errstate(...)`: the same error state at a fifth of
  the cost, paid on every call (a while loop's body and cond are called once per iteration)."""
  if not any(e.primitive in tables.quiet for e in eqns):
    return lines
  return [lines[0], "  _fp_token = _fp_quiet()", "  try:"] + ["  " + ln for ln in lines[1:]] \
      + ["  finally:", "    _fp_loud(_fp_token)"]


def _dying_operand(eqn, i, owned, pinned, last_use) -> bool:
  """Whether eqn `i` may write into its first operand: an owned array of the result's type,
  read by nothing after it (no live view either) and by no other operand of the eqn."""
  v, out = eqn.invars[0], eqn.outvars[0]
  return (type(v) is not Literal and v in owned and last_use.get(v) == i
          and pinned.get(v, -1) < i and v.aval.ndim > 0 and v.aval.shape == out.aval.shape
          and v.aval.dtype == out.aval.dtype and v not in eqn.invars[1:])


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
  hoisted, loop = passes.split_invariant(jaxpr.eqns, list(jaxpr.constvars) + list(const_in))
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


# --- while loops ---------------------------------------------------------------------------------

def while_to_source(cond, cond_consts, body, body_consts, cond_nconsts, body_nconsts,
                    fn_name=WHILE_FN, tables: backend_lib.LoweringTables = TABLES):
  """(source, globals) of `fn(*cond_consts, *body_consts, *carry) -> carry`: the whole while
  loop as one Python loop, the cond's and the body's eqns inlined, each one's loop-invariant eqns
  hoisted above it. `cond` and `body` are optimized jaxprs sharing no var; the predicate is 0-d
  (a batched one loops in `backend.while_python`). The lines are those `jaxpr_to_source` makes
  of each, so every iteration computes what the cond's and the body's functions would."""
  namer, glob, atom, counter = _source_context(body, body_consts)
  for v, c in zip(cond.constvars, cond_consts):
    glob[namer(v)] = _const_value(c)
  carry = body.invars[body_nconsts:]
  for cv, bv in zip(cond.invars[cond_nconsts:], carry):
    namer.names[cv] = namer(bv)  # the cond reads the carry the body writes
  c_hoisted, c_loop = passes.split_invariant(
      cond.eqns, list(cond.constvars) + list(cond.invars[:cond_nconsts]))
  b_hoisted, b_loop = passes.split_invariant(
      body.eqns, list(body.constvars) + list(body.invars[:body_nconsts]))
  pred = cond.outvars[0]
  # One index space over every eqn, in the order the lines run, for the buffer reuse: a hoisted
  # value read in the loop dies only there, and the loop's lines own only what an iteration
  # makes afresh (never the carry, which the next iteration reads).
  last_use = passes.last_uses(c_hoisted + b_hoisted + c_loop + b_loop, [pred, *body.outvars])
  args = [namer(v) for v in (*cond.invars[:cond_nconsts], *body.invars[:body_nconsts], *carry)]
  lines = [f"def {fn_name}({', '.join(args)}):"]
  first = 0
  for eqns, indent in ((c_hoisted, "  "), (b_hoisted, "  "), (c_loop, "    "), (b_loop, "    ")):
    if eqns is c_loop:
      lines.append("  while True:")
    lines += _eqn_lines(eqns, first, last_use, namer, atom, glob, counter, indent, tables)
    first += len(eqns)
    if eqns is c_loop:
      lines += [f"    if not {atom(pred)}:", "      break"]
  names = [namer(v) for v in carry]
  if names:
    lines.append(f"    {', '.join(names)}, = {_tuple_source([atom(v) for v in body.outvars])}")
  lines.append(f"  return {_tuple_source(names)}")
  return "\n".join(_quiet(lines, cond.eqns + body.eqns, tables)), glob


def _shares_vars(a: core.Jaxpr, b: core.Jaxpr) -> bool:
  def own(j):
    return {*j.constvars, *j.invars, *(v for e in j.eqns for v in e.outvars)}
  return not own(a).isdisjoint(own(b))


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

  def compile(self, closed: core.ClosedJaxpr, donated: tuple = ()):
    jaxpr, consts = passes.optimize(closed)
    name = JAXPR_FN
    src, glob = jaxpr_to_source(jaxpr, consts, name, self.tables, donated)
    return _exec_source(src, glob, name)

  def compile_donating(self, closed, donated):
    # A subclass with its own code generator (tier 1) reuses no donated buffer until it says
    # how: it gets its plain executable.
    if type(self).compile is not NumpyBackend.compile:
      return super().compile_donating(closed, donated)
    return self.compile(closed, donated)

  def compile_scan(self, closed, num_consts, num_carry, reverse):
    """The whole scan as one generated loop (body inlined, invariants hoisted)."""
    jaxpr, consts = passes.optimize(closed)
    name = SCAN_FN
    src, glob = scan_to_source(jaxpr, consts, num_consts, num_carry, reverse, name, self.tables)
    return _exec_source(src, glob, name)

  def compiles_to_tier0(self, jaxpr: core.Jaxpr) -> bool:
    """Whether `compile` makes tier 0's code (`jaxpr_to_source` over `self.tables`) of the
    optimized `jaxpr`: a subclass with a code generator of its own answers for itself."""
    return type(self).compile is NumpyBackend.compile

  def compile_while(self, cond, body, cond_nconsts, body_nconsts):
    """The whole loop as one generated function (`while_to_source`) where the cond and the body
    each compile to tier 0's code here and the predicate is 0-d; else None (Python's loop over
    the two compiled functions, `backend.while_python`)."""
    if cond.out_avals[0].shape:
      return None
    cj, cconsts = passes.optimize(cond)
    bj, bconsts = passes.optimize(body)
    if not (self.compiles_to_tier0(cj) and self.compiles_to_tier0(bj)) or _shares_vars(cj, bj):
      return None
    name = WHILE_FN
    src, glob = while_to_source(cj, cconsts, bj, bconsts, cond_nconsts, body_nconsts, name,
                                self.tables)
    return _exec_source(src, glob, name)

  def to_device(self, host_value, device=None):
    return np.asarray(host_value)

  def to_host(self, buffer):
    return np.asarray(buffer)


NUMPY = backend_lib.register_backend(NumpyBackend(), default=True)


def compile_jaxpr(closed: core.ClosedJaxpr):
  """The NumPy backend's executable of `closed`, whichever backend is installed."""
  return backend_lib.compile_jaxpr(closed, NUMPY)


def compile_scan(closed: core.ClosedJaxpr, num_consts: int, num_carry: int, reverse: bool):
  """The NumPy backend's fused scan loop for a body jaxpr (cached on the jaxpr)."""
  return backend_lib.compile_scan(closed, num_consts, num_carry, reverse, NUMPY)


# The tier the config names (tier 1 by default, loaded lazily): after NUMPY exists.
from jaxlite._src.compiler import tiers  # noqa: E402,F401
