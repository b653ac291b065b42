"""Tier 1: the NumPy backend with fused kernels run over cache-sized tiles on a thread pool.

`fusion.plan` groups the jaxpr's eqns; each big kernel becomes a generated tile function that
`tiled_executor.TiledKernel` runs over row tiles, the rest are tier 0's lines unchanged.
It is the default backend; `jax.config.update("jax_jaxlite_tier", 0)` or JAXLITE_TIER=0 selects
tier 0.
"""
from __future__ import annotations

from jaxlite._src.base import core
from jaxlite._src.rng import prng
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.compiler import backend as backend_lib
from jaxlite._src.compiler import blas
from jaxlite._src.compiler import fusion
from jaxlite._src.compiler import numpy_codegen as tier0
from jaxlite._src.compiler import passes
from jaxlite._src.compiler import scan_hoist
from jaxlite._src.compiler import tier_sizes
from jaxlite._src.compiler import tiled_executor

_WORKERS = tiled_executor.worker_count()


def _dims(items) -> str:
  items = list(items)
  return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _broadcast_expr(eqn, x: str, mode: str) -> tuple[str, bool]:
  """(expression, lazy) of broadcast_in_dim for a tile of `_n` rows. Lazy: only the reshape,
  leaving size-1 axes for NumPy's broadcasting in the ops that read it (np.broadcast_to costs
  more than the tile's arithmetic); `_materialize` expands it where the real shape matters."""
  operand, out = eqn.invars[0].aval, eqn.outvars[0].aval
  target = ["_n"] + [str(s) for s in out.shape[1:]]
  expanded = ["1"] * len(out.shape)
  for i, d in enumerate(eqn.params["broadcast_dimensions"]):
    expanded[d] = str(operand.shape[i])
  if mode == fusion.TILE:
    expanded[0] = "_n"
  reshape = f"{x}.reshape({_dims(expanded)})" if mode == fusion.TILE else \
      f"np.reshape({x}, {_dims(expanded)})"
  return reshape, expanded != target


def _materialize(name: str, aval) -> str:
  return f"np.broadcast_to({name}, {_dims(['_n'] + [str(s) for s in aval.shape[1:]])})"


def kernel_source(k: fusion.Kernel, index: int, namer, atom, glob, counter, last_use,
                  tables, reuse=None) -> tuple[str, list]:
  """(source of `_k{index}_tile(_lo, _n, *operands, *outputs)`, operand names in call order):
  the tile is rows _lo:_lo+_n of the kernel. `reuse[j]`: the operand output j's buffer is (or
  -1), see `_output_donors`.

  Intermediates are written into dying intermediates' buffers (tier 0's `out=`) and, before an
  output is made, into that output's rows (so a chain x -> a -> b -> out allocates nothing per
  tile); an output buffer whose occupant would be read after the output is written is not lent
  (checked after generating, then generated again without that loan)."""
  enabled = set(range(len(k.outputs)))
  while True:
    src, call_args, clashes = _kernel_source(k, index, namer, atom, glob, counter, last_use,
                                             tables, reuse, enabled)
    if not clashes:
      return src, call_args
    enabled -= clashes


