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
    self._report_inspections(jaxpr, self.env, self.plans)

  def _report_inspections(self, jaxpr, env, plans):
    """`inspect_array_sharding` callbacks inside the program get their operands' shardings
    now, at partition time (JAX calls them at compile time)."""
    for eqn, plan in zip(jaxpr.eqns, plans):
      if eqn.primitive.name == "inspect_sharding":
        (v,) = eqn.invars
        spec = env[v] if isinstance(v, core.Var) else prop.replicated(len(v.aval.shape))
        eqn.params["callback"](_out_sharding(self.mesh, spec))
      elif plan.inner is not None:
        self._report_inspections(plan.inner[0].jaxpr, plan.inner[1], plan.inner[2])

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
      elif eqn.primitive.name == "inspect_sharding":
        outs = []  # reported when the program was partitioned
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


# --- jit with shardings --------------------------------------------------------------------------

def _is_sharding_leaf(x) -> bool:
  from jaxlite._src import devices
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  return x is None or isinstance(x, (devices.Sharding, PartitionSpec))


def _resolve(s, what):
  """A jit in/out sharding leaf as a Sharding (PartitionSpecs need a mesh in context)."""
  from jaxlite._src.sharding.mesh import get_mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  if isinstance(s, PartitionSpec):
    mesh = get_mesh()
    if mesh.empty:
      raise RuntimeError(f"jit requires a non-empty mesh in context if you are passing "
                         f"`PartitionSpec`s to {what}. You can define a context mesh via "
                         "`jax.set_mesh(mesh)`. Alternatively, provide `Sharding`s to "
                         f"{what} and then the mesh context manager is not required.")
    return NamedSharding(mesh, s)
  return s


def _flat_prefix(prefix, tree_value, n, what, args_word):
  """Leaves of the sharding pytree `prefix` broadcast over the `n` leaves of `tree_value`."""
  from jaxlite._src import tree_util
  if _is_sharding_leaf(prefix):
    return [prefix] * n
  if isinstance(prefix, (tuple, list)) and isinstance(tree_value, tuple) and \
      len(prefix) != len(tree_value):
    raise ValueError(
        f"pjit {what} specification must be a tree prefix of the {args_word}. In particular, "
        f"pjit {what} must either be a Sharding, a PartitionSpec, or a tuple of length equal "
        f"to the number of positional arguments. But pjit {what} is the wrong length: got a "
        f"tuple or list of length {len(prefix)} for an args tuple of length "
        f"{len(tree_value)}.")
  leaves, tree = tree_util.tree_flatten(prefix, is_leaf=_is_sharding_leaf)
  try:
    subtrees = tree.flatten_up_to(tree_value)
  except (ValueError, TypeError) as e:
    raise ValueError(f"pjit {what} specification must be a tree prefix of the {args_word}: "
                     f"{e}") from None
  return [s for s, sub in zip(leaves, subtrees)
          for _ in range(len(tree_util.tree_leaves(sub)))]


def _has_shard_map(jaxpr) -> bool:
  return any(e.primitive.name == "shard_map" for e in jaxpr.eqns)


def _run_whole_with_shard_maps(entry, flat, out_leaves, mesh):
  """A jitted program holding shard_map equations runs whole: each shard_map runs its own
  SPMD program over its mesh (partitioning around them would nest SPMD runs). Results leave
  placed as the shard_map's out_specs say (or by out_shardings), others replicated."""
  from jaxlite._src import jit_function as jf
  from jaxlite._src.sharding.named_sharding import NamedSharding
  outs = entry.out_tree.flatten_up_to(entry.run(
      [jf.numpy_value(x) for x in list(entry.lifted) + list(flat)]))
  produced = {}
  for e in entry.closed.jaxpr.eqns:
    if e.primitive.name == "shard_map":
      m = e.params["mesh"]
      for v, spec in zip(e.outvars, e.params["out_specs"]):
        produced[v] = _out_sharding(m, prop.spec_of_sharding(NamedSharding(m, spec),
                                                             len(v.aval.shape)))
  for r, s, v in zip(outs, out_leaves, entry.closed.jaxpr.outvars):
    if type(r) is not core.array_type:
      continue
    if s is not None:
      r._device = s
    elif isinstance(v, core.Literal):
      continue
    else:
      r._device = produced.get(v) or _out_sharding(mesh, prop.replicated(len(r.shape)))
    r._aval = None  # the type follows the placement (explicit axes)
  return entry.out_tree.unflatten(outs)


