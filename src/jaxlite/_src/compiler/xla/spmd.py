"""Sharded programs on the XLA backend: sharding annotations, manual regions, SPMD executables.

On the xla backend a sharded program is one StableHLO module compiled for every device of its
mesh (`num_partitions` = mesh size); XLA's SPMD partitioner splits it and inserts the
collectives. The annotations are Shardy's (`sdy.mesh`, `#sdy.sharding`, `sdy.sharding_constraint`,
`sdy.manual_computation`), not GSPMD's `mhlo.sharding` strings: JAX 0.10.2 lowers to Shardy by
default (`jax_use_shardy_partitioner` is True) and jaxlib 0.10.2's compiler partitions those
modules when `use_shardy_partitioner` is set, so the modules here are the ones JAX prints
(`jit(f, in_shardings=...).lower(x).as_text()`), and XLA's GSPMD path is on its way out.

What lives here (no jaxlib at import; the primitive modules register the rules):
- the module's meshes (`mesh_name`): one `sdy.mesh` per mesh a module names, its logical device
  ids the positions of the mesh's devices in the executable's device assignment;
- `sharding_attr(...)`: `#sdy.sharding<@mesh, [{"x"}, {}]>` of a spec;
- `manual_region(...)`: shard_map's body as `sdy.manual_computation` (the collectives inside
  read the mesh from `current_mesh`); `constraint_rule`: `sdy.sharding_constraint`;
- `replica_groups` / `axis_coordinate`: what the collective rules (lax/parallel_lowering.py) need;
- `compile_spmd` and `SpmdExecutable`: compile for the mesh's devices and run on per-device
  buffers (`execute_sharded`); results come back as global host values, the sharded Array
  representation of the rest of jaxlite.
"""
from __future__ import annotations

import math

import numpy as np

from jaxlite._src.base import core
from jaxlite._src.compiler.xla import lowering


# --- the meshes of a module -------------------------------------------------------------------

class _ModuleMeshes:
  """The meshes a module names and the executable's device assignment (the first mesh's
  devices in row-major order; later meshes must use the same devices)."""

  def __init__(self, module):
    self.module = module
    self.devices: list = []          # the device assignment
    self.names: dict = {}             # mesh key -> (symbol, mesh, logical ids by flat position)
    self.stack: list = []             # meshes of the manual regions being lowered

  def name(self, mesh) -> str:
    key = _mesh_key(mesh)
    hit = self.names.get(key)
    if hit is not None:
      return hit[0]
    flat = list(mesh.devices.flat)
    if not self.devices:
      self.devices = flat
      self.module.attributes["mhlo.num_partitions"] = f"{len(flat)} : i32"
    elif set(flat) != set(self.devices):
      raise lowering.LoweringError(
          f"a program over meshes of different devices: {mesh} beside the devices "
          f"{self.devices}; XLA compiles one program for one set of devices")
    ids = [self.devices.index(d) for d in flat]
    sym = "mesh" if not self.names else f"mesh_{len(self.names)}"
    axes = ", ".join(f'"{n}"={s}' for n, s in zip(mesh.axis_names, mesh.axis_sizes))
    extra = "" if ids == list(range(len(ids))) else f", device_ids=[{', '.join(map(str, ids))}]"
    # emitted before the functions (the symbol must be declared in the module)
    self.module.funcs.insert(len(self.names), f"  sdy.mesh @{sym} = <[{axes}]{extra}>")
    self.names[key] = (sym, mesh, ids)
    return sym

  def ids(self, mesh) -> list:
    self.name(mesh)
    return self.names[_mesh_key(mesh)][2]

  def next_channel(self) -> int:
    return self.module.next_channel()  # (one counter with the module's host transfers)


def _mesh_key(mesh):
  return (tuple(mesh.axis_names), tuple(mesh.axis_sizes), tuple(id(d) for d in mesh.devices.flat))


def meshes(module) -> _ModuleMeshes:
  m = getattr(module, "_spmd_meshes", None)
  if m is None:
    m = module._spmd_meshes = _ModuleMeshes(module)
  return m


def mesh_name(ctx, mesh) -> str:
  return meshes(ctx.module).name(mesh)