def _kernel_source(k, index, namer, atom, glob, counter, last_use, tables, reuse, enabled):
  params, call_args = [], []
  for v, mode in k.inputs:
    call_args.append(namer(v))
    params.append(namer(v) if mode == fusion.TILE else f"{namer(v)}_w")
  out_names = {v: f"_o{j}" for j, v in enumerate(k.outputs)}
  lines = [f"def _k{index}_tile(_lo, _n, {', '.join(params + list(out_names.values()))}):",
           f"  # kernel {index}: {k.describe()}"]
  # Output buffers lent to intermediates: slot j is output j's rows, usable from eqn
  # `free_from[j]` (after the last read of the operand whose buffer it is, if any) until the
  # eqn making output j (`made_at[j]`), which must find every earlier occupant dead.
  made_at = {j: k.first + next(p for p, e in enumerate(k.eqns) if e.outvars[0] is o)
             for j, o in enumerate(k.outputs)}
  free_from = {j: k.first for j in enabled}
  for j, r in enumerate(reuse or ()):
    if r >= 0 and j in enabled:
      free_from[j] = _last_read(k, k.inputs[r][0])
  # var -> slot whose rows hold it (or that it may view); slot -> last read of any of those
  slot_of, busy_until = {}, {}

  def occupy(v, j):
    slot_of[v] = j
    busy_until[j] = max(busy_until.get(j, -1), last_use.get(v, -1))
  owned = set()
  lazy = set()  # values still missing broadcast axes (size 1 where the aval has more)
  for i, (eqn, roles) in enumerate(zip(k.eqns, k.roles), k.first):
    prim = eqn.primitive
    elementwise = prim in fusion.ELEMENTWISE
    ins = []
    for v, mode in zip(eqn.invars, roles):
      if mode == fusion.LIT:
        ins.append(atom(v))
      elif mode == fusion.WHOLE:
        ins.append(f"{namer(v)}_w")
      elif v in lazy and not elementwise:  # reductions and reshapes need the real shape
        ins.append(_materialize(namer(v), v.aval))
      else:
        ins.append(namer(v))
    out = eqn.outvars[0]
    if prim is kinds.roles.broadcast_in_dim:
      expr, is_lazy = _broadcast_expr(eqn, ins[0], roles[0])
      line = f"{namer(out)} = {expr}"
    elif prim in kinds.row_sources:  # a source: the tile's rows of the draw, made in place
      glob["_bits_rows"] = prng.bits_rows
      p = eqn.params
      dest = f", out={out_names[out]}" if out in out_names else ""
      line = (f"{namer(out)} = _bits_rows({ins[0]}, {p['bit_width']}, {tuple(p['shape'])!r}, "
              f"_lo, _n{dest})")
      is_lazy = False
    elif prim is kinds.roles.reshape:
      rows = _dims(["_n"] + [str(s) for s in out.aval.shape[1:]])
      line = f"{namer(out)} = np.reshape({ins[0]}, {rows})"
      is_lazy = False
    else:
      line = tier0._eqn_line(eqn, ins, [namer(out)], glob, counter, tables)
      # An elementwise result has its full shape once any operand has.
      is_lazy = elementwise and not any(
          mode == fusion.TILE and v not in lazy and v.aval.shape == out.aval.shape
          for v, mode in zip(eqn.invars, roles))
      if not elementwise and prim is not kinds.roles.squeeze:
        is_lazy = False
    if is_lazy or (prim is kinds.roles.squeeze and eqn.invars[0] in lazy):
      lazy.add(out)
    written = False
    if prim in kinds.row_sources:
      written = out in out_names
      if not written:
        owned.add(out)  # a fresh buffer: later ops of the tile may write into it
    elif prim in tables.ufuncs and prim not in fusion.VIEWS and line.endswith(")"):
      if out in out_names:  # the kernel's output: straight into the caller's buffer
        line, written = f"{line[:-1]}, out={out_names[out]})", True
      elif out not in lazy:  # a dying intermediate of this tile may take the result
        donor = tier0._dying_owned_input(eqn, i, owned, last_use)
        if donor is not None:
          line = f"{line[:-1]}, out={namer(donor)})"
          if donor in slot_of:
            occupy(out, slot_of[donor])
        else:
          j = _free_slot(k, out, i, enabled, free_from, made_at, busy_until)
          if j is not None:
            line = f"{line[:-1]}, out=_o{j})"
            occupy(out, j)
          else:
            dead = _dead_owned(k, out, i, owned, last_use, slot_of, lazy)
            if dead is not None:
              line = f"{line[:-1]}, out={namer(dead)})"
        owned.add(out)
    elif eqn.primitive in tables.fresh_outputs and out not in lazy:
      owned.add(out)
    else:
      owned.difference_update(eqn.invars)
      for v in eqn.invars:  # the result may be a view of a lent buffer: it occupies it too
        if v in slot_of and out not in out_names:
          occupy(out, slot_of[v])
    lines.append("  " + line)
    if out in out_names and not written:
      lines.append(f"  {out_names[out]}[...] = {namer(out)}")
  clashes = {j for j, last in busy_until.items() if last > made_at[j]}
  return "\n".join(lines), call_args, clashes


def _dead_owned(k, out, i, owned, last_use, slot_of, lazy):
  """A buffer of this tile already dead at eqn i (made by an earlier ufunc of the kernel, read
  last before i, not viewed, not in an output's rows) that `out` may be written into.
  Without it each such result was a fresh array: tier 0 frees the dead one first (`del`) and
  its allocator hands the memory back, but a tile function frees nothing until it returns, so
  run over all rows (mode WHOLE) it held one more full-size temporary than tier 0 (10M
  tanh*exp+sin: 66-72 ms against tier 0's 25-40 ms in one process), and over tiles it
  allocated a buffer per tile where one L2-hot buffer does."""
  shape, dtype = out.aval.shape, out.aval.dtype
  for e in k.eqns[:i - k.first]:
    for v in e.outvars:
      if v in owned and v not in lazy and v not in slot_of and last_use.get(v, i) < i \
          and v.aval.shape == shape and v.aval.dtype == dtype:
        owned.discard(v)
        return v
  return None