def _out_sharding(mesh, spec):
  """The NamedSharding of a propagated spec: JAX drops trailing unsplit dims, except on a mesh
  with Explicit axes, where the sharding comes from the type (one entry per dim)."""
  from jaxlite._src.sharding.mesh import AxisType
  from jaxlite._src.sharding.named_sharding import NamedSharding
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  entries = [None if not e else e[0] if len(e) == 1 else tuple(e) for e in spec]
  explicit = any(t == AxisType.Explicit for t in mesh._name_to_type.values())
  while entries and entries[-1] is None and not explicit:
    entries.pop()
  return NamedSharding(mesh, PartitionSpec(*entries))


def _constraints(closed) -> list:
  """The shardings of the `sharding_constraint` eqns of a jaxpr and its sub-jaxprs."""
  out, todo = [], [closed.jaxpr]
  while todo:
    for eqn in todo.pop().eqns:
      if eqn.primitive is prop.sharding_constraint_p:
        out.append(eqn.params["sharding"])
      todo += core.jaxprs_in_params(eqn.params)
  return out


def is_multi_device(placement) -> bool:
  from jaxlite._src import devices
  return placement is not None and type(placement) is not devices.CpuDevice and \
      len(placement._device_assignment) > 1


def call_sharded(fn, args, kwargs):
  """An eager call of jit function `fn` (a PjitFunction) with sharded arguments or with
  in/out_shardings: trace, propagate, partition (cached on input and output specs), run; the
  results are Arrays laid out by their propagated (or requested) shardings. None when there is
  nothing to partition (no multi-device sharding anywhere): the caller's unsharded path runs.
  Under a transformation (grad or vmap of the jit function) the staged `jit` eqn runs whole:
  shardings act on eager calls, where the values live."""
  from jaxlite._src import array as array_lib
  from jaxlite._src import devices
  from jaxlite._src import jit_function as jf
  from jaxlite._src import tree_util
  from jaxlite._src.sharding.named_sharding import NamedSharding
  if devices.process_count() > 1:  # a repeated call over a mesh spanning processes
    from jaxlite._src.distributed import sharded_jit
    out = sharded_jit.repeat_call(fn, args, kwargs)
    if out is not None:
      return out
  if kwargs and fn._in_shardings is not None:
    raise ValueError("pjit does not support kwargs when in_shardings is specified.")
  dyn_args = args if fn._simple else fn._split_args(args, kwargs)[0]
  entry, flat = fn._get_entry(args, kwargs)
  avals = [core.get_aval(jf.as_traceable_arg(x)) for x in flat]
  in_leaves = [_resolve(s, "in_shardings") for s in
               _flat_prefix(fn._in_shardings, tuple(dyn_args), len(flat), "in_shardings",
                            "positional arguments tuple")] + [None] * len(kwargs and flat)
  in_leaves = in_leaves[:len(flat)]
  n_out = len(entry.out_avals)
  out_tree_value = entry.out_tree.unflatten([0] * n_out)
  out_leaves = [_resolve(s, "out_shardings") for s in
                _flat_prefix(fn._out_shardings, out_tree_value, n_out, "out_shardings",
                             "outputs")]
  # The mesh: the first named sharding among the requested ones, then the arguments'.
  committed = [getattr(x, "_device", None) for x in flat]
  mesh = next((s.mesh for s in in_leaves + out_leaves + committed + _constraints(entry.closed)
               if isinstance(s, NamedSharding) and is_multi_device(s)), None)
  device = fn._committed_device(flat, args, kwargs)  # JAX's incompatible-devices error
  if mesh is None or (device is not None and not is_multi_device(device)):
    if device is not None and mesh is not None:
      placements = [x for x in flat if getattr(x, "_device", None) is not None]
      probe = [array_lib.from_host(np.zeros(a.shape, a.dtype), False, s)
               for s, a in zip(in_leaves, avals) if isinstance(s, NamedSharding)][:1]
      devices.common_device(placements + probe,
                            lambda: [f"args[{i}]" for i in range(len(placements) + 1)],
                            fn._name)
    return None  # nothing to partition: the caller's unsharded path
  from jaxlite._src.distributed import sharded_jit  # a mesh over several processes (MPI)
  spans = sharded_jit.spans_processes(mesh)
  if _has_shard_map(entry.closed.jaxpr):
    if spans:
      return sharded_jit.call(fn, args, kwargs, entry, flat, mesh, None)
    return _run_whole_with_shard_maps(entry, flat, out_leaves, mesh)
  def path(i):
    paths = tree_util.tree_flatten_with_path((tuple(dyn_args), {}))[0]
    return jf._placement_arg_name(paths[i][0], fn._fun) if i < len(paths) else f"args[{i}]"

  in_specs = []
  for i, (x, a, s, c) in enumerate(zip(flat, avals, in_leaves, committed)):
    nd = len(a.shape)
    if s is not None:
      if isinstance(c, devices.Sharding) and is_multi_device(c) and \
          not c.is_equivalent_to(s, nd):
        raise ValueError(
            "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
            f"sharding: {s},\narg sharding: {c} for arg type: "
            f"{a.str_short(short_dtypes=False)}")
      if hasattr(s, "spec") and len(s.spec) > nd:
        raise ValueError(
            f"One of pjit arguments with pytree key path {path(i)} is incompatible with its "
            f"sharding annotation {s}: Sharding "
            f"{s} is only valid for values of rank at least {len(s.spec)}, but was applied to "
            f"a value of rank {nd}.")
      if hasattr(s, "shard_shape"):
        s.shard_shape(a.shape)
      in_specs.append(prop.spec_of_sharding(s, nd))
    elif isinstance(c, NamedSharding) and c.mesh == mesh:
      in_specs.append(prop.spec_of_sharding(c, nd))
    else:
      in_specs.append(prop.replicated(nd))
  out_specs = []
  for s, a in zip(out_leaves, entry.out_avals):
    if s is not None and hasattr(s, "shard_shape"):
      s.shard_shape(a.shape)
    out_specs.append(None if s is None else prop.spec_of_sharding(s, len(a.shape)))
  key = (in_specs_key := tuple(in_specs), tuple(out_specs), mesh)
  cached = fn._sharded_cache.get(key)
  if cached is None or cached[0] is not entry.closed:
    program = Program(entry.closed, in_specs_key, out_specs, mesh)
    cached = fn._sharded_cache[key] = (entry.closed, program)
  program = cached[1]
  if spans:
    return sharded_jit.call(fn, args, kwargs, entry, flat, mesh, program)
  values = [jf.numpy_value(x) for x in list(entry.lifted) + list(flat)] if entry.lifted \
      else [jf.numpy_value(x) for x in flat]
  outs = program.run(values)
  results = []
  outvars = program.closed.jaxpr.outvars
  for o, a, s, spec, v in zip(outs, entry.out_avals, out_leaves, program.out_specs, outvars):
    r = core.make_array(np.asarray(o), a)
    if s is None and a.sharding is not None:  # placed by its type (explicit axes) already
      results.append(r)
      continue
    # A constant result (a literal of the jaxpr) stays uncommitted, as in JAX.
    r._device = s if s is not None else None if isinstance(v, core.Literal) else \
        _out_sharding(mesh, spec)
    results.append(r)
  return entry.out_tree.unflatten(results)