def is_multi_device(mesh) -> bool:
  return mesh is not None and getattr(mesh, "devices", None) is not None and \
      mesh.devices.size > 1


# --- sharding attributes ----------------------------------------------------------------------

def _entry_names(entry) -> tuple:
  if entry is None:
    return ()
  if isinstance(entry, str):
    return (entry,)
  try:
    return tuple(n for n in entry if isinstance(n, str))
  except TypeError:  # UNCONSTRAINED
    return ()


def dims_text(spec, ndim, mesh=None, open_dims=()) -> str:
  """`[{"x"}, {}]`: the axes each of `ndim` dims is split over (`spec`: a PartitionSpec or a
  propagated spec, a tuple of axis-name tuples). Axes of size 1 are left out (Shardy rejects
  nothing for them, but they split nothing). `open_dims` print as `{?}` (unconstrained)."""
  entries = list(spec)[:ndim] + [None] * (ndim - len(spec))
  out = []
  for d, e in enumerate(entries):
    names = [n for n in _entry_names(e) if mesh is None or mesh.shape.get(n, 2) != 1]
    body = ", ".join(f'"{n}"' for n in names)
    if d in open_dims:
      body = body + (", ?" if body else "?")
    out.append("{" + body + "}")
  return "[" + ", ".join(out) + "]"


def sharding_attr(ctx_or_module, mesh, spec, ndim, open_dims=()) -> str:
  """`<@mesh, [{"x"}, {}]>` (the body of `#sdy.sharding<...>`) of `spec` over `mesh`."""
  module = getattr(ctx_or_module, "module", ctx_or_module)
  sym = meshes(module).name(mesh)
  return f"<@{sym}, {dims_text(spec, ndim, mesh, open_dims)}>"


def _manual_axes_text(mesh, manual) -> str:
  return "#sdy<manual_axes{" + ", ".join(f'"{n}"' for n in mesh.axis_names
                                         if n in manual) + "}>"


# --- the rules: shard_map, sharding constraints ----------------------------------------------

def current_mesh(ctx):
  """The mesh of the manual region being lowered (the collectives' axes are its axes)."""
  stack = meshes(ctx.module).stack
  if not stack:
    raise lowering.LoweringError(
        f"{ctx.primitive.name} outside shard_map on the xla backend: collectives over named "
        "axes are lowered inside shard_map (or pmap) bodies")
  return stack[-1]


def manual_region(ctx, args, *, jaxpr, mesh, in_specs, out_specs, manual):
  """shard_map's body as `sdy.manual_computation` over the `manual` axes of `mesh`: operands
  and results are global values laid out by `in_specs` / `out_specs`; the body sees the
  per-device blocks (its jaxpr's avals)."""
  state = meshes(ctx.module)
  sym = state.name(mesh)
  closed = jaxpr if isinstance(jaxpr, core.ClosedJaxpr) else core.ClosedJaxpr(jaxpr, [])
  in_avals = [lowering.physical_aval(a) for a in closed.in_avals]
  out_avals = list(ctx.avals_out)
  # (ranks of the physical types: a key array's data has one more dimension, never split)
  ins = ", ".join(f"<@{sym}, {dims_text(s, len(lowering.physical_aval(a).shape), mesh)}>"
                  for s, a in zip(in_specs, ctx.avals_in))
  outs = ", ".join(f"<@{sym}, {dims_text(s, len(lowering.physical_aval(a).shape), mesh)}>"
                   for s, a in zip(out_specs, out_avals))
  state.stack.append(mesh)
  try:
    region = _region(ctx, in_avals, lambda c, *xs: c.lower_jaxpr(closed, None, list(xs)))
  finally:
    state.stack.pop()
  attrs = {"in_shardings": f"#sdy.sharding_per_value<[{ins}]>",
           "out_shardings": f"#sdy.sharding_per_value<[{outs}]>",
           "manual_axes": _manual_axes_text(mesh, manual)}
  res = ctx.op("sdy.manual_computation", args, out_avals, attrs, [region])
  return res if isinstance(res, list) else [res]


