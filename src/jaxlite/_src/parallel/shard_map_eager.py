"""Eager shard_map op by op, for bodies that look at their per-device values.

JAX runs an eager (not jitted) shard_map body primitive by primitive, each value held as one
block per device, so `print(x)` in the body shows every device's block with its mesh
coordinates. jaxlite traces an eager body once and runs the traced program on every device
(shard_map.py): the same values, much less dispatch. The two differ only where the body reads a
value's text while it runs. So the first trace of an eager call watches for that: a body tracer
asked for its text raises `NeedsValues` (what the body printed meanwhile is held back and
dropped), and the call, and every later call with its signature, runs here instead: each
primitive is traced alone as a one-equation shard_map body (typed by check_vma as any body is)
and run on the mesh's devices, its operands' blocks as the devices' inputs.
"""
from __future__ import annotations

import contextlib
import io
import sys
import threading
import weakref

import numpy as np

from jaxlite._src.base import core, tree_util
from jaxlite._src.interpreters import partial_eval as pe
from jaxlite._src.lax import parallel
from jaxlite._src.spmd import programs, runtime


class NeedsValues(BaseException):
  """The body being traced for an eager call asked for a value's text. A BaseException: the
  user's `except Exception` around a print must not swallow it."""


class _Watch(threading.local):
  def __init__(self):
    self.active = False
    self.trace = None


_watch = _Watch()

# Marks an eager call's signature whose body runs op by op (shard_map.py's eager cache).
BY_OP = object()


def _on_tracer_text(tracer):
  if _watch.trace is not None and tracer._trace is _watch.trace:
    raise NeedsValues


pe.tracer_text_hooks.append(_on_tracer_text)


def note_body_trace():
  """Called first thing in an eager call's body while it is traced: its tracers are watched."""
  if _watch.active:
    _watch.trace = core.current_trace()


@contextlib.contextmanager
def watching():
  """Traces an eager body with its tracers watched and its stdout held back: written out when
  the trace completes or fails, dropped when it raises NeedsValues (the body runs again)."""
  prev = (_watch.active, _watch.trace)
  _watch.active, _watch.trace = True, None
  held = io.StringIO()
  out = sys.stdout
  sys.stdout = held
  needs = False
  try:
    yield
  except NeedsValues:
    needs = True
    raise
  finally:
    sys.stdout = out
    _watch.active, _watch.trace = prev
    if not needs:
      out.write(held.getvalue())


# --- the trace ---------------------------------------------------------------------------------

class ShardMapTracer(core.Tracer):
  """A value of the body: `blocks`, one NumPy block per device (mesh.devices.flat order);
  `aval`, one block's type (varying over `aval.vma` when check_vma)."""
  __slots__ = ("_aval", "blocks")

  def __init__(self, trace, aval, blocks):
    self._trace, self._aval, self.blocks = trace, aval, blocks

  aval = property(lambda self: self._aval)

  def to_concrete_value(self):
    # As JAX: a value known to be the same on every device (typed invariant) is concrete.
    if self._trace.check_vma and not self._aval.vma:
      return self.blocks[0]
    return None

  def __str__(self):
    mesh = self._trace.mesh
    names = f"({', '.join(map(str, mesh.axis_names))},)"
    return "\n".join(f"On {d} at mesh coordinates {names} = {idx}:\n{block}\n"
                     for (idx, d), block in zip(np.ndenumerate(mesh.devices), self.blocks))

  __repr__ = __str__


