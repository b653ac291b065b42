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
import weakref

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.base import primitive_kinds as kinds
from jaxlite._src.transforms import call_primitives
from jaxlite._src.transforms.jit_arguments import leaf_signature, numpy_value
from jaxlite._src.transforms.jit_cache import bounded_put
from jaxlite._src.base import tree_util
from jaxlite._src.base.config import config
from jaxlite._src.sharding import named_sharding
from jaxlite._src.sharding.mesh import AbstractMesh
from jaxlite._src.sharding import propagation as prop
from jaxlite._src.spmd import runtime


# The multi-process runs (MPI only): distributed/sharded_jit.py registers `repeat_call` and `call`
# at its import, which `jax.distributed` loads (issue 29: this module never imports it).
_multiprocess = {}


def register_multiprocess(**fns):
  _multiprocess.update(fns)


def _prod(sizes) -> int:
  return int(math.prod(sizes))


class Program:
  """The per-device program of `closed` (a ClosedJaxpr) for inputs with `in_specs`, outputs
  brought to `out_specs` (None entries: the propagated spec)."""

  def __init__(self, closed, in_specs, out_specs, mesh, free=None):
    self.closed, self.mesh = closed, mesh
    self.mesh_shape = dict(mesh.shape)
    jaxpr = closed.jaxpr
    if free is not None and any(free) and any(s is not None for s in out_specs):
      # uncommitted inputs given no in_sharding take what the out_shardings ask of them
      in_specs, self.env, self.plans = prop.propagate_free(jaxpr, in_specs, self.mesh_shape,
                                                           out_specs, free)
    else:
      self.env, self.plans = prop.propagate(jaxpr, in_specs, self.mesh_shape, out_specs)
    self.in_specs = tuple(in_specs)
    self.out_specs = tuple(
        self._read_spec(v) if s is None else s for v, s in zip(jaxpr.outvars, out_specs))
    self._executable = self._spmd_executable = None
    self._report_inspections(jaxpr, self.env, self.plans)

  def _report_inspections(self, jaxpr, env, plans):
    """`inspect_array_sharding` callbacks inside the program get their operands' shardings
    now, at partition time (JAX calls them at compile time)."""
    for eqn, plan in zip(jaxpr.eqns, plans):
      if eqn.primitive is kinds.roles.inspect_sharding:
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
      elif eqn.primitive is prop.sharding_constraint_p or eqn.primitive is kinds.roles.reshard:
        outs = ins  # the blocks already have the constrained (resharded) layout
      elif eqn.primitive is kinds.roles.inspect_sharding:
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
      if k in params and eqn.primitive is not prop.sharding_constraint_p:
        params[k] = None
    shape = kinds.shape_param.get(eqn.primitive)  # broadcast_in_dim's, reshape's: the block's
    if shape is not None:
      params[shape] = self.local_shape(params[shape], plan.out_specs[0])
    return params

  def local_shape(self, shape, spec):
    return tuple(n // _prod(self.mesh_shape[a] for a in entry) for n, entry in zip(shape, spec))

  def _complete(self, x, collective, axes):
    prim = getattr(kinds.roles, collective)  # psum, pmax, pmin: registered by lax.parallel
    return prim.bind(x, axes=tuple(axes), axis_index_groups=None)

  def reshard(self, x, src, dst, global_shape):
    """Block `x` of a value laid out by `src` brought to layout `dst` (dim by dim: gathered
    over the axes it leaves, then sliced at this device's index over the axes it gains)."""
    if src == dst:
      return x
    return core.reshard_block(x, src, dst, global_shape, self.mesh_shape)

  # -- running ----------------------------------------------------------------------------------
  def run(self, global_values):
    """Global NumPy values in, global NumPy values of the outputs out. On the xla backend the
    global program runs, annotated with the specs, partitioned by XLA (compiler/xla/spmd.py)."""
    exe = self.__dict__.get("_xla_executable")
    if exe is None:
      exe = self._xla_executable = _xla_program(self)
    if exe is not False:
      return exe(*global_values)
    return execute(self, global_values)


def _xla_program(program):
  """The XLA SPMD executable of `program`'s global jaxpr when the installed backend is XLA's,
  else False (jaxlite's partitioner runs the per-device program)."""
  from jaxlite._src.compiler import backend
  b = backend.installed()
  if not getattr(b, "name", "").startswith("xla"):
    return False
  from jaxlite._src.compiler.xla import spmd
  from jaxlite._src.compiler.xla.backend import _module_name
  return spmd.compile_spmd(b, program.closed, _module_name(program.closed, "jit_fn"),
                           mesh=program.mesh, in_specs=program.in_specs,
                           out_specs=program.out_specs)


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
    from jaxlite._src.transforms.jit import jit
    from jaxlite._src.transforms.vmap_api import vmap
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


# Per-device work (input and output elements a device touches) below which a program that
# meets no peer runs its devices one after another on the caller's thread: waking workers costs
# more than such programs compute (tens of µs per hand-off).
INLINE_MAX_ELEMENTS = 1 << 15


class _SpmdPlan:
  """What `execute_spmd` needs per call, computed once per Program: the compiled per-device
  executable, each device's input index tuples, where each device's outputs go, and whether
  the devices may run inline (see INLINE_MAX_ELEMENTS)."""
  __slots__ = ("exe", "in_index", "out_writes", "inline", "stacked")

  def __init__(self, program):
    from jaxlite._src.compiler import backend
    from jaxlite._src.interpreters import partial_eval as pe
    mesh_shape = program.mesh_shape
    invars, outvars = program.closed.jaxpr.invars, program.closed.jaxpr.outvars
    avals = [core.ShapedArray(program.local_shape(v.aval.shape, s), v.aval.dtype,
                              v.aval.weak_type)
             for v, s in zip(invars, program.in_specs)]
    with runtime.bind_axes(dict(mesh_shape)):
      closed = pe.trace_to_jaxpr(lambda *blocks: list(program(*blocks)), avals)
    self.exe = backend.compile_jaxpr(closed)
    # The devices' program run once over their blocks stacked, where it may be (runtime's
    # `stacked_builders`: shard_map's stacked path, filled from above).
    self.stacked = None
    if runtime.stacked_builders and program.mesh.devices.size > 1:
      self.stacked = runtime.stacked_builders[0](closed, program.mesh, program.in_specs,
                                                 program.out_specs)
    coords = runtime.mesh_coords(program.mesh)
    self.in_index = [[_device_index(s, v.aval.shape, mesh_shape, c)
                      for v, s in zip(invars, program.in_specs)] for c in coords]
    # Per output: None when replicated (device 0's buffer is the result), else the (device,
    # index) pairs that write the global buffer (one device per distinct block).
    self.out_writes = []
    for s, v in zip(program.out_specs, outvars):
      if not prop.spec_axes(s):
        self.out_writes.append(None)
        continue
      writes, seen = [], set()
      for d, c in enumerate(coords):
        idx = _device_index(s, v.aval.shape, mesh_shape, c)
        key = tuple((i.start, i.stop) for i in idx)
        if key not in seen:
          seen.add(key)
          writes.append((d, idx))
      self.out_writes.append(writes)
    work = sum(_prod(a.shape) for a in avals) + sum(
        _prod(program.local_shape(v.aval.shape, s)) for v, s in zip(outvars, program.out_specs))
    self.inline = work <= INLINE_MAX_ELEMENTS and not runtime.meets_peers(closed.jaxpr)


def execute_spmd(program, global_values):
  """Runs `program` on every device through the SPMD runtime (`run_spmd`): the per-device
  program is traced once with the mesh axes bound and compiled by the backend; each device
  reads views of the global inputs and the outputs are written back into global buffers (a
  replicated output is device 0's buffer, no copy). Devices run concurrently, or inline on
  this thread when the program is small and meets no peer."""
  plan = program._spmd_executable
  if plan is None:
    plan = program._spmd_executable = _SpmdPlan(program)
  values = [v if type(v) is np.ndarray else np.asarray(v) for v in global_values]
  if plan.stacked is not None and runtime.current_context() is None:
    return plan.stacked.run(values)
  exe = plan.exe
  per_device = [[v[i] for v, i in zip(values, index)] for index in plan.in_index]
  outs = runtime.run_spmd(program.mesh, lambda *blocks: exe(*blocks), per_device,
                          inline=plan.inline)
  results = []
  for i, (writes, v) in enumerate(zip(plan.out_writes, program.closed.jaxpr.outvars)):
    if writes is None:
      results.append(np.asarray(outs[0][i]))
      continue
    first = np.asarray(outs[writes[0][0]][i])
    buf = np.empty(v.aval.shape, first.dtype)
    for d, idx in writes:
      buf[idx] = outs[d][i]
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
  from jaxlite._src.base import devices
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  return x is None or isinstance(x, (devices.Sharding, PartitionSpec))


def _resolve(s, what):
  """A jit in/out sharding leaf as a Sharding (PartitionSpecs need a mesh in context)."""
  from jaxlite._src.sharding.mesh import get_mesh
  from jaxlite._src.sharding.named_sharding import NamedSharding, check_unique_axes
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  if isinstance(s, PartitionSpec):
    check_unique_axes(s, what)  # JAX's DuplicateSpecError names the argument
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


def _check_shard_map_devices(fn, dyn_args, jaxpr, committed):
  """JAX's error for an argument committed to devices other than those of a shard_map inside
  the jitted function."""
  want = [set(e.params["mesh"].devices.flat) for e in jaxpr.eqns
          if e.primitive is kinds.roles.shard_map]
  for i, c in enumerate(committed):
    if not is_multi_device(c) or all(set(c._device_assignment) == w for w in want):
      continue
    paths = tree_util.tree_flatten_with_path((tuple(dyn_args), {}))[0]
    name = fn.arg_name(paths[i][0]) if i < len(paths) else f"args[{i}]"
    mesh = next(e.params["mesh"] for e in jaxpr.eqns if e.primitive is kinds.roles.shard_map and
                set(c._device_assignment) != set(e.params["mesh"].devices.flat))
    x = tree_util.tree_leaves(tuple(dyn_args))[i]
    raise ValueError(
        f"Received incompatible devices for jitted computation. Got argument {name} of "
        f"{fn.name} with shape {core.get_aval(x).str_short(short_dtypes=False)} and with "
        f"device ids {sorted(d.id for d in c._device_assignment)} on platform CPU and "
        f"shard_map inside jit with device ids {[d.id for d in mesh.devices.flat]} on "
        "platform CPU")


def _has_shard_map(jaxpr) -> bool:
  return any(e.primitive is kinds.roles.shard_map for e in jaxpr.eqns)


def _whole_placements(entry, out_leaves, mesh) -> list:
  """Where the results of a jitted program holding shard_map equations go, run whole (each
  shard_map runs its own SPMD program over its mesh: partitioning around them would nest SPMD
  runs): as the shard_map's out_specs say (or by out_shardings), others replicated; _KEEP for
  a constant result (a literal of the jaxpr: it stays uncommitted)."""
  from jaxlite._src.sharding.named_sharding import NamedSharding
  produced = {}
  for e in entry.closed.jaxpr.eqns:
    if e.primitive is kinds.roles.shard_map:
      m = e.params["mesh"]
      for v, spec in zip(e.outvars, e.params["out_specs"]):
        produced[v] = _out_sharding(m, prop.spec_of_sharding(NamedSharding(m, spec),
                                                             len(v.aval.shape)))
  out = []
  for s, v in zip(out_leaves, entry.closed.jaxpr.outvars):
    if s is not None:
      out.append(s)
    elif isinstance(v, core.Literal):
      out.append(_KEEP)
    else:
      out.append(produced.get(v) or _out_sharding(mesh, prop.replicated(len(v.aval.shape))))
  return out


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
  """The shardings of the `sharding_constraint` eqns of a jaxpr and its sub-jaxprs, and the
  in/out shardings of its `jit` eqns."""
  out, todo = [], [closed.jaxpr]
  while todo:
    for eqn in todo.pop().eqns:
      if eqn.primitive is prop.sharding_constraint_p:
        out.append(eqn.params["sharding"])
      elif eqn.primitive is kinds.roles.jit:
        out += [s for s in (*eqn.params.get("in_shardings", ()),
                            *eqn.params.get("out_shardings", ())) if hasattr(s, "mesh")]
      todo += core.jaxprs_in_params(eqn.params)
  return out


def is_multi_device(placement) -> bool:
  from jaxlite._src.base import devices
  if isinstance(getattr(placement, "mesh", None), AbstractMesh):  # no devices: its size
    return placement.mesh.size > 1
  return placement is not None and not devices.is_device(placement) and \
      len(placement._device_assignment) > 1


def _concrete_for(abstract):
  """The concrete mesh in context that `abstract` describes, with JAX's errors when there is
  none or it has another shape."""
  from jaxlite._src.sharding.mesh import get_mesh
  mesh = get_mesh()
  if mesh.empty:
    raise RuntimeError("A sharding over an AbstractMesh needs a concrete mesh in context to run "
                       f"on: {abstract!r}. Set one with `jax.set_mesh(mesh)`.")
  if mesh.shape_tuple != abstract.shape_tuple:
    raise ValueError(f"The mesh in context {mesh.shape_tuple} does not match the mesh of the "
                     f"sharding {abstract.shape_tuple}")
  return mesh


_KEEP = object()  # an output left as made (placed by its type, or a constant left uncommitted)
_UNPARTITIONED = object()  # a call signature with nothing to partition
# fn.cache[PLANS]: the call plans of a jit function by call key (`_call_key`), and
# under _PSPEC_FLAG whether its in/out_shardings hold PartitionSpecs. (The other entries of
# fn.cache are its Programs by specs; `jax.clear_caches` empties both.)
PLANS = "call plans"
_PSPEC_FLAG = object()


class _CallPlan:
  """What an eager sharded call of one argument signature does, decided (and checked) once:
  run the partitioned `program` (or, with shard_maps inside, the whole jaxpr), then place each
  result by `placements`."""
  __slots__ = ("entry", "program", "placements")

  def __init__(self, entry, program, placements):
    self.entry, self.program, self.placements = entry, program, placements

  def run(self, flat):
    entry = self.entry
    at = core.array_type
    values = [x._value if type(x) is at else numpy_value(x) for x in flat]
    if entry.lifted:
      values = [numpy_value(x) for x in entry.lifted] + values
    if self.program is None:  # shard_maps inside: run whole
      outs = entry.out_tree.flatten_up_to(entry.run(values))
      for r, p in zip(outs, self.placements):
        if type(r) is at and p is not _KEEP:
          r._device = p
          r._aval = None  # the type follows the placement (explicit axes)
      return entry.out_tree.unflatten(outs)
    outs = self.program.run(values)
    make, from_numpy = core.make_array, core.host_array_from_numpy
    results = []
    for o, a, p in zip(outs, entry.out_avals, self.placements):
      o = o if type(o) is np.ndarray else np.asarray(o)
      if p is _KEEP or o.dtype != a.dtype:
        r = make(o, a)
        if p is not _KEEP:
          r._device = p
      else:  # the common case: the buffer as it is, at its planned placement
        r = from_numpy(o, a.weak_type)
        r._device = p
      results.append(r)
    return entry.out_tree.unflatten(results)


def _has_pspec(shardings) -> bool:
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  return any(isinstance(s, PartitionSpec)
             for s in tree_util.tree_leaves(shardings, is_leaf=_is_sharding_leaf))


def _call_key(fn, args, kwargs):
  """The key of an eager call's plan in `fn.cache`, with the call's flat arguments:
  each leaf's trace signature and placement, the trace context, and the context mesh when
  the jit's shardings name PartitionSpecs. (None, None) when the call takes the slow path
  (static arguments, keyword arguments, a leaf whose type is not placed by `_device`)."""
  if kwargs or not fn.simple:
    return None, None
  at = core.array_type
  if all(type(a) is at for a in args):
    flat, tree = args, None
  else:
    flat, tree = tree_util.tree_flatten((args, {}))
  sig = []
  for x in flat:
    if type(x) is at:
      v = x._value
      sig.append((v.shape, v.dtype, x.weak_type, x._device, x._aval))
    elif isinstance(x, (core.Array, core.Tracer)):
      return None, None
    else:
      try:
        sig.append(leaf_signature(x))
      except TypeError:
        return None, None
  cache = fn.cache.get(PLANS)
  if cache is None:
    cache = fn.cache[PLANS] = {}
  pspec = cache.get(_PSPEC_FLAG)
  if pspec is None:
    pspec = cache[_PSPEC_FLAG] = _has_pspec((fn.in_shardings, fn.out_shardings))
  ctx = config.trace_context()
  if pspec:
    from jaxlite._src.sharding.mesh import get_mesh
    ctx = (ctx, get_mesh())
  return ("call", tree, tuple(sig), ctx), flat


def call_sharded(fn, args, kwargs):
  """An eager call of a jit (`fn`: its jit_function.CallSite) with sharded arguments or with
  in/out_shardings: trace, propagate, partition (cached on input and output specs), run; the
  results are Arrays laid out by their propagated (or requested) shardings. None when there is
  nothing to partition (no multi-device sharding anywhere): the caller's unsharded path runs.
  Under a transformation (grad or vmap of the jit function) the staged `jit` eqn runs whole:
  shardings act on eager calls, where the values live.

  The plan of a call (checks, specs, partitioned program, result placements) is cached per
  argument signature and placement (`_call_key`), so a repeated call only runs it. With
  several processes (MPI) a mesh may span them: distributed/sharded_jit.py runs those calls and
  remembers repeated ones itself, so no plan is cached here."""
  from jaxlite._src.base import devices
  if devices.process_count() > 1:
    out = _multiprocess["repeat_call"](fn, args, kwargs)
    if out is not None:
      return out
    plan, flat = _plan_call(fn, args, kwargs)
    return None if plan is _UNPARTITIONED else plan.run(flat)
  key, flat = _call_key(fn, args, kwargs)
  if key is not None:
    plan = fn.cache[PLANS].get(key)
    if plan is not None:
      return None if plan is _UNPARTITIONED else plan.run(flat)
  plan, flat = _plan_call(fn, args, kwargs)
  if key is not None and (plan is _UNPARTITIONED or not plan.entry.lifted):
    plans = fn.cache.get(PLANS)
    if plans is None:  # emptied meanwhile (jax.clear_caches)
      plans = fn.cache[PLANS] = {}
    bounded_put(plans, key, plan)
  return None if plan is _UNPARTITIONED else plan.run(flat)


class _AcrossProcesses:
  """The plan of a call over a mesh that spans processes: distributed/sharded_jit.py runs the
  partitioned program (or the program's shard_maps when `program` is None) from local shards."""

  def __init__(self, fn, args, kwargs, entry, mesh, program):
    self.fn, self.args, self.kwargs = fn, args, kwargs
    self.entry, self.mesh, self.program = entry, mesh, program

  def run(self, flat):
    return _multiprocess["call"](self.fn, self.args, self.kwargs, self.entry, flat, self.mesh,
                                 self.program)


def eqn_shardings(fn, args, kwargs, entry, n_flat):
  """The in/out shardings a staged `jit` eqn of call site `fn` (in_shardings/out_shardings)
  carries, one per flat argument (lifted constants first: unspecified) and result; None for
  an unspecified one."""
  if fn.in_shardings is None and fn.out_shardings is None:
    return None, None
  if kwargs and fn.in_shardings is not None:
    raise ValueError("pjit does not support kwargs when in_shardings is specified.")
  dyn_args = fn.dynamic_args(args, kwargs)
  n_kw = n_flat - len(tree_util.tree_leaves(tuple(dyn_args)))
  ins = [_resolve(s, "in_shardings") for s in
         _flat_prefix(fn.in_shardings, tuple(dyn_args), n_flat - n_kw, "in_shardings",
                      "positional arguments tuple")] + [None] * n_kw
  n_out = len(entry.out_avals)
  outs = [_resolve(s, "out_shardings") for s in
          _flat_prefix(fn.out_shardings, entry.out_tree.unflatten([0] * n_out), n_out,
                       "out_shardings", "outputs")]
  return [None] * len(entry.lifted) + ins, outs


def _plan_call(fn, args, kwargs):
  """The `_CallPlan` of a call of jit call site `fn` (or _UNPARTITIONED), with the call's flat
  arguments: the requested shardings, the mesh, the input and output specs, the partitioned
  program, the results' placements, each a step below."""
  if kwargs and fn.in_shardings is not None:
    raise ValueError("pjit does not support kwargs when in_shardings is specified.")
  dyn_args = fn.dynamic_args(args, kwargs)
  entry, flat = fn.entry(args, kwargs)
  avals = [core.get_aval(call_primitives.as_traceable_arg(x)) for x in flat]
  in_leaves, out_leaves, out_tree_value = _requested(fn, dyn_args, kwargs, entry, flat)
  committed = [getattr(x, "_device", None) for x in flat]
  mesh = _call_mesh(entry, committed, in_leaves, out_leaves)
  device = fn.committed_device(flat, args, kwargs)  # JAX's incompatible-devices error
  if mesh is None or (device is not None and not is_multi_device(device)):
    if device is not None and mesh is not None:
      _check_requested_devices(fn, flat, avals, in_leaves)
    return _UNPARTITIONED, flat  # nothing to partition: the caller's unsharded path
  from jaxlite._src.base import devices
  spans = devices.spans_processes(mesh)  # a mesh over several processes (MPI)
  if _has_shard_map(entry.closed.jaxpr):  # run whole: its shard_maps place their results
    _check_shard_map_devices(fn, dyn_args, entry.closed.jaxpr, committed)
    if spans:
      return _AcrossProcesses(fn, args, kwargs, entry, mesh, None), flat
    return _CallPlan(entry, None, _whole_placements(entry, out_leaves, mesh)), flat
  in_specs, free = _in_specs(fn, dyn_args, flat, avals, in_leaves, committed, mesh)
  out_specs = _out_specs(entry, out_leaves, out_tree_value, mesh)
  program = _program(fn, entry, in_specs, out_specs, mesh, free)
  if spans:
    return _AcrossProcesses(fn, args, kwargs, entry, mesh, program), flat
  return _CallPlan(entry, program, _placements(entry, out_leaves, program, mesh, flat)), flat


def _requested(fn, dyn_args, kwargs, entry, flat):
  """(in_shardings per flat argument, out_shardings per result, the output tree's value) as
  the jit's in/out_shardings give them (None: unspecified)."""
  in_leaves = [_resolve(s, "in_shardings") for s in
               _flat_prefix(fn.in_shardings, tuple(dyn_args), len(flat), "in_shardings",
                            "positional arguments tuple")] + [None] * len(kwargs and flat)
  n_out = len(entry.out_avals)
  out_tree_value = entry.out_tree.unflatten([0] * n_out)
  out_leaves = [_resolve(s, "out_shardings") for s in
                _flat_prefix(fn.out_shardings, out_tree_value, n_out, "out_shardings",
                             "outputs")]
  return in_leaves[:len(flat)], out_leaves, out_tree_value


def _call_mesh(entry, committed, in_leaves, out_leaves):
  """The mesh a call runs over: where the arguments live, else the first named sharding among
  the requested ones and the program's constraints (a requested sharding over the arguments'
  mesh must agree with theirs: `_in_specs` checks), else a shard_map's; None: no mesh."""
  from jaxlite._src.sharding.named_sharding import NamedSharding
  mesh = next((s.mesh for s in committed + in_leaves + out_leaves + _constraints(entry.closed)
               if isinstance(s, NamedSharding) and is_multi_device(s)), None)
  if isinstance(mesh, AbstractMesh):
    # a constraint traced over `get_abstract_mesh()` (flax's nnx under `jax.set_mesh`): the
    # call runs over the concrete mesh in context, as JAX's lowering resolves it
    mesh = _concrete_for(mesh)
  if mesh is None and _has_shard_map(entry.closed.jaxpr):  # shard_maps place their results
    mesh = next(e.params["mesh"] for e in entry.closed.jaxpr.eqns
                if e.primitive is kinds.roles.shard_map)
  return mesh


def _check_requested_devices(fn, flat, avals, in_leaves):
  """JAX's incompatible-devices error for arguments committed to one device beside an
  in_sharding over a mesh."""
  from jaxlite._src.base import array as array_lib
  from jaxlite._src.base import devices
  from jaxlite._src.sharding.named_sharding import NamedSharding
  placements = [x for x in flat if getattr(x, "_device", None) is not None]
  probe = [array_lib.from_host(np.zeros(a.shape, a.dtype), False, s)
           for s, a in zip(in_leaves, avals) if isinstance(s, NamedSharding)][:1]
  devices.common_device(placements + probe,
                        lambda: [f"args[{i}]" for i in range(len(placements) + 1)], fn.name)


def _in_specs(fn, dyn_args, flat, avals, in_leaves, committed, mesh):
  """(the spec of each flat argument, whether each is free to take the layout its uses want:
  uncommitted, no in_sharding), with JAX's errors for in_shardings that disagree with the
  arguments' or do not fit their rank."""
  from jaxlite._src.base import devices
  from jaxlite._src.sharding.named_sharding import NamedSharding

  def path(i):
    paths = tree_util.tree_flatten_with_path((tuple(dyn_args), {}))[0]
    return fn.arg_name(paths[i][0]) if i < len(paths) else f"args[{i}]"

  in_specs, free = [], []
  for i, (x, a, s, c) in enumerate(zip(flat, avals, in_leaves, committed)):
    nd = len(a.shape)
    if s is not None and isinstance(c, devices.Sharding) and is_multi_device(c) and \
        not c.is_equivalent_to(s, nd):  # (over another mesh too)
      raise ValueError(
          "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
          f"sharding: {s},\narg sharding: {c} for arg type: "
          f"{a.str_short(short_dtypes=False)}")
    if s is not None and _same_axes(s, mesh):
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
    free.append(len(in_specs) == i + 1 and s is None and c is None)
  return in_specs, free


def _same_axes(s, mesh) -> bool:
  """A sharding over another mesh of the same devices (out_shardings under another context
  mesh) places the results but cannot lay out the program's values: those follow `mesh`."""
  from jaxlite._src.sharding.named_sharding import NamedSharding
  return not isinstance(s, NamedSharding) or \
      tuple(s.mesh.shape.items()) == tuple(mesh.shape.items())


def _out_specs(entry, out_leaves, out_tree_value, mesh):
  """The spec each result is asked for (None: free), with JAX's error for an out_sharding
  that does not fit the result's rank."""
  out_specs = []
  out_paths = None
  for k, (s, a) in enumerate(zip(out_leaves, entry.out_avals)):
    if s is not None and len(getattr(s, "spec", ())) > len(a.shape):
      if out_paths is None:
        out_paths = [tree_util.keystr(p) for p, _ in
                     tree_util.tree_flatten_with_path(out_tree_value)[0]]
      raise ValueError(
          f"One of pjit outputs with pytree key path result{out_paths[k]} is incompatible "
          f"with its sharding annotation {s}: Sharding {s} is only valid for values of rank "
          f"at least {len(s.spec)}, but was applied to a value of rank {len(a.shape)}.")
    if s is not None and hasattr(s, "shard_shape"):
      s.shard_shape(a.shape)
    out_specs.append(None if s is None or not _same_axes(s, mesh) else
                     prop.spec_of_sharding(s, len(a.shape)))
  return out_specs


def _program(fn, entry, in_specs, out_specs, mesh, free):
  """The partitioned Program of the entry for these specs (cached on the call site)."""
  key = (in_specs_key := tuple(in_specs), tuple(out_specs), mesh)
  cached = fn.cache.get(key)
  if cached is None or cached[0] is not entry.closed:
    program = Program(entry.closed, in_specs_key, out_specs, mesh, free)
    cached = fn.cache[key] = (entry.closed, program)
  return cached[1]


def _placements(entry, out_leaves, program, mesh, flat):
  """Where each result of the partitioned program goes."""
  from jaxlite._src.sharding.mesh import Mesh
  placements = []
  for a, s, spec, v in zip(entry.out_avals, out_leaves, program.out_specs,
                           program.closed.jaxpr.outvars):
    if s is None and a.sharding is not None:  # placed by its type (explicit axes)
      # over a concrete mesh: that placement, found once; over an AbstractMesh, by the mesh
      # in context when the result is made (`make_array`)
      placements.append(a.sharding if isinstance(a.sharding.mesh, Mesh) else _KEEP)
    elif s is not None:
      placements.append(s)
    elif isinstance(v, core.Literal):  # a constant result stays uncommitted, as in JAX
      placements.append(None)
    elif 1 in mesh.shape.values():  # read back as JAX reads XLA's sharding (size-1 axes)
      placements.append(_read_back(_out_sharding(mesh, spec), flat, len(a.shape)))
    else:
      placements.append(_out_sharding(mesh, spec))
  return placements


# --- eager jit eqns (jit under grad, vmap...) ---------------------------------------------

# Propagated output shardings of eager `jit` eqns, per jaxpr (held weakly) and input layout.
_eqn_out_shardings: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def jit_eqn_placements(closed, args, device, out_shardings=None, free=None):
  """Placements of the results of a `jit` eqn run eagerly on `args` laid out over the mesh of
  `device` (a NamedSharding): the shardings propagation gives its outputs, as JAX's
  partitioner does for a transformed jit (grad or vmap of jit run whole: the eqn's jaxpr is
  the JVP'd, transposed or batched body). None when the body holds shard_maps (their
  out_specs place the results) or propagation finds no answer (replicated, then)."""
  from jaxlite._src.sharding.named_sharding import NamedSharding
  mesh = getattr(device, "mesh", None)
  if mesh is None or _has_shard_map(closed.jaxpr):
    return None
  in_specs = []
  for a, v in zip(args, closed.jaxpr.invars):
    nd = len(v.aval.shape) if hasattr(v.aval, "shape") else 0
    d = getattr(a, "_device", None)
    in_specs.append(prop.spec_of_sharding(d, nd) if isinstance(d, NamedSharding) and
                    d.mesh == mesh else prop.replicated(nd))
  per_jaxpr = _eqn_out_shardings.get(closed)
  if per_jaxpr is None:
    per_jaxpr = _eqn_out_shardings[closed] = {}
  out_specs = None
  if out_shardings is not None and any(s is not None for s in out_shardings) and free:
    # given out_shardings: free inputs take what they ask of them (as a direct call does)
    out_specs = tuple(None if s is None else prop.spec_of_sharding(s, len(v.aval.shape))
                      for s, v in zip(out_shardings, closed.jaxpr.outvars))
  key = (tuple(in_specs), mesh, out_specs, None if out_specs is None else tuple(free))
  out = per_jaxpr.get(key)
  if out is None:
    try:
      if out_specs is not None and any(free):
        _, env, _ = prop.propagate_free(closed.jaxpr, in_specs, dict(mesh.shape), out_specs,
                                        free)
      else:
        env, _ = prop.propagate(closed.jaxpr, in_specs, dict(mesh.shape))
    except (ValueError, TypeError):
      return None
    out = []
    for v in closed.jaxpr.outvars:
      nd = len(v.aval.shape) if hasattr(v.aval, "shape") else 0
      spec = env.get(v, prop.replicated(nd)) if isinstance(v, core.Var) else \
          prop.replicated(nd)
      out.append(_out_sharding(mesh, spec))
    if len(per_jaxpr) >= 64:
      per_jaxpr.clear()
    per_jaxpr[key] = out
  return out


def check_committed_arg(x, s, aval):
  """JAX's error for an argument committed to a sharding other than the in_sharding `s` of
  the eager `jit` eqn it is passed to."""
  from jaxlite._src.base import devices
  c = getattr(x, "_device", None)
  if isinstance(c, devices.Sharding) and is_multi_device(c) and \
      not c.is_equivalent_to(s, len(aval.shape)):
    raise ValueError(
        "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
        f"sharding: {s},\narg sharding: {c} for arg type: "
        f"{aval.str_short(short_dtypes=False)}")


def given_placements(closed, orig_args, args, in_shardings, out_shardings):
  """Placements of the results of an eager `jit` eqn that carries in/out shardings (the
  transformed eqn of a jit given them), its `args` already on their in_shardings (`orig_args`
  as they came): a given out_sharding places its result; the others follow propagation over
  the mesh of the given shardings (as a direct call of the jit places them), read back as
  JAX reads XLA's: mesh axes of size 1 vanish, unless the layout is that of an argument that
  came committed to it; None leaves a result as it is."""
  from jaxlite._src.base.pretty_print import UNSPECIFIED
  from jaxlite._src.sharding.named_sharding import NamedSharding
  given = [s for s in (*in_shardings, *out_shardings) if s is not None and s is not UNSPECIFIED]
  device = next((s for s in given if isinstance(s, NamedSharding) and is_multi_device(s)),
                None)
  rest = None
  if device is not None:
    free = [(i is None or i is UNSPECIFIED) and getattr(a, "_device", None) is None
            for a, i in zip(args, in_shardings)]
    wanted = [s if isinstance(s, NamedSharding) and s.mesh == device.mesh else None
              for s in out_shardings]
    rest = jit_eqn_placements(closed, args, device, wanted, free)
  out = []
  for i, (s, v) in enumerate(zip(out_shardings, closed.jaxpr.outvars)):
    if s is not None and s is not UNSPECIFIED:
      out.append(s)
    elif rest is None or isinstance(v, core.Literal):
      out.append(None)  # a constant result stays uncommitted, as in JAX
    else:
      out.append(_read_back(rest[i], orig_args, len(v.aval.shape)))
  return out


def _read_back(s, orig_args, nd):
  for a in orig_args:
    c = getattr(a, "_device", None)
    if getattr(c, "mesh", None) == s.mesh and len(getattr(a, "shape", ())) == nd and \
        c.is_equivalent_to(s, nd):
      return c
  return without_trivial_axes(s)


without_trivial_axes = named_sharding.without_trivial_axes  # (below: jit's batcher uses it)


call_primitives.register_placed(check_committed_arg=check_committed_arg,
                                given_placements=given_placements)