def _region(ctx, arg_avals, body) -> str:
  """A one-block region ending in `sdy.return` (ctx.region ends its blocks in stablehlo's)."""
  fn = ctx.fn
  names = [fn.fresh().replace("%", "%r") for _ in arg_avals]
  args = [lowering.Value(n, a) for n, a in zip(names, arg_avals)]
  saved, saved_indent = fn.lines, fn.indent
  fn.lines, fn.indent = [], saved_indent + 4
  try:
    outs = body(ctx.with_avals(arg_avals, []), *args)
    outs = [outs] if isinstance(outs, lowering.Value) else list(outs)
    types = ", ".join(v.type for v in outs)
    fn.emit(f'"sdy.return"({", ".join(v.name for v in outs)}) : ({types}) -> ()')
    body_lines = fn.lines
  finally:
    fn.lines, fn.indent = saved, saved_indent
  header = ", ".join(f"{v.name}: {v.type}" for v in args)
  return "{\n" + " " * (saved_indent + 2) + f"^bb0({header}):\n" + "\n".join(body_lines) + \
      "\n" + " " * saved_indent + "}"


def constrain(ctx, x, sharding, open_dims=()):
  """`sdy.sharding_constraint` of `x` to NamedSharding `sharding` (inside a manual region, or
  for a sharding over one device, `x` itself: there is nothing to constrain)."""
  mesh = getattr(sharding, "mesh", None)
  spec = getattr(sharding, "spec", None)
  if spec is None or not is_multi_device(mesh) or meshes(ctx.module).stack:
    return x
  attr = sharding_attr(ctx, mesh, spec, len(x.shape), open_dims)
  return ctx.op("sdy.sharding_constraint", [x], ctx.avals_out[0] if ctx.avals_out else x.aval,
                {"sharding": f"#sdy.sharding{attr}"})


def constraint_rule(ctx, x, *, sharding, unconstrained_dims=(), **params):
  """with_sharding_constraint: the value constrained to `sharding` (UNCONSTRAINED dims open)."""
  spec = getattr(sharding, "spec", ())
  open_dims = set(unconstrained_dims or ()) | {
      d for d, e in enumerate(spec) if type(e).__name__ == "_UnconstrainedPartitionSingleton"}
  return constrain(ctx, x, sharding, open_dims)


def reshard_rule(ctx, x, *, dst_sharding):
  """reshard: the value constrained to `dst_sharding` (XLA moves the data)."""
  return constrain(ctx, x, dst_sharding)


# --- what collectives need ---------------------------------------------------------------------

def replica_groups(ctx, names, axis_index_groups=None) -> list:
  """The groups of logical device ids that a collective over mesh axes `names` joins: devices
  agreeing on every other axis, each group in row-major order of `names`' coordinates; with
  `axis_index_groups` (indices along `names`), each of those rows split into the given groups
  (as JAX's `_replica_groups`)."""
  mesh = current_mesh(ctx)
  ids = np.asarray(meshes(ctx.module).ids(mesh)).reshape(mesh.axis_sizes)
  order = list(mesh.axis_names)
  inner = [order.index(n) for n in names]
  outer = [i for i in range(len(order)) if i not in inner]
  arr = ids.transpose(outer + inner)
  n = int(math.prod(mesh.axis_sizes[i] for i in inner))
  rows = arr.reshape(-1, n).tolist()
  if axis_index_groups is None:
    return rows
  return [[row[int(i)] for i in g] for row in rows for g in axis_index_groups]


def groups_attr(groups) -> str:
  rows = ", ".join("[" + ", ".join(str(int(i)) for i in g) + "]" for g in groups)
  return f"dense<[{rows}]> : tensor<{len(groups)}x{len(groups[0])}xi64>"


def channel_attr(ctx) -> str:
  return f"#stablehlo.channel_handle<handle = {meshes(ctx.module).next_channel()}, type = 1>"