class ShardMapTrace(core.Trace):
  __slots__ = ("mesh", "manual", "check_vma")

  def __init__(self, mesh, manual, check_vma):
    super().__init__(core.eval_trace)
    self.mesh, self.manual, self.check_vma = mesh, manual, check_vma

  def process_primitive(self, primitive, args, params):
    mine = [isinstance(a, ShardMapTracer) and a._trace is self for a in args]
    if not any(mine) and primitive is not parallel.axis_index_p:
      with core.set_current_trace(self.parent):  # nothing per device: one value for all
        return primitive.bind(*args, **params)
    tracers = [a for a, m in zip(args, mine) if m]
    consts = [a for a, m in zip(args, mine) if not m]

    def body(*xs):
      it, ct = iter(xs), iter(consts)
      outs = primitive.bind(*[next(it) if m else next(ct) for m in mine], **params)
      return list(outs) if primitive.multiple_results else [outs]
    closed = _program(body, primitive, params, [t.aval for t in tracers], not consts,
                      self.mesh, self.manual, self.check_vma)
    n = self.mesh.devices.size
    if runtime.meets_peers(closed.jaxpr) and _on_xla():
      outs = _xla_collective(closed, self.mesh, [t.blocks for t in tracers])
      res = [ShardMapTracer(self, v.aval, o) for v, o in zip(closed.jaxpr.outvars, outs)]
      return res if primitive.multiple_results else res[0]
    progs = programs.device_programs(closed, self.mesh, [set(range(n))] * len(closed.out_avals))
    runs = {}
    for p in progs:
      if id(p) not in runs:
        runs[id(p)] = p.executable()
    per_device = [[runs[id(progs[i])]] + [t.blocks[i] for t in tracers] for i in range(n)]
    outs = runtime.run_spmd(self.mesh, _run, per_device,
                            inline=not runtime.meets_peers(closed.jaxpr))
    res = [ShardMapTracer(self, v.aval, [np.asarray(o[k]) for o in outs])
           for k, v in enumerate(closed.jaxpr.outvars)]
    return res if primitive.multiple_results else res[0]


def _run(run, *blocks):
  return run(*blocks)


def _auto_of(mesh):
  from jaxlite._src.sharding.mesh import AxisType, Mesh
  return Mesh(mesh.devices, tuple(mesh.axis_names), (AxisType.Auto,) * len(mesh.axis_names))


def _on_xla() -> bool:
  from jaxlite._src.compiler.xla import spmd
  return spmd.installed_xla() is not None


_xla_runs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _xla_collective(closed, mesh, blocks):
  """A one-collective body run op by op on the xla backend: XLA's collectives run inside one
  program over the mesh, so the devices' blocks go in as one global value per operand (a
  leading dim per mesh axis, split over it) to a jitted shard_map of the body. Each output's
  per-device blocks, in mesh order."""
  from jaxlite._src.transforms.jit import jit
  from jaxlite._src.parallel.shard_map import shard_map
  from jaxlite._src.sharding.partition_spec import PartitionSpec
  names, sizes = tuple(mesh.axis_names), tuple(mesh.axis_sizes)
  k, n = len(names), mesh.devices.size
  fn = _xla_runs.get(closed)
  if fn is None:
    def body(*xs):
      xs = [x.reshape(x.shape[k:]) for x in xs]
      outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *xs)
      return tuple(o.reshape((1,) * k + tuple(o.shape)) for o in outs)
    spec = PartitionSpec(*names)
    auto = _auto_of(mesh)  # the blocks carry no types
    fn = _xla_runs[closed] = jit(shard_map(
        body, mesh=auto, in_specs=tuple(spec for _ in closed.in_avals),
        out_specs=tuple(spec for _ in closed.out_avals), check_vma=False))
  glob = [np.stack([np.asarray(b) for b in bs]).reshape(sizes + tuple(np.shape(bs[0])))
          for bs in blocks]
  from jaxlite._src.sharding.mesh import set_mesh
  with set_mesh(_auto_of(mesh)):  # (the body's context mesh is the typed one)
    outs = fn(*glob)
  return [list(np.asarray(o).reshape((n,) + tuple(np.shape(o))[k:])) for o in outs]