def _last_read(k: fusion.Kernel, v) -> int:
  """Index (in the jaxpr's order) of the kernel's last eqn reading `v` or a view the kernel
  makes of it."""
  aliases, last = {v}, k.first
  for i, e in enumerate(k.eqns, k.first):
    if any(a in aliases for a in e.invars):
      last = i
      if e.primitive in fusion.VIEWS:
        aliases.update(e.outvars)
  return last


def _free_slot(k, out, i, enabled, free_from, made_at, busy_until):
  """An output slot intermediate `out` (made by eqn i) may be written into: enabled, of its
  shape and dtype, not yet written (i before made_at), free of the operand it reuses, and with
  no occupant (or view of one) read from eqn i on."""
  for j in sorted(enabled):
    o = k.outputs[j]
    if o.aval.shape == out.aval.shape and o.aval.dtype == out.aval.dtype \
        and free_from[j] <= i < made_at[j] \
        and busy_until.get(j, -1) < i:
      return j
  return None


def _tiled(k: fusion.Kernel) -> bool:
  """The cost model: a kernel runs tiled where that can win, i.e. its largest value is past the
  small-array size and it either fuses ops (intermediates stay in cache) or has threads to use.
  Otherwise its eqns are tier 0's lines."""
  return k.elements >= tiled_executor.SMALL_ELEMENTS and (_WORKERS > 1 or len(k.eqns) > 1)


def _owned_values(items, eqns, tables, donors: set, called=_tiled) -> set:
  """Values whose buffer nothing else references when they die: donated inputs, fresh results of
  tier 0's lines (a ufunc call, or a primitive flagged fresh) and of tiled kernels, none of them
  read by a tier-0 line that might return a view of it (anything but a ufunc call or a
  primitive flagged fresh)."""
  in_tiled = {id(e) for it in items if isinstance(it, fusion.Kernel) and called(it)
              for e in it.eqns}
  owned = set(donors)
  for eqn in eqns:
    if id(eqn) in in_tiled or eqn.primitive in tables.fresh_outputs or (
        eqn.primitive in tables.ufuncs and eqn.outvars[0].aval.ndim):
      owned.update(eqn.outvars)
  for eqn in eqns:  # a tile reads its operands' rows and keeps no reference to them
    if id(eqn) not in in_tiled and eqn.primitive not in tables.ufuncs \
        and eqn.primitive not in tables.fresh_outputs:
      owned.difference_update(eqn.invars)
  return owned


def _output_donors(k: fusion.Kernel, owned: set, last_use: dict, donated=frozenset()) -> list:
  """For each output of tiled kernel `k`, the index of an operand whose buffer it may be written
  into, or -1. The operand must be owned, die in this kernel, have the output's shape and dtype,
  be read by rows only, and not be read (nor any view the tile makes of it) after the eqn that
  writes the output. Tiles hold disjoint rows, so a tile reads the rows it overwrites first.
  Donated inputs (`donated`) come first: an SGD update `w - lr * g` with w donated writes into
  w's buffer, as JAX's does (the gradient's buffer dies with the kernel either way)."""
  end = k.first + len(k.eqns)
  modes = {}
  for v, mode in k.inputs:
    modes.setdefault(v, set()).add(mode)
  position = {e.outvars[0]: j for j, e in enumerate(k.eqns)}
  order = sorted(enumerate(k.inputs), key=lambda item: item[1][0] not in donated)
  taken, donors = set(), []
  for out in k.outputs:
    j_out = position[out]
    pick = -1
    if k.eqns[j_out].primitive not in fusion.VIEWS:
      for idx, (v, mode) in order:
        if (mode != fusion.TILE or modes[v] != {fusion.TILE} or v in taken or v not in owned
            or not k.first <= last_use.get(v, -1) < end or v.aval.shape != out.aval.shape
            or v.aval.dtype != out.aval.dtype):
          continue
        aliases, last_read = {v}, -1
        for j, e in enumerate(k.eqns):
          if any(a in aliases for a in e.invars):
            last_read = j
            if e.primitive in fusion.VIEWS:
              aliases.update(e.outvars)
        if last_read <= j_out:
          pick = idx
          taken.add(v)
          break
    donors.append(pick)
  return donors