def axis_coordinate(ctx, name):
  """This device's coordinate along mesh axis `name` (ui32), from `stablehlo.partition_id`."""
  mesh = current_mesh(ctx)
  ids = meshes(ctx.module).ids(mesh)
  if ids != list(range(len(ids))):
    raise lowering.LoweringError(
        f"axis_index over {mesh}: its devices are ordered otherwise than the program's")
  u32 = np.dtype(np.uint32)
  order = list(mesh.axis_names)
  k = order.index(name)
  stride = int(math.prod(mesh.axis_sizes[k + 1:]))
  c = ctx.with_avals([], [lowering.shaped_aval((), u32)])
  pid = c.op("partition_id", [], lowering.shaped_aval((), u32))
  q = c.op("divide", [pid, c.constant(np.uint32(stride))], lowering.shaped_aval((), u32))
  return c.op("remainder", [q, c.constant(np.uint32(mesh.axis_sizes[k]))],
              lowering.shaped_aval((), u32))


# --- compiling and running ---------------------------------------------------------------------

SPMD_PRIMITIVES: set = set()  # filled by the primitive modules: shard_map, constraints, reshard
MANUAL_PRIMITIVES: set = set()  # shard_map (its outputs laid out by its out_specs)


def has_spmd(jaxpr) -> bool:
  """Whether `jaxpr` (or a sub-jaxpr) holds an equation that lowers to a sharded program."""
  todo = [jaxpr.jaxpr if isinstance(jaxpr, core.ClosedJaxpr) else jaxpr]
  while todo:
    j = todo.pop()
    for e in j.eqns:
      if e.primitive in SPMD_PRIMITIVES:
        return True
      todo += [s.jaxpr if isinstance(s, core.ClosedJaxpr) else s
               for s in core.jaxprs_in_params(e.params)]
  return False


def lower_spmd(closed, name, mesh=None, in_specs=None, out_specs=None, donated_to=None,
               platform: str = "cpu"):
  """(module text, device assignment) of `closed` as a sharded program: inputs and outputs
  annotated with `in_specs` / `out_specs` over `mesh` (None: replicated; the mesh of the
  program's own shardings when `mesh` is None). Device assignment None: nothing sharded."""
  module = lowering.ModuleBuilder(name, platform)
  state = meshes(module)
  jaxpr = closed.jaxpr
  if mesh is not None:
    state.name(mesh)
  arg_attrs = {i: f"tf.aliasing_output = {o} : i32" for i, o in (donated_to or {}).items()}
  lowering.emit_function(module, closed, "main", "public", arg_attrs)
  if not state.devices:
    return None, None
  mesh = mesh or state.names[next(iter(state.names))][1]
  in_specs = in_specs or [_type_spec(v.aval, mesh) for v in jaxpr.invars]
  out_specs = out_specs or [_produced_spec(v, jaxpr, mesh) for v in jaxpr.outvars]
  nd = lambda v: len(lowering.physical_aval(v.aval).shape)  # noqa: E731 (keys: their data)
  # (a spec None: unspecified, left to the partitioner's propagation, as JAX leaves it)
  ins = {i: f"sdy.sharding = #sdy.sharding{sharding_attr(module, mesh, s, nd(v))}"
         if s is not None else "" for i, (v, s) in enumerate(zip(jaxpr.invars, in_specs))}
  for i, a in arg_attrs.items():
    ins[i] = f"{ins[i]}, {a}" if ins[i] else a
  outs = [f"sdy.sharding = #sdy.sharding{sharding_attr(module, mesh, s, nd(v))}"
          if s is not None else "" for v, s in zip(jaxpr.outvars, out_specs)]
  # main's signature, its arguments and results annotated (its body is as emitted)
  main = module.funcs[-1].split("\n")
  attrs = lambda a: f" {{{a}}}" if a else ""  # noqa: E731
  sig = ", ".join(f"%arg{i}: {lowering.aval_type(v.aval)}{attrs(ins[i])}"
                  for i, v in enumerate(jaxpr.invars))
  res = ", ".join(f"{lowering.aval_type(v.aval)}{attrs(a)}"
                  for v, a in zip(jaxpr.outvars, outs))
  main[0] = f"  func.func public @main({sig}) -> ({res}) {{"
  module.funcs[-1] = "\n".join(main)
  text = module.text()
  if module.host_callbacks:
    text = lowering.ModuleText(text)
    text.host_callbacks = tuple(module.host_callbacks)
  return text, (state.devices, mesh, list(in_specs), list(out_specs))