# One-primitive bodies, per primitive, params and operand types (params that do not hash, or
# Python constants among the operands, are traced afresh).
_programs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _program(body, primitive, params, avals, cacheable, mesh, manual, check_vma):
  from jaxlite._src.parallel.shard_map import _trace_body
  from jaxlite._src.parallel.shard_map_vma import annotate
  key = None
  if cacheable:
    try:
      key = (tuple(sorted(params.items())), tuple(avals), mesh, manual, check_vma)
      hash(key)
    except TypeError:
      key = None
  per_prim = _programs.setdefault(primitive, {}) if key is not None else None
  hit = per_prim.get(key) if per_prim is not None else None
  if hit is not None:
    return hit
  closed = _trace_body(body, avals, mesh, manual, check_vma)
  if check_vma:
    closed = annotate(closed, [a.vma for a in avals], mesh, manual)
  if per_prim is not None:
    if len(per_prim) >= 256:
      per_prim.clear()
    per_prim[key] = closed
  return closed


# --- a call ------------------------------------------------------------------------------------

def _host(x) -> np.ndarray:
  """A value on the host: an Array's buffer, else NumPy's view of it."""
  from jaxlite._src.base import array
  if isinstance(x, array.ArrayImpl):
    v = array.host_value(x)
    return v if isinstance(v, np.ndarray) else x._host_value()  # a device buffer: its copy
  return np.asarray(x)


def run(f, mesh, manual, flat_in, out_specs, check_vma, in_tree, flat):
  """`f`'s shard_map over `mesh` on the flat arguments `flat` (split by `flat_in`), run op by
  op: the outputs, assembled by `out_specs` and placed over the mesh."""
  from jaxlite._src.base import array
  from jaxlite._src.parallel.shard_map import (_assemble, _broadcast_specs, _indices, _manual_env,
                                      block_shape)
  from jaxlite._src.parallel.shard_map_checks import check_out_specs, check_vma_out
  from jaxlite._src.parallel.shard_map_vma import spec_axes
  from jaxlite._src.sharding.named_sharding import NamedSharding
  trace = ShardMapTrace(mesh, manual, check_vma)
  args = []
  for x, spec in zip(flat, flat_in):
    v = _host(x)
    aval = core.get_aval(x)
    block = core.ShapedArray(block_shape(aval.shape, spec, mesh), aval.dtype, aval.weak_type,
                             vma=spec_axes(spec, manual) if check_vma else frozenset())
    args.append(ShardMapTracer(trace, block, [v[i] for i in _indices(spec, mesh, v.shape)]))
  try:
    with core.set_current_trace(trace), runtime.bind_axes(_manual_env(mesh, manual)):
      out = f(*tree_util.tree_unflatten(in_tree, args))
  finally:
    trace.invalidate()
  leaves, out_tree = tree_util.tree_flatten(out)
  n = mesh.devices.size
  outs = []
  for o in leaves:
    if isinstance(o, ShardMapTracer) and o._trace is trace:
      outs.append(o)
    else:  # a value computed without the arguments: the same on every device
      v = _host(o)
      a = core.get_aval(o)
      outs.append(ShardMapTracer(trace, core.ShapedArray(a.shape, a.dtype, a.weak_type),
                                 [v] * n))
  flat_out = _broadcast_specs(out_specs, out_tree, "out")
  check_out_specs(f, mesh, manual, flat_out, [o.aval for o in outs])
  if check_vma:
    # JAX's eager shard_map checks its outputs' replication inside a per-primitive helper, and
    # its error names that helper rather than the user's function.
    check_vma_out(f, mesh, manual, flat_out, [o.aval.vma for o in outs],
                  fun_name="_rem_singleton")
  coords = runtime.mesh_coords(mesh)
  return tree_util.tree_unflatten(out_tree, [
      array.from_host(_assemble(o.blocks, s, mesh, coords, o.aval), o.aval.weak_type,
                      NamedSharding(mesh, s))
      for o, s in zip(outs, flat_out)])