def fused_source(jaxpr: core.Jaxpr, consts: list, fn_name: str, tables,
                 fuse_bits: bool = True, donated: tuple = (), called=None,
                 split_sizes: bool = False):
  """(source, globals, kernels): tile functions, then the jaxpr's function calling them.
  `kernels` lists (global name, TiledKernel arguments, fusion.Kernel) to bind once the source
  is run.
  None where no kernel is tiled: tier 0's code is then the whole program.

  Between tiled kernels the eqns are tier 0's lines, with tier 0's buffer reuse (`out=` into
  dying buffers, donated inputs `donated` included) and freeing of dead big values.
  `called(kernel)`: whether a kernel is a kernel object the code calls (default `_tiled`; the
  native tier calls small kernels too, as one tile); `split_sizes`: see fusion.plan."""
  items, eqns, last_use = fusion.plan(jaxpr, fuse_bits, split_sizes)
  if not any(isinstance(it, fusion.Kernel) and _tiled(it) for it in items):
    return None
  called = called or _tiled
  namer, glob, atom, counter = tier0._source_context(jaxpr, consts)
  args = [namer(v) for v in jaxpr.invars]
  defs, body, kernels, run, index = [], [], [], [], 0
  notes = {}  # position in `run` -> comment line naming the untiled kernel starting there
  free_dead = set(jaxpr.invars)  # never freed: the caller holds them; grows as values die
  # A donated input may take a result inside a run of tier 0 lines only if every eqn reading
  # it is in that run (the run tracks views of it; a kernel's reads are outside its view).
  donors = {jaxpr.invars[i] for i in donated}
  readers = {v: sum(v in e.invars for e in eqns) for v in donors}
  owned = _owned_values(items, eqns, tables, donors, called)

  def flush():
    # Plain eqns and untiled kernels are one run of tier 0 lines, so buffer reuse (`out=`)
    # spans them exactly as in tier 0.
    if run:
      mine = {v for v in donors if sum(v in e.invars for e in run) == readers[v]}
      lines = tier0._eqn_lines(run, index - len(run), last_use, namer, atom, glob, counter,
                               "  ", tables, mine, free_dead)
      j = 0
      for line in lines:
        if j in notes and not line.lstrip().startswith("del "):
          body.append(notes.pop(j))
        body.append(line)
        j += not line.lstrip().startswith("del ")
      run.clear()
      notes.clear()

  for item in items:
    if not isinstance(item, fusion.Kernel):
      run.append(item)
      index += 1
      continue
    k, kid = item, len(defs)
    if not called(k):
      notes[len(run)] = (f"  # kernel {kid} (untiled: {k.elements} elements < "
                         f"{tiled_executor.SMALL_ELEMENTS}): {k.describe()}")
      run.extend(k.eqns)
      defs.append(None)
    else:
      flush()
      reuse = _output_donors(k, owned, last_use, donors)
      src, call_args = kernel_source(k, kid, namer, atom, glob, counter, last_use, tables,
                                     reuse)
      rows = tiled_executor.tile_rows(k.n, k.row_bytes, _WORKERS) if _tiled(k) else k.n
      quiet = any(e.primitive in tables.quiet for e in k.eqns)
      tiles = -(-k.n // rows)
      into = [f"{namer(o)} into {call_args[r]}" for o, r in zip(k.outputs, reuse) if r >= 0]
      how = f"tiled: {tiles} tiles of {rows} rows, {min(_WORKERS, tiles)} threads" \
          if _tiled(k) else f"called: {k.elements} elements, one tile"
      body.append(f"  # kernel {kid} ({how}{'; ' if into else ''}{', '.join(into)}): "
                  f"{k.describe()}")
      outs = [namer(v) for v in k.outputs]
      call = f"_k{kid}({', '.join(call_args)})"
      body.append(f"  {', '.join(outs)}, = {call}" if outs else f"  {call}")
      defs.append(src)
      kernels.append((f"_k{kid}", f"_k{kid}_tile", k.n, rows,
                      [mode == fusion.TILE for _, mode in k.inputs],
                      [(v.aval.shape, v.aval.dtype) for v in k.outputs], quiet, reuse, k))
    index += len(k.eqns)
  flush()
  rets = [atom(v) for v in jaxpr.outvars]
  lines = [f"def {fn_name}({', '.join(args)}):"] + body + [f"  return {tier0._tuple_source(rets)}"]
  main = "\n".join(tier0._quiet(lines, eqns, tables))
  src = "\n\n".join([d for d in defs if d] + [main])
  return src, glob, kernels


class TiledBackend(tier0.NumpyBackend):
  """Tier 1 over NumPy: big fused kernels run tiled and threaded, everything else as tier 0.

  Scan loops are tier 0's generated loop with carry-free products hoisted out of it and run
  batched (`scan_hoist`)."""
  name = "numpy-tiled"
  platform = "cpu"
  # Tier 0's own tables: tier 1 overrides no lowering, and a derived layer would add a lookup
  # chain to every eqn of every compile (first-call latency).
  tables = tier0.TABLES
  # random_bits sources kernels (each tile hashes its own rows' counters); a backend with a
  # faster random_bits kernel of its own (the native tier) turns this off.
  fuse_random_bits = True
  # Kernels stay whole across value sizes (fusion.plan's split_sizes).
  split_sizes = False

  @property
  def loop_tables(self):
    """The tables of scan loops' per-step lines (scan_hoist): `tables` (the native tier's loops
    have their own float32 tanh)."""
    return self.tables

  def compile(self, closed: core.ClosedJaxpr, donated: tuple = ()):
    return self.compile_optimized(*passes.optimize(closed), donated)

  def compile_optimized(self, jaxpr: core.Jaxpr, consts: list, donated: tuple = ()):
    """`compile` of a jaxpr `passes.optimize` already ran on (tiers.PendingTier1 hands over
    the program it looked at). A program with a product big enough for BLAS threads chooses
    their count per call (blas.adapt)."""
    return blas.adapt(self._compile_program(jaxpr, consts, donated), jaxpr)

  def _compile_program(self, jaxpr: core.Jaxpr, consts: list, donated: tuple):
    name = tier0.JAXPR_FN  # one name for all (see numpy_codegen.JAXPR_FN)
    if not tier_sizes.has_big_values(jaxpr, tiled_executor.SMALL_ELEMENTS):
      # No kernel can reach the tiled size: tier 0's code, with no fusion pass (the small-array
      # path costs first calls nothing over tier 0).
      return self._tier0(jaxpr, consts, name, donated)
    fused = fused_source(jaxpr, consts, name, self.tables, self.fuse_random_bits, donated,
                         self._called_kernel, self.split_sizes)
    if fused is None:  # nothing to tile: tier 0's code, with its buffer reuse and freeing
      return self._tier0(jaxpr, consts, name, donated)
    src, glob, kernels = fused
    exec(compile(src, f"<jaxlite {self.name} {name}>", "exec"), glob)
    for gname, tile_name, n, rows, tiled, outs, quiet, reuse, k in kernels:
      glob[gname] = self._wrap_kernel(gname, tiled_executor.TiledKernel(
          glob[tile_name], n, rows, tiled, outs, quiet, reuse), k)
    fn = glob[name]
    fn.__jaxlite_source__ = src
    fn.__jaxlite_kernels__ = [glob[g] for g, *_ in kernels]
    return fn

  def _tier0(self, jaxpr, consts, name, donated):
    """Tier 0's code for the program, donated buffers reused as there."""
    src, glob = tier0.jaxpr_to_source(jaxpr, consts, name, self.tables, donated)
    fn = tier0._exec_source(src, glob, name)
    fn.__jaxlite_kernels__ = []
    return fn

  def compiles_to_tier0(self, jaxpr) -> bool:
    # `_compile_program`'s tier-0 branch, where blas.adapt leaves the function as it is
    return not tier_sizes.has_big_values(jaxpr, tiled_executor.SMALL_ELEMENTS) \
        and not blas.threaded_products(jaxpr)

  def compile_donating(self, closed, donated):
    # Donated buffers are reused by tier 0's lines (between kernels, or the whole program when
    # nothing is tiled); fused kernels write into fresh buffers (the donated ones are still
    # deleted).
    return self.compile(closed, donated)

  def compile_scan(self, closed, num_consts, num_carry, reverse):
    return scan_hoist.compile_scan(self, closed, num_consts, num_carry, reverse)

  def _called_kernel(self, k: fusion.Kernel) -> bool:
    """Whether kernel `k` runs as a kernel object the generated code calls (else as tier 0's
    lines inline): tier 1 calls the kernels worth tiling."""
    return _tiled(k)

  def _wrap_kernel(self, gname: str, kernel, k: fusion.Kernel):
    """The callable the generated code calls for TiledKernel `kernel` of fusion kernel `k`; a
    subclass (the native tier) wraps kernels here."""
    return kernel


TIER1 = backend_lib.register_backend(TiledBackend())