def lower_text_with_shardings(closed, name, in_shardings, out_shardings):
  """What `jit(f, in_shardings=..., out_shardings=...).lower(x).as_text()` shows: the module
  with each argument and result that has a NamedSharding annotated with it (the others left
  unannotated, as JAX leaves them), pretty-printed; None when none is a NamedSharding."""
  named = [s for s in list(in_shardings or ()) + list(out_shardings or ())
           if getattr(s, "mesh", None) is not None and getattr(s, "spec", None) is not None]
  if not named:
    return None
  mesh = named[0].mesh

  def spec(s, v):
    if getattr(s, "mesh", None) is None or getattr(s, "spec", None) is None:
      return None
    nd = len(lowering.physical_aval(v.aval).shape)
    entries = tuple(_entry_names(e) for e in tuple(s.spec)[:nd])
    return entries + ((),) * (nd - len(entries))
  jaxpr = closed.jaxpr
  ins = [spec(s, v) for s, v in zip(in_shardings or [None] * len(jaxpr.invars), jaxpr.invars)]
  outs = [spec(s, v) for s, v in zip(out_shardings or [None] * len(jaxpr.outvars),
                                     jaxpr.outvars)]
  text, _ = lower_spmd(closed, name, mesh, ins, outs)
  if text is None:
    return None
  from jaxlite._src.compiler.xla import backend as xb
  return xb.pretty_text(text)


def _type_spec(aval, mesh):
  """An input's spec: its type's sharding (Explicit axes) over `mesh`, else replicated."""
  s = getattr(aval, "sharding", None)
  spec = getattr(s, "spec", None)
  if spec is not None and getattr(s, "mesh", None) is not None and \
      tuple(s.mesh.axis_names) == tuple(mesh.axis_names):
    return tuple(_entry_names(e) for e in spec) + ((),) * (len(aval.shape) - len(spec))
  return ((),) * len(getattr(aval, "shape", ()))


def _produced_spec(v, jaxpr, mesh):
  """An output's spec: the out_spec of the shard_map producing it, or its type's sharding,
  else replicated."""
  if isinstance(v, core.Var):
    for e in jaxpr.eqns:
      if e.primitive in MANUAL_PRIMITIVES and v in e.outvars and \
          _mesh_key(e.params["mesh"]) == _mesh_key(mesh):
        spec = e.params["out_specs"][e.outvars.index(v)]
        return tuple(_entry_names(x) for x in spec) + ((),) * (len(v.aval.shape) - len(spec))
  return _type_spec(v.aval, mesh)


def compile_spmd(backend, closed, name, mesh=None, in_specs=None, out_specs=None,
                 donated_to=None):
  """The `SpmdExecutable` of `closed` over the devices of its mesh, or None when nothing in
  it is sharded over several devices (the one-device path compiles it)."""
  text, layout = lower_spmd(closed, name, mesh, in_specs, out_specs, donated_to,
                            backend.platform)
  if text is None:
    return None
  devices, mesh, in_specs, out_specs = layout
  xla_devices = [_xla_device(backend, d) for d in devices]
  loaded = _compile(backend, text, xla_devices)
  exe = SpmdExecutable(loaded, backend, xla_devices, mesh, closed, in_specs, out_specs, text)
  exe.in_specs, exe.out_specs = in_specs, out_specs
  return exe


def _xla_device(backend, d):
  """The backend's XlaDevice of mesh device `d` (a mesh built on the NumPy backend's devices
  names them by id)."""
  if getattr(d, "backend", None) is backend:
    return d
  devs = backend.devices()
  from jaxlite._src.compiler.xla import multiprocess
  if multiprocess.active():  # a mesh over every process's devices
    devs = multiprocess.global_devices(backend)
  for x in devs:
    if x.id == d.id:
      return x
  raise ValueError(f"device {d!r} is not a device of the {backend.name} backend ({devs})")


