"""The partitioner: a jaxpr plus propagated specs -> one per-device program, and its executor.

`Program` runs the jaxpr on per-device blocks: each eqn's operands are first brought to the
specs its plan asks for (gather over the axes a dim leaves: `all_gather`; split over the axes a
dim gains: a slice at `axis_index`), the eqn runs on blocks with its shape params localized (or
whole, for replicated eqns), and outputs of reductions/contractions over split dims are
completed with `psum`/`pmax`/`pmin`. `execute` is the one function that decides how the
per-device program runs: through the SPMD runtime's `run_spmd` (a worker per device, the program
traced once with the mesh axes bound and compiled) where `jaxlite._src.spmd.runtime` exists, else
by `vmap` with the mesh axes as axis names over stacked blocks (the collectives' batching rules
give their semantics; one thread), jitted once per program. `call_sharded` is jit's entry.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src import core
from jaxlite._src.sharding import propagation as prop


def _prod(sizes) -> int:
  return int(math.prod(sizes))


class Program:
  """The per-device program of `closed` (a ClosedJaxpr) for inputs with `in_specs`, outputs
  brought to `out_specs` (None entries: the propagated spec)."""

  def __init__(self, closed, in_specs, out_specs, mesh):
    self.closed, self.mesh = closed, mesh
    self.mesh_shape = dict(mesh.shape)
    self.in_specs = tuple(in_specs)
    jaxpr = closed.jaxpr
    self.env, self.plans = prop.propagate(jaxpr, in_specs, self.mesh_shape)
    self.out_specs = tuple(
        self._read_spec(v) if s is None else s for v, s in zip(jaxpr.outvars, out_specs))
    self._executable = self._spmd_executable = None

  def _read_spec(self, v):
    return self.env[v] if isinstance(v, core.Var) else prop.replicated(len(v.aval.shape))

  # -- the per-device program -------------------------------------------------------------------
  def __call__(self, *blocks):
    """Runs on one device's blocks (inside a context where the mesh axes are bound)."""
    jaxpr = self.closed.jaxpr
    outs = self._run(jaxpr, self.closed.consts, self.env, self.plans, blocks)
    return [self.reshard(o, self._read_spec(v), s, v.aval.shape)
            for o, v, s in zip(outs, jaxpr.outvars, self.out_specs)]

  def _run(self, jaxpr, consts, env, plans, args):
    vals = {}
    for v, c in zip(jaxpr.constvars, consts):
      vals[v] = c
    for v, a in zip(jaxpr.invars, args):
      vals[v] = a

    def read(a):
      return vals[a] if isinstance(a, core.Var) else a.val

    def spec(a):
      return env[a] if isinstance(a, core.Var) else prop.replicated(len(a.aval.shape))

    for eqn, plan in zip(jaxpr.eqns, plans):
      ins = [self.reshard(read(a), spec(a), s, a.aval.shape)
             for a, s in zip(eqn.invars, plan.in_specs)]
      if plan.inner is not None:
        closed, inner_env, inner_plans = plan.inner
        outs = self._run(closed.jaxpr, closed.consts, inner_env, inner_plans, ins)
      elif eqn.primitive is prop.sharding_constraint_p:
        outs = ins  # the blocks already have the constrained layout
      else:
        params = self._local_params(eqn, plan) if plan.local else eqn.params
        out = eqn.primitive.bind(*ins, **params)
        outs = list(out) if eqn.primitive.multiple_results else [out]
      for i, (v, o) in enumerate(zip(eqn.outvars, outs)):
        if plan.reduce[i] is not None:
          o = self._complete(o, *plan.reduce[i])
        vals[v] = self.reshard(o, plan.out_specs[i], env[v], v.aval.shape)
    return [read(v) for v in jaxpr.outvars]

  def _local_params(self, eqn, plan):
    params = dict(eqn.params)
    for k in ("sharding", "out_sharding"):
      if k in params and eqn.primitive.name != "sharding_constraint":
        params[k] = None
    name = eqn.primitive.name
    if name == "broadcast_in_dim":
      params["shape"] = self.local_shape(params["shape"], plan.out_specs[0])
    elif name == "reshape":
      params["new_sizes"] = self.local_shape(params["new_sizes"], plan.out_specs[0])
    return params

  def local_shape(self, shape, spec):
    return tuple(n // _prod(self.mesh_shape[a] for a in entry) for n, entry in zip(shape, spec))

  def _complete(self, x, collective, axes):
    from jaxlite._src.lax import parallel
    prim = {"psum": parallel.psum_p, "pmax": parallel.pmax_p, "pmin": parallel.pmin_p}[collective]
    return prim.bind(x, axes=tuple(axes), axis_index_groups=None)

  def reshard(self, x, src, dst, global_shape):
    """Block `x` of a value laid out by `src` brought to layout `dst` (dim by dim: gathered
    over the axes it leaves, then sliced at this device's index over the axes it gains)."""
    if src == dst:
      return x
    from jaxlite._src.lax import parallel
    from jaxlite._src.lax import slicing
    for d, (s, t) in enumerate(zip(src, dst)):
      if s == t:
        continue
      for a in reversed(s):  # innermost axis first: blocks are row-major over the axes
        n = self.mesh_shape[a]
        x = parallel.all_gather_p.bind(x, all_gather_dimension=d, axis_name=a,
                                       axis_index_groups=None, axis_size=n, tiled=True)
      if t:
        width = global_shape[d] // _prod(self.mesh_shape[a] for a in t)
        index = parallel.axis_index(tuple(t))
        start = index * np.int32(width)
        x = slicing.dynamic_slice_in_dim(x, start, width, axis=d)
    return x

  # -- running ----------------------------------------------------------------------------------
  def run(self, global_values):
    """Global NumPy values in, global NumPy values of the outputs out."""
    return execute(self, global_values)


# --- executors -----------------------------------------------------------------------------------

def _mapped_axes(mesh_names, spec) -> list:
  """The mesh axes a value of `spec` is split over, in mesh order."""
  used = prop.spec_axes(spec)
  return [a for a in mesh_names if a in used]


def to_blocks(value, spec, mesh_shape, mesh_names):
  """A global value as stacked blocks: leading dims for the mesh axes it is split over (mesh
  order), then one device's block (a view where NumPy can make one)."""
  shape = value.shape
  split, where = [], {}
  for d, (n, entry) in enumerate(zip(shape, spec)):
    sizes = [mesh_shape[a] for a in entry]
    for a in entry:
      where[a] = len(split)
      split.append(mesh_shape[a])
    where[("dim", d)] = len(split)
    split.append(n // _prod(sizes))
  v = value.reshape(split)
  lead = [where[a] for a in _mapped_axes(mesh_names, spec)]
  rest = [where[("dim", d)] for d in range(len(shape))]
  return v.transpose(lead + rest)


def from_blocks(blocks, spec, global_shape, mesh_shape, mesh_names):
  """The inverse of `to_blocks`."""
  mapped = _mapped_axes(mesh_names, spec)
  blocks = np.asarray(blocks)
  order, src = [], {a: i for i, a in enumerate(mapped)}
  nlead = len(mapped)
  for d, entry in enumerate(spec):
    order += [src[a] for a in entry]
    order.append(nlead + d)
  return blocks.transpose(order).reshape(global_shape)


def _typed(value, aval):
  """Raw key data back into a typed PRNG key array (an extended dtype) for tracing."""
  if hasattr(aval.dtype, "_is_extended"):
    return core.key_array_type(np.asarray(value), aval.dtype)
  return value


def execute_vmap(program, global_values):
  """Runs `program` on every device's blocks as one vmapped (and jitted) computation."""
  fn = program._executable
  mesh_names = tuple(program.mesh.axis_names)
  if fn is None:
    from jaxlite._src.jit import jit
    from jaxlite._src.vmap_api import vmap
    f = lambda *blocks: list(program(*blocks))  # noqa: E731
    for a in reversed(mesh_names):
      in_axes = [0 if a in prop.spec_axes(s) else None for s in program.in_specs]
      out_axes = [0 if a in prop.spec_axes(s) else None for s in program.out_specs]
      f = vmap(f, in_axes=in_axes, out_axes=out_axes, axis_name=a,
               axis_size=program.mesh_shape[a])
    fn = program._executable = jit(f)
  blocks = [_typed(to_blocks(v, s, program.mesh_shape, mesh_names), var.aval)
            for v, s, var in zip(global_values, program.in_specs, program.closed.jaxpr.invars)]
  outs = fn(*blocks)
  return [from_blocks(o._host_value(), s, v.aval.shape, program.mesh_shape, mesh_names)
          for o, s, v in zip(outs, program.out_specs, program.closed.jaxpr.outvars)]


def _device_index(spec, shape, mesh_shape, coords):
  """The index of the block of a value of `spec` and global `shape` held at mesh `coords`."""
  idx = []
  for n, entry in zip(shape, spec):
    if not entry:
      idx.append(slice(None))
      continue
    k = 0
    for a in entry:
      k = k * mesh_shape[a] + coords[a]
    w = n // _prod(mesh_shape[a] for a in entry)
    idx.append(slice(k * w, (k + 1) * w))
  return tuple(idx)


def execute_spmd(program, global_values):
  """Runs `program` on every device concurrently through the SPMD runtime (`run_spmd`): the
  per-device program is traced once with the mesh axes bound and compiled by the backend; each
  device reads views of the global inputs and the outputs are written back into global
  buffers (a replicated output is device 0's buffer, no copy)."""
  from jaxlite._src.compiler import backend
  from jaxlite._src.interpreters import partial_eval as pe
  from jaxlite._src.spmd import runtime
  mesh, mesh_shape = program.mesh, program.mesh_shape
  exe = program._spmd_executable
  if exe is None:
    avals = [core.ShapedArray(program.local_shape(v.aval.shape, s), v.aval.dtype,
                              v.aval.weak_type)
             for v, s in zip(program.closed.jaxpr.invars, program.in_specs)]
    with runtime.bind_axes(dict(mesh_shape)):
      closed = pe.trace_to_jaxpr(lambda *blocks: list(program(*blocks)), avals)
    exe = program._spmd_executable = backend.compile_jaxpr(closed)
  names = tuple(mesh.axis_names)
  coords = [dict(zip(names, (int(c) for c in np.unravel_index(i, mesh.devices.shape))))
            for i in range(mesh.devices.size)]
  values = [np.asarray(v) for v in global_values]
  per_device = [[v[_device_index(s, v.shape, mesh_shape, c)]
                 for v, s in zip(values, program.in_specs)] for c in coords]
  outs = runtime.run_spmd(mesh, lambda *blocks: list(exe(*blocks)), per_device)
  results = []
  for i, (s, v) in enumerate(zip(program.out_specs, program.closed.jaxpr.outvars)):
    if not prop.spec_axes(s):
      results.append(np.asarray(outs[0][i]))
      continue
    first = np.asarray(outs[0][i])
    buf = np.empty(v.aval.shape, first.dtype)
    for c, o in zip(coords, outs):
      buf[_device_index(s, v.aval.shape, mesh_shape, c)] = o[i]
    results.append(buf)
  return results


def _spmd_runtime_available() -> bool:
  import importlib.util
  try:
    return importlib.util.find_spec("jaxlite._src.spmd.runtime") is not None
  except ModuleNotFoundError:
    return False


_executor = None


def execute(program, global_values):
  """The executor: the SPMD runtime's per-device workers where it exists (JAXLITE_SHARDED_JIT
  =vmap forces the single-threaded one), else `vmap` over stacked blocks."""
  global _executor
  if _executor is None:  # decided once per process
    import os
    _executor = execute_spmd if _spmd_runtime_available() and \
        os.environ.get("JAXLITE_SHARDED_JIT") != "vmap" else execute_vmap
  return _executor(program, global_values)