def _compile(backend, text, devices):
  from jaxlite._src.compiler.xla import client as client_lib
  from jaxlite._src.compiler.xla import compile_cache
  xc = client_lib.xla_client()
  n = len(devices)
  options = xc.CompileOptions()
  options.num_replicas, options.num_partitions = 1, n
  build = options.executable_build_options
  build.num_replicas, build.num_partitions = 1, n
  build.use_spmd_partitioning = True
  build.use_shardy_partitioner = True
  options.device_assignment = xc.DeviceAssignment.create(
      np.array([[d.id for d in devices]], dtype=np.int64))
  return compile_cache.compile_or_load(backend.client, text, devices, options, backend.platform)


_sharding_classes: dict = {}


def _gspmd_sharding_type():
  """jaxlib's GSPMDSharding with the Python-side methods its transfer code calls."""
  cls = _sharding_classes.get("gspmd")
  if cls is None:
    from jaxlite._src.compiler.xla import client as client_lib
    _jax = client_lib.jax_ext()

    class _Sharded(_jax.GSPMDSharding):
      def _to_xla_hlo_sharding(self, ndim):
        return self._hlo_sharding

      memory_kind = property(lambda self: None)
      _device_assignment = property(lambda self: tuple(self._devices))
      device_set = property(lambda self: set(self._devices))
      is_fully_replicated = property(lambda self: self._hlo_sharding.is_replicated())
      # (a program over several processes' devices: process 0 holds none of process 1's)
      is_fully_addressable = property(lambda self: all(
          d.process_index == d.client.process_index() for d in self._devices))

      def is_equivalent_to(self, other, ndim):
        return self == other
    cls = _sharding_classes["gspmd"] = _Sharded
  return cls


def _block_indices(spec, shape, mesh) -> list:
  """Each device's index (a tuple of slices) into a global value of `shape` laid out by
  `spec` over `mesh`, in the mesh's row-major device order."""
  sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
  out = []
  for coords in np.ndindex(*mesh.axis_sizes):
    at = dict(zip(mesh.axis_names, coords))
    idx = []
    for d, n in enumerate(shape):
      names = _entry_names(spec[d]) if d < len(spec) else ()
      k, parts = 0, 1
      for a in names:
        k, parts = k * sizes[a] + at[a], parts * sizes[a]
      w = n // parts
      idx.append(slice(k * w, (k + 1) * w))
    out.append(tuple(idx))
  return out


class SpmdExecutable:
  """A sharded program compiled for the devices of its mesh. Called with global values (host
  arrays or one-device `DeviceBuffer`s), it feeds each device its block and returns the global
  host value of each result (assembled from the devices' blocks)."""

  def __init__(self, loaded, backend, devices, mesh, closed, in_specs, out_specs, text):
    from jaxlite._src.compiler.xla import client as client_lib
    self.loaded, self.backend, self.devices, self.mesh = loaded, backend, devices, mesh
    self.device = devices[0]
    self.lowered_text = text
    xc = client_lib.xla_client()
    dl = xc.DeviceList(tuple(d.pjrt for d in devices))
    cls = _gspmd_sharding_type()
    in_avals = [lowering.physical_aval(v.aval) for v in closed.jaxpr.invars]
    # (a program over one device has no parameter shardings: replicated)
    shardings = loaded.get_parameter_shardings() or [xc.HloSharding.replicate()] * len(in_avals)
    self.in_shardings = [cls(dl, s) for s in shardings]
    ids = tuple(d.id for d in devices)
    self.in_keys = [(ids, str(s._hlo_sharding)) for s in self.in_shardings]
    outs = loaded.get_output_shardings()
    self.out_shardings = None if outs is None else [cls(dl, s) for s in outs]
    self.out_keys = None if outs is None else [(ids, str(s._hlo_sharding))
                                                for s in self.out_shardings]
    out_avals = [lowering.physical_aval(v.aval) for v in closed.jaxpr.outvars]
    self.in_blocks = [_distinct(_block_indices(s, a.shape, mesh))
                      for s, a in zip(in_specs, in_avals)]
    self.out_blocks = [_distinct(_block_indices(s, a.shape, mesh))
                       for s, a in zip(out_specs, out_avals)]
    self.in_avals = [(tuple(a.shape), np.dtype(a.dtype)) for a in in_avals]
    self.out_avals = [(tuple(a.shape), np.dtype(a.dtype)) for a in out_avals]
    self.n_in = len(in_avals)

  def _put(self, value, i):
    hit = _resident.get(id(value))
    if hit is not None and hit[0]() is value and hit[1] == self.in_keys[i]:
      return hit[2]  # its shards are already on the devices, laid out as this input's
    arr = self._transfer(value, i)
    if type(value) is np.ndarray and not value.flags.writeable:
      _remember(value, self.in_keys[i], arr)
    return arr

  def _transfer(self, value, i):
    from jaxlite._src.compiler.xla import backend as xb
    from jaxlite._src.compiler.xla import client as client_lib
    shape, dtype = self.in_avals[i]
    blocks, first = self.in_blocks[i]
    if isinstance(value, xb.DeviceBuffer):
      value = value.host()
    x = np.asarray(value)
    if x.dtype.names is not None:  # typed PRNG keys: their data
      x = np.stack([x[n] for n in x.dtype.names], axis=-1)
    if x.dtype != dtype:
      x = x.astype(dtype)
    _jax = client_lib.jax_ext()
    shards = []
    for d, idx in zip(self.devices, blocks):
      piece = np.ascontiguousarray(x[idx])
      shards.append(_jax.batched_device_put(_aval(piece.shape, dtype), d.sharding, [piece],
                                            [d.pjrt], True, True, enable_x64=True))
    return _jax.ArrayImpl(_aval(shape, dtype), self.in_shardings[i], shards, True,
                          _skip_checks=True)

  def __call__(self, *values):
    from jaxlite._src.compiler.xla import backend as xb
    args = [self._put(v, i) for i, v in enumerate(values)]
    try:
      results = self.loaded.execute_sharded(args).disassemble_into_single_device_arrays()
    except Exception as err:
      raise xb._runtime_error(err, "executing", self.devices) from err
    make = self.backend.buffer_type
    _jax = _client().jax_ext()
    outs = []
    for i, (shards, (shape, dtype), (blocks, first)) in enumerate(zip(
        results, self.out_avals, self.out_blocks)):
      if len(first) == 1:  # replicated: device 0's block is the value
        buf = make(shards[0], shape, dtype, self.devices[0]).host()
      else:
        buf = np.empty(shape, dtype)
        for d in first:
          buf[blocks[d]] = make(shards[d], buf[blocks[d]].shape, dtype,
                                self.devices[d]).host()
        buf.flags.writeable = False
      if self.out_shardings is not None and dtype.kind != "V":
        # the shards stay on their devices: a later program taking this value laid out the
        # same way (a training step's parameters) reads them there, with no transfer
        _remember(buf, self.out_keys[i], _jax.ArrayImpl(
            _aval(shape, dtype), self.out_shardings[i], shards, True, _skip_checks=True))
      outs.append(buf)
    return outs

  def run_blocks(self, blocks):
    """The program over a mesh spanning processes (every process calls it: its collectives
    cross processes inside XLA). `blocks[i]` maps each of this process's mesh devices to its
    block of input i (laid out by the input's spec); returns, per output, this process's
    devices' blocks, keyed the same way."""
    from jaxlite._src.compiler.xla import client as client_lib
    _jax = client_lib.jax_ext()
    flat = list(self.mesh.devices.flat)  # the program's devices, in mesh order
    mine = [k for k, d in enumerate(self.devices) if d.process_index == _process_index(d)]
    args = []
    for i, per_device in enumerate(blocks):
      shape, dtype = self.in_avals[i]
      shards = []
      for k in mine:
        piece = np.asarray(per_device[flat[k]])
        if piece.dtype.names is not None:  # typed PRNG keys: their data
          piece = np.stack([piece[n] for n in piece.dtype.names], axis=-1)
        piece = np.ascontiguousarray(piece, dtype)
        d = self.devices[k]
        shards.append(_jax.batched_device_put(_aval(piece.shape, dtype), d.sharding, [piece],
                                              [d.pjrt], True, True, enable_x64=True))
      args.append(_jax.ArrayImpl(_aval(shape, dtype), self.in_shardings[i], shards, True,
                                 _skip_checks=True))
    from jaxlite._src.compiler.xla import backend as xb
    try:
      results = self.loaded.execute_sharded(args).disassemble_into_single_device_arrays()
    except Exception as err:
      raise xb._runtime_error(err, "executing", self.devices) from err
    make = self.backend.buffer_type
    outs = []
    for shards, (shape, dtype), (idx, _) in zip(results, self.out_avals, self.out_blocks):
      # one shard per addressable device, in the device assignment's order (as `mine`)
      out = {}
      for buf, k in zip(shards, mine):
        block_shape = tuple(len(range(*x.indices(n))) for x, n in zip(idx[k], shape))
        out[flat[k]] = make(buf, block_shape, dtype, self.devices[k]).host()
      outs.append(out)
    return outs

  def as_text(self) -> str:
    return self.loaded.hlo_modules()[0].to_string()

  def cost_analysis(self) -> dict:
    return dict(self.loaded.cost_analysis())


# Global host values (read-only: Arrays' buffers, results) whose shards are already on the
# devices: id -> (weak reference, (device ids, HloSharding text), jaxlib array over the devices).
_resident: dict = {}


def _remember(value, key, arr) -> None:
  import weakref
  k = id(value)
  try:
    ref = weakref.ref(value, lambda _, k=k: _resident.pop(k, None))
  except TypeError:
    return
  _resident[k] = (ref, key, arr)


def _process_index(device):
  """The index of the process running this program (`device` is one of its client's)."""
  return device.pjrt.client.process_index()


def _client():
  from jaxlite._src.compiler.xla import client as client_lib
  return client_lib


def _distinct(blocks):
  """(every device's index, the devices holding the first copy of each distinct block)."""
  seen, first = set(), []
  for d, idx in enumerate(blocks):
    key = tuple((s.start, s.stop) for s in idx)
    if key not in seen:
      seen.add(key)
      first.append(d)
  return blocks, first


def _aval(shape, dtype):
  from jaxlite._src.compiler.xla import backend as xb
  return xb._Aval(shape, dtype)


def installed_xla():
  """The installed backend when it is an XLA backend, else None."""
  from jaxlite._src.compiler import backend
  b = backend.installed()
  return b if getattr(b, "name", "").startswith("xla") else None


_eqn_cache: dict = {}


def run_primitive(primitive, args, params):
  """An eager sharded primitive (shard_map called outside jit) on the xla backend: the
  one-equation program compiled for its mesh (once per params and operand types) and run on
  the global values `args`; the results' global host values."""
  return _eqn_executable(primitive, [core.get_aval(a) for a in args], params)(*args)


def run_primitive_blocks(primitive, avals, params, mesh, in_specs, blocks):
  """`run_primitive` over a mesh spanning processes (eager shard_map on Arrays with shards in
  other processes): `avals` the operands' global types, `in_specs` their layouts over `mesh`,
  `blocks[i]` {device: block} of operand i for this process's devices; per result, this
  process's devices' blocks (laid out by the result's spec)."""
  exe = _eqn_executable(primitive, avals, params, mesh, tuple(in_specs))
  return exe.run_blocks(blocks), exe.out_specs


def _eqn_executable(primitive, avals, params, mesh=None, in_specs=None):
  """The `SpmdExecutable` of the one-equation program (cached per params and operand types)."""
  sig = tuple((tuple(a.shape), a.dtype, a.weak_type) for a in avals)
  try:
    key = (primitive, tuple(params.items()), sig, in_specs)
    hit = _eqn_cache.get(key)
  except TypeError:
    key, hit = None, None
  if hit is None:
    out = primitive.abstract_eval(*avals, **params)
    out_avals = list(out) if primitive.multiple_results else [out]
    invars = [core.Var(a) for a in avals]
    outvars = [core.Var(a) for a in out_avals]
    eqn = core.JaxprEqn(invars, outvars, primitive, params)
    closed = core.ClosedJaxpr(core.Jaxpr([], invars, outvars, [eqn]), [])
    hit = compile_spmd(installed_xla(), closed, f"jit_{primitive.name}", mesh=mesh,
                       in_specs=None if in_specs is None else list(in_specs))
    if key is not None:
      if len(_eqn_cache) > 1024:
        _eqn_cache.clear()
      _eqn_cache[key] = hit
  return hit
